//! `ftla repair`: kill ranks, repair the grid, verify it, time every phase.

use crate::cli::RepairArgs;
use crate::problem::write_json;
use crate::session::{agree_on_repair, breakdown, median, start, sync_progress, Session};
use blacs_ft::{verify_grid, Grid, Injector, RepairPlan, RepairReport, Scope};
use ftla_bench::report::{round_ms, RepairRunReport};
use std::path::PathBuf;
use std::time::Instant;

/// A validated `ftla repair`.
pub struct RepairJob {
    pub p: i32,
    pub q: i32,
    pub spares: i32,
    pub kill: Vec<i32>,
    pub reps: i64,
    /// Shrink when no spare is left (`--shrink`).
    pub shrink: bool,
    pub json: Option<PathBuf>,
}

impl RepairJob {
    /// Checks the options (before anything is launched).
    pub fn new(o: &RepairArgs) -> Result<RepairJob, String> {
        let (p, q) = (o.grid.p, o.grid.q);
        let default_kill = if p * q > 1 { 1 } else { 0 };
        let kill = o.kill.clone().map_or_else(|| vec![default_kill], |k| k.0);
        if kill.is_empty() || kill.len() >= (p * q) as usize {
            return Err(format!("--kill must name 1 to {} ranks (some must survive)", p * q - 1));
        }
        if let Some(r) = kill.iter().find(|&&r| r < 0 || r >= p * q) {
            return Err(format!("--kill: rank {r} is not in the {p}x{q} grid (0..{})", p * q - 1));
        }
        let mut k = kill.clone();
        k.sort_unstable();
        k.dedup();
        if k.len() != kill.len() {
            return Err("--kill names a rank twice".into());
        }
        Ok(RepairJob { p, q, spares: o.spares as i32, kill: k, reps: o.reps, shrink: o.shrink, json: o.json.clone() })
    }

    /// Number of MPI processes to launch.
    pub fn nprocs(&self) -> u32 {
        (self.p * self.q + self.spares) as u32
    }
}

/// Runs inside MPI; never returns.
pub fn run(a: RepairJob) -> ! {
    let mut s = start(a.p, a.q, Injector::none());
    if a.shrink {
        // A bare grid: one process column is enough to go on.
        s.grid.set_repair_plan(RepairPlan { spawn: false, shrink_min_cols: Some(1) });
    }
    let outcome = reps(&mut s.grid, &a);
    let (ok, detail) = match &outcome {
        // A survivor a shrink left without a place, never needed again:
        // the job is over for it, as for a spare.
        Ok(None) => s.rt.finish(0),
        Ok(Some(h)) => report(&s, &a, h),
        Err(e) => {
            eprintln!("ftla repair: rank {}: {e}", s.grid.rank());
            (false, e.to_string())
        }
    };
    let unrecoverable = outcome.as_ref().is_err_and(|e| e.is_unrecoverable());
    s.finish(crate::session::outcome(ok, unrecoverable), &detail)
}

/// Repairs the grid after a failure: the report and the detection time,
/// or, for a process that a shrink left without a place, `None` once it
/// parked (it goes on as a replacement, `Some(None)`, or the job ended
/// for it, `None`).
#[allow(clippy::type_complexity)]
fn recovered(grid: &mut Grid, detect_ms: f64) -> blacs_ft::Result<Option<Option<(RepairReport, f64)>>> {
    let report = grid.recover()?;
    // (`ftla repair` holds no data to move onto a shrunk grid.)
    let _ = grid.take_shrunk_from();
    if grid.is_member() {
        return Ok(Some(Some((report, detect_ms))));
    }
    Ok(grid.park()?.then_some(None))
}

