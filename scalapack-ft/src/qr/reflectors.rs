//! Block reflectors of one panel: factoring the panel (ScaLAPACK PDGEQR2),
//! forming its triangular factor T (PDLARFT), shipping V and T along the
//! process rows, and applying `I − V·op(T)·Vᵀ` to local columns (PDLARFB).

use super::cholesky_qr::cholqr2_panel;
use super::panel_choice::PanelAlgorithm;
use super::tsqr::tsqr_panel;
use crate::blas::{self, Diag, Side, Trans, Uplo};
use crate::error::Result;
use crate::matrix::DistMatrix;
use crate::row_panel::RowPanel;
use blacs_ft::index::{indxl2g, numroc};
use blacs_ft::{Grid, Scope};
use recovery::profile::{self, Part};
use std::ops::Range;

/// The reflectors of panel `j0..j0+jb` as seen by one process: its local
/// rows of V (rows `j0..m` of the matrix, unit diagonal and zeros above it
/// made explicit) and the jb×jb upper-triangular T, with `tau = diag(T)`.
/// V must be exactly zero above its diagonal: the updates skip those
/// entries where they form whole blocks ([`Panel::row_runs`]).
#[derive(Clone, Default)]
pub struct Panel {
    /// First global column (and row) of the panel.
    pub j0: usize,
    /// Panel width.
    pub jb: usize,
    /// Local rows of V (`lrows` of them), column-major, leading dimension `lrows`.
    pub v: Vec<f64>,
    /// Number of local rows of V.
    pub lrows: usize,
    /// T, jb×jb column-major.
    pub t: Vec<f64>,
}

impl Panel {
    /// The panel's Householder scalars (the diagonal of T).
    pub fn tau(&self) -> Vec<f64> {
        (0..self.jb).map(|c| self.t[c + c * self.jb]).collect()
    }

    /// Applies `I − V·op(T)·Vᵀ` to local columns `cols` of `c` (rows `j0..`
    /// in `c`'s row distribution, which must be the panel's). With
    /// `trans = Yes` this is Hᵀ (used by the factorization and by Qᵀ·C).
    /// Collective over the process column when P > 1.
    pub fn apply(&self, grid: &Grid, trans: Trans, c: &mut DistMatrix, cols: Range<usize>) -> Result<()> {
        let _p = profile::part(Part::UPDATE, None);
        let (mut wt, mut vt) = (Vec::new(), Vec::new());
        self.local_wt_into(c, cols.clone(), &mut wt);
        self.reduce_w(grid, &mut wt)?;
        self.apply_wt_with(trans, c, cols, &mut wt, &mut vt);
        Ok(())
    }

    /// `W = Vᵀ·C(j0.., cols)` from this process's rows (no communication);
    /// `jb × cols.len()`, column-major.
    ///
    /// Computed as `(Cᵀ·V)ᵀ`, as LAPACK's DLARFB does: OpenBLAS runs the
    /// tall `nc × jb × lrows` product markedly faster (≈ 20–30 % here) than
    /// the short-and-wide `jb × nc × lrows` one, and the transpose of the
    /// small result is cheap.
    pub fn local_w(&self, c: &DistMatrix, cols: Range<usize>) -> Vec<f64> {
        let (mut w, mut wt) = (Vec::new(), Vec::new());
        self.local_w_into(c, cols, &mut w, &mut wt);
        w
    }

    /// [`Panel::local_w`] into `w` (resized to `jb × cols.len()`), with
    /// `wt` as scratch: buffers a caller keeps from one update to the next.
    pub fn local_w_into(&self, c: &DistMatrix, cols: Range<usize>, w: &mut Vec<f64>, wt: &mut Vec<f64>) {
        let nc = cols.len();
        self.local_wt_into(c, cols, wt);
        w.clear();
        w.resize(self.jb * nc, 0.0);
        transpose_into(wt, nc, self.jb, w);
    }

