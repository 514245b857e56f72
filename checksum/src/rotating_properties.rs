//! Property tests of [`RotatingLayout`] and the weighted rebuild kernels over many shapes: every `Q ≤ 9`, `f ≤ min(3, Q − 1)` and data widths
//! from 0 to 40 block columns.

use crate::erasure::{encode_weighted, erase_and_rebuild, ErasureError, GroupBlock};
use crate::rotating::RotatingLayout;
use rand::rngs::StdRng as Rng;
use rand::seq::SliceRandom;
use rand::{Rng as _, SeedableRng};

/// Every layout of the property tests (nb = 1 and 3; the block-column arithmetic does not
/// depend on `m` beyond the row lists).
fn layouts() -> impl Iterator<Item = RotatingLayout> {
    (2..=9usize).flat_map(|q| {
        (1..=(q - 1).min(3)).flat_map(move |f| {
            (0..=40usize).flat_map(move |nbc| {
                [1usize, 3].into_iter().flat_map(move |nb| {
                    [1usize, 2].into_iter().map(move |p| RotatingLayout::new(7, nbc * nb, nb, p, q, f).unwrap())
                })
            })
        })
    })
}

#[test]
fn groups_partition_the_data_and_only_group_0_is_short() {
    for l in layouts() {
        let (nbc, s, q) = (l.data_block_cols(), l.group_size(), l.q());
        assert_eq!(s, q - l.checksums());
        assert_eq!(l.groups(), nbc.div_ceil(s));
        assert_eq!(l.extended_block_cols(), nbc + l.groups() * l.checksums());
        assert_eq!(l.n_extended(), l.extended_block_cols() * l.nb());
        let mut next = 0;
        for g in 0..l.groups() {
            let members = l.group_members(g).unwrap();
            assert_eq!(members.start, next, "{l:?} g={g}");
            assert!(!members.is_empty() && members.len() <= s);
            if g > 0 {
                assert_eq!(members.len(), s, "{l:?} g={g}");
            }
            for (t, j) in members.clone().enumerate() {
                assert_eq!((l.group_of(j).unwrap(), l.position_in_group(j).unwrap()), (g, t));
            }
            next = members.end;
        }
        assert_eq!(next, nbc);
    }
}

/// Claim 1 of the placement: each group's checksums are on distinct process columns, none of
/// which holds a data block of the group; the checksum area is exactly the slots.
#[test]
fn checksums_lie_on_the_process_columns_their_group_skips() {
    for l in layouts() {
        let (nbc, q, f) = (l.data_block_cols(), l.q(), l.checksums());
        let mut used = vec![0usize; l.extended_block_cols()];
        for g in 0..l.groups() {
            let data_cols: Vec<usize> = l.group_members(g).unwrap().map(|j| j % q).collect();
            let mut sum_cols = Vec::new();
            for i in 0..f {
                let e = l.checksum_block_col(g, i).unwrap();
                assert!(e >= nbc);
                used[e] += 1;
                let pc = l.checksum_process_col(g, i).unwrap();
                assert_eq!(pc, e % q);
                assert!(!data_cols.contains(&pc), "{l:?} g={g} i={i}: pc {pc} holds data {data_cols:?}");
                assert!(!sum_cols.contains(&pc), "{l:?} g={g}: two checksums on pc {pc}");
                assert_eq!(l.checksum_on(g, pc), Some(i));
                assert_eq!(l.checksum_global_col(g, i).unwrap(), e * l.nb());
                sum_cols.push(pc);
            }
            // Data and checksums together use each process column at most once.
            let mut all = data_cols.clone();
            all.extend(&sum_cols);
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.len(), data_cols.len() + f);
        }
        assert!(used[..nbc].iter().all(|&u| u == 0));
        assert!(used[nbc..].iter().all(|&u| u == 1), "{l:?}");
    }
}

