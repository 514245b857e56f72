//! The demos. `ftla demo`: the fault-tolerant QR loses a rank halfway
//! through, first replaced by a hot spare, then by a spawned process, each
//! scenario its own job; then it loses its whole job (as a lost node does)
//! and a new job resumes it from its periodic checkpoint on a smaller grid (the factorization itself is `ftla qr --ft`'s run,
//! [`crate::problem::FactorJob::demo`]). `ftla grid-demo`: a grid that
//! loses a rank to SIGKILL mid-run, repairs itself and shows that the
//! repaired grid computes correctly.

use crate::cli::{usage_error, DemoArgs, DemoScenario, GridDemoArgs, GridShape};
use crate::problem::FactorJob;
use crate::session::{agree_on_repair, start};
use blacs_ft::{verify_grid, Grid, Injector, Scope};
use ftla_bench::report::FactorReport;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `ftla demo` with one scenario, ready to be one job: the spawn scenario
/// parks no spare, so the lost rank must be spawned.
pub fn one_scenario(mut a: DemoArgs) -> DemoArgs {
    if a.scenario == DemoScenario::Spawn {
        a.spares = 0;
    }
    a
}

/// `ftla demo` (`--scenario all`), outside MPI: the spare scenario, then
/// the spawn scenario, each a job of its own (`ftla demo --scenario …`),
/// one line on what the spawn costs, then the node scenario (two jobs).
/// Returns the exit code: the first scenario's that was not 0.
pub fn run_all(a: DemoArgs) -> i32 {
    // Bad options are refused once, before any job starts.
    if let Err(e) = FactorJob::demo(&a) {
        usage_error("demo", e);
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("ftla demo: cannot find this program to run the scenarios: {e}");
            return 1;
        }
    };
    // The scenarios' reports: the summary line reads them.
    let scratch = |name: &str| std::env::temp_dir().join(format!("ftla-demo-{}-{name}.json", std::process::id()));
    let spare_json = a.json.clone().unwrap_or_else(|| scratch("spare"));
    let spawn_json = a.json.as_ref().map_or_else(|| scratch("spawn"), |f| f.with_extension("spawn.json"));
    let node_json = a.json.as_ref().map_or_else(|| scratch("node"), |f| f.with_extension("node.json"));
    println!("ftla demo, scenario 1 of 3: a hot spare ({} parked at start-up) replaces the lost rank", a.spares);
    let spare = run_scenario(&exe, &a, DemoScenario::Spare, &spare_json);
    println!();
    println!("ftla demo, scenario 2 of 3: no spare; MPI_Comm_spawn starts a new process in the lost rank's place");
    let spawn = run_scenario(&exe, &a, DemoScenario::Spawn, &spawn_json);
    if let (Some(s), Some(p)) = (read_report(&spare_json), read_report(&spawn_json)) {
        if let Some(line) = spawn_cost(&s, &p) {
            println!("{line}");
        }
    }
    println!();
    let node = node_scenario(&exe, &a, &node_json, "ftla demo, scenario 3 of 3");
    if a.json.is_none() {
        for f in [&spare_json, &spawn_json, &node_json] {
            let _ = std::fs::remove_file(f);
        }
    }
    [spare, spawn, node].into_iter().find(|&c| c != 0).unwrap_or(0)
}

/// `ftla demo --scenario node`, outside MPI (two jobs); returns the exit
/// code.
pub fn run_node(a: &DemoArgs) -> i32 {
    if let Err(e) = FactorJob::demo(a) {
        usage_error("demo", e);
    }
    let Ok(exe) = std::env::current_exe() else {
        eprintln!("ftla demo: cannot find this program to run the scenario");
        return 1;
    };
    let scratch = std::env::temp_dir().join(format!("ftla-demo-{}-node.json", std::process::id()));
    let json = a.json.clone().unwrap_or(scratch);
    let code = node_scenario(&exe, a, &json, "ftla demo");
    if a.json.is_none() {
        let _ = std::fs::remove_file(&json);
    }
    code
}

/// The grid the node scenario resumes on: one process row fewer, else one
/// process column fewer (Q ≥ 2), else the same.
fn smaller_grid(g: GridShape) -> GridShape {
    match (g.p, g.q) {
        (p, q) if p > 1 => GridShape { p: p - 1, q },
        (p, q) if q > 2 => GridShape { p, q: q - 1 },
        _ => g,
    }
}