    /// `Wᵀ = C(j0.., cols)ᵀ·V` from this process's rows (no communication)
    /// into `wt`, resized to `cols.len() × jb`, column-major: W without its
    /// transpose, for [`Panel::apply_wt_with`].
    pub fn local_wt_into(&self, c: &DistMatrix, cols: Range<usize>, wt: &mut Vec<f64>) {
        let (nc, jb) = (cols.len(), self.jb);
        let (lr0, ld) = (c.local_rows_before(self.j0), c.lld());
        wt.clear();
        wt.resize(nc * jb, 0.0);
        if nc > 0 && self.lrows > 0 {
            let cbase = lr0 + cols.start * ld;
            for (i, run) in self.row_runs(c).into_iter().enumerate() {
                // (wt is zero where a run's columns stop short of jb.)
                let beta = if i == 0 { 0.0 } else { 1.0 };
                let (cr, vr) = (&c.local()[cbase + run.first..], &self.v[run.first..]);
                blas::dgemm(Trans::Yes, Trans::No, nc, run.cols, run.rows, 1.0, cr, ld, vr, self.lrows, beta, wt, nc);
            }
        }
    }

    /// This process's rows of V in runs by how many of V's columns can be
    /// nonzero in them, so that the update's two products skip V's zeros:
    /// `V(g, j) = 0` above the diagonal (global row `g < j0 + j`), so a
    /// run of the panel's first jb rows, one block of `c`'s row
    /// distribution at a time, needs only its first `g_end − j0` columns;
    /// the rows below them need all jb. A single panel (square blocks)
    /// is one run; for a group of three panels
    /// ([`super::panel_group::PanelGroup`]) this skips two thirds of the
    /// zero triangle, about 1.5·NB/N of a square factorization's update
    /// flops (2 % at 4096², NB 64).
    fn row_runs(&self, c: &DistMatrix) -> Vec<RowRun> {
        let lr0 = c.local_rows_before(self.j0);
        let end = (self.j0 + self.jb).min(c.m());
        let mut runs: Vec<RowRun> = Vec::new();
        let mut push = |first: usize, rows: usize, cols: usize| match runs.last_mut() {
            Some(last) if last.cols == cols && last.first + last.rows == first => last.rows += rows,
            _ => runs.push(RowRun { first, rows, cols }),
        };
        let mut g = self.j0;
        while g < end {
            let g1 = ((g / c.mb() + 1) * c.mb()).min(end);
            let (r0, r1) = (c.local_rows_before(g) - lr0, c.local_rows_before(g1) - lr0);
            if r1 > r0 {
                push(r0, r1 - r0, g1 - self.j0);
            }
            g = g1;
        }
        let below = c.local_rows_before(end) - lr0;
        if self.lrows > below {
            push(below, self.lrows - below, self.jb);
        }
        runs
    }

    /// Sums W over the process column (P > 1). Every process of a column has
    /// the same number of local columns, so all of them join or none does.
    pub fn reduce_w(&self, grid: &Grid, w: &mut [f64]) -> Result<()> {
        if grid.nprow() > 1 && !w.is_empty() {
            grid.sum(Scope::Column, w, None)?;
        }
        Ok(())
    }

    /// `C(j0.., cols) −= V·op(T)·W` (local, no communication); `w` is
    /// overwritten.
    pub fn apply_w(&self, trans: Trans, c: &mut DistMatrix, cols: Range<usize>, w: &mut [f64]) {
        self.scale_w(trans, w, cols.len());
        self.update_cols(c, cols.start, cols, w);
    }

    /// `C(j0.., cols) −= V·op(T)·W` from `Wᵀ` ([`Panel::local_wt_into`],
    /// summed over the process column; overwritten), with `vt` as scratch
    /// (a buffer the caller keeps from one update to the next): T
    /// multiplies whichever of V and Wᵀ is smaller ([`Panel::carry_t`]).
    pub fn apply_wt_with(
        &self,
        trans: Trans,
        c: &mut DistMatrix,
        cols: Range<usize>,
        wt: &mut [f64],
        vt: &mut Vec<f64>,
    ) {
        let nc = cols.len();
        if nc == 0 || self.lrows == 0 {
            return;
        }
        let carrier = self.carry_t(trans, nc, wt, vt);
        self.update_from_wt(c, (carrier, &wt[..], vt), cols.start, cols);
    }

