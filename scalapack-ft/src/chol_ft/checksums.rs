//! The checksums' share of a Cholesky step (see [`super`]): each checksum
//! replica of an unfinished group, over its rows at and below the group,
//! and the flop model of it.

use crate::abft::Extended;
use crate::blas::{self, Trans, Uplo};
use checksum::ChecksumLayout;

/// A step's checksum work, prepared in scratch from the step's column
/// before the commit point ([`plan`]) and applied at the commit
/// ([`apply`]): the kernels on the rows inside the groups, and the
/// groups' whole sums for the rows below them.
pub(crate) struct ChecksumStep {
    k: usize,
    kb: usize,
    /// Rows inside a group: local row `li`, `h` rows, on the replica at
    /// local column `c0`: C −= L·partial[p]ᵀ (when `partial` is some),
    /// then C −= w·lower(L·Lᵀ).
    in_group: Vec<InGroup>,
    /// The partial sums Σ_{J∈g, k≤J<b} w_J·L(J,k) the in-group rows
    /// take (`nb`×`kb` each).
    partial: Vec<Vec<f64>>,
    /// Rows below the groups: each replica's first local column and first
    /// local row below its group, in local column order, and their whole
    /// sums stacked in that order (`nb` rows each, `kb` columns, leading
    /// dimension `nb` × the replicas).
    held: Vec<(usize, usize)>,
    stacked: Vec<f64>,
}

struct InGroup {
    li: usize,
    h: usize,
    c0: usize,
    partial: Option<usize>,
    w: f64,
}

/// Local, in scratch: the checksum work of step `k` on every replica
/// this process holds — for block row i and group g (members J, weights
/// w_J),
/// C_g(i) −= L(i,k)·(Σ_{J∈g, k≤J<i} w_J·L(J,k))ᵀ + [i∈g]·w_i·lower(L(i,k)·L(i,k)ᵀ).
/// `whole`: the step's column from its diagonal block down (`ld`×`kb`,
/// the diagonal block's upper half zero).
///
/// The rows inside a group take a small DGEMM and the diagonal's DSYRK
/// each. The rows below the groups take the whole groups' sums: a
/// process's checksum columns lie side by side after its data columns,
/// later groups first, so the groups that end above a row are the last of
/// its active checksum columns, and the rows each column needs form a
/// staircase, cut into a few large DGEMMs ([`staircase`]).
pub(crate) fn plan(
    ext: &Extended,
    layout: &ChecksumLayout,
    k: usize,
    (whole, ld, kb): (&[f64], usize, usize),
) -> ChecksumStep {
    let m = &ext.matrix;
    let nb = m.nb();
    let (p, myrow) = (m.grid_shape().0, m.coords().0);
    let (n, k0) = (layout.n(), k * nb);
    // The rows of block row `b` of the step's column (`nb`×`kb`, zero past
    // N), weighted, added to `into`.
    let add_block = |into: &mut [f64], b: usize, w: f64| {
        let (g0, g1) = (b * nb, ((b + 1) * nb).min(n));
        for t in 0..kb {
            for (r, gi) in (g0..g1).enumerate() {
                into[r + t * nb] += w * whole[gi - k0 + t * ld];
            }
        }
    };
    // This process's replicas of each unfinished group's checksums (the
    // checksum, the group's members, the replicas' first local columns),
    // with the first local row below the group.
    let sets: Vec<(usize, std::ops::Range<usize>, Vec<usize>, usize)> = (0..layout.groups())
        .flat_map(|g| (0..layout.checksums()).map(move |i| (g, i)))
        .filter_map(|(g, i)| {
            let members = layout.group_members(g).ok()?;
            let mine: Vec<usize> = layout
                .replica_block_cols(g, i)
                .ok()?
                .into_iter()
                .filter_map(|bc| ext.local_block(bc))
                .map(|c| c.start)
                .collect();
            let below = m.local_rows_before((members.end * nb).min(n));
            (members.end > k && !mine.is_empty()).then_some((i, members, mine, below))
        })
        .collect();
    let mut held: Vec<(usize, usize)> =
        sets.iter().flat_map(|(_, _, mine, below)| mine.iter().map(move |&c0| (c0, *below))).collect();
    held.sort_by_key(|h| h.0);
    let tall = held.len() * nb;
    let mut step =
        ChecksumStep { k, kb, in_group: Vec::new(), partial: Vec::new(), stacked: vec![0.0; tall * kb], held };
    let mut sum = vec![0.0; nb * kb];
    for (i, members, mine, _) in sets {
        let first = members.start.max(k);
        let w = |b: usize| layout.weight(i, b - members.start);
        // Rows inside the group: a partial sum and the diagonal term.
        sum.fill(0.0);
        for b in first..members.end {
            if b * nb >= n {
                break;
            }
            if b % p == myrow {
                let li = m.local_rows_before(b * nb);
                let h = m.local_rows_before(((b + 1) * nb).min(n)) - li;
                let partial = (b > first).then(|| {
                    step.partial.push(sum.clone());
                    step.partial.len() - 1
                });
                step.in_group.extend(mine.iter().map(|&c0| InGroup { li, h, c0, partial, w: w(b) }));
            }
            add_block(&mut sum, b, w(b));
        }
        // The whole sum, for the rows below the group, in each
        // replica's place of the stack.
        for c0 in mine {
            let Ok(j) = step.held.binary_search_by_key(&c0, |h| h.0) else {
                // (`held` lists every replica of this loop.)
                debug_assert!(false, "replica at local column {c0} not held");
                continue;
            };
            for t in 0..kb {
                step.stacked[j * nb + t * tall..(j + 1) * nb + t * tall].copy_from_slice(&sum[t * nb..(t + 1) * nb]);
            }
        }
    }
    step
}

