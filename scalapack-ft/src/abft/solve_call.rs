//! One fault-tolerant solve on protected factors from its start to its
//! end ([`run_solve`]), the one runner of every solve (`pdgetrs_ft`,
//! `pdormqr_ft`, `upper_solve_ft`, `pdgels_ft`): the region's log, the
//! verdict on the arguments and on the factors being whole, with B's
//! protected copy set up, the step-commit protocol over
//! [`SolveOnFactors`], and B given back. A solve supplies its checks and
//! its [`SolveSteps`].

use super::rhs::ProtectedRhs;
use super::set_up::{agree_on_factors, check_factors_held, set_up_call};
use super::solve_driver::{SolveOnFactors, SolveSteps};
use super::{FtOptions, FtReport, FtWorkspace, Holding, ProtectedFactors};
use crate::error::{Error, Result};
use crate::matrix::DistMatrix;
use recovery::protocol::{self, Start};
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

/// Collective: runs the solve of `args.routine` on `factors` over B
/// (`b`, local input/output), as one call of the region's log, its
/// protected B in `work`.
///
/// * `check`: this process's own argument checks (the routine's
///   ScaLAPACK ones, at its positions); the one restriction on B beyond
///   them is checked here ([`ProtectedRhs::checked_layout`]), and the
///   verdict is agreed.
/// * `make_steps`: the solve's steps, made once B's protected copy
///   exists (they work on its live columns,
///   [`ProtectedRhs::live_columns`]).
/// * A call completed before (a re-run of the region's body) returns at
///   once; on a replacement that joined after it, `b` is marked lost
///   ([`DistMatrix::is_lost`]): its part of the result went with the
///   failed process.
/// * A call restored from checkpoints (checkpoint-on-failure) resumes
///   from them: the job started again runs the program from the top, so
///   the factorization before the solve was made again in this job, and
///   its factors are whole (the agreement below refuses them otherwise).
/// * The factors are agreed whole: by the verdict itself, one of its
///   checks ([`check_factors_held`]), or after a repair, whose mend at
///   the verdict's meeting rebuilds them, by a second verdict once mended
///   ([`agree_on_factors`]); not on a joining replacement: the survivors
///   are in their recovery, which rebuilds the factors first. Every step
///   checks it again ([`SolveOnFactors`]). A refusal is
///   [`Error::InputLost`] on every process (unless the verdict found
///   another error first) and is recorded in the log: a re-run of the
///   body, or a replacement, gets the same error.
/// * B is copied into its protected extended matrix ([`ProtectedRhs`], in
///   `work` or in B's own storage when it has room); on success it gets
///   the result, on an error its content is as on entry until the first
///   commit point and undefined after.
///
/// The report's `overhead_model` is the live checksum columns (which
/// every step updates besides B's) as a fraction of NRHS.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_solve<S: SolveSteps, F: 'static>(
    region: &mut Region,
    args: SolveArgs,
    factors: &Rc<RefCell<ProtectedFactors<F>>>,
    b: &mut DistMatrix,
    check: Result<()>,
    make_steps: impl Fn(&ProtectedRhs) -> S,
    opts: &FtOptions,
    work: &mut FtWorkspace,
) -> Result<FtReport> {
    let start = protocol::enter::<(), Error>(region, args.routine)?;
    let start = protocol::start_over_if_saved_elsewhere(region, start, args.routine);
    if let Start::Done(()) = start {
        if region.current_call_completed_before_joining() {
            b.set_lost(true);
        }
        return Ok(FtReport::default());
    }
    // (Factors lost here are said as such before anything is checked
    // against them: a shrink between calls may have left them on the grid
    // before.)
    let check = match factors.borrow().holding {
        Holding::Lost => check_factors_held(
            Holding::Lost,
            region.grid().rank(),
            args.routine,
            args.factors_position,
            args.factors_name,
        ),
        _ => check,
    };
    // (B's checksums in the factors' layout: the solve tolerates what they do.)
    let kind = factors.borrow().layout.kind();
    let layout = check.and_then(|()| {
        ProtectedRhs::checked_layout(region.grid(), b, args.routine, args.b_desc_position, args.b_name, kind)
    });
    // The verdict's meeting mends the region's protected results after a
    // repair only (the same on every process). Without one, the factors'
    // holding cannot change there: it is one more check of the verdict,
    // and one agreement decides both. After one, it is known once mended,
    // and a second verdict agrees on it. (A joining replacement checks
    // nothing of it: the survivors' recovery fills its copy.)
    let mends = region.protected_pending();
    let (layout, check) = match layout {
        Ok(l) if mends || start.joining() => (Some(l), Ok(())),
        Ok(l) => {
            let held = check_factors_held(
                factors.borrow().holding,
                region.grid().rank(),
                args.routine,
                args.factors_position,
                args.factors_name,
            );
            (Some(l), held)
        }
        Err(e) => (None, Err(e)),
    };
    let (ext, layout) =
        set_up_call(region, S::OP, args.routine, &start, b, work, (layout, crate::abft::Relations::Whole), check)?;
    let rhs = ProtectedRhs { ext, layout };
    if mends {
        // The factors, now that the verdict's meeting has mended them.
        let holding = factors.borrow().holding;
        let (routine, position, name) = (args.routine, args.factors_position, args.factors_name);
        if let Err(e) = agree_on_factors(region, S::OP, &start, holding, routine, position, name) {
            rhs.release(b, work, false);
            return Err(e);
        }
    }
    let nrhs = b.n();
    let overhead_model = if nrhs == 0 { 0.0 } else { rhs.live_columns().checksum_columns as f64 / nrhs as f64 };
    let steps = make_steps(&rhs);
    let shape = factors.borrow().ext.shape();
    let mut solve = SolveOnFactors {
        rhs,
        steps,
        make_steps: &make_steps,
        moved: None,
        b_nb: b.nb(),
        before_shrink: None,
        factors: factors.clone(),
        shape,
        args,
    };
    let outcome = protocol::run(region, &mut solve, start, opts.verify);
    // One exit: B gets its storage back, with the result on success
    // (after a shrink, B is the matrix on the new grid).
    if let Some(moved) = solve.moved.take() {
        *b = moved;
    }
    solve.rhs.release(b, work, outcome.is_ok());
    let outcome = outcome?;
    // (Its result is here now, a joining replacement's too.)
    b.set_lost(false);
    Ok(FtReport { recoveries: outcome.recoveries, overhead_model, check: outcome.check, earlier_s: outcome.earlier_s })
}