    /// Multiplies op(T) into whichever factor of `V·op(T)·W` is smaller,
    /// for an update of `nc` columns from `Wᵀ` (`wt`, `nc × jb`): into V
    /// (a copy, in `vt`) when C has more columns than V local rows (one
    /// process column: every trailing column is local), else into Wᵀ, in
    /// place (`Wᵀ·op(T)ᵀ`). Then [`Panel::update_from_wt`] updates C.
    pub(crate) fn carry_t(&self, trans: Trans, nc: usize, wt: &mut [f64], vt: &mut Vec<f64>) -> CarriesT {
        let (jb, lrows) = (self.jb, self.lrows);
        if nc > lrows {
            vt.clear();
            vt.extend_from_slice(&self.v);
            blas::dtrmm(Side::Right, Uplo::Upper, trans, Diag::NonUnit, lrows, jb, 1.0, &self.t, jb, vt, lrows);
            CarriesT::V
        } else {
            // Wᵀ·op(T)ᵀ: op(T)ᵀ is T itself when op is the transpose.
            let back = if trans == Trans::Yes { Trans::No } else { Trans::Yes };
            blas::dtrmm(Side::Right, Uplo::Upper, back, Diag::NonUnit, nc, jb, 1.0, &self.t, jb, wt, nc);
            CarriesT::W
        }
    }

    /// `C(j0.., part) −= V·op(T)·W(:, part)` once T is in one of the
    /// factors ([`Panel::carry_t`]): `wt` is the whole `Wᵀ` (its first row
    /// for local column `w_col0`, leading dimension its row count), `vt`
    /// V·op(T) where that carries T. Any part of W's columns, in any order.
    pub(crate) fn update_from_wt(
        &self,
        c: &mut DistMatrix,
        (carrier, wt, vt): (CarriesT, &[f64], &[f64]),
        w_col0: usize,
        part: Range<usize>,
    ) {
        let (nc, jb, lrows) = (part.len(), self.jb, self.lrows);
        if nc == 0 || lrows == 0 {
            return;
        }
        let ldw = wt.len() / jb;
        let (lr0, ld) = (c.local_rows_before(self.j0), c.lld());
        let cbase = lr0 + part.start * ld;
        let wpart = &wt[part.start - w_col0..];
        match carrier {
            // (V·T has no zeros to skip.)
            CarriesT::V => {
                let cl = &mut c.local_mut()[cbase..];
                blas::dgemm(Trans::No, Trans::Yes, lrows, nc, jb, -1.0, vt, lrows, wpart, ldw, 1.0, cl, ld);
            }
            CarriesT::W => self.subtract_v_times(c, part.start, nc, (Trans::Yes, wpart, ldw)),
        }
    }

    /// `W = op(T)·W` for `nc` columns (the first half of [`Panel::apply_w`]).
    pub fn scale_w(&self, trans: Trans, w: &mut [f64], nc: usize) {
        if nc > 0 {
            blas::dtrmm(Side::Left, Uplo::Upper, trans, Diag::NonUnit, self.jb, nc, 1.0, &self.t, self.jb, w, self.jb);
        }
    }

    /// `C(j0.., part) −= V·W(:, part)` where W's first column belongs to
    /// local column `w_col0` (the second half of [`Panel::apply_w`], for any
    /// part of the columns W was computed for).
    pub fn update_cols(&self, c: &mut DistMatrix, w_col0: usize, part: Range<usize>, w: &[f64]) {
        let nc = part.len();
        if nc == 0 || self.lrows == 0 {
            return;
        }
        let wpart = &w[(part.start - w_col0) * self.jb..];
        self.subtract_v_times(c, part.start, nc, (Trans::No, wpart, self.jb));
    }

    /// `C(j0.., col0..col0+nc) −= V·op(X)` for the `jb × nc` matrix
    /// `op(X)` (`X` with leading dimension `ldx`), one DGEMM per run of V's
    /// rows ([`Panel::row_runs`]), so that V's zeros are skipped.
    fn subtract_v_times(&self, c: &mut DistMatrix, col0: usize, nc: usize, (trans, x, ldx): (Trans, &[f64], usize)) {
        let (lr0, ld) = (c.local_rows_before(self.j0), c.lld());
        let cbase = lr0 + col0 * ld;
        for run in self.row_runs(c) {
            let (vr, cl) = (&self.v[run.first..], &mut c.local_mut()[cbase + run.first..]);
            blas::dgemm(Trans::No, trans, run.rows, nc, run.cols, -1.0, vr, self.lrows, x, ldx, 1.0, cl, ld);
        }
    }
}

/// Which factor of `V·op(T)·W` carries T ([`Panel::carry_t`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CarriesT {
    /// `vt` holds `V·op(T)`.
    V,
    /// `wt` holds `Wᵀ·op(T)ᵀ`.
    W,
}