/// Local: the commit of a step's checksum work ([`plan`]) on this
/// process's replicas; `rows`: its rows of the step's column (`lrows`×`kb`,
/// its last local rows).
pub(crate) fn apply(ext: &mut Extended, step: &ChecksumStep, (rows, lrows): (&[f64], usize)) {
    let _sums = recovery::profile::part(recovery::profile::Part::Checksums, Some(step.k as u64));
    let (nb, kb) = (ext.matrix.nb(), step.kb);
    let (lr, lldm) = (ext.matrix.local_rows(), ext.matrix.lld());
    let top = lr - lrows;
    for op in &step.in_group {
        let l = &rows[op.li - top..];
        let c = &mut ext.matrix.local_mut()[op.li + op.c0 * lldm..];
        if let Some(p) = op.partial {
            blas::dgemm(Trans::No, Trans::Yes, op.h, nb, kb, -1.0, l, lrows, &step.partial[p], nb, 1.0, c, lldm);
        }
        // The diagonal term straight into the lower triangle (DSYRK
        // leaves the upper half alone).
        blas::dsyrk(Uplo::Lower, Trans::No, op.h, kb, -op.w, l, lrows, 1.0, c, lldm);
    }
    // Rows below the groups: each group's columns from the row below it
    // on, a staircase of large DGEMMs.
    let held = &step.held;
    let tall = held.len() * nb;
    let stack = |j: usize| (&step.stacked[j * nb..], tall);
    let side_by_side = held.windows(2).all(|w| w[1].0 == w[0].0 + nb && w[1].1 <= w[0].1);
    if !side_by_side {
        // (Any other arrangement: a DGEMM per replica.)
        for (j, &(c0, below)) in held.iter().enumerate() {
            tail(ext, (&rows[below - top..], lrows), stack(j), kb, (below..lr, c0, nb));
        }
        return;
    }
    let starts: Vec<usize> = held.iter().map(|h| h.1).collect();
    staircase(&starts, 0..held.len(), lr, &mut |cols, rows_range| {
        let (c0, ncols) = (held[cols.start].0, cols.len() * nb);
        let l = &rows[rows_range.start - top..];
        tail(ext, (l, lrows), stack(cols.start), kb, (rows_range, c0, ncols));
    });
}

/// Splits the staircase under the checksum columns into rectangles, one
/// DGEMM each: column `j` of `cols` needs the rows `starts[j]..bottom`,
/// with `starts` non-increasing (later columns reach higher). The columns
/// from the middle on share the rows from the middle's start down: one
/// rectangle; the columns before it and the rows above it, recursively.
/// About as many calls as a DGEMM per band of rows, but the large ones
/// come first and span many rows and columns, so that OpenBLAS packs each
/// operand a few times instead of the right operand once per band.
fn staircase(
    starts: &[usize],
    cols: std::ops::Range<usize>,
    bottom: usize,
    dgemm: &mut dyn FnMut(std::ops::Range<usize>, std::ops::Range<usize>),
) {
    if cols.is_empty() {
        return;
    }
    let mid = cols.start + cols.len() / 2;
    let top = starts[mid];
    if top < bottom {
        dgemm(mid..cols.end, top..bottom);
    }
    staircase(starts, cols.start..mid, bottom, dgemm);
    staircase(starts, mid + 1..cols.end, top.min(bottom), dgemm);
}

