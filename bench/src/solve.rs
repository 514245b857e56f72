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
use scalapack_ft::{drivers, lu, lu_ft, qr_ft, DistMatrix, Error};
use std::time::Duration;

/// `lu --solve`'s residual, as the report prints it.
pub const LU_SOLVE_RESIDUAL: &str = "‖A·X−B‖₁/(‖A‖₁·‖X‖₁·N·eps)";
/// `qr --lstsq`'s residual for M ≥ N, as the report prints it.
pub const LSTSQ_RESIDUAL: &str = "‖Aᵀ(B−A·X)‖₁/(max(M,N,NRHS)·‖A‖₁·‖B‖₁·eps)";
/// `qr --lstsq`'s residual for M < N (the minimum-norm solution), as the
/// report prints it: the larger of the residual of A·X = B and the part
/// of X outside A's row space (P: the projection onto it).
pub const MIN_NORM_RESIDUAL: &str = "max(‖A·X−B‖₁/(‖A‖₁·‖X‖₁·N·eps), ‖X−P·X‖_F/(‖X‖_F·N·eps))";
/// The least-squares residual's formula for an `m`×`n` A (global).
pub fn lstsq_residual_formula(m: usize, n: usize) -> &'static str {
    if m < n {
        MIN_NORM_RESIDUAL
    } else {
        LSTSQ_RESIDUAL
    }
}
/// The kill points' name of the application's own work between the
/// factorization and the solve (`R@app:0`; `lu --solve` with `--ft`).
pub const APP_POINTS: &str = "app";
/// The phase at which the application point fires (a point without a
/// phase, `R@app:0`, matches it too).
pub const APP_PHASE: &str = "work";

/// The status log's names of the solves' calls (`pdgetrs_ft`,
/// `pdpotrs_ft`, and `pdgels_ft`'s solve after its factorization).
pub const SOLVE_CALLS: [&str; 3] =
    [drivers::PDGETRS_FT.routine, drivers::PDPOTRS_FT.routine, drivers::PDGELS_FT.routine];

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
/// Those of `pdgetrs_ft`. A process lost before B's checksums exist (the
/// solve's verdicts and encoding, or between the factorization and the
/// solve) is the process failure `pdgetrs_ft` returns, B holding its
/// input: the caller repairs and solves again with the same factors.
pub fn lu_solve_ft(
    region: &mut Region,
    factors: &lu_ft::LuFactors,
    b: &mut DistMatrix,
    opts: &FtOptions,
) -> Result<FtReport, Error> {
    lu_ft::pdgetrs_ft(region, lu::Transpose::NoTrans, factors, b, opts)
}

/// Fires the application's kill point (`R@app:0`) on this process: the
/// program's own work between the factorization and the solve, outside
/// every library call. Local (a process that dies here is met by the
/// others at the solve's start).
pub fn application_point(region: &Region) {
    let grid = region.grid();
    grid.injector().point(grid.rank(), grid.epoch(), APP_POINTS, 0, APP_PHASE);
}

