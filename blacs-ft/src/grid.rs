//! The P×Q process grid: row-major ranks, row / column / all scopes, and the
//! repair that hands back the same shape, ranks and coordinates after
//! processes die.

use crate::comm::{Comm, Element, PendingAgree, PendingBcast, ReduceOp};
use crate::error::{Error, Result};
use crate::inject::{Injector, KillSpec};
use crate::placement::Placement;
use crate::report::{RepairMode, RepairReport};
use crate::runtime::{note_failure, trace, LaunchCommand, Runtime, UlfmStatus};
use crate::universe::{Universe, EXIT_ABANDONED, SPARE};
use crate::watchdog::Deadline;
use std::time::Duration;

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
/// ranks and coordinates back.
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
    /// Builds (or, for a replacement, rejoins) the grid.
    ///
    /// * `rt` (local): the MPI runtime of this process.
    /// * `comm` (global): the communicator to build from, typically
    ///   [`Runtime::world_dup`]. Its first `p*q` ranks become grid ranks (in
    ///   order, or spread over their nodes: [`GridOptions::placement`]);
    ///   the rest become parked hot spares. A spawned replacement ignores it
    ///   and joins the survivors through its parent.
    /// * `p`, `q` (global): grid shape. A spawned replacement may pass
    ///   `p = q = 0` to take the shape of the job it joins (a program that
    ///   learns the shape only after it joined, e.g. through the C ABI's
    ///   `Cftla_pinfo`).
    ///
    /// * `opts` (global): the kills to inject (by default those of
    ///   `FTLA_KILL`; an unparsable `FTLA_KILL` is an
    ///   [`Error::InvalidArgument`] naming it, on every process).
    ///
    /// A spare parks inside this call (sleeping between polls) until it is
    /// needed, then returns [`Joined::Active`], or until the job ends,
    /// then returns [`Joined::Released`].
    pub fn join(rt: &mut Runtime, comm: Comm, p: i32, q: i32, opts: GridOptions) -> Result<Joined> {
        let asked = opts.placement;
        let injector = opts.kills()?;
        if let Some(parent) = rt.take_parent() {
            drop(comm);
            return Grid::join_spawned(rt, parent, p, q, injector);
        }
        check_shape(p, q, comm.size())?;
        let placement = match asked {
            Some(pl) => pl,
            None => Placement::from_env()?,
        };
        let n = comm.size();
        let mut roles: Vec<i64> = (0..n).map(|u| if u < p * q { u as i64 } else { SPARE }).collect();
        // (Every process's node: its host, or the test's stand-in.)
        let mine = match crate::placement::test_nodes() {
            Some(names) => names.get(comm.rank() as usize).map_or(-1, |s| crate::comm::hash_name(s.as_bytes())),
            None => crate::comm::host_hash(),
        };
        let nodes = comm.allgather(&[mine])?;
        if placement == Placement::Spread {
            let spread = crate::placement::spread_roles(&nodes, p, q);
            roles[..spread.len()].copy_from_slice(&spread);
        }
        // The node of each grid rank, numbered in the order they appear.
        let mut by_rank = vec![0i64; (p * q) as usize];
        for (u, &r) in roles.iter().enumerate() {
            if r >= 0 {
                by_rank[r as usize] = nodes[u];
            }
        }
        let mut seen: Vec<i64> = Vec::new();
        let start_nodes: Vec<u32> = by_rank
            .iter()
            .map(|x| match seen.iter().position(|s| s == x) {
                Some(i) => i as u32,
                None => {
                    seen.push(*x);
                    (seen.len() - 1) as u32
                }
            })
            .collect();
        let universe = Universe { comm, roles, epoch: 0, p, q, losses: Vec::new(), first_spawn: None };
        let mut joined = Grid::enter(rt.ulfm(), rt.launch().clone(), universe, injector, None)?;
        if let Joined::Active(g) = &mut joined {
            g.placement = placement;
            g.start_nodes = start_nodes;
        }
        Ok(joined)
    }

    /// How the grid ranks were placed on the processes when the grid was
    /// built (local; see [`Placement`]).
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// The node of each grid rank when the grid was built (local; nodes
    /// numbered from 0 in grid rank order; empty on a spawned replacement).
    pub fn start_nodes(&self) -> &[u32] {
        &self.start_nodes
    }

    /// Whether [`Grid::join`] with these arguments will park this process as
    /// a hot spare (it is not a spawned replacement and its rank in `comm`
    /// is past the grid's `p*q`). Local. A spare can use the time before it
    /// joins to prepare what a replacement needs at once — allocating and
    /// touching its matrix and workspace — so that the survivors do not
    /// wait for that during a recovery.
    pub fn parks_as_spare(rt: &Runtime, comm: &Comm, p: i32, q: i32) -> bool {
        !rt.is_spawned_replacement() && p.checked_mul(q).is_some_and(|n| comm.rank() >= n)
    }

    /// A spawned replacement: merge with the survivors, receive the role
    /// table, then build the grid like everyone else.
    fn join_spawned(rt: &Runtime, parent: Comm, p: i32, q: i32, injector: Injector) -> Result<Joined> {
        // Open MPI 5 does not tell a spawned process that a process of its
        // parents' job died: a parent lost during the hand-over can leave
        // it blocked in the merge or a split for ever (the survivors revoke
        // what they can reach, but a merge they abandoned is out of their
        // reach). Bound the whole way in.
        let _bound = Deadline::arm_with_code(
            "a replacement joining the repaired grid",
            crate::watchdog::repair_timeout(),
            EXIT_ABANDONED,
        );
        let abandon = |why: &str| -> ! {
            eprintln!("ftla: replacement process abandoned during repair ({why}); exiting");
            // SAFETY: ending a process that never became part of the job.
            unsafe { libc::_exit(EXIT_ABANDONED) }
        };
        let merged = match parent.merge(true) {
            Ok(m) => m,
            Err(e) => abandon(&e.to_string()),
        };
        let got_parent = parent.agree(1);
        if !matches!(got_parent, Ok(1)) {
            abandon("merge not agreed");
        }
        let universe = match Universe::receive_state(merged) {
            Ok(u) => u,
            Err(e) => abandon(&e.to_string()),
        };
        if !matches!(universe.comm.agree(1), Ok(1)) {
            abandon("hand-over not agreed");
        }
        if (p, q) != (0, 0) && (universe.p, universe.q) != (p, q) {
            return Err(Error::invalid(
                "P,Q",
                format!("replacement started for a {p}x{q} grid but the job runs {}x{}", universe.p, universe.q),
            ));
        }
        let rank = universe.my_role().unwrap_or(-1);
        let epoch = universe.epoch;
        let rep = Replacement { rank, epoch, mode: RepairMode::Spawn };
        Grid::enter(rt.ulfm(), rt.launch().clone(), universe, injector, Some(rep))
    }

    /// Common tail of every way into the grid: split the grid communicators
    /// (repairing again if that fails), or park as a spare.
    fn enter(
        ulfm: UlfmStatus,
        launch: LaunchCommand,
        mut universe: Universe,
        mut injector: Injector,
        mut replacement: Option<Replacement>,
    ) -> Result<Joined> {
        crate::members::note_member(universe.my_role(), universe.epoch);
        let mut repairs = Vec::new();
        // Tries to build the communicators since the last repair (the
        // `repair:BUILD:split` kill point counts them from 1).
        let (mut builds, mut built_in) = (0, universe.epoch);
        loop {
            injector.set_losses(&universe.losses);
            if universe.epoch != built_in {
                (builds, built_in) = (0, universe.epoch);
            }
            builds += 1;
            let built = build_comms(&universe, &injector, builds).and_then(|b| match b {
                // A newcomer takes part in the error agreement that closes
                // every repair (it has no error of its own to report).
                Some((all, row, col)) if universe.epoch > 0 => match agree_on_pending(&all, all.rank(), None) {
                    Ok(()) => Ok(Some((all, row, col))),
                    Err(e) => {
                        // Others may be blocked on them already.
                        for c in [&all, &row, &col] {
                            let _ = c.revoke();
                        }
                        Err(e)
                    }
                },
                b => Ok(b),
            });
            trace!("entering grid (epoch {}): {:?}", universe.epoch, built.as_ref().map(|b| b.is_some()));
            match built {
                Ok(Some((all, row, col))) => {
                    let rank = all.rank();
                    if replacement.is_none() && universe.epoch > 0 {
                        // A spare that was promoted by the last repair.
                        replacement = Some(Replacement { rank, epoch: universe.epoch, mode: RepairMode::Spare });
                    }
                    let grid = Grid {
                        p: universe.p,
                        q: universe.q,
                        rank,
                        all,
                        row,
                        col,
                        universe,
                        ulfm,
                        launch,
                        injector,
                        replacement,
                        repairs,
                        pending_error: None,
                        newcomer: replacement.is_some(),
                        tolerated_per_row: None,
                        placement: Placement::Default,
                        start_nodes: Vec::new(),
                    };
                    return Ok(Joined::Active(Box::new(grid)));
                }
                Ok(None) => match park(&mut universe, &launch, &injector)? {
                    Parked::Released => return Ok(Joined::Released),
                    Parked::Repaired(r) => repairs.push(r),
                },
                Err(e) if e.is_process_failure() && ulfm == UlfmStatus::Available => {
                    repairs.push(universe.repair(&launch, &injector, None)?);
                }
                Err(e) => return Err(e),
            }
        }
    }

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

    /// The grid rank at (`row`, `col`), checked.
    pub(crate) fn checked_rank_of(&self, row: i32, col: i32) -> Result<i32> {
        self.check_coords(row, col)?;
        Ok(self.rank_of(row, col))
    }

    pub(crate) fn revoke_all(&self) {
        if self.ulfm == UlfmStatus::Available {
            for c in [&self.all, &self.row, &self.col, &self.universe.comm] {
                let _ = c.revoke();
            }
        }
    }

    /// Broadcast of `buf` from `root` along `scope` (BLACS dgebs2d/dgebr2d:
    /// the root sends, the others receive, all with the same call).
    pub fn broadcast<T: Element>(&self, scope: Scope, buf: &mut [T], root: i32) -> Result<()> {
        self.check_root(scope, root)?;
        self.fail(self.comm(scope).bcast(buf, root))
    }

    /// Non-blocking [`Grid::broadcast`]: starts it and returns; `wait` on the
    /// result completes it. Lets a process send a panel as soon as it is
    /// ready and go on computing while the others receive it.
    ///
    /// # Fault tolerance
    /// A failure surfaces at [`Grid::wait_broadcast`] as a process-failure
    /// error and revokes the grid, as for the blocking broadcast. A pending
    /// broadcast dropped without waiting leaks its buffer (MPI may still
    /// write into it).
    pub fn ibroadcast<T: Element>(&self, scope: Scope, buf: Vec<T>, root: i32) -> Result<PendingBcast<T>> {
        self.check_root(scope, root)?;
        self.fail(self.comm(scope).ibcast(buf, root))
    }

    /// Completes a broadcast started by [`Grid::ibroadcast`]; a process
    /// failure revokes the grid like any other operation's. A long wait
    /// sleeps between tests instead of spinning, leaving the core to the
    /// rank being waited for on an oversubscribed node.
    pub fn wait_broadcast<T: Element>(&self, pending: PendingBcast<T>) -> Result<Vec<T>> {
        self.fail(pending.wait())
    }

    /// Progresses a broadcast started by [`Grid::ibroadcast`] without
    /// blocking: `true` once it has completed. A process whose broadcast is
    /// large calls it between chunks of its computation, so that the
    /// receivers get the data meanwhile. A failure revokes the grid, as at
    /// [`Grid::wait_broadcast`].
    pub fn test_broadcast<T: Element>(&self, pending: &mut PendingBcast<T>) -> Result<bool> {
        self.fail(pending.test())
    }

    /// Element-wise sum along `scope` (BLACS dgsum2d). `root = None`: every
    /// process gets the result; `Some(r)`: only `r` does.
    pub fn sum<T: Element>(&self, scope: Scope, buf: &mut [T], root: Option<i32>) -> Result<()> {
        self.reduce(scope, buf, ReduceOp::Sum, root)
    }

    /// Element-wise maximum along `scope`, result on every process.
    pub fn max<T: Element>(&self, scope: Scope, buf: &mut [T]) -> Result<()> {
        self.reduce(scope, buf, ReduceOp::Max, None)
    }

    /// Element-wise minimum along `scope`, result on every process.
    pub fn min<T: Element>(&self, scope: Scope, buf: &mut [T]) -> Result<()> {
        self.reduce(scope, buf, ReduceOp::Min, None)
    }

    fn reduce<T: Element>(&self, scope: Scope, buf: &mut [T], op: ReduceOp, root: Option<i32>) -> Result<()> {
        match root {
            None => self.fail(self.comm(scope).allreduce(buf, op)),
            Some(r) => {
                self.check_root(scope, r)?;
                self.fail(self.comm(scope).reduce(buf, op, r))
            }
        }
    }

    /// Largest |value| along `scope` and where it is (BLACS dgamx2d, as used
    /// for pivot search): each process offers `(value, index)`; every process
    /// gets the offer with the largest magnitude, the lowest index on ties,
    /// and the signed value. NaN counts as larger than any number.
    pub fn amax(&self, scope: Scope, value: f64, index: i64) -> Result<(f64, i64)> {
        let all = self.allgather(scope, &[value, index as f64])?;
        let mut best = (value, index);
        let key = |v: f64| if v.is_nan() { f64::INFINITY } else { v.abs() };
        let mut first = true;
        for pair in all.chunks_exact(2) {
            let (v, i) = (pair[0], pair[1] as i64);
            if first || key(v) > key(best.0) || (key(v) == key(best.0) && i < best.1) {
                best = (v, i);
                first = false;
            }
        }
        Ok(best)
    }

    /// Sends `buf` to the process at (`row`, `col`).
    pub fn send<T: Element>(&self, buf: &[T], row: i32, col: i32, tag: i32) -> Result<()> {
        self.check_coords(row, col)?;
        self.fail(self.all.send(buf, self.rank_of(row, col), tag))
    }

    /// Receives into `buf` from the process at (`row`, `col`); returns the
    /// number of elements received.
    pub fn recv<T: Element>(&self, buf: &mut [T], row: i32, col: i32, tag: i32) -> Result<usize> {
        self.check_coords(row, col)?;
        self.fail(self.all.recv(buf, Some(self.rank_of(row, col)), tag)).map(|(_, n)| n)
    }

    /// [`Grid::recv`] of exactly `buf.len()` elements. A shorter message
    /// means the sender's idea of the data differs from this process's (a
    /// defect, never a user's input): an [`Error::Unrecoverable`], not a
    /// partly filled buffer that goes on as if it were whole.
    pub fn recv_exact<T: Element>(&self, buf: &mut [T], row: i32, col: i32, tag: i32) -> Result<()> {
        let got = self.recv(buf, row, col, tag)?;
        whole_message(got, buf.len(), (row, col), tag)
    }

    /// Sends `send` to (`to`) while receiving exactly `recv.len()`
    /// elements from (`from`); a shorter message is an
    /// [`Error::Unrecoverable`], as in [`Grid::recv_exact`].
    pub fn exchange<T: Element>(
        &self,
        send: &[T],
        to: (i32, i32),
        recv: &mut [T],
        from: (i32, i32),
        tag: i32,
    ) -> Result<()> {
        self.check_coords(to.0, to.1)?;
        self.check_coords(from.0, from.1)?;
        let got =
            self.fail(self.all.sendrecv(send, self.rank_of(to.0, to.1), recv, self.rank_of(from.0, from.1), tag))?;
        whole_message(got, recv.len(), from, tag)
    }

    /// All-gather along `scope`: every process gets every contribution, in
    /// rank order of the scope.
    pub fn allgather<T: Element>(&self, scope: Scope, send: &[T]) -> Result<Vec<T>> {
        self.fail(self.comm(scope).allgather(send))
    }

    /// Collective: the lowest grid rank that passed `cond = true`, the same
    /// on every rank (`None` if nobody did). The usual way to pick who
    /// sends a replicated object after a repair (a survivor, not a
    /// replacement) or whose error everybody reports.
    pub fn lowest_rank_where(&self, cond: bool) -> Result<Option<i32>> {
        let mut who = [if cond { self.rank as i64 } else { i64::MAX }];
        self.min(Scope::All, &mut who)?;
        Ok((who[0] != i64::MAX).then_some(who[0] as i32))
    }

    /// Collective: broadcasts a vector whose length only `root` knows;
    /// every rank returns root's vector (`data` is ignored elsewhere).
    pub fn broadcast_vec<T: Element>(&self, data: Vec<T>, root: i32) -> Result<Vec<T>> {
        let mut len = [data.len() as i64];
        self.broadcast(Scope::All, &mut len, root)?;
        let mut buf = if self.rank == root { data } else { vec![T::default(); len[0].max(0) as usize] };
        self.broadcast(Scope::All, &mut buf, root)?;
        Ok(buf)
    }

    /// Fault-tolerant agreement over the whole grid (`MPIX_Comm_agree`):
    /// `true` only if every live rank passed `true`; the same answer on every
    /// live rank. A process failure returns a process-failure error. Without
    /// ULFM it is an all-reduce (not fault tolerant). This is the commit
    /// point of the step-commit protocol.
    ///
    /// The wait sleeps between tests once it runs long (non-blocking
    /// agreement where the MPI has it), like [`Grid::wait_broadcast`].
    pub fn agree(&self, flag: bool) -> Result<bool> {
        let started = self.start_agree(flag)?;
        self.finish_agree(started)
    }

    /// Starts [`Grid::agree`] and returns at once, so that local work can
    /// overlap the agreement; [`Grid::finish_agree`] completes it. Every
    /// rank starts its agreements in the same order.
    pub fn start_agree(&self, flag: bool) -> Result<GridAgreement> {
        self.start_agree_bits(flag as i32)
    }

    /// [`Grid::start_agree`] on the low `AGREED_BITS` bits of `flags`:
    /// [`Grid::finish_agree_bits`] gives their bitwise AND over every live
    /// process. One rank can say yes or no for all in a bit the others
    /// set (the step-commit protocol's "save this step").
    pub fn start_agree_bits(&self, flags: i32) -> Result<GridAgreement> {
        let flags = flags & ((1 << AGREED_BITS) - 1);
        if self.ulfm == UlfmStatus::Available {
            return Ok(GridAgreement(Agreement::Pending(self.fail(self.all.start_agree(flags))?)));
        }
        // (Without ULFM: one minimum per bit.)
        let mut v: Vec<i64> = (0..AGREED_BITS).map(|b| ((flags >> b) & 1) as i64).collect();
        self.fail(self.all.allreduce(&mut v, ReduceOp::Min))?;
        Ok(GridAgreement(Agreement::Done(v.iter().enumerate().map(|(b, &x)| (x as i32) << b).sum())))
    }

    /// Completes an agreement started by [`Grid::start_agree`]; a process
    /// failure revokes the grid like any other operation's.
    pub fn finish_agree(&self, started: GridAgreement) -> Result<bool> {
        Ok(self.finish_agree_bits(started)? & 1 == 1)
    }

    /// Completes an agreement started by [`Grid::start_agree_bits`]: the
    /// flags' bitwise AND.
    pub fn finish_agree_bits(&self, started: GridAgreement) -> Result<i32> {
        match started.0 {
            Agreement::Done(v) => Ok(v),
            Agreement::Pending(p) => Ok(self.fail(p.wait())? & ((1 << AGREED_BITS) - 1)),
            Agreement::Failed(e) => Err(e),
        }
    }

    /// Progresses an agreement started by [`Grid::start_agree`] without
    /// blocking, for a process that computes while it runs (the others'
    /// agreement may need this one's participation to complete): `true`
    /// once it has completed or failed. An error is kept for
    /// [`Grid::finish_agree`], which returns it.
    pub fn progress_agree(&self, started: &mut GridAgreement) -> bool {
        let Agreement::Pending(p) = &mut started.0 else { return true };
        match self.fail(p.test()) {
            Ok(done) => done,
            Err(e) => {
                started.0 = Agreement::Failed(e);
                true
            }
        }
    }

    /// Barrier along `scope`.
    pub fn barrier(&self, scope: Scope) -> Result<()> {
        self.fail(self.comm(scope).barrier())
    }

    fn check_root(&self, scope: Scope, root: i32) -> Result<()> {
        let n = self.comm(scope).size();
        if root < 0 || root >= n {
            return Err(Error::invalid("root", format!("{root} is outside 0..{n} for scope {scope:?}")));
        }
        Ok(())
    }

    fn check_coords(&self, row: i32, col: i32) -> Result<()> {
        if row < 0 || row >= self.p || col < 0 || col >= self.q {
            return Err(Error::invalid(
                "(row, col)",
                format!("({row}, {col}) is outside the {}x{} grid", self.p, self.q),
            ));
        }
        Ok(())
    }

    /// Collective: turns each rank's local outcome into one outcome that is
    /// the same everywhere. If any rank passes `Err`, every rank returns
    /// [`Error::Remote`] naming the lowest failing rank and its message.
    /// Needs no ULFM.
    pub fn agree_ok<T, E: std::fmt::Display>(&self, local: std::result::Result<T, E>) -> Result<T> {
        match local {
            Ok(v) => self.fail(agree_on_pending(&self.all, self.rank, None)).map(|()| v),
            Err(e) => {
                let msg = e.to_string();
                self.fail(agree_on_pending(&self.all, self.rank, Some(&msg)))
                    .and(Err(Error::Remote { rank: self.rank, message: msg }))
            }
        }
    }

    /// Raises a local error while other ranks may be blocked in a collective
    /// with this one: revokes the grid's communicators so they return
    /// [`Error::Revoked`]. Every rank (this one too) then calls
    /// [`Grid::recover`], which returns the same [`Error::Remote`] everywhere.
    /// Needs ULFM; without it, use [`Grid::agree_ok`] before communicating.
    pub fn raise(&mut self, message: impl Into<String>) -> Error {
        let message = message.into();
        self.pending_error = Some(message.clone());
        match self.ulfm.require() {
            Ok(()) => {
                note_failure();
                self.revoke_all();
                Error::Revoked
            }
            Err(e) => e,
        }
    }

    /// Declares how many lost processes per process row the data being
    /// computed can be rebuilt from (`None`: no limit, the default), and
    /// returns the limit it replaces. Local; every grid rank declares the
    /// same around the same computation (a fault-tolerant routine, for its
    /// duration).
    ///
    /// # Fault tolerance
    /// A repair that finds more processes of one process row gone than the
    /// lowest limit any live process declared returns the same
    /// [`Error::Unrecoverable`] on every live process of the job (hot
    /// spares included), before it spawns or promotes anyone: no
    /// replacement is started only to be told that its blocks are lost.
    pub fn set_losses_tolerated_per_row(&mut self, tolerated: Option<usize>) -> Option<usize> {
        std::mem::replace(&mut self.tolerated_per_row, tolerated)
    }

    /// The resilient-region entry after an error: revoke every grid
    /// communicator, repair (shrink, hand dead ranks to spares or spawn
    /// replacements, merge, split back to the same ranks and coordinates),
    /// then agree on raised local errors.
    ///
    /// Returns the repair's report, or [`Error::Remote`] (the same on every
    /// rank) when a rank raised a local error, or [`Error::Unrecoverable`]
    /// when the grid cannot be repaired.
    ///
    /// # Fault tolerance
    /// Failures during the repair restart it on what is left; a failed spawn
    /// with no spare left is reported, never waited on.
    pub fn recover(&mut self) -> Result<RepairReport> {
        self.ulfm.require()?;
        self.revoke_all();
        let mut report = self.universe.repair(&self.launch, &self.injector, self.tolerated_per_row)?;
        self.injector.set_losses(&self.universe.losses);
        let (mut builds, mut built_in) = (0, self.universe.epoch);
        loop {
            if self.universe.epoch != built_in {
                (builds, built_in) = (0, self.universe.epoch);
            }
            builds += 1;
            let t = std::time::Instant::now();
            let settled = match build_comms(&self.universe, &self.injector, builds) {
                Ok(Some((all, row, col))) => {
                    if all.rank() != self.rank {
                        return Err(Error::Unrecoverable {
                            reason: format!("grid rank changed from {} to {} in repair", self.rank, all.rank()),
                        });
                    }
                    // The repaired communicators are in place whatever the
                    // error agreement below says.
                    self.all = all;
                    self.row = row;
                    self.col = col;
                    agree_on_pending(&self.all, self.rank, self.pending_error.as_deref())
                }
                Ok(None) => Err(Error::Unrecoverable { reason: "a grid rank lost its place in the repair".into() }),
                Err(e) => Err(e),
            };
            trace!("grid rank {} settle after repair: {:?}", self.rank, settled);
            let split_ms = t.elapsed().as_secs_f64() * 1e3;
            match settled {
                Ok(()) => {
                    self.pending_error = None;
                    report.split_ms += split_ms;
                    report.total_ms += split_ms;
                    self.repairs.push(report.clone());
                    return Ok(report);
                }
                Err(e) if e.is_process_failure() => {
                    // Another failure while settling: repair again and
                    // report both repairs as one. Revoke the new grid
                    // communicators first: a process that settled may be
                    // blocked on them already.
                    self.revoke_all();
                    let more = self.universe.repair(&self.launch, &self.injector, self.tolerated_per_row)?;
                    self.injector.set_losses(&self.universe.losses);
                    report = merge_reports(report, more);
                }
                Err(e) => {
                    self.pending_error = None;
                    report.split_ms += split_ms;
                    report.total_ms += split_ms;
                    self.repairs.push(report);
                    return Err(e);
                }
            }
        }
    }

    /// Grid ranks this process knows to have failed (local; empty without
    /// ULFM).
    pub fn failed_grid_ranks(&self) -> Vec<i32> {
        if self.ulfm == UlfmStatus::Available {
            self.all.failed_ranks()
        } else {
            Vec::new()
        }
    }

    /// Best effort, after a failure that is not repaired in place (the
    /// survivors saved checkpoints and leave): every live grid rank waits
    /// here until all of them got here, so that nobody's exit ends the job
    /// while another one still writes. An agreement, which works on the
    /// revoked communicators; bounded by the repair timeout (past it this
    /// process exits with `code`). Errors are ignored.
    pub fn meet_before_exit(&self, code: i32) {
        if self.ulfm == UlfmStatus::Available {
            let _bound =
                Deadline::arm_with_code("survivors meeting before they exit", crate::watchdog::repair_timeout(), code);
            let _ = self.all.agree(1);
        }
    }

    /// Ends the job for the grid (call once, from every grid rank, at the
    /// end): a barrier so that no rank leaves while others still print or
    /// communicate, then the parked spares are released. Errors are ignored:
    /// the job is over either way.
    pub fn close(self) {
        let _ = self.all.barrier();
        if self.rank == 0 {
            for (u, &role) in self.universe.roles.iter().enumerate() {
                if role == SPARE {
                    let _ = self.universe.comm.send(&[RELEASE], u as i32, TAG_SPARE_CONTROL);
                }
            }
        }
    }
}

