//! Start-up shared by the MPI subcommands: join the grid (a spare parks and
//! leaves when released), and the bookkeeping after a repair that lets a
//! replacement catch up with the survivors.

use blacs_ft::launch::Outcome;
use blacs_ft::{Grid, GridOptions, GridShape, Injector, Joined, RepairMode, RepairReport, Runtime, Scope};
use serde::{Deserialize, Serialize};

/// A process that holds a grid rank.
pub struct Session {
    pub rt: Runtime,
    pub grid: Box<Grid>,
}

/// Joins a `p`×`q` grid; spares park inside and end the process when
/// released. Start-up errors end the process with a message.
pub fn start(p: i32, q: i32, injector: Injector) -> Session {
    start_preparing(p, q, injector, || ()).0
}

/// [`start`], where a process that will park as a hot spare first runs
/// `prepare` (allocating what it will need if it replaces a lost rank) and
/// gets its result back when it becomes active.
pub fn start_preparing<T>(p: i32, q: i32, injector: Injector, prepare: impl FnOnce() -> T) -> (Session, Option<T>) {
    let mut rt = match Runtime::init() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ftla: MPI start-up failed: {e}");
            std::process::exit(1);
        }
    };
    let mut prepared = None;
    let mut spare = false;
    let joined = rt.world_dup().and_then(|comm| {
        if Grid::parks_as_spare(&rt, &comm, p, q) {
            spare = true;
            prepared = Some(prepare());
        }
        Grid::join(&mut rt, comm, p, q, GridOptions { injector, kills_from_env: false, placement: None })
    });
    match joined {
        Ok(Joined::Active(grid)) => (Session { rt, grid }, prepared),
        Ok(Joined::Released) => rt.finish(0),
        // A repair the survivors refused as unrecoverable: they say why and
        // report the job's outcome; a spare that was never used leaves
        // quietly (an error exit of its own could end the job before the
        // survivors' lines are out).
        Err(e) if spare && e.is_unrecoverable() => rt.finish(0),
        Err(e) => {
            eprintln!("ftla: cannot build the {p}x{q} grid: {e}");
            rt.finish(1)
        }
    }
}

impl Session {
    /// Ends the job: releases spares, records the outcome (grid rank 0: the
    /// launcher's exit code), and finishes MPI within bounded time.
    pub fn finish(self, outcome: Outcome, detail: &str) -> ! {
        match outcome {
            // After a checkpoint, or a failure the grid was not repaired
            // from, rank 0 may be the lost process: every survivor reports
            // it, the same way.
            Outcome::Checkpointed { .. } => blacs_ft::launch::write_outcome(outcome, detail),
            // And no survivor leaves before all of them said why (the first
            // exit with this code ends the job, output in flight included).
            Outcome::Unrecoverable => {
                blacs_ft::launch::write_outcome(outcome, detail);
                self.grid.meet_before_exit(outcome.exit_code());
            }
            _ if self.grid.rank() == 0 => blacs_ft::launch::write_outcome(outcome, detail),
            _ => {}
        }
        self.grid.close();
        self.rt.finish(outcome.exit_code())
    }
}

/// The order of the square DGEMM that measures the local rate of a run
/// of `run_flops` in all on `nprocs` processes: 1024, or the largest of
/// 768, 512, 384, 256 and 128 whose four products (a warm-up and three
/// timed) do no more than the run's share of a process, so that a small
/// run is not timed by a measurement many times its own length (at 1024
/// the measurement is 8.6 Gflop per process: seconds on an oversubscribed
/// laptop, against milliseconds for N = 256).
pub fn dgemm_probe_order(run_flops: f64, nprocs: usize) -> usize {
    let share = run_flops / nprocs.max(1) as f64;
    [1024usize, 768, 512, 384, 256].into_iter().find(|&n| 8.0 * (n as f64).powi(3) <= share).unwrap_or(128)
}

/// Collective: the local DGEMM rate, measured by every rank at once (so it
/// sees the same contention as the factorization), averaged over the ranks,
/// at the order [`dgemm_probe_order`] gives for a run of `run_flops`;
/// returns the rate and that order.
pub fn local_dgemm_gflops(grid: &Grid, run_flops: f64) -> blacs_ft::Result<(f64, usize)> {
    let order = dgemm_probe_order(run_flops, grid.size() as usize);
    let mut rate = [scalapack_ft::blas::measure_dgemm_gflops(order)];
    grid.sum(Scope::All, &mut rate, None)?;
    Ok((rate[0] / grid.size() as f64, order))
}

/// `detect 25.1, revoke 0.0, ... = 1119.0 ms`.
pub fn breakdown(r: &RepairReport) -> String {
    let spawn = if r.mode == RepairMode::Spare { "hand-over" } else { "spawn" };
    format!(
        "detect {:.1}, revoke {:.1}, shrink {:.1}, {spawn} {:.1}, merge {:.1}, split {:.1} = {:.1} ms",
        r.detect_ms, r.revoke_ms, r.shrink_ms, r.spawn_ms, r.merge_ms, r.split_ms, r.total_ms
    )
}

