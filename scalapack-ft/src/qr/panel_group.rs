//! Several consecutive factored panels as one block reflector
//! `I − V·T·Vᵀ` (LAPACK's DLARFT merge), so that the far trailing matrix
//! is updated once per group with inner dimension `width` instead of once
//! per panel with inner dimension NB: OpenBLAS runs the trailing DGEMMs
//! markedly faster at 128 or 192 than at 64, and the group needs one
//! reduction of W down the process column instead of one per panel.

use super::reflectors::{CarriesT, Panel};
use crate::blas::{self, Diag, Side, Trans, Uplo};
use crate::error::Result;
use crate::matrix::DistMatrix;
use blacs_ft::Grid;
use recovery::profile::{self, Part};
use std::ops::Range;

/// Panels `j0..j0+width` of a factorization, merged in factorization
/// order: `Q = H(j0)···H(j0+width−1) = I − V·T·Vᵀ`, held as one wide
/// [`Panel`] (so it is applied by the one block-reflector update,
/// [`Panel::local_wt_into`], [`Panel::carry_t`] and
/// [`Panel::update_from_wt`]), with the scratch of its
/// update kept from one group to the next (a postponed update takes the
/// scratch with it and gives it back when it is done).
///
/// The panels pushed are merged lazily: a panel's coupling block
/// `T(0..c, c..c+jb) = −T₁·(V₁ᵀ·V₂)·T₂` needs `V₁ᵀ·V₂` summed over the
/// process column, and that sum travels in the same reduction as the next
/// application's W (see [`PanelGroup::apply`]), however many panels were
/// pushed since: a process column with nothing to update before the
/// group's next panel goes straight to receiving it.
#[derive(Default)]
pub(crate) struct PanelGroup {
    /// The merged reflectors: `jb` columns so far, V explicit (unit
    /// diagonals, zeros above) over this process's rows `j0..m`.
    merged: Panel,
    /// The panels pushed whose coupling blocks are not yet formed, in
    /// push order.
    pending: Vec<Pending>,
    /// Scratch: Wᵀ (and the coupling after it).
    w: Vec<f64>,
    /// Scratch of [`Panel::carry_t`]: V·T, where V carries T.
    vt: Vec<f64>,
    /// An earlier group's update of far columns, not yet done
    /// ([`PanelGroup::apply_postponing`]).
    postponed: Option<Postponed>,
}

/// A group's update of local columns `w_col0..` whose W is summed and
/// carries T, columns `rest` still to update: local work, done a few
/// columns at a time while this process waits for a panel
/// ([`PanelGroup::work_postponed`]).
struct Postponed {
    /// The group's reflectors.
    group: Panel,
    /// `Wᵀ` (or `Wᵀ·op(T)ᵀ`), a row per column from `w_col0`.
    wt: Vec<f64>,
    /// `V·op(T)`, where that carries T.
    vt: Vec<f64>,
    carrier: CarriesT,
    w_col0: usize,
    rest: Range<usize>,
}

/// Columns a process updates per piece of postponed work: large enough
/// that the DGEMM keeps its rate (it packs all of V again for each piece:
/// at 3000 local rows and inner dimension 192, pieces of 32 columns ran
/// at 84 % of one large DGEMM's rate, 96 at 94 %, on one core of an AMD
/// EPYC, Zen kernel), small enough that a panel which arrives meanwhile
/// waits little (2·lrows·3·NB·96 flops, about 8 ms at 4096 rows). 4096²,
/// NB 64, interleaved against 32: 1×2 +3 %, 2×2 +1–2 % (medians of 8).
const POSTPONED_PIECE_COLS: usize = 96;

/// Where a pending panel sits in the group's V.
#[derive(Clone, Copy)]
struct Pending {
    /// Its first column.
    col: usize,
    /// Its width.
    width: usize,
    /// Local rows of the group above its first row (zeros of its V).
    above: usize,
}

impl PanelGroup {
    /// Starts a new group with its first panel, room reserved for
    /// `width` columns in all (what the group held before is dropped; its
    /// scratch is kept).
    pub(crate) fn start(&mut self, first: Panel, width: usize) {
        self.pending.clear();
        self.merged = first;
        let more = self.merged.lrows * width.saturating_sub(self.merged.jb);
        self.merged.v.reserve(more);
    }

