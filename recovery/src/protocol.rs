//! The step-commit protocol (docs/architecture.md, "Step-commit protocol"), written once for every
//! fault-tolerant driver.
//!
//! A driver is a loop of steps. Each step is
//! 1. a *communication phase* that writes scratch only (panel
//!    factorization, broadcasts, reductions, row exchanges),
//! 2. one agreement over the grid (`MPIX_Comm_agree`, uniform) that every
//!    live process finished phase 1,
//! 3. a *local commit* that applies the scratch.
//!
//! A failure anywhere leaves every survivor at the last committed step,
//! with every checksum consistent at that step: the grid is repaired, the
//! lost processes' blocks rebuilt at that step, and the loop goes on.
//!
//! An algorithm supplies what is its own ([`Algorithm`]): the phases of its
//! steps, its phase 1 and commit, its encoding, rebuild and verification,
//! and its replicated state. This module owns everything else, the same for
//! every driver:
//! * the argument verdict, an agreement ([`agree_to_start`]): every process
//!   leaves it with the same answer even if one fails meanwhile, and a
//!   refusal stays in the log (a re-run, or a replacement, gets the same
//!   error without communicating);
//! * the first commit point after the encoding: a process lost before it
//!   took blocks nothing protects yet, so the call is forgotten everywhere
//!   and returns a process failure (the caller repairs and starts again);
//! * the per-step agreement and the repair loop;
//! * after a repair: the lost ranks (at most the algorithm's tolerated
//!   losses per process row), the
//!   agreement on the committed step, the hand-over of the replicated state
//!   to the replacements, the rebuild, and one recovery record the same on
//!   every process, then the recovery's own commit point (an agreement);
//! * the rule that makes the agreements line up: a process that leaves on
//!   a process failure seen anywhere but in an agreement (phase 1, the
//!   verification) first meets the others at their next agreement, since
//!   they may have completed the collective it failed and gone on to wait
//!   there; and work made of collectives only (a recovery's end, a
//!   periodic save) ends at its own commit point (`at_commit_point`);
//! * the final commit point (with the optional verification), after which
//!   the call is complete in the region's log;
//! * under checkpoint-on-failure ([`crate::cof`]), the save of the
//!   committed state instead of the repair, and in the restarted job the
//!   load, after which the lost blocks are rebuilt as after a repair.

use crate::cof::incremental::Frozen;
use crate::cof::{self, Resumed, SavedGrid, Saving, Snapshot};
use crate::profile::{self, Part};
use crate::{codec, CallState, Region, Replicated};
use blacs_ft::{Grid, RepairMode, Scope};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Instant;

pub use crate::record::{CofBreakdown, Phase, RecoveryRecord, ShrinkBreakdown};

/// The error type of a fault-tolerant driver: grid errors convert into it,
/// and it tells a process failure (which a repair cures) from the rest.
pub trait ProtocolError: From<blacs_ft::Error> + fmt::Display {
    /// True for errors a grid repair can cure.
    fn is_process_failure(&self) -> bool;
    /// The error as the status log records a refused call's (see
    /// [`agree_to_start`]).
    fn to_record(&self) -> Vec<u8>;
    /// The error back from [`ProtocolError::to_record`]'s bytes (something
    /// that says what it could read when they are not such a record).
    fn from_record(bytes: &[u8]) -> Self;
    /// True for a result a routine reports as an error after completing
    /// its call (ScaLAPACK's INFO > 0 of a factorization: a zero pivot).
    fn is_result(&self) -> bool {
        false
    }
}

impl ProtocolError for blacs_ft::Error {
    fn is_process_failure(&self) -> bool {
        blacs_ft::Error::is_process_failure(self)
    }

    /// The rank and message of a [`blacs_ft::Error::Remote`] (rank −1 and
    /// the error's text for the others), in the one codec.
    fn to_record(&self) -> Vec<u8> {
        let remote = match self {
            blacs_ft::Error::Remote { rank, message } => RemoteRecord { rank: *rank, message: message.clone() },
            e => RemoteRecord { rank: -1, message: e.to_string() },
        };
        codec::encode(&remote)
    }

    /// A [`blacs_ft::Error::Remote`].
    fn from_record(bytes: &[u8]) -> Self {
        let RemoteRecord { rank, message } = codec::decode(bytes).unwrap_or_else(|| RemoteRecord {
            rank: -1,
            message: "a refused call whose error record is unreadable".into(),
        });
        blacs_ft::Error::Remote { rank, message }
    }
}

/// A grid error as the status log records a refused call's.
#[derive(Serialize, Deserialize)]
struct RemoteRecord {
    rank: i32,
    message: String,
}

/// The phase a step is in and since when: the algorithm moves it along
/// ([`PhaseClock::enter`]), which also fires the kill points.
#[derive(Debug)]
pub struct PhaseClock {
    op: &'static str,
    step: u64,
    phase: Phase,
    since: Instant,
}

impl PhaseClock {
    fn new(op: &'static str, step: u64, phase: Phase) -> PhaseClock {
        PhaseClock { op, step, phase, since: Instant::now() }
    }

    /// Enters `phase`: a kill point `OP:STEP:PHASE` fires here.
    pub fn enter(&mut self, grid: &Grid, phase: Phase) {
        self.mark(phase);
        grid.inject(self.op, self.step, phase.name());
    }

    fn mark(&mut self, phase: Phase) {
        self.phase = phase;
        self.since = Instant::now();
        profile::enter(phase.into(), self.step);
    }

    /// The phase the step is in.
    pub fn phase(&self) -> Phase {
        self.phase
    }
}

/// What a fault-tolerant driver supplies to the protocol.
///
/// Phase 1 ([`Algorithm::exchange`]) writes scratch only: after an error
/// there, [`Algorithm::abort`] puts back whatever it touched, so that this
/// process is at the last committed step. [`Algorithm::commit`] cannot
/// fail: the only collectives it may start are a look-ahead's (the next
/// panel factored over its process column, its broadcast started), whose
/// errors it keeps for the next step's phase 1 to report; a failure
/// found before that (in a periodic save) drops the look-ahead
/// ([`Algorithm::discard_ahead`]).
pub trait Algorithm {
    /// The driver's error type.
    type Error: ProtocolError;
    /// What phase 1 of a step hands to its commit.
    type Scratch;
    /// The state kept replicated on every process (QR's tau, LU's pivots).
    type State: Replicated;
    /// The outcome of [`Algorithm::verify`].
    type Check;
    /// What a checkpoint of the call must match to be resumed by it: the
    /// global shape and the options its saved state depends on (the same
    /// on every process).
    type Call: Serialize + DeserializeOwned + PartialEq + fmt::Display;
    /// The operation's name in kill points (`qr`, `lu`).
    const OP: &'static str;
    /// The phases of a step's phase 1, in order (the first is where each
    /// step starts).
    const STEP_PHASES: &'static [Phase];
    /// Whether the call can move onto a smaller grid
    /// ([`Algorithm::move_to_shrunk_grid`]): if not, a repair during it
    /// never shrinks (under `auto` it falls back to checkpoint-on-failure).
    const MOVES: bool = false;

