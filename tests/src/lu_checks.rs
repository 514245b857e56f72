//! LU checks and timing on a real process grid, driven by `tests/tests/lu.rs`
//! (and usable by hand). Started outside MPI, it relaunches itself under
//! `mpiexec` with P·Q ranks and a hard timeout.
//!
//! ```text
//! lu-checks check  --grid PxQ [--panel-width W] [--seed S] [--timeout S] CASE...
//!     CASE = M,N,NB[,KIND]   KIND: uniform (default) | diagdom | cond
//! lu-checks errors --grid PxQ [--panel-width W] [--timeout S]
//! lu-checks bench  --grid PxQ --n N --nb NB [--panel-width W] [--reps R] [--seed S] [--no-check] [--timeout S]
//! lu-checks ft     --grid PxQ [--seed S] [--timeout S] CASE...
//! ```
//!
//! `check` factors each case with `pdgetrf`, prints (grid rank 0)
//! `CASE m=.. n=.. nb=.. kind=.. lu_residual=.. solve_residual=..
//! trans_residual=.. pivots=same|differ|- ok|FAIL`: the solve residuals are
//! for `pdgetrs` (NoTrans / Trans, 3 right-hand sides, square cases only);
//! `pivots` compares with LAPACK DGETRF on the gathered matrix (small cases).
//! `errors` runs bad inputs and singular matrices: every rank prints
//! `ERROR case=.. rank=.. info=.. err=..`, and rank 0 prints
//! `AGREE case=.. same=true|false info=..` after comparing all ranks' errors.
//! `bench` prints `BENCH grid=PxQ n=.. nb=.. time_s=.. gflops=.. residual=..`
//! (time: the slowest rank, best of the repetitions; flops 2N³/3).
//! `ft` factors each case with `pdgetrf_ft` (failure-free, checksums
//! verified) and with `pdgetrf`, and prints `FTCASE m=.. n=.. nb=..
//! kind=.. pivots=same|differ factors_differ_by=.. lu_residual=..
//! checksums=ok|MISMATCH ok|FAIL`; then singular matrices and bad input
//! through `pdgetrf_ft`, reported as `errors` does (`ERROR`/`AGREE` lines).
//! `--panel-width` sets [`LuOptions::row_panel_width`] (1×Q grids only).

use blacs_ft::launch::{inside_mpi, relaunch, write_status, Relaunch};
use blacs_ft::{Grid, GridOptions, Joined, Runtime, Scope};
use recovery::Region;
use scalapack_ft::blas::{self, Trans};
use scalapack_ft::generate::{Generator, MatrixKind};
use scalapack_ft::lu::{lu_residual, pdgetrf, pdgetrf_with, pdgetrs, solve_residual, LuOptions, Transpose};
use scalapack_ft::lu_ft::{pdgetrf_ft, FtOptions};
use scalapack_ft::pblas::pdgemm;
use scalapack_ft::{DistMatrix, Error};
use std::time::Duration;

/// Largest m·n for the comparison with LAPACK on one rank.
const COMPARE_LIMIT: usize = 120_000;

/// LU checks and timing (see the module documentation).
#[derive(clap::Parser)]
struct Args {
    /// check | errors | bench
    mode: String,
    /// Cases of `check`: `M,N,NB[,KIND]`.
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
    /// `bench`: the order of the matrix.
    #[arg(long, default_value_t = 1024)]
    n: usize,
    /// Block size.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    nb: u64,
    /// `bench`: repetitions (the best is reported).
    #[arg(long, default_value_t = 1)]
    reps: usize,
    /// `bench`: skip the residual.
    #[arg(long)]
    no_check: bool,
    /// LuOptions::row_panel_width (1×Q grids only).
    #[arg(long)]
    panel_width: Option<usize>,
}