/// Consecutive local rows of a panel's V that are zero past their first
/// `cols` columns ([`Panel::row_runs`]).
struct RowRun {
    /// First local row of V.
    first: usize,
    /// Rows in the run.
    rows: usize,
    /// V's columns that can be nonzero in them (a prefix).
    cols: usize,
}

/// `dst = srcᵀ` for a `rows × cols` column-major `src` (`dst` is
/// `cols × rows`), in cache-sized tiles.
fn transpose_into(src: &[f64], rows: usize, cols: usize, dst: &mut [f64]) {
    const TILE: usize = 32;
    for c0 in (0..cols).step_by(TILE) {
        for r0 in (0..rows).step_by(TILE) {
            for c in c0..(c0 + TILE).min(cols) {
                for r in r0..(r0 + TILE).min(rows) {
                    dst[c + r * cols] = src[r + c * rows];
                }
            }
        }
    }
}

/// Explicit V (unit diagonal, zeros above) of panel `j0..j0+jb` from the
/// reflectors stored below the diagonal of `a` (owner column only).
fn explicit_v(a: &DistMatrix, j0: usize, jb: usize) -> (Vec<f64>, usize) {
    let lr0 = a.local_rows_before(j0);
    let lrows = a.local_rows() - lr0;
    let lc0 = a.local_cols_before(j0);
    let ld = a.lld();
    let mut v = vec![0.0; lrows * jb];
    // Local rows at or past global row j0 + jb are plain copies; only the
    // rows of the diagonal block (the first ones here, if any) need the unit
    // diagonal and the zeros above it.
    let head = a.local_rows_before(j0 + jb) - lr0;
    for c in 0..jb {
        let src = &a.local()[lr0 + (lc0 + c) * ld..lr0 + (lc0 + c) * ld + lrows];
        let dst = &mut v[c * lrows..(c + 1) * lrows];
        dst[head..].copy_from_slice(&src[head..]);
        for r in 0..head {
            let (gi, gj) = (a.global_row(lr0 + r), j0 + c);
            dst[r] = match gi.cmp(&gj) {
                std::cmp::Ordering::Greater => src[r],
                std::cmp::Ordering::Equal => 1.0,
                std::cmp::Ordering::Less => 0.0,
            };
        }
    }
    (v, lrows)
}

/// T from V and tau (PDLARFT, forward, column-wise): S = VᵀV summed over the
/// process column, then T(0..c, c) = −tau_c · T(0..c, 0..c) · S(0..c, c).
fn form_t(grid: &Grid, v: &[f64], lrows: usize, jb: usize, tau: &[f64]) -> Result<Vec<f64>> {
    let mut s = vec![0.0; jb * jb];
    if lrows > 0 {
        blas::dgemm(Trans::Yes, Trans::No, jb, jb, lrows, 1.0, v, lrows, v, lrows, 0.0, &mut s, jb);
    }
    if grid.nprow() > 1 {
        grid.sum(Scope::Column, &mut s, None)?;
    }
    let mut t = vec![0.0; jb * jb];
    for c in 0..jb {
        t[c + c * jb] = tau[c];
        if tau[c] == 0.0 {
            continue;
        }
        // y = −tau_c · S(0..c, c), then y = T(0..c,0..c)·y (upper triangular).
        let y: Vec<f64> = (0..c).map(|r| -tau[c] * s[r + c * jb]).collect();
        for r in 0..c {
            let mut acc = 0.0;
            for k in r..c {
                acc += t[r + k * jb] * y[k];
            }
            t[r + c * jb] = acc;
        }
    }
    Ok(t)
}

/// The reflectors of an already factored panel (for applying Q later):
/// called by the process column that owns the panel.
pub fn stored_panel(grid: &Grid, a: &DistMatrix, tau: &[f64], j0: usize, jb: usize) -> Result<Panel> {
    let (v, lrows) = explicit_v(a, j0, jb);
    let t = form_t(grid, &v, lrows, jb, &tau[j0..j0 + jb])?;
    Ok(Panel { j0, jb, v, lrows, t })
}

