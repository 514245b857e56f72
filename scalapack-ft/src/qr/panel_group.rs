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
use blacs_ft::{Grid, Scope};
use std::ops::Range;

/// Panels `j0..j0+width` of a factorization, merged in factorization
/// order: `Q = H(j0)···H(j0+width−1) = I − V·T·Vᵀ`, with the scratch of
/// its update kept from one group to the next (no allocation per step for
/// W once the first, largest, group has run).
///
/// The last panel pushed is merged lazily: its coupling block
/// `T(0..c, c..) = −T₁·(V₁ᵀ·V₂)·T₂` needs `V₁ᵀ·V₂` summed over the
/// process column, and that sum travels in the same reduction as the next
/// application's W (see [`PanelGroup::apply`]).
#[derive(Default)]
pub(crate) struct PanelGroup {
    /// First global column (and row) of the group.
    j0: usize,
    /// Columns merged so far.
    width: usize,
    /// Local rows of V (this process's rows `j0..m`).
    lrows: usize,
    /// V, `lrows × width`, explicit (unit diagonals, zeros above), ld `lrows`.
    v: Vec<f64>,
    /// T, `width × width` upper triangular.
    t: Vec<f64>,
    /// The last panel pushed, while its coupling block is not yet formed.
    pending: Option<Pending>,
    /// Scratch: `Wᵀ = Cᵀ·V` (and the coupling after it).
    wt: Vec<f64>,
    /// Scratch: `V·Tᵀ`.
    vt: Vec<f64>,
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
        (self.j0, self.width, self.lrows, self.pending) = (first.j0, first.jb, first.lrows, None);
        (self.v, self.t) = (first.v, first.t);
        self.v.reserve(self.lrows * width.saturating_sub(self.width));
    }

    /// Appends the panel factored right after the group's columns (its
    /// columns must already carry the group's update, [`PanelGroup::apply`]).
    pub(crate) fn push(&mut self, next: &Panel) {
        debug_assert!(self.pending.is_none(), "each push is applied before the next");
        debug_assert_eq!(next.j0, self.j0 + self.width);
        // Local rows of the group above the new panel's first row: V's
        // zeros there.
        let above = self.lrows - next.lrows;
        for col in 0..next.jb {
            self.v.resize(self.v.len() + above, 0.0);
            self.v.extend_from_slice(&next.v[col * next.lrows..(col + 1) * next.lrows]);
        }
        let (w0, w) = (self.width, self.width + next.jb);
        let mut t = vec![0.0; w * w];
        for col in 0..w0 {
            t[col * w..col * w + w0].copy_from_slice(&self.t[col * w0..(col + 1) * w0]);
        }
        for col in 0..next.jb {
            t[(w0 + col) * w + w0..(w0 + col + 1) * w].copy_from_slice(&next.t[col * next.jb..(col + 1) * next.jb]);
        }
        self.t = t;
        self.width = w;
        self.pending = Some(Pending { col: w0, above });
    }

    /// Collective over the process column: `C = Qᵀ·C` for local columns
    /// `cols` of `a` (rows `j0..`), every process of the column passing the
    /// same `cols` and group. With a panel pending, its `V₁ᵀ·V₂` is summed
    /// in the same reduction as W and T completed before the update. No
    /// columns: nothing to do (and a pending panel stays pending).
    ///
    /// `Qᵀ·C = C − V·Tᵀ·(Vᵀ·C)`, computed with `Wᵀ = Cᵀ·V` (OpenBLAS runs
    /// this tall product faster than `Vᵀ·C`, see [`Panel::local_w`]) and
    /// never transposed: `C −= (V·Tᵀ)·Wᵀᵀ` where C has more columns than
    /// V has local rows (T's flops then go to V's rows), `C −= V·(Wᵀ·T)ᵀ`
    /// otherwise.
    pub(crate) fn apply(&mut self, grid: &Grid, a: &mut DistMatrix, cols: Range<usize>) -> Result<()> {
        let (nc, w, lrows) = (cols.len(), self.width, self.lrows);
        if nc == 0 {
            return Ok(());
        }
        let (ld, base) = (a.lld(), a.local_rows_before(self.j0) + cols.start * a.lld());
        let coupling = self.pending.map_or(0, |p| p.col * (w - p.col));
        self.wt.clear();
        self.wt.resize(nc * w + coupling, 0.0);
        if lrows > 0 {
            let c = &a.local()[base..];
            blas::dgemm(Trans::Yes, Trans::No, nc, w, lrows, 1.0, c, ld, &self.v, lrows, 0.0, &mut self.wt, nc);
        }
        if let Some(p) = self.pending {
            self.local_coupling(p, nc * w);
        }
        if grid.nprow() > 1 {
            grid.sum(Scope::Column, &mut self.wt, None)?;
        }
        if let Some(p) = self.pending.take() {
            self.merge_t(p.col, nc * w);
        }
        if lrows == 0 {
            return Ok(());
        }
        let c = &mut a.local_mut()[base..];
        let wt = &mut self.wt[..nc * w];
        if nc > lrows {
            self.vt.clear();
            self.vt.extend_from_slice(&self.v);
            blas::dtrmm(
                Side::Right,
                Uplo::Upper,
                Trans::Yes,
                Diag::NonUnit,
                lrows,
                w,
                1.0,
                &self.t,
                w,
                &mut self.vt,
                lrows,
            );
            blas::dgemm(Trans::No, Trans::Yes, lrows, nc, w, -1.0, &self.vt, lrows, wt, nc, 1.0, c, ld);
        } else {
            blas::dtrmm(Side::Right, Uplo::Upper, Trans::No, Diag::NonUnit, nc, w, 1.0, &self.t, w, wt, nc);
            blas::dgemm(Trans::No, Trans::Yes, lrows, nc, w, -1.0, &self.v, lrows, wt, nc, 1.0, c, ld);
        }
        Ok(())
    }

    /// `V₁ᵀ·V₂` from this process's rows into `wt[at..]`: the pending
    /// panel's columns against the earlier ones, `col × (width − col)`.
    /// (The rows above V₂'s first one are zeros of V₂ and add nothing.)
    fn local_coupling(&mut self, Pending { col, above }: Pending, at: usize) {
        let (ld, w2) = (self.lrows, self.width - col);
        if ld > above {
            let (v1, v2) = (&self.v[above..], &self.v[col * ld + above..]);
            blas::dgemm(Trans::Yes, Trans::No, col, w2, ld - above, 1.0, v1, ld, v2, ld, 0.0, &mut self.wt[at..], col);
        }
    }

    /// `T(0..w0, w0..) = −T₁·S·T₂` from the summed `S = V₁ᵀ·V₂` in `wt[at..]`.
    fn merge_t(&mut self, w0: usize, at: usize) {
        let (w, w2) = (self.width, self.width - w0);
        let x = &mut self.wt[at..at + w0 * w2];
        blas::dtrmm(Side::Left, Uplo::Upper, Trans::No, Diag::NonUnit, w0, w2, -1.0, &self.t, w, x, w0);
        let t2 = &self.t[w0 * w + w0..];
        blas::dtrmm(Side::Right, Uplo::Upper, Trans::No, Diag::NonUnit, w0, w2, 1.0, t2, w, x, w0);
        for col in 0..w2 {
            self.t[(w0 + col) * w..(w0 + col) * w + w0].copy_from_slice(&x[col * w0..(col + 1) * w0]);
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
            group.wt = vec![f64::NAN; at + pending.col * (group.width - pending.col)];
            group.local_coupling(pending, at);
            group.merge_t(pending.col, at);
        }
        assert_eq!((group.j0, group.width, group.lrows), (0, 3 * jb, m));
        let merged = Panel { j0: 0, jb: group.width, v: group.v, lrows: m, t: group.t };
        let mut got = c0;
        apply(&merged, &mut got, m, n);
        let err = got.iter().zip(&want).fold(0.0f64, |e, (x, y)| e.max((x - y).abs()));
        assert!(err < 1e-13, "max difference {err:e}");
    }
}