impl Args {
    /// The LU options of the run.
    fn opts(&self) -> LuOptions {
        let mut opts = LuOptions::default();
        if let Some(w) = self.panel_width {
            opts.row_panel_width = w;
        }
        opts
    }
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
    let mut rt = match Runtime::init() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("lu-checks: MPI start-up failed: {e}");
            std::process::exit(1);
        }
    };
    let comm = match rt.world_dup() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("lu-checks: {e}");
            rt.finish(1)
        }
    };
    let grid = match Grid::join(&mut rt, comm, p, q, GridOptions::without_kills()) {
        Ok(Joined::Active(g)) => g,
        Ok(Joined::Released) => rt.finish(0),
        Err(e) => {
            println!("JOIN-ERROR {e}");
            rt.finish(1)
        }
    };
    let (outcome, grid) = match a.mode.as_str() {
        "ft" => match Region::new(grid) {
            Ok(mut region) => {
                let outcome = ft(&mut region, &a);
                (outcome, region.into_grid())
            }
            Err(e) => {
                println!("REGION-ERROR {e}");
                rt.finish(1)
            }
        },
        mode => (run_mode(&grid, &a, mode), grid),
    };
    let ok = outcome.is_ok();
    match &outcome {
        Ok(summary) => println!("RANK {} ok {summary}", grid.rank()),
        Err(e) => println!("RANK {} failed: {e}", grid.rank()),
    }
    if grid.rank() == 0 {
        write_status(ok, &outcome.clone().unwrap_or_else(|e| e));
    }
    grid.close();
    rt.finish(if ok { 0 } else { 1 })
}

/// The modes on a plain grid.
fn run_mode(grid: &Grid, a: &Args, mode: &str) -> Result<String, String> {
    match mode {
        "check" => check(grid, a),
        "errors" => errors(grid, &a.opts()),
        "bench" => bench(grid, a),
        other => Err(format!("unknown mode {other}")),
    }
}

/// `ft`: pdgetrf_ft against pdgetrf, then its singular and bad inputs.
fn ft(region: &mut Region, a: &Args) -> Result<String, String> {
    let verify = FtOptions { verify: true, ..FtOptions::default() };
    let mut failed = Vec::new();
    for case in &a.cases {
        let parts: Vec<&str> = case.split(',').collect();
        let num = |i: usize| parts.get(i).and_then(|p| p.parse::<usize>().ok()).ok_or(format!("bad case {case}"));
        let (m, n, nb) = (num(0)?, num(1)?, num(2)?);
        let kind_name = parts.get(3).copied().unwrap_or("uniform");
        let gen = Generator::new(kind_of(kind_name)?, a.seed, m, n).map_err(s)?;
        let a0 = generate(region.grid(), &gen, nb, false)?;
        let (mut plain, mut plain_ipiv) = (a0.clone(), Vec::new());
        pdgetrf(region.grid(), &mut plain, &mut plain_ipiv).map_err(s)?;
        let (mut f, mut ipiv) = (a0.clone(), Vec::new());
        let report = pdgetrf_ft(region, &mut f, &mut ipiv, &verify).map_err(s)?;
        let grid = region.grid();
        let checks = report.check.is_some_and(|c| c.ok);
        // The same pivots; the factors equal up to rounding (the checksum
        // columns ride in the same DGEMM calls, which may block them
        // differently).
        let mut worst = [
            f.local().iter().zip(plain.local()).fold(0.0f64, |w, (x, y)| w.max((x - y).abs())),
            if checks { 0.0 } else { 1.0 },
        ];
        grid.max(Scope::All, &mut worst).map_err(s)?;
        let same = ipiv == plain_ipiv && ftla_tests::same_everywhere(grid, ftla_tests::digest(&format!("{ipiv:?}")))?;
        let res = lu_residual(grid, &a0, &f, &ipiv).map_err(s)?;
        let ok = same && worst[0] < 1e-10 && worst[1] == 0.0 && res < 16.0;
        if grid.rank() == 0 {
            println!(
                "FTCASE m={m} n={n} nb={nb} kind={kind_name} pivots={} factors_differ_by={:.1e} lu_residual={res:.3e} \
                 checksums={} {}",
                if same { "same" } else { "differ" },
                worst[0],
                if worst[1] == 0.0 { "ok" } else { "MISMATCH" },
                if ok { "ok" } else { "FAIL" }
            );
        }
        if !ok {
            failed.push(case.clone());
        }
    }
    // Singular: completed, the first zero pivot reported the same way on
    // every rank, as pdgetrf does.
    let gen = Generator::new(MatrixKind::Uniform, 7, 24, 24).map_err(s)?;
    for (name, zero_col, nb) in
        [("ft-singular-mid", 9usize, 4usize), ("ft-singular-start", 12, 4), ("ft-singular-last", 23, 5)]
    {
        let az =
            DistMatrix::from_fn(
                region.grid(),
                24,
                24,
                nb,
                nb,
                |i, j| if j == zero_col { 0.0 } else { gen.element(i, j) },
            )
            .map_err(s)?;
        let (mut f, mut ipiv) = (az.clone(), Vec::new());
        let r = pdgetrf_ft(region, &mut f, &mut ipiv, &verify).map(|_| ());
        let grid = region.grid();
        let res = lu_residual(grid, &az, &f, &ipiv).map_err(s)?;
        if grid.rank() == 0 {
            println!("SINGULAR case={name} lu_residual={res:.3e}");
        }
        if res >= 16.0 || !report(grid, name, r, zero_col as i32 + 1)? {
            failed.push(name.to_string());
        }
    }
    // Bad input: MB ≠ NB (-606), a NaN (-3).
    let mut ipiv = Vec::new();
    let mut bad = DistMatrix::zeros(region.grid(), 16, 16, 2, 4).map_err(s)?;
    let r = pdgetrf_ft(region, &mut bad, &mut ipiv, &FtOptions::default()).map(|_| ());
    if !report(region.grid(), "ft-mbnb", r, -606)? {
        failed.push("ft-mbnb".into());
    }
    let mut nan =
        DistMatrix::from_fn(region.grid(), 16, 16, 4, 4, |i, j| if (i, j) == (5, 7) { f64::NAN } else { 1.0 })
            .map_err(s)?;
    let r = pdgetrf_ft(region, &mut nan, &mut ipiv, &FtOptions::default()).map(|_| ());
    if !report(region.grid(), "ft-nan", r, -3)? {
        failed.push("ft-nan".into());
    }
    if failed.is_empty() {
        Ok(format!("{} cases, singular and bad input as expected", a.cases.len()))
    } else {
        Err(format!("failed: {}", failed.join(" ")))
    }
}

