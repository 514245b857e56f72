//! Several consecutive factored panels as one block reflector
//! `I − V·T·Vᵀ` (LAPACK's DLARFT merge), so that the far trailing matrix
//! is updated once per group with inner dimension `width` instead of once
//! per panel with inner dimension NB: OpenBLAS runs the trailing DGEMMs
//! markedly faster at 128 or 192 than at 64, and the group needs one
//! reduction of W down the process column instead of one per panel.

use super::reflectors::Panel;
use crate::blas::{self, Diag, Side, Trans, Uplo};
use crate::error::Result;
use crate::matrix::DistMatrix;
use blacs_ft::Grid;
use recovery::profile::{self, Part};
use std::ops::Range;

/// Panels `j0..j0+width` of a factorization, merged in factorization
/// order: `Q = H(j0)···H(j0+width−1) = I − V·T·Vᵀ`, held as one wide
/// [`Panel`] (so it is applied by the one block-reflector update,
/// [`Panel::local_wt_into`] and [`Panel::apply_wt_with`]), with the scratch of its
/// update kept from one group to the next (no allocation per step for W
/// once the first, largest, group has run).
///
/// The last panel pushed is merged lazily: its coupling block
/// `T(0..c, c..) = −T₁·(V₁ᵀ·V₂)·T₂` needs `V₁ᵀ·V₂` summed over the
/// process column, and that sum travels in the same reduction as the next
/// application's W (see [`PanelGroup::apply`]).
#[derive(Default)]
pub(crate) struct PanelGroup {
    /// The merged reflectors: `jb` columns so far, V explicit (unit
    /// diagonals, zeros above) over this process's rows `j0..m`.
    merged: Panel,
    /// The last panel pushed, while its coupling block is not yet formed.
    pending: Option<Pending>,
    /// Scratch: Wᵀ (and the coupling after it).
    w: Vec<f64>,
    /// Scratch of [`Panel::apply_wt_with`].
    wt: Vec<f64>,
}

/// Where the pending panel sits in the group's V.
#[derive(Clone, Copy)]
struct Pending {
    /// Its first column.
    col: usize,
    /// Local rows of the group above its first row (zeros of its V).
    above: usize,
}

impl PanelGroup {
    /// Starts a new group with its first panel, room reserved for
    /// `width` columns in all (what the group held before is dropped; its
    /// scratch is kept).
    pub(crate) fn start(&mut self, first: Panel, width: usize) {
        self.pending = None;
        self.merged = first;
        let more = self.merged.lrows * width.saturating_sub(self.merged.jb);
        self.merged.v.reserve(more);
    }

    /// Appends the panel factored right after the group's columns (its
    /// columns must already carry the group's update, [`PanelGroup::apply`]).
    pub(crate) fn push(&mut self, next: &Panel) {
        debug_assert!(self.pending.is_none(), "each push is applied before the next");
        let g = &mut self.merged;
        debug_assert_eq!(next.j0, g.j0 + g.jb);
        // Local rows of the group above the new panel's first row: V's
        // zeros there.
        let above = g.lrows - next.lrows;
        for col in 0..next.jb {
            g.v.resize(g.v.len() + above, 0.0);
            g.v.extend_from_slice(&next.v[col * next.lrows..(col + 1) * next.lrows]);
        }
        let (w0, w) = (g.jb, g.jb + next.jb);
        let mut t = vec![0.0; w * w];
        for col in 0..w0 {
            t[col * w..col * w + w0].copy_from_slice(&g.t[col * w0..(col + 1) * w0]);
        }
        for col in 0..next.jb {
            t[(w0 + col) * w + w0..(w0 + col + 1) * w].copy_from_slice(&next.t[col * next.jb..(col + 1) * next.jb]);
        }
        g.t = t;
        g.jb = w;
        self.pending = Some(Pending { col: w0, above });
    }

    /// Collective over the process column: `C = Qᵀ·C` for local columns
    /// `cols` of `a` (rows `j0..`), every process of the column passing the
    /// same `cols` and group. With a panel pending, its `V₁ᵀ·V₂` is summed
    /// in the same reduction as W and T completed before the update. No
    /// columns: nothing to do (and a pending panel stays pending).
    pub(crate) fn apply(&mut self, grid: &Grid, a: &mut DistMatrix, cols: Range<usize>) -> Result<()> {
        // (The trailing update's time, in the per-part profile.)
        let _p = profile::part(Part::UPDATE, None);
        let (nc, w) = (cols.len(), self.merged.jb);
        if nc == 0 {
            return Ok(());
        }
        self.merged.local_wt_into(a, cols.clone(), &mut self.w);
        self.reduce_with_coupling(grid, nc * w)?;
        self.merged.apply_wt_with(Trans::Yes, a, cols, &mut self.w[..nc * w], &mut self.wt);
        Ok(())
    }

    /// Collective over the process column: forms a pending panel's
    /// coupling block without updating anything, for a process column
    /// that holds none of the columns the group updates before its next
    /// panel (so that the next push finds the group merged). Nothing
    /// pending: nothing to do.
    pub(crate) fn settle(&mut self, grid: &Grid) -> Result<()> {
        self.w.clear();
        self.reduce_with_coupling(grid, 0)
    }

