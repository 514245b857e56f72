//! Residual checks of the LU routines, as ScaLAPACK's LU tester
//! (`pdludriver`: `PDGETRRV` + `PDLAFCHK`, and the solve check) computes
//! them. A result is accepted when the residual is below 16.

use super::swap::{pdlaswp, Direction};
use crate::args::lu_residual::{A, IPIV, LU};
use crate::args::{arg_error, check_grid, descriptor_error, entry};
use crate::blas::Trans;
use crate::descriptor::Descriptor;
use crate::error::{agree_on_arguments, Result};
use crate::matrix::DistMatrix;
use crate::norms::{one_norm, EPS};
use crate::pblas::pdgemm;
use blacs_ft::Grid;

/// Collective: the factorization residual
/// `‖P·A − L·U‖₁ / (‖A‖₁ · max(M, N) · eps)` (ScaLAPACK's `PDLAFCHK`
/// scaling; for a square matrix `max(M, N) = N`), with `eps` =
/// [`EPS`] (`PDLAMCH('Epsilon')`, 2⁻⁵³).
///
/// * `grid`: the process grid;
/// * `a` (local input): the original M×N matrix;
/// * `lu` (local input): its factorization by [`super::pdgetrf`] (same
///   shape and distribution as `a`, `MB = NB`);
/// * `ipiv` (global input): the pivots from `pdgetrf` (length `min(M, N)`).
///
/// L and U are extracted into distributed copies and multiplied with
/// [`pdgemm`]; the pivots are applied to a copy of `a`. Returns 0 for an
/// empty matrix; with `‖A‖₁ = 0`, the residual norm divided by
/// `max(M, N) · eps`. The same value on every process.
///
/// # Errors
/// Agreed [`crate::Error::Argument`]s (routine `lu_residual`): `lu` not shaped or
/// distributed like `a` (position 3), `MB ≠ NB` (3), bad `ipiv` (4), a
/// matrix from another grid (2, 3).
pub fn lu_residual(grid: &Grid, a: &DistMatrix, lu: &DistMatrix, ipiv: &[i64]) -> Result<f64> {
    const ROUTINE: &str = "lu_residual";
    let local = (|| {
        check_grid(grid, a, ROUTINE, A, "A")?;
        check_grid(grid, lu, ROUTINE, LU, "LU")?;
        if (a.m(), a.n(), a.mb(), a.nb()) != (lu.m(), lu.n(), lu.mb(), lu.nb())
            || (a.desc().rsrc(), a.desc().csrc()) != (lu.desc().rsrc(), lu.desc().csrc())
        {
            return Err(arg_error(ROUTINE, LU, entry::M, "LU", "must have the shape and distribution of A"));
        }
        if lu.mb() != lu.nb() {
            return Err(arg_error(ROUTINE, LU, entry::NB, "NB_LU", "MB must equal NB"));
        }
        let mn = a.m().min(a.n());
        if ipiv.len() != mn {
            return Err(arg_error(ROUTINE, IPIV, 0, "IPIV", format!("has {} entries, min(M, N) = {mn}", ipiv.len())));
        }
        Ok(())
    })();
    agree_on_arguments(grid, local)?;
    let (m, n) = (a.m(), a.n());
    if m == 0 || n == 0 {
        return Ok(0.0);
    }
    let mn = m.min(n);
    // L: M×min(M,N), unit diagonal; U: min(M,N)×N. Both keep lu's blocks
    // and first processes, so their local parts are prefixes of lu's.
    let mut l = like(grid, lu, m, mn)?;
    let mut u = like(grid, lu, mn, n)?;
    let lld = lu.lld();
    for lj in 0..l.local_cols() {
        let j = l.global_col(lj);
        let ldl = l.lld();
        for li in 0..l.local_rows() {
            let i = l.global_row(li);
            l.local_mut()[li + lj * ldl] = match i.cmp(&j) {
                std::cmp::Ordering::Greater => lu.local()[li + lj * lld],
                std::cmp::Ordering::Equal => 1.0,
                std::cmp::Ordering::Less => 0.0,
            };
        }
    }
    for lj in 0..u.local_cols() {
        let j = u.global_col(lj);
        let ldu = u.lld();
        for li in 0..u.local_rows() {
            let i = u.global_row(li);
            u.local_mut()[li + lj * ldu] = if i <= j { lu.local()[li + lj * lld] } else { 0.0 };
        }
    }
    let mut pa = a.clone();
    pdlaswp(grid, &mut pa, ipiv, Direction::Forward)?;
    pdgemm(grid, Trans::No, Trans::No, -1.0, &l, &u, 1.0, &mut pa)?;
    let rnorm = one_norm(grid, &pa)?;
    let anorm = one_norm(grid, a)?;
    let scale = m.max(n) as f64 * EPS;
    Ok(if anorm == 0.0 { rnorm / scale } else { rnorm / (anorm * scale) })
}

/// Collective: the solution residual `‖A·X − B‖₁ / (‖A‖₁ · ‖X‖₁ · N · eps)`
/// with `eps` = [`EPS`].
///
/// * `grid`: the process grid;
/// * `a` (local input): the original N×N matrix;
/// * `x` (local input): the computed solution (N×NRHS);
/// * `b` (local input): the right-hand sides (N×NRHS, distributed like `x`).
///
/// Needs aligned distributions as [`pdgemm`] does (`MB_B = MB_A`,
/// `MB_X = NB_A`, `NB_X = NB_B`). Returns 0 when the residual is exactly
/// zero (also for empty matrices) and +∞ when it is not but `‖A‖₁·‖X‖₁`
/// is. The same value on every process.
///
/// # Errors
/// Agreed [`crate::Error::Argument`]s from [`pdgemm`] (routine `pdgemm`) when the
/// shapes or distributions do not conform; [`crate::Error::Grid`] for MPI
/// failures.
pub fn solve_residual(grid: &Grid, a: &DistMatrix, x: &DistMatrix, b: &DistMatrix) -> Result<f64> {
    let mut r = b.clone();
    pdgemm(grid, Trans::No, Trans::No, 1.0, a, x, -1.0, &mut r)?;
    let rnorm = one_norm(grid, &r)?;
    if rnorm == 0.0 {
        return Ok(0.0);
    }
    let denom = one_norm(grid, a)? * one_norm(grid, x)? * a.n() as f64 * EPS;
    Ok(if denom == 0.0 { f64::INFINITY } else { rnorm / denom })
}

/// A zero `m`×`n` matrix with `like`'s block sizes and first processes.
fn like(grid: &Grid, like: &DistMatrix, m: usize, n: usize) -> Result<DistMatrix> {
    let (p, q) = like.grid_shape();
    let (myrow, mycol) = like.coords();
    let d = like.desc();
    let desc = Descriptor::with_min_lld(m, n, d.mb(), d.nb(), d.rsrc(), d.csrc(), d.ctxt(), p, q, myrow)
        .map_err(|e| descriptor_error("lu_residual", LU, None, &e))?;
    let len = desc.local_len(mycol, q);
    DistMatrix::from_local(grid, desc, vec![0.0; len])
}
