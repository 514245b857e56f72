//! # recovery — resilient regions, the step-commit protocol, fault injection
//!
//! The application-facing side of recovery ("the three R's": revoke,
//! return, repair). A [`Region`] owns the grid and a [`StatusLog`]: the
//! application runs its body inside [`Region::run`]; fault-tolerant library
//! calls (e.g. `scalapack_ft::qr_ft::pdgeqrf_ft`) record their committed steps
//! in the log and repair in place; a failure outside them makes the region
//! repair the grid and run the body again, skipping completed calls.
//! Replacement processes create their region right after joining the grid
//! and receive the log from the survivors.
//!
//! [`protocol`] is the step-commit protocol itself, written once: every
//! fault-tolerant driver supplies its steps, its encoding, rebuild and
//! verification and its replicated state ([`protocol::Algorithm`]), and the
//! protocol does the rest — the agreements, the repair, the hand-over to
//! replacements and the recovery records.
//!
//! Fault injection (SIGKILL a rank at a named point) is re-exported from
//! `blacs-ft`, where the repair protocol itself has injection points.

pub mod protocol;
mod status;

pub use blacs_ft::inject::{kill_self, Injector, KillSpec};
pub use status::{CallRecord, CallState, Replicated, StatusLog};

use blacs_ft::{Error, Grid, RepairReport};

/// A resilient region: the grid, the status log of the library calls made
/// in it, and the repairs it went through.
///
/// # Fault tolerance
/// A replacement process must create its region right after
/// [`blacs_ft::Grid::join`] returns: [`Region::new`] then receives the log
/// from the survivors, who send it right after their repair.
pub struct Region {
    grid: Box<Grid>,
    log: StatusLog,
    repairs: Vec<RepairReport>,
    /// Set on a replacement until its first call resumes: that call joins
    /// the survivors' rebuild instead of starting.
    joining: bool,
    max_repairs: usize,
}

impl Region {
    /// Wraps the grid. On a replacement that no region has taken in yet this
    /// is collective with the survivors' repair: it receives their log.
    pub fn new(mut grid: Box<Grid>) -> Result<Region, Error> {
        // A replacement from any epoch of the survivors' last repair (one
        // that joined while a further process was lost is one too).
        let joining = grid.take_newcomer();
        let mut region = Region { grid, log: StatusLog::new(), repairs: Vec::new(), joining, max_repairs: 16 };
        if joining {
            // A survivor lost during the hand-over: repair with the others
            // (they repair again, see `Region::repair`), then receive.
            while let Err(e) = region.log.share(&region.grid, false) {
                if !e.is_process_failure() {
                    return Err(e);
                }
                region.repairs.push(region.grid.recover()?);
            }
            if region.log.calls().iter().all(|c| c.done) {
                // Nothing in progress: the body simply runs from the top.
                region.joining = false;
            }
        }
        Ok(region)
    }

    /// True on a replacement whose first library call has not yet joined
    /// the survivors: it must make no collective call before that one (the
    /// survivors are inside the interrupted call).
    pub fn is_joining(&self) -> bool {
        self.joining
    }

    /// The grid.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// The grid, mutable (for library calls that repair it).
    pub fn grid_mut(&mut self) -> &mut Grid {
        &mut self.grid
    }

    /// The status log.
    pub fn log(&self) -> &StatusLog {
        &self.log
    }

    /// The repairs this process went through, oldest first (a replacement's
    /// list starts at its own; [`StatusLog::repairs`] counts the region's).
    pub fn repairs(&self) -> &[RepairReport] {
        &self.repairs
    }

    /// Limits the number of repairs [`Region::run`] and library calls may
    /// perform before giving up (default 16).
    pub fn set_max_repairs(&mut self, n: usize) {
        self.max_repairs = n;
    }

    /// For a replacement whose program does not repeat the library calls
    /// that completed before it joined (it knows where the survivors are
    /// and goes straight to the interrupted call): the next call resumes the
    /// interrupted one instead of being taken for the first call of the
    /// log. Local; call it before that call.
    pub fn skip_completed_calls(&mut self) {
        self.log.skip_completed();
    }

    /// Called by a fault-tolerant library call when it starts. Returns what
    /// the log says about it, and whether this process is a replacement that
    /// must join the survivors' rebuild of this call (instead of starting).
    pub fn enter_call(&mut self, name: &str) -> (CallState, bool) {
        let state = self.log.enter(name);
        let joining = self.joining && matches!(state, CallState::Resume { .. });
        if joining {
            self.joining = false;
        }
        (state, joining)
    }

