//! Start-up shared by the MPI subcommands: join the grid (a spare parks and
//! leaves when released), and the bookkeeping after a repair that lets a
//! replacement catch up with the survivors.

use blacs_ft::launch::Outcome;
use blacs_ft::{Grid, GridOptions, Injector, Joined, RepairMode, RepairReport, Runtime, Scope};

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

/// A report as a row of numbers for the grid's reductions and broadcasts:
/// 7 times, mode, epoch, attempts, lost spares, then one flag per grid rank
/// (killed or not). Every field combines by maximum.
const HEAD: usize = 11;

fn encode(r: &RepairReport, row: &mut [f64]) {
    row[..HEAD].copy_from_slice(&[
        r.detect_ms,
        r.revoke_ms,
        r.shrink_ms,
        r.spawn_ms,
        r.merge_ms,
        r.split_ms,
        r.total_ms,
        match r.mode {
            RepairMode::Spawn => 2.0,
            RepairMode::Spare => 1.0,
            RepairMode::Cof => 3.0,
            RepairMode::Resume => 4.0,
            RepairMode::NoLoss => 0.0,
        },
        r.epoch as f64,
        r.attempts as f64,
        r.lost_spares as f64,
    ]);
    for &k in &r.killed {
        if let Some(f) = row.get_mut(HEAD + k as usize) {
            *f = 1.0;
        }
    }
}

fn decode(row: &[f64]) -> RepairReport {
    RepairReport {
        detect_ms: row[0],
        revoke_ms: row[1],
        shrink_ms: row[2],
        spawn_ms: row[3],
        merge_ms: row[4],
        split_ms: row[5],
        total_ms: row[6],
        mode: match row[7] as i32 {
            4 => RepairMode::Resume,
            3 => RepairMode::Cof,
            2 => RepairMode::Spawn,
            1 => RepairMode::Spare,
            _ => RepairMode::NoLoss,
        },
        epoch: row[8] as u32,
        attempts: row[9] as u32,
        lost_spares: row[10] as usize,
        killed: (HEAD..row.len()).filter(|&i| row[i] > 0.5).map(|i| (i - HEAD) as i32).collect(),
    }
}

/// Collective, run by survivors right after [`Grid::recover`] (with their
/// report and the detection time they measured) and by a replacement as its
/// first act (with `None`). Every rank returns the same report: the
/// element-wise maximum of the survivors' times (the critical path), their
/// repair mode and the killed ranks; `total_ms` includes the detection.
pub fn agree_on_repair(grid: &Grid, local: Option<(&RepairReport, f64)>) -> blacs_ft::Result<RepairReport> {
    let mut v = vec![0.0f64; HEAD + grid.size() as usize];
    if let Some((r, detect)) = local {
        let with_detect = RepairReport { detect_ms: detect, total_ms: detect + r.total_ms, ..r.clone() };
        encode(&with_detect, &mut v);
    }
    grid.max(Scope::All, &mut v)?;
    Ok(decode(&v))
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
    let w = HEAD + grid.size() as usize;
    let mut flat = vec![0.0f64; want * w];
    if grid.rank() == holder {
        for (r, row) in history.iter().zip(flat.chunks_exact_mut(w)) {
            encode(r, row);
        }
    }
    grid.broadcast(Scope::All, &mut flat, holder)?;
    *history = flat.chunks_exact(w).map(decode).collect();
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
