//! What the tests of the fault-tolerant factorizations (`ftla qr --ft`,
//! `ftla lu --ft`) share: one job at a time under a hard timeout, and the
//! checks of each kind of kill scenario, the same for both operations.

// Each test binary uses its part.
#![allow(dead_code)]

pub mod c_programs;

use ftla_bench::report::FactorReport;
use harness::Captured;
use recovery::protocol::Phase;
use std::process::Command;
use std::time::{Duration, Instant};

/// The expected recovery of a kill scenario.
pub struct Rebuilt<'a> {
    /// The rebuilt grid ranks, `"1, 2"`.
    pub ranks: &'a str,
    /// Committed steps at the recovery.
    pub step: u64,
    /// The victim's phase: the survivors see the failure there or later.
    pub phase: &'a str,
    /// `spawn` or `spare`.
    pub mode: &'a str,
}

/// `ftla OP --ft` with fixed arguments (the shape, the checks).
pub struct Ft {
    op: &'static str,
    fixed: Vec<String>,
}

impl Ft {
    /// `ftla op --ft` with `fixed` before every run's own arguments.
    pub fn new(op: &'static str, fixed: &[&str]) -> Ft {
        Ft { op, fixed: fixed.iter().map(|s| s.to_string()).collect() }
    }

    /// A copy with more fixed arguments.
    pub fn with(&self, more: &[&str]) -> Ft {
        let mut fixed = self.fixed.clone();
        fixed.extend(more.iter().map(|s| s.to_string()));
        Ft { op: self.op, fixed }
    }

    /// Runs `ftla OP --ft FIXED ARGS`; its output and its JSON report
    /// (`None` if it wrote none).
    pub fn run(&self, args: &[&str]) -> (Captured, Option<FactorReport>) {
        let json = std::env::temp_dir().join(format!("ftla-{}-ft-{}.json", self.op, std::process::id()));
        let _ = std::fs::remove_file(&json);
        let json_arg = json.display().to_string();
        let mut all = vec![self.op, "--ft", "--json", &json_arg];
        all.extend(self.fixed.iter().map(String::as_str));
        all.extend(args);
        let out = ftla(&all);
        let text = std::fs::read_to_string(&json).ok();
        let _ = std::fs::remove_file(&json);
        let report = text.map(|t| serde_json::from_str(&t).unwrap_or_else(|e| panic!("bad report {e}: {t}")));
        (out, report)
    }