    /// Number of steps.
    fn steps(&self) -> u64;
    /// The replicated state.
    fn state(&self) -> &Self::State;
    /// Replaces the replicated state (a replacement's, from the survivors).
    fn set_state(&mut self, state: Self::State);
    /// Collective, on a fresh call: encodes the checksums.
    fn encode(&mut self, grid: &Grid) -> Result<(), Self::Error>;
    /// Phase 1 of step `k` (collective): communication into scratch only.
    /// Moves `clock` through [`Algorithm::STEP_PHASES`].
    fn exchange(&mut self, grid: &Grid, k: u64, clock: &mut PhaseClock) -> Result<Self::Scratch, Self::Error>;
    /// Local work into scratch while the step's agreement runs (none by
    /// default). `agreed` advances the agreement and says whether it has
    /// completed: call it between pieces of work of about a millisecond
    /// (the others' agreement may need this process to take part).
    fn while_agreeing(&mut self, _scratch: &mut Self::Scratch, _agreed: &mut dyn FnMut() -> bool) {}
    /// Phase 3 of step `k`: the local commit.
    fn commit(&mut self, grid: &Grid, k: u64, scratch: Self::Scratch);
    /// Phase 1 of step `k` failed: restores what it touched.
    fn abort(&mut self, k: u64);
    /// A failure found after a commit, before the next step (in a periodic
    /// save): the work the commit did ahead of the next step (a panel
    /// factored in place and sent) is dropped and what it overwrote put
    /// back, so that the recovery finds the state the commit left.
    /// Nothing by default.
    fn discard_ahead(&mut self) {}
    /// Collective after a repair: rebuilds the blocks of the `lost` grid
    /// ranks (replacements, whose blocks are meaningless) at `committed`
    /// steps.
    fn rebuild(&mut self, grid: &Grid, committed: u64, lost: &[i32]) -> Result<(), Self::Error>;
    /// Collective, at the end: checks the checksum relations.
    fn verify(&self, grid: &Grid, committed: u64) -> Result<Self::Check, Self::Error>;
    /// Lost processes per process row that [`Algorithm::rebuild`] rebuilds
    /// (global; one by default): more in one row are unrecoverable, on
    /// every process.
    fn tolerated_losses(&self) -> usize {
        1
    }
    /// The call's description (see [`Algorithm::Call`]).
    fn call(&self) -> Self::Call;
    /// The local arrays that hold this process's committed state besides
    /// the replicated state (the extended matrix, the left-factor sums,
    /// ...): a checkpoint saves them after a failure (checkpoint-on-failure)
    /// and the restarted call loads them, in this order.
    fn saved_arrays(&mut self) -> Vec<&mut [f64]>;

    /// Local, at the start of a call resumed from checkpoints saved on
    /// another grid (`saved`): reads this process's blocks of the
    /// committed state from the saving grid's files into the arrays of
    /// [`Algorithm::saved_arrays`], checksums and sums left to
    /// [`Algorithm::reencode`]. The error names a file and the reason. By
    /// default a call resumes on the grid of its save only (the same
    /// refusal on every process).
    fn read_saved_elsewhere(&mut self, saved: &SavedGrid) -> Result<(), (String, String)> {
        let file = saved.files.first().map(|f| f.0.display().to_string()).unwrap_or_default();
        Err((file, format!("saved on a {} grid: {} resumes on the grid of its save only", saved.shape(), Self::OP)))
    }

    /// What no later step changes of each of the first arrays of
    /// [`Algorithm::saved_arrays`] at `committed` steps (local; the arrays
    /// after them change): a periodic checkpoint writes it once and then
    /// only the rest (incremental; see [`cof::incremental`]). It never
    /// shrinks from one commit point to a later one. `None` (the default):
    /// every array is saved whole.
    fn frozen_at(&self, _committed: u64) -> Option<Vec<Frozen>> {
        None
    }

    /// Whether the committed state at `committed` steps (global) is the
    /// same whatever the grid, so that a checkpoint of it resumes on any
    /// grid ([`Algorithm::read_saved_elsewhere`]); a periodic save falls
    /// on the next commit point where it is. Yes by default.
    fn portable_at(&self, _committed: u64) -> bool {
        true
    }

    /// Collective, once every process read its blocks
    /// ([`Algorithm::read_saved_elsewhere`]): the checksums (and the
    /// left-factor sums) encoded for this grid at `committed` steps.
    fn reencode(&mut self, _grid: &Grid, _committed: u64) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Collective over [`Grid::survivors`], after a repair that shrank the
    /// grid ([`Grid::shrunk_from`] says from what): moves this process's
    /// committed state at `committed` steps onto the new grid, the
    /// checksums encoded for it and its layout. `holds_state`: whether
    /// this process holds state of the grid before (one that joined the
    /// new grid after the shrink does not: it receives only). On a survivor
    /// the new grid has no place for ([`Grid::is_member`] false) it hands
    /// its blocks over only. Nothing of the grid before may change until
    /// every block has arrived (a failure during the move is recovered
    /// from that grid). Called only when [`Algorithm::MOVES`]; by default
    /// unrecoverable, the same on every process.
    fn move_to_shrunk_grid(
        &mut self,
        _grid: &Grid,
        from: &blacs_ft::ShrunkFrom,
        _committed: u64,
        _holds_state: bool,
    ) -> Result<(), Self::Error> {
        Err(blacs_ft::Error::Unrecoverable {
            reason: format!("{} cannot go on on a smaller grid than the {} grid it started on", Self::OP, from.shape),
        }
        .into())
    }

    /// After [`Algorithm::move_to_shrunk_grid`] on every process of the new
    /// grid, their agreement: `kept` true, the state of the grid before is
    /// dropped; false (a process failed to move), it is taken back, as if
    /// nothing had moved.
    fn settle_move(&mut self, _kept: bool) {}

    /// Runs `save` on [`Algorithm::saved_arrays`] as the last commit left
    /// them (a periodic checkpoint, taken right after a commit), and on the
    /// parts of them that hold the call's data (the checksum columns and
    /// sums left out, which [`Algorithm::reencode`] encodes again when
    /// resuming; `None`: no such parts, the arrays are saved whole). A
    /// driver whose commit already started the next step (a look-ahead
    /// that factors the next panel in place) puts the committed values back
    /// for the save and its own after it; by default the arrays as they
    /// are, whole.
    fn with_committed_arrays(&mut self, save: &mut SaveArrays<'_>) {
        let arrays: Vec<&[f64]> = self.saved_arrays().into_iter().map(|a| &*a).collect();
        save(&arrays, None);
    }
}

/// What [`Algorithm::with_committed_arrays`] runs: a save, given the
/// arrays whole and the parts of them that hold the data.
pub type SaveArrays<'s> = dyn FnMut(&[&[f64]], Option<Vec<&[f64]>>) + 's;

/// What a fault-tolerant call did besides computing.
#[derive(Clone, Debug)]
pub struct CallOutcome<C> {
    /// Its recoveries, oldest first.
    pub recoveries: Vec<RecoveryRecord>,
    /// The checksum relations at the end, when asked for.
    pub check: Option<C>,
    /// Seconds the call ran in the jobs before this one and between them
    /// (checkpoint-on-failure restarts; 0 otherwise).
    pub earlier_s: f64,
}

/// How a fault-tolerant call starts on this process, from the region's log.
#[derive(Clone, Debug, PartialEq)]
pub enum Start<S> {
    /// Completed before a later failure (its result is in place): its
    /// replicated outputs.
    Done(S),
    /// A new call.
    Fresh,
    /// A replacement joining the survivors' recovery of the interrupted
    /// call, at `committed` steps with their replicated state.
    Join { committed: u64, state: S },
    /// The interrupted call of a job started again from checkpoints
    /// (checkpoint-on-failure): every process starts it, loads its
    /// checkpoint and rebuilds what is missing.
    Restore(Box<Restore<S>>),
}

/// Where a call restored from checkpoints resumes.
#[derive(Clone, Debug, PartialEq)]
pub struct Restore<S> {
    /// Committed steps.
    pub committed: u64,
    /// The replicated state at that commit.
    pub state: S,
    /// The checkpoints.
    pub from: Resumed,
}

impl<S> Start<S> {
    /// A replacement joining the survivors.
    pub fn joining(&self) -> bool {
        matches!(self, Start::Join { .. })
    }
}

/// Enters the call `name` in the region's log.
///
/// # Errors
/// An interrupted call met by a survivor (survivors finish their calls
/// inside them; only a replacement resumes one), or a state in the log
/// that does not decode: unrecoverable, on this process.
pub fn enter<S: Replicated, E: ProtocolError>(region: &mut Region, name: &str) -> Result<Start<S>, E> {
    let resumed = region.take_resumed(name)?;
    let (state, joining) = region.enter_call(name);
    if let Some(from) = resumed {
        let call = from.reference.call.as_ref().expect("a resumed call");
        let state = S::from_bytes(&call.state).ok_or_else(|| blacs_ft::Error::Checkpoint {
            file: from.dir.display().to_string(),
            reason: format!("the replicated state of {name} does not decode"),
        })?;
        return Ok(Start::Restore(Box::new(Restore { committed: call.committed, state, from })));
    }
    let corrupt =
        || blacs_ft::Error::Unrecoverable { reason: format!("{name}: the state in the status log is corrupt") };
    match state {
        CallState::Refused { error } => Err(E::from_record(&error)),
        CallState::Done { replicated } => Ok(Start::Done(S::from_bytes(&replicated).ok_or_else(corrupt)?)),
        CallState::Fresh => Ok(Start::Fresh),
        CallState::Resume { committed, replicated } if joining => {
            Ok(Start::Join { committed, state: S::from_bytes(&replicated).ok_or_else(corrupt)? })
        }
        CallState::Resume { .. } => Err(blacs_ft::Error::Unrecoverable {
            reason: format!(
                "{name}: this call was interrupted on this process; only a replacement joining the survivors' \
                 recovery can resume it"
            ),
        }
        .into()),
    }
}