/// The agreement that closes every repair: if a rank raised a local error
/// (`pending`), every rank returns the same [`Error::Remote`].
fn agree_on_pending(all: &Comm, me: i32, pending: Option<&str>) -> Result<()> {
    let mut who = [if pending.is_some() { me as i64 } else { i64::MAX }];
    all.allreduce(&mut who, ReduceOp::Min)?;
    if who[0] == i64::MAX {
        return Ok(());
    }
    let culprit = who[0] as i32;
    let message = broadcast_string(all, if culprit == me { pending.unwrap_or("") } else { "" }, culprit)?;
    Err(Error::Remote { rank: culprit, message })
}

/// One report for a repair that needed a second round.
fn merge_reports(mut a: RepairReport, b: RepairReport) -> RepairReport {
    a.epoch = b.epoch;
    if b.mode == RepairMode::Spawn || a.mode == RepairMode::NoLoss {
        a.mode = b.mode;
    }
    a.killed.extend(b.killed);
    a.killed.sort_unstable();
    a.killed.dedup();
    a.lost_spares += b.lost_spares;
    a.attempts += b.attempts;
    a.revoke_ms += b.revoke_ms;
    a.shrink_ms += b.shrink_ms;
    a.spawn_ms += b.spawn_ms;
    a.merge_ms += b.merge_ms;
    a.split_ms += b.split_ms;
    a.total_ms += b.total_ms;
    a
}

