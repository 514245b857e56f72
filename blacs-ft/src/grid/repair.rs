//! The grid after a failure: raising a local error, the repair that hands
//! back the same shape, ranks and coordinates, and the end of the job.

use super::*;

impl Grid {
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
    ///
    /// Under a [`RepairPlan`] that allows it ([`Grid::set_repair_plan`]),
    /// a repair that can have no replacement shrinks the grid instead: the
    /// report's mode is [`RepairMode::Shrink`], this grid has its new shape
    /// and this process its new rank ([`Grid::shape`], [`Grid::rank`]), or
    /// none ([`Grid::is_member`] false: it is to [`Grid::park`] once the
    /// data have moved), and [`Grid::take_shrunk_from`] says where the old
    /// grid's data are.
    pub fn recover(&mut self) -> Result<RepairReport> {
        self.ulfm.require()?;
        self.revoke_all();
        let plan = Some(self.plan);
        let mut report =
            self.universe.repair(&self.launch, &self.injector, self.tolerated_per_row, plan, self.holds_data)?;
        self.injector.set_losses(&self.universe.losses);
        let (mut builds, mut built_in) = (0, self.universe.epoch);
        loop {
            if self.universe.epoch != built_in {
                (builds, built_in) = (0, self.universe.epoch);
            }
            builds += 1;
            let t = std::time::Instant::now();
            let shrunk = self.universe.shrunk.is_some();
            let settled = match build_comms(&self.universe, &self.injector, builds) {
                Ok(Some((all, row, col))) if shrunk => {
                    (self.p, self.q, self.rank) = (self.universe.p, self.universe.q, all.rank());
                    self.demoted = false;
                    self.all = all;
                    self.row = row;
                    self.col = col;
                    agree_on_pending(&self.all, self.rank, self.pending_error.as_deref())
                }
                // Left without a place by a shrink: the grid's
                // communicators stay the revoked ones (every operation on
                // them fails) until it parks; the others' agreement on
                // raised errors is theirs.
                Ok(None) if shrunk => {
                    self.demoted = true;
                    (self.p, self.q) = (self.universe.p, self.universe.q);
                    Ok(())
                }
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
                    let more = self.universe.repair(
                        &self.launch,
                        &self.injector,
                        self.tolerated_per_row,
                        plan,
                        self.holds_data,
                    )?;
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

    /// Sets what a repair does with lost grid ranks that no parked spare
    /// takes (spawn replacements, shrink, or both: spawn first), and
    /// returns the plan it replaces. The default spawns and never shrinks.
    /// Local; every grid rank sets the same before the failures it is for.
    ///
    /// # Fault tolerance
    /// A grid that may shrink changes shape and ranks in
    /// [`Grid::recover`]: its caller moves the data onto the new grid
    /// ([`Grid::take_shrunk_from`]) and parks the survivors left without
    /// a place ([`Grid::park`]).
    pub fn set_repair_plan(&mut self, plan: RepairPlan) -> RepairPlan {
        std::mem::replace(&mut self.plan, plan)
    }

    /// Declares whether this process's grid rank's data are whole here
    /// (the default), or not yet (a replacement whose blocks the survivors
    /// have still to rebuild): a repair that shrinks the grid then counts
    /// them lost, to be rebuilt onto a survivor. Local.
    pub fn set_holds_data(&mut self, holds: bool) {
        self.holds_data = holds;
    }

    /// The repair plan in force ([`Grid::set_repair_plan`]).
    pub fn repair_plan(&self) -> RepairPlan {
        self.plan
    }

    /// After a repair that shrank the grid: the grid before it and which
    /// survivor holds each of its grid ranks' data (lost ones to be
    /// rebuilt onto a survivor of their process row); taken once, by the
    /// caller that moves the data. Local; every process that takes part in
    /// the move has the same (a repair agrees on it among every survivor
    /// first).
    pub fn take_shrunk_from(&mut self) -> Option<ShrunkFrom> {
        self.universe.shrunk.take()
    }

    /// The ranks in [`Grid::survivors`] of the survivors that hold data of
    /// the grid a shrink left (`from`) and have no place on this one: they
    /// hand their blocks over, then park.
    pub fn left_over(&self, from: &ShrunkFrom) -> Vec<i32> {
        let placed: Vec<i32> = (0..self.size()).filter_map(|r| self.survivor_of(r)).collect();
        let mut left: Vec<i32> = from.holders.iter().flatten().copied().filter(|u| !placed.contains(u)).collect();
        left.sort_unstable();
        left.dedup();
        left
    }

    /// [`Grid::take_shrunk_from`]'s record, left in place: until the data
    /// have moved, a later repair shrinks from it again.
    pub fn shrunk_from(&self) -> Option<&ShrunkFrom> {
        self.universe.shrunk.as_ref()
    }

    /// Whether this process holds a place in the grid: false after a
    /// shrink left it over (it then helps move the data over
    /// [`Grid::survivors`] and parks).
    pub fn is_member(&self) -> bool {
        !self.demoted
    }

    /// Every live process of the job, the grid's and its hot spares, in an
    /// order every one of them agrees on (collective operations here
    /// involve the spares too: after a shrink, the survivors left without
    /// a place hand their data over on it before they park).
    pub fn survivors(&self) -> &Comm {
        &self.universe.comm
    }

    /// The rank in [`Grid::survivors`] of the process that holds grid rank
    /// `rank` (`None` outside the grid).
    pub fn survivor_of(&self, rank: i32) -> Option<i32> {
        self.universe.roles.iter().position(|&r| r == rank as i64).map(|u| u as i32)
    }

    /// A process left without a place by a shrink ([`Grid::is_member`]
    /// false) parks as a hot spare of the smaller grid, as the job's own
    /// spares do in [`Grid::join`]: it returns `true` when a later repair
    /// gives it a grid rank (this grid is then that grid, and this process
    /// a replacement, [`Grid::replacement`], whose data the survivors
    /// rebuild), or `false` when the job ends (it is then to end too).
    /// Collective with the repairs it takes part in.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a process that holds a place; a
    /// repair's errors (an unrecoverable one on every live process alike).
    pub fn park(&mut self) -> Result<bool> {
        if !self.demoted {
            return Err(Error::invalid("grid", "only a process left without a place by a shrink parks"));
        }
        let husk = self.universe.husk();
        let mut universe = std::mem::replace(&mut self.universe, husk);
        // (Whatever the shrink left to move has moved.)
        universe.shrunk = None;
        let repairs = std::mem::take(&mut self.repairs);
        let plan = self.plan;
        match Grid::enter_parked(self.ulfm, self.launch.clone(), universe, self.injector.clone(), repairs)? {
            Joined::Active(grid) => {
                *self = *grid;
                // (The program's plan, which it set once.)
                self.plan = plan;
                Ok(true)
            }
            Joined::Released => Ok(false),
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
pub(super) fn agree_on_pending(all: &Comm, me: i32, pending: Option<&str>) -> Result<()> {
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
    if matches!(b.mode, RepairMode::Spawn | RepairMode::Shrink) && a.mode != RepairMode::Shrink
        || a.mode == RepairMode::NoLoss
    {
        a.mode = b.mode;
    }
    a.grid_before = a.grid_before.or(b.grid_before);
    a.grid_after = b.grid_after.or(a.grid_after);
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
