//! The universe: every live process of the job (grid ranks and parked hot
//! spares), the replicated table of who plays which grid rank, and the repair
//! protocol that rebuilds it after failures.
//!
//! Repair (ULFM, "revoke, shrink, spawn, merge, split"):
//! revoke → shrink → learn the dead by an all-gather of old ranks → hand the
//! dead grid ranks to spares, spawn the rest (root: lowest survivor) → merge →
//! broadcast the new role table → split the grid communicator with
//! key = grid rank. Every step's success is agreed (`MPIX_Comm_agree`), and any
//! failure during the repair starts it again on what is left.

use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::inject::{Injector, Loss};
use crate::report::{RepairMode, RepairReport};
use crate::runtime::{note_failure, trace, LaunchCommand};
use crate::shrink::{fill_holders, holders, shrunk_roles, shrunk_shape, GridShape};
use crate::watchdog::{repair_timeout, Deadline};
use std::time::{Duration, Instant};

/// Role value of a parked spare in the role table.
pub(crate) const SPARE: i64 = -1;
/// How many times a repair is tried when failures hit the repair itself.
pub const REPAIR_ATTEMPTS: u32 = 8;
/// The kill points of a repair, `R@repair:ATTEMPT:POINT` (`split`:
/// `R@repair:BUILD:split`, counted from the last repair; `redistribute`:
/// `R@repair:1:redistribute`, when a call's blocks move onto the grid a
/// shrink left, R a rank of that grid).
pub const REPAIR_POINTS: [&str; 6] = ["revoke", "shrink", "spawn", "merge", "split", "redistribute"];
/// Exit code of a spawned replacement whose hand-over was abandoned.
pub const EXIT_ABANDONED: i32 = 75;
/// Test switch: when set (and not `0`), every `MPI_Comm_spawn` of a repair
/// fails at once, as on a batch system that refuses it.
pub const REFUSE_SPAWN_VAR: &str = "FTLA_TEST_REFUSE_SPAWN";
/// Test switch: `K` (≥ 1) makes the replacements of the job's K-th
/// `MPI_Comm_spawn` never start (they sleep before `MPI_Init`), as on a
/// node where the program hangs on a dead file system: that spawn cannot
/// complete, and the survivors' bound (`spawn_bound`) ends the job.
pub const STALL_SPAWN_VAR: &str = "FTLA_TEST_STALL_SPAWN";
/// Test switch: `R` or `R@recovery` (`R@checkpoint`): grid rank `R`
/// revokes the grid at the end of its first recovery (periodic save),
/// after its last collective, as a process does that learns of a failure
/// while the others have already left that collective (they completed it
/// without waiting for this process's share of the result). The processes
/// must meet at the next agreement and repair together.
pub const LATE_REVOKE_VAR: &str = "FTLA_TEST_LATE_REVOKE";

/// Obeys [`STALL_SPAWN_VAR`] in a spawned process, before `MPI_Init`:
/// Open MPI marks a spawned process with `OMPI_PARENT_PORT`, and numbers
/// the jobs of one launch in `PMIX_NAMESPACE` (`…@1` the launched one,
/// `…@2` the first spawn's).
pub(crate) fn stall_if_asked() {
    let Some(k) = std::env::var(STALL_SPAWN_VAR).ok().and_then(|v| v.parse::<u32>().ok()).filter(|&k| k > 0) else {
        return;
    };
    let job = std::env::var("PMIX_NAMESPACE").ok().and_then(|ns| ns.rsplit('@').next()?.parse::<u32>().ok());
    if std::env::var_os("OMPI_PARENT_PORT").is_some() && job == Some(k + 1) {
        trace!("{STALL_SPAWN_VAR}={k}: this replacement never starts");
        std::thread::sleep(Duration::from_secs(600));
        std::process::exit(EXIT_ABANDONED);
    }
}

/// How the lost grid ranks that no parked spare takes are dealt with.
/// Every grid rank passes the same; a parked spare has no say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RepairPlan {
    /// Spawn replacements (`MPI_Comm_spawn`).
    pub spawn: bool,
    /// When no replacement can be had (spawning is off or refused): go on
    /// as a smaller grid of the survivors with at least this many process
    /// columns ([`crate::shrunk_shape`]); `None`: the repair is refused.
    pub shrink_min_cols: Option<usize>,
}

impl Default for RepairPlan {
    /// Spawn, never shrink.
    fn default() -> RepairPlan {
        RepairPlan { spawn: true, shrink_min_cols: None }
    }
}