    /// Appends the panel factored right after the group's columns (its
    /// columns must already carry the group's update, [`PanelGroup::apply`]).
    pub(crate) fn push(&mut self, next: &Panel) {
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
        self.pending.push(Pending { col: w0, width: next.jb, above });
    }

    /// Collective over the process column: `C = Qᵀ·C` for local columns
    /// `cols` of `a` (rows `j0..`), every process of the column passing the
    /// same `cols` and group. Pending panels' `V₁ᵀ·V₂` are summed in the
    /// same reduction as W and T completed before the update. No columns:
    /// nothing to do (and pending panels stay pending).
    pub(crate) fn apply(&mut self, grid: &Grid, a: &mut DistMatrix, cols: Range<usize>) -> Result<()> {
        debug_assert!(
            self.postponed.as_ref().is_none_or(|p| cols.end <= p.rest.start || cols.start >= p.rest.end),
            "columns with a postponed update"
        );
        let end = cols.end;
        self.apply_part(grid, a, cols, end).map(|_| ())
    }

    /// [`PanelGroup::apply`] for local columns `cols`, of which only
    /// `cols.start..now_end` are updated now: the rest is postponed
    /// (W already summed, so it is local work), for
    /// [`PanelGroup::work_postponed`] to do while this process waits and
    /// [`PanelGroup::finish_postponed`] to complete, which must happen
    /// before anything reads those columns. An earlier postponed update is
    /// completed first. The group's reflectors move into the postponed
    /// update: the next call is [`PanelGroup::start`].
    pub(crate) fn apply_postponing(
        &mut self,
        grid: &Grid,
        a: &mut DistMatrix,
        cols: Range<usize>,
        now_end: usize,
    ) -> Result<()> {
        self.finish_postponed(a);
        let now_end = now_end.clamp(cols.start, cols.end);
        match self.apply_part(grid, a, cols.clone(), now_end)? {
            Some(carrier) if now_end < cols.end => {
                self.postponed = Some(Postponed {
                    group: std::mem::take(&mut self.merged),
                    wt: std::mem::take(&mut self.w),
                    vt: std::mem::take(&mut self.vt),
                    carrier,
                    w_col0: cols.start,
                    rest: now_end..cols.end,
                });
            }
            _ => {}
        }
        Ok(())
    }

    /// The group's update of local columns `cols` (collective over the
    /// process column, as [`PanelGroup::apply`]), applied now to
    /// `cols.start..now_end` only: W summed and carrying T is left in
    /// `self.w` / `self.vt` for the rest. `None` where there are no columns.
    fn apply_part(
        &mut self,
        grid: &Grid,
        a: &mut DistMatrix,
        cols: Range<usize>,
        now_end: usize,
    ) -> Result<Option<CarriesT>> {
        // (The trailing update's time, in the per-part profile.)
        let _p = profile::part(Part::UPDATE, None);
        let (nc, w) = (cols.len(), self.merged.jb);
        if nc == 0 {
            return Ok(None);
        }
        self.merged.local_wt_into(a, cols.clone(), &mut self.w);
        self.reduce_with_coupling(grid, nc * w)?;
        self.w.truncate(nc * w);
        let carrier = self.merged.carry_t(Trans::Yes, nc, &mut self.w, &mut self.vt);
        self.merged.update_from_wt(a, (carrier, &self.w, &self.vt), cols.start, cols.start..now_end);
        Ok(Some(carrier))
    }

    /// Updates the next few columns of a postponed update
    /// ([`POSTPONED_PIECE_COLS`]); `false` once none are left.
    pub(crate) fn work_postponed(&mut self, a: &mut DistMatrix) -> bool {
        let Some(p) = self.postponed.as_ref() else { return false };
        let end = p.rest.start + POSTPONED_PIECE_COLS;
        self.finish_postponed_before(a, end);
        true
    }

    /// Updates the postponed columns before local column `end` (the rest
    /// stays postponed).
    pub(crate) fn finish_postponed_before(&mut self, a: &mut DistMatrix, end: usize) {
        let Some(p) = self.postponed.as_mut() else { return };
        let _p = profile::part(Part::UPDATE, None);
        let now = p.rest.start..end.clamp(p.rest.start, p.rest.end);
        p.group.update_from_wt(a, (p.carrier, &p.wt, &p.vt), p.w_col0, now.clone());
        p.rest.start = now.end;
        if p.rest.is_empty() {
            // (Its buffers become the scratch again.)
            if let Some(done) = self.postponed.take() {
                (self.w, self.vt) = (done.wt, done.vt);
            }
        }
    }

