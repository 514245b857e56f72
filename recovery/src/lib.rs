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
//! [`cof`] is the other way to recover, checkpoint-on-failure: under the
//! region's [`cof::Policy`] the survivors save their committed state
//! instead of repairing the grid, the job is started again, and the
//! interrupted call resumes from the files.
//!
//! Fault injection (SIGKILL a rank at a named point) is re-exported from
//! `blacs-ft`, where the repair protocol itself has injection points.

pub mod codec;
pub mod cof;
pub mod gate;
pub mod profile;
pub mod progress;
pub mod protected;
pub mod protocol;
pub mod record;
mod status;

pub use blacs_ft::inject::{kill_self, Injector, KillSpec};
pub use cof::{Policy, RegionOptions};
pub use protected::ProtectedResult;
pub use status::{CallRecord, CallState, CallStatus, Replicated, StatusLog};

use blacs_ft::{Error, Grid, RepairPlan, RepairReport};
use std::cell::RefCell;
use std::rc::Rc;

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
    max_repairs: usize,
    options: RegionOptions,
    /// On a replacement, the calls at the front of the log that were over
    /// when it joined: their results were computed before it existed (0 on
    /// a process of the launch).
    over_before_joining: usize,
    /// How this job started: launched, or again from checkpoints.
    job: JobStart,
    /// Where this process stands with the call that the job or a repair
    /// left in progress.
    pending: Pending,
    /// The live protected results ([`protected`]).
    protected: protected::Registry,
    /// The program ends at its first unrecoverable failure (see
    /// [`Region::set_ends_at_unrecoverable`]).
    ends_at_unrecoverable: bool,
    /// The periodic checkpoints ([`cof::periodic`]).
    periodic: cof::periodic::Periodic,
    /// The committed steps of the call this job resumed from checkpoints.
    resumed_at: Option<u64>,
    /// Scopes of [`Region::keeping_the_grid`] in progress.
    grid_kept: u32,
}

/// How the job a region runs in started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStart {
    /// Launched (or a replacement spawned into a launched job).
    Launched,
    /// Started again from checkpoints that held no call in progress: the
    /// body runs from the top.
    RestartedAfresh,
    /// Started again from checkpoints of an interrupted call, which resumes
    /// from them.
    Restored,
}

/// What a region still has to hand to the call it resumes.
enum Pending {
    /// Nothing: calls start, resume or skip as the log says.
    Nothing,
    /// A replacement until its first call resumes: that call joins the
    /// survivors' rebuild instead of starting.
    Joining,
    /// The checkpoint this job resumes from, until its call takes it.
    Checkpoint(Box<cof::Resumed>),
    /// The interrupted call took its checkpoint but has not yet recovered
    /// from it: the files are still the run's latest save.
    Restoring,
}

impl Region {
    /// Wraps the grid, with the recovery settings that the launcher
    /// (`ftla`, `ftla launch`) hands to the job ([`RegionOptions::from_env`]:
    /// the policy, and the checkpoints of a restarted job), so a program run
    /// with `ftla launch --recovery cof` gets them without asking; see
    /// [`Region::with_options`].
    ///
    /// # Errors
    /// A recovery setting in the environment that does not parse
    /// ([`Error::InvalidArgument`], naming the variable), and those of
    /// [`Region::with_options`].
    ///
    /// # Fault tolerance
    /// On a replacement that no region has taken in yet this is collective
    /// with the survivors' repair: it receives their log.
    pub fn new(grid: Box<Grid>) -> Result<Region, Error> {
        Region::with_options(grid, RegionOptions::from_env()?)
    }

    /// The region around the grid, before any recovery setting: on a
    /// replacement, the log received from the survivors.
    fn open(mut grid: Box<Grid>) -> Result<Region, Error> {
        // A replacement from any epoch of the survivors' last repair (one
        // that joined while a further process was lost is one too).
        let joining = grid.take_newcomer();
        let mut region = Region {
            grid,
            log: StatusLog::new(),
            repairs: Vec::new(),
            max_repairs: 16,
            options: RegionOptions::default(),
            over_before_joining: 0,
            job: JobStart::Launched,
            pending: if joining { Pending::Joining } else { Pending::Nothing },
            protected: if joining { protected::Registry::joining() } else { protected::Registry::default() },
            ends_at_unrecoverable: false,
            periodic: cof::periodic::Periodic::new(None, 0, None),
            resumed_at: None,
            grid_kept: 0,
        };
        if joining {
            region.receive_log()?;
        }
        Ok(region)
    }