impl RepairPlan {
    /// The plan's vote in the repair's all-gather: `[spawn, shrink]`
    /// (spawn 0/1; shrink the columns, 0 for "no"); a spare has no say
    /// (spawn -1).
    fn vote(plan: Option<RepairPlan>) -> [i64; 2] {
        match plan {
            None => [-1, 0],
            Some(p) => [p.spawn as i64, p.shrink_min_cols.map_or(0, |c| c.max(1) as i64)],
        }
    }

    /// The grid ranks' plan: each way only where every one of them allows
    /// it (a replacement that has not yet set the plan of the call it
    /// joins, say, keeps the others from a way they allow); the default
    /// when no grid rank voted.
    fn of_votes(votes: impl Iterator<Item = [i64; 2]>) -> RepairPlan {
        let mut grid_ranks = votes.filter(|v| v[0] >= 0).peekable();
        if grid_ranks.peek().is_none() {
            return RepairPlan::default();
        }
        let [spawn, shrink] = grid_ranks.fold([1, i64::MAX], |a, v| [a[0].min(v[0]), a[1].min(v[1])]);
        RepairPlan { spawn: spawn > 0, shrink_min_cols: usize::try_from(shrink).ok().filter(|&c| c > 0) }
    }
}

/// What a shrink leaves to its caller: the grid before it, and which
/// survivor holds each of that grid's ranks' data until they have been
/// moved onto the new grid (see [`crate::Grid::take_shrunk_from`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShrunkFrom {
    /// The grid before the shrink.
    pub shape: GridShape,
    /// Its grid ranks that were lost in the repair (their data are gone
    /// and must be rebuilt onto their holders).
    pub lost: Vec<i32>,
    /// By grid rank of `shape`: the rank, in [`crate::Grid::survivors`],
    /// of the survivor that holds its data (its own process, or for a lost
    /// rank a survivor of its process row); `None` for a lost rank whose
    /// whole process row is gone.
    pub holders: Vec<Option<i32>>,
}

impl ShrunkFrom {
    /// Local, the same on every survivor: whether the lost ranks' data can
    /// be rebuilt onto survivors and moved, with checksums that rebuild
    /// `tolerated` losses per process row: within that tolerance, no row
    /// lost whole, and one lost rank per process row (two lost positions
    /// of one row would be played by two survivors that each wait, in
    /// their own position's part, for the other's receive). Checked before
    /// anything moves, so that every survivor gives the same error.
    ///
    /// # Errors
    /// [`Error::Unrecoverable`] naming the ranks and their row.
    pub fn check_movable(&self, tolerated: usize) -> Result<()> {
        let q = self.shape.q as usize;
        let coords: Vec<(usize, usize)> = self.lost.iter().map(|&g| (g as usize / q, g as usize % q)).collect();
        // (More losses in a process row than the checksums rebuild: said
        // as a repair says it.)
        if let Some((row, cols)) = crate::row_beyond_tolerance(&coords, tolerated) {
            let ranks: Vec<i32> = cols.iter().map(|&c| (row * q + c) as i32).collect();
            return Err(Error::too_many_losses_in_row(row, &ranks, tolerated));
        }
        if let Some(g) = self.lost.iter().find(|&&g| self.holders.get(g as usize).is_none_or(Option::is_none)) {
            return Err(Error::Unrecoverable {
                reason: format!(
                    "grid rank {g} of the {} grid was lost with every other process of its row",
                    self.shape
                ),
            });
        }
        if let Some((row, cols)) = crate::row_beyond_tolerance(&coords, 1) {
            let ranks: Vec<String> = cols.iter().map(|&c| (row * q + c).to_string()).collect();
            return Err(Error::Unrecoverable {
                reason: format!(
                    "ranks {} of process row {row} of the {} grid were lost together: a shrink rebuilds one lost \
                     process per process row",
                    ranks.join(" and "),
                    self.shape
                ),
            });
        }
        Ok(())
    }
}

/// Collective over `comm` (a repair's shrunk communicator): the pending
/// shrink `root` holds (its holders still ranks of the communicator before
/// the repair), on every process.
fn agree_on_pending_shrink(comm: &Comm, root: i32, mine: Option<&ShrunkFrom>) -> Result<Option<ShrunkFrom>> {
    let words = if comm.rank() == root { mine.map(shrunk_words).unwrap_or_default() } else { Vec::new() };
    let mut len = [words.len() as i64];
    comm.bcast(&mut len, root)?;
    let mut all = words;
    all.resize(len[0].max(0) as usize, 0);
    comm.bcast(&mut all, root)?;
    Ok(shrunk_of_words(&all))
}

/// A [`ShrunkFrom`] as the repair's hand-over broadcasts it: P, Q, the
/// number of lost ranks, the lost ranks, then the holder of each grid rank
/// (-1: none).
fn shrunk_words(s: &ShrunkFrom) -> Vec<i64> {
    let mut w = vec![s.shape.p as i64, s.shape.q as i64, s.lost.len() as i64];
    w.extend(s.lost.iter().map(|&g| g as i64));
    w.extend(s.holders.iter().map(|h| h.map_or(-1, |u| u as i64)));
    w
}

