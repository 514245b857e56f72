//! What `ftla lu --solve` and `ftla qr --lstsq` do with the factors: the
//! right-hand sides B (generated from the seed, or read from `--rhs`), the
//! fault-tolerant solves (one function each), the residuals, and the
//! solution file (`--solution`).

use crate::problem::SolveJob;
use blacs_ft::{Grid, Scope};
use recovery::Region;
use scalapack_ft::abft::{FtOptions, FtReport};
use scalapack_ft::blas::{self, Trans};
use scalapack_ft::dist_io::{read_matrix, read_matrix_local, write_columns};
use scalapack_ft::generate::{Generator, MatrixKind};
use scalapack_ft::norms::{one_norm, EPS};
use scalapack_ft::pblas::pdgemm;
use scalapack_ft::{lu, lu_ft, qr_ft, DistMatrix, Error};

/// `lu --solve`'s residual, as the report prints it.
pub const LU_SOLVE_RESIDUAL: &str = "‖A·X−B‖₁/(‖A‖₁·‖X‖₁·N·eps)";
/// `qr --lstsq`'s residual, as the report prints it.
pub const LSTSQ_RESIDUAL: &str = "‖Aᵀ(B−A·X)‖₁/(max(M,N,NRHS)·‖A‖₁·‖B‖₁·eps)";

/// The status log's names of the solves' calls (`pdgetrs_ft`, and
/// `pdgels_ft`'s solve after its factorization).
pub const SOLVE_CALLS: [&str; 2] = ["pdgetrs_ft", "pdgels_ft"];
/// The kill points' name of `pdgetrs_ft`'s steps (`R@getrs:STEP:PHASE`).
pub const GETRS_POINTS: &str = "getrs";
/// The kill points' name of `pdgels_ft`'s solve steps (`R@gels:STEP:PHASE`).
pub const GELS_POINTS: &str = "gels";

/// Mixed into the job's seed for B, so that B is not drawn from A's
/// stream.
const RHS_SEED: u64 = 0xB0B5;

/// An argument error of `ftla` itself (`name`: the option at fault), the
/// same on every rank when its cause is global.
fn option_error(name: &str, reason: String) -> Error {
    Error::Argument { routine: "ftla".into(), position: 0, entry: 0, name: name.into(), reason }
}

/// B: the `m`×NRHS right-hand sides in `nb`×`nb` blocks, first block on
/// process (0, 0) — A's row distribution, as pdgetrs and pdormqr need.
/// Generated (entries uniform in [−0.5, 0.5) from `seed`) or read from
/// `--rhs`.
///
/// * `collective` (global): `false` on a process joining a call that the
///   others are already in: it reads only its own blocks and waits for
///   nobody (B is an input nothing has changed yet, so its blocks are
///   those the lost process had).
///
/// # Errors
/// A missing or unreadable file, or one whose shape is not `m`×NRHS, is
/// an [`Error::Argument`] naming `--rhs` (collective: on every rank).
pub fn right_hand_sides(
    grid: &Grid,
    s: &SolveJob,
    seed: u64,
    m: usize,
    nb: usize,
    collective: bool,
) -> Result<DistMatrix, Error> {
    let Some(path) = &s.rhs else {
        let gen = Generator::new(MatrixKind::Uniform, seed ^ RHS_SEED, m, s.nrhs)
            .map_err(|e| option_error("--nrhs", e.to_string()))?;
        return DistMatrix::from_fn(grid, m, s.nrhs, nb, nb, |i, j| gen.element(i, j));
    };
    let b = if collective {
        read_matrix(grid, path, nb).map_err(|e| match e {
            // (The file's fault, agreed on every rank.)
            Error::Grid(blacs_ft::Error::Remote { message, .. }) => option_error("--rhs", message),
            e => e,
        })?
    } else {
        read_matrix_local(grid, path, nb).map_err(|reason| option_error("--rhs", reason))?
    };
    // (The shape read is the same on every rank: so is this verdict.)
    if b.m() != m || b.n() != s.nrhs {
        let one = if s.nrhs == 1 { format!(", or of length {m}") } else { String::new() };
        return Err(option_error(
            "--rhs",
            format!(
                "{} holds a {}x{} matrix; B must be {m}x{} (one row per row of A{one})",
                path.display(),
                b.m(),
                b.n(),
                s.nrhs
            ),
        ));
    }
    Ok(b)
}