    /// A replacement's first act: the survivors' log.
    fn receive_log(&mut self) -> Result<(), Error> {
        // A survivor lost during the hand-over: repair with the others
        // (they repair again, see `Region::repair`), then receive.
        while let Err(e) = self.log.share(&self.grid, false) {
            if !e.is_process_failure() {
                return Err(e);
            }
            self.repairs.push(self.grid.recover()?);
        }
        self.over_before_joining = self.log.calls().iter().take_while(|c| c.status.is_over()).count();
        if self.log.calls().iter().all(|c| c.status.is_over()) {
            // Nothing in progress: the body simply runs from the top.
            self.pending = Pending::Nothing;
        }
        Ok(())
    }

    /// [`Region::new`] with recovery settings: the policy (in place,
    /// checkpoint-on-failure, or auto) and, for a job started again after
    /// a checkpoint-on-failure save, the checkpoints to resume from.
    ///
    /// # Errors
    /// With `options.resume`: the same [`Error::Checkpoint`] on every
    /// rank when the checkpoints cannot be used (see [`cof`]), never a
    /// silent resume.
    ///
    /// # Fault tolerance
    /// Collective when resuming (every rank reads its own file and the
    /// ranks agree on one save).
    pub fn with_options(grid: Box<Grid>, mut options: RegionOptions) -> Result<Region, Error> {
        let mut region = Region::open(grid)?;
        if region.grid.replacement().is_some() {
            // A replacement (spawned or a promoted spare) of a job resumed
            // from checkpoints: the survivors loaded theirs long ago and
            // are inside their recovery; it received their log instead.
            options.resume = false;
        }
        let (mut newest_generation, mut newest_base) = (0, None);
        if options.resume {
            let dir = options.dir();
            // (The launcher names the run it resumes.)
            let run_id = (options.run_id != 0).then_some(options.run_id);
            // The newest periodic generation, unless the survivors of a
            // failure saved after it.
            let (from, manifest) = cof::periodic::resume_dir(&dir).map_err(|reason| Error::Checkpoint {
                file: dir.join(cof::periodic::MANIFEST).display().to_string(),
                reason,
            })?;
            let mut resumed = cof::load(&region.grid, &from, run_id)?;
            resumed.generation = manifest.as_ref().map(|m| m.generation);
            region.resumed_at = resumed.reference.call.as_ref().map(|c| c.committed);
            // (Files saved on a failure after a periodic generation: the
            // generations stay the run's, numbered on from the newest, and
            // go with it when the region is done.)
            let manifest = manifest.or_else(|| cof::periodic::read_manifest(&dir).ok().flatten());
            newest_generation = manifest.as_ref().map_or(0, |m| m.generation);
            newest_base = manifest.and_then(|m| m.base);
            // Later saves carry on the run these checkpoints came from.
            options.run_id = resumed.reference.run_id;
            options.restarts = options.restarts.max(resumed.reference.restarts.saturating_add(1));
            options.epoch_base = options.epoch_base.max(resumed.reference.epoch);
            options.checkpoint_dir = Some(dir);
            if resumed.reference.call.is_some() {
                region.job = JobStart::Restored;
                region.pending = Pending::Checkpoint(Box::new(resumed));
            } else {
                // Nothing was in progress: the job simply starts afresh.
                cof::file::remove(&resumed.dir, region.grid.rank(), region.grid.size());
                region.job = JobStart::RestartedAfresh;
            }
        }
        region.periodic = cof::periodic::Periodic::new(options.checkpoint_every, newest_generation, newest_base);
        region.options = options;
        // (Between calls the plan of `Region::repair_plan_between_calls`:
        // under `shrink` nothing is spawned.)
        let plan = region.repair_plan_between_calls();
        region.grid.set_repair_plan(plan);
        Ok(region)
    }