    /// Completes a postponed update (nothing postponed: nothing to do),
    /// and keeps its buffers as scratch.
    pub(crate) fn finish_postponed(&mut self, a: &mut DistMatrix) {
        self.finish_postponed_before(a, usize::MAX);
    }

    /// Sums `w[..at]` (this process's Wᵀ) over the process column, with
    /// the pending panels' `V₁ᵀ·V₂` appended to it in the same reduction,
    /// and completes T with them.
    fn reduce_with_coupling(&mut self, grid: &Grid, at: usize) -> Result<()> {
        let pending = std::mem::take(&mut self.pending);
        self.local_couplings(&pending, at);
        self.merged.reduce_w(grid, &mut self.w)?;
        self.merge_couplings(&pending, at);
        // (Kept for its capacity.)
        self.pending = pending;
        self.pending.clear();
        Ok(())
    }

    /// The `pending` panels' local `V₁ᵀ·V₂`, one after the other from
    /// `w[at..]` (resized to end with them).
    fn local_couplings(&mut self, pending: &[Pending], at: usize) {
        self.w.resize(pending.iter().fold(at, |len, p| len + p.col * p.width), 0.0);
        let mut from = at;
        for &p in pending {
            self.local_coupling(p, from);
            from += p.col * p.width;
        }
    }

    /// T completed with the `pending` panels' summed couplings from
    /// `w[at..]`, in push order (each merge needs the group's T complete
    /// up to its panel).
    fn merge_couplings(&mut self, pending: &[Pending], at: usize) {
        let mut from = at;
        for &p in pending {
            self.merge_t(p, from);
            from += p.col * p.width;
        }
    }

    /// `V₁ᵀ·V₂` from this process's rows into `w[at..]`: the pending
    /// panel's columns against the earlier ones, `col × width`.
    /// (The rows above V₂'s first one are zeros of V₂ and add nothing.)
    fn local_coupling(&mut self, Pending { col, width, above }: Pending, at: usize) {
        let g = &self.merged;
        let ld = g.lrows;
        let out = &mut self.w[at..at + col * width];
        if ld > above {
            let (v1, v2) = (&g.v[above..], &g.v[col * ld + above..]);
            blas::dgemm(Trans::Yes, Trans::No, col, width, ld - above, 1.0, v1, ld, v2, ld, 0.0, out, col);
        } else {
            out.fill(0.0);
        }
    }

    /// `T(0..c, c..c+jb) = −T₁·S·T₂` for the pending panel at column `c`,
    /// from the summed `S = V₁ᵀ·V₂` in `w[at..]`.
    fn merge_t(&mut self, Pending { col: w0, width: w2, .. }: Pending, at: usize) {
        let g = &mut self.merged;
        let w = g.jb;
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
        let first = panels.remove(0);
        // Merged after each push, and both pushes merged at once (the
        // coupling of a column with nothing to update in between).
        for each in [true, false] {
            let mut group = PanelGroup::default();
            group.start(first.clone(), 3 * jb);
            for p in &panels {
                group.push(p);
                if each {
                    merge_pending(&mut group);
                }
            }
            merge_pending(&mut group);
            assert_eq!((group.merged.j0, group.merged.jb, group.merged.lrows), (0, 3 * jb, m));
            let mut got = c0.clone();
            apply(&group.merged, &mut got, m, n);
            let err = got.iter().zip(&want).fold(0.0f64, |e, (x, y)| e.max((x - y).abs()));
            assert!(err < 1e-13, "merged after each push: {each}; max difference {err:e}");
        }
    }

    /// [`PanelGroup::reduce_with_coupling`] on one process (whose local
    /// couplings are the sums), after 5 values of W.
    fn merge_pending(group: &mut PanelGroup) {
        let pending = std::mem::take(&mut group.pending);
        group.w = vec![f64::NAN; 5];
        group.local_couplings(&pending, 5);
        group.merge_couplings(&pending, 5);
    }
}