/// Broadcasts a UTF-8 string from `root`.
fn broadcast_string(comm: &Comm, s: &str, root: i32) -> Result<String> {
    let mut len = [s.len() as i64];
    comm.bcast(&mut len, root)?;
    let mut bytes = if comm.rank() == root { s.as_bytes().to_vec() } else { vec![0u8; len[0].max(0) as usize] };
    comm.bcast(&mut bytes, root)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Splits the universe into the grid communicator (key = grid rank) and, for
/// grid ranks, the row and column communicators, and counts the grid ranks
/// on this process's node (for [`crate::wait`]). `Ok(None)` for a spare.
/// Success is agreed over the universe. After a repair, the kill point
/// `repair:BUILD:split` (BUILD counts the tries since the repair, from 1)
/// fires between the splits and that agreement.
fn build_comms(u: &Universe, injector: &Injector, build: u64) -> Result<Option<(Comm, Comm, Comm)>> {
    let role = u.my_role();
    // Communicator creation is not fault tolerant in every MPI: a process
    // that did not learn of a failure (a spawned replacement is not told of
    // its parents' job's failures by Open MPI 5) can block in it forever.
    // A process that fails revokes what the others may be blocked on before
    // it agrees, which sets them free.
    let mut partial: Option<Comm> = None;
    let mut on_node = None;
    let built = (|| -> Result<Option<(Comm, Comm, Comm)>> {
        let all = u.comm.split(role.map(|_| 0), role.unwrap_or(0))?;
        match (all, role) {
            (Some(all), Some(r)) => {
                let (myrow, mycol) = (r / u.q, r % u.q);
                let all = partial.insert(all);
                let row = all.split(Some(myrow), mycol)?.ok_or_else(|| Error::invalid("row", "split failed"))?;
                let col = all.split(Some(mycol), myrow)?.ok_or_else(|| Error::invalid("col", "split failed"))?;
                // (How this process waits depends on how many grid ranks
                // share its node: see `crate::wait`.)
                on_node = Some(all.node_size()?);
                Ok(Some((partial.take().expect("set above"), row, col)))
            }
            _ => Ok(None),
        }
    })();
    if u.epoch > 0 {
        // As the repair's own points, in the epoch the repair started from.
        injector.point(role.unwrap_or(-1), u.epoch - 1, "repair", build, "split");
    }
    let ok = built.is_ok();
    if !ok {
        let _ = u.comm.revoke();
        if let Some(all) = &partial {
            let _ = all.revoke();
        }
    }
    if matches!(u.comm.agree(ok as i32), Ok(1)) {
        if let Some(ranks) = on_node {
            crate::wait::set_grid_ranks_on_node(ranks);
        }
        return built;
    }
    let _ = u.comm.revoke();
    match built {
        Err(e) if !e.is_process_failure() => Err(e),
        _ => Err(Error::ProcFailed { ranks: Vec::new() }),
    }
}

enum Parked {
    Released,
    Repaired(RepairReport),
}

/// A hot spare's wait: poll for a release message, sleeping in between;
/// when the universe is revoked (a failure), take part in the repair.
fn park(u: &mut Universe, launch: &LaunchCommand, injector: &Injector) -> Result<Parked> {
    loop {
        match u.comm.iprobe::<i64>(None, TAG_SPARE_CONTROL) {
            Ok(Some((src, _))) => {
                let mut msg = [0i64];
                u.comm.recv(&mut msg, Some(src), TAG_SPARE_CONTROL)?;
                if msg[0] == RELEASE {
                    return Ok(Parked::Released);
                }
            }
            Ok(None) => std::thread::sleep(SPARE_POLL),
            Err(e) if e.is_process_failure() => {
                return u.repair(launch, injector, None).map(Parked::Repaired);
            }
            Err(e) => return Err(e),
        }
    }
}

/// `Ok` if a received message filled its buffer (`got` of `expected`
/// elements from grid process `from`); otherwise the sender's idea of the
/// data differs from the receiver's, which no repair can mend.
fn whole_message(got: usize, expected: usize, from: (i32, i32), tag: i32) -> Result<()> {
    if got == expected {
        return Ok(());
    }
    Err(Error::Unrecoverable {
        reason: format!(
            "a message from grid process ({}, {}) with tag {tag:#x} holds {got} elements where {expected} were expected",
            from.0, from.1
        ),
    })
}