/// Collective: the solve of `ftla lu --ft --solve`, X = A⁻¹·B with the
/// protected factors of `pdgetrf_ft` (`pdgetrs_ft`: kill points
/// `R@getrs:STEP:PHASE`; a process lost in a step is rebuilt, its part of
/// the factors from their checksums and of B from B's).
///
/// * `factors` (local input): the protected factors;
/// * `b` (local input/output): B on entry, X on exit.
///
/// # Errors
/// Those of `pdgetrs_ft`, except that a process lost before B's
/// checksums exist (the solve's verdicts and encoding, or between the
/// factorization and the solve), which `pdgetrs_ft` leaves to its caller
/// to repair and call again, is reported as unrecoverable here: this
/// program starts the factorization again after such a loss, not the
/// solve (its replacement's program would meet the survivors elsewhere).
pub fn lu_solve_ft(
    region: &mut Region,
    factors: &lu_ft::LuFactors,
    b: &mut DistMatrix,
    opts: &FtOptions,
) -> Result<FtReport, Error> {
    lu_ft::pdgetrs_ft(region, lu::Transpose::NoTrans, factors, b, opts).map_err(|e| {
        if e.is_process_failure() {
            solve_restart_unsupported(&e, "ftla lu")
        } else {
            e
        }
    })
}

/// Collective: `ftla qr --ft --lstsq`'s least-squares solve,
/// `pdgels_ft`: `a` is factored by `pdgeqrf_ft` into protected factors
/// (kill points `R@qr:…`), then Qᵀ·B and R·X = (Qᵀ·B)(1:N) run as one
/// protected solve (kill points `R@gels:STEP:PHASE`); a process lost in
/// either is rebuilt.
///
/// * `a` (local input/output): M×N, M ≥ N; taken by the factorization,
///   and on exit a plain copy of its QR factors (R and V);
/// * `tau` (global output);
/// * `b` (local input/output): M×NRHS with A's rows; on exit X in rows
///   0..N, as pdgels leaves it;
/// * `opts`: as `pdgeqrf_ft`'s.
///
/// # Errors
/// M < N (the minimum-norm solution, which the plain path lacks) is an
/// argument error; otherwise those of `pdgels_ft`. A process lost before
/// the solve's checksums exist is reported as unrecoverable (this
/// program starts the factorization again after such a loss, not the
/// solve; the checks refuse the kill points that cause it), one lost
/// before the factorization's is returned as the process failure it is.
pub fn gels_ft(
    region: &mut Region,
    a: &mut DistMatrix,
    tau: &mut Vec<f64>,
    b: &mut DistMatrix,
    opts: &FtOptions,
) -> Result<FtReport, Error> {
    if a.m() < a.n() {
        // (Global sizes: the same verdict on every rank.)
        return Err(option_error(
            "--lstsq",
            format!("needs M ≥ N, got {}x{}: the minimum-norm solution (M < N) is not supported yet", a.m(), a.n()),
        ));
    }
    let nb = a.nb();
    let taken = std::mem::replace(a, DistMatrix::zeros(region.grid(), 0, 0, nb, nb)?);
    let first_call = region.log().position();
    let (factors, report) = qr_ft::pdgels_ft(region, taken, b, opts).map_err(|e| {
        // (A call lost before its checksums existed is forgotten: past the
        // first call, the factorization completed and the solve failed.)
        let in_the_solve = region.log().position() > first_call;
        if e.is_process_failure() && in_the_solve {
            solve_restart_unsupported(&e, "ftla qr")
        } else {
            e
        }
    })?;
    *tau = factors.tau();
    *a = factors.to_matrix(region)?;
    Ok(factor_and_solve(report.factor, report.solve))
}

