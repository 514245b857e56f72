//! `pdpotrf`: right-looking blocked Cholesky, lower, one block column per
//! step (see the module documentation of [`super`]).
//!
//! Step `k` (block column `k`, global columns `k0..k0+kb`, on process
//! column `k mod Q`; its diagonal block on process row `k mod P`):
//! 1. the diagonal block's owner factors it (`DPOTRF`); its INFO goes to
//!    every process (one small broadcast: all stop at the same step when
//!    a minor is not positive definite, nothing computed from a NaN);
//! 2. the diagonal block goes down its process column, which solves its
//!    rows below it, `L21 = A21·L11⁻ᵀ`;
//! 3. `L21` goes along the process rows: every process holds the rows of
//!    it that its own rows need;
//! 4. the rows of `L21` that its own columns need (the transposed panel)
//!    come from the process row that holds them: an all-gather down each
//!    process column;
//! 5. each process updates its blocks of the trailing lower triangle,
//!    `A22 −= L21·L21ᵀ`: per local block column, `DSYRK` on the diagonal
//!    block when it holds it and one `DGEMM` on the rows below.

use crate::args::pdpotrf::{A, DESCA, N, UPLO};
use crate::args::{arg_error, check_first_block_at_origin, check_grid, check_square_blocks};
use crate::blas::{self, Diag, Side, Trans, Uplo};
use crate::error::{agree_on_arguments, Error, Result};
use crate::matrix::{pack, DistMatrix};
use blacs_ft::index::numroc;
use blacs_ft::{Grid, Scope};
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
    agree_on_arguments(grid, check_args(grid, uplo, a))?;
    let outcome = match uplo {
        Uplo::Lower => factor_lower(grid, a),
        // (U = Lᵀ of Aᵀ's lower triangle: two transposes, O(N²) words
        // against the factorization's N³/3 flops.)
        Uplo::Upper => {
            let mut t = crate::qr::transpose(grid, a)?;
            let outcome = factor_lower(grid, &mut t);
            let u = crate::qr::transpose(grid, &t)?;
            copy_triangle(&u, a, Uplo::Upper);
            outcome
        }
    };
    a.set_lost(false);
    outcome
}

/// The local argument checks of [`pdpotrf`] (agreed by the caller).
fn check_args(grid: &Grid, uplo: Uplo, a: &DistMatrix) -> Result<()> {
    check_grid(grid, a, ROUTINE, DESCA, "A")?;
    if a.m() != a.n() {
        return Err(arg_error(ROUTINE, N, 0, "N", format!("A must be square, got {}x{}", a.m(), a.n())));
    }
    check_square_blocks(ROUTINE, DESCA, "A", a.desc())?;
    check_first_block_at_origin(ROUTINE, DESCA, "A", a.desc())?;
    let _ = UPLO;
    check_triangle_finite(a, uplo)
}

/// Local: a NaN or an infinity in the triangle `uplo` of `a` is an
/// argument error of A (the other triangle is not referenced).
fn check_triangle_finite(a: &DistMatrix, uplo: Uplo) -> Result<()> {
    let lld = a.lld();
    for lj in 0..a.local_cols() {
        let gj = a.global_col(lj);
        let rows = match uplo {
            Uplo::Lower => a.local_rows_before(gj)..a.local_rows(),
            Uplo::Upper => 0..a.local_rows_before(gj + 1),
        };
        let col = &a.local()[lj * lld..];
        if let Some(li) = rows.clone().find(|&li| !col[li].is_finite()) {
            let (gi, v) = (a.global_row(li), col[li]);
            return Err(arg_error(
                ROUTINE,
                A,
                0,
                "A",
                format!("holds {v} at ({}, {}) (1-based): the factorization needs finite values", gi + 1, gj + 1),
            ));
        }
    }
    Ok(())
}

/// Local: copies the triangle `uplo` (diagonal included) of `from` into
/// `to` (the same distribution).
fn copy_triangle(from: &DistMatrix, to: &mut DistMatrix, uplo: Uplo) {
    let (lld_f, lld_t) = (from.lld(), to.lld());
    for lj in 0..to.local_cols() {
        let gj = to.global_col(lj);
        let rows = match uplo {
            Uplo::Lower => to.local_rows_before(gj)..to.local_rows(),
            Uplo::Upper => 0..to.local_rows_before(gj + 1),
        };
        let src = &from.local()[lj * lld_f + rows.start..lj * lld_f + rows.end];
        to.local_mut()[lj * lld_t + rows.start..lj * lld_t + rows.end].copy_from_slice(src);
    }
}

/// The lower factorization, all steps.
fn factor_lower(grid: &Grid, a: &mut DistMatrix) -> Result<()> {
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
            j => Err(Error::MinorNotPositiveDefinite { routine: ROUTINE.into(), order: j as usize }),
        };
    }
    let nb = a.nb();
    let mut scratch = Scratch::default();
    for k in 0..n.div_ceil(nb) {
        step(grid, a, k, &mut scratch)?;
    }
    Ok(())
}

/// Buffers reused from step to step.
#[derive(Default)]
struct Scratch {
    diag: Vec<f64>,
    /// This process's rows of the column below the diagonal block.
    rows: Vec<f64>,
    /// The same, padded for the all-gather, and what it gathered.
    padded: Vec<f64>,
    /// The rows of the column that this process's columns need.
    cols: Vec<f64>,
}