/// The repetitions; `None` on a process that a shrink left without a place
/// and that was not needed again.
fn reps(grid: &mut Grid, a: &RepairJob) -> blacs_ft::Result<Option<Vec<RepairReport>>> {
    let mut rep = 0i64;
    let mut history: Vec<blacs_ft::RepairReport> = Vec::new();
    // A replacement catches up with the survivors first.
    let mut pending: Option<Option<(blacs_ft::RepairReport, f64)>> = grid.replacement().map(|_| None);
    loop {
        if let Some(local) = pending.take() {
            // After a repair: agree on the record, catch up, verify.
            let rec = agree_on_repair(grid, local.as_ref().map(|(r, d)| (r, *d)))
                .and_then(|rec| sync_progress(grid, &mut rep, &mut history).map(|()| rec))
                .and_then(|rec| verify_grid(grid, 256).map(|_| rec));
            match rec {
                Ok(rec) => {
                    if grid.rank() == 0 {
                        println!(
                            "repair {}/{}: killed {:?} → {} ({}); grid {} verified",
                            rep + 1,
                            a.reps,
                            rec.killed,
                            mode_words(&rec),
                            breakdown(&rec),
                            grid.shape()
                        );
                    }
                    history.push(rec);
                    rep += 1;
                }
                Err(e) if e.is_process_failure() => {
                    let Some(next) = recovered(grid, 0.0)? else { return Ok(None) };
                    pending = Some(next);
                    continue;
                }
                Err(e) => return Err(e),
            }
        }
        if rep >= a.reps {
            return Ok(Some(history));
        }
        // (After shrinks, the ranks named that the grid still has.)
        let victims = a.kill.iter().filter(|&&r| r < grid.size()).count();
        if victims == 0 || victims == grid.size() as usize {
            return Err(blacs_ft::Error::invalid(
                "--kill",
                format!(
                    "repetition {}: the {} grid left has {} of the ranks {:?}: some must die and some survive",
                    rep + 1,
                    grid.shape(),
                    victims,
                    a.kill
                ),
            ));
        }
        // Everybody is here and alive; then the victims die at once.
        if let Err(e) = grid.barrier(Scope::All) {
            if e.is_process_failure() {
                let Some(next) = recovered(grid, 0.0)? else { return Ok(None) };
                pending = Some(next);
                continue;
            }
            return Err(e);
        }
        if a.kill.contains(&grid.rank()) {
            blacs_ft::inject::kill_self(&format!("rank {} (ftla repair, repetition {})", grid.rank(), rep + 1));
        }
        let t0 = Instant::now();
        match grid.barrier(Scope::All) {
            Ok(()) => {
                return Err(blacs_ft::Error::Unrecoverable {
                    reason: "the killed ranks were not detected as failed".into(),
                })
            }
            Err(e) if e.is_process_failure() => {
                let detect_ms = t0.elapsed().as_secs_f64() * 1e3;
                let Some(next) = recovered(grid, detect_ms)? else { return Ok(None) };
                pending = Some(next);
            }
            Err(e) => return Err(e),
        }
    }
}

/// `spare`, or `shrink 2x3 → 2x2`.
fn mode_words(r: &RepairReport) -> String {
    match (r.grid_before, r.grid_after) {
        (Some(from), Some(to)) => format!("{} {from} → {to}", r.mode.as_str()),
        _ => r.mode.as_str().to_string(),
    }
}

fn report(s: &Session, a: &RepairJob, h: &[RepairReport]) -> (bool, String) {
    let totals: Vec<f64> = h.iter().map(|r| r.total_ms).collect();
    let med = median(&totals);
    let ok = h.len() as i64 == a.reps;
    let summary = format!(
        "{} repair(s) of a {}x{} grid ({} spare(s)); median kill→repaired {:.1} ms",
        h.len(),
        a.p,
        a.q,
        a.spares,
        med
    );
    if s.grid.rank() == 0 {
        println!("{summary}");
        if let Some(path) = &a.json {
            let r = RepairRunReport {
                command: "repair".into(),
                grid: [a.p, a.q],
                ok,
                spares: a.spares,
                reps: a.reps,
                mpi: s.rt.mpi_version().to_string(),
                median_total_ms: round_ms(med),
                repairs: h.to_vec(),
                final_grid: (s.grid.shape() != blacs_ft::GridShape { p: a.p, q: a.q }).then(|| s.grid.shape()),
            };
            if let Err(e) = write_json(path, &r) {
                eprintln!("ftla repair: {e}");
                return (false, e);
            }
        }
    }
    (ok, summary)
}
