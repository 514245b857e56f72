//! `ftla repair`: kill ranks, repair the grid, verify it, time every phase.

use crate::cli::Opts;
use crate::json::Json;
use crate::session::{agree_on_repair, breakdown, median, repair_json, start, sync_progress, Session};
use blacs_ft::{verify_grid, Grid, Injector, Scope};
use std::time::Instant;

/// Parsed `ftla repair` options.
pub struct RepairArgs {
    pub p: i32,
    pub q: i32,
    pub spares: i32,
    pub kill: Vec<i32>,
    pub reps: i64,
    pub json: Option<String>,
}

impl RepairArgs {
    /// Validates the options (before anything is launched).
    pub fn from_opts(o: &Opts) -> Result<RepairArgs, crate::cli::UsageError> {
        use crate::cli::UsageError;
        let (p, q) = o.grid((2, 2))?;
        let spares = o.num("spares", 0i32)?;
        let reps = o.num("reps", 1i64)?;
        let default_kill = if p * q > 1 { 1 } else { 0 };
        let kill = o.ranks("kill")?.unwrap_or_else(|| vec![default_kill]);
        if spares < 0 {
            return Err(UsageError("--spares must be ≥ 0".into()));
        }
        if reps < 1 {
            return Err(UsageError("--reps must be ≥ 1".into()));
        }
        if kill.is_empty() || kill.len() >= (p * q) as usize {
            return Err(UsageError(format!("--kill must name 1 to {} ranks (some must survive)", p * q - 1)));
        }
        if let Some(r) = kill.iter().find(|&&r| r < 0 || r >= p * q) {
            return Err(UsageError(format!("--kill: rank {r} is not in the {p}x{q} grid (0..{})", p * q - 1)));
        }
        let mut k = kill.clone();
        k.sort_unstable();
        k.dedup();
        if k.len() != kill.len() {
            return Err(UsageError("--kill names a rank twice".into()));
        }
        Ok(RepairArgs { p, q, spares, kill: k, reps, json: o.get("json").map(String::from) })
    }

    /// Number of MPI processes to launch.
    pub fn nprocs(&self) -> u32 {
        (self.p * self.q + self.spares) as u32
    }
}

/// Runs inside MPI; never returns.
pub fn run(a: RepairArgs) -> ! {
    let mut s = start(a.p, a.q, Injector::none());
    let outcome = reps(&mut s.grid, &a);
    let (ok, detail) = match &outcome {
        Ok(h) => report(&s, &a, h),
        Err(e) => {
            eprintln!("ftla repair: rank {}: {e}", s.grid.rank());
            (false, e.to_string())
        }
    };
    let unrecoverable = outcome.as_ref().is_err_and(|e| e.is_unrecoverable());
    s.finish(crate::session::outcome(ok, unrecoverable), &detail)
}

fn reps(grid: &mut Grid, a: &RepairArgs) -> blacs_ft::Result<Vec<blacs_ft::RepairReport>> {
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
                            "repair {}/{}: killed {:?} → {} ({}); grid {}x{} verified",
                            rep + 1,
                            a.reps,
                            rec.killed,
                            rec.mode.as_str(),
                            breakdown(&rec),
                            a.p,
                            a.q
                        );
                    }
                    history.push(rec);
                    rep += 1;
                }
                Err(e) if e.is_process_failure() => {
                    pending = Some(Some((grid.recover()?, 0.0)));
                    continue;
                }
                Err(e) => return Err(e),
            }
        }
        if rep >= a.reps {
            return Ok(history);
        }
        // Everybody is here and alive; then the victims die at once.
        if let Err(e) = grid.barrier(Scope::All) {
            if e.is_process_failure() {
                pending = Some(Some((grid.recover()?, 0.0)));
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
                pending = Some(Some((grid.recover()?, detect_ms)));
            }
            Err(e) => return Err(e),
        }
    }
}

fn report(s: &Session, a: &RepairArgs, h: &[blacs_ft::RepairReport]) -> (bool, String) {
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
            let j = Json::obj([
                ("command", Json::from("repair")),
                ("grid", Json::Arr(vec![Json::Int(a.p as i64), Json::Int(a.q as i64)])),
                ("ok", ok.into()),
                ("spares", Json::Int(a.spares as i64)),
                ("reps", Json::Int(a.reps)),
                ("mpi", Json::from(s.rt.mpi_version())),
                ("median_total_ms", Json::ms(med)),
                ("repairs", Json::Arr(h.iter().map(repair_json).collect())),
            ]);
            if let Err(e) = std::fs::write(path, j.pretty()) {
                eprintln!("ftla repair: cannot write {path}: {e}");
                return (false, format!("cannot write {path}: {e}"));
            }
        }
    }
    (ok, summary)
}
