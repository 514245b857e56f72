//! `pdpotrf`: right-looking blocked Cholesky, lower, one block column per
//! step with a look-ahead of one (see the module documentation of
//! [`super`]).
//!
//! Block column `k` (global columns `k0..k0+kb`, on process column
//! `k mod Q`; its diagonal block on process row `k mod P`) is started by
//! [`start_column`]: its process column factors the diagonal block on its
//! owner (`DPOTRF`), sends it and its INFO down the column, and solves its
//! rows below it, `L21 = A21·L11⁻ᵀ`; then every process starts the
//! broadcast of `L21` and the INFO along its process row (non-blocking).
//! Step `k` then
//! 1. completes that broadcast: every process holds the rows of `L21`
//!    its own rows need, and the INFO (all stop at the same step when a
//!    minor is not positive definite, nothing computed from a NaN);
//! 2. gathers, down each process column, the rows of `L21` its own
//!    columns need (the transposed column, [`transposed`]);
//! 3. on the process column of block column `k + 1`: updates that block
//!    column first and starts it ([`start_column`]) — the look-ahead;
//! 4. updates the rest of its trailing lower triangle, `A22 −= L21·L21ᵀ`
//!    ([`update`]: chunks of whole block columns, `DSYRK` on the diagonal
//!    blocks, one `DGEMM` below them), progressing the broadcast of block
//!    column `k + 1` between chunks: the next column's factorization and
//!    sending overlap this update instead of idling the other columns.

use crate::args::pdpotrf::{A, DESCA, N};
use crate::args::{arg_error, check_first_block_at_origin, check_grid, check_square_blocks};
use crate::blas::{self, Diag, Side, Trans, Uplo};
use crate::error::{agree_on_arguments, Error, Result};
use crate::matrix::{pack, DistMatrix};
use blacs_ft::index::numroc;
use blacs_ft::{Grid, PendingBcast, Scope};
use recovery::profile::{self, Part};

const ROUTINE: &str = "pdpotrf";

/// Collective: the Cholesky factorization of the N×N symmetric positive
/// definite distributed matrix `a` (ScaLAPACK `PDPOTRF` with `IA = JA = 1`,
/// `N = N_A`).
///
/// * `grid`: the process grid `a` lives on;
/// * `uplo` (global): [`Uplo::Lower`] reads the lower triangle of `a` and
///   writes L (`A = L·Lᵀ`) there; [`Uplo::Upper`] reads the upper triangle
///   and writes U (`A = Uᵀ·U`) there. The other triangle is not
///   referenced, as in ScaLAPACK.
/// * `a` (local input/output): square blocks (`MB_A = NB_A`), first block
///   on process (0, 0), M_A = N_A.
///
/// # Errors
/// * [`Error::Argument`], the same on every process, before anything is
///   computed: A not square (position 2, N), `MB_A ≠ NB_A` or the first
///   block elsewhere than on process (0, 0), or `a` built for another grid
///   (position 6, its descriptor entry), a NaN or an infinity in the
///   referenced triangle (position 3).
/// * [`Error::MinorNotPositiveDefinite`] `{ order }`: the leading minor of
///   that order is not positive definite (ScaLAPACK INFO = order), found
///   at the step whose diagonal block holds it; the same on every process.
///   The columns before that block hold the factor's, the rest is the
///   partly updated input, as in ScaLAPACK.
/// * [`Error::Grid`] for MPI failures.
pub fn pdpotrf(grid: &Grid, uplo: Uplo, a: &mut DistMatrix) -> Result<()> {
    agree_on_arguments(grid, check_args(ROUTINE, FactorPositions { n: N, a: A, desca: DESCA }, grid, uplo, a))?;
    factor(grid, uplo, a, ROUTINE)
}

/// Collective: the factorization of `a`, whose arguments `routine`
/// ([`pdpotrf`], or `pdposv` before its solve) checked and agreed on.
pub(crate) fn factor(grid: &Grid, uplo: Uplo, a: &mut DistMatrix, routine: &str) -> Result<()> {
    let outcome = match uplo {
        Uplo::Lower => factor_lower(grid, a, routine),
        // (U = Lᵀ of Aᵀ's lower triangle: two transposes, O(N²) words
        // against the factorization's N³/3 flops.)
        Uplo::Upper => {
            let mut t = crate::qr::transpose(grid, a)?;
            let outcome = factor_lower(grid, &mut t, routine);
            let u = crate::qr::transpose(grid, &t)?;
            copy_triangle(&u, a, Uplo::Upper);
            outcome
        }
    };
    a.set_lost(false);
    outcome
}

