//! The one path every driver call of the C ABI takes: the grid, the local
//! argument checks, the call through the region's call gate
//! ([`recovery::gate`]: the status log, one verdict on every process —
//! a fault-tolerant routine's is its driver's —, the repair of a process
//! lost before the first commit point), and the errors turned into INFO.
//!
//! Every call, plain or fault tolerant, is recorded in the region's status
//! log, so that a replacement process — which runs the program from the
//! top and makes the calls the survivors made before it joined — skips
//! those calls instead of meeting the survivors in a collective they are
//! not in.

use crate::kept::KeptFactors;
use crate::lost::ArrayArg;
use crate::process::{self, Context};
use recovery::gate::{self, Ended};
use recovery::Region;
use scalapack_ft::args::{arg_error, entry};
use scalapack_ft::{drivers, Error, Grid, Result};
use std::os::raw::c_int;

/// INFO of a process failure ftla could not recover from (two processes
/// lost in one process row, no replacement to be had, more repairs than
/// allowed), the same on every surviving process. The reason is printed
/// on stderr. The outputs are undefined.
pub const FTLA_INFO_UNRECOVERABLE: c_int = -10001;
/// INFO of a routine without fault tolerance (the plain `ftla_pd*_`
/// routines) that lost a process: the grid was repaired (a replacement
/// holds the lost process's place), but the routine's outputs are
/// undefined everywhere. The survivors' next ftla call must be this one
/// again, with its input: the replacement, which runs the program from
/// the top, skips the calls completed before (they are in the status log)
/// and meets the survivors there. Its inputs that were outputs of earlier
/// calls are lost (those calls returned `FTLA_INFO_RESULT_LOST` in it):
/// feed a plain routine from the program's own data, or use the
/// fault-tolerant routines (a routine that reads such an input refuses
/// it, `FTLA_INFO_INPUT_LOST`).
pub const FTLA_INFO_PROCESS_LOST: c_int = -10002;
/// INFO when a process cannot get the memory the routine needs (nothing
/// was computed; the need is printed on stderr).
pub const FTLA_INFO_NO_MEMORY: c_int = -10003;
/// INFO, on a replacement process only, of a call that had completed
/// before this process joined the grid (the program runs from the top in
/// a replacement and makes its earlier calls again): the call returns at
/// once without communicating; a fault-tolerant routine fills in its
/// replicated outputs (TAU, IPIV, the CG's iteration count), but this
/// process's part of the matrix results (A, X) was lost with the process
/// it replaces and is left as the program passed it. The other processes
/// hold their parts. Local: the survivors never see it. The matrix
/// results are recorded as lost here, and a routine given one to read
/// refuses it on every process (`FTLA_INFO_INPUT_LOST`). Not of
/// `pdgetrf_ft_`, `pdgeqrf_ft_` and `pdpotrf_ft_`, whose factors ftla keeps
/// protected: their re-run returns INFO = 0 and the replacement's A gets
/// its factors when it meets the survivors (see the header's
/// introduction); `pdposv_ft_`'s re-run returns this INFO for its X, but
/// its A, whose factor is kept, is not lost and gets the factor the same
/// way.
pub const FTLA_INFO_RESULT_LOST: c_int = -10005;
/// INFO of any other error (an MPI error, a checkpoint that cannot be
/// used, a local error on another process); the reason is printed on
/// stderr.
pub const FTLA_INFO_ERROR: c_int = -10004;
/// INFO of a call given an input whose part on some process was lost with
/// a failed process: an output of an earlier call that completed before
/// that process — a replacement — joined the grid (the call returned
/// `FTLA_INFO_RESULT_LOST` there), or factors ftla keeps (from
/// `pdgetrf_ft_`, `pdgeqrf_ft_`) that could not be rebuilt (more losses in
/// one process row between two ftla calls than their checksums
/// tolerate). The same on every process; nothing was computed; the
/// argument and the process are printed on stderr.
///
/// ftla knows such an array as the program passed it to that earlier call:
/// its local array's address and its descriptor's nine entries (for IPIV
/// and TAU, A's descriptor). Lost are the arrays the call overwrites with
/// its results on that process — a plain factorization's A, a solve's B,
/// `pdcg_ft_`'s X, `pdgels_ft_`'s A and B — and, of a plain factorization,
/// IPIV or TAU too (the fault-tolerant ones fill those in on a
/// replacement). Every routine, plain or fault tolerant, checks the arrays
/// it reads without overwriting them — the solves' A and IPIV or TAU,
/// `pdcg_ft_`'s A and B — before it computes, and the processes agree on
/// the verdict. An array a routine overwrites with its results (a
/// factorization's A, a solve's B, CG's X) is the program's data for that
/// call and is not checked (a
/// program that reuses its storage fills it again first, which ftla cannot
/// tell from a lost output): do not pass a lost output there. An array is
/// no longer lost once a routine wrote its results into it on that
/// process: after this INFO, fill A again from the program's data and
/// factor it again. The refusal is recorded in the status log like an
/// argument error, so a later replacement running the program from the
/// top gets it too.
pub const FTLA_INFO_INPUT_LOST: c_int = -10006;