/// Factors panel `j0..j0+jb` of `a` in place (R on and above the diagonal,
/// V below it) by `method` (resolved by the caller from the matrix's data
/// shape, [`super::PanelMethod::resolve`]) and returns its reflectors.
/// Called by every process of the owning process column; collective over
/// that column when P > 1.
pub fn factor_panel(grid: &Grid, a: &mut DistMatrix, j0: usize, jb: usize, method: PanelAlgorithm) -> Result<Panel> {
    let _p = profile::part(Part::PANEL, None);
    let lr0 = a.local_rows_before(j0);
    let lc0 = a.local_cols_before(j0);
    let lrows = a.local_rows() - lr0;
    let ld = a.lld();
    match method {
        PanelAlgorithm::Tsqr => return tsqr_panel(grid, a, j0, jb),
        PanelAlgorithm::CholQr2 => {
            return match cholqr2_panel(grid, a, j0, jb)? {
                Some(panel) => Ok(panel),
                None => tsqr_panel(grid, a, j0, jb),
            }
        }
        PanelAlgorithm::Householder => {}
    }
    if grid.nprow() == 1 {
        // The whole panel is local: LAPACK's recursive QR gives V and T.
        let mut t = vec![0.0; jb * jb];
        let base = lr0 + lc0 * ld;
        if lrows > 0 {
            blas::dgeqrt3(lrows, jb, &mut a.local_mut()[base..], ld, &mut t, jb);
        }
        let (v, lrows) = explicit_v(a, j0, jb);
        return Ok(Panel { j0, jb, v, lrows, t });
    }
    if grid.nprow() <= GATHERED_PANEL_MAX_P {
        return gathered_panel(grid, a, j0, jb);
    }
    let mut tau = vec![0.0; jb];
    for (c, t) in tau.iter_mut().enumerate() {
        *t = householder_column(grid, a, j0 + c, lc0 + c, lc0 + jb)?;
    }
    let (v, lrows) = explicit_v(a, j0, jb);
    let t = form_t(grid, &v, lrows, jb, &tau)?;
    Ok(Panel { j0, jb, v, lrows, t })
}

/// Up to this many process rows, a panel is factored redundantly: its rows
/// are gathered down the process column and every process runs LAPACK's
/// recursive QR on the whole panel (one collective and level-3 work instead
/// of two collectives and level-2 work per column). The result is the same
/// Householder factorization; each process keeps its own rows.
const GATHERED_PANEL_MAX_P: i32 = 8;

fn gathered_panel(grid: &Grid, a: &mut DistMatrix, j0: usize, jb: usize) -> Result<Panel> {
    let (lr0, lc0, ld) = (a.local_rows_before(j0), a.local_cols_before(j0), a.lld());
    let lrows = a.local_rows() - lr0;
    let (nprow, mb, rsrc) = (grid.nprow() as usize, a.mb(), a.desc().rsrc());
    let my_prow = a.coords().0;
    // Rows j0..m held by each process row (every process can count them, so
    // all send the same padded count without asking).
    let held = |pr: usize| {
        let before = numroc(j0, mb, pr, rsrc, nprow);
        (before, numroc(a.m(), mb, pr, rsrc, nprow) - before)
    };
    let most = (0..nprow).map(|pr| held(pr).1).max().unwrap_or(0);
    let mut mine = vec![0.0; most * jb];
    for c in 0..jb {
        let col = (lc0 + c) * ld + lr0;
        mine[c * most..c * most + lrows].copy_from_slice(&a.local()[col..col + lrows]);
    }
    let all = grid.allgather(Scope::Column, &mine)?;
    // Reassemble rows j0..m in global order, one block-row run at a time:
    // `runs` lists (process row, its local row, global row − j0, length).
    let rows = a.m() - j0;
    let mut runs = Vec::new();
    for pr in 0..nprow {
        let (before, count) = held(pr);
        let mut r = 0;
        while r < count {
            let gi = indxl2g(before + r, mb, pr, rsrc, nprow);
            let len = (mb - gi % mb).min(count - r);
            runs.push((pr, r, gi - j0, len));
            r += len;
        }
    }
    let mut panel = vec![0.0; rows * jb];
    for c in 0..jb {
        for &(pr, r, g, len) in &runs {
            let src = pr * most * jb + c * most + r;
            panel[c * rows + g..c * rows + g + len].copy_from_slice(&all[src..src + len]);
        }
    }
    let mut t = vec![0.0; jb * jb];
    blas::dgeqrt3(rows, jb, &mut panel, rows, &mut t, jb);
    // Keep my rows of R and V.
    for c in 0..jb {
        let col = (lc0 + c) * ld + lr0;
        for &(_, r, g, len) in runs.iter().filter(|run| run.0 == my_prow) {
            a.local_mut()[col + r..col + r + len].copy_from_slice(&panel[c * rows + g..c * rows + g + len]);
        }
    }
    let (v, lrows) = explicit_v(a, j0, jb);
    Ok(Panel { j0, jb, v, lrows, t })
}

