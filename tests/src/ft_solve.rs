//! Solves on protected LU factors, driven by `tests/tests/ft_solve.rs`:
//! in a resilient region, `LuFactors::factor`, then `pdgetrs_ft` for each
//! case (`N1` = TRANS N with one right-hand side, `T7` = TRANS T with
//! seven, `N7/5` = the same as N7 with B's columns in blocks of 5 — B's
//! rows are always in A's blocks —, ...), with the kills of FTLA_KILL
//! (`R@getrs:STEP:PHASE`) and, with `--kill-between R`, grid rank R (or
//! several) dying by its own SIGKILL between the factorization and the
//! first solve (the region repairs and runs its body again; the
//! replacement runs it from the top). `--kill-after R` kills grid rank R
//! the same way after the first solve (the region runs its body again:
//! the first solve is done, its X in place). With `--cof` the recovery
//! is checkpoint-on-failure: the survivors save, the job is started
//! again (once), runs the program again and resumes the interrupted
//! solve from the checkpoints. Then every process factors the same A
//! with the plain `pdgetrf`, solves with `pdgetrs` (B in the same
//! blocks), and compares its part of each X. Started outside MPI, it
//! relaunches itself under `mpiexec` with a hard timeout.
//!
//! ```text
//! ft-solve [--grid PxQ] [--n N] [--nb NB] [--cases N1,N7,T1,T7,N7/5] [--kill-between R,...] [--kill-after R]
//!          [--spares S] [--cof] [--timeout S]
//! ```
//! Prints per process and case `RANK r CASE c x=match|lost|WRONG rec=K
//! checksums=ok|BAD|- diff=D resid=R`: `match` when its part of X is within 1e-9 of the plain
//! solve's, `lost` when the solve completed before this process joined as
//! a replacement (X marked lost), K the recoveries in that solve's report,
//! `checksums` whether B's checksum relations held at its end (`-`: a
//! solve done before this process joined),
//! D the largest difference here, R the scaled residual
//! ‖op(A)·X − B‖₁ / (‖A‖₁·‖X‖₁·N·eps) of the fault-tolerant X (NaN when X
//! is lost somewhere); and first `RANK r PIVOTS moved=M`, the rows the
//! pivots interchange, and `RANK r FACTORS diff=D`, the largest difference
//! between this process's part of the protected factors at the end and
//! the plain `pdgetrf`'s, and `RANK r BAD-B mb=I csrc=J`, the INFOs of
//! solves given a B with MB_B ≠ NB_A and one whose first block column is
//! on process column 1. When the factors are lost (two processes
//! of a process row died between the factorization and the solve), each
//! process prints only `RANK r SOLVE input-lost(ARGUMENT,rank=R)`.

use blacs_ft::index::numroc;
use blacs_ft::launch::{new_run_id, write_outcome, CofRelaunch, Outcome, EXIT_CHECKPOINTED};
use blacs_ft::Grid;
use recovery::{kill_self, Region};
use scalapack_ft::descriptor::Descriptor;
use scalapack_ft::lu::{pdgetrf, pdgetrs, solve_residual, Transpose};
use scalapack_ft::lu_ft::{pdgetrs_ft, FtOptions, LuFactors};
use scalapack_ft::{DistMatrix, Error};