/// A call whose state means nothing on another grid than its save's (a
/// solve: B half solved with factors of that grid, which this job
/// computed again on its own, possibly with other pivots) starts again
/// from its input when its checkpoint was saved on another grid; says so
/// once (grid rank 0), and the checkpoint, of no use here, is forgotten.
/// Any other start is returned as it is.
pub fn start_over_if_saved_elsewhere<S>(region: &mut Region, start: Start<S>, name: &str) -> Start<S> {
    let Start::Restore(r) = start else { return start };
    let Some(saved) = &r.from.elsewhere else { return Start::Restore(r) };
    if region.grid().rank() == 0 {
        eprintln!(
            "ftla: {name} was saved at step {} on a {} grid, with the factors of that grid; on this {}x{} grid, \
             whose factors were computed again, it starts again from its input",
            r.committed,
            saved.shape(),
            region.grid().nprow(),
            region.grid().npcol()
        );
    }
    region.forget_checkpoint(&r.from);
    region.restored_afresh();
    Start::Fresh
}

/// The call's verdict on its start: every process passes its local checks
/// (its arguments, the input's values, memory for its scratch), and the
/// verdict is an agreement, which every process leaves with the same answer
/// even if one fails meanwhile — all go on to the encoding, or all return.
///
/// On a refusal the error is `explain`'s, which turns the local outcomes
/// into one error, the same everywhere (it is collective), and the log
/// records the call as refused with it: a re-run of the region's body, or
/// a replacement running it from the top, gets the same error again
/// without communicating (the survivors are elsewhere by then). A process
/// lost before the verdict gives a process failure, and the call is
/// forgotten in the log (the re-run meets it afresh). A joining replacement (the
/// survivors are past this point, inside their recovery) does not agree:
/// if its own checks fail it tells them, and every process returns the same
/// [`blacs_ft::Error::Remote`].
pub fn agree_to_start<S, E: ProtocolError>(
    region: &mut Region,
    op: &str,
    start: &Start<S>,
    local: Result<(), E>,
    explain: impl FnOnce(&Grid, Result<(), E>) -> E,
) -> Result<(), E> {
    if start.joining() {
        return match local {
            Ok(()) => Ok(()),
            Err(e) => {
                let who = region.grid().rank();
                Err(region.refuse_join(format!("replacement grid rank {who}: {e}")).into())
            }
        };
    }
    // The first point the processes meet after a repair between calls:
    // the replacements' protected results are rebuilt first.
    // (Every process agrees even when its mend failed: the agreement is
    // where they all learn of it.)
    let mended = region.mend_protected().map(drop);
    let verdict = agree(region, op, mended, local, explain);
    record_verdict(region, verdict, None)
}

/// The verdict of a call entered in the log without its driver
/// ([`crate::gate`]: a plain routine, a call with nothing to compute, or a
/// fault-tolerant call whose caller's own checks failed on this process):
/// the same agreement as [`agree_to_start`]'s, which the drivers' make
/// on the processes whose checks passed, and the same record of a refusal.
/// `mended`: this process's mend of the protected results, made by the
/// caller before its checks. A fault-tolerant call (`driver`: its kill
/// operation) first takes its checkpoint in a resumed job, as the driver
/// does. With `enters` false (a call agreed on before its driver, which
/// enters it), the call enters the log only when refused.
pub(crate) fn enter_and_agree<E: ProtocolError>(
    region: &mut Region,
    name: &str,
    driver: Option<&str>,
    enters: bool,
    mended: Result<(), blacs_ft::Error>,
    local: Result<(), E>,
    explain: impl FnOnce(&Grid, Result<(), E>) -> E,
) -> Result<(), E> {
    let op = driver.unwrap_or(name);
    if !enters {
        let verdict = agree(region, op, mended, local, explain);
        return record_verdict(region, verdict, Some(name));
    }
    if driver.is_some() {
        drop(region.take_resumed(name)?);
    }
    drop(region.enter_call(name));
    let verdict = agree(region, op, mended, local, explain);
    record_verdict(region, verdict, None)
}

/// The log's record of a verdict that refused: a call entered before it
/// (`enter` None) is forgotten after a process failure and refused
/// otherwise; one not entered yet (`enter`: its name) leaves nothing after
/// a process failure and enters the log as refused otherwise.
fn record_verdict<E: ProtocolError>(region: &mut Region, verdict: Result<(), E>, enter: Option<&str>) -> Result<(), E> {
    let Err(error) = verdict else { return Ok(()) };
    match (error.is_process_failure(), enter) {
        (true, None) => region.abandon_call(),
        (true, Some(_)) => {}
        (false, enter) => {
            if let Some(name) = enter {
                drop(region.enter_call(name));
            }
            region.refuse_call(error.to_record());
        }
    }
    Err(error)
}

/// The verdict's agreement and, on a refusal, its error (the same on
/// every process).
fn agree<E: ProtocolError>(
    region: &mut Region,
    op: &str,
    mended: Result<(), blacs_ft::Error>,
    local: Result<(), E>,
    explain: impl FnOnce(&Grid, Result<(), E>) -> E,
) -> Result<(), E> {
    let grid = region.grid();
    profile::enter(Part::ARGS, 0);
    grid.inject(op, 0, Phase::Args.name());
    let verdict = grid.agree(local.is_ok() && mended.is_ok());
    let error = match (verdict, mended) {
        (Ok(true), _) => return Ok(()),
        // A process lost during the mend.
        (_, Err(e)) => e.into(),
        // Bad arguments (or no memory) somewhere: the same typed error
        // everywhere. (Had the offending rank died since, a process
        // failure is reported instead.)
        (Ok(false), Ok(_)) => explain(grid, local),
        // A process lost before anything was touched.
        (Err(e), Ok(_)) => e.into(),
    };
    Err(error)
}

/// A step that failed: the error, and the phase it surfaced in and since
/// when.
struct StepFailure<E> {
    error: E,
    phase: Phase,
    since: Instant,
}

/// A process failure this process recovers from: where it saw it, and
/// what the grid needs before the lost blocks are rebuilt.
struct Failure {
    /// The phase the failure surfaced in on this process.
    phase: Phase,
    /// From the start of that phase to the error (an upper bound on the
    /// detection).
    detect_ms: f64,
    /// What comes first.
    first: FirstMend,
}

/// What the grid needs first when a recovery starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FirstMend {
    /// A repair in place (or a checkpoint-on-failure save).
    Repair,
    /// Nothing: the grid is whole already, only blocks are missing (a
    /// joining replacement, whose survivors repaired; a job restarted from
    /// checkpoints).
    Rebuild,
}

impl<E> From<StepFailure<E>> for Failure {
    fn from(f: StepFailure<E>) -> Failure {
        Failure { phase: f.phase, detect_ms: f.since.elapsed().as_secs_f64() * 1e3, first: FirstMend::Repair }
    }
}

/// A call restarted from checkpoints (checkpoint-on-failure).
struct Restarted {
    /// The checkpoints, deleted once the call completes.
    from: Resumed,
    /// The parts of the recovery that brought the call here, as this
    /// process saw them, until that recovery's record takes them.
    times: Option<CofBreakdown>,
    /// Seconds the call ran before the save (this job's predecessors).
    before_save_s: f64,
}

/// One fault-tolerant call on this process, from its start to its end.
struct CallRun<'a, A: Algorithm> {
    region: &'a mut Region,
    alg: &'a mut A,
    /// Committed steps.
    committed: u64,
    /// Its recoveries, oldest first.
    recoveries: Vec<RecoveryRecord>,
    /// When this job started the call.
    started: Instant,
    /// Seconds the call ran in the jobs before this one and between them.
    earlier_s: f64,
    /// Whether this process holds the committed state (a replacement's
    /// blocks, or those of a process without a checkpoint, do not, until
    /// they are rebuilt).
    holds_state: bool,
    restarted: Option<Restarted>,
}