/// One column of a distributed panel (PDGEQR2 step): generates the
/// reflector that zeroes A(j+1.., j) (LAPACK DLARFG semantics: beta =
/// −sign(alpha)·‖x‖, tau = (beta − alpha)/beta, v = x/(alpha − beta)), stores
/// beta and v, and applies it to the panel columns `lc+1..lc_end`.
fn householder_column(grid: &Grid, a: &mut DistMatrix, j: usize, lc: usize, lc_end: usize) -> Result<f64> {
    let ld = a.lld();
    let (myrow, _) = a.coords();
    let owner = a.row_owner(j);
    let lj = a.local_rows_before(j); // local row of global row j (if mine)
    let below0 = if myrow == owner { lj + 1 } else { lj };
    let lr_end = a.local_rows();
    // ‖x‖ of the part below the diagonal, robustly: gather each process's
    // scaled norm, and alpha from the owner.
    let col = &a.local()[lc * ld..lc * ld + lr_end];
    let local = [norm2(&col[below0..lr_end]), if myrow == owner { col[lj] } else { 0.0 }];
    let parts = grid.allgather(Scope::Column, &local)?;
    let xnorm = parts.chunks_exact(2).fold(0.0f64, |acc, p| acc.hypot(p[0]));
    let alpha: f64 = parts.chunks_exact(2).map(|p| p[1]).sum();
    if xnorm == 0.0 {
        return Ok(0.0); // H = I; nothing to apply
    }
    let beta = -alpha.signum() * alpha.hypot(xnorm);
    let tau = (beta - alpha) / beta;
    let scale = 1.0 / (alpha - beta);
    {
        let data = a.local_mut();
        for x in &mut data[lc * ld + below0..lc * ld + lr_end] {
            *x *= scale;
        }
        if myrow == owner {
            data[lc * ld + lj] = 1.0; // v_j = 1 while applying; beta stored after
        }
    }
    // Apply H = I − tau v vᵀ to the remaining panel columns.
    let ncols = lc_end - lc - 1;
    if ncols > 0 {
        // Rows j.. (v_j = 1 on the owner, below-diagonal rows elsewhere).
        let start = lj;
        let m_loc = lr_end - start;
        let mut w = vec![0.0; ncols];
        {
            let data = a.local();
            let v = &data[lc * ld + start..lc * ld + lr_end];
            if m_loc > 0 {
                blas::dgemv(Trans::Yes, m_loc, ncols, 1.0, &data[(lc + 1) * ld + start..], ld, v, 0.0, &mut w);
            }
        }
        grid.sum(Scope::Column, &mut w, None)?;
        if m_loc > 0 {
            let v: Vec<f64> = a.local()[lc * ld + start..lc * ld + lr_end].to_vec();
            blas::dger(m_loc, ncols, -tau, &v, &w, &mut a.local_mut()[(lc + 1) * ld + start..], ld);
        }
    }
    if myrow == owner {
        a.local_mut()[lc * ld + lj] = beta;
    }
    Ok(tau)
}

/// ‖x‖₂ without overflow (scaled sum of squares).
fn norm2(x: &[f64]) -> f64 {
    let scale = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if scale == 0.0 || !scale.is_finite() {
        return scale;
    }
    let ssq: f64 = x.iter().map(|v| (v / scale) * (v / scale)).sum();
    scale * ssq.sqrt()
}

/// V and T in one message.
impl RowPanel for Panel {
    fn row_message(&self) -> Vec<f64> {
        let mut b = Vec::with_capacity(self.v.len() + self.t.len());
        b.extend_from_slice(&self.v);
        b.extend_from_slice(&self.t);
        b
    }

    fn row_message_len(jb: usize, lrows: usize) -> usize {
        lrows * jb + jb * jb
    }