/// One rank's view of a repair as it travels between the ranks, in the
/// one codec ([`recovery::codec`]). (`RepairReport`'s own serde form is the
/// JSON's, which leaves the epoch, the attempts and the lost spares out.)
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct SeenRepair {
    epoch: u32,
    mode: RepairMode,
    killed: Vec<i32>,
    lost_spares: u64,
    attempts: u32,
    /// detect, revoke, shrink, spawn, merge, split, total (ms).
    times_ms: [f64; 7],
    /// A shrink's grids before and after.
    grids: Option<(GridShape, GridShape)>,
}

impl From<&RepairReport> for SeenRepair {
    fn from(r: &RepairReport) -> SeenRepair {
        SeenRepair {
            epoch: r.epoch,
            mode: r.mode,
            killed: r.killed.clone(),
            lost_spares: r.lost_spares as u64,
            attempts: r.attempts,
            times_ms: [r.detect_ms, r.revoke_ms, r.shrink_ms, r.spawn_ms, r.merge_ms, r.split_ms, r.total_ms],
            grids: r.grid_before.zip(r.grid_after),
        }
    }
}

impl From<SeenRepair> for RepairReport {
    fn from(s: SeenRepair) -> RepairReport {
        let [detect_ms, revoke_ms, shrink_ms, spawn_ms, merge_ms, split_ms, total_ms] = s.times_ms;
        RepairReport {
            epoch: s.epoch,
            mode: s.mode,
            killed: s.killed,
            lost_spares: s.lost_spares as usize,
            attempts: s.attempts,
            detect_ms,
            revoke_ms,
            shrink_ms,
            spawn_ms,
            merge_ms,
            split_ms,
            total_ms,
            grid_before: s.grids.map(|g| g.0),
            grid_after: s.grids.map(|g| g.1),
        }
    }
}

/// Which of two ranks' modes the agreed report keeps: a job resumed over
/// a relaunch over a shrink over a spawn over a spare over none (a repair
/// that spawned any replacement is a spawn).
fn precedence(mode: RepairMode) -> u8 {
    match mode {
        RepairMode::NoLoss => 0,
        RepairMode::Spare => 1,
        RepairMode::Spawn => 2,
        RepairMode::Shrink => 3,
        RepairMode::Cof => 4,
        RepairMode::Resume => 5,
    }
}

/// The survivors' views as one: every time the largest (the critical
/// path), the mode by [`precedence`], every killed rank once.
fn merged(views: impl IntoIterator<Item = SeenRepair>) -> SeenRepair {
    let nothing = SeenRepair {
        epoch: 0,
        mode: RepairMode::NoLoss,
        killed: Vec::new(),
        lost_spares: 0,
        attempts: 0,
        times_ms: [0.0; 7],
        grids: None,
    };
    views.into_iter().fold(nothing, |mut all, v| {
        all.epoch = all.epoch.max(v.epoch);
        all.grids = all.grids.or(v.grids);
        if precedence(v.mode) > precedence(all.mode) {
            all.mode = v.mode;
        }
        all.killed.extend(v.killed);
        all.killed.sort_unstable();
        all.killed.dedup();
        all.lost_spares = all.lost_spares.max(v.lost_spares);
        all.attempts = all.attempts.max(v.attempts);
        for (a, t) in all.times_ms.iter_mut().zip(v.times_ms) {
            *a = a.max(t);
        }
        all
    })
}

/// Collective: every rank's `bytes`, in grid rank order.
fn all_bytes(grid: &Grid, bytes: &[u8]) -> blacs_ft::Result<Vec<Vec<u8>>> {
    let lens = grid.allgather(Scope::All, &[bytes.len() as i64])?;
    let width = lens.iter().copied().max().unwrap_or(0).max(0) as usize;
    let mut padded = bytes.to_vec();
    padded.resize(width, 0);
    let all = grid.allgather(Scope::All, &padded)?;
    Ok(lens.iter().enumerate().map(|(r, &len)| all[r * width..r * width + len.max(0) as usize].to_vec()).collect())
}

/// A value that came over the wire, or the error that says it did not.
fn decoded<T: serde::de::DeserializeOwned>(bytes: &[u8], what: &str) -> blacs_ft::Result<T> {
    recovery::codec::decode(bytes).ok_or_else(|| blacs_ft::Error::Unrecoverable {
        reason: format!("{what} received from another rank does not decode"),
    })
}