/// Whether a routine protects its data (and then repairs and goes on
/// after losing a process) or not.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protection {
    FaultTolerant,
    Plain,
}

/// A routine of the C ABI.
pub(crate) struct Routine {
    /// Its C name, for messages.
    pub name: &'static str,
    /// Its name in the status log (the Rust driver's, for the
    /// fault-tolerant ones).
    pub log_name: &'static str,
    pub protection: Protection,
    /// Its matrix result stays protected after it returns: ftla keeps the
    /// factors (`crate::kept`), and on a replacement a re-run of a call
    /// that completed before it joined returns INFO 0 with a hollow copy
    /// that the next meeting fills (not `FTLA_INFO_RESULT_LOST`).
    pub keeps_result: bool,
    /// It communicates before its driver's verdict, so the call gate
    /// agrees on its checks first (`recovery::gate::Protection`).
    pub agrees_first: bool,
    /// The position of the descriptor that names the grid (INFO
    /// -(pos·100 + 2), its `CTXT` entry, when there is no grid).
    pub ctxt_desc: u32,
}

impl Routine {
    /// The routine as the region's call gate knows it (a fault-tolerant
    /// one with its driver's kill operation, from the catalogue of
    /// drivers).
    fn gate(&self) -> gate::Routine {
        let protection = match self.protection {
            Protection::FaultTolerant => gate::Protection::FaultTolerant {
                kill_op: drivers::Driver::by_routine(self.log_name).map_or(self.log_name, |d| d.kill_op),
                keeps_result: self.keeps_result,
                agrees_first: self.agrees_first,
            },
            Protection::Plain => gate::Protection::Plain,
        };
        gate::Routine { name: self.name, log_name: self.log_name, protection }
    }
}

/// What a routine's checked arguments say about its work.
pub(crate) trait Work {
    /// Nothing to compute (a zero dimension): after the verdict (an
    /// agreement) the call is complete in the log on every process, and
    /// returns.
    fn is_empty(&self) -> bool;
}

/// Writes INFO.
pub(crate) fn set_info(info: *mut c_int, v: c_int) {
    if !info.is_null() {
        // SAFETY: pointer to an int (null checked).
        unsafe { *info = v };
    }
}

/// ScaLAPACK's INFO for an error of a routine.
fn info_of(e: &Error) -> c_int {
    match e {
        Error::Argument { .. }
        | Error::Singular { .. }
        | Error::NotPositiveDefinite { .. }
        | Error::MinorNotPositiveDefinite { .. } => e.info(),
        Error::Memory { .. } => FTLA_INFO_NO_MEMORY,
        Error::InputLost { .. } => FTLA_INFO_INPUT_LOST,
        Error::Grid(g) if g.is_unrecoverable() => FTLA_INFO_UNRECOVERABLE,
        Error::Grid(g) if g.is_process_failure() => FTLA_INFO_PROCESS_LOST,
        _ => FTLA_INFO_ERROR,
    }
}

/// A call before any grid exists: its grid-naming descriptor's `CTXT`
/// names none.
pub(crate) fn no_grid(r: &Routine, info: *mut c_int) {
    let e = arg_error(r.name, r.ctxt_desc, entry::CTXT, "CTXT", "names no grid (call Cftla_gridinit first)");
    eprintln!("ftla: {e}");
    set_info(info, e.info());
}

/// A call that involves no other process (a workspace query): `f` runs the
/// local checks on the grid and its context; an error sets INFO (local)
/// and returns `None`.
pub(crate) fn run_local<T>(r: &Routine, info: *mut c_int, f: impl FnOnce(&Grid, c_int) -> Result<T>) -> Option<T> {
    let mut guard = process::lock();
    let Some(process) = guard.as_mut() else {
        set_info(info, FTLA_INFO_ERROR);
        return None;
    };
    let Some(ctx) = process.context.as_mut() else {
        no_grid(r, info);
        return None;
    };
    match f(ctx.region.grid(), ctx.ictxt) {
        Ok(v) => {
            set_info(info, 0);
            Some(v)
        }
        Err(e) => {
            eprintln!("ftla: {e}");
            set_info(info, info_of(&e));
            None
        }
    }
}

