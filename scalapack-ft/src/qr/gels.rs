//! `pdgels`-style least squares: minimise ‖A·X − B‖₂ for M ≥ N through QR.

use super::apply::pdormqr;
use super::factor::pdgeqrf;
use crate::args::{arg_error, pdgels};
use crate::blas::{self, Diag, Side, Trans, Uplo};
use crate::error::{agree_on_arguments, check_not_lost, Result};
use crate::matrix::DistMatrix;
use blacs_ft::{Grid, Scope};

/// Least-squares solution of an overdetermined full-rank system
/// (ScaLAPACK `PDGELS` with TRANS = 'N', M ≥ N).
///
/// * `a` (local input/output): M×N; on exit its QR factorization.
/// * `b` (local input/output): M×NRHS with A's row distribution; on exit
///   rows 0..N hold the solution X, rows N..M the residual components.
/// * returns `tau` (global).
pub fn pdgels(grid: &Grid, a: &mut DistMatrix, b: &mut DistMatrix) -> Result<Vec<f64>> {
    let check = if a.m() < a.n() {
        Err(arg_error(
            "pdgels",
            pdgels::M,
            0,
            "M",
            format!("must be ≥ N for the least-squares problem (M = {}, N = {})", a.m(), a.n()),
        ))
    } else {
        Ok(())
    };
    agree_on_arguments(grid, check)?;
    let mut tau = Vec::new();
    pdgeqrf(grid, a, &mut tau)?;
    let n = a.n();
    pdormqr(grid, Trans::Yes, a, &tau, n, b)?;
    upper_solve(grid, a, n, b)?;
    Ok(tau)
}

/// Solves R·X = B(0..n, :) in place, R the n×n upper triangle of `a`
/// (distributed back substitution by blocks, ScaLAPACK PDTRSM's job).
///
/// # Errors
/// [`crate::Error::InputLost`] on every process when `a` holds factors a
/// replacement's process lost (see [`DistMatrix::is_lost`]): nothing is
/// computed.
pub fn upper_solve(grid: &Grid, a: &DistMatrix, n: usize, b: &mut DistMatrix) -> Result<()> {
    agree_on_arguments(grid, check_not_lost(grid, "upper_solve", crate::args::upper_solve::A, "A", a))?;
    let nb = a.nb();
    let (myrow, mycol) = a.coords();
    let (lda, ldb) = (a.lld(), b.lld());
    let nrhs_loc = b.local_cols();
    let blocks: Vec<(usize, usize)> = (0..n).step_by(nb).map(|k0| (k0, nb.min(n - k0))).collect();
    for &(k0, kb) in blocks.iter().rev() {
        let (pr, pc) = (a.row_owner(k0), a.col_owner(k0));
        // Column block k of R, rows 0..k0+kb (this process's rows), shared
        // along the process row by its owner column.
        let lr_end = a.local_rows_before(k0 + kb);
        let mut rcol = vec![0.0; lr_end * kb];
        if mycol == pc {
            let lc0 = a.local_cols_before(k0);
            for c in 0..kb {
                rcol[c * lr_end..(c + 1) * lr_end]
                    .copy_from_slice(&a.local()[(lc0 + c) * lda..(lc0 + c) * lda + lr_end]);
            }
        }
        if grid.npcol() > 1 {
            grid.broadcast(Scope::Row, &mut rcol, pc as i32)?;
        }
        // X_k = R_kk⁻¹ B_k on the process row owning block row k, then
        // shared down the process column.
        let lk0 = b.local_rows_before(k0);
        let mut xk = vec![0.0; kb * nrhs_loc];
        if myrow == pr {
            let rkk_row0 = a.local_rows_before(k0);
            let rkk = &rcol[rkk_row0..];
            for c in 0..nrhs_loc {
                xk[c * kb..(c + 1) * kb].copy_from_slice(&b.local()[c * ldb + lk0..c * ldb + lk0 + kb]);
            }
            blas::dtrsm(Side::Left, Uplo::Upper, Trans::No, Diag::NonUnit, kb, nrhs_loc, 1.0, rkk, lr_end, &mut xk, kb);
            for c in 0..nrhs_loc {
                b.local_mut()[c * ldb + lk0..c * ldb + lk0 + kb].copy_from_slice(&xk[c * kb..(c + 1) * kb]);
            }
        }
        if grid.nprow() > 1 {
            grid.broadcast(Scope::Column, &mut xk, pr as i32)?;
        }
        // B(0..k0, :) −= R(0..k0, k) · X_k on the local rows above block k.
        let above = b.local_rows_before(k0);
        if above > 0 && nrhs_loc > 0 {
            blas::dgemm(
                Trans::No,
                Trans::No,
                above,
                nrhs_loc,
                kb,
                -1.0,
                &rcol,
                lr_end,
                &xk,
                kb,
                1.0,
                b.local_mut(),
                ldb,
            );
        }
    }
    Ok(())
}