/// One report for a factorization and the solve after it: the
/// recoveries of both, the time both ran in earlier jobs (checkpoint-on-
/// failure), the factorization's checksum model, and the checksum check
/// of the factors unless B's failed (`verify`).
pub fn factor_and_solve(factor: FtReport, solve: FtReport) -> FtReport {
    let mut whole = factor;
    whole.recoveries.extend(solve.recoveries);
    whole.earlier_s += solve.earlier_s;
    if solve.check.as_ref().is_some_and(|c| !c.ok) {
        whole.check = solve.check;
    }
    whole
}

/// The error for a process lost before a solve's checksums existed: the
/// solve would have to start again, and `program` starts the
/// factorization again instead.
fn solve_restart_unsupported(e: &Error, program: &str) -> Error {
    Error::Grid(blacs_ft::Error::Unrecoverable {
        reason: format!(
            "a process was lost before the solve's checksums existed ({e}); {program} does not start \
                         the solve again"
        ),
    })
}

/// X: rows 0..`n` of `b` (where pdgels leaves the solution), a matrix of
/// its own with `b`'s distribution. Local.
pub fn leading_rows(grid: &Grid, b: &DistMatrix, n: usize) -> Result<DistMatrix, Error> {
    let mut x = DistMatrix::zeros(grid, n, b.n(), b.mb(), b.nb())?;
    // (Global rows below n are the first local rows on every process.)
    let (rows, ldb, ldx) = (x.local_rows(), b.lld(), x.lld());
    for j in 0..x.local_cols() {
        let col = b.local()[j * ldb..j * ldb + rows].to_vec();
        x.local_mut()[j * ldx..j * ldx + rows].copy_from_slice(&col);
    }
    Ok(x)
}

/// Collective: LAPACK's least-squares check (dqrt17 with RESID = 1)
/// [`LSTSQ_RESIDUAL`] with `eps` = 2⁻⁵³: the defect of the normal
/// equations AᵀA·X = AᵀB, scaled. Small (< 16) when X is the
/// least-squares solution; 0 for an exact one.
///
/// * `a` (local input): the original M×N matrix;
/// * `x` (local input): the N×NRHS solution (`MB_X = NB_A`);
/// * `b` (local input): the M×NRHS right-hand sides with A's rows.
///
/// The same value on every process; +∞ when the residual is not 0 but
/// ‖A‖₁·‖B‖₁ is.
pub fn lstsq_residual(grid: &Grid, a: &DistMatrix, x: &DistMatrix, b: &DistMatrix) -> Result<f64, Error> {
    // R = B − A·X.
    let mut r = b.clone();
    pdgemm(grid, Trans::No, Trans::No, -1.0, a, x, 1.0, &mut r)?;
    let defect = transposed_product_norm(grid, a, &r)?;
    if defect == 0.0 {
        return Ok(0.0);
    }
    let (m, n, k) = (a.m(), a.n(), b.n());
    let denom = m.max(n).max(k) as f64 * one_norm(grid, a)? * one_norm(grid, b)? * EPS;
    Ok(if denom == 0.0 { f64::INFINITY } else { defect / denom })
}

/// Collective: ‖Aᵀ·R‖₁ for A (M×N) and R (M×K) with the same row
/// distribution. Each process completes its rows of R along its process
/// row, multiplies them with its block of A, and the process columns sum
/// the products: the N×K result stays distributed like A's columns.
fn transposed_product_norm(grid: &Grid, a: &DistMatrix, r: &DistMatrix) -> Result<f64, Error> {
    let (lr, k) = (a.local_rows(), r.n());
    // This process's rows of R, every column.
    let mut rows = vec![0.0; lr * k];
    for lj in 0..r.local_cols() {
        let j = r.global_col(lj);
        rows[j * lr..(j + 1) * lr].copy_from_slice(&r.local()[lj * r.lld()..lj * r.lld() + lr]);
    }
    grid.sum(Scope::Row, &mut rows, None)?;
    // W = A(local rows, local cols)ᵀ · R(local rows, :), summed over the
    // process rows.
    let lc = a.local_cols();
    let mut w = vec![0.0; lc * k];
    if lr > 0 {
        blas::dgemm(Trans::Yes, Trans::No, lc, k, lr, 1.0, a.local(), a.lld(), &rows, lr, 0.0, &mut w, lc.max(1));
    }
    grid.sum(Scope::Column, &mut w, None)?;
    // ‖W‖₁: column sums over A's columns, which the process columns split.
    let mut sums: Vec<f64> = (0..k).map(|j| w[j * lc..(j + 1) * lc].iter().map(|v| v.abs()).sum()).collect();
    grid.sum(Scope::Row, &mut sums, None)?;
    Ok(sums.iter().copied().fold(0.0, |m, s| if s.is_nan() || s > m { s } else { m }))
}