/// Where the factored matrix's arguments sit in a routine's argument list
/// (PDPOTRF's; PDPOSV's are PDPOTRS's).
#[derive(Clone, Copy)]
pub(crate) struct FactorPositions {
    pub n: u32,
    pub a: u32,
    pub desca: u32,
}

/// The local argument checks of the factored matrix of `routine` (at
/// `at`), agreed by the caller: square, square blocks starting on process
/// (0, 0), this grid's, and finite in the triangle `uplo`.
pub(crate) fn check_args(routine: &str, at: FactorPositions, grid: &Grid, uplo: Uplo, a: &DistMatrix) -> Result<()> {
    check_grid(grid, a, routine, at.desca, "A")?;
    if a.m() != a.n() {
        return Err(arg_error(routine, at.n, 0, "N", format!("A must be square, got {}x{}", a.m(), a.n())));
    }
    check_square_blocks(routine, at.desca, "A", a.desc())?;
    check_first_block_at_origin(routine, at.desca, "A", a.desc())?;
    check_triangle_finite(routine, at.a, a, uplo)
}

/// Local: a NaN or an infinity in the triangle `uplo` of `a` is an
/// argument error of A (argument `position` of `routine`; the other
/// triangle is not referenced).
fn check_triangle_finite(routine: &str, position: u32, a: &DistMatrix, uplo: Uplo) -> Result<()> {
    let lld = a.lld();
    for lj in 0..a.local_cols() {
        let (gj, rows) = (a.global_col(lj), triangle_rows(a, uplo, lj));
        let col = &a.local()[lj * lld..];
        if let Some(li) = rows.clone().find(|&li| !col[li].is_finite()) {
            let (gi, v) = (a.global_row(li), col[li]);
            return Err(arg_error(
                routine,
                position,
                0,
                "A",
                format!("holds {v} at ({}, {}) (1-based): the factorization needs finite values", gi + 1, gj + 1),
            ));
        }
    }
    Ok(())
}

/// The local rows of local column `lj` of `a` that lie in its triangle
/// `uplo`, the diagonal included (a range: local rows follow the global
/// order).
pub(crate) fn triangle_rows(a: &DistMatrix, uplo: Uplo, lj: usize) -> std::ops::Range<usize> {
    let gj = a.global_col(lj);
    match uplo {
        Uplo::Lower => a.local_rows_before(gj)..a.local_rows(),
        Uplo::Upper => 0..a.local_rows_before(gj + 1),
    }
}

/// Local: copies the triangle `uplo` (diagonal included) of `from` into
/// `to` (the same distribution).
fn copy_triangle(from: &DistMatrix, to: &mut DistMatrix, uplo: Uplo) {
    let (lld_f, lld_t) = (from.lld(), to.lld());
    for lj in 0..to.local_cols() {
        let rows = triangle_rows(to, uplo, lj);
        let src = &from.local()[lj * lld_f + rows.start..lj * lld_f + rows.end];
        to.local_mut()[lj * lld_t + rows.start..lj * lld_t + rows.end].copy_from_slice(src);
    }
}