/// `C −= L·Sᵀ` on the local rows `rows` of the local columns
/// `c0..c0+cols` of `ext`: L those rows of the step's column (leading
/// dimension `lrows`), S the columns' sums (`cols`×`kb`, leading dimension
/// `lds`).
fn tail(
    ext: &mut Extended,
    (l, lrows): (&[f64], usize),
    (s, lds): (&[f64], usize),
    kb: usize,
    (rows, c0, cols): (std::ops::Range<usize>, usize, usize),
) {
    if rows.is_empty() {
        return;
    }
    let lldm = ext.matrix.lld();
    let c = &mut ext.matrix.local_mut()[rows.start + c0 * lldm..];
    blas::dgemm(Trans::No, Trans::Yes, rows.len(), cols, kb, -1.0, l, lrows, s, lds, 1.0, c, lldm);
}

/// The checksums' trailing-update flops over the data's, summed over the
/// steps (every replica, each over the rows at and below its group, as
/// [`update`] does them; the data: the trailing lower triangle).
pub(crate) fn overhead_model(layout: &ChecksumLayout) -> f64 {
    let (n, nb) = (layout.n() as f64, layout.nb());
    let blocks = layout.n().div_ceil(nb);
    let (mut data, mut sums) = (0.0f64, 0.0f64);
    for k in 0..blocks {
        let k0 = (k * nb) as f64;
        let kb = (nb as f64).min(n - k0);
        let rest = n - k0 - kb;
        data += rest * (rest + 1.0) * kb;
        for g in 0..layout.groups() {
            let Ok(members) = layout.group_members(g) else { continue };
            if members.end <= k {
                continue;
            }
            let from = (members.start.max(k) * nb) as f64;
            let replicas: usize =
                (0..layout.checksums()).map(|i| layout.replica_block_cols(g, i).map_or(0, |r| r.len())).sum();
            sums += 2.0 * (n - from).max(0.0) * nb as f64 * kb * replicas as f64;
        }
    }
    if data > 0.0 {
        sums / data
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use checksum::LayoutKind;

    /// The rectangles cover the staircase exactly once: every (column,
    /// row) with row in starts[column]..bottom, and nothing else.
    #[test]
    fn the_staircase_is_covered_exactly_once() {
        for starts in [vec![], vec![5], vec![9, 7, 7, 4, 2, 0], vec![3, 3, 3], vec![12, 11, 8, 8, 6, 3, 1, 0, 0]] {
            let bottom = 12;
            let mut hits = vec![vec![0; bottom]; starts.len()];
            staircase(&starts, 0..starts.len(), bottom, &mut |cols, rows| {
                for c in cols {
                    for r in rows.clone() {
                        hits[c][r] += 1;
                    }
                }
            });
            for (c, col) in hits.iter().enumerate() {
                for (r, &h) in col.iter().enumerate() {
                    assert_eq!(h, usize::from(r >= starts[c]), "{starts:?}: column {c}, row {r}");
                }
            }
        }
    }

    /// On a large matrix the checksums cost the layout's share of the
    /// update, as for the whole-matrix factorizations: 2/Q for the pairs,
    /// f/(Q − f) for the rotating layout.
    #[test]
    fn the_model_tends_to_the_layouts_share_of_the_update() {
        let model = |kind, q| overhead_model(&ChecksumLayout::new(kind, 16384, 16384, 64, 1, q).unwrap());
        for q in [2, 4, 8] {
            let pairs = model(LayoutKind::ReverseNeighbor, q);
            assert!((pairs / (2.0 / q as f64) - 1.0).abs() < 0.1, "Q = {q}: {pairs}");
        }
        let rotating = model(LayoutKind::Rotating { checksums: 1 }, 4);
        assert!((rotating / (1.0 / 3.0) - 1.0).abs() < 0.1, "{rotating}");
    }
}
