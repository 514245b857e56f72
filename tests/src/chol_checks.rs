//! Cholesky (`pdpotrf`) checks on a real process grid, driven by
//! `tests/tests/chol.rs` (and usable by hand). Started outside MPI, it
//! relaunches itself under `mpiexec` with P·Q ranks and a hard timeout.
//!
//! ```text
//! chol-checks check  --grid PxQ [--seed S] [--timeout S] CASE...   CASE = N,NB
//! chol-checks errors --grid PxQ [--timeout S]
//! ```
//!
//! `check` factors each case's SPD matrix with UPLO = L and with UPLO = U
//! and prints (grid rank 0) `CASE n=.. nb=.. lower=.. upper=.. lapack=same|differ|-
//! other_triangle=kept|CHANGED ok|FAIL`: the residuals
//! ‖A − L·Lᵀ‖₁/(‖A‖₁·N·eps) and ‖A − Uᵀ·U‖₁/(‖A‖₁·N·eps), the comparison
//! of L with LAPACK DPOTRF on the gathered matrix (small cases), and
//! whether the triangle that is not referenced (filled with a marker) came
//! back untouched, then the solve residuals ‖A·X−B‖₁/(‖A‖₁·‖X‖₁·N·eps) of
//! `pdpotrs` with both factors and of `pdposv` (3 right-hand sides).
//! `errors` runs matrices that are not positive definite and bad input: every rank prints `ERROR case=.. rank=.. info=.. err=..`,
//! and rank 0 `AGREE case=.. same=true|false info=..`.

use blacs_ft::launch::{inside_mpi, relaunch, write_status, Relaunch};
use blacs_ft::{Grid, GridOptions, Joined, Runtime, Scope};
use scalapack_ft::blas::{self, Uplo};
use scalapack_ft::chol::{cholesky_residual, pdposv, pdpotrf, pdpotrs};
use scalapack_ft::generate::{Generator, MatrixKind};
use scalapack_ft::lu::solve_residual;
use scalapack_ft::{DistMatrix, Error};
use std::time::Duration;

/// Largest N² for the comparison with LAPACK on one rank.
const COMPARE_LIMIT: usize = 120_000;
/// What the triangle that is not referenced holds.
const MARKER: f64 = -7.25;

#[derive(clap::Parser)]
struct Args {
    /// check | errors
    mode: String,
    /// Cases of `check`: `N,NB`.
    cases: Vec<String>,
    /// Process grid PxQ.
    #[arg(long, default_value = "1x1", value_parser = ftla_tests::parse_grid)]
    grid: (i32, i32),
    /// Seed of the generated matrices.
    #[arg(long, default_value_t = 2024)]
    seed: u64,
    /// Hard timeout of the job, seconds.
    #[arg(long, default_value_t = 120)]
    timeout: u64,
}

fn main() {
    let a = <Args as clap::Parser>::parse();
    let (p, q) = a.grid;
    if !inside_mpi() {
        relaunch(&Relaunch {
            nprocs: (p * q) as u32,
            timeout: Some(Duration::from_secs(a.timeout)),
            ulfm: true,
            cof: None,
            program: None,
            grid: None,
        });
    }
    blas::use_single_thread();
    let mut rt = Runtime::init().unwrap_or_else(|e| {
        eprintln!("chol-checks: MPI start-up failed: {e}");
        std::process::exit(1)
    });
    let grid = match rt.world_dup().and_then(|c| Grid::join(&mut rt, c, p, q, GridOptions::without_kills())) {
        Ok(Joined::Active(g)) => g,
        Ok(Joined::Released) => rt.finish(0),
        Err(e) => {
            println!("JOIN-ERROR {e}");
            rt.finish(1)
        }
    };
    let outcome = match a.mode.as_str() {
        "check" => check(&grid, &a),
        "errors" => errors(&grid),
        other => Err(format!("unknown mode {other}")),
    };
    match &outcome {
        Ok(summary) => println!("RANK {} ok {summary}", grid.rank()),
        Err(e) => println!("RANK {} failed: {e}", grid.rank()),
    }
    if grid.rank() == 0 {
        write_status(outcome.is_ok(), &outcome.clone().unwrap_or_else(|e| e));
    }
    let ok = outcome.is_ok();
    grid.close();
    rt.finish(if ok { 0 } else { 1 })
}