fn s<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// A distributed matrix from the generator (element (i, j), or (j, i)
/// for the transpose).
fn generate(grid: &Grid, gen: &Generator, nb: usize, transpose: bool) -> Result<DistMatrix, String> {
    let (m, n) = if transpose { (gen.n(), gen.m()) } else { (gen.m(), gen.n()) };
    DistMatrix::from_fn(grid, m, n, nb, nb, |i, j| if transpose { gen.element(j, i) } else { gen.element(i, j) })
        .map_err(s)
}

fn kind_of(name: &str) -> Result<MatrixKind, String> {
    match name {
        "uniform" => Ok(MatrixKind::Uniform),
        "diagdom" => Ok(MatrixKind::DiagonallyDominant),
        "cond" => Ok(MatrixKind::Conditioned { cond: 1e6 }),
        other => Err(format!("unknown matrix kind {other}")),
    }
}

/// A 64-bit digest of a string (FNV-1a).
fn check(grid: &Grid, a: &Args) -> Result<String, String> {
    if a.cases.is_empty() {
        return Err("no cases given".into());
    }
    let mut failed = Vec::new();
    for case in &a.cases {
        match check_case(grid, case, a.seed, &a.opts()) {
            Ok(true) => {}
            Ok(false) => failed.push(case.clone()),
            Err(e) => return Err(format!("case {case}: {e}")),
        }
    }
    if failed.is_empty() {
        Ok(format!("{} cases", a.cases.len()))
    } else {
        Err(format!("failed cases: {}", failed.join(" ")))
    }
}

fn check_case(grid: &Grid, case: &str, seed: u64, opts: &LuOptions) -> Result<bool, String> {
    let parts: Vec<&str> = case.split(',').collect();
    if parts.len() < 3 {
        return Err("a case is M,N,NB[,KIND]".into());
    }
    let num = |i: usize| parts[i].parse::<usize>().map_err(|_| format!("bad number {}", parts[i]));
    let (m, n, nb) = (num(0)?, num(1)?, num(2)?);
    let kind_name = parts.get(3).copied().unwrap_or("uniform");
    let kind = kind_of(kind_name)?;
    let gen = Generator::new(kind, seed, m, n).map_err(s)?;
    let a0 = generate(grid, &gen, nb, false)?;
    let mut lu = a0.clone();
    let mut ipiv = Vec::new();
    let factored = pdgetrf_with(grid, &mut lu, &mut ipiv, opts);
    if let Err(e) = &factored {
        if grid.rank() == 0 {
            println!("CASE m={m} n={n} nb={nb} kind={kind_name} error={e} FAIL");
        }
        return Ok(false);
    }
    let piv_digest = ftla_tests::digest(&format!("{ipiv:?}"));
    let pivots_replicated = ftla_tests::same_everywhere(grid, piv_digest)?;
    let lres = lu_residual(grid, &a0, &lu, &ipiv).map_err(s)?;
    let (mut sres, mut tres) = (None, None);
    if m == n {
        let nrhs = 3;
        let bgen = Generator::new(MatrixKind::Uniform, seed + 1, n, nrhs).map_err(s)?;
        let b = generate(grid, &bgen, nb, false)?;
        let mut x = b.clone();
        pdgetrs(grid, Transpose::NoTrans, &lu, &ipiv, &mut x).map_err(s)?;
        sres = Some(solve_residual(grid, &a0, &x, &b).map_err(s)?);
        let at = generate(grid, &gen, nb, true)?;
        let mut xt = b.clone();
        pdgetrs(grid, Transpose::Trans, &lu, &ipiv, &mut xt).map_err(s)?;
        tres = Some(solve_residual(grid, &at, &xt, &b).map_err(s)?);
    }
    let pivots = compare_with_lapack(grid, &a0, &lu, &ipiv)?;
    let good = |r: Option<f64>| r.is_none_or(|v| v < 16.0);
    let ok = pivots_replicated && lres < 16.0 && good(sres) && good(tres) && pivots != "differ";
    if grid.rank() == 0 {
        let f = |r: Option<f64>| r.map_or("-".to_string(), |v| format!("{v:.3e}"));
        println!(
            "CASE m={m} n={n} nb={nb} kind={kind_name} lu_residual={lres:.3e} solve_residual={} trans_residual={} \
             pivots={pivots}{} {}",
            f(sres),
            f(tres),
            if pivots_replicated { "" } else { " replicated=false" },
            if ok { "ok" } else { "FAIL" }
        );
    }
    Ok(ok)
}

