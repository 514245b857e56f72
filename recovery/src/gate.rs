//! The call of a library routine made by a program that a replacement runs
//! from the top (the C ABI's): the one place, beside the drivers'
//! [`protocol`], where a call enters the region's status log, is agreed
//! on, refused, forgotten or completed.
//!
//! A replacement process runs the program from `main` and makes the calls
//! the survivors made before it joined. Each call finds its place in the
//! log:
//! * a call every process refused before: the same error again, nothing
//!   collective;
//! * a call that completed before this process joined: it returns at once
//!   (a fault-tolerant routine fills in its replicated outputs from the
//!   log; the matrix results of the process it replaces are gone, and the
//!   call says so with [`Ended::ResultLost`]);
//! * the survivors' interrupted call: it joins their recovery, inside the
//!   driver;
//! * a new call: the processes meet (the protected results are mended, a
//!   replacement's arrays get them) and agree on one verdict. A
//!   fault-tolerant routine's verdict is its driver's
//!   ([`protocol::agree_to_start`]), which takes the caller's checks with
//!   its own: a process whose caller's checks failed makes the same
//!   agreement here, without the driver. A plain routine (no driver of the
//!   protocol), a call with nothing to compute, or a routine that
//!   communicates before its driver's verdict
//!   (`agrees_first` of [`Protection::FaultTolerant`]) is agreed on here.
//!
//! A process lost before a call's first commit point (its input
//! untouched) is repaired here and the call starts again from the
//! meeting, where a replacement meets the survivors. A plain routine ends
//! with an agreement on whether every process came through it: if not,
//! the grid is repaired and every process returns the process failure.

use crate::protocol::{self, ProtocolError};
use crate::Region;
use blacs_ft::Grid;

/// Whether a routine protects its data (and then repairs and goes on after
/// losing a process) or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protection {
    /// A driver of the step-commit protocol.
    FaultTolerant {
        /// Its kill operation (`qr`: kill points `R@qr:0:args`).
        kill_op: &'static str,
        /// Its matrix result stays protected after it returns: on a
        /// replacement, a re-run of a call that completed before it joined
        /// gives the routine's result (a hollow copy, which the next
        /// meeting fills), not [`Ended::ResultLost`].
        keeps_result: bool,
        /// It communicates before its driver's verdict (a least-squares
        /// solve of fewer rows than columns transposes A first): the gate
        /// agrees on the caller's checks first, so that a process whose
        /// checks failed is never alone in an agreement while the others
        /// exchange data; the driver's verdict follows.
        agrees_first: bool,
    },
    /// No protection: a loss during the call loses its result.
    Plain,
}

/// A routine called through the gate.
#[derive(Clone, Copy, Debug)]
pub struct Routine {
    /// Its name, for messages.
    pub name: &'static str,
    /// Its name in the status log (the driver's, for the fault-tolerant
    /// ones; a routine of two calls in the log names the first).
    pub log_name: &'static str,
    pub protection: Protection,
}

/// How a call ended well.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    Computed,
    /// On a replacement: the call had completed before it joined, and this
    /// process's part of its matrix results was lost.
    ResultLost,
}

/// The caller's side of a call: its arguments, its checks and its routine.
pub trait Site {
    /// What the routine works on: the checked arguments.
    type Args;
    type Error: ProtocolError;

    /// The region the call is made in.
    fn region(&mut self) -> &mut Region;
    /// Local, after every meeting (the region mended its protected
    /// results): the caller's own copies of them are brought up to date.
    fn settle(&mut self);
    /// Local: this process's argument checks; what the routine works on.
    fn check(&mut self) -> Result<Self::Args, Self::Error>;
    /// Local, for a new call only: the inputs are not results this process
    /// lost (only a replacement knows; the verdict tells everybody).
    fn check_inputs(&mut self) -> Result<(), Self::Error>;
    /// Nothing to compute (a zero dimension): after the verdict the call
    /// returns on every process.
    fn is_empty(args: &Self::Args) -> bool;
    /// Runs the routine (for a fault-tolerant one, its driver, which makes
    /// the call's verdict). `completed_before_joining`: on a replacement,
    /// the call completed before it joined; its matrix results must not
    /// be copied back.
    fn run(&mut self, args: &mut Self::Args, completed_before_joining: bool) -> Result<(), Self::Error>;
    /// Collective, on a refusal: the same error on every process from the
    /// local outcomes (the drivers' explanation, so that both sides of the
    /// agreement make the same collective).
    fn explain(grid: &Grid, local: Result<(), Self::Error>) -> Self::Error;
}