fn s(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The SPD matrix of a case with `MARKER` in the triangle `uplo` does not
/// reference (the strict other one).
fn spd(grid: &Grid, gen: &Generator, nb: usize, uplo: Uplo) -> Result<DistMatrix, String> {
    let n = gen.n();
    DistMatrix::from_fn(grid, n, n, nb, nb, |i, j| {
        let unused = match uplo {
            Uplo::Lower => i < j,
            Uplo::Upper => i > j,
        };
        if unused {
            MARKER
        } else {
            gen.element(i, j)
        }
    })
    .map_err(s)
}

/// Whether the strict triangle `uplo` does not reference still holds the
/// marker, on every process.
fn other_triangle_kept(grid: &Grid, f: &DistMatrix, uplo: Uplo) -> Result<bool, String> {
    let mut changed = [0i64];
    for lj in 0..f.local_cols() {
        let j = f.global_col(lj);
        for li in 0..f.local_rows() {
            let i = f.global_row(li);
            let unused = match uplo {
                Uplo::Lower => i < j,
                Uplo::Upper => i > j,
            };
            if unused && f.local()[li + lj * f.lld()] != MARKER {
                changed[0] = 1;
            }
        }
    }
    grid.max(Scope::All, &mut changed).map_err(s)?;
    Ok(changed[0] == 0)
}

fn check(grid: &Grid, a: &Args) -> Result<String, String> {
    if a.cases.is_empty() {
        return Err("no cases given".into());
    }
    let mut failed = Vec::new();
    for case in &a.cases {
        let parts: Vec<&str> = case.split(',').collect();
        let num = |i: usize| parts.get(i).and_then(|p| p.parse::<usize>().ok()).ok_or(format!("bad case {case}"));
        let (n, nb) = (num(0)?, num(1)?);
        let gen = Generator::new(MatrixKind::Spd, a.seed, n, n).map_err(s)?;
        let mut residuals = Vec::new();
        let mut solves = Vec::new();
        let mut kept = true;
        let mut lapack = "-";
        // The whole symmetric A and three right-hand sides.
        let full = DistMatrix::from_fn(grid, n, n, nb, nb, |i, j| gen.element(i, j)).map_err(s)?;
        let b = DistMatrix::from_fn(grid, n, 3, nb, nb, |i, j| ((i * 7 + j * 13) % 17) as f64 - 8.0).map_err(s)?;
        for uplo in [Uplo::Lower, Uplo::Upper] {
            let a0 = spd(grid, &gen, nb, uplo)?;
            let mut f = a0.clone();
            pdpotrf(grid, uplo, &mut f).map_err(s)?;
            residuals.push(cholesky_residual(grid, uplo, &a0, &f).map_err(s)?);
            kept &= other_triangle_kept(grid, &f, uplo)?;
            if uplo == Uplo::Lower {
                lapack = compare_with_lapack(grid, &a0, &f)?;
            }
            let mut x = b.clone();
            pdpotrs(grid, uplo, &f, &mut x).map_err(s)?;
            solves.push(solve_residual(grid, &full, &x, &b).map_err(s)?);
        }
        // The driver: factor and solve in one call.
        let (mut f, mut x) = (spd(grid, &gen, nb, Uplo::Lower)?, b.clone());
        pdposv(grid, Uplo::Lower, &mut f, &mut x).map_err(s)?;
        solves.push(solve_residual(grid, &full, &x, &b).map_err(s)?);
        let ok = residuals.iter().chain(&solves).all(|&r| r < 16.0) && kept && lapack != "differ";
        if grid.rank() == 0 {
            println!(
                "CASE n={n} nb={nb} lower={:.3e} upper={:.3e} solve_lower={:.3e} solve_upper={:.3e} posv={:.3e} \
                 lapack={lapack} other_triangle={} {}",
                residuals[0],
                residuals[1],
                solves[0],
                solves[1],
                solves[2],
                if kept { "kept" } else { "CHANGED" },
                if ok { "ok" } else { "FAIL" }
            );
        }
        if !ok {
            failed.push(case.clone());
        }
    }
    if failed.is_empty() {
        Ok(format!("{} case(s)", a.cases.len()))
    } else {
        Err(format!("failed: {}", failed.join(" ")))
    }
}

/// L against LAPACK DPOTRF on the gathered matrix (small cases): `same`
/// when every element of the lower triangle agrees to rounding.
fn compare_with_lapack(grid: &Grid, a0: &DistMatrix, f: &DistMatrix) -> Result<&'static str, String> {
    let n = a0.n();
    if n * n > COMPARE_LIMIT || n == 0 {
        return Ok("-");
    }
    let full = a0.gather(grid, 0).map_err(s)?;
    let fact = f.gather(grid, 0).map_err(s)?;
    let mut verdict = [0i64];
    if let (Some(mut full), Some(fact)) = (full, fact) {
        let info = blas::dpotrf(Uplo::Lower, n, &mut full, n);
        let scale = full.iter().fold(1.0f64, |x, v| x.max(v.abs()));
        let close = (0..n).all(|j| (j..n).all(|i| (full[i + j * n] - fact[i + j * n]).abs() <= 1e-10 * scale));
        verdict[0] = if info == 0 && close { 1 } else { 2 };
    }
    grid.broadcast(Scope::All, &mut verdict, 0).map_err(s)?;
    Ok(if verdict[0] == 1 { "same" } else { "differ" })
}