/// For small matrices: LAPACK DGETRF on the gathered matrix must choose the
/// same pivots, and give the same factors up to rounding. "-" when skipped.
fn compare_with_lapack(grid: &Grid, a0: &DistMatrix, lu: &DistMatrix, ipiv: &[i64]) -> Result<&'static str, String> {
    let (m, n) = (a0.m(), a0.n());
    if m * n > COMPARE_LIMIT || m == 0 || n == 0 {
        return Ok("-");
    }
    let full = a0.gather(grid, 0).map_err(s)?;
    let fact = lu.gather(grid, 0).map_err(s)?;
    let mut verdict = [0i64];
    if let (Some(mut full), Some(fact)) = (full, fact) {
        let mut ip = vec![0; m.min(n)];
        blas::dgetrf(m, n, &mut full, m, &mut ip);
        let same_piv = ip.iter().zip(ipiv).all(|(&p, &q)| p as i64 - 1 == q);
        let scale = full.iter().fold(1.0f64, |x, v| x.max(v.abs()));
        let close = full.iter().zip(&fact).all(|(x, y)| (x - y).abs() <= 1e-8 * scale);
        verdict[0] = if same_piv && close { 1 } else { 2 };
    }
    grid.broadcast(Scope::All, &mut verdict, 0).map_err(s)?;
    Ok(if verdict[0] == 1 { "same" } else { "differ" })
}

/// What one bad-input case returned on this rank ([`ftla_tests::report_agreed`]).
fn report(grid: &Grid, case: &str, result: Result<(), Error>, want_info: i32) -> Result<bool, String> {
    ftla_tests::report_agreed(grid, case, result.map_err(|e| (e.info(), e.to_string())), want_info)
}

