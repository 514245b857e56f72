//! `pdgetrf`: right-looking blocked LU with partial pivoting and a
//! look-ahead of one panel.
//!
//! Three drivers, by grid shape:
//! * one process: LAPACK `DGETRF` on the local matrix;
//! * one process row (1×Q): [`super::row`], with panels wider than `NB`;
//! * otherwise the 2D driver here, panels of `NB` columns.
//!
//! 2D step `k` (panel `k` = columns `j0..j0+jb`, already factored and known
//! to every process):
//! 1. apply the panel's interchanges to the trailing columns;
//! 2. U12 = L11⁻¹·A12 on the process row holding the diagonal block, then
//!    broadcast down each process column;
//! 3. A22 -= L21·U12 (local DGEMM).
//!
//! The process column that owns panel `k+1` does steps 1–3 for that
//! panel's columns first, factors panel `k+1` (collectively over its
//! process column, see [`super::panel`]), finishes steps 1–2 for its other
//! columns and sends the panel along its process row (a ring, point to
//! point) before its own big GEMM. The other process columns run their
//! GEMM in chunks and pick the new panel up in between, so the panel
//! factorization overlaps with their trailing update instead of idling
//! them. The interchanges of later panels are applied to the columns of
//! earlier panels (the stored L) once, at the end: nothing reads those
//! columns in between, and one pass per column is far cheaper than one
//! per step.

use super::panel::{factor_panel, Panel, StepLoop};
use super::ring::{self, Incoming, Poll};
use super::swap::interchange;
use crate::args::pdgetrf::{A, DESCA};
use crate::args::{check_grid, check_square_blocks};
use crate::blas;
use crate::error::{agree_on_arguments, check_finite, Error, Result};
use crate::matrix::{pack, DistMatrix};
use blacs_ft::{Grid, Scope};
use recovery::profile::{self, Part};
use std::ops::Range;
use std::os::raw::c_int;

/// Collective: LU factorization with partial pivoting, `P·A = L·U`, of the
/// whole M×N distributed matrix `a` (ScaLAPACK `PDGETRF` with
/// `IA = JA = 1`).
///
/// * `grid`: the process grid `a` lives on;
/// * `a` (local input/output): on entry the matrix; on exit L (unit lower
///   trapezoidal, M×min(M,N), below the diagonal; its unit diagonal is not
///   stored) and U (upper trapezoidal, min(M,N)×N, on and above the
///   diagonal), exactly where ScaLAPACK puts them. `MB_A` must equal
///   `NB_A`.
/// * `ipiv` (global output): resized to `min(M, N)`; the same on every
///   process: `ipiv[i]` is the 0-based global row interchanged with row
///   `i` at step `i` (see the [module documentation](super)).
///
/// # Errors
/// * [`Error::Argument`], the same on every process (no process
///   communicates before the check is agreed): `MB_A ≠ NB_A` (position 6,
///   entry `NB_`, INFO = -606, as ScaLAPACK), `a` built for another grid
///   (position 6, entry `CTXT_`), a NaN or an infinity in `a` (position 3,
///   INFO = -3).
/// * [`Error::Singular`] `{ index }`: `U(index, index)` is exactly zero
///   (the first such pivot, 0-based; ScaLAPACK INFO = index + 1). The
///   factorization has been completed, and `a`/`ipiv` hold it, as in
///   ScaLAPACK. Every process returns the same index.
/// * [`Error::Grid`] for MPI failures.
///
/// Differs from ScaLAPACK in one corner: ScaLAPACK returns at once when
/// `M_A = 1` without looking at the element; here a 1×N matrix whose
/// `A(0,0)` is zero is reported as singular, as LAPACK does.
pub fn pdgetrf(grid: &Grid, a: &mut DistMatrix, ipiv: &mut Vec<i64>) -> Result<()> {
    pdgetrf_with(grid, a, ipiv, &LuOptions::default())
}

/// Tuning knobs of [`pdgetrf_with`]; they change the speed, never the
/// contract (same layout, pivots of partial pivoting).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LuOptions {
    /// (global) On grids with one process row: the target width of the
    /// algorithmic panel, rounded down to a multiple of `NB` and at least
    /// `NB`. The trailing DGEMM runs with this inner dimension instead of
    /// `NB` (faster for small `NB`); the data stays in `NB` blocks. Other
    /// grids use panels of `NB` columns. Default 128.
    pub row_panel_width: usize,
}