/// Solves on protected LU factors (see the module documentation).
#[derive(clap::Parser)]
struct Args {
    /// Process grid PxQ (Q ≥ 2).
    #[arg(long, default_value = "2x2", value_parser = ftla_tests::parse_grid)]
    grid: (i32, i32),
    /// The order of A.
    #[arg(long, default_value_t = 96)]
    n: usize,
    /// Block size.
    #[arg(long, default_value_t = 16)]
    nb: usize,
    /// The solves, in order: TRANS (N or T) and NRHS, then optionally
    /// `/NB_B` (B's column block; A's by default), comma-separated.
    #[arg(long, default_value = "N1,N7,T1,T7", value_delimiter = ',', value_parser = parse_case)]
    cases: Vec<Case>,
    /// Grid ranks that die between the factorization and the first solve
    /// (comma-separated).
    #[arg(long, value_delimiter = ',')]
    kill_between: Vec<i32>,
    /// Grid rank that dies after the first solve, before the second.
    #[arg(long)]
    kill_after: Option<i32>,
    /// Hot spares.
    #[arg(long, default_value_t = 0)]
    spares: i32,
    /// Recover by checkpoint-on-failure: the survivors save, the job is
    /// started again (once) from the checkpoints.
    #[arg(long)]
    cof: bool,
    /// Hard timeout of the job, seconds.
    #[arg(long, default_value_t = 120)]
    timeout: u64,
}

/// One solve: which system, how many right-hand sides, in which column
/// blocks.
#[derive(Clone, Copy, Debug)]
struct Case {
    trans: Transpose,
    nrhs: usize,
    /// B's column block (`None`: A's block size).
    nb_b: Option<usize>,
}

impl std::fmt::Display for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = if self.trans == Transpose::NoTrans { "N" } else { "T" };
        write!(f, "{t}{}", self.nrhs)?;
        match self.nb_b {
            Some(nb_b) => write!(f, "/{nb_b}"),
            None => Ok(()),
        }
    }
}

fn parse_case(v: &str) -> Result<Case, String> {
    let bad = || format!("a case is N or T, then NRHS, then optionally /NB_B (N1, T7, N7/5), got `{v}`");
    let trans = match v.get(..1) {
        Some("N") => Transpose::NoTrans,
        Some("T") => Transpose::Trans,
        _ => return Err(bad()),
    };
    let (nrhs, nb_b) = match v[1..].split_once('/') {
        Some((nrhs, nb_b)) => (nrhs, Some(nb_b.parse().map_err(|_| bad())?)),
        None => (&v[1..], None),
    };
    let nrhs: usize = nrhs.parse().map_err(|_| bad())?;
    Ok(Case { trans, nrhs, nb_b })
}

/// A(i, j): nonsymmetric and well conditioned, the same on every process,
/// with a larger entry below the diagonal than on it, so that partial
/// pivoting moves rows.
fn element(i: usize, j: usize) -> f64 {
    let h = ((i * 7919 + j * 104_729) % 1009) as f64 / 1009.0 - 0.5;
    (if i == j { 0.6 } else { 0.0 }) + 0.2 * h + if i > j { 1.2 / (i - j) as f64 } else { 0.0 }
}

/// B(i, c) of right-hand side column c.
fn rhs(i: usize, c: usize) -> f64 {
    1.0 + ((i * 31 + c * 17) % 13) as f64 / 7.0
}

fn main() {
    let a = <Args as clap::Parser>::parse();
    let (p, q) = a.grid;
    let cof = a.cof.then(|| CofRelaunch {
        dir: std::env::temp_dir().join(format!("ftla-ft-solve-{}", std::process::id())),
        run_id: new_run_id(),
        max_restarts: 1,
        resume: false,
        policy: "cof",
        epoch_base: 0,
        ..Default::default()
    });
    ftla_tests::relaunch_outside_mpi(p * q + a.spares, a.timeout, true, cof);
    let (rt, mut region) = ftla_tests::join_region("ft-solve", p, q);
    let outcome = scenario(&mut region, &a);
    let grid = region.into_grid();
    match outcome {
        Ok(lines) => {
            print!("{lines}");
            ftla_tests::finish(rt, grid, Ok(()), &lines)
        }
        Err(Ended::Checkpointed { epoch }) => {
            // (The job is started again from the checkpoints.)
            if grid.rank() == 0 {
                write_outcome(Outcome::Checkpointed { epoch }, "checkpoints saved");
            }
            grid.close();
            rt.finish(EXIT_CHECKPOINTED)
        }
        Err(Ended::Failed(e)) => ftla_tests::finish(rt, grid, Err(&e), "failed"),
    }
}

