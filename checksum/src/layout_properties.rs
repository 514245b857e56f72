//! Property tests of [`ReverseNeighborLayout`] over many layouts (every combination of small `m`, `n`, `nb`, `p`, `q`).

use crate::layout::ReverseNeighborLayout;

/// Every layout of the property tests: m, n in small ranges (including non-multiples of nb).
fn layouts() -> impl Iterator<Item = ReverseNeighborLayout> {
    (0..=11usize).flat_map(|m| {
        (0..=23usize).flat_map(move |n| {
            [1usize, 2, 3, 5].into_iter().flat_map(move |nb| {
                [1usize, 2, 3].into_iter().flat_map(move |p| {
                    [2usize, 3, 4].into_iter().map(move |q| ReverseNeighborLayout::new(m, n, nb, p, q).unwrap())
                })
            })
        })
    })
}

#[test]
fn sizes_are_consistent() {
    for l in layouts() {
        let (n, nb, q) = (l.n(), l.nb(), l.q());
        assert!(l.n_padded() >= n && l.n_padded() < n + nb, "{l:?}");
        assert_eq!(l.n_padded() % nb, 0);
        assert_eq!(l.data_block_cols(), l.n_padded() / nb);
        assert_eq!(l.groups(), l.data_block_cols().div_ceil(q));
        assert_eq!(l.n_extended(), l.n_padded() + 2 * l.groups() * nb);
        assert_eq!(l.extended_block_cols() * nb, l.n_extended());
        assert_eq!(l.checksum_col0(), l.n_padded());
    }
}

#[test]
fn every_data_block_column_is_in_exactly_one_group() {
    for l in layouts() {
        let nbc = l.data_block_cols();
        let mut seen = vec![0usize; nbc];
        for g in 0..l.groups() {
            let members = l.group_members(g).unwrap();
            assert!(!members.is_empty(), "{l:?} g={g}");
            // A group's members live on distinct process columns; a full group covers all of them.
            let mut pcs: Vec<usize> = members.clone().map(|j| j % l.q()).collect();
            pcs.sort_unstable();
            pcs.dedup();
            assert_eq!(pcs.len(), members.len());
            if g + 1 < l.groups() {
                assert_eq!(members.len(), l.q());
            }
            for j in members {
                seen[j] += 1;
                assert_eq!(l.group_of(j).unwrap(), g);
            }
        }
        assert!(seen.iter().all(|&c| c == 1), "{l:?}: {seen:?}");
        assert!(l.group_of(nbc).is_err());
    }
}

#[test]
fn pairs_are_adjacent_disjoint_reversed_and_on_two_process_columns() {
    for l in layouts() {
        let (nbc, g_count, q) = (l.data_block_cols(), l.groups(), l.q());
        let end = l.n_extended() / l.nb();
        let mut used = vec![false; end];
        let mut prev_first = usize::MAX;
        for g in 0..g_count {
            let [e0, e1] = l.pair_block_cols(g).unwrap();
            assert_eq!(e1, e0 + 1);
            assert!(e0 >= nbc && e1 < end, "{l:?} g={g}");
            for e in [e0, e1] {
                assert!(!used[e], "{l:?}: block column {e} used twice");
                used[e] = true;
            }
            let [p0, p1] = l.pair_process_cols(g).unwrap();
            assert_ne!(p0, p1, "{l:?} g={g}");
            assert_eq!([p0, p1], [e0 % q, e1 % q]);
            assert_eq!(l.pair_global_cols(g).unwrap(), [e0 * l.nb(), e1 * l.nb()]);
            // Reverse order: later groups sit further left.
            assert!(e0 < prev_first);
            prev_first = e0;
        }
        if g_count > 0 {
            assert_eq!(l.pair_block_cols(0).unwrap(), [end - 2, end - 1], "group 0 rightmost");
            assert_eq!(l.pair_block_cols(g_count - 1).unwrap(), [nbc, nbc + 1], "last group next to the data");
        }
        assert!(used[nbc..].iter().all(|&u| u), "{l:?}: the checksum area is exactly the pairs");
        assert!(l.pair_block_cols(g_count).is_err());
    }
}

#[test]
fn the_active_range_shrinks_and_holds_exactly_the_unfinished_pairs() {
    for l in layouts() {
        let (nbc, nb) = (l.data_block_cols(), l.nb());
        let mut prev = usize::MAX;
        for f in 0..=nbc + 2 {
            let end = l.active_end_col(f);
            assert!(end <= prev, "{l:?} f={f}: not monotone");
            prev = end;
            assert!(end >= l.n_padded() && end <= l.n_extended());
            // The panel factored with f block columns finished ends inside the active range.
            if f < nbc {
                assert!(end >= (f + 1) * nb, "{l:?} f={f}");
            }
            for g in 0..l.groups() {
                let finished = l.is_group_finished(g, f).unwrap();
                assert_eq!(finished, l.group_members(g).unwrap().all(|j| j < f));
                let [_, e1] = l.pair_block_cols(g).unwrap();
                assert_eq!((e1 + 1) * nb <= end, !finished, "{l:?} f={f} g={g}");
            }
            assert_eq!(l.finished_groups(f), (0..l.groups()).filter(|&g| l.is_group_finished(g, f).unwrap()).count());
        }
        assert_eq!(l.active_end_col(nbc), l.n_padded());
        assert_eq!(l.active_end_col(0), l.n_extended());
    }
}

#[test]
fn rows_of_the_process_rows_partition_the_matrix() {
    for l in layouts() {
        let mut seen = vec![0usize; l.m()];
        for pr in 0..l.p() {
            let rows = l.global_rows_of(pr).unwrap();
            assert!(rows.windows(2).all(|w| w[0] < w[1]));
            for r in rows {
                assert_eq!((r / l.nb()) % l.p(), pr);
                seen[r] += 1;
            }
        }
        assert!(seen.iter().all(|&c| c == 1));
    }
}

#[test]
fn overhead_model_is_sane_everywhere() {
    for l in layouts() {
        let f = l.overhead_flops();
        assert!(f.plain_update >= 0.0 && f.extra_update >= 0.0);
        let r = l.overhead_model();
        assert!(r >= 0.0 && !r.is_nan(), "{l:?}: {r}");
        if f.plain_update > 0.0 {
            // At least the 2/Q share of each step's data columns: checksum width ≥ 2/Q of the data width.
            assert!(r >= 2.0 / l.q() as f64 - 1e-12, "{l:?}: {r}");
        }
    }
}