/// Makes one call of `routine` (see the module documentation).
///
/// # Errors
/// The routine's, or the verdict's (the same on every process), or a
/// process failure of a plain routine (the grid is repaired), or an
/// unrecoverable failure.
pub fn call<S: Site>(site: &mut S, routine: &Routine) -> Result<Ended, S::Error> {
    let name = routine.log_name;
    // A call that every process refused before (a replacement running the
    // program from the top): the same error again, nothing collective.
    if let Some(error) = site.region().log().next_refusal(name).map(S::Error::from_record) {
        drop(site.region().enter_call(name));
        return Err(error);
    }
    // A replacement making a call that completed before it joined: the
    // survivors are past it. Nothing collective.
    if site.region().next_call_completed_before_joining(name) {
        return completed_before_joining(site, routine);
    }
    let mut joined = None;
    if site.region().is_joining() {
        // A replacement joining the survivors' recovery of the interrupted
        // call: they are inside it, past its verdict.
        let refuse = |site: &mut S, why: String| -> S::Error {
            let who = site.region().grid().rank();
            site.region().refuse_join(format!("replacement grid rank {who}: {why}")).into()
        };
        joined = match (site.check(), routine.protection) {
            (Ok(args), Protection::FaultTolerant { .. }) => Some(args),
            (Ok(_), Protection::Plain) => {
                let why = format!("{} was called where the survivors are inside a fault-tolerant call", routine.name);
                return Err(refuse(site, why));
            }
            (Err(e), _) => return Err(refuse(site, e.to_string())),
        };
    }
    // `again`: the routine runs again without a new start (its first call
    // in the log completed: a least-squares solve whose solve failed before
    // its first commit).
    let mut again = joined;
    loop {
        let mut args = match again.take() {
            Some(args) => args,
            None => match start(site, routine)? {
                Started::Run(args) => args,
                Started::Over(ended) => return Ok(ended),
                Started::Repaired => continue,
            },
        };
        if routine.protection == Protection::Plain {
            return run_plain(site, routine, &mut args);
        }
        let position = site.region().log().position();
        match site.run(&mut args, false) {
            // Lost before its first commit point (the input untouched): the
            // routine runs again from its first call in the log. The
            // replacement meets the survivors where the log sends it: where
            // that first call had completed, it re-runs the routine as a
            // call completed before it joined, and so do the survivors;
            // otherwise the call starts afresh for everybody.
            Err(e) if e.is_process_failure() => {
                site.region().repair()?;
                site.region().rewind_to(position);
                if site.region().log().next_is_done(name) {
                    again = Some(args);
                }
            }
            other => return other.map(|()| Ended::Computed),
        }
    }
}

/// How a new call's start went.
enum Started<A> {
    /// Agreed (or, for a fault-tolerant routine, to be agreed by its
    /// driver): run it.
    Run(A),
    /// Over on every process (nothing to compute).
    Over(Ended),
    /// A process was lost before the verdict: repaired, start again.
    Repaired,
}

