//! Fault-tolerant least squares on protected QR factors, driven by
//! `tests/tests/ft_lstsq.rs`: in a resilient region on a P×Q grid, an
//! M×N least-squares problem with NRHS right-hand sides is solved
//! through protected factors — `--mode gels`: `pdgels_ft`; `--mode
//! apart`: `QrFactors::factor`, then `pdormqr_ft` (Qᵀ·B), then
//! `upper_solve_ft`; `--mode q`: `QrFactors::factor`, then `pdormqr_ft`
//! applying Q — while processes are SIGKILLed at the points of
//! `FTLA_KILL` (`R@qr:…`, `R@gels:…`, `R@ormqr:…`, `R@trsm:…`) and, with
//! `--kill-between R,...`, grid ranks R die by their own SIGKILL between the
//! factorization and the solve (with `--kill-after R`, after the solve,
//! and the same factors solve the problem again). X is then compared with a plain `pdgels`
//! of the same problem on the same grid (Q·B with a plain `pdormqr`),
//! each process its own rows (a replacement's included), and on rank 0
//! with LAPACK's `dgels` of the gathered problem. Started outside MPI,
//! it relaunches itself under `mpiexec` with a hard timeout.
//!
//! ```text
//! ft-lstsq [--grid PxQ] [--m M] [--n N] [--nb NB] [--mb-b MB] [--nb-b NB] [--nrhs K] [--mode gels|apart|q]
//!          [--kill-between R,...] [--kill-after R] [--spares S] [--cof DIR] [--timeout S]
//! ```
//! Prints per process `RANK r[ replacement] recoveries=N plain=ok|DIFF(e)[
//! lost=BOOL]` (with `--kill-after`: whether the first solve's B is
//! marked lost there)
//! and on rank 0 `LAPACK ok|DIFF(e)` (least squares); for M ≥ N also
//! `FACTORS r ok|DIFF(e)` (the protected factors, through
//! `QrFactors::to_matrix`, and tau against the plain routine's); or per
//! process `RANK r error: ERROR (INFO i)` for an agreed error.

use blacs_ft::launch::{write_outcome, CofRelaunch, Outcome};
use blacs_ft::Grid;
use recovery::{kill_self, Region};
use scalapack_ft::blas::{self, Trans};
use scalapack_ft::qr::{pdgels, pdgeqrf, pdormqr};
use scalapack_ft::qr_ft::{pdgels_ft, pdormqr_ft, upper_solve_ft, FtOptions, FtReport, QrFactors};
use scalapack_ft::{DistMatrix, Error};

/// Fault-tolerant least squares checked against plain and LAPACK solves
/// (see the module documentation).
#[derive(clap::Parser)]
struct Args {
    /// The process grid.
    #[arg(long, default_value = "2x2", value_parser = ftla_tests::parse_grid)]
    grid: (i32, i32),
    /// Rows of A.
    #[arg(long, default_value_t = 200)]
    m: usize,
    /// Columns of A.
    #[arg(long, default_value_t = 130)]
    n: usize,
    /// Block size.
    #[arg(long, default_value_t = 16)]
    nb: usize,
    /// Right-hand sides.
    #[arg(long, default_value_t = 1)]
    nrhs: usize,
    /// `gels`: pdgels_ft; `apart`: QrFactors::factor, pdormqr_ft (Qᵀ),
    /// upper_solve_ft; `q`: QrFactors::factor, pdormqr_ft (Q·B, checked
    /// against the plain pdormqr).
    #[arg(long, default_value = "gels", value_parser = ["gels", "apart", "q"])]
    mode: String,
    /// B's row block size (NB by default; another one is an argument
    /// error).
    #[arg(long)]
    mb_b: Option<usize>,
    /// B's column block size (NB by default; any one is solved).
    #[arg(long)]
    nb_b: Option<usize>,
    /// `apart` and `q`: grid ranks that die between the factorization and
    /// the solve (comma-separated; in pdgels_ft, `R@gels:0:args` is that
    /// point).
    #[arg(long, value_delimiter = ',')]
    kill_between: Vec<i32>,
    /// `apart` only: a grid rank that dies after the solve; the same
    /// factors then solve the problem again into a new B.
    #[arg(long)]
    kill_after: Option<i32>,
    /// Hot spares.
    #[arg(long, default_value_t = 0)]
    spares: i32,
    /// Checkpoint-on-failure in this directory instead of repairs in place
    /// (one restart).
    #[arg(long)]
    cof: Option<std::path::PathBuf>,
    /// Hard timeout of the job, seconds.
    #[arg(long, default_value_t = 120)]
    timeout: u64,
}

/// A(i, j): full rank and well conditioned, the same on every process.
fn a_element(i: usize, j: usize) -> f64 {
    (if i == j { 3.0 } else { 0.0 }) + 1.0 / (1.0 + i as f64 + 2.0 * j as f64) + ((i * 7 + j * 13) % 11) as f64 * 0.01
}