/// Runs a started call ([`Start::Fresh`], [`Start::Join`] or
/// [`Start::Restore`]) to its end: the encoding of a fresh call and its
/// first commit point, the steps, the recoveries, and the final commit
/// point (verifying the checksums first when `verify`). On success the
/// call is complete in the region's log.
///
/// # Fault tolerance
/// A process failure in any phase of a step is repaired in place, and the
/// lost blocks rebuilt at the last committed step (see the module
/// documentation). A process lost before the first commit point makes the
/// call return a process failure on every survivor, forgotten in the log:
/// the caller repairs (a replacement runs the region's body from the top)
/// and calls again with its input. More losses in one process row than
/// the algorithm rebuilds ([`Algorithm::tolerated_losses`]) are
/// [`blacs_ft::Error::Unrecoverable`] on every survivor.
pub fn run<A: Algorithm>(
    region: &mut Region,
    alg: &mut A,
    start: Start<A::State>,
    verify: bool,
) -> Result<CallOutcome<A::Check>, A::Error> {
    // In a program that ends at its first unrecoverable failure, a repair
    // during the call that finds more losses in one process row than the
    // checksums rebuild stops at once, on every process, before it starts
    // replacements (the check after the repair stays: a process lost
    // during the repair itself leaves a replacement without blocks).
    // (What a repair may do during the call: shrink onto enough process
    // columns for the checksums, where the policy says so.)
    let plan = region.repair_plan_for_call(alg.tolerated_losses(), A::MOVES);
    let plan_before = region.grid_mut().set_repair_plan(plan);
    let outcome = if !region.ends_at_unrecoverable() {
        run_call(region, alg, start, verify)
    } else {
        let before = region.grid_mut().set_losses_tolerated_per_row(Some(alg.tolerated_losses()));
        let outcome = run_call(region, alg, start, verify);
        region.grid_mut().set_losses_tolerated_per_row(before);
        outcome
    };
    region.grid_mut().set_repair_plan(plan_before);
    outcome
}

fn run_call<A: Algorithm>(
    region: &mut Region,
    alg: &mut A,
    start: Start<A::State>,
    verify: bool,
) -> Result<CallOutcome<A::Check>, A::Error> {
    let (mut call, mut failure) = CallRun::begin(region, alg, start)?;
    loop {
        if let Some(f) = failure.take() {
            call.recover(f)?;
            if call.rebuilds_its_checkpoint_only() {
                return Err(call.save_rebuilt().into());
            }
        }
        match call.run_to_the_end(verify) {
            Ok(check) => {
                // (What the driver does after the protocol: its own part.)
                let outcome = call.complete(check);
                profile::enter(Part::Other, 0);
                return Ok(outcome);
            }
            Err(f) if f.error.is_process_failure() => failure = Some(f.into()),
            Err(f) => return Err(f.error),
        }
    }
}

impl<'a, A: Algorithm> CallRun<'a, A> {
    /// The call at its start: a fresh call encoded and protected, a joining
    /// replacement with the survivors' state, or a restarted call with its
    /// checkpoint loaded; and the failure it must first recover from.
    fn begin(
        region: &'a mut Region,
        alg: &'a mut A,
        start: Start<A::State>,
    ) -> Result<(CallRun<'a, A>, Option<Failure>), A::Error> {
        let mut call = CallRun {
            region,
            alg,
            committed: 0,
            recoveries: Vec::new(),
            started: Instant::now(),
            earlier_s: 0.0,
            holds_state: true,
            restarted: None,
        };
        let failure = match start {
            Start::Fresh => {
                call.encode_and_protect()?;
                None
            }
            // A joining replacement starts in the survivors' recovery: its
            // blocks are meaningless until they are rebuilt.
            Start::Join { committed, state } => {
                call.committed = committed;
                call.alg.set_state(state);
                call.holds_state = false;
                Some(Failure { phase: Phase::Commit, detect_ms: 0.0, first: FirstMend::Rebuild })
            }
            Start::Restore(r) => Some(call.restore(*r)?),
            Start::Done(_) => {
                return Err(blacs_ft::Error::Unrecoverable { reason: "a completed call cannot run again".into() }.into())
            }
        };
        Ok((call, failure))
    }

    /// A fresh call's encoding and its first commit point.
    fn encode_and_protect(&mut self) -> Result<(), A::Error> {
        let grid = self.region.grid();
        let t = Instant::now();
        profile::enter(Part::ENCODE, 0);
        grid.inject(A::OP, 0, Phase::Encode.name());
        let encoded = self.alg.encode(grid);
        blacs_ft::trace!("rank {}: encode {:.1} ms", grid.rank(), t.elapsed().as_secs_f64() * 1e3);
        // The first commit point: the checksums protect every block once
        // every process has encoded its share. A process lost before then
        // took unprotected blocks with it, which nothing can rebuild. Every
        // survivor learns it here (whichever collective failed on it),
        // forgets the call and reports a process failure, so that the caller
        // repairs and starts the call again everywhere.
        if !matches!(grid.agree(encoded.is_ok()), Ok(true)) {
            self.region.abandon_call();
            return Err(match encoded {
                Err(e) if !e.is_process_failure() => e,
                _ => blacs_ft::Error::ProcFailed { ranks: Vec::new() }.into(),
            });
        }
        // Committed: no step yet, and the initial replicated state (what a
        // replacement joining before the first step's commit starts from).
        self.region.commit(0, self.alg.state());
        Ok(())
    }

    /// A call restarted from checkpoints: loads them, takes the earlier
    /// recoveries and the state they recorded, and returns the failure
    /// that ended the job before (its lost processes have no checkpoint:
    /// their blocks are rebuilt as after a repair).
    fn restore(&mut self, r: Restore<A::State>) -> Result<Failure, A::Error> {
        let Restore { committed, state, from } = r;
        let loaded = load(self.region, self.alg, &from)?;
        let saved = from.reference.call.as_ref().expect("a resumed call");
        self.recoveries = saved.history.clone();
        self.committed = committed;
        self.alg.set_state(state);
        // The log holds the restored commit (what a save or a replacement
        // would start from).
        self.region.commit(committed, self.alg.state());
        self.holds_state = loaded.valid;
        // (This process's file; or, for a save read from every file (made on
        // another grid, or of the data only), the reference's.)
        let own = from.own.as_ref().and_then(|(_, h, _)| h.call.as_ref());
        let own = own.or_else(|| from.elsewhere.as_ref().and(from.reference.call.as_ref()));
        let failure = Failure {
            phase: own.map_or(Phase::Commit, |c| c.phase),
            detect_ms: own.map_or(0.0, |c| c.detect_ms),
            // (A process lost while the checkpoints were loaded: recovered
            // from at once, as any other failure.)
            first: if loaded.lost { FirstMend::Repair } else { FirstMend::Rebuild },
        };
        let before_save_s = own.map_or(0.0, |c| c.elapsed_s);
        self.restarted = Some(Restarted { from, times: Some(loaded.times), before_save_s });
        Ok(failure)
    }

