//! `pdpotrs` and `pdposv`: solves with the Cholesky factor, by the two
//! distributed triangular solves the QR solves run (with U = Lᵀ: Uᵀ·Y = B,
//! then U·X = Y).

use super::factor::{self, FactorPositions};
use crate::args::pdpotrs::{A, DESCA, DESCB, N};
use crate::args::{arg_error, check_first_block_at_origin, check_grid, check_rhs_rows, check_square_blocks};
use crate::blas::Uplo;
use crate::error::{agree_on_arguments, check_not_lost, Result};
use crate::matrix::DistMatrix;
use blacs_ft::Grid;

/// Collective: solves `A·X = B` with the Cholesky factor of the N×N
/// symmetric positive definite A that [`super::pdpotrf`] left in `a`
/// (ScaLAPACK `PDPOTRS` with `IA = JA = IB = JB = 1`, `N = N_A`,
/// `NRHS = N_B`).
///
/// * `grid`: the process grid;
/// * `uplo` (global): the triangle of `a` that holds the factor (L for
///   [`Uplo::Lower`], U for [`Uplo::Upper`]); the other one is not read;
/// * `a` (local input): the factor (square, `MB_A = NB_A`);
/// * `b` (local input/output): on entry the N×NRHS right-hand sides, on
///   exit the solution X. Its rows distributed like A's (`MB_B = NB_A`,
///   the same first process row); any `NB_B`.
///
/// With UPLO = L the factor is transposed once (one more A's worth of
/// memory, O(N²) words moved) so that both solves run on U = Lᵀ.
///
/// # Errors
/// Agreed [`crate::Error::Argument`]s with ScaLAPACK's positions: A not
/// square (2, N), `MB_A ≠ NB_A` (7, `NB_`; INFO = -706), B's row count ≠ N
/// (11, `M_`; -1103), `MB_B ≠ NB_A` (11, `NB_`; -1106), B's first process
/// row ≠ A's (11, `RSRC_`), either matrix from another grid;
/// [`crate::Error::InputLost`] when A is lost on some process (factors a
/// replacement did not receive, see [`DistMatrix::is_lost`]; nothing
/// computed).
pub fn pdpotrs(grid: &Grid, uplo: Uplo, a: &DistMatrix, b: &mut DistMatrix) -> Result<()> {
    agree_on_arguments(grid, check_args("pdpotrs", grid, a, b))?;
    solve(grid, uplo, a, b)
}

/// Collective: the two triangular solves of checked arguments.
fn solve(grid: &Grid, uplo: Uplo, a: &DistMatrix, b: &mut DistMatrix) -> Result<()> {
    let n = a.n();
    if n == 0 || b.n() == 0 {
        return Ok(());
    }
    let lower_to_upper;
    let u = match uplo {
        Uplo::Upper => a,
        Uplo::Lower => {
            lower_to_upper = crate::qr::transpose(grid, a)?;
            &lower_to_upper
        }
    };
    crate::qr::transposed_upper_solve(grid, u, n, b)?;
    crate::qr::upper_solve(grid, u, n, b)?;
    b.set_lost(false);
    Ok(())
}

/// Collective: factors the N×N symmetric positive definite `a`
/// ([`super::pdpotrf`]) and solves `A·X = B` with the factor
/// ([`pdpotrs`]) (ScaLAPACK `PDPOSV`); the arguments are theirs.
///
/// # Errors
/// Those of both, B's checked before anything is computed; a matrix
/// that is not positive definite is
/// [`crate::Error::MinorNotPositiveDefinite`], B then unchanged.
pub fn pdposv(grid: &Grid, uplo: Uplo, a: &mut DistMatrix, b: &mut DistMatrix) -> Result<()> {
    const ROUTINE: &str = "pdposv";
    // (A's checks at PDPOSV's positions, which are PDPOTRS's.)
    let at = FactorPositions { n: N, a: A, desca: DESCA };
    let local = check_args(ROUTINE, grid, a, b).and_then(|()| factor::check_args(ROUTINE, at, grid, uplo, a));
    agree_on_arguments(grid, local)?;
    factor::factor(grid, uplo, a, ROUTINE)?;
    solve(grid, uplo, a, b)
}

/// The local argument checks of [`pdpotrs`] and [`pdposv`].
fn check_args(routine: &str, grid: &Grid, a: &DistMatrix, b: &DistMatrix) -> Result<()> {
    check_grid(grid, a, routine, DESCA, "A")?;
    check_grid(grid, b, routine, DESCB, "B")?;
    if a.m() != a.n() {
        return Err(arg_error(routine, N, 0, "N", format!("A must be square, got {}x{}", a.m(), a.n())));
    }
    check_square_blocks(routine, DESCA, "A", a.desc())?;
    // (The solves transpose blocks of A: its first block on process (0, 0).)
    check_first_block_at_origin(routine, DESCA, "A", a.desc())?;
    check_rhs_rows(routine, DESCB, a.n(), a, b)?;
    check_not_lost(grid, routine, A, "A", a)
}