    fn from_row_message(j0: usize, jb: usize, lrows: usize, mut message: Vec<f64>) -> Panel {
        let t = message.split_off(lrows * jb);
        Panel { j0, jb, v: message, lrows, t }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// A `jb`-column panel from global column `j0` on one process of a
    /// `p`-row grid, `c`'s local columns random, V unit lower trapezoidal
    /// (zeros above the diagonal, as every panel's is) and T upper
    /// triangular, both random.
    fn case(m: usize, nb: usize, p: usize, myrow: usize, j0: usize, jb: usize) -> (Panel, DistMatrix) {
        let mut rng = rand::rngs::StdRng::seed_from_u64((m * 31 + p * 7 + myrow + j0) as u64);
        let mut c = DistMatrix::on_process((m, 5 * nb, nb, nb), (p, 1), (myrow, 0));
        c.local_mut().iter_mut().for_each(|x| *x = rng.random_range(-1.0..1.0));
        let lr0 = c.local_rows_before(j0);
        let lrows = c.local_rows() - lr0;
        let mut v = vec![0.0; lrows * jb];
        for col in 0..jb {
            for r in 0..lrows {
                let g = c.global_row(lr0 + r);
                v[col * lrows + r] = match g.cmp(&(j0 + col)) {
                    std::cmp::Ordering::Less => 0.0,
                    std::cmp::Ordering::Equal => 1.0,
                    std::cmp::Ordering::Greater => rng.random_range(-1.0..1.0),
                };
            }
        }
        let mut t = vec![0.0; jb * jb];
        for col in 0..jb {
            for r in 0..=col {
                t[col * jb + r] = rng.random_range(-1.0..1.0);
            }
        }
        (Panel { j0, jb, v, lrows, t }, c)
    }

    /// `C(j0.., cols) − V·op(T)·Vᵀ·C(j0.., cols)` element by element.
    fn reference(p: &Panel, trans: Trans, c: &DistMatrix, cols: Range<usize>) -> Vec<f64> {
        let (lr0, ld, jb) = (c.local_rows_before(p.j0), c.lld(), p.jb);
        let cv = |r: usize, j: usize| c.local()[lr0 + r + j * ld];
        let mut out = c.local().to_vec();
        for j in cols {
            let w: Vec<f64> = (0..jb).map(|k| (0..p.lrows).map(|r| p.v[k * p.lrows + r] * cv(r, j)).sum()).collect();
            let op_t = |i: usize, k: usize| if trans == Trans::Yes { p.t[i * jb + k] } else { p.t[k * jb + i] };
            let tw: Vec<f64> = (0..jb).map(|i| (0..jb).map(|k| op_t(i, k) * w[k]).sum()).collect();
            for r in 0..p.lrows {
                out[lr0 + r + j * ld] -= (0..jb).map(|k| p.v[k * p.lrows + r] * tw[k]).sum::<f64>();
            }
        }
        out
    }

    #[test]
    fn updates_that_skip_the_zeros_of_v_are_the_dense_update() {
        let nb = 4;
        // (rows, process rows, this process's row, first column, width):
        // a group of three panels split over one, two and three process
        // rows, a single panel, and a group past the matrix's last row.
        for (m, p, myrow, j0, jb) in [
            (40, 1, 0, 4, 12),
            (40, 2, 0, 4, 12),
            (40, 2, 1, 8, 12),
            (41, 3, 2, 4, 12),
            (40, 2, 1, 12, 4),
            (30, 2, 1, 24, 12),
        ] {
            for trans in [Trans::Yes, Trans::No] {
                let (panel, c0) = case(m, nb, p, myrow, j0, jb);
                let all = c0.local_cols();
                // Every column at once; few columns (T carried by Wᵀ) and
                // many (by V); and in pieces, as a postponed update is.
                for cols in [0..all, 1..3, 2..all] {
                    let want = reference(&panel, trans, &c0, cols.clone());
                    let mut got = c0.clone();
                    let (mut wt, mut vt) = (Vec::new(), Vec::new());
                    panel.local_wt_into(&got, cols.clone(), &mut wt);
                    let carrier = panel.carry_t(trans, cols.len(), &mut wt, &mut vt);
                    for piece in [cols.start..cols.start + 1, cols.start + 1..cols.end] {
                        panel.update_from_wt(&mut got, (carrier, &wt, &vt), cols.start, piece);
                    }
                    let err = got.local().iter().zip(&want).fold(0.0f64, |e, (x, y)| e.max((x - y).abs()));
                    assert!(err < 1e-12, "{m} rows on {p} process rows (row {myrow}), {jb} columns from {j0}: {err:e}");
                }
            }
        }
    }
}