    /// Recovers from `failure`: the repair (again while processes are lost
    /// during it), then the rebuild at the committed step, and one record.
    fn recover(&mut self, failure: Failure) -> Result<(), A::Error> {
        let _recovering = profile::part(Part::Recovery, Some(self.committed));
        let Failure { phase, detect_ms, mut first } = failure;
        // (A recovery repaired again is one recovery: its repairs' times
        // add up, and its mode is the costliest of theirs.)
        let (mut mode, mut repair_ms) = (None, 0.0);
        let mut shrink: Option<ShrinkBreakdown> = None;
        // (A shrink's lost ranks, of the grid before it: the record names
        // them, nobody being rebuilt on the new grid.)
        let mut shrunk_lost: Vec<i32> = Vec::new();
        let record = loop {
            let t = Instant::now();
            if first == FirstMend::Repair {
                let this = self.repair_or_save(phase, detect_ms)?;
                mode = Some(match mode {
                    Some(m) if mode_order(m) >= mode_order(this) => m,
                    _ => this,
                });
            }
            first = FirstMend::Repair;
            repair_ms += t.elapsed().as_secs_f64() * 1e3;
            match self.move_after_shrink() {
                Ok(None) => {}
                Ok(Some((moved, lost))) => {
                    if shrunk_lost.is_empty() {
                        shrunk_lost = lost;
                    }
                    shrink = Some(match shrink {
                        Some(s) => ShrinkBreakdown {
                            grid_after: moved.grid_after,
                            redistribute_ms: s.redistribute_ms + moved.redistribute_ms,
                            ..s
                        },
                        None => moved,
                    })
                }
                Err(e) if e.is_process_failure() => continue,
                Err(e) => return Err(e),
            }
            let cof = self.restarted.as_ref().and_then(|r| r.times);
            let mine = self.holds_state.then_some(Opinion { phase, detect_ms, repair_ms, mode, cof });
            // (The first recovery of a job started again from checkpoints:
            // saved on a failure, or a periodic one of a job lost whole.)
            let restored = cof.map(|_| match self.restarted.as_ref().and_then(|r| r.from.generation) {
                Some(_) => RepairMode::Resume,
                None => RepairMode::Cof,
            });
            let (alg, committed, recoveries) = (&mut *self.alg, &mut self.committed, &mut self.recoveries);
            let recovered = at_commit_point(self.region, LatePlace::Recovery, |region| {
                after_repair(region, alg, committed, recoveries, mine, restored, shrink)
            });
            match recovered {
                Ok(mut r) => {
                    if !shrunk_lost.is_empty() {
                        r.ranks = std::mem::take(&mut shrunk_lost);
                    }
                    break r;
                }
                Err(e) if e.is_process_failure() => continue,
                Err(e) => return Err(e),
            }
        };
        self.holds_state = true;
        self.region.restored();
        if let (Some(c), Some(r)) = (record.cof, self.restarted.as_mut().filter(|r| r.times.is_some())) {
            // The call ran before the save, then the save and the relaunch
            // took their time (the slowest process's).
            r.times = None;
            self.earlier_s = r.before_save_s + (c.save_ms + c.relaunch_ms) / 1e3;
        }
        self.recoveries.push(record);
        Ok(())
    }

    /// After a repair that shrank the grid: the committed state moved onto
    /// the new grid ([`Algorithm::move_to_shrunk_grid`]) and what that
    /// took, and the grid ranks lost of the grid before it; `None` when the
    /// grid did not shrink. A survivor left without
    /// a place hands its blocks over and parks: it returns the region's
    /// [`Region::park`] error ([`blacs_ft::Error::Released`] when the job
    /// ended without it, [`blacs_ft::Error::Rejoined`] when it became a
    /// replacement). A failure during the move is recovered from the grid
    /// before the shrink, whose data nothing changed.
    fn move_after_shrink(&mut self) -> Result<Option<(ShrinkBreakdown, Vec<i32>)>, A::Error> {
        let Some(from) = self.region.grid().shrunk_from().cloned() else { return Ok(None) };
        let _moving = profile::part(Part::Recovery, Some(self.committed));
        let t = Instant::now();
        let grid = self.region.grid();
        // (The kill point `R@repair:1:redistribute`, named by the epoch the
        // repair started from, as the repair's own points.)
        let me = if grid.is_member() { grid.rank() } else { -1 };
        grid.injector().point(me, grid.epoch().saturating_sub(1), "repair", 1, "redistribute");
        // (What cannot move is said alike everywhere, before anything
        // moves.)
        let tolerated = self.alg.tolerated_losses().max(self.region.protected.most_tolerated());
        from.check_movable(tolerated)?;
        // (The results kept protected after earlier calls first: the
        // call may read them.)
        let holds_state = self.holds_state;
        let moved = self.region.move_protected(&from, holds_state).map_err(A::Error::from);
        let grid = self.region.grid();
        let moved = moved.and_then(|()| self.alg.move_to_shrunk_grid(grid, &from, self.committed, holds_state));
        let alg = &mut *self.alg;
        commit_move(self.region, &from, moved, |kept| alg.settle_move(kept))?;
        let redistribute_ms = t.elapsed().as_secs_f64() * 1e3;
        let grid_after = self.region.grid().shape();
        self.holds_state = true;
        Ok(Some((ShrinkBreakdown { grid_before: from.shape, grid_after, redistribute_ms }, from.lost)))
    }

    /// The region's repair, or under checkpoint-on-failure the save of the
    /// committed state (what this process holds of it).
    fn repair_or_save(&mut self, phase: Phase, detect_ms: f64) -> Result<RepairMode, A::Error> {
        // (A replacement whose blocks are not rebuilt yet: a shrink counts
        // them lost.)
        let holds = self.holds_state && !self.region.protected.is_hollow();
        self.region.grid_mut().set_holds_data(holds);
        let repaired = self.repair_or_save_with_data(phase, detect_ms);
        self.region.grid_mut().set_holds_data(true);
        repaired
    }

    fn repair_or_save_with_data(&mut self, phase: Phase, detect_ms: f64) -> Result<RepairMode, A::Error> {
        let history = self.recoveries.clone();
        let elapsed_s = self.earlier_s + self.started.elapsed().as_secs_f64();
        let holds_state = self.holds_state;
        let alg = &mut *self.alg;
        let saving = || match holds_state {
            false => Saving::Nothing,
            true => Saving::Call(whole_snapshot(alg, history, elapsed_s, phase, detect_ms)),
        };
        Ok(self.region.repair_or_save(saving)?.mode)
    }

    /// A restored call of a job that only rebuilds its checkpoint's
    /// missing files ([`crate::RegionOptions::rebuild_checkpoint`]).
    fn rebuilds_its_checkpoint_only(&self) -> bool {
        self.restarted.is_some() && self.region.options().rebuild_checkpoint
    }

    /// Collective, once the restored call recovered (the missing files'
    /// blocks rebuilt): every process's committed state saved as the
    /// checkpoint-on-failure files of the run, complete; the error every
    /// process returns, [`blacs_ft::Error::Checkpointed`].
    fn save_rebuilt(&mut self) -> blacs_ft::Error {
        let elapsed_s = self.earlier_s + self.started.elapsed().as_secs_f64();
        let snapshot = whole_snapshot(&mut *self.alg, self.recoveries.clone(), elapsed_s, Phase::Commit, 0.0);
        self.region.save_every_file(snapshot)
    }

    /// The steps from the committed one, then the final commit point.
    fn run_to_the_end(&mut self, verify: bool) -> Result<Option<A::Check>, StepFailure<A::Error>> {
        // (What a periodic checkpoint records besides the arrays: the
        // recoveries do not change during the steps.)
        let history = self.recoveries.clone();
        let (started, earlier_s) = (self.started, self.earlier_s);
        // (Files saved on a failure that this call resumed from go once a
        // newer periodic generation is complete: a job lost later resumes
        // from that generation, which they would hide.)
        let mut saved_on_failure =
            self.restarted.as_ref().map(|r| r.from.clone()).filter(|from| from.generation.is_none());
        let mut save = |region: &mut Region, alg: &mut A| -> Result<(), A::Error> {
            let before = region.checkpoints().len();
            save_checkpoint(region, alg, &history, earlier_s + started.elapsed().as_secs_f64())?;
            if region.checkpoints().len() > before {
                if let Some(from) = saved_on_failure.take() {
                    region.forget_checkpoint(&from);
                }
            }
            Ok(())
        };
        steps(self.region, self.alg, &mut self.committed, &mut save)?;
        finish(self.region, self.alg, self.committed, verify)
    }

    /// The call is complete: in the log, and its checkpoint (if restarted)
    /// deleted.
    fn complete(self, check: Option<A::Check>) -> CallOutcome<A::Check> {
        self.region.complete(self.alg.state());
        if let Some(r) = &self.restarted {
            self.region.forget_checkpoint(&r.from);
        }
        CallOutcome { recoveries: self.recoveries, check, earlier_s: self.earlier_s }
    }
}

/// The call's whole committed state on this process as a save on a
/// failure writes it (every array, the checksums included): what it
/// records besides the arrays, `history` and the time it ran so far
/// (`elapsed_s`), and where the failure was seen.
fn whole_snapshot<A: Algorithm>(
    alg: &mut A,
    history: Vec<RecoveryRecord>,
    elapsed_s: f64,
    phase: Phase,
    detect_ms: f64,
) -> Snapshot<'_> {
    let (description, tolerated_losses) = (codec::encode(&alg.call()), alg.tolerated_losses());
    Snapshot {
        arrays: alg.saved_arrays().into_iter().map(|a| &*a).collect(),
        description,
        phase,
        detect_ms,
        elapsed_s,
        history,
        tolerated_losses,
        frozen: None,
        data_only: false,
    }
}