    /// The committed steps of the interrupted call this job resumed from
    /// checkpoints (`None`: it did not; on a replacement, which received
    /// the survivors' log, too).
    pub fn resumed_at_step(&self) -> Option<u64> {
        self.resumed_at
    }

    /// The periodic checkpoints saved in this job, oldest first (the same
    /// on every process that took part in them).
    pub fn checkpoints(&self) -> &[cof::CheckpointRecord] {
        &self.periodic.records
    }

    /// The interval of the periodic checkpoints in force (`None`: none):
    /// the one asked for, or Young and Daly's once this job's first
    /// checkpoint measured its cost. Grid rank 0's decides.
    pub fn checkpoint_interval(&self) -> Option<std::time::Duration> {
        self.periodic.every
    }

    /// Whether this job saves periodic checkpoints.
    pub(crate) fn periodic_checkpoints(&self) -> bool {
        self.periodic.every.is_some()
    }

    /// Grid rank 0's say on whether the step about to commit is saved (the
    /// others' is yes: the commit's agreement ANDs them).
    pub(crate) fn checkpoint_due(&self) -> bool {
        self.grid.rank() != 0 || self.periodic.due()
    }

    /// Whether the room for two generations was found (a failed save after
    /// it is a file that could not be written).
    pub(crate) fn periodic_room_known(&self) -> bool {
        self.periodic.room_checked
    }

    /// Collective, before every periodic save: room for two generations
    /// of `bytes` (this rank's file), checked once per call — again when a
    /// process that has not checked it joined (a replacement, a promoted
    /// spare): the processes agree on whether every one of them checked,
    /// so that all make the check's collectives or none does.
    pub(crate) fn check_checkpoint_room(&mut self, bytes: u64) -> Result<(), Error> {
        if self.grid.agree(self.periodic.room_checked)? {
            return Ok(());
        }
        cof::periodic::check_room(&self.grid, &self.options.dir(), bytes)?;
        self.periodic.room_checked = true;
        Ok(())
    }

    /// Collective: saves the committed state of the call in progress as
    /// the next periodic generation ([`cof::periodic::save`]).
    pub(crate) fn save_checkpoint(&mut self, snapshot: cof::Snapshot<'_>) -> Result<cof::CheckpointRecord, Error> {
        cof::periodic::save(&self.grid, &self.options, &self.log, &mut self.periodic, snapshot)
    }

    /// Removes this process's periodic checkpoints (and grid rank 0 the
    /// manifest) once every call of the region completed, unless the
    /// options keep them. Local.
    pub fn remove_checkpoints_when_done(&self) {
        let done = self.log.calls().iter().all(|c| c.status == CallStatus::Done);
        if done && !self.options.keep_checkpoints && (self.periodic.every.is_some() || self.periodic.complete > 0) {
            cof::periodic::remove_all(&self.options.dir(), self.grid.rank(), self.grid.size());
        }
    }

    /// The recovery settings.
    pub fn options(&self) -> &RegionOptions {
        &self.options
    }

    /// True in a job started again from checkpoints saved while no call
    /// was in progress (a process lost before a call's first commit
    /// point): the region's body simply runs again from the top.
    pub fn restarted_afresh(&self) -> bool {
        self.job == JobStart::RestartedAfresh
    }

    /// How the job this region runs in started.
    pub fn job_start(&self) -> JobStart {
        self.job
    }

    /// The interrupted call this job resumes from checkpoints, while no
    /// call has taken it yet (`None` otherwise).
    pub fn resuming(&self) -> Option<&cof::SavedCall> {
        match &self.pending {
            Pending::Checkpoint(r) => r.reference.call.as_ref(),
            _ => None,
        }
    }

