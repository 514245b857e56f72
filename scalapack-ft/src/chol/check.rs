//! ScaLAPACK's tester residual of a Cholesky factorization.

use crate::args::cholesky_residual::{A, FACTOR};
use crate::args::{arg_error, check_grid, entry};
use crate::blas::{Trans, Uplo};
use crate::error::{agree_on_arguments, Result};
use crate::matrix::DistMatrix;
use crate::norms::{one_norm, EPS};
use crate::pblas::pdgemm;
use blacs_ft::Grid;

/// Collective: `‖A − L·Lᵀ‖₁ / (‖A‖₁ · N · eps)` (UPLO = L) or
/// `‖A − Uᵀ·U‖₁ / (‖A‖₁ · N · eps)` (UPLO = U), `eps` = [`EPS`], with A the
/// symmetric matrix whose `uplo` triangle `a` holds (the other triangle of
/// `a` is not read) and L or U the `uplo` triangle of `factor`, as
/// [`super::pdpotrf`] left it. The same value on every process.
///
/// # Errors
/// Agreed [`crate::Error::Argument`]s (routine `cholesky_residual`):
/// `factor` not shaped or distributed like `a` (position 4), a matrix from
/// another grid (3, 4); [`crate::Error::Grid`] for MPI failures.
pub fn cholesky_residual(grid: &Grid, uplo: Uplo, a: &DistMatrix, factor: &DistMatrix) -> Result<f64> {
    const ROUTINE: &str = "cholesky_residual";
    let local = (|| {
        check_grid(grid, a, ROUTINE, A, "A")?;
        check_grid(grid, factor, ROUTINE, FACTOR, "L")?;
        if (a.m(), a.n(), a.mb(), a.nb()) != (factor.m(), factor.n(), factor.mb(), factor.nb())
            || a.m() != a.n()
            || a.mb() != a.nb()
        {
            return Err(arg_error(ROUTINE, FACTOR, entry::M, "L", "must have the (square) shape and blocks of A"));
        }
        Ok(())
    })();
    agree_on_arguments(grid, local)?;
    let n = a.n();
    if n == 0 {
        return Ok(0.0);
    }
    let sym = symmetrized(grid, uplo, a)?;
    // L·Lᵀ (or Uᵀ·U) − A.
    let f = triangle(factor, uplo);
    let ft = crate::qr::transpose(grid, &f)?;
    let (left, right) = match uplo {
        Uplo::Lower => (&f, &ft),
        Uplo::Upper => (&ft, &f),
    };
    let mut r = sym.clone();
    pdgemm(grid, Trans::No, Trans::No, 1.0, left, right, -1.0, &mut r)?;
    let rnorm = one_norm(grid, &r)?;
    let anorm = one_norm(grid, &sym)?;
    let scale = n as f64 * EPS;
    Ok(if anorm == 0.0 { rnorm / scale } else { rnorm / (anorm * scale) })
}

/// Collective: the whole symmetric matrix whose triangle `uplo` `a`
/// holds (T + Tᵀ − diag(T), T that triangle; the other one of `a` is not
/// read), distributed as `a` (square blocks, first block on process
/// (0, 0)): what a residual of a solve with the factor is computed
/// against.
pub fn symmetrized(grid: &Grid, uplo: Uplo, a: &DistMatrix) -> Result<DistMatrix> {
    let t = triangle(a, uplo);
    let mut sym = crate::qr::transpose(grid, &t)?;
    let ld = sym.lld();
    for lj in 0..sym.local_cols() {
        let j = sym.global_col(lj);
        for li in 0..sym.local_rows() {
            let i = sym.global_row(li);
            let v = t.local()[li + lj * t.lld()];
            sym.local_mut()[li + lj * ld] += if i == j { 0.0 } else { v };
        }
    }
    Ok(sym)
}

/// Local: the triangle `uplo` of `a` (diagonal included), zeros
/// elsewhere, distributed as `a`.
fn triangle(a: &DistMatrix, uplo: Uplo) -> DistMatrix {
    let mut t = a.clone();
    let ld = t.lld();
    for lj in 0..t.local_cols() {
        let keep = super::factor::triangle_rows(a, uplo, lj);
        let col = &mut t.local_mut()[lj * ld..lj * ld + a.local_rows()];
        col[..keep.start].fill(0.0);
        col[keep.end..].fill(0.0);
    }
    t
}