/// What loading a restored call's checkpoint gave this process.
struct Loaded {
    /// The CoF parts of the recovery, as this process saw them.
    times: CofBreakdown,
    /// It holds its committed state (it had a file, and read it).
    valid: bool,
    /// A process was lost meanwhile: recover (repair, or save again).
    lost: bool,
}

/// Collective, at the start of a call restored from checkpoints: checks
/// that they were saved for this call (its [`Algorithm::Call`]), loads
/// this process's arrays from its file (a process without one is rebuilt
/// afterwards), and agrees that every process did (an agreement: a process
/// lost meanwhile is seen the same way everywhere, and recovered from).
///
/// # Errors
/// The same [`blacs_ft::Error::Checkpoint`] on every process, naming the
/// file: another call, arrays of other lengths, a corrupt payload.
fn load<A: Algorithm>(region: &Region, alg: &mut A, from: &Resumed) -> Result<Loaded, A::Error> {
    let t = Instant::now();
    let grid = region.grid();
    let call = from.reference.call.as_ref().expect("a resumed call");
    let this_call = alg.call();
    let saved_for = codec::decode::<A::Call>(&call.description);
    if saved_for.as_ref() != Some(&this_call) {
        // (The descriptions are global: every process finds the same.)
        let saved = saved_for.map_or_else(|| "another kind of call".to_string(), |c| c.to_string());
        return Err(blacs_ft::Error::Checkpoint {
            file: from.reference_file.display().to_string(),
            reason: format!("saved by {} for {saved}; this call is for {this_call}", call.name),
        }
        .into());
    }
    if let Some(saved) = &from.elsewhere {
        // (Saved on another grid: every process reads its blocks from the
        // files that hold them, and the checksums are encoded anew.)
        let lost_meanwhile = || blacs_ft::Error::Unrecoverable {
            reason: format!(
                "a process was lost while the checkpoints of the {} grid were loaded onto this grid; they are intact: \
                 resume again",
                saved.shape()
            ),
        };
        let read = cof::agree_on(grid, alg.read_saved_elsewhere(saved));
        read.map_err(|e| if e.is_process_failure() { lost_meanwhile() } else { e })?;
        alg.reencode(grid, call.committed)
            .map_err(|e| if e.is_process_failure() { lost_meanwhile().into() } else { e })?;
        let times = load_times(from, Some(&from.reference), t);
        return Ok(Loaded { times, valid: true, lost: false });
    }
    let local = match &from.own {
        None => Ok(()),
        Some((path, header, offset)) => cof::file::read_payload(path, header, *offset, &mut alg.saved_arrays())
            .map_err(|reason| (path.display().to_string(), reason)),
    };
    let read = local.is_ok();
    let lost = match grid.agree(read) {
        Ok(true) => false,
        Ok(false) => {
            // Somebody's file is bad: its reason, everywhere.
            cof::agree_on(grid, local)?;
            return Err(
                blacs_ft::Error::Unrecoverable { reason: "a checkpoint was refused without a reason".into() }.into()
            );
        }
        Err(e) if e.is_process_failure() => true,
        Err(e) => return Err(e.into()),
    };
    let times = load_times(from, from.own.as_ref().map(|(_, h, _)| h), t);
    Ok(Loaded { times, valid: read && from.own.is_some(), lost })
}

/// The checkpoint parts of a restored call's recovery as this process saw
/// them: the save and the relaunch after it (from `saved`'s header, none
/// without one), and the load (since `t`).
fn load_times(from: &Resumed, saved: Option<&cof::Header>, t: Instant) -> CofBreakdown {
    CofBreakdown {
        save_ms: saved.map_or(0.0, |h| h.save_ms),
        relaunch_ms: saved.map_or(0.0, |h| (from.started_ms - h.saved_at_ms).max(0.0)),
        load_ms: from.load_ms + t.elapsed().as_secs_f64() * 1e3,
    }
}

/// Steps `committed..`; on an error this process is at the last committed
/// step (the algorithm restored what phase 1 touched).
/// The bits of a step's commit agreement: every process alive and done
/// with phase 1 …
const ALIVE: i32 = 1;
/// … and grid rank 0's say that the step is saved as a periodic
/// checkpoint (every other process sets it).
const SAVE: i32 = 2;

/// A periodic checkpoint of the call in progress (see [`save_checkpoint`]).
type SaveCheckpoint<'a, A> = dyn FnMut(&mut Region, &mut A) -> Result<(), <A as Algorithm>::Error> + 'a;

/// `save` is called, collectively, after the commit of a step that is to
/// be saved as a periodic checkpoint ([`crate::cof::periodic`]).
fn steps<A: Algorithm>(
    region: &mut Region,
    alg: &mut A,
    committed: &mut u64,
    save: &mut SaveCheckpoint<'_, A>,
) -> Result<(), StepFailure<A::Error>> {
    while *committed < alg.steps() {
        let k = *committed;
        let periodic = region.periodic_checkpoints();
        // (A state that only this grid can resume waits for the next commit.)
        let flags = ALIVE | if region.checkpoint_due() && alg.portable_at(k + 1) { SAVE } else { 0 };
        let grid = region.grid();
        let mut clock = PhaseClock::new(A::OP, k, A::STEP_PHASES.first().copied().unwrap_or(Phase::Commit));
        let attempt = alg.exchange(grid, k, &mut clock).and_then(|mut scratch| {
            // Phase 2: the commit point, with the algorithm's local work
            // overlapping it.
            clock.mark(Phase::Commit);
            profile::enter(Part::Wait, k);
            let mut started = grid.start_agree_bits(flags)?;
            alg.while_agreeing(&mut scratch, &mut || grid.progress_agree(&mut started));
            let agreed = grid.finish_agree_bits(started)?;
            if agreed & ALIVE == 0 {
                return Err(blacs_ft::Error::ProcFailed { ranks: Vec::new() }.into());
            }
            Ok((scratch, agreed & SAVE != 0 && periodic))
        });
        let (scratch, save_this) = match attempt {
            Ok(s) => s,
            Err(error) => {
                blacs_ft::trace!("grid rank {}: step {k} failed in {}: {error}", grid.rank(), clock.phase.name());
                alg.abort(k);
                // Everyone meets at the commit point even after an error
                // (the agreement works on revoked communicators): processes
                // waiting there learn that the step failed.
                if clock.phase != Phase::Commit && error.is_process_failure() {
                    let _ = grid.agree(false);
                }
                return Err(StepFailure { error, phase: clock.phase, since: clock.since });
            }
        };
        // (A process killed here dies after agreeing: the survivors commit.)
        grid.inject(A::OP, k, Phase::Commit.name());
        profile::enter(Part::COMMIT, k);
        alg.commit(grid, k, scratch);
        *committed = k + 1;
        region.commit(*committed, alg.state());
        if save_this {
            // A failure during the save is one at the next step's start:
            // the step is committed, the generation left incomplete.
            let since = Instant::now();
            let _saving = profile::part(Part::Checkpoint, Some(k));
            // (Its collectives alone are no commit point.)
            let saved = at_commit_point(region, LatePlace::Checkpoint, |region| save(region, alg));
            if let Err(error) = saved {
                alg.discard_ahead();
                return Err(StepFailure { error, phase: Phase::Commit, since });
            }
        }
    }
    Ok(())
}