/// [`shrunk_words`] back (`None` for no words, or words that do not
/// make one).
fn shrunk_of_words(w: &[i64]) -> Option<ShrunkFrom> {
    let (&p, &q, &nlost) = (w.first()?, w.get(1)?, w.get(2)?);
    let nlost = usize::try_from(nlost).ok()?;
    let lost = w.get(3..3 + nlost)?.iter().map(|&g| g as i32).collect();
    let holders: Vec<Option<i32>> = w.get(3 + nlost..)?.iter().map(|&u| (u >= 0).then_some(u as i32)).collect();
    (holders.len() as i64 == p * q).then_some(ShrunkFrom {
        shape: GridShape { p: p as i32, q: q as i32 },
        lost,
        holders,
    })
}

fn as_ranks(holders: Vec<Option<usize>>) -> Vec<Option<i32>> {
    holders.into_iter().map(|h| h.map(|u| u as i32)).collect()
}

/// Replicated state: one entry per universe rank.
#[derive(Debug)]
pub(crate) struct Universe {
    pub comm: Comm,
    /// `roles[u]`: grid rank played by universe rank `u`, or [`SPARE`].
    pub roles: Vec<i64>,
    pub epoch: u32,
    pub p: i32,
    pub q: i32,
    /// Every grid rank lost so far, with the epoch of the repair that
    /// replaced it (how a replacement learns which kills have fired).
    pub losses: Vec<Loss>,
    /// How long the job's first `MPI_Comm_spawn` took, as its lowest
    /// survivor measured it (`None` before any): what bounds the later ones
    /// ([`spawn_bound`]).
    pub first_spawn: Option<Duration>,
    /// Set by a repair that shrank the grid (on every survivor; a
    /// newcomer never sees one), until the caller takes it.
    pub shrunk: Option<ShrunkFrom>,
}

/// Once a spawn of the job was measured, later ones may take this many
/// times as long (starting a process and connecting it takes about a
/// second on one machine with Open MPI 5.0, a few on a busy cluster)…
const SPAWN_BOUND_MULTIPLE: u32 = 10;
/// …and never less than this (a loaded machine slows a spawn down by a
/// few seconds at times).
const SPAWN_BOUND_FLOOR: Duration = Duration::from_secs(15);

