//! A lost input refused in Rust, driven by `tests/tests/lost_input.rs`:
//! on a 2x2 grid, `pdgetrf_ft` (`--op qr`: `pdgeqrf_ft`) in a resilient
//! region, then grid rank KILL dies by its own SIGKILL between the calls,
//! then `pdgetrs` with the factors (`--op qr`: `pdormqr` with Qᵀ, then the
//! triangular solve with R). The region repairs and runs its body again; the replacement
//! finds the factorization done before it joined, so its part of the
//! factors is lost, and the solve must refuse them on every process. Then
//! every process factors again and solves. Started outside MPI, it
//! relaunches itself under `mpiexec` with a hard timeout.
//!
//! ```text
//! lost-input --kill R [--op lu|qr] [--n N] [--nb NB] [--spares S] [--timeout S]
//! ```
//! Prints per process `RANK r[ replacement] lost=BOOL solve=VERDICT
//! resolve=ok|ERROR x=correct|WRONG`, VERDICT being `input-lost(ARG,rank=R)`,
//! `ok` or the error.

use blacs_ft::Grid;
use recovery::{kill_self, Region};
use scalapack_ft::blas::Trans;
use scalapack_ft::lu::{pdgetrs, Transpose};
use scalapack_ft::lu_ft::{pdgetrf_ft, FtOptions};
use scalapack_ft::qr::{pdormqr, upper_solve};
use scalapack_ft::qr_ft::pdgeqrf_ft;
use scalapack_ft::{DistMatrix, Error};

/// A lost input refused in Rust (see the module documentation).
#[derive(clap::Parser)]
struct Args {
    /// The grid rank that dies between the calls.
    #[arg(long)]
    kill: i32,
    /// The factorization and its solve: `lu` (pdgetrf_ft, pdgetrs) or `qr`
    /// (pdgeqrf_ft, pdormqr and the solve with R).
    #[arg(long, default_value = "lu", value_parser = ["lu", "qr"])]
    op: String,
    /// The order of A.
    #[arg(long, default_value_t = 192)]
    n: usize,
    /// Block size.
    #[arg(long, default_value_t = 32)]
    nb: usize,
    /// Hot spares.
    #[arg(long, default_value_t = 0)]
    spares: i32,
    /// Hard timeout of the job, seconds.
    #[arg(long, default_value_t = 120)]
    timeout: u64,
}

/// A(i, j): well conditioned, the same on every process.
fn element(i: usize, j: usize) -> f64 {
    (if i == j { 2.0 } else { 0.0 }) + 1.0 / (1.0 + i as f64 + 3.0 * j as f64)
}

fn main() {
    let a = <Args as clap::Parser>::parse();
    ftla_tests::relaunch_outside_mpi(4 + a.spares, a.timeout, true, None);
    ftla_tests::run_scenario("lost-input", 2, 2, |region| scenario(region, &a))
}

/// The program: factor, lose a process, solve; factor again, solve.
fn scenario(region: &mut Region, args: &Args) -> Result<String, String> {
    let s = |e: Error| e.to_string();
    let (n, nb) = (args.n, args.nb);
    let x_true = |i: usize| (i + 1) as f64 / n as f64;
    let a0 = DistMatrix::from_fn(region.grid(), n, n, nb, nb, element).map_err(s)?;
    let b0 = DistMatrix::from_fn(region.grid(), n, 1, nb, nb, |i, _| (0..n).map(|j| element(i, j) * x_true(j)).sum())
        .map_err(s)?;
    // (Outside the body: a survivor's factors stay in place when the
    // region runs it again.)
    let (mut a, mut pivots, mut b) = (a0.clone(), Factors::new(&args.op), b0.clone());
    let kill = args.kill;
    let first = region
        .run(|region| {
            match pivots.factor(region, &mut a) {
                Err(Error::Grid(e)) => return Err(e),
                Err(e) => return Ok(Err(e)),
                Ok(()) => {}
            }
            // The application's own work, during which a process dies.
            if region.grid().rank() == kill && region.grid().replacement().is_none() {
                kill_self(&format!("grid rank {kill} between the factorization and the solve"));
            }
            b = b0.clone();
            match pivots.solve(region.grid(), &a, &mut b) {
                Err(Error::Grid(e)) if e.is_process_failure() => Err(e),
                r => Ok(r),
            }
        })
        .map_err(|e| e.to_string())?;
    let lost = a.is_lost();
    let verdict = match &first {
        Ok(()) => "ok".to_string(),
        Err(Error::InputLost { argument, rank, .. }) => format!("input-lost({argument},rank={rank})"),
        Err(e) => format!("error({e})"),
    };
    // Factor again (a new matrix from the program's data) and solve.
    let mut a = a0.clone();
    pivots.factor(region, &mut a).map_err(s)?;
    let mut b = b0.clone();
    let again = pivots.solve(region.grid(), &a, &mut b);
    let mut err = 0.0f64;
    if b.local_cols() > 0 {
        for li in 0..b.local_rows() {
            err = err.max((b.local()[li] - x_true(b.global_row(li))).abs());
        }
    }
    let tag = if region.grid().replacement().is_some() { " replacement" } else { "" };
    Ok(format!(
        "{tag} lost={lost} solve={verdict} resolve={} x={}",
        if again.is_ok() { "ok" } else { "ERROR" },
        if again.is_ok() && err <= 1e-10 { "correct" } else { "WRONG" }
    ))
}

/// The factorization's replicated output: LU's pivots or QR's tau.
enum Factors {
    Lu(Vec<i64>),
    Qr(Vec<f64>),
}

impl Factors {
    fn new(op: &str) -> Factors {
        if op == "qr" {
            Factors::Qr(Vec::new())
        } else {
            Factors::Lu(Vec::new())
        }
    }

    /// The fault-tolerant factorization of `a`.
    fn factor(&mut self, region: &mut Region, a: &mut DistMatrix) -> Result<(), Error> {
        let opts = FtOptions::default();
        match self {
            Factors::Lu(ipiv) => pdgetrf_ft(region, a, ipiv, &opts).map(drop),
            Factors::Qr(tau) => pdgeqrf_ft(region, a, tau, &opts).map(drop),
        }
    }

    /// x = A⁻¹b in `b`, with the factors in `a`.
    fn solve(&self, grid: &Grid, a: &DistMatrix, b: &mut DistMatrix) -> Result<(), Error> {
        match self {
            Factors::Lu(ipiv) => pdgetrs(grid, Transpose::NoTrans, a, ipiv, b),
            Factors::Qr(tau) => {
                pdormqr(grid, Trans::Yes, a, tau, a.n(), b)?;
                upper_solve(grid, a, a.n(), b)
            }
        }
    }
}