fn errors(grid: &Grid, opts: &LuOptions) -> Result<String, String> {
    let mut bad = Vec::new();
    let mut expect = |case: &str, result: Result<(), Error>, info: i32| -> Result<(), String> {
        if !report(grid, case, result, info)? {
            bad.push(case.to_string());
        }
        Ok(())
    };
    let gen = Generator::new(MatrixKind::Uniform, 7, 24, 24).map_err(s)?;
    let mut ipiv = Vec::new();

    // MB ≠ NB (ScaLAPACK: INFO = -606).
    let mut a = DistMatrix::zeros(grid, 8, 8, 2, 4).map_err(s)?;
    expect("mbnb", pdgetrf(grid, &mut a, &mut ipiv), -606)?;

    // A factored matrix to solve with.
    let a0 = generate(grid, &gen, 4, false)?;
    let mut lu = a0.clone();
    pdgetrf(grid, &mut lu, &mut ipiv).map_err(s)?;

    // B with the wrong number of rows (-1203), MB_B ≠ NB_A (-1206), IPIV too short (-8).
    let mut b = DistMatrix::zeros(grid, 23, 2, 4, 4).map_err(s)?;
    expect("brows", pdgetrs(grid, Transpose::NoTrans, &lu, &ipiv, &mut b), -1203)?;
    let mut b = DistMatrix::zeros(grid, 24, 2, 8, 4).map_err(s)?;
    expect("bmb", pdgetrs(grid, Transpose::Trans, &lu, &ipiv, &mut b), -1206)?;
    let mut b = DistMatrix::zeros(grid, 24, 2, 4, 4).map_err(s)?;
    expect("ipiv", pdgetrs(grid, Transpose::NoTrans, &lu, &ipiv[..20], &mut b), -8)?;

    // A·B with a non-conforming inner dimension (PDGEMM: DESCB entry M_, -1403).
    let x = DistMatrix::zeros(grid, 20, 2, 4, 4).map_err(s)?;
    let mut c = DistMatrix::zeros(grid, 24, 2, 4, 4).map_err(s)?;
    expect("gemm", pdgemm(grid, Trans::No, Trans::No, 1.0, &a0, &x, 0.0, &mut c), -1403)?;

    // Singular: a zero column inside a block, at a block start, the last
    // one; a zero matrix (first pivot). The factorization is completed and
    // still satisfies P·A = L·U.
    for (name, zero_col, nb) in [("singular-mid", 9usize, 4usize), ("singular-start", 12, 4), ("singular-last", 23, 5)]
    {
        let az = DistMatrix::from_fn(grid, 24, 24, nb, nb, |i, j| if j == zero_col { 0.0 } else { gen.element(i, j) })
            .map_err(s)?;
        let mut f = az.clone();
        let r = pdgetrf_with(grid, &mut f, &mut ipiv, opts);
        let res = lu_residual(grid, &az, &f, &ipiv).map_err(s)?;
        if grid.rank() == 0 {
            println!("SINGULAR case={name} lu_residual={res:.3e}");
        }
        if res >= 16.0 {
            bad.push(format!("{name}-residual"));
        }
        let mut expect = |case: &str, result: Result<(), Error>, info: i32| -> Result<(), String> {
            if !report(grid, case, result, info)? {
                bad.push(case.to_string());
            }
            Ok(())
        };
        expect(name, r, zero_col as i32 + 1)?;
    }
    let mut z = DistMatrix::zeros(grid, 7, 5, 3, 3).map_err(s)?;
    let r = pdgetrf(grid, &mut z, &mut ipiv);
    if ipiv != vec![0, 1, 2, 3, 4] {
        bad.push("zero-ipiv".into());
    }
    if !report(grid, "singular-zero", r, 1)? {
        bad.push("singular-zero".into());
    }
    if bad.is_empty() {
        Ok("all errors as expected".into())
    } else {
        Err(format!("unexpected results: {}", bad.join(" ")))
    }
}

fn bench(grid: &Grid, a: &Args) -> Result<String, String> {
    let (n, nb) = (a.n, a.nb as usize);
    let (p, q) = a.grid;
    let gen = Generator::new(MatrixKind::Uniform, a.seed, n, n).map_err(s)?;
    let a0 = generate(grid, &gen, nb, false)?;
    let mut best = f64::INFINITY;
    let mut times = Vec::new();
    let mut lu = a0.clone();
    let mut ipiv = Vec::new();
    for _ in 0..a.reps.max(1) {
        lu = a0.clone();
        grid.barrier(Scope::All).map_err(s)?;
        let t0 = Runtime::wtime();
        pdgetrf_with(grid, &mut lu, &mut ipiv, &a.opts()).map_err(s)?;
        let mut t = [Runtime::wtime() - t0];
        grid.max(Scope::All, &mut t).map_err(s)?;
        times.push(t[0]);
        best = best.min(t[0]);
    }
    let residual = if !a.no_check { lu_residual(grid, &a0, &lu, &ipiv).map_err(s)? } else { f64::NAN };
    let gflops = 2.0 / 3.0 * (n as f64).powi(3) / best / 1e9;
    if grid.rank() == 0 {
        let all: Vec<String> = times.iter().map(|t| format!("{t:.4}")).collect();
        println!(
            "BENCH grid={}x{} n={n} nb={nb} panel_width={} time_s={best:.4} gflops={gflops:.2} residual={residual:.3e} \
             times=[{}] kernel={} coretype={} threads=1",
            p,
            q,
            if p == 1 && q > 1 { (a.opts().row_panel_width / nb).max(1) * nb } else { nb },
            all.join(","),
            blas::kernel_name(),
            std::env::var("OPENBLAS_CORETYPE").unwrap_or_else(|_| "unset".into())
        );
    }
    if !a.no_check && residual >= 16.0 {
        return Err(format!("residual {residual:.3e} >= 16"));
    }
    Ok(format!("n={n} nb={nb} gflops={gflops:.2}"))
}