/// The start of a new call: the meeting, the checks and — unless the
/// driver of a fault-tolerant routine makes it — the verdict.
fn start<S: Site>(site: &mut S, routine: &Routine) -> Result<Started<S::Args>, S::Error> {
    // The first point where the processes meet after a repair between
    // calls: the region mends its protected results and the caller's
    // copies get them, before the checks read them. (Every process goes
    // on to the verdict even when its mend failed: the agreement is where
    // they all learn of it.)
    let mended = site.region().mend_protected().map(drop);
    if mended.is_ok() {
        site.settle();
    }
    let checked = site.check().and_then(|args| site.check_inputs().map(|()| args));
    let (driver, agrees_first) = match routine.protection {
        Protection::FaultTolerant { kill_op, agrees_first, .. } => (Some(kill_op), agrees_first),
        Protection::Plain => (None, false),
    };
    let (local, args) = match checked {
        Ok(args) => (Ok(()), Some(args)),
        Err(e) => (Err(e), None),
    };
    let args = match args {
        // The driver's verdict is the call's: it agrees on these checks
        // with its own.
        Some(args) if driver.is_some() && !agrees_first && mended.is_ok() && !S::is_empty(&args) => {
            return Ok(Started::Run(args))
        }
        other => other,
    };
    // (A routine that communicates before its driver's verdict: agreed on
    // here first, and entered in the log by its driver, or here when
    // refused or empty.)
    let enters = !(agrees_first && args.as_ref().is_some_and(|a| !S::is_empty(a)));
    match protocol::enter_and_agree(site.region(), routine.log_name, driver, enters, mended, local, S::explain) {
        Ok(()) => {}
        Err(e) if e.is_process_failure() => {
            site.region().repair()?;
            return Ok(Started::Repaired);
        }
        Err(e) => return Err(e),
    }
    let args = args.ok_or_else(|| unagreed(routine))?;
    if S::is_empty(&args) {
        // (After the verdict, as ScaLAPACK checks its arguments before a
        // quick return: a process with bad arguments is never left alone
        // in an agreement.)
        site.region().complete(&Vec::<f64>::new());
        return Ok(Started::Over(Ended::Computed));
    }
    Ok(Started::Run(args))
}

/// Agreed although this process's checks failed (which the agreement
/// rules out).
fn unagreed<E: From<blacs_ft::Error>>(routine: &Routine) -> E {
    blacs_ft::Error::Unrecoverable { reason: format!("{}: a verdict agreed without this process", routine.name) }.into()
}

/// A plain routine, once its start is agreed: run, then an agreement on
/// whether every process came through it.
fn run_plain<S: Site>(site: &mut S, routine: &Routine, args: &mut S::Args) -> Result<Ended, S::Error> {
    // (A kill point for tests: `FTLA_KILL=RANK@ftla_pdgeqrf:0:call`.)
    site.region().grid().inject(routine.log_name, 0, "call");
    let outcome = site.run(args, false);
    let came_through = !matches!(&outcome, Err(e) if e.is_process_failure());
    let region = site.region();
    match region.grid().agree(came_through) {
        Ok(true) => {
            // (Its other errors are results or agreed: the call is over for
            // everybody, and a replacement skips it.)
            region.complete(&Vec::<f64>::new());
            outcome.map(|()| Ended::Computed)
        }
        Ok(false) => {
            region.abandon_call();
            region.repair()?;
            Err(blacs_ft::Error::ProcFailed { ranks: Vec::new() }.into())
        }
        Err(e) if e.is_process_failure() => {
            region.abandon_call();
            region.repair()?;
            Err(e.into())
        }
        Err(e) => {
            region.abandon_call();
            Err(e.into())
        }
    }
}

/// A replacement's re-run of a call that completed before it joined.
fn completed_before_joining<S: Site>(site: &mut S, routine: &Routine) -> Result<Ended, S::Error> {
    let mut args = site.check()?;
    if S::is_empty(&args) {
        drop(site.region().enter_call(routine.log_name));
        return Ok(Ended::Computed);
    }
    match routine.protection {
        // The driver finds the call done in the log and fills in the
        // replicated outputs; one that keeps its result keeps a hollow
        // copy, which the next meeting fills. A routine of two calls in the
        // log whose second was interrupted joins the survivors' recovery
        // there, and computes. (A result such as a singular U: the call was
        // complete; one that keeps its result kept it, and says so as on
        // the survivors.)
        Protection::FaultTolerant { keeps_result, .. } => match site.run(&mut args, true) {
            Ok(()) if keeps_result || !site.region().current_call_completed_before_joining() => {
                return Ok(Ended::Computed)
            }
            Err(e) if e.is_result() && keeps_result => return Err(e),
            Ok(()) => {}
            Err(e) if e.is_result() => {}
            Err(e) => return Err(e),
        },
        Protection::Plain => drop(site.region().enter_call(routine.log_name)),
    }
    Ok(Ended::ResultLost)
}