/// The lower factorization, all steps.
fn factor_lower(grid: &Grid, a: &mut DistMatrix, routine: &str) -> Result<()> {
    let n = a.n();
    if n == 0 {
        return Ok(());
    }
    if grid.size() == 1 {
        // (One process: LAPACK's own blocked DPOTRF on the local matrix.)
        let lld = a.lld();
        let info = blas::dpotrf(Uplo::Lower, n, a.local_mut(), lld);
        return match info {
            0 => Ok(()),
            j => Err(Error::MinorNotPositiveDefinite { routine: routine.into(), order: j as usize }),
        };
    }
    let nb = a.nb();
    let blocks = n.div_ceil(nb);
    let mut next = start_column(grid, a, 0)?;
    for k in 0..blocks {
        let column = next.finish(grid)?;
        if column.info > 0 {
            return Err(Error::MinorNotPositiveDefinite { routine: routine.into(), order: column.info as usize });
        }
        if k + 1 == blocks {
            break;
        }
        let _bcast = profile::part(Part::BCAST, Some(k as u64));
        let cols = transposed(grid, a, &column)?;
        drop(_bcast);
        // The look-ahead: the process column of block column k + 1 updates
        // it first and starts its column's factorization and broadcast;
        // every process then updates the rest while the broadcast goes on.
        let right = a.local_cols_before(column.next);
        let ncols = a.local_cols() - right;
        let mut ahead = right;
        if a.col_owner(column.next) == a.coords().1 {
            ahead = a.local_cols_before(((k + 2) * nb).min(n));
            update(a, &column, (&cols, ncols), right..ahead, &mut || Ok(()), k)?;
        }
        let mut started = start_column(grid, a, k + 1)?;
        update(a, &column, (&cols, ncols), ahead..a.local_cols(), &mut || started.progress(grid), k)?;
        next = started;
    }
    Ok(())
}

/// The column below diagonal block `k`, factored, as every process holds
/// it after the broadcast along its process row: this process's rows
/// `next..` of it (`mrows`×`kb`, column-major: in `rows` from element
/// `first` on, leading dimension `ld` ≥ `mrows`), and the diagonal
/// block's INFO (the order of the first leading minor that is not
/// positive definite; 0: none).
pub(crate) struct Column {
    pub k: usize,
    pub kb: usize,
    pub next: usize,
    pub below: usize,
    pub mrows: usize,
    pub rows: Vec<f64>,
    pub first: usize,
    pub ld: usize,
    pub info: i64,
}

impl Column {
    /// The rows `next..` of the column, and their leading dimension.
    fn below_rows(&self) -> (&[f64], usize) {
        (&self.rows[self.first..], self.ld)
    }
}

/// A block column's factorization, started: its broadcast along the
/// process rows in flight (`None` on one process column).
struct Started {
    column: Column,
    info: Option<PendingBcast<i64>>,
    rows: Option<PendingBcast<f64>>,
}

impl Started {
    /// Progresses the broadcasts (between chunks of the update).
    fn progress(&mut self, grid: &Grid) -> Result<()> {
        if let Some(p) = self.info.as_mut() {
            grid.test_broadcast(p)?;
        }
        if let Some(p) = self.rows.as_mut() {
            grid.test_broadcast(p)?;
        }
        Ok(())
    }

    /// Completes the broadcasts: the column as every process holds it.
    fn finish(self, grid: &Grid) -> Result<Column> {
        let _bcast = profile::part(Part::BCAST, Some(self.column.k as u64));
        let mut column = self.column;
        if let Some(p) = self.info {
            column.info = grid.wait_broadcast(p)?.first().copied().unwrap_or(0);
        }
        if let Some(p) = self.rows {
            column.rows = grid.wait_broadcast(p)?;
        }
        Ok(column)
    }
}

/// Collective: starts block column `k`'s step. Its process column factors
/// the diagonal block (on its owner: `DPOTRF`), sends it and its INFO down
/// the column, solves its rows below it (`DTRSM`); then every process
/// starts the broadcast of the column and its INFO along its process row
/// (the process column of block `k` the root).
fn start_column(grid: &Grid, a: &mut DistMatrix, k: usize) -> Result<Started> {
    let (n, nb, lld) = (a.n(), a.nb(), a.lld());
    let q = a.grid_shape().1;
    let mycol = a.coords().1;
    let (k0, next) = (k * nb, ((k + 1) * nb).min(n));
    let kb = next - k0;
    let qk = k % q;
    let (below, lr) = (a.local_rows_before(next), a.local_rows());
    let mrows = lr - below;
    let mut info = 0i64;
    let mut rows = Vec::new();
    if mycol == qk {
        info = factor_block_column(grid, a, (k0, kb))?;
        if info == 0 && next < n {
            let c0 = a.local_cols_before(k0);
            pack(a.local(), lld, below..lr, c0..c0 + kb, &mut rows);
        }
    }
    rows.resize(mrows * kb, 0.0);
    let column = Column { k, kb, next, below, mrows, rows: Vec::new(), first: 0, ld: mrows, info };
    if q == 1 {
        return Ok(Started { column: Column { rows, ..column }, info: None, rows: None });
    }
    let _b = profile::part(Part::BCAST, Some(k as u64));
    let pending_info = grid.ibroadcast(Scope::Row, vec![info], qk as i32)?;
    let pending_rows = grid.ibroadcast(Scope::Row, rows, qk as i32)?;
    Ok(Started { column, info: Some(pending_info), rows: Some(pending_rows) })
}

