//! The one path every driver call of the C ABI takes: the grid from the
//! descriptor's context, the local argument checks agreed on every
//! process, the routine run (repairing where it lost a process before it
//! could protect itself), and the errors turned into INFO.

use crate::process::{self, Context};
use scalapack_ft::error::agree_on_arguments;
use scalapack_ft::{Error, Grid, Result};
use std::os::raw::c_int;

/// INFO of a process failure ftla could not recover from (two processes
/// lost in one process row, no replacement to be had, more repairs than
/// allowed), the same on every surviving process. The reason is printed
/// on stderr. The outputs are undefined.
pub const FTLA_INFO_UNRECOVERABLE: c_int = -10001;
/// INFO of a routine without fault tolerance (the plain `ftla_pd*_`
/// routines) that lost a process: the grid was repaired (a replacement
/// holds the lost process's place), but the routine's outputs are
/// undefined everywhere. Call it again with its input.
pub const FTLA_INFO_PROCESS_LOST: c_int = -10002;
/// INFO when a process cannot get the memory the routine needs (nothing
/// was computed; the need is printed on stderr).
pub const FTLA_INFO_NO_MEMORY: c_int = -10003;
/// INFO, on a replacement process only, of a call that had completed
/// before this process joined the grid (the program runs from the top in
/// a replacement and makes its earlier calls again): the call returns at
/// once, its replicated outputs filled in (TAU, IPIV, the CG's iteration
/// count), but this process's part of the matrix results (A, X) was lost
/// with the process it replaces and is left as the program passed it.
/// The other processes hold their parts. Local: the survivors never see it.
pub const FTLA_INFO_RESULT_LOST: c_int = -10005;
/// INFO of any other error (an MPI error, a checkpoint that cannot be
/// used, a local error on another process); the reason is printed on
/// stderr.
pub const FTLA_INFO_ERROR: c_int = -10004;

/// Marks [`FTLA_INFO_RESULT_LOST`] on its way out of [`call`] (never a
/// grid rank).
const RESULT_LOST: i32 = i32::MIN;

/// Whether a routine protects its data (and then repairs and goes on
/// after losing a process) or not.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protection {
    FaultTolerant,
    Plain,
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
        Error::Argument { .. } | Error::Singular { .. } | Error::NotPositiveDefinite { .. } => e.info(),
        Error::Memory { .. } => FTLA_INFO_NO_MEMORY,
        Error::Grid(g) if g.is_unrecoverable() => FTLA_INFO_UNRECOVERABLE,
        Error::Grid(g) if g.is_process_failure() => FTLA_INFO_PROCESS_LOST,
        _ => FTLA_INFO_ERROR,
    }
}

