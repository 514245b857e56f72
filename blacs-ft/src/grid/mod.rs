//! The P×Q process grid: row-major ranks, row / column / all scopes, and the
//! repair that hands back the same shape, ranks and coordinates after
//! processes die. Here the grid and what it knows; building it and parking
//! spares in `join`, its collectives and messages in `collectives`, the
//! repair and the end of the job in `repair`.

use crate::comm::{Comm, Element, PendingAgree, PendingBcast, ReduceOp};
use crate::error::{Error, Result};
use crate::inject::{Injector, KillSpec};
use crate::placement::Placement;
use crate::report::{RepairMode, RepairReport};
use crate::runtime::{note_failure, trace, LaunchCommand, Runtime, UlfmStatus};
use crate::shrink::GridShape;
use crate::universe::{RepairPlan, ShrunkFrom, Universe, EXIT_ABANDONED, SPARE};
use crate::watchdog::Deadline;
use std::time::Duration;

mod collectives;
mod former;
mod join;
mod movers;
mod repair;

pub use former::Mailbox;

use join::build_comms;
use repair::agree_on_pending;

/// Tag of control messages to parked spares.
const TAG_SPARE_CONTROL: i32 = 0x5A0E;
/// Control message: the job is over, the spare may leave.
const RELEASE: i64 = 1;
/// How often a parked spare looks for news (it sleeps in between, so it does
/// not burn a core).
const SPARE_POLL: Duration = Duration::from_millis(2);

/// An agreement started by [`Grid::start_agree`] (its answer where it ran
/// to completion at once).
#[derive(Debug)]
#[must_use = "a started agreement must be finished"]
pub struct GridAgreement(Agreement);

#[derive(Debug)]
enum Agreement {
    Pending(PendingAgree),
    /// The flags' bitwise AND, known at once.
    Done(i32),
    /// Progressing it failed: [`Grid::finish_agree`] returns the error.
    Failed(Error),
}

/// The flags an agreement carries (see [`Grid::start_agree_bits`]).
pub const AGREED_BITS: u32 = 4;

/// Which processes take part in a grid operation (BLACS `SCOPE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The processes of this process row; roots are process columns.
    Row,
    /// The processes of this process column; roots are process rows.
    Column,
    /// Every process of the grid; roots are grid ranks.
    All,
}

/// How this process came to hold its grid rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replacement {
    /// The grid rank it took over.
    pub rank: i32,
    /// The repair epoch in which it took over.
    pub epoch: u32,
    /// Spawned, or a promoted hot spare.
    pub mode: RepairMode,
}

/// What [`Grid::join`] gives a process.
#[derive(Debug)]
pub enum Joined {
    /// The process holds a grid rank.
    Active(Box<Grid>),
    /// A hot spare that was never needed: the job is over for it.
    Released,
}

/// Options of [`Grid::join`].
#[derive(Clone, Debug)]
pub struct GridOptions {
    /// Kills to inject (repair points are checked by the grid itself).
    pub injector: Injector,
    /// Whether [`Grid::join`] adds the kills that `ftla launch` hands to
    /// the job (`FTLA_KILL`, see [`Injector::from_launch_env`]) to
    /// `injector`. The default: a program run with `FTLA_KILL` set gets
    /// its kills without asking, and an unparsable `FTLA_KILL` is an error
    /// of the join. A program that reads them itself sets it to `false`.
    pub kills_from_env: bool,
    /// Where the grid ranks go among the processes (`None`: as
    /// `FTLA_PLACEMENT` says, the default order when it is unset).
    pub placement: Option<Placement>,
}

impl Default for GridOptions {
    /// No kills but those of `FTLA_KILL`.
    fn default() -> GridOptions {
        GridOptions { injector: Injector::none(), kills_from_env: true, placement: None }
    }
}

impl GridOptions {
    /// No kills at all, whatever `FTLA_KILL` says (a program or test that
    /// must not fail on purpose).
    pub fn without_kills() -> GridOptions {
        GridOptions { injector: Injector::none(), kills_from_env: false, placement: None }
    }