    /// A step's phases in order, its commit last.
    fn step_phases(&self) -> Vec<&'static str> {
        let op = ftla_bench::report::Op::parse(self.op).expect("an ftla command");
        let driver = op.ft_driver();
        driver.step_phases.iter().chain(&[Phase::Commit]).map(|p| p.name()).collect()
    }

    /// Kills, then checks: exit 0, residuals < 16, checksums consistent,
    /// and one recovery of the expected ranks at the expected step, seen
    /// in the expected phase or a later one, in the expected mode. Returns
    /// the report.
    pub fn survives(&self, grid: &str, spares: &str, kill: &str, want: Rebuilt) -> FactorReport {
        let (out, json) = self.run(&["--grid", grid, "--spares", spares, "--kill", kill, "--check", "--verify"]);
        assert_eq!(out.code, Some(0), "kill {kill}:\n{}\n{}", out.stdout, out.stderr);
        let r = report(json, &out);
        assert!(residuals_pass(&r) && r.ok, "{r:?}");
        assert!(r.checksum_check.as_ref().is_some_and(|c| c.ok), "{r:?}");
        let recoveries = r.recoveries.clone().unwrap_or_default();
        assert_eq!(recoveries.len(), 1, "kill {kill}: {r:?}");
        let rec = &recoveries[0];
        let ranks: Vec<i32> = want.ranks.split(',').map(|x| x.trim().parse().unwrap()).collect();
        assert_eq!((&rec.ranks, rec.step), (&ranks, want.step), "kill {kill}: {r:?}");
        // The survivors report the phase in which they saw the failure: the
        // victim's own or a later one of the same step (what its owner has
        // already sent reaches the others before the owner dies).
        let order = self.step_phases();
        let rank_of = |p: &str| order.iter().position(|&o| o == p);
        assert!(
            rank_of(&rec.phase).is_some() && rank_of(&rec.phase) >= rank_of(want.phase),
            "kill {kill}: phase {:?}, expected {} or later: {r:?}",
            rec.phase,
            want.phase
        );
        assert_eq!(rec.mode, want.mode, "kill {kill}: {r:?}");
        r
    }

    /// A kill before the checksums exist cannot be rebuilt: every survivor
    /// forgets the call, the grid is repaired, and the factorization starts
    /// again from its input (the replacement runs the program from the top).
    pub fn restarts(&self, grid: &str, spares: &str, kill: &str) -> FactorReport {
        let (out, json) = self.run(&["--grid", grid, "--spares", spares, "--kill", kill, "--check", "--verify"]);
        assert_eq!(out.code, Some(0), "kill {kill}:\n{}\n{}", out.stdout, out.stderr);
        let r = report(json, &out);
        assert!(residuals_pass(&r) && r.ok, "{r:?}");
        assert_eq!(r.restarts, Some(1), "kill {kill}: {r:?}");
        assert_eq!(r.recoveries.as_deref(), Some(&[][..]), "kill {kill}: {r:?}");
        assert!(out.stdout.contains("restarting the factorization"), "{}", out.stdout);
        r
    }

    /// Rank 3 (process row 1 of a 2x2 grid) dies at step 4; then, during its
    /// repair (at `point`, with `spares` hot spares), rank `second` dies
    /// too. Rank 0 is in another process row: both are rebuilt and the
    /// result is right. Rank 2 is in row 1 as well: every survivor reports
    /// the run unrecoverable, within the job's time (exit code 3), never
    /// hanging. Either way the second kill really happened at `point` (the
    /// injector says so).
    pub fn second_kill_during_the_repair(&self, point: &str, spares: &str, second: i32) {
        // (In the last phase before the commit: QR's and LU's update, CG's dot.)
        let phases = self.step_phases();
        let kills = format!("3@4:{},{second}@{point}", phases[phases.len() - 2]);
        let started = Instant::now();
        let (out, json) = self.run(&["--grid", "2x2", "--spares", spares, "--kill", &kills, "--check", "--verify"]);
        let fired = point.replace('*', "1");
        assert!(
            out.stderr.contains(&format!("injecting SIGKILL into rank {second} at {fired}")),
            "{kills} (spares {spares}):\n{}",
            out.stderr
        );
        if second / 2 != 3 / 2 {
            assert_eq!(out.code, Some(0), "{kills} (spares {spares}):\n{}\n{}", out.stdout, out.stderr);
            let r = report(json, &out);
            let mut rebuilt: Vec<i32> = r.recoveries.iter().flatten().flat_map(|x| x.ranks.clone()).collect();
            rebuilt.sort_unstable();
            assert_eq!(rebuilt, [second, 3], "{kills}: {r:?}");
            assert!(residuals_pass(&r) && r.ok, "{kills}: {r:?}");
        } else {
            self.assert_unrecoverable(&out, &kills, "ranks 2 and 3 of process row 1 were both lost");
        }
        // Bounded: the repair timeout (60 s) is never what ended it.
        assert!(started.elapsed() < Duration::from_secs(50), "{kills}: {:?}", started.elapsed());
    }

    /// Every combination of a repair point: through a spawn and through a
    /// spare, the second loss recoverable and not.
    pub fn every_way_at(&self, point: &str) {
        for spares in ["0", "2"] {
            for second in [0, 2] {
                self.second_kill_during_the_repair(point, spares, second);
            }
        }
    }

    /// `kills` on a 2x2 grid lose two processes of process row 1: the
    /// launcher says unrecoverable (exit 3), and every survivor says why.
    pub fn unrecoverable(&self, kills: &str) {
        let (out, _) = self.run(&["--grid", "2x2", "--kill", kills]);
        self.assert_unrecoverable(&out, kills, "ranks 2 and 3 of process row 1 were both lost");
    }

    fn assert_unrecoverable(&self, out: &Captured, kills: &str, why: &str) {
        assert_eq!(
            out.code,
            Some(blacs_ft::launch::EXIT_UNRECOVERABLE),
            "{} {kills}:\n{}\n{}",
            self.op,
            out.stdout,
            out.stderr
        );
        let lines: Vec<&str> = out.stdout.lines().filter(|l| l.contains("unrecoverable failure")).collect();
        assert!(lines.len() >= 2, "{kills}: every survivor says it:\n{}", out.stdout);
        for l in lines {
            assert!(l.contains(why), "{kills}: {l}");
        }
    }

    /// `ftla OP --ft ARGS` is refused with a usage error (exit 2) naming
    /// `why`, before anything is launched.
    pub fn refused(&self, args: &[&str], why: &str) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ftla"));
        cmd.args([self.op, "--ft"]).args(args);
        let out = harness::run(cmd, Duration::from_secs(30));
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(why), "{args:?}: {}", out.stderr);
    }
}

/// Runs `ftla ARGS --timeout 120` (through the harness: one job at a
/// time, a hard limit: a hang fails the test).
pub fn ftla(args: &[&str]) -> Captured {
    ftla_with(args, &[])
}

/// [`ftla`] with more environment variables.
pub fn ftla_with(args: &[&str], env: &[(&str, &str)]) -> Captured {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ftla"));
    cmd.args(args).args(["--timeout", "120"]).env_remove("FTLA_KILL");
    cmd.envs(env.iter().copied());
    harness::launch(cmd)
}

/// Runs `ftla OP --ft --check --json F ARGS` with `env` set; returns the
/// output, the JSON report's text (`None` if none was written) and the
/// wall time.
pub fn run_ft_with_json(op: &str, args: &[&str], env: &[(&str, &str)]) -> (Captured, Option<String>, Duration) {
    let json = std::env::temp_dir().join(format!("ftla-{op}-json-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&json);
    let json_arg = json.display().to_string();
    let mut all = vec![op, "--ft", "--check", "--json", &json_arg];
    all.extend(args);
    let started = Instant::now();
    let out = ftla_with(&all, env);
    let took = started.elapsed();
    let text = std::fs::read_to_string(&json).ok();
    let _ = std::fs::remove_file(&json);
    (out, text, took)
}

/// An empty path for a test's files in the temporary directory, named
/// after the test and this process.
pub fn fresh_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("ftla-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The report of a run that must have written one.
pub fn report(r: Option<FactorReport>, out: &Captured) -> FactorReport {
    r.unwrap_or_else(|| panic!("no JSON report:\n{}\n{}", out.stdout, out.stderr))
}

/// The residual (and for QR the orthogonality) computed, and every
/// computed residual below 16; for CG, converged (its true residual is
/// checked against the tolerance in `ok`).
pub fn residuals_pass(r: &FactorReport) -> bool {
    if r.command == "cg" {
        return r.converged == Some(true) && r.relative_residual.is_some_and(|v| v.is_finite());
    }
    let below = |c: Option<ftla_bench::report::Checked>| c.and_then(|c| c.value()).is_some_and(|v| v < 16.0);
    below(Some(r.residual))
        && (r.command != "qr" || below(r.orthogonality))
        && r.solve_residual.is_none_or(|v| v < 16.0)
        && r.lstsq_residual.is_none_or(|v| v < 16.0)
}