/// B(i, j): not in A's range (a residual remains).
fn b_element(i: usize, j: usize) -> f64 {
    ((i * 5 + j * 3) % 17) as f64 / 17.0 - 0.5 + (j as f64 + 1.0) * 0.1
}

fn main() {
    let a = <Args as clap::Parser>::parse();
    let (p, q) = a.grid;
    let cof = a.cof.clone().map(|dir| CofRelaunch {
        dir,
        run_id: u64::from(std::process::id()) << 16 | 0x15,
        max_restarts: 1,
        resume: false,
        policy: "cof",
        epoch_base: 0,
        ..Default::default()
    });
    ftla_tests::relaunch_outside_mpi(p * q + a.spares, a.timeout, true, cof);
    let (rt, mut region) = ftla_tests::join_region("ft-lstsq", p, q);
    let outcome = scenario(&mut region, &a);
    let grid = region.into_grid();
    let (outcome, detail) = match outcome {
        Ok(line) => {
            println!("{line}");
            (Outcome::Ok, line)
        }
        Err(Ending::Checkpointed(epoch, detail)) => (Outcome::Checkpointed { epoch }, detail),
        Err(Ending::Failed(e)) => {
            println!("RANK {} failed: {e}", grid.rank());
            (Outcome::Failed, e)
        }
    };
    // (After a checkpoint, rank 0 may be the lost process: every survivor
    // reports it.)
    if grid.rank() == 0 || matches!(outcome, Outcome::Checkpointed { .. }) {
        write_outcome(outcome, &detail);
    }
    grid.close();
    rt.finish(outcome.exit_code())
}

/// The fault-tolerant solve of `a0` into `b` (one run of the region's
/// body; with `--kill-after`, into `b` then, after the loss, `again`),
/// counting the recoveries inside the calls; the protected factors it
/// made.
fn solve(
    region: &mut Region,
    args: &Args,
    (a0, b, again): (&DistMatrix, &mut DistMatrix, &mut DistMatrix),
    recoveries: &mut usize,
) -> Result<QrFactors, Error> {
    let opts = FtOptions { verify: true, ..FtOptions::default() };
    let rank = region.grid().rank();
    let kill_between = |region: &Region| {
        if args.kill_between.contains(&rank) && region.grid().replacement().is_none() {
            kill_self(&format!("grid rank {rank} between the factorization and the solve"));
        }
    };
    // The recoveries of a call, whose checksums must hold at its end.
    let counted = |r: &FtReport| match &r.check {
        Some(c) if !c.ok => Err(Error::Grid(blacs_ft::Error::Unrecoverable { reason: format!("checksums: {c:?}") })),
        _ => Ok(r.recoveries.len()),
    };
    if args.mode == "gels" {
        // (Between pdgels_ft's factorization and its solve, a kill is the
        // solve's first point: `R@gels:0:args`.)
        let (factors, report) = pdgels_ft(region, a0.clone(), b, &opts)?;
        *recoveries += counted(&report.factor)? + counted(&report.solve)?;
        return Ok(factors);
    }
    let (factors, report) = QrFactors::factor(region, a0.clone(), &opts)?;
    *recoveries += counted(&report)?;
    kill_between(region);
    if args.mode == "q" {
        *recoveries += counted(&pdormqr_ft(region, Trans::No, &factors, b, &opts)?)?;
    } else {
        *recoveries += counted(&pdormqr_ft(region, Trans::Yes, &factors, b, &opts)?)?;
        *recoveries += counted(&upper_solve_ft(region, &factors, b, &opts)?)?;
    }
    if let Some(after) = args.kill_after {
        if after == rank && region.grid().replacement().is_none() {
            kill_self(&format!("grid rank {rank} after the solve"));
        }
        *again = b_again(region.grid(), args)?;
        *recoveries += counted(&pdormqr_ft(region, Trans::Yes, &factors, again, &opts)?)?;
        *recoveries += counted(&upper_solve_ft(region, &factors, again, &opts)?)?;
    }
    Ok(factors)
}

/// How a job ends other than with its report.
enum Ending {
    /// Checkpoint-on-failure saved the survivors' state (the run's
    /// recoveries so far, and what it says): the job starts again.
    Checkpointed(u32, String),
    Failed(String),
}

impl From<Error> for Ending {
    fn from(e: Error) -> Ending {
        Ending::Failed(e.to_string())
    }
}