fn errors(grid: &Grid) -> Result<String, String> {
    let mut bad = Vec::new();
    let mut expect = |case: &str, result: Result<(), Error>, info: i32| -> Result<(), String> {
        if !ftla_tests::report_agreed(grid, case, result.map_err(|e| (e.info(), e.to_string())), info)? {
            bad.push(case.to_string());
        }
        Ok(())
    };
    let n = 40;
    let gen = Generator::new(MatrixKind::Spd, 5, n, n).map_err(s)?;
    // Not positive definite: a negative diagonal element inside a block,
    // at a block's start, the last one (INFO = its order, 1-based), on
    // both triangles.
    for (name, at, nb) in [("minor-mid", 9usize, 4usize), ("minor-start", 12, 4), ("minor-last", 39, 6)] {
        for uplo in [Uplo::Lower, Uplo::Upper] {
            let mut a =
                DistMatrix::from_fn(
                    grid,
                    n,
                    n,
                    nb,
                    nb,
                    |i, j| {
                        if i == at && j == at {
                            -1.0
                        } else {
                            gen.element(i, j)
                        }
                    },
                )
                .map_err(s)?;
            let case = format!("{name}-{}", if uplo == Uplo::Lower { "L" } else { "U" });
            expect(&case, pdpotrf(grid, uplo, &mut a), at as i32 + 1)?;
        }
    }
    // Not square (INFO = -2), MB ≠ NB (-606).
    let mut a = DistMatrix::zeros(grid, 8, 12, 4, 4).map_err(s)?;
    expect("square", pdpotrf(grid, Uplo::Lower, &mut a), -2)?;
    let mut a = DistMatrix::zeros(grid, 8, 8, 2, 4).map_err(s)?;
    expect("mbnb", pdpotrf(grid, Uplo::Lower, &mut a), -606)?;
    // A NaN in the referenced triangle is refused (-3); in the other one
    // it is not read.
    let nan_at = |i0: usize, j0: usize| {
        DistMatrix::from_fn(grid, n, n, 4, 4, |i, j| if (i, j) == (i0, j0) { f64::NAN } else { gen.element(i, j) })
    };
    let mut a = nan_at(30, 7).map_err(s)?;
    expect("nan-lower", pdpotrf(grid, Uplo::Lower, &mut a), -3)?;
    let mut a = nan_at(7, 30).map_err(s)?;
    expect("nan-upper-not-read", pdpotrf(grid, Uplo::Lower, &mut a), 0)?;
    // The solve: B with other rows than N (-1103), MB_B ≠ NB_A (-1106).
    let mut f = DistMatrix::from_fn(grid, n, n, 4, 4, |i, j| gen.element(i, j)).map_err(s)?;
    pdpotrf(grid, Uplo::Lower, &mut f).map_err(s)?;
    let mut b = DistMatrix::zeros(grid, n - 1, 2, 4, 4).map_err(s)?;
    expect("brows", pdpotrs(grid, Uplo::Lower, &f, &mut b), -1103)?;
    let mut b = DistMatrix::zeros(grid, n, 2, 8, 4).map_err(s)?;
    expect("bmb", pdpotrs(grid, Uplo::Upper, &f, &mut b), -1106)?;
    // pdposv of a matrix that is not positive definite: its INFO.
    let mut a =
        DistMatrix::from_fn(grid, n, n, 4, 4, |i, j| if i == j { -(i as f64) - 1.0 } else { 0.0 }).map_err(s)?;
    let mut b = DistMatrix::zeros(grid, n, 2, 4, 4).map_err(s)?;
    expect("posv-minor", pdposv(grid, Uplo::Lower, &mut a, &mut b), 1)?;
    // pdposv reports A's faults at its own positions (A is argument 4).
    let mut a = nan_at(30, 7).map_err(s)?;
    let mut b = DistMatrix::zeros(grid, n, 2, 4, 4).map_err(s)?;
    expect("posv-nan", pdposv(grid, Uplo::Lower, &mut a, &mut b), -4)?;
    // An empty matrix: nothing to do.
    let mut a = DistMatrix::zeros(grid, 0, 0, 4, 4).map_err(s)?;
    expect("empty", pdpotrf(grid, Uplo::Lower, &mut a), 0)?;
    if bad.is_empty() {
        Ok("errors agreed".into())
    } else {
        Err(format!("wrong or disagreeing: {}", bad.join(" ")))
    }
}