/// How long a spawn (or the merge after it) may take before the repair is
/// declared stalled: [`SPAWN_BOUND_MULTIPLE`] times the job's first spawn,
/// at least [`SPAWN_BOUND_FLOOR`]; before any, the repair timeout
/// (`FTLA_REPAIR_TIMEOUT`, 60 s), which also caps the others.
pub fn spawn_bound(first_spawn: Option<Duration>) -> Duration {
    match first_spawn {
        None => repair_timeout(),
        Some(t) => (t * SPAWN_BOUND_MULTIPLE).max(SPAWN_BOUND_FLOOR).min(repair_timeout()),
    }
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// `Ok` when every live process of `comm` reported `ok`; a process-failure
/// error otherwise (so the caller retries the repair).
fn agreed(comm: &Comm, ok: bool) -> Result<()> {
    match comm.agree(ok as i32) {
        Ok(1) => Ok(()),
        Ok(_) => Err(Error::ProcFailed { ranks: Vec::new() }),
        Err(e) => Err(e),
    }
}

impl Universe {
    /// What is left of a universe handed on (to a parked process): no
    /// communicator and no roles.
    pub fn husk(&self) -> Universe {
        Universe {
            comm: Comm::null(),
            roles: Vec::new(),
            epoch: self.epoch,
            p: self.p,
            q: self.q,
            losses: Vec::new(),
            first_spawn: self.first_spawn,
            shrunk: None,
        }
    }

    /// Grid rank of this process, or `None` for a spare.
    pub fn my_role(&self) -> Option<i32> {
        let r = self.roles.get(self.comm.rank() as usize).copied().unwrap_or(SPARE);
        (r >= 0).then_some(r as i32)
    }

    /// The head of the state a newcomer needs: epoch, shape, the lengths
    /// of the role table and of the losses, the first spawn's cost in
    /// microseconds (-1: none yet).
    fn head(&self) -> [i64; 7] {
        [
            self.epoch as i64,
            self.p as i64,
            self.q as i64,
            self.roles.len() as i64,
            self.losses.len() as i64,
            self.first_spawn.map_or(-1, |t| t.as_micros() as i64),
            self.shrunk.as_ref().map_or(0, |s| shrunk_words(s).len() as i64),
        ]
    }

    /// Receives [`Universe::send_state`]'s state on `comm` from its rank 0.
    pub fn receive_state(comm: Comm) -> Result<Universe> {
        let mut head = [0i64; 7];
        comm.bcast(&mut head, 0)?;
        let n = head[3].max(0) as usize;
        let mut roles = vec![0i64; n];
        comm.bcast(&mut roles, 0)?;
        let mut lost = vec![0i64; 2 * head[4].max(0) as usize];
        comm.bcast(&mut lost, 0)?;
        let mut record = vec![0i64; head[6].max(0) as usize];
        comm.bcast(&mut record, 0)?;
        if n != comm.size() as usize {
            return Err(Error::Unrecoverable {
                reason: format!("role table has {n} entries for {} processes", comm.size()),
            });
        }
        let losses = lost.chunks_exact(2).map(|l| Loss { rank: l[0] as i32, epoch: l[1] as u32 }).collect();
        let first_spawn = u64::try_from(head[5]).ok().map(Duration::from_micros);
        Ok(Universe {
            comm,
            roles,
            epoch: head[0] as u32,
            p: head[1] as i32,
            q: head[2] as i32,
            losses,
            first_spawn,
            shrunk: shrunk_of_words(&record),
        })
    }

    /// Broadcasts the state from rank 0 (a survivor) to the newcomers;
    /// every survivor takes rank 0's measure of the first spawn, so that
    /// all of them bound the next one alike.
    fn send_state(&mut self) -> Result<()> {
        let mut head = self.head();
        self.comm.bcast(&mut head, 0)?;
        self.first_spawn = u64::try_from(head[5]).ok().map(Duration::from_micros);
        let mut roles = self.roles.clone();
        self.comm.bcast(&mut roles, 0)?;
        let mut lost: Vec<i64> = self.losses.iter().flat_map(|l| [l.rank as i64, l.epoch as i64]).collect();
        self.comm.bcast(&mut lost, 0)?;
        // The shrink whose data have not moved yet (every survivor has
        // the same since the attempt's start), for the newcomers.
        let mut record = vec![0i64; head[6].max(0) as usize];
        if let Some(s) = &self.shrunk {
            if self.comm.rank() == 0 {
                record = shrunk_words(s);
            }
        }
        self.comm.bcast(&mut record, 0)?;
        self.shrunk = shrunk_of_words(&record);
        Ok(())
    }

    /// Runs the repair protocol until it succeeds or is hopeless. All live
    /// members of the universe (grid ranks and spares) call it. `tolerated`
    /// is this process's limit on lost processes per process row (see
    /// [`crate::Grid::set_losses_tolerated_per_row`]); the lowest one among
    /// the live processes applies. `plan` is this process's
    /// [`RepairPlan`] (`None` for a parked spare: the grid ranks' applies);
    /// `holds_data`: whether its grid rank's data are whole here (not on a
    /// replacement whose blocks were not rebuilt yet: a shrink then counts
    /// them lost).
    ///
    /// On success the universe holds the live processes and the newcomers,
    /// every grid rank has a process again, and `epoch` is one higher; or,
    /// after a shrink, the survivors form a smaller grid, the left-over
    /// ones are spares, and `shrunk` says what the grid was.
    pub fn repair(
        &mut self,
        launch: &LaunchCommand,
        injector: &Injector,
        tolerated: Option<usize>,
        plan: Option<RepairPlan>,
        holds_data: bool,
    ) -> Result<RepairReport> {
        note_failure();
        let t_all = Instant::now();
        let start_epoch = self.epoch;
        let mut report = RepairReport {
            epoch: self.epoch + 1,
            mode: RepairMode::NoLoss,
            killed: Vec::new(),
            lost_spares: 0,
            attempts: 0,
            detect_ms: 0.0,
            revoke_ms: 0.0,
            shrink_ms: 0.0,
            spawn_ms: 0.0,
            merge_ms: 0.0,
            split_ms: 0.0,
            total_ms: 0.0,
            grid_before: None,
            grid_after: None,
        };
        let me_grid = self.my_role().unwrap_or(-1);
        loop {
            report.attempts += 1;
            if report.attempts > REPAIR_ATTEMPTS {
                return Err(Error::Unrecoverable {
                    reason: format!(
                        "repair did not complete after {REPAIR_ATTEMPTS} attempts (failures keep hitting it)"
                    ),
                });
            }
            match self.attempt(launch, injector, me_grid, start_epoch, tolerated, (plan, holds_data), &mut report) {
                Ok(()) => break,
                Err(e) if e.is_process_failure() => continue,
                Err(e) => return Err(e),
            }
        }
        report.killed.sort_unstable();
        report.killed.dedup();
        report.total_ms = ms(t_all);
        crate::members::note_member(self.my_role(), self.epoch);
        Ok(report)
    }

    /// One try of the repair. Every MPI call that is not fault tolerant
    /// (all but revoke, shrink and agree) is followed by an agreement on
    /// its outcome, which every live process reaches whatever happened to
    /// it: so all of them leave an attempt the same way, and a retry's
    /// shrink never meets another process's agreement.
    fn attempt(
        &mut self,
        launch: &LaunchCommand,
        injector: &Injector,
        me_grid: i32,
        start_epoch: u32,
        tolerated: Option<usize>,
        (plan, holds_data): (Option<RepairPlan>, bool),
        report: &mut RepairReport,
    ) -> Result<()> {
        trace!(
            "repair attempt {} from epoch {start_epoch}: universe rank {} of {}",
            report.attempts,
            self.comm.rank(),
            self.comm.size()
        );
        let t = Instant::now();
        let _ = self.comm.revoke();
        report.revoke_ms += ms(t);
        injector.point(me_grid, start_epoch, "repair", report.attempts as u64, "revoke");

        let t = Instant::now();
        let shrunk = self.comm.shrink()?;
        report.shrink_ms += ms(t);
        // Who is left: every survivor's old universe rank, in shrunk order
        // (the membership is agreed by the shrink itself). Until that is
        // agreed the universe stays as it was: a retry starts again from
        // it, on every process alike.
        // (With each process's limit on losses per row, -1 for none, and
        // its vote on the plan.)
        let limit = tolerated.map_or(-1, |t| t as i64);
        let [spawn_vote, shrink_vote] = RepairPlan::vote(plan);
        let words = [self.comm.rank() as i64, limit, spawn_vote, shrink_vote, holds_data as i64];
        let olds = shrunk.allgather(&words);
        if let Err(e) = agreed(&shrunk, olds.is_ok()) {
            let _ = shrunk.revoke();
            return Err(e);
        }
        let gathered = olds?;
        let olds: Vec<i64> = gathered.chunks_exact(5).map(|c| c[0]).collect();
        let tolerated = gathered.chunks_exact(5).filter_map(|c| usize::try_from(c[1]).ok()).min();
        let plan = RepairPlan::of_votes(gathered.chunks_exact(5).map(|c| [c[2], c[3]]));
        // (A replacement whose blocks were not rebuilt yet holds no data.)
        let has_data: Vec<bool> = gathered.chunks_exact(5).map(|c| c[4] != 0).collect();
        let old_roles = std::mem::take(&mut self.roles);
        // A shrink whose data have not moved yet, as the lowest survivor
        // that was a grid rank has it (a hot spare's may be stale): every
        // survivor goes on from the same one.
        let root = (0..olds.len()).find(|&u| old_roles.get(olds[u] as usize).is_some_and(|&r| r >= 0)).unwrap_or(0);
        let pending = agree_on_pending_shrink(&shrunk, root as i32, self.shrunk.as_ref());
        if let Err(e) = agreed(&shrunk, pending.is_ok()) {
            let _ = shrunk.revoke();
            self.roles = old_roles;
            return Err(e);
        }
        self.shrunk = pending?;
        self.comm = shrunk;
        // Its holders by their ranks here; the data of a holder that is
        // gone (or holds none) are lost too, to be rebuilt onto another
        // survivor of their row.
        if let Some(s) = &mut self.shrunk {
            let held: Vec<Option<usize>> = s
                .holders
                .iter()
                .map(|h| h.and_then(|old| olds.iter().position(|&o| o == old as i64)).filter(|&u| has_data[u]))
                .collect();
            s.lost.extend((0..held.len() as i32).filter(|&g| held[g as usize].is_none()));
            s.lost.sort_unstable();
            s.lost.dedup();
            s.holders = as_ranks(fill_holders(held, s.shape));
        }
        let mut new_roles: Vec<i64> =
            olds.iter().map(|&o| old_roles.get(o as usize).copied().unwrap_or(SPARE)).collect();
        let spares = |roles: &[i64]| roles.iter().filter(|&&r| r == SPARE).count();
        report.lost_spares += spares(&old_roles).saturating_sub(spares(&new_roles));
        // Grid ranks nobody alive plays (computed from the whole shape, so a
        // retry still knows about the ranks lost in an earlier attempt).
        let mut held = vec![false; (self.p * self.q) as usize];
        for &r in &new_roles {
            if let Some(h) = usize::try_from(r).ok().and_then(|r| held.get_mut(r)) {
                *h = true;
            }
        }
        let dead_grid: Vec<i64> = (0..held.len()).filter(|&g| !held[g]).map(|g| g as i64).collect();
        report.killed.extend(dead_grid.iter().map(|&r| r as i32));
        trace!("shrunk to {} processes; grid ranks to replace: {dead_grid:?}", self.comm.size());
        self.roles = new_roles.clone();
        // Every live process computed the same list and limit: all of them
        // stop here alike, before a replacement is started in vain.
        if let Some(t) = tolerated {
            let q = self.q as usize;
            let coords: Vec<(usize, usize)> = dead_grid.iter().map(|&g| (g as usize / q, g as usize % q)).collect();
            if let Some((row, cols)) = crate::error::row_beyond_tolerance(&coords, t) {
                let ranks: Vec<i32> = cols.iter().map(|&c| (row * q + c) as i32).collect();
                return Err(Error::too_many_losses_in_row(row, &ranks, t));
            }
        }
        injector.point(me_grid, start_epoch, "repair", report.attempts as u64, "shrink");

        // (A shrink, below, gives no spare a lost rank: the lost ranks'
        // data are rebuilt onto survivors, which are all inside the call;
        // a spare takes a place on the new grid only where the survivors
        // do not fill it, joining it as a replacement does.)
        let survivors_roles = new_roles.clone();
        // Hot spares first, lowest universe rank first; spawn the rest.
        let mut to_spawn = Vec::new();
        let mut spares =
            new_roles.iter().enumerate().filter(|(_, &r)| r == SPARE).map(|(i, _)| i).collect::<Vec<_>>().into_iter();
        for &g in &dead_grid {
            match spares.next() {
                Some(pos) => new_roles[pos] = g,
                None => to_spawn.push(g),
            }
        }
        if !dead_grid.is_empty() {
            report.mode = if to_spawn.is_empty() { RepairMode::Spare } else { RepairMode::Spawn };
        }

        let (mut merged, mut measured_spawn, mut shrunk_to) = (None, None, None);
        if !to_spawn.is_empty() {
            let spawned =
                plan.spawn.then(|| self.spawn_and_merge(launch, injector, me_grid, start_epoch, &to_spawn, report));
            match (spawned, plan.shrink_min_cols) {
                (Some(Ok((m, took))), _) => (merged, measured_spawn) = (Some(m), Some(took)),
                (Some(Err(e @ Error::RepairRefused { .. })), Some(min_cols)) => {
                    trace!("{e}: shrinking instead");
                    shrunk_to = Some(self.shrunk_grid((&survivors_roles, &has_data), &dead_grid, min_cols, report)?);
                }
                (Some(Err(e)), _) => return Err(e),
                (None, Some(min_cols)) => {
                    shrunk_to = Some(self.shrunk_grid((&survivors_roles, &has_data), &dead_grid, min_cols, report)?);
                }
                (None, None) => {
                    return Err(Error::RepairRefused {
                        reason: format!(
                            "{} grid rank(s) lost ({to_spawn:?}), no hot spare left, and the repair may neither \
                             spawn nor shrink",
                            to_spawn.len()
                        ),
                    })
                }
            }
        }
        let (shape, shrunk) = match shrunk_to {
            Some((shape, roles, from)) => {
                new_roles = roles;
                // (Nobody was spawned for them.)
                to_spawn.clear();
                (shape, Some(from))
            }
            None => (GridShape { p: self.p, q: self.q }, self.shrunk.clone()),
        };

        // Hand the new state to everyone (newcomers receive it here).
        let t = Instant::now();
        let mut next = Universe {
            // Without newcomers the shrunk communicator itself goes on: no
            // new communicator (MPI_Comm_dup is not fault tolerant).
            comm: match merged {
                Some(m) => m,
                None => std::mem::replace(&mut self.comm, Comm::null()),
            },
            roles: {
                new_roles.extend_from_slice(&to_spawn);
                new_roles
            },
            epoch: start_epoch + 1,
            p: shape.p,
            q: shape.q,
            first_spawn: self.first_spawn.or(measured_spawn),
            shrunk,
            losses: {
                let mut losses = self.losses.clone();
                losses.extend(dead_grid.iter().map(|&rank| Loss { rank: rank as i32, epoch: start_epoch }));
                losses
            },
        };
        trace!("handing over state: epoch {} roles {:?}", next.epoch, next.roles);
        let sent = next.send_state();
        if let Err(e) = agreed(&next.comm, sent.is_ok()) {
            let _ = next.comm.revoke();
            if self.comm.is_null() {
                // The retry starts from the communicator the attempt was on.
                std::mem::swap(&mut self.comm, &mut next.comm);
            }
            return Err(e);
        }
        if report.mode == RepairMode::Spare {
            report.spawn_ms += ms(t);
        } else {
            report.merge_ms += ms(t);
        }
        injector.point(me_grid, start_epoch, "repair", report.attempts as u64, "merge");
        std::mem::swap(self, &mut next);
        trace!("repair attempt {} done", report.attempts);
        Ok(())
    }

    /// The shrink of an attempt that has no process for the grid ranks
    /// `dead` (`roles`: the survivors' roles on this grid, the spares
    /// still spares: they take places on the new grid only after every
    /// survivor, as processes that join it): the new shape, the
    /// survivors' roles on it and what the old grid was. The same on every
    /// survivor (all of it follows from the agreed survivors).
    fn shrunk_grid(
        &self,
        (roles, has_data): (&[i64], &[bool]),
        dead: &[i64],
        min_cols: usize,
        report: &mut RepairReport,
    ) -> Result<(GridShape, Vec<i64>, ShrunkFrom)> {
        let now = GridShape { p: self.p, q: self.q };
        let alive = self.comm.size() as usize;
        let to = shrunk_shape(self.p, self.q, alive, min_cols).ok_or_else(|| Error::RepairRefused {
            reason: format!(
                "only {alive} process(es) of the {now} grid are left: too few to go on as a grid of at least \
                 {min_cols} process column(s) (no hot spare left, and no replacement can be had)"
            ),
        })?;
        report.mode = RepairMode::Shrink;
        // After a shrink whose data have not been moved yet (a loss while
        // it settled), the data are still on the grid before it: the new
        // holders are of that grid's ranks.
        let from = match &self.shrunk {
            Some(pending) => pending.clone(),
            None => {
                // (A replacement without its blocks yet holds nothing.)
                let with_data: Vec<i64> =
                    roles.iter().zip(has_data).map(|(&r, &d)| if d { r } else { SPARE }).collect();
                let mut lost: Vec<i32> = dead.iter().map(|&g| g as i32).collect();
                lost.extend(roles.iter().zip(has_data).filter(|(&r, &d)| r >= 0 && !d).map(|(&r, _)| r as i32));
                lost.sort_unstable();
                lost.dedup();
                ShrunkFrom { shape: now, lost, holders: as_ranks(holders(&with_data, now)) }
            }
        };
        report.grid_before = Some(from.shape);
        report.grid_after = Some(to);
        Ok((to, shrunk_roles(roles, now, to, SPARE), from))
    }

    /// Spawns the replacements of `to_spawn` (root: the lowest survivor)
    /// and merges them into one communicator with the survivors; returns
    /// it and how long the spawn took.
    ///
    /// Both calls are bounded by [`spawn_bound`]: a spawn that cannot
    /// complete (a replacement that never starts, a process lost inside
    /// the call) ends the job as [`crate::launch::Outcome::Stalled`] on
    /// every survivor within seconds of the bound.
    fn spawn_and_merge(
        &mut self,
        launch: &LaunchCommand,
        injector: &Injector,
        me_grid: i32,
        start_epoch: u32,
        to_spawn: &[i64],
        report: &mut RepairReport,
    ) -> Result<(Comm, Duration)> {
        let t = Instant::now();
        // Open MPI's spawn can hang if a parent is already dead: make sure
        // everyone is alive right before it, and bound it.
        agreed(&self.comm, true)?;
        trace!("spawning {} replacement(s)", to_spawn.len());
        let bound = spawn_bound(self.first_spawn);
        let guard = Deadline::arm(&stall_what("MPI_Comm_spawn", me_grid, to_spawn, bound, self.first_spawn), bound);
        let spawn_started = Instant::now();
        let spawned = if std::env::var_os(REFUSE_SPAWN_VAR).is_some_and(|v| !v.is_empty() && v != "0") {
            // Test switch: a batch system that refuses MPI_Comm_spawn.
            Err(Error::Mpi {
                code: 0,
                class: 0,
                message: format!("MPI_Comm_spawn refused ({REFUSE_SPAWN_VAR} is set)"),
            })
        } else {
            self.comm.spawn(&launch.exe, &launch.args, to_spawn.len() as i32, 0)
        };
        let took = spawn_started.elapsed();
        drop(guard);
        injector.point(me_grid, start_epoch, "repair", report.attempts as u64, "spawn");
        let ok = spawned.as_ref().map(|c| c.remote_size() == to_spawn.len() as i32).unwrap_or(false);
        // Every parent must be alive when the merge starts: Open MPI's
        // MPI_Intercomm_merge returns an error when a member is known to
        // have failed, but blocks for ever in its context-id allocation
        // when one dies unnoticed. This agreement, right before it, makes
        // every failure so far known.
        if let Err(e) = agreed(&self.comm, ok) {
            if let Ok(inter) = &spawned {
                let _ = inter.revoke();
            }
            // A spawn that failed while every parent is alive cannot be
            // cured by retrying. Whether that is so is agreed too: a
            // process that saw a failure, or whose spawn failed for one,
            // votes for a retry.
            let refused = !matches!(spawned, Err(Error::ProcFailed { .. } | Error::Revoked))
                && self.comm.failed_ranks().is_empty();
            if agreed(&self.comm, refused).is_ok() {
                let detail = match &spawned {
                    Err(err) => err.to_string(),
                    Ok(_) => e.to_string(),
                };
                return Err(Error::RepairRefused {
                    reason: format!(
                        "{} grid rank(s) lost ({:?}), no hot spare left, and spawning a replacement failed: {detail}",
                        to_spawn.len(),
                        to_spawn
                    ),
                });
            }
            return Err(Error::ProcFailed { ranks: Vec::new() });
        }
        report.spawn_ms += ms(t);
        let inter = spawned?;
        let t = Instant::now();
        let guard =
            Deadline::arm(&stall_what("MPI_Intercomm_merge", me_grid, to_spawn, bound, self.first_spawn), bound);
        let merged = inter.merge(false);
        drop(guard);
        let ok = merged.is_ok();
        let a = agreed(&self.comm, ok);
        let b = agreed(&inter, ok);
        if a.is_err() || b.is_err() {
            let _ = inter.revoke();
            if let Ok(m) = &merged {
                let _ = m.revoke();
            }
            return Err(Error::ProcFailed { ranks: Vec::new() });
        }
        report.merge_ms += ms(t);
        Ok((merged?, took))
    }
}

/// `grid rank 1: MPI_Comm_spawn of the replacement of grid rank 5 (bound
/// 10.0 s: 5 × the job's first spawn, 1.12 s, at least 10 s)`.
fn stall_what(call: &str, me_grid: i32, to_spawn: &[i64], bound: Duration, first: Option<Duration>) -> String {
    let who = if me_grid >= 0 { format!("grid rank {me_grid}") } else { "a hot spare".to_string() };
    let ranks: Vec<String> = to_spawn.iter().map(i64::to_string).collect();
    let whom = match ranks.as_slice() {
        [one] => format!("the replacement of grid rank {one}"),
        [head @ .., last] => format!("the replacements of grid ranks {} and {last}", head.join(", ")),
        [] => "no replacement".to_string(),
    };
    let why = match first {
        Some(t) => format!(
            "{SPAWN_BOUND_MULTIPLE} × the job's first spawn, {:.2} s, at least {} s",
            t.as_secs_f64(),
            SPAWN_BOUND_FLOOR.as_secs()
        ),
        None => "no spawn of the job measured yet".to_string(),
    };
    format!("{who}: {call} of {whom} (bound {:.1} s: {why})", bound.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shrink_record_travels_as_words_and_back() {
        let s = ShrunkFrom {
            shape: GridShape { p: 2, q: 3 },
            lost: vec![2, 5],
            holders: vec![Some(0), Some(1), Some(0), Some(2), Some(3), Some(2)],
        };
        assert_eq!(shrunk_of_words(&shrunk_words(&s)), Some(s.clone()));
        let none = ShrunkFrom { holders: vec![None; 6], ..s };
        assert_eq!(shrunk_of_words(&shrunk_words(&none)), Some(none));
        assert_eq!(shrunk_of_words(&[]), None);
        // Holders that do not cover the grid make no record.
        assert_eq!(shrunk_of_words(&[2, 3, 0, 1, 2]), None);
    }

    #[test]
    fn a_spawn_is_bounded_by_a_multiple_of_the_first_one_with_a_floor() {
        // (FTLA_REPAIR_TIMEOUT unset in unit tests: 60 s caps the bound.)
        assert_eq!(spawn_bound(None), repair_timeout());
        assert_eq!(spawn_bound(Some(Duration::from_millis(1100))), SPAWN_BOUND_FLOOR);
        assert_eq!(spawn_bound(Some(Duration::from_secs(4))), Duration::from_secs(40));
        assert_eq!(spawn_bound(Some(Duration::from_secs(30))), repair_timeout());
    }

    #[test]
    fn the_stall_names_the_caller_the_replacements_and_the_bound() {
        let first = Some(Duration::from_millis(1120));
        let one = stall_what("MPI_Comm_spawn", 2, &[1], Duration::from_secs(15), first);
        assert_eq!(
            one,
            "grid rank 2: MPI_Comm_spawn of the replacement of grid rank 1 (bound 15.0 s: 10 × the job's first \
             spawn, 1.12 s, at least 15 s)"
        );
        let two = stall_what("MPI_Intercomm_merge", -1, &[0, 5], Duration::from_secs(60), None);
        assert_eq!(
            two,
            "a hot spare: MPI_Intercomm_merge of the replacements of grid ranks 0 and 5 (bound 60.0 s: no spawn \
             of the job measured yet)"
        );
    }
}