/// The fault-tolerant solve, then the plain and LAPACK references.
fn scenario(region: &mut Region, args: &Args) -> Result<String, Ending> {
    let (m, n, nb, nrhs) = (args.m, args.n, args.nb, args.nrhs);
    let a0 = DistMatrix::from_fn(region.grid(), m, n, nb, nb, a_element)?;
    let b0 = b_again(region.grid(), args)?;
    // (Outside the body: a re-run after a loss between calls finds a
    // survivor's B as the calls left it.)
    let mut b = b0.clone();
    let mut again = b0.clone();
    let mut recoveries = 0;
    let solved = region
        .run(|region| {
            // (A process failure is the region's to repair; any other
            // error is the program's answer.)
            match solve(region, args, (&a0, &mut b, &mut again), &mut recoveries) {
                Err(Error::Grid(e)) => Err(e),
                r => Ok(r),
            }
        })
        .map_err(|e| match e {
            blacs_ft::Error::Checkpointed { epoch, .. } => Ending::Checkpointed(epoch, e.to_string()),
            e => Ending::Failed(e.to_string()),
        })?;
    let factors = match solved {
        Ok(f) => f,
        Err(e) => return Ok(format!("RANK {} error: {e} (INFO {})", region.grid().rank(), e.info())),
    };
    // The protected factors as a plain matrix (a replacement's part
    // rebuilt), and tau.
    let (kept, kept_tau) = (factors.to_matrix(region)?, factors.tau());
    let grid = region.grid();
    // (With `--kill-after`, B's part on the replacement went with the
    // process it replaced: the second solve's result is checked.)
    let lost = b.is_lost();
    let b = if args.kill_after.is_some() { again } else { b };
    // The plain solve of the same problem, on the same grid (Q·B: all
    // rows; least squares: X's).
    let (mut a1, mut b1) = (a0.clone(), b0.clone());
    let (compared, tau) = if args.mode == "q" {
        let tau = pdgeqrf_tau(grid, &mut a1)?;
        pdormqr(grid, Trans::No, &a1, &tau, m.min(n), &mut b1)?;
        (m, tau)
    } else {
        (n, pdgels(grid, &mut a1, &mut b1)?)
    };
    let scale = 1.0 + b1.local().iter().fold(0.0f64, |x, v| x.max(v.abs()));
    let mut diff = 0.0f64;
    for lj in 0..b.local_cols() {
        for li in 0..b.local_rows() {
            if b.global_row(li) < compared {
                diff = diff.max((b.local()[li + lj * b.lld()] - b1.local()[li + lj * b1.lld()]).abs());
            }
        }
    }
    let tag = if grid.replacement().is_some() { " replacement" } else { "" };
    let verdict = |d: f64| if d <= 1e-10 * scale { "ok".to_string() } else { format!("DIFF({d:e})") };
    let mut line = format!("RANK {}{tag} recoveries={recoveries} plain={}", grid.rank(), verdict(diff));
    if args.kill_after.is_some() {
        line.push_str(&format!(" lost={lost}"));
    }
    if m >= n {
        // The QR factors, the plain routine's in A (for M < N the plain
        // pdgels leaves the LQ form, the transpose of the protected QR of
        // Aᵀ: not compared).
        let big = 1.0 + a1.local().iter().fold(0.0f64, |x, v| x.max(v.abs()));
        let mut d = kept_tau.iter().zip(&tau).fold(0.0f64, |x, (p, q)| x.max((p - q).abs()));
        for lj in 0..a1.local_cols() {
            for li in 0..a1.local_rows() {
                d = d.max((kept.local()[li + lj * kept.lld()] - a1.local()[li + lj * a1.lld()]).abs());
            }
        }
        let factors = if d <= 1e-10 * big { "ok".to_string() } else { format!("DIFF({d:e})") };
        line.push_str(&format!("\nFACTORS {} {factors}", grid.rank()));
    }
    // LAPACK's dgels of the gathered problem on rank 0.
    let (fa, fb, fx) = (a0.gather(grid, 0)?, b0.gather(grid, 0)?, b.gather(grid, 0)?);
    if let (Some(mut fa), Some(mut fb), Some(fx), true) = (fa, fb, fx, args.mode != "q") {
        let ldb = m.max(n);
        let info = blas::dgels(m, n, nrhs, &mut fa, m, &mut fb, ldb);
        let mut d = 0.0f64;
        let mut big = 1.0f64;
        for j in 0..nrhs {
            for i in 0..n {
                d = d.max((fx[i + j * ldb] - fb[i + j * ldb]).abs());
                big = big.max(fb[i + j * ldb].abs());
            }
        }
        let lapack = if info == 0 && d <= 1e-10 * big { "ok".to_string() } else { format!("DIFF({d:e}, info {info})") };
        line.push_str(&format!("\nLAPACK {lapack}"));
    }
    Ok(line)
}

/// The right-hand sides, as the program makes them: max(M, N) rows for
/// least squares (rows M.. of a minimum-norm problem's B are not read),
/// M for Q·B; in blocks of `--mb-b` × `--nb-b`.
fn b_again(grid: &Grid, args: &Args) -> Result<DistMatrix, Error> {
    let (mb_b, nb_b) = (args.mb_b.unwrap_or(args.nb), args.nb_b.unwrap_or(args.nb));
    let rows = if args.mode == "q" { args.m } else { args.m.max(args.n) };
    DistMatrix::from_fn(grid, rows, args.nrhs, mb_b, nb_b, |i, j| if i < args.m { b_element(i, j) } else { 0.0 })
}

/// The plain QR of `a` in place, and its tau.
fn pdgeqrf_tau(grid: &Grid, a: &mut DistMatrix) -> Result<Vec<f64>, Error> {
    let mut tau = Vec::new();
    pdgeqrf(grid, a, &mut tau)?;
    Ok(tau)
}