/// Why the program ended before its report.
enum Ended {
    /// The survivors saved checkpoints (checkpoint-on-failure).
    Checkpointed {
        epoch: u32,
    },
    Failed(String),
}

impl From<String> for Ended {
    fn from(e: String) -> Ended {
        Ended::Failed(e)
    }
}

impl From<&str> for Ended {
    fn from(e: &str) -> Ended {
        Ended::Failed(e.to_string())
    }
}

/// One fault-tolerant solve's report here.
#[derive(Clone, Copy)]
struct Solved {
    recoveries: usize,
    /// B's checksum relations at the end held (`None`: not checked, a
    /// solve done before this process joined).
    checksums: Option<bool>,
}

/// The program: factor, solve every case (with the kills), then the plain
/// solves and the comparison.
fn scenario(region: &mut Region, args: &Args) -> Result<String, Ended> {
    let s = |e: Error| e.to_string();
    let (n, nb) = (args.n, args.nb);
    let grid = region.grid();
    let a0 = DistMatrix::from_fn(grid, n, n, nb, nb, element).map_err(s)?;
    let bs: Vec<DistMatrix> = args
        .cases
        .iter()
        .map(|c| DistMatrix::from_fn(grid, n, c.nrhs, nb, c.nb_b.unwrap_or(nb), rhs))
        .collect::<Result<_, _>>()
        .map_err(s)?;
    let opts = FtOptions { verify: true, ..FtOptions::default() };
    // (Outside the body: a solve done before the region runs it again
    // leaves its X in place.)
    let mut xs: Vec<DistMatrix> = bs.clone();
    let mut solved: Vec<Option<Solved>> = vec![None; bs.len()];
    let outcome = region
        .run(|region| {
            let fail = |e: Error| match e {
                Error::Grid(e) => Err(e),
                e => Ok(Err(e)),
            };
            let factors = match LuFactors::factor(region, a0.clone(), &opts) {
                Ok((f, _)) => f,
                Err(e) => return fail(e),
            };
            // The application's own work, during which a process dies.
            if args.kill_between.contains(&region.grid().rank()) && region.grid().replacement().is_none() {
                kill_self(&format!("grid rank {} between the factorization and the solve", region.grid().rank()));
            }
            for (i, ((case, x), out)) in args.cases.iter().zip(&mut xs).zip(&mut solved).enumerate() {
                let me = region.grid().rank();
                if i == 1 && args.kill_after == Some(me) && region.grid().replacement().is_none() {
                    kill_self(&format!("grid rank {me} after the first solve"));
                }
                match pdgetrs_ft(region, case.trans, &factors, x, &opts) {
                    // (A solve done before reports no recoveries again.)
                    Ok(report) if out.is_some() && report.recoveries.is_empty() => {}
                    Ok(report) => {
                        let checksums = report.check.map(|c| c.ok);
                        *out = Some(Solved { recoveries: report.recoveries.len(), checksums });
                    }
                    Err(e) => return fail(e),
                }
            }
            Ok(Ok(factors))
        })
        .map_err(|e| match e {
            blacs_ft::Error::Checkpointed { epoch, .. } => Ended::Checkpointed { epoch },
            e => Ended::Failed(e.to_string()),
        })?;
    let factors = match outcome {
        Ok(f) => f,
        // (The factors could not be rebuilt: refused, nothing computed.)
        Err(Error::InputLost { argument, rank, .. }) => {
            return Ok(format!("RANK {} SOLVE input-lost({argument},rank={rank})\n", region.grid().rank()))
        }
        Err(e) => return Err(e.to_string().into()),
    };
    let kept = factors.to_matrix(region).map_err(s)?;
    // B with MB_B ≠ NB_A (PDGETRS's own check), and B whose first block
    // column is on process column 1 (the one restriction beyond it):
    // refused on every process.
    let mut refused = Vec::new();
    for mut bad in [
        DistMatrix::from_fn(region.grid(), n, 3, nb + 1, nb, rhs).map_err(s)?,
        second_column_first(region.grid(), n, 3, nb)?,
    ] {
        refused.push(match pdgetrs_ft(region, Transpose::NoTrans, &factors, &mut bad, &opts) {
            Ok(_) => "accepted".to_string(),
            Err(e) => e.info().to_string(),
        });
    }
    // The plain solves of the same problem, on every process.
    let grid = region.grid();
    let mut lu = a0.clone();
    let mut ipiv = Vec::new();
    pdgetrf(grid, &mut lu, &mut ipiv).map_err(s)?;
    let moved = ipiv.iter().enumerate().filter(|&(i, &p)| p != i as i64).count();
    let at = DistMatrix::from_fn(grid, n, n, nb, nb, |i, j| element(j, i)).map_err(s)?;
    let mut lines = format!("RANK {} PIVOTS moved={moved}\n", grid.rank());
    lines += &format!("RANK {} FACTORS diff={:.1e}\n", grid.rank(), max_diff(&kept, &lu));
    lines += &format!("RANK {} BAD-B mb={} csrc={}\n", grid.rank(), refused[0], refused[1]);
    for (((case, b0), x), got) in args.cases.iter().zip(&bs).zip(&xs).zip(&solved) {
        let got = got.ok_or("a solve left no report")?;
        let mut want = b0.clone();
        pdgetrs(grid, case.trans, &lu, &ipiv, &mut want).map_err(s)?;
        let op_a = if case.trans == Transpose::NoTrans { &a0 } else { &at };
        // (An X lost somewhere is refused by pdgemm: no residual.)
        let lost_somewhere = grid.lowest_rank_where(x.is_lost()).map_err(|e| e.to_string())?.is_some();
        let resid = match lost_somewhere {
            true => f64::NAN,
            false => solve_residual(grid, op_a, x, b0).map_err(s)?,
        };
        let diff = max_diff(x, &want);
        let verdict = if x.is_lost() {
            "lost"
        } else if diff <= 1e-9 {
            "match"
        } else {
            "WRONG"
        };
        lines += &format!(
            "RANK {} CASE {case} x={verdict} rec={} checksums={} diff={diff:.1e} resid={resid:.2}\n",
            grid.rank(),
            got.recoveries,
            match got.checksums {
                Some(true) => "ok",
                Some(false) => "BAD",
                None => "-",
            }
        );
    }
    Ok(lines)
}

/// An `n`×`nrhs` B in `nb`×`nb` blocks whose first block column is on
/// process column 1 (CSRC = 1).
fn second_column_first(grid: &Grid, n: usize, nrhs: usize, nb: usize) -> Result<DistMatrix, String> {
    let (p, q) = (grid.nprow() as usize, grid.npcol() as usize);
    let (myrow, mycol) = (grid.myrow() as usize, grid.mycol() as usize);
    let lld = numroc(n, nb, myrow, 0, p).max(1);
    let desc = Descriptor::new(n, nrhs, nb, nb, 0, 1, lld, 0, p, q, myrow).map_err(|e| e.to_string())?;
    let cols = numroc(nrhs, nb, mycol, 1, q);
    DistMatrix::from_local(grid, desc, vec![1.0; lld * cols]).map_err(|e| e.to_string())
}

/// The largest difference between this process's parts of `x` and `y`.
fn max_diff(x: &DistMatrix, y: &DistMatrix) -> f64 {
    let (lr, lc) = (x.local_rows(), x.local_cols());
    let mut d = 0.0f64;
    for j in 0..lc {
        for i in 0..lr {
            d = d.max((x.local()[i + j * x.lld()] - y.local()[i + j * y.lld()]).abs());
        }
    }
    d
}