impl Default for LuOptions {
    fn default() -> Self {
        LuOptions { row_panel_width: 128 }
    }
}

/// [`pdgetrf`] with explicit [`LuOptions`] (`opts` (global): the same on
/// every process).
pub fn pdgetrf_with(grid: &Grid, a: &mut DistMatrix, ipiv: &mut Vec<i64>, opts: &LuOptions) -> Result<()> {
    agree_on_arguments(grid, check_args(grid, a))?;
    let mn = a.m().min(a.n());
    ipiv.clear();
    ipiv.resize(mn, 0);
    if mn == 0 {
        return Ok(());
    }
    let zero = if grid.size() == 1 {
        local_getrf(a, ipiv)
    } else if grid.nprow() == 1 {
        super::row::factor(grid, a, ipiv, opts.row_panel_width)?
    } else {
        Driver::new(grid, a).run(ipiv)?
    };
    a.set_lost(false);
    match zero {
        Some(index) => Err(Error::Singular { routine: "pdgetrf".into(), index }),
        None => Ok(()),
    }
}

/// The local argument checks of [`pdgetrf`] (agreed by the caller).
fn check_args(grid: &Grid, a: &DistMatrix) -> Result<()> {
    check_grid(grid, a, "pdgetrf", DESCA, "A")?;
    check_square_blocks("pdgetrf", DESCA, "A", a.desc())?;
    check_finite("pdgetrf", A, a)
}

/// One process: LAPACK DGETRF on the whole local matrix. Returns the first
/// zero pivot.
fn local_getrf(a: &mut DistMatrix, ipiv: &mut [i64]) -> Option<usize> {
    let (m, n, lld) = (a.m(), a.n(), a.lld());
    let mut ip: Vec<c_int> = vec![0; ipiv.len()];
    let info = blas::dgetrf(m, n, a.local_mut(), lld, &mut ip);
    for (d, &p) in ipiv.iter_mut().zip(&ip) {
        *d = p as i64 - 1;
    }
    (info > 0).then(|| info as usize - 1)
}

/// The distributed factorization's state.
struct Driver<'g, 'm> {
    grid: &'g Grid,
    a: &'m mut DistMatrix,
    nb: usize,
    mn: usize,
    nsteps: usize,
    myrow: usize,
    mycol: usize,
    /// U12 block row of the current step (reused).
    ubuf: Vec<f64>,
}

impl<'g, 'm> Driver<'g, 'm> {
    fn new(grid: &'g Grid, a: &'m mut DistMatrix) -> Self {
        let nb = a.nb();
        let mn = a.m().min(a.n());
        let (myrow, mycol) = a.coords();
        Driver { grid, a, nb, mn, nsteps: mn.div_ceil(nb), myrow, mycol, ubuf: Vec::new() }
    }

    /// First column and width of panel `k`.
    fn block(&self, k: usize) -> (usize, usize) {
        let j0 = k * self.nb;
        (j0, self.nb.min(self.mn - j0))
    }

    /// Panel 0: factored by its process column, passed along the rows.
    fn first_panel(&mut self) -> Result<Panel> {
        let (j0, jb) = self.block(0);
        let owner = self.a.col_owner(j0);
        if self.mycol == owner {
            let p = factor_panel(self.grid, self.a, j0, jb)?;
            ring::send_on(self.grid, &p, owner)?;
            Ok(p)
        } else {
            self.incoming(j0, jb, owner).finish(self.grid)
        }
    }

    /// Step `k` with panel `cur`; returns panel `k+1` if there is one.
    fn step(&mut self, k: usize, cur: &Panel) -> Result<Option<Panel>> {
        profile::at_step(k as u64);
        let (j0, jb) = (cur.j0, cur.jb);
        let ltc = self.a.local_cols_before(j0 + jb);
        let lc = self.a.local_cols();
        let swaps = cur.swaps();
        if k + 1 >= self.nsteps {
            interchange(self.grid, self.a, &swaps, ltc..lc)?;
            self.block_row(cur, ltc..lc)?;
            self.gemm(cur, ltc..lc, None)?;
            return Ok(None);
        }
        let (j1, jb1) = self.block(k + 1);
        let owner = self.a.col_owner(j1);
        if owner == self.mycol {
            // Look-ahead: the next panel's columns first, factor it; send
            // it once the rest of the block row is ready too, when the other
            // process columns are about to start their GEMMs.
            let la = ltc..ltc + jb1;
            interchange(self.grid, self.a, &swaps, la.clone())?;
            self.block_row(cur, la.clone())?;
            self.gemm(cur, la.clone(), None)?;
            let next = factor_panel(self.grid, self.a, j1, jb1)?;
            interchange(self.grid, self.a, &swaps, la.end..lc)?;
            self.block_row(cur, la.end..lc)?;
            ring::send_on(self.grid, &next, owner)?;
            self.gemm(cur, la.end..lc, None)?;
            Ok(Some(next))
        } else {
            let mut inc = self.incoming(j1, jb1, owner);
            interchange(self.grid, self.a, &swaps, ltc..lc)?;
            self.block_row(cur, ltc..lc)?;
            inc.poll(self.grid)?;
            self.gemm(cur, ltc..lc, Some(&mut inc))?;
            inc.finish(self.grid).map(Some)
        }
    }