/// Collective: writes X to `--solution`, if given (`.npy`: N×NRHS, or of
/// length N for one column; `.mtx`: N×NRHS).
pub fn write_solution(grid: &Grid, s: &SolveJob, x: &DistMatrix) -> Result<(), Error> {
    match &s.solution {
        Some(path) => write_columns(grid, x, path),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blacs_ft::{GridOptions, Joined, Runtime};

    /// The only test of this program that starts MPI (one process, as a
    /// singleton): the least-squares check is small for pdgels's solution
    /// and large for a perturbed one, and the LU solve's residual as well.
    #[test]
    fn the_residuals_tell_a_solution_from_a_perturbed_one() {
        let mut rt = Runtime::init().expect("MPI");
        let comm = rt.world_dup().expect("a communicator");
        let Ok(Joined::Active(grid)) = Grid::join(&mut rt, comm, 1, 1, GridOptions::without_kills()) else {
            panic!("no 1x1 grid")
        };
        let (m, n, k, nb) = (90, 40, 3, 8);
        let gen = Generator::new(MatrixKind::Uniform, 7, m, n).unwrap();
        let a = DistMatrix::from_fn(&grid, m, n, nb, nb, |i, j| gen.element(i, j)).unwrap();
        let s = SolveJob { nrhs: k, rhs: None, solution: None };
        let b = right_hand_sides(&grid, &s, 7, m, nb, true).unwrap();
        let (mut fact, mut xb) = (a.clone(), b.clone());
        scalapack_ft::qr::pdgels(&grid, &mut fact, &mut xb).unwrap();
        let x = leading_rows(&grid, &xb, n).unwrap();
        let good = lstsq_residual(&grid, &a, &x, &b).unwrap();
        assert!(good < 16.0, "{good}");
        // B is not in A's range (M > N, random): a residual that solves
        // A·X = B in no sense would pass a check of ‖B − A·X‖ alone.
        let mut off = x.clone();
        off.local_mut()[5] += 1e-6;
        let bad = lstsq_residual(&grid, &a, &off, &b).unwrap();
        assert!(bad > 1e3 * good.max(1.0), "perturbed {bad}, solution {good}");
        // The least-squares solution of a consistent system is exact: its
        // check is of rounding size too, and 0 for B = 0.
        let zero = DistMatrix::zeros(&grid, m, k, nb, nb).unwrap();
        let x0 = DistMatrix::zeros(&grid, n, k, nb, nb).unwrap();
        assert_eq!(lstsq_residual(&grid, &a, &x0, &zero).unwrap(), 0.0);
        // LU: the solution's residual is small, a perturbed solution's
        // large.
        let sq = Generator::new(MatrixKind::DiagonallyDominant, 3, n, n).unwrap();
        let a = DistMatrix::from_fn(&grid, n, n, nb, nb, |i, j| sq.element(i, j)).unwrap();
        let mut fact = a.clone();
        let mut ipiv = Vec::new();
        lu::pdgetrf(&grid, &mut fact, &mut ipiv).unwrap();
        let b = right_hand_sides(&grid, &s, 11, n, nb, true).unwrap();
        let mut x = b.clone();
        lu::pdgetrs(&grid, lu::Transpose::NoTrans, &fact, &ipiv, &mut x).unwrap();
        let good = lu::solve_residual(&grid, &a, &x, &b).unwrap();
        assert!(good < 16.0, "{good}");
        x.local_mut()[5] += 1e-6;
        let bad = lu::solve_residual(&grid, &a, &x, &b).unwrap();
        assert!(bad > 1e3 * good.max(1.0), "perturbed {bad}, solution {good}");
        drop(rt);
    }
}