/// Step `k` of the lower factorization (module documentation).
fn step(grid: &Grid, a: &mut DistMatrix, k: usize, s: &mut Scratch) -> Result<()> {
    let (n, nb, lld) = (a.n(), a.nb(), a.lld());
    let (p, q) = a.grid_shape();
    let (myrow, mycol) = a.coords();
    let (k0, next) = (k * nb, ((k + 1) * nb).min(n));
    let kb = next - k0;
    let (pk, qk) = (k % p, k % q);
    // 1. The diagonal block, and its INFO everywhere.
    let _panel = profile::part(Part::PANEL, Some(k as u64));
    let mut info = [0i64];
    let (r0, c0) = (a.local_rows_before(k0), a.local_cols_before(k0));
    s.diag.clear();
    if (myrow, mycol) == (pk, qk) {
        let j = blas::dpotrf(Uplo::Lower, kb, &mut a.local_mut()[r0 + c0 * lld..], lld);
        if j > 0 {
            info[0] = (k0 + j as usize) as i64;
        }
        pack(a.local(), lld, r0..r0 + kb, c0..c0 + kb, &mut s.diag);
    }
    grid.broadcast(Scope::All, &mut info, (pk * q + qk) as i32)?;
    if info[0] > 0 {
        return Err(Error::MinorNotPositiveDefinite { routine: ROUTINE.into(), order: info[0] as usize });
    }
    if next == n {
        return Ok(());
    }
    // 2. The column below it, on its process column.
    let (lr, below) = (a.local_rows(), a.local_rows_before(next));
    let mrows = lr - below;
    if mycol == qk {
        s.diag.resize(kb * kb, 0.0);
        if p > 1 {
            drop(_panel);
            let _b = profile::part(Part::BCAST, Some(k as u64));
            grid.broadcast(Scope::Column, &mut s.diag, pk as i32)?;
        }
        let _panel = profile::part(Part::PANEL, Some(k as u64));
        let col = &mut a.local_mut()[below + c0 * lld..];
        blas::dtrsm(Side::Right, Uplo::Lower, Trans::Yes, Diag::NonUnit, mrows, kb, 1.0, &s.diag, kb, col, lld);
        pack(a.local(), lld, below..lr, c0..c0 + kb, &mut s.rows);
    } else {
        s.rows.clear();
        s.rows.resize(mrows * kb, 0.0);
    }
    let _bcast = profile::part(Part::BCAST, Some(k as u64));
    // 3. Along the process rows.
    if q > 1 {
        grid.broadcast(Scope::Row, &mut s.rows, qk as i32)?;
    }
    // 4. The transposed column: process row r holds its rows `next..` of
    // it; every process gathers them all down its process column and
    // picks the rows of its own columns.
    let rows_on = |r: usize| numroc(n, nb, r, 0, p) - numroc(next, nb, r, 0, p);
    let tall = (0..p).map(rows_on).max().unwrap_or(0);
    let (lc, right) = (a.local_cols(), a.local_cols_before(next));
    let ncols = lc - right;
    let gathered: &[f64] = if p > 1 {
        s.padded.clear();
        s.padded.resize(tall * kb, 0.0);
        for t in 0..kb {
            s.padded[t * tall..t * tall + mrows].copy_from_slice(&s.rows[t * mrows..(t + 1) * mrows]);
        }
        s.padded = grid.allgather(Scope::Column, &s.padded)?;
        &s.padded
    } else {
        &s.rows
    };
    let chunk = if p > 1 { tall * kb } else { mrows * kb };
    let ld = if p > 1 { tall } else { mrows };
    s.cols.clear();
    s.cols.resize(ncols * kb, 0.0);
    for jj in 0..ncols {
        let g = a.global_col(right + jj);
        let r = (g / nb) % p;
        let at = numroc(g, nb, r, 0, p) - numroc(next, nb, r, 0, p);
        let from = &gathered[r * chunk..];
        for t in 0..kb {
            s.cols[jj + t * ncols] = from[at + t * ld];
        }
    }
    drop(_bcast);
    // 5. The trailing lower triangle, in chunks of whole local block
    // columns: one DGEMM for the rows below every diagonal block of the
    // chunk, and for each block the rows of the chunk's staircase above
    // them (DSYRK on a diagonal block it holds).
    let _update = profile::part(Part::UPDATE, Some(k as u64));
    let chunk_cols = UPDATE_WIDTH.max(nb);
    let mut lj = right;
    while lj < lc {
        let end = (lj + chunk_cols - chunk_cols % nb).min(lc).max(lj + 1);
        // (Whole blocks: `end` is a local block boundary.)
        let end = block_end_at_or_after(a, end.min(lc), nb);
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
                blas::dsyrk(Uplo::Lower, Trans::No, w, kb, -1.0, &s.rows[top - below..], mrows, 1.0, c, lld);
                from = top + w;
            }
            if bottom > from {
                let c = &mut local[from + b * lld..];
                let (l, cols) = (&s.rows[from - below..], &s.cols[b - right..]);
                blas::dgemm(Trans::No, Trans::Yes, bottom - from, w, kb, -1.0, l, mrows, cols, ncols, 1.0, c, lld);
            }
            b += w;
        }
        if lr > bottom {
            let c = &mut a.local_mut()[bottom + lj * lld..];
            let (l, cols) = (&s.rows[bottom - below..], &s.cols[lj - right..]);
            blas::dgemm(Trans::No, Trans::Yes, lr - bottom, end - lj, kb, -1.0, l, mrows, cols, ncols, 1.0, c, lld);
        }
        lj = end;
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
