//! Protected LU factors across real failures, driven by
//! `tests/tests/protected_factors.rs`: on a PxQ grid, `LuFactors::factor`
//! of A1, then of A2, with grid ranks SIGKILLed by their own hand between
//! the calls (`--kill R@1`: after the first factorization returned,
//! `R@2`: after the second). Then every process, replacements included,
//! takes both factor sets with `to_matrix` and compares its local blocks
//! and the pivots with a failure-free plain `pdgetrf` of the same matrices
//! in the same job. Started outside MPI, it relaunches itself under
//! `mpiexec` with a hard timeout. `--kill-in-second` kills inside the
//! second factorization too (its own protocol repairs it; the first
//! factors are rebuilt in its recovery). `--cof DIR` recovers by
//! checkpoint-on-failure instead: the job is started again, makes the
//! first factorization again and resumes the second from the files.
//!
//! Three ways to write the program, as applications do (`--style`):
//! * `region`: the calls and the program's own collective work in a body
//!   run by [`Region::run`], which repairs and runs it again on a process
//!   failure; the body makes both factorizations and returns the factors
//!   (a re-run gets the same factors back from the region). Its own
//!   collective between the factorizations is skipped while
//!   [`Region::is_joining`] (a replacement of a process lost inside the
//!   second one: the survivors are inside that call's recovery).
//! * `outside`: the first factorization before [`Region::run`], its
//!   factors kept outside the body; the rest in the body.
//! * `straight`: straight-line code; each library call and the program's
//!   collective is retried after [`Region::repair`] when it returns a
//!   process failure. A replacement runs the program from the top (the
//!   factorizations it missed return at once with hollow copies), so the
//!   program's own collective comes after the last factorization: one
//!   between them would be run again by a later replacement while the
//!   survivors are past it.
//!
//! ```text
//! protected-factors [--grid PxQ] [--style region|outside|straight] [--kill R@S]...
//!                   [--kill-in-second POINTS] [--n N] [--nb NB] [--spares S]
//!                   [--cof DIR] [--timeout S]
//! ```
//! Prints per process `RANK r[ replacement] holding=H1,H2 ipiv=V1,V2
//! factors=F1,F2`: H `whole|hollow|lost`, V `same|DIFF`, F `same`,
//! `DIFF(maxdiff)`, `input-lost(rank=R)` or the error.

use blacs_ft::launch::{write_outcome, CofRelaunch, Outcome, EXIT_CHECKPOINTED};
use blacs_ft::{Grid, Injector, Scope};
use recovery::{kill_self, Region};
use scalapack_ft::blas;
use scalapack_ft::lu::pdgetrf;
use scalapack_ft::lu_ft::{FtOptions, Holding, LuFactors};
use scalapack_ft::{DistMatrix, Error};

/// Protected LU factors across real failures (see the module
/// documentation).
#[derive(clap::Parser)]
struct Args {
    /// Process grid PxQ.
    #[arg(long, default_value = "2x2", value_parser = ftla_tests::parse_grid)]
    grid: (i32, i32),
    /// How the program is written: `region` (Region::run), `outside` (the
    /// first factorization before Region::run) or `straight` (retry after
    /// Region::repair).
    #[arg(long, default_value = "region", value_parser = ["region", "outside", "straight"])]
    style: String,
    /// `R@S`: grid rank R dies after factorization S (1 or 2) returned.
    #[arg(long, value_parser = parse_kill)]
    kill: Vec<Kill>,
    /// Kill points inside the second factorization (`FTLA_KILL`'s grammar,
    /// e.g. `2@lu:3:update`): a process lost in another call while the
    /// first factors are kept.
    #[arg(long, value_parser = parse_points)]
    kill_in_second: Option<Injector>,
    /// The order of A1 and A2.
    #[arg(long, default_value_t = 192)]
    n: usize,
    /// Block size.
    #[arg(long, default_value_t = 32)]
    nb: usize,
    /// Hot spares.
    #[arg(long, default_value_t = 0)]
    spares: i32,
    /// Checkpoint-on-failure into this directory instead of repairs in
    /// place: the survivors save, and the job is started again (twice at
    /// most).
    #[arg(long)]
    cof: Option<std::path::PathBuf>,
    /// Hard timeout of the job, seconds.
    #[arg(long, default_value_t = 120)]
    timeout: u64,
}

/// A process's death between the calls.
#[derive(Clone, Copy)]
struct Kill {
    /// The grid rank that dies.
    rank: i32,
    /// After which factorization (1 or 2).
    after: u8,
}

fn parse_points(v: &str) -> Result<Injector, String> {
    Injector::parse(v).map_err(|e| e.to_string())
}

fn parse_kill(v: &str) -> Result<Kill, String> {
    let bad = || format!("wants R@S with S 1 or 2, got `{v}`");
    let (r, s) = v.split_once('@').ok_or_else(bad)?;
    let rank = r.parse().map_err(|_| bad())?;
    let after = s.parse().map_err(|_| bad())?;
    if !(1..=2).contains(&after) {
        return Err(bad());
    }
    Ok(Kill { rank, after })
}