    /// The kills of the join: `injector`, with `FTLA_KILL`'s when asked.
    fn kills(self) -> Result<Injector> {
        let mut injector = self.injector;
        if self.kills_from_env {
            injector.extend(Injector::from_launch_env()?);
        }
        Ok(injector)
    }
}

/// A P×Q process grid over MPI that survives process failures.
///
/// Grid rank `r` sits at process row `r / Q`, process column `r % Q`
/// (row-major, as BLACS' default). All operations return [`Result`]; after a
/// process-failure error call [`Grid::recover`], which gives the same shape,
/// ranks and coordinates back (or a smaller grid, under a [`RepairPlan`]
/// that allows a shrink).
///
/// # Fault tolerance
/// Every communicator has `MPI_ERRORS_RETURN`. When an operation sees a dead
/// process it revokes all of the grid's communicators at once, so ranks
/// blocked elsewhere return [`Error::Revoked`] instead of hanging; all ranks
/// then meet in [`Grid::recover`].
#[derive(Debug)]
pub struct Grid {
    p: i32,
    q: i32,
    rank: i32,
    all: Comm,
    row: Comm,
    col: Comm,
    universe: Universe,
    ulfm: UlfmStatus,
    launch: LaunchCommand,
    injector: Injector,
    replacement: Option<Replacement>,
    repairs: Vec<RepairReport>,
    pending_error: Option<String>,
    /// A replacement that has not yet been taken in by a resilient region
    /// (see [`Grid::take_newcomer`]).
    newcomer: bool,
    /// Lost processes per process row that the data being computed can be
    /// rebuilt from (see [`Grid::set_losses_tolerated_per_row`]).
    tolerated_per_row: Option<usize>,
    /// How the grid ranks were placed on the processes, and the node of
    /// each grid rank then (numbered from 0 in the order of grid rank 0's
    /// process on; empty on a spawned replacement, which did not see it).
    placement: Placement,
    start_nodes: Vec<u32>,
    /// Agreements this process started on the grid (see
    /// [`Grid::agreements_started`]).
    agreements: std::cell::Cell<u64>,
    /// What a repair does when no parked spare is left (see
    /// [`Grid::set_repair_plan`]).
    plan: RepairPlan,
    /// A shrink left this process without a place: it is a hot spare of
    /// the smaller grid (see [`Grid::park`]).
    demoted: bool,
    /// Whether this grid rank's data are whole here (see
    /// [`Grid::set_holds_data`]).
    holds_data: bool,
    /// A former grid's position (see [`Grid::former_position`]): how its
    /// peers are reached.
    route: Option<former::Route>,
}

/// Checks a grid shape against the number of processes (`(global)` args).
pub fn check_shape(p: i32, q: i32, nprocs: i32) -> Result<()> {
    if p < 1 {
        return Err(Error::invalid("P", format!("must be at least 1, got {p}")));
    }
    if q < 1 {
        return Err(Error::invalid("Q", format!("must be at least 1, got {q}")));
    }
    let need = p.checked_mul(q).ok_or_else(|| Error::invalid("P*Q", "overflows"))?;
    if need > nprocs {
        return Err(Error::invalid(
            "P*Q",
            format!("a {p}x{q} grid needs {need} processes but the communicator has {nprocs}"),
        ));
    }
    Ok(())
}