    /// Sums `w[..at]` (this process's Wᵀ, or nothing) over the process
    /// column, with a pending panel's `V₁ᵀ·V₂` appended to it in the same
    /// reduction, and completes T with it.
    fn reduce_with_coupling(&mut self, grid: &Grid, at: usize) -> Result<()> {
        if let Some(p) = self.pending {
            let w = self.merged.jb;
            self.w.resize(at + p.col * (w - p.col), 0.0);
            self.local_coupling(p, at);
        }
        self.merged.reduce_w(grid, &mut self.w)?;
        if let Some(p) = self.pending.take() {
            self.merge_t(p.col, at);
        }
        Ok(())
    }

    /// `V₁ᵀ·V₂` from this process's rows into `w[at..]`: the pending
    /// panel's columns against the earlier ones, `col × (width − col)`.
    /// (The rows above V₂'s first one are zeros of V₂ and add nothing.)
    fn local_coupling(&mut self, Pending { col, above }: Pending, at: usize) {
        let g = &self.merged;
        let (ld, w2) = (g.lrows, g.jb - col);
        if ld > above {
            let (v1, v2) = (&g.v[above..], &g.v[col * ld + above..]);
            blas::dgemm(Trans::Yes, Trans::No, col, w2, ld - above, 1.0, v1, ld, v2, ld, 0.0, &mut self.w[at..], col);
        }
    }

    /// `T(0..w0, w0..) = −T₁·S·T₂` from the summed `S = V₁ᵀ·V₂` in `w[at..]`.
    fn merge_t(&mut self, w0: usize, at: usize) {
        let g = &mut self.merged;
        let (w, w2) = (g.jb, g.jb - w0);
        let x = &mut self.w[at..at + w0 * w2];
        blas::dtrmm(Side::Left, Uplo::Upper, Trans::No, Diag::NonUnit, w0, w2, -1.0, &g.t, w, x, w0);
        let t2 = &g.t[w0 * w + w0..];
        blas::dtrmm(Side::Right, Uplo::Upper, Trans::No, Diag::NonUnit, w0, w2, 1.0, t2, w, x, w0);
        for col in 0..w2 {
            g.t[(w0 + col) * w..(w0 + col) * w + w0].copy_from_slice(&x[col * w0..(col + 1) * w0]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(len: usize, seed: u64) -> Vec<f64> {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..len).map(|_| rng.random_range(-0.5..0.5)).collect()
    }

    /// LAPACK's reflectors of the `rows × jb` panel `a` (ld `rows`),
    /// starting at global column `j0`: explicit V and T.
    fn factored(a: &mut [f64], rows: usize, jb: usize, j0: usize) -> Panel {
        let mut t = vec![0.0; jb * jb];
        blas::dgeqrt3(rows, jb, a, rows, &mut t, jb);
        let mut v = a[..rows * jb].to_vec();
        for c in 0..jb {
            v[c * rows..c * rows + c].fill(0.0);
            v[c * rows + c] = 1.0;
        }
        Panel { j0, jb, v, lrows: rows, t }
    }

    /// `x −= V·op(T)·(Vᵀ·x)` for the `rows × n` matrix `x`, V with
    /// `p.lrows` rows ending at x's last row.
    fn apply(p: &Panel, x: &mut [f64], rows: usize, n: usize) {
        let off = rows - p.lrows;
        let mut w = vec![0.0; p.jb * n];
        blas::dgemm(Trans::Yes, Trans::No, p.jb, n, p.lrows, 1.0, &p.v, p.lrows, &x[off..], rows, 0.0, &mut w, p.jb);
        blas::dtrmm(Side::Left, Uplo::Upper, Trans::Yes, Diag::NonUnit, p.jb, n, 1.0, &p.t, p.jb, &mut w, p.jb);
        blas::dgemm(Trans::No, Trans::No, p.lrows, n, p.jb, -1.0, &p.v, p.lrows, &w, p.jb, 1.0, &mut x[off..], rows);
    }

    #[test]
    fn merged_panels_apply_as_the_panels_one_after_the_other() {
        let (m, jb, n) = (90, 8, 21);
        let mut a = data(m * 3 * jb, 1);
        let c0 = data(m * n, 2);
        // Three panels, each factored after the previous ones' update.
        let mut panels = Vec::new();
        for k in 0..3 {
            let (j0, rows) = (k * jb, m - k * jb);
            for p in &panels {
                apply(p, &mut a[j0 * m..], m, 3 * jb - j0);
            }
            let mut block: Vec<f64> = (0..jb).flat_map(|c| a[(j0 + c) * m + j0..(j0 + c + 1) * m].to_vec()).collect();
            panels.push(factored(&mut block, rows, jb, j0));
        }
        let mut want = c0.clone();
        for p in &panels {
            apply(p, &mut want, m, n);
        }
        let mut group = PanelGroup::default();
        group.start(panels.remove(0), 3 * jb);
        for p in &panels {
            group.push(p);
            // (One process: the local coupling is the sum.)
            let pending = group.pending.take().unwrap();
            let at = 5;
            group.w = vec![f64::NAN; at + pending.col * (group.merged.jb - pending.col)];
            group.local_coupling(pending, at);
            group.merge_t(pending.col, at);
        }
        assert_eq!((group.merged.j0, group.merged.jb, group.merged.lrows), (0, 3 * jb, m));
        let mut got = c0;
        apply(&group.merged, &mut got, m, n);
        let err = got.iter().zip(&want).fold(0.0f64, |e, (x, y)| e.max((x - y).abs()));
        assert!(err < 1e-13, "max difference {err:e}");
    }
}