/// Collective: `ftla qr --ft --lstsq`'s least-squares solve,
/// `pdgels_ft`: `a` is factored by `pdgeqrf_ft` into protected factors
/// (kill points `R@qr:…`; of Aᵀ for M < N), then the solve runs as one
/// protected call (kill points `R@gels:STEP:PHASE`); a process lost in
/// either is rebuilt.
///
/// * `a` (local input/output): M×N; taken by the factorization, and on
///   exit a plain copy of its protected factors (R and V; for M < N
///   those of Aᵀ);
/// * `tau` (global output);
/// * `b` (local input/output): max(M, N)×NRHS with A's rows (B in rows
///   0..M); on exit X in rows 0..N, as pdgels leaves it;
/// * `opts`: as `pdgeqrf_ft`'s.
///
/// Returns the factorization's and the solve's report as one, and the
/// time of the solve alone on this process.
///
/// # Errors
/// Those of `pdgels_ft`. A process lost before a call's checksums exist
/// (the factorization's or the solve's) is the process failure
/// `pdgels_ft` returns: the caller repairs and calls again, and the
/// factorization completed before returns the same protected factors.
pub fn gels_ft(
    region: &mut Region,
    a: &mut DistMatrix,
    tau: &mut Vec<f64>,
    b: &mut DistMatrix,
    opts: &FtOptions,
) -> Result<(FtReport, Duration), Error> {
    let nb = a.nb();
    let taken = std::mem::replace(a, DistMatrix::zeros(region.grid(), 0, 0, nb, nb)?);
    let (factors, report) = qr_ft::pdgels_ft(region, taken, b, opts)?;
    *tau = factors.tau();
    *a = factors.to_matrix(region)?;
    Ok((factor_and_solve(report.factor, report.solve), report.solve_time))
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

/// A copy of `b` with `rows` rows and `b`'s distribution: its leading
/// rows (X: rows 0..N of what pdgels leaves), and zeros below them when
/// `rows` exceeds `b`'s (B for the minimum-norm problem, whose N rows
/// pdgels needs: B in rows 0..M). Local.
pub fn with_rows(grid: &Grid, b: &DistMatrix, rows: usize) -> Result<DistMatrix, Error> {
    let mut x = DistMatrix::zeros(grid, rows, b.n(), b.mb(), b.nb())?;
    // (The global rows both have are the first local rows of either, on
    // every process: the same row blocks, from the same process row.)
    let (common, ldb, ldx) = (x.local_rows().min(b.local_rows()), b.lld(), x.lld());
    for j in 0..x.local_cols() {
        let col = b.local()[j * ldb..j * ldb + common].to_vec();
        x.local_mut()[j * ldx..j * ldx + common].copy_from_slice(&col);
    }
    Ok(x)
}

/// Collective: LAPACK's least-squares checks with `eps` = 2⁻⁵³, small
/// (< 16) when X is the solution pdgels defines, 0 for an exact one:
///
/// * M ≥ N: dqrt17 with RESID = 1, [`LSTSQ_RESIDUAL`]: the defect of
///   the normal equations AᵀA·X = AᵀB, scaled (it holds for the
///   least-squares solution even when B is not in A's range);
/// * M < N, the minimum-norm solution: [`MIN_NORM_RESIDUAL`], the larger
///   of dqrt16's residual of A·X = B (the system is consistent) and
///   dqrt14's test that X lies in A's row space (a solution plus a
///   null-space vector of A passes the first and is not the minimum-norm
///   one): ‖X − P·X‖_F, P·X being the minimum-norm solution of
///   A·Z = A·X, the projection of X onto the row space, computed by the
///   plain pdgels.
///
/// * `a` (local input): the original M×N matrix (square blocks, first
///   block on process (0, 0));
/// * `x` (local input): the N×NRHS solution (`MB_X = NB_A`);
/// * `b` (local input): the M×NRHS right-hand sides with A's rows.
///
/// The same value on every process; +∞ when a term's numerator is not 0
/// but its scale is.
pub fn lstsq_residual(grid: &Grid, a: &DistMatrix, x: &DistMatrix, b: &DistMatrix) -> Result<f64, Error> {
    if a.m() < a.n() {
        return min_norm_residual(grid, a, x, b);
    }
    // R = B − A·X.
    let mut r = b.clone();
    pdgemm(grid, Trans::No, Trans::No, -1.0, a, x, 1.0, &mut r)?;
    let defect = transposed_product_norm(grid, a, &r)?;
    let (m, n, k) = (a.m(), a.n(), b.n());
    Ok(scaled(defect, m.max(n).max(k) as f64 * one_norm(grid, a)? * one_norm(grid, b)?))
}

/// `defect / (scale·eps)`: 0 for no defect, +∞ for a defect at scale 0.
fn scaled(defect: f64, scale: f64) -> f64 {
    if defect == 0.0 {
        0.0
    } else if scale == 0.0 {
        f64::INFINITY
    } else {
        defect / (scale * EPS)
    }
}

/// Collective: [`MIN_NORM_RESIDUAL`] for M < N (see [`lstsq_residual`]).
fn min_norm_residual(grid: &Grid, a: &DistMatrix, x: &DistMatrix, b: &DistMatrix) -> Result<f64, Error> {
    let n = a.n();
    let norm_a = one_norm(grid, a)?;
    // dqrt16: ‖B − A·X‖₁ / (‖A‖₁·‖X‖₁·N·eps).
    let mut r = b.clone();
    pdgemm(grid, Trans::No, Trans::No, -1.0, a, x, 1.0, &mut r)?;
    let residual = scaled(one_norm(grid, &r)?, norm_a * one_norm(grid, x)? * n as f64);
    // dqrt14's question, whether X is in the row space: P·X, the
    // minimum-norm solution of A·Z = A·X (in N rows, A·X in the first M).
    let mut ax = DistMatrix::zeros(grid, a.m(), x.n(), b.mb(), b.nb())?;
    pdgemm(grid, Trans::No, Trans::No, 1.0, a, x, 0.0, &mut ax)?;
    let mut px = with_rows(grid, &ax, n)?;
    scalapack_ft::qr::pdgels(grid, &mut a.clone(), &mut px)?;
    let mut off = x.clone();
    let (rows, ldo, ldp) = (off.local_rows(), off.lld(), px.lld());
    for j in 0..off.local_cols() {
        for i in 0..rows {
            off.local_mut()[j * ldo + i] -= px.local()[j * ldp + i];
        }
    }
    let outside = scaled(frobenius_norm(grid, &off)?, frobenius_norm(grid, x)? * n as f64);
    Ok(residual.max(outside))
}

/// Collective: ‖M‖_F of a distributed matrix, the same on every process.
fn frobenius_norm(grid: &Grid, m: &DistMatrix) -> Result<f64, Error> {
    let (rows, ld) = (m.local_rows(), m.lld());
    let mut sum =
        [(0..m.local_cols()).map(|j| m.local()[j * ld..j * ld + rows].iter().map(|v| v * v).sum::<f64>()).sum::<f64>()];
    grid.sum(Scope::All, &mut sum, None)?;
    Ok(sum[0].sqrt())
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
        let x = with_rows(&grid, &xb, n).unwrap();
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
        // M < N: pdgels's minimum-norm solution passes; one perturbed
        // fails the residual of A·X = B, and one plus a vector of A's null
        // space (A·X still B) fails the row-space test.
        let (m, n) = (40, 90);
        let gen = Generator::new(MatrixKind::Uniform, 5, m, n).unwrap();
        let a = DistMatrix::from_fn(&grid, m, n, nb, nb, |i, j| gen.element(i, j)).unwrap();
        let b = right_hand_sides(&grid, &s, 5, m, nb, true).unwrap();
        let mut xb = with_rows(&grid, &b, n).unwrap();
        scalapack_ft::qr::pdgels(&grid, &mut a.clone(), &mut xb).unwrap();
        let good = lstsq_residual(&grid, &a, &xb, &b).unwrap();
        assert!(good < 16.0, "{good}");
        let mut off = xb.clone();
        off.local_mut()[5] += 1e-6;
        let bad = lstsq_residual(&grid, &a, &off, &b).unwrap();
        assert!(bad > 1e3 * good.max(1.0), "perturbed {bad}, solution {good}");
        // z = r − P·r for a random r is in A's null space.
        let r = DistMatrix::from_fn(&grid, n, k, nb, nb, |i, j| ((3 * i + 7 * j) % 13) as f64 / 13.0 - 0.5).unwrap();
        let mut ar = DistMatrix::zeros(&grid, m, k, nb, nb).unwrap();
        pdgemm(&grid, Trans::No, Trans::No, 1.0, &a, &r, 0.0, &mut ar).unwrap();
        let mut pr = with_rows(&grid, &ar, n).unwrap();
        scalapack_ft::qr::pdgels(&grid, &mut a.clone(), &mut pr).unwrap();
        let mut plus_null = xb.clone();
        for i in 0..plus_null.local().len() {
            plus_null.local_mut()[i] += 1e-3 * (r.local()[i] - pr.local()[i]);
        }
        let mut residual = b.clone();
        pdgemm(&grid, Trans::No, Trans::No, -1.0, &a, &plus_null, 1.0, &mut residual).unwrap();
        assert!(one_norm(&grid, &residual).unwrap() < 1e-12, "A·z is not 0");
        let bad = lstsq_residual(&grid, &a, &plus_null, &b).unwrap();
        assert!(bad > 1e3 * good.max(1.0), "with a null-space part {bad}, solution {good}");
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