impl Grid {
    /// Number of process rows.
    pub fn nprow(&self) -> i32 {
        self.p
    }
    /// Number of process columns.
    pub fn npcol(&self) -> i32 {
        self.q
    }
    /// This process's grid rank (row-major).
    pub fn rank(&self) -> i32 {
        self.rank
    }
    /// Number of grid processes (P·Q).
    pub fn size(&self) -> i32 {
        self.p * self.q
    }
    /// This process's row in the grid.
    pub fn myrow(&self) -> i32 {
        self.rank / self.q
    }
    /// This process's column in the grid.
    pub fn mycol(&self) -> i32 {
        self.rank % self.q
    }
    /// Grid rank of the process at (`row`, `col`).
    pub fn rank_of(&self, row: i32, col: i32) -> i32 {
        row * self.q + col
    }
    /// The grid's shape (P×Q; smaller after a shrink).
    pub fn shape(&self) -> GridShape {
        GridShape { p: self.p, q: self.q }
    }
    /// Repair epoch: 0 until the first repair, then +1 per repair.
    pub fn epoch(&self) -> u32 {
        self.universe.epoch
    }
    /// Set when this process replaced a dead one (spawned or promoted spare).
    pub fn replacement(&self) -> Option<Replacement> {
        self.replacement
    }
    /// True once, on a replacement (spawned or promoted spare) that has
    /// not asked before: the survivors of the repair that brought it in
    /// hand it their state, and it must take part in that hand-over — even
    /// when further repairs (a process lost while it was joining) happened
    /// before the grid was handed out. Local.
    pub fn take_newcomer(&mut self) -> bool {
        std::mem::take(&mut self.newcomer)
    }

    /// Repairs this process took part in, oldest first.
    pub fn repairs(&self) -> &[RepairReport] {
        &self.repairs
    }
    /// Parked hot spares left.
    pub fn spares_left(&self) -> usize {
        self.universe.roles.iter().filter(|&&r| r == SPARE).count()
    }
    /// Whether ULFM repair can be used in this run.
    pub fn ulfm(&self) -> UlfmStatus {
        self.ulfm
    }
    /// The kills configured for this run.
    pub fn injector(&self) -> &Injector {
        &self.injector
    }
    /// Replaces the kills configured for this process (local: every process
    /// that should see the same kills sets them). With
    /// [`Injector::shifted`] a test or benchmark repeats a failure scenario
    /// after earlier repairs.
    pub fn set_injector(&mut self, injector: Injector) {
        self.injector = injector;
        self.injector.set_losses(&self.universe.losses);
    }
    /// The configured kills that have not fired (local, the same on every
    /// process: the grid's losses are replicated): at the end of a run,
    /// the points it never reached.
    pub fn unfired_kills(&self) -> Vec<&KillSpec> {
        self.injector.unfired()
    }
    /// Checks the kill points: SIGKILLs this process if one matches.
    pub fn inject(&self, op: &str, step: u64, phase: &str) {
        self.injector.point(self.rank, self.universe.epoch, op, step, phase);
    }

    /// The communicator of a scope (grid ranks in it are ordered by column
    /// for [`Scope::Row`], by row for [`Scope::Column`]).
    pub fn comm(&self, scope: Scope) -> &Comm {
        match scope {
            Scope::Row => &self.row,
            Scope::Column => &self.col,
            Scope::All => &self.all,
        }
    }

    /// Maps an error from an operation: a process failure revokes every
    /// grid communicator so that no other rank stays blocked.
    pub(crate) fn fail<T>(&self, r: Result<T>) -> Result<T> {
        if let Err(e) = &r {
            if e.is_process_failure() {
                trace!("grid rank {} saw {e}; revoking the grid", self.rank);
                note_failure();
                self.revoke_all();
            }
        }
        r
    }

    /// The communicator of the whole grid (point-to-point traffic).
    pub(crate) fn comm_all(&self) -> &Comm {
        &self.all
    }

    /// Revokes the grid's communicators, as this process does when it
    /// sees a process failure: every pending and later operation on them
    /// fails on every process, except the agreement (the commit point
    /// where the processes meet) and the repair. Without ULFM, nothing.
    pub fn revoke(&self) {
        self.revoke_all();
    }

    pub(crate) fn revoke_all(&self) {
        if self.ulfm == UlfmStatus::Available {
            for c in [&self.all, &self.row, &self.col, &self.universe.comm] {
                if !c.is_null() {
                    let _ = c.revoke();
                }
            }
        }
    }
}
