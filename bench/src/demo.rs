//! `ftla demo`: a grid that loses a rank to SIGKILL mid-run, repairs itself
//! and shows that the repaired grid computes correctly.

use crate::cli::GridDemoArgs;
use crate::session::{agree_on_repair, start};
use blacs_ft::{verify_grid, Grid, Injector, Scope};
use std::time::Instant;

/// A validated `ftla grid-demo`.
pub struct DemoJob {
    pub p: i32,
    pub q: i32,
    pub spares: i32,
    pub kill: Option<i32>,
    pub at_step: u64,
    pub steps: u64,
}

impl DemoJob {
    /// Checks the options (before anything is launched).
    pub fn new(o: &GridDemoArgs) -> Result<DemoJob, String> {
        let (p, q) = (o.grid.p, o.grid.q);
        let kill = (!o.no_kill).then_some(o.kill);
        if let Some(k) = kill {
            if k < 0 || k >= p * q {
                return Err(format!("--kill: rank {k} is not in the {p}x{q} grid"));
            }
            if p * q < 2 {
                return Err("a 1x1 grid has no survivor to repair it: use a larger --grid".into());
            }
        }
        if o.step >= o.steps {
            return Err(format!("--step {} must be below --steps {}", o.step, o.steps));
        }
        Ok(DemoJob { p, q, spares: o.spares as i32, kill, at_step: o.step, steps: o.steps })
    }

    /// Number of MPI processes to launch.
    pub fn nprocs(&self) -> u32 {
        (self.p * self.q + self.spares) as u32
    }
}

/// Runs inside MPI; never returns.
pub fn run(a: DemoJob) -> ! {
    // Epoch 0 only: the replacement reaching the same step must not die.
    let injector = match a.kill {
        Some(k) => Injector::parse(&format!("{k}@demo:{}/0", a.at_step)).unwrap_or_default(),
        None => Injector::none(),
    };
    let mut s = start(a.p, a.q, injector);
    let me = s.grid.rank();
    if me == 0 && s.grid.replacement().is_none() {
        println!(
            "ftla demo: {}x{} grid, {} rank(s) + {} spare(s), {}",
            a.p,
            a.q,
            a.p * a.q,
            a.spares,
            s.rt.mpi_version()
        );
        match a.kill {
            Some(k) => println!("  rank {k} will be SIGKILLed at step {} of {}", a.at_step, a.steps),
            None => println!("  no rank will be killed"),
        }
    }
    let outcome = steps(&mut s.grid, &a);
    let unrecoverable = outcome.as_ref().is_err_and(|e| e.is_unrecoverable());
    let (ok, detail) = match outcome {
        Ok(d) => (true, d),
        Err(e) => {
            println!("rank {me}: demo failed: {e}");
            (false, e.to_string())
        }
    };
    if s.grid.rank() == 0 {
        println!("demo result: {} — {detail}", if ok { "ok" } else { "FAILED" });
    }
    s.finish(crate::session::outcome(ok, unrecoverable), &detail)
}

fn steps(grid: &mut Grid, a: &DemoJob) -> blacs_ft::Result<String> {
    let mut step = 0u64;
    let mut totals = Vec::new();
    // A replacement starts by catching up: it learns the step to redo.
    let mut after_repair: Option<Option<(blacs_ft::RepairReport, f64)>> = grid.replacement().map(|_| None);
    let mut failed_at = Instant::now();
    loop {
        if let Some(local) = after_repair.take() {
            let rec = agree_on_repair(grid, local.as_ref().map(|(r, d)| (r, *d)))?;
            let mut s = [if local.is_some() { step as i64 } else { i64::MAX }];
            grid.min(Scope::All, &mut s)?;
            step = s[0] as u64;
            if let Some(r) = grid.replacement().filter(|r| r.epoch == grid.epoch()) {
                println!(
                    "  rank {} is a new process (pid {}, {} in repair epoch {}) at grid position ({}, {})",
                    r.rank,
                    std::process::id(),
                    if r.mode == blacs_ft::RepairMode::Spare { "promoted spare" } else { "spawned" },
                    r.epoch,
                    grid.myrow(),
                    grid.mycol()
                );
            }
            if grid.rank() == 0 {
                println!("  repaired ({}) : {}", rec.mode.as_str(), crate::session::breakdown(&rec));
                println!("  redoing step {step} on the repaired grid");
            }
        }
        if step >= a.steps {
            break;
        }
        grid.inject("demo", step, "compute");
        match verify_grid(grid, 1024) {
            Ok(c) => {
                if grid.rank() == 0 {
                    println!(
                        "step {step}: {} collectives over rows, columns and the grid verified; global sum {:.6e}",
                        c.operations, c.total
                    );
                }
                totals.push(c.total);
                step += 1;
                failed_at = Instant::now();
            }
            Err(e) if e.is_process_failure() => {
                let detect = failed_at.elapsed().as_secs_f64() * 1e3;
                if grid.rank() == 0 {
                    println!("step {step}: a rank died ({e}); repairing");
                }
                after_repair = Some(Some((grid.recover()?, detect)));
            }
            Err(e) => return Err(e),
        }
    }
    let same = totals.windows(2).all(|w| w[0] == w[1]);
    if !same {
        return Err(blacs_ft::Error::Unrecoverable { reason: format!("global sums differ between steps: {totals:?}") });
    }
    Ok(format!(
        "{} steps verified on a {}x{} grid after {} repair(s); same global sum before and after",
        a.steps,
        a.p,
        a.q,
        grid.repairs().len()
    ))
}