/// Collective: the committed state of the call in progress saved as the
/// next periodic checkpoint. A file that could not be written is said on
/// every process and the call goes on (the previous generation stays the
/// newest); a directory without room for two generations, at the first
/// save, is the call's error on every process.
fn save_checkpoint<A: Algorithm>(
    region: &mut Region,
    alg: &mut A,
    history: &[RecoveryRecord],
    elapsed_s: f64,
) -> Result<(), A::Error> {
    let description = codec::encode(&alg.call());
    let tolerated_losses = alg.tolerated_losses();
    let committed = region.log().current().map_or(0, |(_, c)| c.committed);
    let mut frozen = alg.frozen_at(committed);
    let parity = region.options().checkpoint_parity;
    let mut saved = None;
    alg.with_committed_arrays(&mut |all, data| {
        // (Without parity only the data: the checksums are encoded again
        // when resuming.)
        let data = data.filter(|_| !parity);
        let data_only = data.is_some();
        let arrays = data.unwrap_or_else(|| all.to_vec());
        if let Some(f) = frozen.as_mut() {
            f.truncate(arrays.len());
        }
        saved = Some(region.check_checkpoint_room(arrays.iter().map(|a| a.len() as u64 * 8).sum()).and_then(|()| {
            region.save_checkpoint(Snapshot {
                data_only,
                arrays: arrays.to_vec(),
                description: description.clone(),
                phase: Phase::Commit,
                detect_ms: 0.0,
                elapsed_s,
                history: history.to_vec(),
                tolerated_losses,
                frozen: frozen.clone(),
            })
        }));
    });
    let saved = saved.unwrap_or_else(|| {
        Err(blacs_ft::Error::Unrecoverable { reason: "a periodic checkpoint was not taken".into() })
    });
    match saved {
        Err(e @ blacs_ft::Error::Checkpoint { .. }) if !region.periodic_room_known() => Err(e.into()),
        Ok(_) => Ok(()),
        Err(e @ blacs_ft::Error::Checkpoint { .. }) => {
            if region.grid().rank() == 0 {
                eprintln!("ftla: periodic checkpoint not saved ({e}); the previous one stays the newest");
            }
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// The end of the call, itself a commit point: the optional verification,
/// and one last agreement that every process is alive, so that a process
/// lost during the last step is rebuilt before the call returns.
fn finish<A: Algorithm>(
    region: &Region,
    alg: &A,
    committed: u64,
    verify: bool,
) -> Result<Option<A::Check>, StepFailure<A::Error>> {
    let since = Instant::now();
    profile::enter(Part::COMMIT, committed);
    let grid = region.grid();
    let fail = |error: A::Error| StepFailure { error, phase: Phase::Commit, since };
    let check = if verify {
        match alg.verify(grid, committed) {
            Ok(c) => Some(c),
            Err(e) => {
                if e.is_process_failure() {
                    let _ = grid.agree(false);
                }
                return Err(fail(e));
            }
        }
    } else {
        None
    };
    match grid.agree(true) {
        Ok(true) => Ok(check),
        Ok(false) => Err(fail(blacs_ft::Error::ProcFailed { ranks: Vec::new() }.into())),
        Err(e) => Err(fail(e.into())),
    }
}

/// A survivor's view of the failure it recovers from.
struct Opinion {
    phase: Phase,
    detect_ms: f64,
    repair_ms: f64,
    mode: Option<RepairMode>,
    /// A restored call's checkpoint-on-failure parts.
    cof: Option<CofBreakdown>,
}

/// Collective: `body` (collectives only), then a commit point, an
/// agreement that every process completed it. Collectives alone may
/// complete on some processes and fail on others (a process that still
/// waits for its share of the last one when a process is lost in the next
/// step); without the agreement those others would go on and wait at the
/// next step's commit point for a process that went back to repairing.
/// With it every process leaves with `body`'s result, or all return a
/// process failure.
fn at_commit_point<T, E: ProtocolError>(
    region: &mut Region,
    place: LatePlace,
    body: impl FnOnce(&mut Region) -> Result<T, E>,
) -> Result<T, E> {
    let done = body(region).and_then(|t| match late_revoke_here(region.grid(), place) {
        true => Err(blacs_ft::Error::Revoked.into()),
        false => Ok(t),
    });
    let agreed = region.grid().agree(done.is_ok());
    match (done, agreed) {
        (Ok(t), Ok(true)) => Ok(t),
        (Err(e), _) if !e.is_process_failure() => Err(e),
        (_, Err(e)) => Err(e.into()),
        _ => Err(blacs_ft::Error::ProcFailed { ranks: Vec::new() }.into()),
    }
}

/// Where [`blacs_ft::LATE_REVOKE_VAR`] makes a process learn of a
/// failure late: the end of a recovery or of a periodic save, after its
/// last collective.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum LatePlace {
    Recovery,
    Checkpoint,
}

/// Test switch [`blacs_ft::LATE_REVOKE_VAR`] (`RANK` or `RANK@recovery`,
/// `RANK@checkpoint`): true once per process, on that grid rank, at the
/// first such place, after revoking the grid.
fn late_revoke_here(grid: &Grid, place: LatePlace) -> bool {
    use std::sync::atomic::{AtomicBool, Ordering};
    static FIRED: AtomicBool = AtomicBool::new(false);
    let Ok(value) = std::env::var(blacs_ft::LATE_REVOKE_VAR) else { return false };
    let (rank, named) = value.split_once('@').unwrap_or((&value, "recovery"));
    let at = match named {
        "recovery" => LatePlace::Recovery,
        "checkpoint" => LatePlace::Checkpoint,
        _ => return false,
    };
    if rank.parse::<i32>().ok() != Some(grid.rank()) || at != place || FIRED.swap(true, Ordering::Relaxed) {
        return false;
    }
    eprintln!(
        "ftla: {}: grid rank {} revokes the grid at the end of a {named}",
        blacs_ft::LATE_REVOKE_VAR,
        grid.rank()
    );
    grid.revoke();
    true
}

/// Collective after a repair, over survivors and replacements: agree on the
/// lost ranks and the committed step, hand the replicated state over,
/// rebuild the lost blocks, and agree on one record of the recovery.
/// `mine` is `None` on a process whose blocks are being rebuilt. (Run
/// [`at_commit_point`]: the recovery ends at its own commit point, so that
/// all leave it or all repair again, holding the same record.)
fn after_repair<A: Algorithm>(
    region: &mut Region,
    alg: &mut A,
    committed: &mut u64,
    recoveries: &mut Vec<RecoveryRecord>,
    mine: Option<Opinion>,
    restored: Option<RepairMode>,
    shrink: Option<ShrinkBreakdown>,
) -> Result<RecoveryRecord, A::Error> {
    let t = Instant::now();
    let valid = mine.is_some();
    let lost = lost_ranks(region.grid(), valid, alg.tolerated_losses())?;
    // Survivors and replacements meet here: the protected results of
    // earlier calls are rebuilt first (the call may read them).
    region.mend_protected()?;
    let grid = region.grid();
    // Survivors agree on the committed step (a replacement learnt it from
    // the log; it offers no opinion).
    let mut lo = [if valid { *committed as i64 } else { i64::MAX }];
    let mut hi = [if valid { *committed as i64 } else { i64::MIN }];
    grid.min(Scope::All, &mut lo)?;
    grid.max(Scope::All, &mut hi)?;
    if lo[0] != hi[0] {
        return Err(blacs_ft::Error::Unrecoverable {
            reason: format!("survivors disagree on the committed step ({} vs {})", lo[0], hi[0]),
        }
        .into());
    }
    *committed = lo[0] as u64;
    // The replicated state and the call's recoveries so far: the lowest
    // survivor's are everybody's (a replacement's report then names the
    // recoveries before it joined too).
    if let Some(holder) = grid.lowest_rank_where(valid)? {
        let bytes = grid.broadcast_vec(codec::encode(&(alg.state().to_bytes(), &*recoveries)), holder)?;
        let corrupt = || blacs_ft::Error::Unrecoverable {
            reason: "the replicated state handed over after a repair is corrupt".into(),
        };
        let (state, history): (Vec<u8>, Vec<RecoveryRecord>) = codec::decode(&bytes).ok_or_else(corrupt)?;
        alg.set_state(A::State::from_bytes(&state).ok_or_else(corrupt)?);
        *recoveries = history;
    }
    let t_rb = Instant::now();
    alg.rebuild(grid, *committed, &lost)?;
    blacs_ft::trace!(
        "rank {}: after repair: met the others after {:.1} ms, rebuild {:.1} ms",
        grid.rank(),
        (t_rb - t).as_secs_f64() * 1e3,
        t_rb.elapsed().as_secs_f64() * 1e3
    );
    let rebuild_ms = t.elapsed().as_secs_f64() * 1e3;
    // One record: the slowest survivor's times, the earliest phase any
    // survivor saw the failure in (the phase of the step it interrupted),
    // the repair's mode (CoF over spawn over spare over none). A
    // replacement has no opinion.
    // (The phase's index is negated so that one maximum gives both.)
    // (A shrink's move ran before: it counts in the rebuild.)
    let moved_ms = shrink.map_or(0.0, |s| s.redistribute_ms);
    let rebuild_ms = rebuild_ms + moved_ms;
    let (mut times, mut order) = match &mine {
        Some(o) => {
            let c = o.cof.unwrap_or_default();
            (
                [o.detect_ms, o.repair_ms, rebuild_ms, c.save_ms, c.relaunch_ms, c.load_ms, moved_ms],
                [o.mode.map_or(0, mode_order), -o.phase.index()],
            )
        }
        None => ([0.0, 0.0, rebuild_ms, 0.0, 0.0, 0.0, moved_ms], [0, -i64::MAX]),
    };
    grid.max(Scope::All, &mut times)?;
    grid.max(Scope::All, &mut order)?;
    let [mode, earliest] = [order[0], -order[1]];
    region.commit(*committed, alg.state());
    let [detect_ms, repair_ms, rebuild_ms, save_ms, relaunch_ms, load_ms, moved_ms] = times;
    let shrink = shrink.map(|s| ShrinkBreakdown { redistribute_ms: moved_ms, ..s });
    let cof = restored.map(|_| CofBreakdown { save_ms, relaunch_ms, load_ms });
    let (mode, repair_ms) = match (restored, cof) {
        (Some(m), Some(c)) => (m, c.save_ms + c.relaunch_ms + c.load_ms),
        _ => (mode_of_order(mode), repair_ms),
    };
    Ok(RecoveryRecord {
        ranks: lost,
        step: *committed,
        phase: Phase::at_index(earliest),
        detect_ms,
        repair_ms,
        rebuild_ms,
        total_ms: detect_ms + repair_ms + rebuild_ms,
        mode,
        cof,
        shrink,
    })
}

/// Tag of the message that lets the survivors left over by a shrink park
/// once the new grid agreed that the blocks moved.
const TAG_MOVED: i32 = 0x5B2;

/// The commit point of a shrink's move, once this process moved its
/// state onto the new grid (`moved`: the protected results', and a call's
/// own): every process of the new grid agrees that it has its blocks and
/// checksums, or all go back to the grid before (`settle(false)` and the
/// protected results'; the shrink's record stays, and the next repair
/// shrinks from that grid again: the error returned is a process failure,
/// or the move's own error). A survivor left over, its blocks handed over,
/// waits for the new grid's verdict (a failure there revokes what it
/// waits on): then nothing of the grid before is needed any more, and it
/// parks ([`Region::park`]'s error).
pub(crate) fn commit_move<E: ProtocolError>(
    region: &mut Region,
    from: &blacs_ft::ShrunkFrom,
    moved: Result<(), E>,
    settle: impl FnOnce(bool),
) -> Result<(), E> {
    let grid = region.grid();
    if moved.is_err() {
        // (Whatever failed, a partner of the move may be waiting for this
        // process: set it free.)
        grid.revoke();
    }
    if !grid.is_member() {
        moved?;
        // (One that held nothing handed nothing over: the new grid does
        // not wait for it, nor it for the verdict.)
        if grid.holds_data_of(from) {
            let root = grid.survivor_of(0).unwrap_or(0);
            let mut word = [0i64];
            grid.survivors().recv(&mut word, Some(root), TAG_MOVED)?;
        }
        let _ = region.grid_mut().take_shrunk_from();
        return Err(region.park().into());
    }
    let agreed = matches!(grid.agree(moved.is_ok()), Ok(true));
    settle(agreed);
    region.settle_protected_move(agreed);
    let grid = region.grid();
    if !agreed {
        // A move that failed for another reason than a lost process (its
        // memory, say) fails on every process of the new grid alike;
        // else all repair again from the grid before.
        let fatal = matches!(&moved, Err(e) if !e.is_process_failure());
        return Err(match (grid.agree(!fatal), moved) {
            (Ok(false), Err(e)) if fatal => e,
            (Ok(false), _) => blacs_ft::Error::Unrecoverable {
                reason: "another process could not move its state onto the shrunk grid".into(),
            }
            .into(),
            _ => blacs_ft::Error::ProcFailed { ranks: Vec::new() }.into(),
        });
    }
    if grid.rank() == 0 {
        // (The survivors left over may park now.)
        for u in grid.left_over(from) {
            let _ = grid.survivors().send(&[1i64], u, TAG_MOVED);
        }
    }
    let _ = region.grid_mut().take_shrunk_from();
    Ok(())
}

/// The order in which repair modes combine (the maximum wins): none,
/// spare, spawn, shrink, checkpoint-on-failure.
const MODE_ORDER: [RepairMode; 5] =
    [RepairMode::NoLoss, RepairMode::Spare, RepairMode::Spawn, RepairMode::Shrink, RepairMode::Cof];

fn mode_order(m: RepairMode) -> i64 {
    MODE_ORDER.iter().position(|&x| x == m).unwrap_or(0) as i64
}

fn mode_of_order(i: i64) -> RepairMode {
    MODE_ORDER[usize::try_from(i).unwrap_or(0).min(MODE_ORDER.len() - 1)]
}

/// Collective: the grid ranks whose blocks are not valid (replacements),
/// the same list on every rank. The checksums rebuild `tolerated`
/// processes per process row: more in one row are unrecoverable, on every
/// rank.
fn lost_ranks(grid: &Grid, valid: bool, tolerated: usize) -> blacs_ft::Result<Vec<i32>> {
    let flags = grid.allgather(Scope::All, &[(!valid) as i64])?;
    let lost: Vec<i32> = flags.iter().enumerate().filter(|(_, &f)| f != 0).map(|(r, _)| r as i32).collect();
    let q = grid.npcol();
    let coords: Vec<(usize, usize)> = lost.iter().map(|&r| ((r / q) as usize, (r % q) as usize)).collect();
    if let Err(checksum::ErasureError::TooManyLossesInProcessRow { row, process_cols, .. }) =
        checksum::check_recoverable_up_to(&coords, tolerated)
    {
        let ranks: Vec<i32> = process_cols.iter().map(|&c| row as i32 * q + c as i32).collect();
        return Err(blacs_ft::Error::too_many_losses_in_row(row, &ranks, tolerated));
    }
    Ok(lost)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_have_names_and_an_order() {
        for p in Phase::ALL {
            assert_eq!(Phase::parse(p.name()), Some(p));
        }
        assert!(Phase::Args < Phase::Panel && Phase::Panel < Phase::Commit);
        assert!(Phase::Encode.before_steps() && !Phase::Swap.before_steps());
        assert_eq!(Phase::parse("pivot"), None);
    }

    #[test]
    fn recovery_records_survive_their_encoding() {
        let a = RecoveryRecord {
            ranks: vec![1, 4],
            step: 7,
            phase: Phase::Update,
            detect_ms: 1.5,
            repair_ms: 20.0,
            rebuild_ms: 3.25,
            total_ms: 24.75,
            mode: RepairMode::Spare,
            cof: None,
            shrink: None,
        };
        let c = RecoveryRecord {
            mode: RepairMode::Shrink,
            shrink: Some(ShrinkBreakdown {
                grid_before: blacs_ft::GridShape { p: 2, q: 3 },
                grid_after: blacs_ft::GridShape { p: 2, q: 2 },
                redistribute_ms: 4.5,
            }),
            ..a.clone()
        };
        let b = RecoveryRecord {
            ranks: vec![2],
            mode: RepairMode::Cof,
            cof: Some(CofBreakdown { save_ms: 5.0, relaunch_ms: 900.0, load_ms: 12.0 }),
            ..a.clone()
        };
        let all = vec![a, b, c];
        assert_eq!(codec::decode::<Vec<RecoveryRecord>>(&codec::encode(&all)), Some(all));
        assert_eq!(codec::decode::<Vec<RecoveryRecord>>(&[0]), Some(vec![]));
        assert_eq!(codec::decode::<Vec<RecoveryRecord>>(&[5, 1]), None);
    }

    #[test]
    fn repair_modes_combine_by_their_order_and_phases_by_their_index() {
        for m in MODE_ORDER {
            assert_eq!(mode_of_order(mode_order(m)), m);
        }
        assert!(mode_order(RepairMode::Cof) > mode_order(RepairMode::Shrink));
        assert!(mode_order(RepairMode::Shrink) > mode_order(RepairMode::Spawn));
        assert!(mode_order(RepairMode::Spawn) > mode_order(RepairMode::Spare));
        for p in Phase::ALL {
            assert_eq!(Phase::at_index(p.index()), p);
        }
        assert_eq!(Phase::at_index(i64::MAX), Phase::Commit);
    }
}