/// Claim 2: finished groups' checksums are a suffix outside the active range, unfinished
/// groups' inside it; the range only shrinks and always covers the next panel.
#[test]
fn finished_groups_drop_out_of_the_active_range() {
    for l in layouts() {
        let (nbc, nb) = (l.data_block_cols(), l.nb());
        let mut prev = usize::MAX;
        for k in 0..=nbc + 2 {
            let end = l.active_end_col(k);
            assert!(end <= prev && end >= l.n_padded() && end <= l.n_extended(), "{l:?} k={k}");
            prev = end;
            if k < nbc {
                assert!(end >= (k + 1) * nb);
            }
            for g in 0..l.groups() {
                let finished = l.is_group_finished(g, k).unwrap();
                assert_eq!(finished, l.group_members(g).unwrap().all(|j| j < k));
                let slot = l.checksum_block_cols(g).unwrap();
                if finished {
                    assert!(slot.start * nb >= end, "{l:?} k={k} g={g}: finished but active");
                } else {
                    assert!(slot.end * nb <= end, "{l:?} k={k} g={g}: unfinished but outside");
                }
            }
            assert_eq!(l.finished_groups(k), (0..l.groups()).filter(|&g| l.is_group_finished(g, k).unwrap()).count());
        }
        assert_eq!(l.active_end_col(0), l.n_extended());
        assert_eq!(l.active_end_col(nbc), l.n_padded());
    }
}

#[test]
fn the_overhead_is_at_least_f_over_q_minus_f() {
    for l in layouts() {
        let flops = l.overhead_flops();
        let r = l.overhead_model();
        assert!(r >= 0.0 && !r.is_nan());
        if flops.plain_update > 0.0 {
            let want = l.checksums() as f64 / l.group_size() as f64;
            assert!(r >= want - 1e-12, "{l:?}: {r} < {want}");
        }
    }
}

/// The kernels alone: encode random groups, apply the same random lower-triangular left
/// transformation (as LU's eliminations do) to the data and the checksums, erase up to `f`
/// blocks, rebuild, compare. The tolerance is `16·(s + f + 1)·u·β·max|a|·‖L‖`.
#[test]
fn rebuilds_survive_a_left_transformation() {
    let mut rng = Rng::seed_from_u64(0x28);
    for _ in 0..400 {
        let q = rng.random_range(2..=8usize);
        let f = rng.random_range(1..=(q - 1).min(3));
        let s = q - f;
        let members = rng.random_range(1..=s);
        let (rows, nb) = (rng.random_range(1..=9usize), rng.random_range(1..=4usize));
        let w = crate::weights::CodeWeights::new(f, s).unwrap();
        let data: Vec<Vec<f64>> =
            (0..members).map(|_| (0..rows * nb).map(|_| rng.random_range(-1.0..1.0)).collect()).collect();
        let refs: Vec<&[f64]> = data.iter().map(Vec::as_slice).collect();
        let sums = encode_weighted(&w, &refs, rows, nb, rows).unwrap();
        // Unit lower-triangular L with entries in (−1, 1), applied to every block.
        let l: Vec<f64> = (0..rows * rows)
            .map(|ij| {
                let (i, j) = (ij % rows, ij / rows);
                if i == j {
                    1.0
                } else if i > j {
                    rng.random_range(-1.0..1.0)
                } else {
                    0.0
                }
            })
            .collect();
        let apply = |x: &[f64]| -> Vec<f64> {
            (0..rows * nb)
                .map(|ij| (0..rows).map(|k| l[ij % rows + k * rows] * x[k + (ij / rows) * rows]).sum())
                .collect()
        };
        let mut d: Vec<Vec<f64>> = data.iter().map(|x| apply(x)).collect();
        let mut c: Vec<Vec<f64>> = sums.iter().map(|x| apply(x)).collect();
        let (d0, c0) = (d.clone(), c.clone());
        let all: Vec<GroupBlock> = (0..members).map(GroupBlock::Data).chain((0..f).map(GroupBlock::Checksum)).collect();
        let mut erased = all.clone();
        erased.shuffle(&mut rng);
        erased.truncate(rng.random_range(0..=f.min(all.len())));
        erase_and_rebuild(&w, &mut d, &mut c, &erased, rows * nb).unwrap();
        let scale = d0.iter().chain(&c0).flatten().fold(1.0f64, |m, x| m.max(x.abs()));
        let tol = 16.0 * (s + f + 1) as f64 * f64::EPSILON * w.rebuild_amplification() * scale * rows as f64;
        for (x, y) in d.iter().flatten().chain(c.iter().flatten()).zip(d0.iter().flatten().chain(c0.iter().flatten())) {
            assert!((x - y).abs() <= tol, "q={q} f={f} {erased:?}: {x} vs {y} (tol {tol})");
        }
        // One more erasure than checksums is refused.
        if all.len() > f {
            let too_many: Vec<GroupBlock> = all.iter().copied().take(f + 1).collect();
            assert_eq!(
                erase_and_rebuild(&w, &mut d, &mut c, &too_many, rows * nb),
                Err(ErasureError::TooManyErasures { erased: f + 1, tolerated: f })
            );
        }
    }
}