/// The node scenario: `ftla qr --ft` saves periodic checkpoints (the first
/// at the first commit point, then at Young and Daly's interval for a
/// job-ending failure every 4 s) and loses its whole job halfway through
/// (`job@qr:STEP:update`: its runtime daemon SIGKILLed, as a lost node
/// does; exit code 78); a second job resumes it from the newest checkpoint
/// on a smaller grid. Returns the exit code: the resumed job's.
fn node_scenario(exe: &Path, a: &DemoArgs, json: &Path, title: &str) -> i32 {
    let smaller = smaller_grid(a.grid);
    let step = a.n.div_ceil(a.nb) / 2;
    let dir = std::env::temp_dir().join(format!("ftla-demo-{}-checkpoints", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "{title}: a lost node ends the whole job (no process survives to repair); a new job resumes it from its \
         periodic checkpoint, on a {smaller} grid"
    );
    let job = |grid: GridShape, more: &[&str]| {
        use std::os::unix::process::ExitStatusExt;
        let mut cmd = std::process::Command::new(exe);
        cmd.env_remove(blacs_ft::launch::JOB_TAG_VAR).env_remove("FTLA_KILL");
        cmd.args(["qr", "--ft", "--grid", &grid.to_string(), "--n", &a.n.to_string(), "--nb", &a.nb.to_string()]);
        cmd.args(more);
        if let Some(t) = a.launch.timeout {
            cmd.args(["--timeout", &t.to_string()]);
        }
        match cmd.status() {
            Ok(s) => s.code().or_else(|| s.signal().map(|n| 128 + n)).unwrap_or(1),
            Err(e) => {
                eprintln!("ftla demo: cannot start the node scenario: {e}");
                1
            }
        }
    };
    let d = dir.display().to_string();
    let kill = format!("job@qr:{step}:update");
    let lost =
        job(a.grid, &["--checkpoint-every", "auto", "--mtbf", "0.0011", "--checkpoint-dir", &d, "--kill", &kill]);
    let code = if lost == blacs_ft::launch::EXIT_JOB_LOST {
        println!("the job was lost at step {step}; resuming it on a {smaller} grid from its newest checkpoint");
        let json = json.display().to_string();
        job(smaller, &["--resume", &d, "--check", "--verify", "--json", &json])
    } else {
        eprintln!("ftla demo: the job to be lost ended with exit code {lost}, not {}", blacs_ft::launch::EXIT_JOB_LOST);
        if lost == 0 {
            1
        } else {
            lost
        }
    };
    if let Some(r) = read_report(json).filter(|_| code == 0) {
        if let Some(at) = r.resumed_at_step {
            println!(
                "the work of steps 0 to {at} was kept (the newest checkpoint's), steps {at} to {step} were done again"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    code
}

/// Runs `ftla demo --scenario S` with the other options as given; returns
/// its exit code (128 + N when stopped by signal N).
fn run_scenario(exe: &Path, a: &DemoArgs, scenario: DemoScenario, json: &PathBuf) -> i32 {
    use clap::ValueEnum;
    use std::os::unix::process::ExitStatusExt;
    let name = scenario.to_possible_value().map_or_else(String::new, |v| v.get_name().to_string());
    let mut cmd = std::process::Command::new(exe);
    // Each scenario's launcher tags its own job: one that inherited this
    // process's tag would take this process for a straggler of its job
    // and end it.
    cmd.env_remove(blacs_ft::launch::JOB_TAG_VAR);
    cmd.arg("demo").args(["--scenario", &name]);
    cmd.args(["--grid", &a.grid.to_string(), "--n", &a.n.to_string(), "--nb", &a.nb.to_string()]);
    cmd.args(["--kill", &a.kill.to_string(), "--spares", &a.spares.to_string()]).arg("--json").arg(json);
    if let Some(t) = a.launch.timeout {
        cmd.args(["--timeout", &t.to_string()]);
    }
    if a.launch.no_ft {
        cmd.arg("--no-ft");
    }
    match cmd.status() {
        Ok(s) => s.code().or_else(|| s.signal().map(|n| 128 + n)).unwrap_or(1),
        Err(e) => {
            eprintln!("ftla demo: cannot start the {name} scenario: {e}");
            1
        }
    }
}

fn read_report(path: &Path) -> Option<FactorReport> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// One line: what the spawn's repair cost against the spare's, and why.
fn spawn_cost(spare: &FactorReport, spawn: &FactorReport) -> Option<String> {
    let repair = |r: &FactorReport| r.recoveries.as_ref().map(|v| v.iter().map(|e| e.repair_ms).sum::<f64>());
    let total = spawn.recoveries.as_ref()?.iter().map(|e| e.total_ms).sum::<f64>();
    let failure_free = spawn.compare.as_ref()?.ft_time_s;
    Some(format!(
        "the spawn's cost: its repair took {:.0} ms of the {total:.0} ms recovery, against {:.0} ms for the spare: \
         MPI_Comm_spawn starts a new MPI process and connects it to the survivors, a fixed cost that a {failure_free:.2} s \
         factorization cannot hide (reserve hot spares, --spares, where recovery time matters)",
        repair(spawn)?,
        repair(spare)?,
    ))
}

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
