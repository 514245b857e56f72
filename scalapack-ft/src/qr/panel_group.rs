//! Several consecutive factored panels as one block reflector
//! `I − V·T·Vᵀ` (LAPACK's DLARFT merge), so that the far trailing matrix
//! is updated once per group with inner dimension `width` instead of once
//! per panel with inner dimension NB: OpenBLAS runs the trailing DGEMMs
//! markedly faster at 128 than at 64, and the group needs one reduction of
//! W down the process column instead of one per panel.

use super::reflectors::Panel;
use crate::blas::{self, Diag, Side, Trans, Uplo};
use crate::error::Result;
use crate::matrix::DistMatrix;
use blacs_ft::Grid;
use std::ops::Range;

/// Panels `j0..j0+width` of a factorization, merged in factorization
/// order: `Q = H(j0)···H(j0+width−1) = I − V·T·Vᵀ`.
///
/// `reflector` holds V (this process's rows `j0..m`, explicit, ld
/// `lrows`) and T. The last panel pushed is merged lazily: its coupling
/// block `T(0..pending, pending..) = −T₁·(V₁ᵀ·V₂)·T₂` needs `V₁ᵀ·V₂`
/// summed over the process column, and that sum travels in the same
/// reduction as the next application's W (see [`PanelGroup::apply`]).
pub(crate) struct PanelGroup {
    reflector: Panel,
    /// The last panel pushed, while its coupling block is not yet formed.
    pending: Option<Pending>,
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
    /// A group of one panel; `capacity` (local) is the most columns it
    /// will hold (V is reserved for them, so pushing never reallocates).
    pub(crate) fn new(mut first: Panel, capacity: usize) -> PanelGroup {
        first.v.reserve(first.lrows * capacity.saturating_sub(first.jb));
        PanelGroup { reflector: first, pending: None }
    }

    /// Appends the panel factored right after the group's columns (its
    /// columns must already carry the group's update).
    pub(crate) fn push(&mut self, next: Panel) {
        debug_assert!(self.pending.is_none(), "each push is applied before the next");
        debug_assert_eq!(next.j0, self.reflector.j0 + self.reflector.jb);
        let r = &mut self.reflector;
        // Local rows of the group above the new panel's first row: V's
        // zeros there.
        let above = r.lrows - next.lrows;
        for col in 0..next.jb {
            r.v.resize(r.v.len() + above, 0.0);
            r.v.extend_from_slice(&next.v[col * next.lrows..(col + 1) * next.lrows]);
        }
        let (w0, w) = (r.jb, r.jb + next.jb);
        let mut t = vec![0.0; w * w];
        for col in 0..w0 {
            t[col * w..col * w + w0].copy_from_slice(&r.t[col * w0..(col + 1) * w0]);
        }
        for col in 0..next.jb {
            t[(w0 + col) * w + w0..(w0 + col + 1) * w].copy_from_slice(&next.t[col * next.jb..(col + 1) * next.jb]);
        }
        r.t = t;
        r.jb = w;
        self.pending = Some(Pending { col: w0, above });
    }

    /// Collective over the process column: applies `Qᵀ` of the group to
    /// local columns `cols` of `a` (every process of the column passes the
    /// same `cols` and group). With a panel pending, its `V₁ᵀ·V₂` is summed
    /// in the same reduction as W, and T completed before the update. No
    /// columns: nothing to do (and a pending panel stays pending).
    pub(crate) fn apply(&mut self, grid: &Grid, a: &mut DistMatrix, cols: Range<usize>) -> Result<()> {
        let r = &self.reflector;
        let nc = cols.len();
        if nc == 0 {
            return Ok(());
        }
        let mut w = r.local_w(a, cols.clone());
        let wlen = w.len();
        if let Some(p) = self.pending {
            w.extend(self.local_coupling(p));
        }
        r.reduce_w(grid, &mut w)?;
        if let Some(p) = self.pending.take() {
            self.merge_t(p.col, &w[wlen..]);
        }
        self.reflector.apply_w(Trans::Yes, a, cols, &mut w[..wlen]);
        Ok(())
    }

    /// `V₁ᵀ·V₂` from this process's rows: the pending panel's columns
    /// against the earlier ones, `col × (width − col)`. (The rows above V₂'s
    /// first one are zeros of V₂ and add nothing.)
    fn local_coupling(&self, Pending { col, above }: Pending) -> Vec<f64> {
        let r = &self.reflector;
        let (ld, w2) = (r.lrows, r.jb - col);
        let mut s = vec![0.0; col * w2];
        if ld > above {
            let (v1, v2) = (&r.v[above..], &r.v[col * ld + above..]);
            blas::dgemm(Trans::Yes, Trans::No, col, w2, ld - above, 1.0, v1, ld, v2, ld, 0.0, &mut s, col);
        }
        s
    }

    /// `T(0..w0, w0..) = −T₁·S·T₂` from the summed `S = V₁ᵀ·V₂`.
    fn merge_t(&mut self, w0: usize, s: &[f64]) {
        let r = &mut self.reflector;
        let (w, w2) = (r.jb, r.jb - w0);
        let mut x = s.to_vec();
        blas::dtrmm(Side::Left, Uplo::Upper, Trans::No, Diag::NonUnit, w0, w2, -1.0, &r.t, w, &mut x, w0);
        let t2 = &r.t[w0 * w + w0..];
        blas::dtrmm(Side::Right, Uplo::Upper, Trans::No, Diag::NonUnit, w0, w2, 1.0, t2, w, &mut x, w0);
        for col in 0..w2 {
            r.t[(w0 + col) * w..(w0 + col) * w + w0].copy_from_slice(&x[col * w0..(col + 1) * w0]);
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
        let mut panels = panels.into_iter();
        let mut group = PanelGroup::new(panels.next().unwrap(), 3 * jb);
        for p in panels {
            group.push(p);
            // (One process: the local coupling is the sum.)
            let pending = group.pending.take().unwrap();
            let s = group.local_coupling(pending);
            group.merge_t(pending.col, &s);
        }
        assert_eq!((group.reflector.jb, group.reflector.lrows), (3 * jb, m));
        let mut got = c0;
        apply(&group.reflector, &mut got, m, n);
        let err = got.iter().zip(&want).fold(0.0f64, |e, (x, y)| e.max((x - y).abs()));
        assert!(err < 1e-13, "max difference {err:e}");
    }
}
