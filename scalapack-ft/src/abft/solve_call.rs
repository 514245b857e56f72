//! One fault-tolerant solve on protected factors from its start to its
//! end ([`run_solve`]): the region's log, the argument verdict with B's
//! protected copy set up, the check that the factors are whole, the
//! step-commit protocol over [`SolveOnFactors`], and B given back.
//! A solve supplies its [`SolveSteps`]; [`FactorsWhole`] is the check its
//! steps make that the factors they read are whole.

use super::rhs::ProtectedRhs;
use super::set_up::set_up_call;
use super::solve_driver::{SolveOnFactors, SolveSteps};
use super::{FtOptions, FtReport, FtWorkspace, ProtectedFactors};
use crate::args::{arg_error, entry};
use crate::error::{Error, Result};
use crate::matrix::DistMatrix;
use blacs_ft::Grid;
use recovery::protocol::{self, ProtocolError, Start};
use recovery::Region;
use std::cell::RefCell;
use std::rc::Rc;

/// Where a solve's arguments are (for its errors): the routine, its
/// factors' position and name, and B's descriptor's position and name.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SolveArgs {
    pub routine: &'static str,
    pub factors_position: u32,
    pub factors_name: &'static str,
    pub b_desc_position: u32,
    pub b_name: &'static str,
}

impl SolveArgs {
    /// The agreed refusal of factors not whole on grid rank `rank`.
    pub fn factors_lost(&self, rank: i32) -> Error {
        Error::InputLost {
            routine: self.routine.into(),
            position: self.factors_position,
            argument: self.factors_name.into(),
            rank,
        }
    }
}

/// Collective: runs the solve `steps` of `args.routine` on `factors` over
/// B (`b`, local input/output), as one call of the region's log.
///
/// * `check`: this process's own argument checks (ScaLAPACK's positions),
///   B's checksum layout added here; the verdict is agreed.
/// * A call completed before (a re-run of the region's body) returns at
///   once; on a replacement that joined after it, `b` is marked lost
///   ([`DistMatrix::is_lost`]): its part of the result went with the
///   failed process.
/// * A call restored from checkpoints (checkpoint-on-failure) is refused
///   with [`Error::InputLost`] on every process: a job started again keeps
///   no finished results, so the factors are gone.
/// * After the verdict of a fresh call, the factors are checked whole
///   ([`ProtectedFactors::check_whole`], agreed); not on a joining
///   replacement (the survivors are in their recovery, which rebuilds the
///   factors first). A refusal is recorded in the log: a re-run of the
///   body, or a replacement, gets the same error.
/// * B is copied into its protected extended matrix ([`ProtectedRhs`]);
///   on success it gets the result, on an error its content is as on entry
///   until the first commit point and undefined after.
///
/// The report's `overhead_model` is the extended B's extra columns (its
/// padding and checksums, which every step updates) as a fraction of
/// NRHS.
pub(crate) fn run_solve<S: SolveSteps, F: 'static>(
    region: &mut Region,
    args: SolveArgs,
    factors: &Rc<RefCell<ProtectedFactors<F>>>,
    b: &mut DistMatrix,
    check: Result<()>,
    steps: S,
    opts: &FtOptions,
) -> Result<FtReport> {
    let start = protocol::enter::<(), Error>(region, args.routine)?;
    match &start {
        Start::Done(()) => {
            if region.current_call_completed_before_joining() {
                b.set_lost(true);
            }
            return Ok(FtReport::default());
        }
        Start::Restore(r) => {
            // (Every process of a restarted job is here: no communication.)
            let e = args.factors_lost(0);
            region.forget_checkpoint(&r.from);
            region.refuse_call(e.to_record());
            return Err(e);
        }
        Start::Fresh | Start::Join { .. } => {}
    }
    let grid = region.grid();
    let layout = ProtectedRhs::layout(grid, b).map_err(|e| {
        arg_error(
            args.routine,
            args.b_desc_position,
            entry::NB,
            args.b_name,
            format!("cannot carry reverse-neighboring checksums: {e}"),
        )
    });
    let check = check.and_then(|()| layout.as_ref().map(|_| ()).map_err(Clone::clone));
    let mut work = FtWorkspace::new();
    let (ext, layout) = set_up_call(region, S::OP, args.routine, &start, b, &mut work, layout.ok(), check)?;
    let overhead_model = layout.n_extended() as f64 / b.n().max(1) as f64 - 1.0;
    if !start.joining() {
        let whole = factors.borrow().check_whole(region.grid(), args.routine, args.factors_position, args.factors_name);
        if let Err(e) = whole {
            ext.release(b, &mut work, false);
            if e.is_process_failure() {
                region.abandon_call();
            } else {
                region.refuse_call(e.to_record());
            }
            return Err(e);
        }
    }
    let shape = factors.borrow().ext.shape();
    let mut solve = SolveOnFactors { rhs: ProtectedRhs { ext, layout }, steps, factors: shape };
    let outcome = protocol::run(region, &mut solve, start, opts.verify);
    // One exit: B gets its storage back, with the result on success.
    solve.rhs.release(b, &mut work, outcome.is_ok());
    let outcome = outcome?;
    // (Its result is here now, a joining replacement's too.)
    b.set_lost(false);
    Ok(FtReport { recoveries: outcome.recoveries, overhead_model, check: outcome.check, earlier_s: outcome.earlier_s })
}

/// The check a solve's steps make that the factors they read are whole:
/// at the first step, and at the first step after a recovery (a step's
/// phase 1 that did not reach its commit), collective and agreed. The
/// region rebuilds the factors before the solve's own rebuild; only
/// factors it could not rebuild are refused here, on every process.
#[derive(Debug, Default)]
pub(crate) struct FactorsWhole {
    /// The step whose phase 1 needs no check: the one after the last
    /// commit, when no phase 1 failed since.
    checked_up_to: Option<u64>,
}

impl FactorsWhole {
    /// Collective at the start of step `k`'s phase 1 when a check is due
    /// (the same on every process: each recovery follows a failed phase 1
    /// or final agreement everywhere, and a replacement starts unchecked).
    pub fn before_step<F: 'static>(
        &mut self,
        grid: &Grid,
        factors: &ProtectedFactors<F>,
        k: u64,
        args: SolveArgs,
    ) -> Result<()> {
        let due = self.checked_up_to != Some(k);
        self.checked_up_to = None;
        if due {
            factors.check_whole(grid, args.routine, args.factors_position, args.factors_name)?;
        }
        Ok(())
    }

    /// Step `k` committed: the next step's phase 1 needs no check.
    pub fn committed(&mut self, k: u64) {
        self.checked_up_to = Some(k + 1);
    }
}