/// Collective down the process column of block column `k0..k0+kb` (its
/// processes only): the column factored in place — the diagonal block by
/// `DPOTRF` on its owner, sent down the column with its INFO, the rows
/// below it solved against it (`DTRSM`) unless the INFO (returned, the
/// same on the column's processes: the order of the first leading minor
/// that is not positive definite, 0 if none) says it failed.
pub(crate) fn factor_block_column(grid: &Grid, a: &mut DistMatrix, (k0, kb): (usize, usize)) -> Result<i64> {
    let (nb, lld, lr) = (a.nb(), a.lld(), a.local_rows());
    let p = a.grid_shape().0;
    let myrow = a.coords().0;
    let (k, pk) = (k0 / nb, (k0 / nb) % p);
    let (r0, below, c0) = (a.local_rows_before(k0), a.local_rows_before(k0 + kb), a.local_cols_before(k0));
    let _panel = profile::part(Part::PANEL, Some(k as u64));
    let mut info = [0i64];
    let mut diag = Vec::new();
    if myrow == pk {
        let j = blas::dpotrf(Uplo::Lower, kb, &mut a.local_mut()[r0 + c0 * lld..], lld);
        if j > 0 {
            info[0] = (k0 + j as usize) as i64;
        }
        pack(a.local(), lld, r0..r0 + kb, c0..c0 + kb, &mut diag);
    }
    if p > 1 {
        drop(_panel);
        let _b = profile::part(Part::BCAST, Some(k as u64));
        grid.broadcast(Scope::Column, &mut info, pk as i32)?;
        diag.resize(kb * kb, 0.0);
        if info[0] == 0 {
            grid.broadcast(Scope::Column, &mut diag, pk as i32)?;
        }
    }
    let _panel = profile::part(Part::PANEL, Some(k as u64));
    if info[0] == 0 && below < lr {
        let col = &mut a.local_mut()[below + c0 * lld..];
        blas::dtrsm(Side::Right, Uplo::Lower, Trans::Yes, Diag::NonUnit, lr - below, kb, 1.0, &diag, kb, col, lld);
    }
    Ok(info[0])
}

/// Collective down each process column: the rows of `column` that this
/// process's columns `next..` need (the transposed column), `ncols`×`kb`
/// column-major. Process row r holds its rows `next..` of it; every
/// process gathers them all and picks those of its own columns.
fn transposed(grid: &Grid, a: &DistMatrix, column: &Column) -> Result<Vec<f64>> {
    let (n, nb) = (a.n(), a.nb());
    let p = a.grid_shape().0;
    let (next, kb, mrows) = (column.next, column.kb, column.mrows);
    let rows_on = |r: usize| numroc(n, nb, r, 0, p) - numroc(next, nb, r, 0, p);
    let tall = (0..p).map(rows_on).max().unwrap_or(0);
    let (lc, right) = (a.local_cols(), a.local_cols_before(next));
    let ncols = lc - right;
    let gathered;
    let (from, ld): (&[f64], usize) = if p > 1 {
        let mut padded = vec![0.0; tall * kb];
        for t in 0..kb {
            let (rows, ld) = column.below_rows();
            padded[t * tall..t * tall + mrows].copy_from_slice(&rows[t * ld..t * ld + mrows]);
        }
        gathered = grid.allgather(Scope::Column, &padded)?;
        (&gathered, tall)
    } else {
        column.below_rows()
    };
    let chunk = ld * kb;
    // (Where each local column's row of L is in `from`.)
    let at = (0..ncols).map(|jj| {
        let g = a.global_col(right + jj);
        let r = (g / nb) % p;
        r * chunk + numroc(g, nb, r, 0, p) - numroc(next, nb, r, 0, p)
    });
    Ok(picked(from, (ld, kb), at))
}