/// Runs one call of routine `r` and sets INFO.
///
/// * `arrays`: the call's array arguments, for the record of lost outputs
///   (an input lost on any process refuses the call on every process, with
///   `FTLA_INFO_INPUT_LOST`).
/// * `check` (local): the argument checks of this process against the
///   grid, its context (a descriptor naming another context is one of
///   them) and the kept factors; it returns what `body` works on (the
///   caller's matrices, imported). It runs after the call's meeting with
///   the other processes has copied mended factors into a replacement's
///   arrays (and again after a repair before the verdict).
/// * `body`: the routine; it copies its results back itself (also on an
///   error that leaves results, such as a singular U). Its flag says the
///   call completed before this replacement joined: its matrix results
///   must not be copied back.
pub(crate) fn run<P: Work>(
    r: &Routine,
    info: *mut c_int,
    arrays: &[ArrayArg],
    check: impl Fn(&Grid, c_int, &KeptFactors) -> Result<P>,
    mut body: impl FnMut(&mut Context, &mut P, bool) -> Result<()>,
) {
    let mut guard = process::lock();
    let Some(process) = guard.as_mut() else {
        eprintln!("ftla: {}: ftla could not start (see above)", r.name);
        return set_info(info, FTLA_INFO_ERROR);
    };
    // (ftla holds one grid: a descriptor naming another context is an
    // argument error, agreed on that grid.)
    let Some(ctx) = process.context.as_mut() else {
        return no_grid(r, info);
    };
    // An array the call overwrites is the program's data for it: factors
    // kept for it go (every process makes the same calls, so every process
    // lets them go here).
    ctx.kept.release_overwritten(arrays);
    let outcome = gate::call(&mut CallSite { ctx: &mut *ctx, r, arrays, check, body: &mut body }, &r.gate());
    // The record of lost outputs follows what the call did to its arrays
    // here.
    match &outcome {
        // (A singular U is a complete factorization.)
        Ok(Ended::Computed) | Err(Error::Singular { .. } | Error::MinorNotPositiveDefinite { .. }) => {
            ctx.lost.outputs_written(arrays)
        }
        Ok(Ended::ResultLost) => {
            // (An array whose factors ftla keeps, such as `pdposv_ft_`'s A,
            // is not lost, whatever it held before: the next meeting mends
            // the factors into it.)
            let (kept, outputs): (Vec<ArrayArg>, Vec<ArrayArg>) =
                arrays.iter().cloned().partition(|a| a.key.is_some_and(|k| ctx.kept.find(&k).is_some()));
            ctx.lost.lose_outputs(&outputs, r.protection == Protection::FaultTolerant);
            ctx.lost.outputs_written(&kept)
        }
        Err(_) => {}
    }
    // A joining replacement's kept factors were mended in the call's
    // recovery: its arrays get them now. (Local.)
    ctx.kept.settle(ctx.region.grid(), &mut ctx.lost);
    if let Err(Error::Grid(e @ blacs_ft::Error::Checkpointed { epoch, .. })) = &outcome {
        // The survivors saved their state (checkpoint-on-failure): the job
        // ends here and `ftla launch` starts it again.
        let detail = format!("{}: {e}", r.name);
        process.end_for_restart(*epoch, &detail);
    }
    let rank = process.context.as_ref().map_or(-1, |c| c.region.grid().rank());
    match &outcome {
        Ok(Ended::Computed) => set_info(info, 0),
        Ok(Ended::ResultLost) => set_info(info, FTLA_INFO_RESULT_LOST),
        Err(e) => {
            // An agreed error is the same everywhere: said once. A failure
            // is said by every process that saw it; a result (a zero pivot,
            // no convergence) is INFO only.
            let agreed = matches!(
                e,
                Error::Argument { .. }
                    | Error::Memory { .. }
                    | Error::InputLost { .. }
                    | Error::Grid(blacs_ft::Error::Checkpoint { .. } | blacs_ft::Error::Remote { .. })
            );
            let result = matches!(
                e,
                Error::Singular { .. } | Error::NotPositiveDefinite { .. } | Error::MinorNotPositiveDefinite { .. }
            );
            if agreed && rank == 0 {
                eprintln!("ftla: {e}");
            } else if !agreed && !result {
                eprintln!("ftla: {}: grid rank {rank}: {e}", r.name);
            }
            set_info(info, info_of(e));
        }
    }
}

/// One call of the C ABI at the region's call gate.
struct CallSite<'c, C, B> {
    ctx: &'c mut Context,
    r: &'c Routine,
    arrays: &'c [ArrayArg],
    check: C,
    body: &'c mut B,
}

impl<P, C, B> gate::Site for CallSite<'_, C, B>
where
    P: Work,
    C: Fn(&Grid, c_int, &KeptFactors) -> Result<P>,
    B: FnMut(&mut Context, &mut P, bool) -> Result<()>,
{
    type Args = P;
    type Error = Error;

    fn region(&mut self) -> &mut Region {
        &mut self.ctx.region
    }

    /// A replacement's kept factors, mended by the region, are copied into
    /// its arrays ([`KeptFactors::settle`]).
    fn settle(&mut self) {
        self.ctx.kept.settle(self.ctx.region.grid(), &mut self.ctx.lost);
    }

    fn check(&mut self) -> Result<P> {
        (self.check)(self.ctx.region.grid(), self.ctx.ictxt, &self.ctx.kept)
    }

    fn check_inputs(&mut self) -> Result<()> {
        self.ctx.lost.check(self.r.name, self.ctx.region.grid(), self.arrays)
    }

    fn is_empty(args: &P) -> bool {
        args.is_empty()
    }

    fn run(&mut self, args: &mut P, completed_before_joining: bool) -> Result<()> {
        (self.body)(self.ctx, args, completed_before_joining)
    }

    fn explain(grid: &Grid, local: Result<()>) -> Error {
        scalapack_ft::error::agreed_refusal(grid, local)
    }
}