/// A call that involves no other process (a workspace query): `f` runs the
/// local checks; an error sets INFO (local) and returns `None`.
pub(crate) fn run_local<T>(
    routine: &'static str,
    info: *mut c_int,
    ictxt: Option<c_int>,
    ctxt_desc: u32,
    f: impl FnOnce(&Grid, c_int) -> Result<T>,
) -> Option<T> {
    let mut guard = process::lock();
    let Some(process) = guard.as_mut() else {
        set_info(info, FTLA_INFO_ERROR);
        return None;
    };
    let Some(ctx) = ictxt.and_then(|c| process.context(c)) else {
        eprintln!("ftla: {routine}: descriptor {ctxt_desc} names no live grid (see Cftla_gridinit)");
        set_info(info, -(ctxt_desc as c_int * 100 + 2));
        return None;
    };
    let ictxt = ctx.ictxt;
    match f(ctx.region.grid(), ictxt) {
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

/// Runs one call of `routine` on the grid named by `ictxt` and sets INFO.
///
/// * `check` (local): the argument checks of this process; it returns
///   what `body` works on (the caller's matrices, imported).
/// * `body`: the routine; it copies its results back itself (also on an
///   error that leaves results, such as a singular U).
///
/// `ctxt_desc` is the position of the descriptor that names the grid:
/// a context that is not a live grid is INFO = -(ctxt_desc·100 + 2).
pub(crate) fn run<P>(
    routine: &'static str,
    info: *mut c_int,
    ictxt: Option<c_int>,
    ctxt_desc: u32,
    protection: Protection,
    check: impl FnOnce(&Grid, c_int) -> Result<P>,
    mut body: impl FnMut(&mut Context, &mut P, bool) -> Result<()>,
) {
    let mut guard = process::lock();
    let Some(process) = guard.as_mut() else {
        eprintln!("ftla: {routine}: ftla could not start (see above)");
        return set_info(info, FTLA_INFO_ERROR);
    };
    let Some(ictxt) = ictxt.filter(|&c| process.context(c).is_some()) else {
        eprintln!("ftla: {routine}: descriptor {ctxt_desc} names no live grid (see Cftla_gridinit)");
        return set_info(info, -(ctxt_desc as c_int * 100 + 2));
    };
    let ctx = process.context(ictxt).expect("a live context");
    let outcome = call(ctx, ictxt, protection, check, &mut body);
    if let Err(Error::Grid(blacs_ft::Error::Checkpointed { epoch, .. })) = &outcome {
        // The survivors saved their state (checkpoint-on-failure): the job
        // ends here and `ftla launch` starts it again.
        let detail = outcome.as_ref().err().map(|e| e.to_string()).unwrap_or_default();
        process.end_for_restart(*epoch, &format!("{routine}: {detail}"));
    }
    let grid = process.context(ictxt).expect("a live context").region.grid();
    match &outcome {
        Ok(()) => set_info(info, 0),
        Err(Error::Grid(blacs_ft::Error::Remote { rank: RESULT_LOST, .. })) => set_info(info, FTLA_INFO_RESULT_LOST),
        Err(e) => {
            // An agreed error is the same everywhere: said once. A failure
            // is said by every process that saw it.
            let agreed = matches!(
                e,
                Error::Argument { .. } | Error::Memory { .. } | Error::Grid(blacs_ft::Error::Checkpoint { .. })
            );
            let result_error = matches!(e, Error::Singular { .. } | Error::NotPositiveDefinite { .. });
            if !result_error && agreed && grid.rank() == 0 {
                eprintln!("ftla: {e}");
            } else if !result_error && !agreed {
                eprintln!("ftla: {routine}: grid rank {}: {e}", grid.rank());
            }
            set_info(info, info_of(e));
        }
    }
}

fn call<P>(
    ctx: &mut Context,
    ictxt: c_int,
    protection: Protection,
    check: impl FnOnce(&Grid, c_int) -> Result<P>,
    body: &mut impl FnMut(&mut Context, &mut P, bool) -> Result<()>,
) -> Result<()> {
    let local = check(ctx.region.grid(), ictxt);
    // A replacement making a call that completed before it joined.
    let log = ctx.region.log();
    let lost = protection == Protection::FaultTolerant
        && ctx.region.grid().replacement().is_some()
        && log.calls().get(log.position()).is_some_and(|c| c.done);
    let result_lost = || Err(Error::Grid(blacs_ft::Error::Remote { rank: RESULT_LOST, message: String::new() }));
    if lost {
        // (Nothing collective: the survivors are past this call.)
        let mut p = local?;
        return body(ctx, &mut p, true).and_then(|()| result_lost());
    }
    if ctx.region.is_joining() {
        // A replacement joining the survivors' recovery of this call: they
        // are inside it, past its argument checks.
        let mut p = match local {
            Ok(p) => p,
            Err(e) => {
                let who = ctx.region.grid().rank();
                return Err(ctx.region.refuse_join(format!("replacement grid rank {who}: {e}")).into());
            }
        };
        return match body(ctx, &mut p, false) {
            Err(e) if e.is_process_failure() => {
                // Lost a process before the call could protect itself:
                // as below, with the survivors.
                ctx.region.repair()?;
                if protection == Protection::Plain {
                    return Err(e);
                }
                again(ctx, protection, &mut p, body)
            }
            other => other,
        };
    }
    loop {
        let status = local.as_ref().map(|_| ()).map_err(Clone::clone);
        match agree_on_arguments(ctx.region.grid(), status) {
            Ok(()) => break,
            // A process lost before the call began: repair and agree
            // again (a replacement, which runs the program from the top,
            // meets the survivors here).
            Err(e) if e.is_process_failure() => {
                ctx.region.repair()?;
            }
            Err(e) => return Err(e),
        }
    }
    let mut p = local?;
    match body(ctx, &mut p, false) {
        Err(e) if e.is_process_failure() => {
            ctx.region.repair()?;
            if protection == Protection::Plain {
                return Err(e);
            }
            again(ctx, protection, &mut p, body)
        }
        other => other,
    }
}

/// The call again after a repair, from its agreement on: a fault-tolerant
/// routine that lost a process before its first commit point (its input
/// untouched) starts over — with the replacement, which runs the program
/// from the top and meets the survivors at this call's agreement.
fn again<P>(
    ctx: &mut Context,
    protection: Protection,
    p: &mut P,
    body: &mut impl FnMut(&mut Context, &mut P, bool) -> Result<()>,
) -> Result<()> {
    loop {
        match agree_on_arguments(ctx.region.grid(), Ok(())) {
            Ok(()) => {}
            Err(e) if e.is_process_failure() => {
                ctx.region.repair()?;
                continue;
            }
            Err(e) => return Err(e),
        }
        match body(ctx, p, false) {
            Err(e) if e.is_process_failure() => {
                ctx.region.repair()?;
                if protection == Protection::Plain {
                    return Err(e);
                }
            }
            other => return other,
        }
    }
}