    /// The interchanges of later panels, applied to the columns of each
    /// earlier panel (L) at the end: one pass per column (cache-resident)
    /// instead of one per step. Nothing reads those columns in between.
    fn swap_left_columns(&mut self, ipiv: &[i64]) -> Result<()> {
        for k in 0..self.nsteps.saturating_sub(1) {
            let (j0, jb) = self.block(k);
            if self.a.col_owner(j0) != self.mycol {
                continue; // the same on the whole process column
            }
            let lcp = self.a.local_cols_before(j0);
            let later: Vec<(usize, usize)> = (j0 + jb..self.mn).map(|i| (i, ipiv[i] as usize)).collect();
            interchange(self.grid, self.a, &later, lcp..lcp + jb)?;
        }
        Ok(())
    }

    /// Panel (`j0`, `jb`) of process column `owner`, to be received here.
    fn incoming(&self, j0: usize, jb: usize, owner: usize) -> Incoming {
        let lw = self.a.local_rows() - self.a.local_rows_before(j0);
        Incoming::new(self.grid, j0, jb, lw, self.a.m(), owner)
    }

    /// Step 2 for the local columns `cols` (the same range on every
    /// process of this process column): TRSM for the block row of U on the
    /// diagonal process row, then broadcast down the column into `ubuf`.
    fn block_row(&mut self, cur: &Panel, cols: Range<usize>) -> Result<()> {
        let _p = profile::part(Part::UPDATE, None);
        let (j0, jb) = (cur.j0, cur.jb);
        let a = &mut *self.a;
        let pr = a.row_owner(j0);
        let (lr0, lld) = (a.local_rows_before(j0), a.lld());
        let u = &mut self.ubuf;
        if cols.is_empty() {
            u.clear();
            return Ok(());
        }
        if self.myrow == pr {
            let data = a.local_mut();
            let b = &mut data[lr0 + cols.start * lld..];
            cur.solve_block_row(cols.len(), b, lld);
            pack(data, lld, lr0..lr0 + jb, cols, u);
        } else {
            u.clear();
            u.resize(jb * cols.len(), 0.0);
        }
        if a.grid_shape().0 > 1 {
            let _b = profile::part(Part::BCAST, None);
            self.grid.broadcast(Scope::Column, u, pr as i32)?;
        }
        Ok(())
    }

    /// Step 3 for the local columns `cols`, with the block row of U from
    /// [`Driver::block_row`] (see [`ring::update`]).
    fn gemm(&mut self, cur: &Panel, cols: Range<usize>, inc: Option<&mut dyn Poll>) -> Result<()> {
        let _p = profile::part(Part::UPDATE, None);
        let a = &mut *self.a;
        let lr0 = a.local_rows_before(cur.j0);
        let lrb = a.local_rows_before(cur.j0 + cur.jb);
        let (lr, lld) = (a.local_rows(), a.lld());
        let l21 = &cur.l()[lrb - lr0..];
        ring::update(self.grid, a.local_mut(), lld, lrb, lr - lrb, cols, l21, cur.lw, &self.ubuf, cur.jb, inc)
    }
}

impl StepLoop for Driver<'_, '_> {
    fn steps(&self) -> usize {
        self.nsteps
    }
    fn first(&mut self) -> Result<Panel> {
        self.first_panel()
    }
    fn advance(&mut self, k: usize, cur: &Panel) -> Result<Option<Panel>> {
        self.step(k, cur)
    }
    fn finish(&mut self, ipiv: &[i64]) -> Result<()> {
        self.swap_left_columns(ipiv)
    }
}
