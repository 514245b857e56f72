//! Into the grid: building it from a communicator (the placement of
//! the grid ranks, the hot spares that park), and a spawned
//! replacement joining the survivors.

use super::*;

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
        let start_nodes = crate::placement::numbered(&by_rank);
        let universe = Universe { comm, roles, epoch: 0, p, q, losses: Vec::new(), first_spawn: None, shrunk: None };
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
        universe: Universe,
        injector: Injector,
        replacement: Option<Replacement>,
    ) -> Result<Joined> {
        crate::members::note_member(universe.my_role(), universe.epoch);
        Grid::enter_from(ulfm, launch, universe, injector, replacement, Vec::new(), false)
    }

    /// [`Grid::park`]'s way in: a survivor that a shrink left without a
    /// place (the communicators of this epoch are built already) parks,
    /// and enters the grid when a repair promotes it.
    pub(super) fn enter_parked(
        ulfm: UlfmStatus,
        launch: LaunchCommand,
        universe: Universe,
        injector: Injector,
        repairs: Vec<RepairReport>,
    ) -> Result<Joined> {
        Grid::enter_from(ulfm, launch, universe, injector, None, repairs, true)
    }

    fn enter_from(
        ulfm: UlfmStatus,
        launch: LaunchCommand,
        mut universe: Universe,
        mut injector: Injector,
        mut replacement: Option<Replacement>,
        mut repairs: Vec<RepairReport>,
        mut parked: bool,
    ) -> Result<Joined> {
        // Tries to build the communicators since the last repair (the
        // `repair:BUILD:split` kill point counts them from 1).
        let (mut builds, mut built_in) = (0, universe.epoch);
        loop {
            if std::mem::take(&mut parked) {
                match park(&mut universe, &launch, &injector)? {
                    Parked::Released => return Ok(Joined::Released),
                    Parked::Repaired(r) => repairs.push(r),
                }
                continue;
            }
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
                        agreements: std::cell::Cell::new(0),
                        plan: RepairPlan::default(),
                        demoted: false,
                        holds_data: true,
                        route: None,
                    };
                    return Ok(Joined::Active(Box::new(grid)));
                }
                Ok(None) => match park(&mut universe, &launch, &injector)? {
                    Parked::Released => return Ok(Joined::Released),
                    Parked::Repaired(r) => repairs.push(r),
                },
                Err(e) if e.is_process_failure() && ulfm == UlfmStatus::Available => {
                    repairs.push(universe.repair(&launch, &injector, None, None, true)?);
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Splits the universe into the grid communicator (key = grid rank) and, for
/// grid ranks, the row and column communicators, and counts the grid ranks
/// on this process's node (for [`crate::wait`]). `Ok(None)` for a spare.
/// Success is agreed over the universe. After a repair, the kill point
/// `repair:BUILD:split` (BUILD counts the tries since the repair, from 1)
/// fires between the splits and that agreement.
pub(super) fn build_comms(u: &Universe, injector: &Injector, build: u64) -> Result<Option<(Comm, Comm, Comm)>> {
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
                return u.repair(launch, injector, None, None, true).map(Parked::Repaired);
            }
            Err(e) => return Err(e),
        }
    }
}