/// The rows `at` (in order) of the column `whole` (`ld`×`kb`), as a
/// `at.len()`×`kb` array.
pub(crate) fn picked(whole: &[f64], (ld, kb): (usize, usize), at: impl ExactSizeIterator<Item = usize>) -> Vec<f64> {
    let at: Vec<usize> = at.collect();
    // (Column by column: both arrays are read and written in order; the
    // output is written once, never zeroed first.)
    let mut out = Vec::with_capacity(at.len() * kb);
    for t in 0..kb {
        let column = &whole[t * ld..];
        out.extend(at.iter().map(|&i| column[i]));
    }
    out
}

/// Local, but `between` (a progress of the broadcast in flight) runs
/// between its chunks: the trailing lower triangle's local columns `range`
/// (whole local block columns at or after `column.next`) updated with
/// `column`, `A22 −= L21·L21ᵀ`, in chunks of whole local block columns:
/// one DGEMM for the rows below every diagonal block of the chunk, and for
/// each block the rows of the chunk's staircase above them (DSYRK on a
/// diagonal block it holds). `cols`: the transposed column
/// ([`transposed`]), of the local columns from `column.next` on
/// (`ncols`×`kb`).
pub(crate) fn update(
    a: &mut DistMatrix,
    column: &Column,
    (cols, ncols): (&[f64], usize),
    range: std::ops::Range<usize>,
    between: &mut dyn FnMut() -> Result<()>,
    k: usize,
) -> Result<()> {
    let _update = profile::part(Part::UPDATE, Some(k as u64));
    let (nb, lld, lr) = (a.nb(), a.lld(), a.local_rows());
    let p = a.grid_shape().0;
    let myrow = a.coords().0;
    let (kb, below) = (column.kb, column.below);
    let (rows, ldr) = column.below_rows();
    let right = a.local_cols_before(column.next);
    let chunk_cols = UPDATE_WIDTH.max(nb);
    let mut lj = range.start;
    while lj < range.end {
        let end = block_end_at_or_after(a, (lj + chunk_cols - chunk_cols % nb).min(range.end).max(lj + 1), nb);
        let end = end.min(range.end);
        let bottom = a.local_rows_before(a.global_col(end - 1) + 1);
        let mut b = lj;
        while b < end {
            let g = a.global_col(b);
            let w = (nb - g % nb).min(end - b);
            let top = a.local_rows_before(g);
            let mut from = top;
            let local = a.local_mut();
            if (g / nb) % p == myrow {
                // The diagonal block: its lower triangle only.
                let c = &mut local[top + b * lld..];
                blas::dsyrk(Uplo::Lower, Trans::No, w, kb, -1.0, &rows[top - below..], ldr, 1.0, c, lld);
                from = top + w;
            }
            if bottom > from {
                let c = &mut local[from + b * lld..];
                let (l, cs) = (&rows[from - below..], &cols[b - right..]);
                blas::dgemm(Trans::No, Trans::Yes, bottom - from, w, kb, -1.0, l, ldr, cs, ncols, 1.0, c, lld);
            }
            b += w;
        }
        if lr > bottom {
            let c = &mut a.local_mut()[bottom + lj * lld..];
            let (l, cs) = (&rows[bottom - below..], &cols[lj - right..]);
            blas::dgemm(Trans::No, Trans::Yes, lr - bottom, end - lj, kb, -1.0, l, ldr, cs, ncols, 1.0, c, lld);
        }
        lj = end;
        between()?;
    }
    Ok(())
}

/// Columns of the trailing update's DGEMMs (whole blocks, at least one).
const UPDATE_WIDTH: usize = 256;

/// The first local block boundary at or after local column `lj` (or the
/// end of the local columns).
fn block_end_at_or_after(a: &DistMatrix, lj: usize, nb: usize) -> usize {
    if lj >= a.local_cols() {
        return a.local_cols();
    }
    let g = a.global_col(lj);
    if g.is_multiple_of(nb) {
        lj
    } else {
        (lj + nb - g % nb).min(a.local_cols())
    }
}