    /// On a replacement that joins the survivors' recovery
    /// ([`Region::is_joining`]) but cannot take part — a local error such as
    /// no memory for its blocks: tells the survivors, who are inside their
    /// recovery (it revokes the grid, see [`Grid::raise`]), and returns the
    /// error every process of the grid then returns: the same
    /// [`Error::Remote`] with `message`, not a hang.
    pub fn refuse_join(&mut self, message: impl Into<String>) -> Error {
        let _ = self.grid.raise(message);
        match self.repair() {
            Err(e) => e,
            Ok(_) => Error::Unrecoverable { reason: "a replacement's error went unnoticed by the survivors".into() },
        }
    }

    /// Forgets the current call: it failed before its first commit point
    /// (before it protected anything), on every process alike. The call
    /// then returns a process-failure error; [`Region::run`] repairs and
    /// runs the body again, the call starting afresh everywhere.
    pub fn abandon_call(&mut self) {
        self.log.abandon_current();
    }

    /// Records a commit of the current call (step count and its replicated state).
    pub fn commit(&mut self, committed: u64, replicated: &impl Replicated) {
        self.log.commit(committed, replicated.to_bytes());
    }

    /// Records the current call as completed (with its replicated outputs).
    pub fn complete(&mut self, replicated: &impl Replicated) {
        self.log.complete(replicated.to_bytes());
    }

    /// Repairs the grid after a process failure and hands the log to the
    /// replacements. Collective with the replacements' [`Region::new`].
    ///
    /// The limit of [`Region::set_max_repairs`] counts the region's repairs,
    /// those before a replacement joined included (it learns their number
    /// with the log), so every process refuses the same repair.
    ///
    /// A process lost while the log is handed over is repaired at once, the
    /// replacements of both losses receiving the log; the last repair's
    /// report is returned.
    pub fn repair(&mut self) -> Result<RepairReport, Error> {
        loop {
            if self.log.repairs() >= self.max_repairs as u64 {
                return Err(Error::Unrecoverable { reason: format!("more than {} repairs", self.max_repairs) });
            }
            let from_epoch = self.grid.epoch();
            let report = self.grid.recover()?;
            self.log.count_repair();
            self.repairs.push(report.clone());
            // Like the repair's own kill points, this one is named by the
            // epoch the repair started from.
            self.grid.injector().point(self.grid.rank(), from_epoch, "region", self.log.repairs(), "share");
            match self.log.share(&self.grid, true) {
                Ok(()) => return Ok(report),
                Err(e) if e.is_process_failure() => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Runs `body` until it succeeds: on a process failure that escaped the
    /// library calls, repairs and runs it again from the top (completed
    /// calls are skipped through the log).
    pub fn run<T>(&mut self, mut body: impl FnMut(&mut Region) -> Result<T, Error>) -> Result<T, Error> {
        loop {
            self.log.rewind();
            match body(self) {
                Ok(v) => return Ok(v),
                Err(e) if e.is_process_failure() => {
                    self.repair()?;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Ends the region, giving the grid back.
    pub fn into_grid(self) -> Box<Grid> {
        self.grid
    }
}

/// Runs `body` on the grid; when it fails with a process-failure error,
/// repairs the grid and runs it again from the start (at most `max_repairs`
/// times). For code without fault-tolerant library calls; see [`Region`].
///
/// # Fault tolerance
/// Errors that are not process failures are returned as they are (they are
/// already agreed when they come from a collective of the grid).
pub fn resilient<T>(
    grid: &mut Grid,
    max_repairs: usize,
    mut body: impl FnMut(&mut Grid) -> Result<T, Error>,
) -> Result<(T, Vec<RepairReport>), Error> {
    let mut repairs = Vec::new();
    loop {
        match body(grid) {
            Ok(v) => return Ok((v, repairs)),
            Err(e) if e.is_process_failure() && repairs.len() < max_repairs => {
                repairs.push(grid.recover()?);
            }
            Err(e) if e.is_process_failure() => {
                return Err(Error::Unrecoverable {
                    reason: format!("more than {max_repairs} repairs needed (last: {e})"),
                })
            }
            Err(e) => return Err(e),
        }
    }
}