/// Element (i, j) of matrix `which` (1 or 2): uniform in [-1, 1) from a
/// hash, the same on every process; well conditioned enough, and partial
/// pivoting has real work to do.
fn element(which: u64, i: usize, j: usize) -> f64 {
    let mut z = (which << 48) ^ ((i as u64) << 24) ^ j as u64;
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

fn main() {
    let a = <Args as clap::Parser>::parse();
    let (p, q) = a.grid;
    let cof = a.cof.clone().map(|dir| CofRelaunch {
        dir,
        run_id: u64::from(std::process::id()) | 1 << 40,
        max_restarts: 2,
        resume: false,
        policy: "cof",
        epoch_base: 0,
        ..Default::default()
    });
    ftla_tests::relaunch_outside_mpi(p * q + a.spares, a.timeout, true, cof);
    blas::use_single_thread();
    // (The grid's default options take kill points from FTLA_KILL too,
    // e.g. in the repair itself.)
    let (rt, mut region) = ftla_tests::join_region("protected-factors", p, q);
    let outcome = scenario(&mut region, &a);
    let grid = region.into_grid();
    match outcome {
        Ok(line) => {
            println!("RANK {}{line}", grid.rank());
            ftla_tests::finish(rt, grid, Ok(()), &line)
        }
        // Checkpoint-on-failure (under `ftla launch --recovery cof`): the
        // survivors saved, and the launcher starts the job again.
        Err(Stop::Saved { epoch, detail }) => {
            write_outcome(Outcome::Checkpointed { epoch }, &detail);
            rt.finish(EXIT_CHECKPOINTED)
        }
        Err(Stop::Failed(e)) => ftla_tests::finish(rt, grid, Err(&e), &e),
    }
}

/// Why the program stopped early.
enum Stop {
    /// The survivors saved checkpoints.
    Saved { epoch: u32, detail: String },
    /// Any other error.
    Failed(String),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Saved { detail, .. } | Stop::Failed(detail) => f.write_str(detail),
        }
    }
}

impl From<blacs_ft::Error> for Stop {
    fn from(e: blacs_ft::Error) -> Stop {
        match e {
            blacs_ft::Error::Checkpointed { epoch, .. } => Stop::Saved { epoch, detail: e.to_string() },
            e => Stop::Failed(e.to_string()),
        }
    }
}

impl From<Error> for Stop {
    fn from(e: Error) -> Stop {
        match e {
            Error::Grid(e) => e.into(),
            e => Stop::Failed(e.to_string()),
        }
    }
}

/// Dies here when this process is an original one of the first job (not a
/// replacement, nor one of a job started again from checkpoints) that
/// `kills` name for the point after factorization `after`.
fn kill_point(region: &Region, kills: &[Kill], after: u8) {
    let grid = region.grid();
    if grid.replacement().is_none()
        && region.options().restarts == 0
        && kills.iter().any(|k| k.rank == grid.rank() && k.after == after)
    {
        kill_self(&format!("grid rank {} after factorization {after}", grid.rank()));
    }
}

/// Arms the kill points inside the second factorization (again on a
/// re-run or a replacement: the grid counts the points that fired; not in
/// a job started again from checkpoints, after they fired).
fn arm_second(region: &mut Region, args: &Args) {
    if region.options().restarts > 0 {
        return;
    }
    if let Some(points) = &args.kill_in_second {
        region.grid_mut().set_injector(points.clone());
    }
}

/// The program's own collective work: a sum over the grid of a local
/// value of A1.
fn own_work(grid: &Grid, a: &DistMatrix) -> Result<(), blacs_ft::Error> {
    let mut s = [a.local().iter().take(4).sum::<f64>()];
    grid.sum(Scope::All, &mut s, None)
}

/// The program: factor twice with the kills in between, then compare.
fn scenario(region: &mut Region, args: &Args) -> Result<String, Stop> {
    let (n, nb) = (args.n, args.nb);
    let a1 = DistMatrix::from_fn(region.grid(), n, n, nb, nb, |i, j| element(1, i, j))?;
    let a2 = DistMatrix::from_fn(region.grid(), n, n, nb, nb, |i, j| element(2, i, j))?;
    let (f1, f2) = match args.style.as_str() {
        "region" => in_region(region, args, &a1, &a2)?,
        "outside" => outside(region, args, &a1, &a2)?,
        _ => straight(region, args, &a1, &a2)?,
    };
    // (The first to_matrix is where the last replacement meets the
    // others' mend.)
    let taken = [f1.to_matrix(region), f2.to_matrix(region)];
    let holding = [f1.holding(), f2.holding()].map(|h| match h {
        Holding::Whole => "whole",
        Holding::Hollow => "hollow",
        Holding::Lost => "lost",
    });
    // The failure-free reference, in the same job (no kill is left).
    let mut verdicts = Vec::new();
    for ((f, a), got) in [(&f1, &a1), (&f2, &a2)].into_iter().zip(taken) {
        let mut lu = a.clone();
        let mut ipiv = Vec::new();
        pdgetrf(region.grid(), &mut lu, &mut ipiv)?;
        let pivots = if f.ipiv() == ipiv { "same" } else { "DIFF" };
        let factors = match got {
            Ok(m) => {
                let diff = max_local_diff(&m, &lu);
                if diff <= 1e-9 {
                    "same".to_string()
                } else {
                    format!("DIFF({diff:e})")
                }
            }
            Err(Error::InputLost { rank, .. }) => format!("input-lost(rank={rank})"),
            Err(e) => format!("error({e})"),
        };
        verdicts.push((pivots, factors));
    }
    let tag = if region.grid().replacement().is_some() { " replacement" } else { "" };
    Ok(format!(
        "{tag} holding={},{} ipiv={},{} factors={},{}",
        holding[0], holding[1], verdicts[0].0, verdicts[1].0, verdicts[0].1, verdicts[1].1
    ))
}