/// Collective, run by survivors right after [`Grid::recover`] (with their
/// report and the detection time they measured) and by a replacement as its
/// first act (with `None`). Every rank returns the same report: the
/// largest of the survivors' times (the critical path), their repair mode
/// and the killed ranks; `total_ms` includes the detection.
pub fn agree_on_repair(grid: &Grid, local: Option<(&RepairReport, f64)>) -> blacs_ft::Result<RepairReport> {
    let mine = local.map(|(r, detect)| {
        SeenRepair::from(&RepairReport { detect_ms: detect, total_ms: detect + r.total_ms, ..r.clone() })
    });
    let views = all_bytes(grid, &recovery::codec::encode(&mine))?
        .iter()
        .map(|b| decoded::<Option<SeenRepair>>(b, "a repair report"))
        .collect::<blacs_ft::Result<Vec<_>>>()?;
    Ok(merged(views.into_iter().flatten()).into())
}

/// Collective: everybody adopts the largest step counter and the longest
/// history of reports (a replacement starts with 0 and none).
pub fn sync_progress(grid: &Grid, step: &mut i64, history: &mut Vec<RepairReport>) -> blacs_ft::Result<()> {
    let mut s = [*step, history.len() as i64];
    grid.max(Scope::All, &mut s)?;
    *step = s[0];
    let want = s[1] as usize;
    // The lowest rank that has the full history sends it.
    let Some(holder) = grid.lowest_rank_where(history.len() == want)? else {
        return Ok(());
    };
    let mine = if grid.rank() == holder {
        recovery::codec::encode(&history.iter().map(SeenRepair::from).collect::<Vec<_>>())
    } else {
        Vec::new()
    };
    let bytes = grid.broadcast_vec(mine, holder)?;
    *history = decoded::<Vec<SeenRepair>>(&bytes, "the history of repairs")?.into_iter().map(Into::into).collect();
    Ok(())
}

/// Median of `xs` (0 for none).
pub fn median(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// The outcome of a run: `ok` when its checks passed; a failure reported
/// as unrecoverable is told apart from other failures.
pub fn outcome(ok: bool, unrecoverable: bool) -> Outcome {
    match (ok, unrecoverable) {
        (_, true) => Outcome::Unrecoverable,
        (true, false) => Outcome::Ok,
        (false, false) => Outcome::Failed,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(super::median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(super::median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(super::median(&[]), 0.0);
    }

    #[test]
    fn repair_views_travel_typed_and_merge_by_maximum() {
        use super::{merged, SeenRepair};
        use blacs_ft::{RepairMode, RepairReport};
        let spare = SeenRepair {
            epoch: 2,
            mode: RepairMode::Spare,
            killed: vec![3],
            lost_spares: 0,
            attempts: 1,
            times_ms: [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 21.0],
            grids: None,
        };
        let spawn = SeenRepair { mode: RepairMode::Spawn, killed: vec![1, 3], times_ms: [9.0; 7], ..spare.clone() };
        let shapes = (blacs_ft::GridShape { p: 2, q: 3 }, blacs_ft::GridShape { p: 2, q: 2 });
        let shrink = SeenRepair { mode: RepairMode::Shrink, grids: Some(shapes), ..spare.clone() };
        let back: Option<SeenRepair> =
            recovery::codec::decode(&recovery::codec::encode(&Some(shrink.clone()))).unwrap();
        assert_eq!(back.as_ref(), Some(&shrink));
        let all = merged([spare.clone(), shrink.clone()]);
        assert_eq!((all.mode, all.grids), (RepairMode::Shrink, Some(shapes)));
        let report = RepairReport::from(shrink.clone());
        assert_eq!((report.grid_before, report.grid_after), (Some(shapes.0), Some(shapes.1)));
        assert_eq!(SeenRepair::from(&report), shrink);
        let back: Option<SeenRepair> = recovery::codec::decode(&recovery::codec::encode(&Some(spare.clone()))).unwrap();
        assert_eq!(back.as_ref(), Some(&spare));
        let all = merged([spare.clone(), spawn]);
        assert_eq!(all.mode, RepairMode::Spawn);
        assert_eq!(all.killed, [1, 3]);
        assert_eq!(all.times_ms, [9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 21.0]);
        let report = RepairReport::from(merged([]));
        assert_eq!((report.mode, report.killed.len(), report.total_ms), (RepairMode::NoLoss, 0, 0.0));
        assert_eq!(SeenRepair::from(&RepairReport::from(spare.clone())), spare);
    }

    #[test]
    fn dgemm_probe_order_follows_the_runs_flops() {
        use super::dgemm_probe_order;
        // A benchmark's run: 1024 (QR N = 4096 on 1x2, 46 Gflop a process).
        assert_eq!(dgemm_probe_order(4.0 / 3.0 * 4096f64.powi(3), 2), 1024);
        // Exactly the measurement's flops at 768 (3.6 Gflop a process).
        assert_eq!(dgemm_probe_order(4.0 * 8.0 * 768f64.powi(3), 4), 768);
        assert_eq!(dgemm_probe_order(4.0 * 8.0 * 768f64.powi(3) - 1.0, 4), 512);
        // A test's run (N = 256 on 2x2), and nothing at all.
        assert_eq!(dgemm_probe_order(4.0 / 3.0 * 256f64.powi(3), 4), 128);
        assert_eq!(dgemm_probe_order(0.0, 0), 128);
    }
}