    /// Called by a fault-tolerant call as it starts, before
    /// `Region::enter_call`: the checkpoint it resumes from when it is the
    /// interrupted call of a resumed job.
    ///
    /// # Errors
    /// Another call at the interrupted call's place in the region (the
    /// program does not make the calls it made before): the same
    /// [`Error::Checkpoint`] on every rank.
    pub fn take_resumed(&mut self, name: &str) -> Result<Option<cof::Resumed>, Error> {
        if matches!(self.pending, Pending::Restoring) {
            // The restored call lost a process before it recovered, was
            // repaired in place and starts afresh: its checkpoint is of no
            // use any more.
            self.pending = Pending::Nothing;
            cof::file::remove(&self.options.dir(), self.grid.rank(), self.grid.size());
        }
        let at = self.log.position() as u64;
        if self.resuming().is_none_or(|call| call.index != at) {
            return Ok(None);
        }
        let Pending::Checkpoint(r) = std::mem::replace(&mut self.pending, Pending::Restoring) else {
            return Ok(None);
        };
        if r.reference.call.as_ref().is_some_and(|c| c.name != name) {
            self.pending = Pending::Nothing;
            return Err(Error::Checkpoint {
                file: r.dir.display().to_string(),
                reason: format!(
                    "saved in {} (library call {} of the region); the call there now is {name}",
                    call_name(&r),
                    at + 1
                ),
            });
        }
        Ok(Some(*r))
    }

    /// Called by the protocol when a restored call starts again from its
    /// input instead ([`protocol::start_over_if_saved_elsewhere`]): this
    /// job resumed nothing.
    pub(crate) fn restored_afresh(&mut self) {
        self.restored();
        self.resumed_at = None;
    }

    /// Called by the protocol once a restored call has recovered from its
    /// checkpoint (its state is committed in this job).
    pub(crate) fn restored(&mut self) {
        if matches!(self.pending, Pending::Restoring) {
            self.pending = Pending::Nothing;
        }
    }

    /// True on a replacement whose first library call has not yet joined
    /// the survivors: it must make no collective call before that one (the
    /// survivors are inside the interrupted call).
    pub fn is_joining(&self) -> bool {
        matches!(self.pending, Pending::Joining)
    }

    /// Whether the next call `name` is one that completed before this
    /// process joined as a replacement ([`StatusLog::next_is_done`], among
    /// the calls over when it received the log): its outputs were computed
    /// by the process it replaced, and are not here. Nothing changes.
    pub fn next_call_completed_before_joining(&self, name: &str) -> bool {
        self.log.next_is_done(name) && self.log.position() < self.over_before_joining
    }

