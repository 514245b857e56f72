//! The region's call gate ([`recovery::gate`], the C ABI's way into the
//! drivers), driven by `tests/tests/call_gate.rs`: on a 2x2 grid,
//! `pdgeqrf_ft` called directly and through the gate must make the same
//! agreements (the gate adds no verdict of its own: the driver's is the
//! call's), a caller's check that fails on one process must give every
//! process the same error after one agreement (the driver's verdict, made
//! by the processes whose checks passed), and a plain routine makes two
//! (its verdict and whether every process came through it). Started
//! outside MPI, it relaunches itself under `mpiexec` with a hard timeout.
//!
//! ```text
//! call-gate [--refuse-on R] [--timeout S]
//! ```
//! Prints per process `RANK r direct=D gate=G refused=N:ERROR plain=P
//! r=same|DIFFERENT`: the agreements each call started, and whether the
//! factors through the gate equal the direct ones.

use blacs_ft::Grid;
use recovery::gate::{self, Ended, Protection, Routine, Site};
use recovery::Region;
use scalapack_ft::args::arg_error;
use scalapack_ft::qr_ft::{pdgeqrf_ft, FtOptions};
use scalapack_ft::{DistMatrix, Error};

/// The call gate's agreements (see the module documentation).
#[derive(clap::Parser)]
struct Args {
    /// The grid rank whose caller's check fails in the refused call.
    #[arg(long, default_value_t = 1)]
    refuse_on: i32,
    /// Hard timeout of the job, seconds.
    #[arg(long, default_value_t = 90)]
    timeout: u64,
}

const N: usize = 96;
const NB: usize = 16;

fn element(i: usize, j: usize) -> f64 {
    (if i == j { 3.0 } else { 0.0 }) + 1.0 / (1.0 + i as f64 + 2.0 * j as f64)
}

fn main() {
    let a = <Args as clap::Parser>::parse();
    ftla_tests::relaunch_outside_mpi(4, a.timeout, true, None);
    ftla_tests::run_scenario("call-gate", 2, 2, |region| scenario(region, &a))
}

/// A call at the gate: `refuse` makes this process's own check fail;
/// `plain` runs the factorization as a plain routine would (no driver of
/// the protocol: a QR without checksums).
struct QrSite<'r> {
    region: &'r mut Region,
    refuse: bool,
    plain: bool,
    factored: Option<DistMatrix>,
}

impl Site for QrSite<'_> {
    type Args = DistMatrix;
    type Error = Error;

    fn region(&mut self) -> &mut Region {
        self.region
    }

    fn settle(&mut self) {}

    fn check(&mut self) -> Result<DistMatrix, Error> {
        if self.refuse {
            return Err(arg_error("call-gate", 3, 0, "A", "refused by this process's check"));
        }
        DistMatrix::from_fn(self.region.grid(), N, N, NB, NB, element)
    }

    fn check_inputs(&mut self) -> Result<(), Error> {
        Ok(())
    }

    fn is_empty(_: &DistMatrix) -> bool {
        false
    }

    fn run(&mut self, a: &mut DistMatrix, _: bool) -> Result<(), Error> {
        if self.plain {
            scalapack_ft::qr::pdgeqrf(self.region.grid(), a, &mut Vec::new())?;
        } else {
            pdgeqrf_ft(self.region, a, &mut Vec::new(), &FtOptions::default())?;
        }
        self.factored = Some(a.clone());
        Ok(())
    }

    fn explain(grid: &Grid, local: Result<(), Error>) -> Error {
        scalapack_ft::error::agreed_refusal(grid, local)
    }
}

const FT: Routine = Routine {
    name: "gate_pdgeqrf_ft",
    log_name: scalapack_ft::drivers::PDGEQRF_FT.routine,
    protection: Protection::FaultTolerant {
        kill_op: scalapack_ft::drivers::PDGEQRF_FT.kill_op,
        keeps_result: false,
        agrees_first: false,
    },
};
const PLAIN: Routine = Routine { name: "gate_pdgeqrf", log_name: "gate_pdgeqrf", protection: Protection::Plain };

/// The agreements `f` starts on this process.
fn agreements<T>(region: &mut Region, f: impl FnOnce(&mut Region) -> T) -> (u64, T) {
    let before = region.grid().agreements_started();
    let out = f(region);
    (region.grid().agreements_started() - before, out)
}

fn scenario(region: &mut Region, args: &Args) -> Result<String, String> {
    let s = |e: Error| e.to_string();
    let mut direct = DistMatrix::from_fn(region.grid(), N, N, NB, NB, element).map_err(s)?;
    let (d, out) = agreements(region, |r| pdgeqrf_ft(r, &mut direct, &mut Vec::new(), &FtOptions::default()));
    out.map_err(s)?;
    let mut site = QrSite { region, refuse: false, plain: false, factored: None };
    let before = site.region.grid().agreements_started();
    let ended = gate::call(&mut site, &FT).map_err(s)?;
    let g = site.region.grid().agreements_started() - before;
    if ended != Ended::Computed {
        return Err(format!("the gate's call ended {ended:?}"));
    }
    let same = site.factored.as_ref().is_some_and(|f| f.local() == direct.local());
    // One process's check fails: every process, inside the driver or not,
    // leaves with the same error.
    site.refuse = site.region.grid().rank() == args.refuse_on;
    site.factored = None;
    let before = site.region.grid().agreements_started();
    let refused = match gate::call(&mut site, &FT) {
        Ok(e) => format!("NOT-REFUSED({e:?})"),
        Err(e) => e.to_string(),
    };
    let n_refused = site.region.grid().agreements_started() - before;
    site.refuse = false;
    site.plain = true;
    let before = site.region.grid().agreements_started();
    gate::call(&mut site, &PLAIN).map_err(s)?;
    let p = site.region.grid().agreements_started() - before;
    Ok(format!(
        " direct={d} gate={g} refused={n_refused}:{refused} plain={p} r={}",
        if same { "same" } else { "DIFFERENT" }
    ))
}