/// The largest difference between the local blocks of `a` and `b` (same
/// shape and layout); infinite when they differ in shape.
fn max_local_diff(a: &DistMatrix, b: &DistMatrix) -> f64 {
    if (a.local_rows(), a.local_cols()) != (b.local_rows(), b.local_cols()) {
        return f64::INFINITY;
    }
    let mut d = 0.0f64;
    for j in 0..a.local_cols() {
        for i in 0..a.local_rows() {
            let x = a.local()[i + j * a.lld()] - b.local()[i + j * b.lld()];
            d = d.max(if x.is_nan() { f64::INFINITY } else { x.abs() });
        }
    }
    d
}

/// `--style region`: everything in one body run by [`Region::run`].
fn in_region(
    region: &mut Region,
    args: &Args,
    a1: &DistMatrix,
    a2: &DistMatrix,
) -> Result<(LuFactors, LuFactors), Stop> {
    let opts = FtOptions::default();
    // Process failures go back to the region, other errors out of it.
    let factor = |region: &mut Region, a: &DistMatrix| match LuFactors::factor(region, a.clone(), &opts) {
        Ok((f, _)) => Ok(Ok(f)),
        Err(Error::Grid(e)) => Err(e),
        Err(e) => Ok(Err(e)),
    };
    region
        .run(|region| {
            let f1 = match factor(region, a1)? {
                Ok(f) => f,
                Err(e) => return Ok(Err(e)),
            };
            kill_point(region, &args.kill, 1);
            // (A replacement of a process lost inside the second
            // factorization makes no collective call before it: the
            // survivors are inside that call's recovery.)
            if !region.is_joining() {
                own_work(region.grid(), a1)?;
            }
            arm_second(region, args);
            let f2 = match factor(region, a2)? {
                Ok(f) => f,
                Err(e) => return Ok(Err(e)),
            };
            kill_point(region, &args.kill, 2);
            own_work(region.grid(), a1)?;
            Ok(Ok((f1, f2)))
        })?
        .map_err(Stop::from)
}

/// `--style outside`: the first factors made before [`Region::run`] and
/// kept outside it, the rest in its body.
fn outside(region: &mut Region, args: &Args, a1: &DistMatrix, a2: &DistMatrix) -> Result<(LuFactors, LuFactors), Stop> {
    let opts = FtOptions::default();
    let f1 = retry(region, |region| LuFactors::factor(region, a1.clone(), &opts).map(|(f, _)| f))?;
    kill_point(region, &args.kill, 1);
    let f2 = region.run(|region| {
        if !region.is_joining() {
            own_work(region.grid(), a1)?;
        }
        arm_second(region, args);
        let f2 = match LuFactors::factor(region, a2.clone(), &opts) {
            Ok((f, _)) => f,
            Err(Error::Grid(e)) => return Err(e),
            Err(e) => return Ok(Err(e)),
        };
        kill_point(region, &args.kill, 2);
        own_work(region.grid(), a1)?;
        Ok(Ok(f2))
    })??;
    Ok((f1, f2))
}

/// `--style straight`: each call retried after a repair.
fn straight(
    region: &mut Region,
    args: &Args,
    a1: &DistMatrix,
    a2: &DistMatrix,
) -> Result<(LuFactors, LuFactors), Stop> {
    let opts = FtOptions::default();
    let f1 = retry(region, |region| LuFactors::factor(region, a1.clone(), &opts).map(|(f, _)| f))?;
    kill_point(region, &args.kill, 1);
    arm_second(region, args);
    let f2 = retry(region, |region| LuFactors::factor(region, a2.clone(), &opts).map(|(f, _)| f))?;
    kill_point(region, &args.kill, 2);
    retry(region, |region| own_work(region.grid(), a1).map_err(Error::Grid))?;
    Ok((f1, f2))
}

/// Runs `call` until it returns something other than a process failure,
/// repairing the grid after each.
fn retry<T>(region: &mut Region, mut call: impl FnMut(&mut Region) -> Result<T, Error>) -> Result<T, Stop> {
    loop {
        match call(region) {
            Err(Error::Grid(e)) if e.is_process_failure() => {
                region.repair()?;
            }
            r => return Ok(r?),
        }
    }
}