    /// Whether the call entered last (`Region::enter_call`) completed
    /// before this process joined as a replacement (see
    /// [`Region::next_call_completed_before_joining`]).
    pub fn current_call_completed_before_joining(&self) -> bool {
        self.log.current().is_some_and(|(i, c)| c.status.is_over() && i < self.over_before_joining)
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

    /// Declares that the program ends at the first unrecoverable failure
    /// of a library call (local; every process declares the same). Then a
    /// repair during a fault-tolerant routine that finds more processes of
    /// one process row lost than the routine's checksums rebuild stops
    /// before it starts any replacement, with the same
    /// [`blacs_ft::Error::Unrecoverable`] on every live process. Off by
    /// default: the grid is repaired whatever the losses, the call fails
    /// with that error on every process, replacements included, and the
    /// program can go on with later calls on the whole grid (the C ABI's
    /// way).
    pub fn set_ends_at_unrecoverable(&mut self, ends: bool) {
        self.ends_at_unrecoverable = ends;
    }

    /// See [`Region::set_ends_at_unrecoverable`].
    pub fn ends_at_unrecoverable(&self) -> bool {
        self.ends_at_unrecoverable
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
    pub(crate) fn enter_call(&mut self, name: &str) -> (CallState, bool) {
        self.protected.prune_before(self.log.position());
        let state = self.log.enter(name);
        let joining = self.is_joining() && matches!(state, CallState::Resume { .. });
        if joining {
            self.pending = Pending::Nothing;
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
        match self.repair_in_place() {
            Err(e) => e,
            Ok(_) => Error::Unrecoverable { reason: "a replacement's error went unnoticed by the survivors".into() },
        }
    }

    /// Forgets the current call: it failed before its first commit point
    /// (before it protected anything), on every process alike. The call
    /// then returns a process-failure error; [`Region::run`] repairs and
    /// runs the body again, the call starting afresh everywhere.
    pub(crate) fn abandon_call(&mut self) {
        self.log.abandon_current();
    }

    /// Keeps `result`, made by the current call, alive and whole across
    /// repairs until the program drops it and has gone past the call (see
    /// [`protected`]). A replacement registers its hollow copy the same
    /// way when it makes the call again.
    pub fn protect<T: ProtectedResult>(&mut self, result: Rc<RefCell<T>>) {
        if let Some((at, _)) = self.log.current() {
            self.protected.insert(at, result);
        }
    }

    /// The result the current call made and [`Region::protect`]ed, when a
    /// re-run of the region's body makes the call again.
    pub fn protected<T: ProtectedResult>(&self) -> Option<Rc<RefCell<T>>> {
        self.protected.get(self.log.current()?.0)
    }

    /// How many protected results the region keeps alive.
    pub fn live_protected(&self) -> usize {
        self.protected.len()
    }

    /// Whether a repair happened since the protected results were last
    /// mended ([`Region::mend_protected`] has work; the same on every
    /// process).
    pub fn protected_pending(&self) -> bool {
        self.protected.is_pending()
    }

    /// Collective after a repair, at the first point survivors and
    /// replacements meet (the step-commit protocol calls it after a
    /// repair and before every new call's verdict; nothing to do, and no
    /// communication, when no repair happened since the last time):
    /// rebuilds the replacements' blocks of every live protected result.
    /// Returns how many were rebuilt.
    ///
    /// # Errors
    /// A process failure meanwhile: repair, and mend again. On a
    /// replacement that has not yet joined the survivors' interrupted call
    /// ([`Region::is_joining`]: they are inside it, not here), the error
    /// of [`Region::refuse_join`], the same on every process.
    pub fn mend_protected(&mut self) -> Result<usize, Error> {
        if self.is_joining() {
            // A replacement's program reached a collective of its own (a
            // protected result read) where the survivors are inside a
            // call: they learn of it, and every process returns the same
            // error instead of waiting on different collectives.
            let message = "a protected result was read where the survivors are inside a fault-tolerant call (a \
                           replacement must make no collective of its own while Region::is_joining)";
            return Err(self.refuse_join(message));
        }
        self.protected.mend(&self.grid)
    }

    /// Records a commit of the current call (step count and its replicated state).
    pub(crate) fn commit(&mut self, committed: u64, replicated: &impl Replicated) {
        self.log.commit(committed, replicated.to_bytes());
    }

    /// Records the current call as completed (with its replicated outputs).
    pub(crate) fn complete(&mut self, replicated: &impl Replicated) {
        self.log.complete(replicated.to_bytes());
    }

    /// Records the current call as refused by every process (its arguments,
    /// memory for its scratch) with `error`, its driver's record of the
    /// agreed error: a re-run of the body, or a replacement that runs it
    /// from the top, gets the same error from the log without
    /// communicating, and goes on as the survivors did.
    pub(crate) fn refuse_call(&mut self, error: Vec<u8>) {
        self.log.refuse(error);
    }

    /// Recovers from a process failure outside a call's protected steps
    /// (nothing in progress): under the in-place policy repairs the grid
    /// and hands the log to the replacements (collective with their
    /// [`Region::new`]); under checkpoint-on-failure saves that nothing is
    /// in progress and returns [`Error::Checkpointed`] (see
    /// [`Region::repair_or_save`]).
    ///
    /// Under `shrink` (and `auto`, once no replacement can be had) the
    /// grid may shrink here too ([`Region::repair_plan_between_calls`]):
    /// the protected results move onto the new grid
    /// ([`Region::move_protected`]), and a survivor the new grid has no
    /// place for parks ([`Region::park`]: this returns its
    /// [`Error::Released`] or [`Error::Rejoined`]). The program's own
    /// arrays stay where they were: [`Region::run`] runs its body again
    /// from the top, which makes them on `region.grid()`.
    pub fn repair(&mut self) -> Result<RepairReport, Error> {
        let _recovering = profile::part(profile::Part::Recovery, None);
        // (A restored call lost a process before it recovered: its
        // checkpoints are still the latest save, and stay.)
        let keep = matches!(self.pending, Pending::Restoring);
        let plan = self.grid.set_repair_plan(self.repair_plan_between_calls());
        let repaired = loop {
            // (A replacement whose copies of the protected results are not
            // mended yet holds nothing of them: a shrink counts it lost.)
            self.grid.set_holds_data(!self.protected.is_hollow());
            let report =
                self.repair_or_save(|| if keep { cof::Saving::Nothing } else { cof::Saving::NothingInProgress });
            self.grid.set_holds_data(true);
            match report.and_then(|r| self.move_after_shrink_between_calls().map(|()| r)) {
                Err(e) if e.is_process_failure() => continue,
                other => break other,
            }
        };
        self.grid.set_repair_plan(plan);
        repaired
    }

    /// What a repair between calls may do under the region's policy:
    /// shrink (under `shrink`, after a spare; under `auto`, after a spare
    /// and a spawn) onto enough process columns for the protected results'
    /// checksums (at least two), while they all move and unless
    /// [`RegionOptions::no_shrink`].
    pub fn repair_plan_between_calls(&self) -> RepairPlan {
        let may = self.may_shrink_between_calls() && self.grid_kept == 0;
        let shrink = may.then_some(self.protected.most_tolerated().max(1) + 1);
        match self.options.policy {
            Policy::Shrink => RepairPlan { spawn: false, shrink_min_cols: shrink },
            Policy::Auto => RepairPlan { spawn: true, shrink_min_cols: shrink },
            Policy::InPlace | Policy::Cof => RepairPlan::default(),
        }
    }

    /// Whether a repair between calls may shrink the grid, scopes of
    /// [`Region::keeping_the_grid`] aside.
    fn may_shrink_between_calls(&self) -> bool {
        !self.options.no_shrink && self.protected.all_move()
    }

    /// After a repair between calls that shrank the grid: the protected
    /// results moved onto the new grid, at the move's commit point. With
    /// none, nothing moves (a survivor left over parks at once). A process
    /// given a place that holds nothing of the grid before (a hot spare)
    /// is not in a call where it could receive them: they are lost on
    /// every process (refused by the routines they are given to), and
    /// nothing moves either.
    fn move_after_shrink_between_calls(&mut self) -> Result<(), Error> {
        let Some(from) = self.grid.shrunk_from().cloned() else { return Ok(()) };
        if self.protected.len() == 0 || self.grid.has_newcomers(&from) {
            self.protected.lose_all();
            let _ = self.grid.take_shrunk_from();
            return if self.grid.is_member() { Ok(()) } else { Err(self.park()) };
        }
        from.check_movable(self.protected.most_tolerated().max(1))?;
        let moved = self.move_protected(&from, true);
        protocol::commit_move(self, &from, moved, |_| {})
    }

    /// Recovers from a process failure as the region's policy says:
    /// * in place: repairs the grid ([`Region::repair_in_place`]);
    /// * checkpoint-on-failure: writes `saving()` to this process's
    ///   checkpoint, waits for the other survivors to have written theirs,
    ///   and returns [`Error::Checkpointed`] (the job ends and is started
    ///   again from the files);
    /// * auto: in place, and checkpoint-on-failure when the repair is
    ///   refused ([`Error::RepairRefused`]: no spare left and the spawn
    ///   failed) or ULFM cannot repair ([`Error::UlfmUnavailable`]).
    pub fn repair_or_save<'a>(&mut self, saving: impl FnOnce() -> cof::Saving<'a>) -> Result<RepairReport, Error> {
        match self.options.policy {
            Policy::InPlace => self.repair_in_place(),
            Policy::Shrink => match self.repair_in_place() {
                // (Inside a call that keeps its grid, whose arrays a shrink
                // would leave behind: the call is forgotten on every
                // survivor, and the process failure it returns is repaired
                // between calls, where the grid may shrink and the body
                // runs again on it.)
                Err(Error::RepairRefused { .. }) if self.grid_kept > 0 && self.may_shrink_between_calls() => {
                    self.abandon_call();
                    Err(Error::ProcFailed { ranks: Vec::new() })
                }
                other => other,
            },
            Policy::Cof => Err(cof::save(&self.grid, &self.options, &self.log, saving())),
            Policy::Auto => match self.repair_in_place() {
                Err(e @ (Error::RepairRefused { .. } | Error::UlfmUnavailable { .. })) => {
                    if self.grid.rank() == self.lowest_live_rank() {
                        eprintln!("ftla: {e}; saving checkpoints instead (recovery policy auto)");
                    }
                    Err(cof::save(&self.grid, &self.options, &self.log, saving()))
                }
                other => other,
            },
        }
    }

    /// Collective: writes the call in progress's committed state to every
    /// process's checkpoint-on-failure file, as a save on a failure does
    /// (a job that rebuilt its checkpoint's missing files, see
    /// [`RegionOptions::rebuild_checkpoint`]), and returns the error every
    /// process returns, [`Error::Checkpointed`].
    pub(crate) fn save_every_file(&mut self, snapshot: cof::Snapshot<'_>) -> Error {
        cof::save(&self.grid, &self.options, &self.log, cof::Saving::Call(snapshot))
    }

    /// The lowest grid rank this process knows to be alive (itself when it
    /// knows of no failure below it): who speaks for the survivors.
    fn lowest_live_rank(&self) -> i32 {
        let gone = self.grid.failed_grid_ranks();
        (0..self.grid.size()).find(|r| !gone.contains(r)).unwrap_or(self.grid.rank())
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
    pub fn repair_in_place(&mut self) -> Result<RepairReport, Error> {
        loop {
            if self.log.repairs() >= self.max_repairs as u64 {
                return Err(Error::Unrecoverable { reason: format!("more than {} repairs", self.max_repairs) });
            }
            let from_epoch = self.grid.epoch();
            let report = self.grid.recover()?;
            self.protected.repaired();
            self.log.count_repair();
            self.repairs.push(report.clone());
            if !self.grid.is_member() {
                // (Left without a place by a shrink: the log is the grid's,
                // handed over among its members; this process hands its
                // blocks over and parks, see `Region::park`.)
                return Ok(report);
            }
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

    /// What a repair does inside a fault-tolerant call whose checksums
    /// rebuild `tolerated` losses per process row, under the region's
    /// policy: shrink (onto at least `tolerated` + 1 process columns) under
    /// `shrink` and `auto` — after a spare, and under `auto` after a spawn
    /// — when the call `moves` onto a smaller grid and unless
    /// [`RegionOptions::no_shrink`].
    ///
    /// Results kept protected after earlier calls ([`Region::protect`])
    /// move with the call ([`Region::move_protected`]); while the region
    /// holds one that cannot ([`ProtectedResult::moves`]), a call does
    /// not shrink (a loss with no spare left is then unrecoverable under
    /// `shrink`).
    pub fn repair_plan_for_call(&self, tolerated: usize, moves: bool) -> RepairPlan {
        let may = moves && !self.options.no_shrink && self.protected.all_move() && self.grid_kept == 0;
        // (Onto enough columns for the protected results' checksums too.)
        let shrink = may.then_some(tolerated.max(self.protected.most_tolerated()) + 1);
        match self.options.policy {
            Policy::Shrink => RepairPlan { spawn: false, shrink_min_cols: shrink },
            Policy::Auto => RepairPlan { spawn: true, shrink_min_cols: shrink },
            Policy::InPlace | Policy::Cof => RepairPlan::default(),
        }
    }

    /// Collective over the processes of a shrink's move (see
    /// [`protocol::Algorithm::move_to_shrunk_grid`]), before the call's
    /// own state moves: every live protected result moved onto the grid
    /// the shrink left, kept as it was until
    /// [`Region::settle_protected_move`].
    pub fn move_protected(&mut self, from: &blacs_ft::ShrunkFrom, holds_state: bool) -> Result<(), Error> {
        self.protected.move_all(&self.grid, from, holds_state)
    }

    /// After [`Region::move_protected`] and the call's move, the new grid's
    /// agreement: `kept` false takes every result back to the grid before.
    pub fn settle_protected_move(&mut self, kept: bool) {
        self.protected.settle_move(kept);
    }

    /// Runs `body` with shrinking barred: for a routine whose calls share
    /// arrays that a shrink inside one of them would leave on the grid
    /// before it (a factorization followed by a solve with a right-hand
    /// side given at the start). Under `shrink` a loss that no spare takes
    /// then ends the call in progress with a process failure (forgotten in
    /// the log, as before its first commit point): [`Region::run`]
    /// repairs between calls, where the grid may shrink, and runs the body
    /// again from the top, which makes the arrays again on the new grid.
    pub fn keeping_the_grid<T>(&mut self, body: impl FnOnce(&mut Region) -> T) -> T {
        self.grid_kept += 1;
        let out = body(self);
        self.grid_kept -= 1;
        out
    }

    /// Collective with the repairs it waits for: a process that a shrink
    /// left without a place ([`Grid::is_member`] false), once it handed its
    /// blocks over, parks as a hot spare of the smaller grid. It returns
    /// [`Error::Released`] when the job ends without needing it (the
    /// program is to end), or [`Error::Rejoined`] when a later repair gave
    /// it a grid rank: it is then a replacement that has received the
    /// survivors' log, and [`Region::run`] runs its body again from the top.
    pub fn park(&mut self) -> Error {
        match self.grid.park() {
            Ok(false) => Error::Released,
            Ok(true) => match self.rejoin() {
                Ok(()) => Error::Rejoined { rank: self.grid.rank() },
                Err(e) => e,
            },
            Err(e) => e,
        }
    }

    /// A parked process that a repair promoted: the survivors' log, as a
    /// replacement receives it when its region opens.
    fn rejoin(&mut self) -> Result<(), Error> {
        let _ = self.grid.take_newcomer();
        self.log = StatusLog::new();
        self.protected = protected::Registry::joining();
        self.pending = Pending::Joining;
        self.receive_log()
    }

    /// After the interrupted call of a resumed job completed: its
    /// checkpoint is deleted (each process deletes its own file).
    pub fn forget_checkpoint(&self, resumed: &cof::Resumed) {
        // (A periodic generation stays until a newer one is complete.)
        if resumed.generation.is_none() {
            cof::file::remove(&resumed.dir, self.grid.rank(), self.grid.size());
        }
    }

    /// Runs `body` until it succeeds: on a process failure that escaped the
    /// library calls, repairs and runs it again from the top (completed
    /// calls are skipped through the log). Library calls the program made
    /// in the region before `body` (or in an earlier `run`) stay its own:
    /// a re-run meets its first call where the first run did.
    pub fn run<T>(&mut self, mut body: impl FnMut(&mut Region) -> Result<T, Error>) -> Result<T, Error> {
        // (Every process, a replacement running the program from the top
        // included, makes the same calls before the body.)
        let start = self.log.position();
        loop {
            self.log.rewind_to(start);
            match body(self) {
                Ok(v) => return Ok(v),
                Err(e) if e.is_process_failure() => match self.repair() {
                    // (Parked after a shrink here, then given a grid rank:
                    // as below.)
                    Ok(_) | Err(Error::Rejoined { .. }) => {}
                    Err(e) => return Err(e),
                },
                // (Parked after a shrink, then given a grid rank: the
                // survivors' log is here, the body runs from the top.)
                Err(Error::Rejoined { .. }) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Moves the log's next call back to `position` (a value of
    /// [`StatusLog::position`] taken earlier), as [`Region::run`] does
    /// before it runs its body again: for a caller that runs a routine of
    /// several library calls again itself after a process failure escaped
    /// it (the call gate's least squares: its factorization completed, its
    /// solve failed before its first commit point).
    pub(crate) fn rewind_to(&mut self, position: usize) {
        self.log.rewind_to(position);
    }

    /// Ends the region, giving the grid back.
    pub fn into_grid(self) -> Box<Grid> {
        self.grid
    }
}

/// The routine a resumed checkpoint was saved in.
fn call_name(r: &cof::Resumed) -> String {
    r.reference.call.as_ref().map_or_else(String::new, |c| c.name.clone())
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
