//! `ftla soak`: many `ftla qr --ft` (or `lu --ft`) jobs with random kills — double kills
//! and kills during repairs among them, in the factorization, in the solve
//! with the factors and between the two — each under a timeout, counted by
//! how they ended.
//!
//! A run is *correct* when it finished with its residuals checked (exit
//! 0), *reported unrecoverable* when it said, on its survivors, that it
//! could not recover (exit 3), *hung* past its timeout, and *wrong*
//! otherwise: a residual ≥ 16 (the solve's included), a checksum
//! mismatch, or a job that ended without saying why. Every run's command is printed when it was not
//! correct, so it can be run again by hand.

use crate::cli::SoakArgs;
use crate::problem::{op_phases, write_json};
use blacs_ft::launch::{run_with_timeout, EXIT_TIMEOUT, EXIT_UNRECOVERABLE};
use ftla_bench::report::{FactorReport, Op, SoakReport, SoakRun, SoakVerdict};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use recovery::protocol::Phase;
use recovery::Policy;
use scalapack_ft::abft::LayoutKind;
use std::time::{Duration, Instant};

/// The residual checks' bound (ScaLAPACK's and LAPACK's testers).
const SOLVE_RESIDUAL_BOUND: f64 = 16.0;
/// Grids of the runs (Q ≥ 2: the checksum pairs need two process columns).
const GRIDS: [(i32, i32); 5] = [(1, 2), (1, 3), (2, 2), (2, 3), (3, 2)];
const REPAIR_POINTS: [&str; 6] =
    ["repair:*:revoke", "repair:*:shrink", "repair:*:spawn", "repair:*:merge", "repair:*:split", "region:*:share"];

/// One random scenario.
#[derive(Clone, Debug, PartialEq)]
struct Scenario {
    op: Op,
    p: i32,
    q: i32,
    m: usize,
    n: usize,
    nb: usize,
    spares: u32,
    /// LU: `--solve` (square A); QR: `--lstsq` (one run of two).
    solve: bool,
    kills: Vec<String>,
    /// No more losses per process row at a time than the checksums
    /// tolerate: the run must finish correctly.
    recoverable: bool,
    /// How a loss is recovered (`--recovery`).
    recovery: Policy,
    /// The checksum layout (`--layout`, `--checksums`).
    layout: LayoutKind,
}

/// Where a scenario's first kill is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum FirstKill {
    /// In the factorization (or CG's solve), at a step.
    Factorization,
    /// In the factorization's args or encode phase: the call starts again
    /// from its input, nothing to rebuild.
    BeforeChecksums,
    /// In the solve with the factors, or between them (the application
    /// point): the factors' blocks are rebuilt from their checksums.
    Solve,
}

/// The kill points of the solve with the factors, for a scenario with
/// `blocks` = ⌈min(M, N)/NB⌉ block steps.
struct SolvePoints {
    /// `getrs`, `potrs` or `gels`.
    name: &'static str,
    /// Steps of the solve.
    steps: u64,
    /// Whether step 0 is the row interchanges (LU's).
    interchanges: bool,
    /// Whether the program's own work between the factorization and the
    /// solve takes kills (`app:0`: LU, Cholesky).
    app: bool,
}

impl SolvePoints {
    /// The solve of `op` with the factors of an M×N matrix in NB blocks.
    fn of(op: Op, m: usize, n: usize, nb: usize) -> SolvePoints {
        let (name, steps) = op.ft_solve_driver().map_or(("", 0), |d| (d.kill_op, d.steps.of(m, n, nb).unwrap_or(0)));
        SolvePoints { name, steps, interchanges: op == Op::Lu, app: matches!(op, Op::Lu | Op::Chol) }
    }

    /// A random point at a step in `from..steps` (the phases a step has:
    /// `getrs`'s step 0 is the row interchanges).
    fn at_step(&self, rng: &mut StdRng, from: u64) -> String {
        let step = rng.random_range(from..self.steps);
        let phases: &[&str] =
            if self.interchanges && step == 0 { &["swap", "commit"] } else { &["bcast", "update", "commit"] };
        format!("{}:{step}:{}", self.name, phases[rng.random_range(0..phases.len())])
    }

    /// A random first point: the application's (LU), the solve's args or
    /// encode (before B's checksums), or a step's.
    fn draw(&self, rng: &mut StdRng) -> String {
        let roll = rng.random_range(0..10);
        match roll {
            0 | 1 if self.app => format!("{}:0", crate::solve::APP_POINTS),
            2 | 3 => format!("{}:0:{}", self.name, if rng.random_bool(0.5) { "args" } else { "encode" }),
            _ => self.at_step(rng, 0),
        }
    }
}

impl Scenario {
    /// Draws a scenario: a grid, a shape with at least two steps, spares,
    /// one kill at a random step and phase (or before the checksums exist),
    /// and in one run of two a second kill — at the same point, during the
    /// repair of the first, or at a later step after it — or, on grids of
    /// several process rows, two kills in different rows at once and a
    /// third of one of their replacements at a later step. LU runs solve
    /// with the factors when the matrix is square, QR runs one of two
    /// (least squares, minimum norm when M < N): one first kill of three
    /// is then in the solve or between the factorization and the solve.
    /// CG runs solve the 2-D Poisson problem.
    ///
    /// With `f > 1` rotating checksums, the losses at once are drawn in
    /// the first victim's process row half the time, up to `f + 1` of
    /// them. The factorization, the solve with its factors (B's checksums
    /// are in their layout) and a checkpoint-on-failure restart each
    /// tolerate `f` per row.
    fn draw(rng: &mut StdRng, op: Op, recovery: Policy, layout: LayoutKind) -> Scenario {
        // A step's phases, its commit included.
        let phases: Vec<&str> =
            op_phases(op).into_iter().filter(|p| !matches!(p, Phase::Args | Phase::Encode)).map(Phase::name).collect();
        let f = layout.checksums();
        let grids: Vec<(i32, i32)> = GRIDS.iter().copied().filter(|&(_, q)| q as usize > f).collect();
        let (p, q) = grids[rng.random_range(0..grids.len())];
        let nb: usize = [8, 16, 32][rng.random_range(0..3)];
        let n = rng.random_range(3 * nb..=12 * nb + nb / 2);
        // (CG: square; its iterations on the 2-D Poisson matrix are at
        // least the grid's width, ⌈√N⌉, so kills up to there fire.)
        let m = if matches!(op, Op::Qr | Op::Lu) && rng.random_bool(0.25) {
            rng.random_range(n / 2 + nb..=2 * n)
        } else {
            n
        };
        let steps = op.ft_driver().steps.of(m, n, nb).unwrap_or((n as f64).sqrt().ceil() as u64);
        let solve = match op {
            Op::Lu => m == n,
            Op::Qr | Op::Chol => rng.random_bool(0.5),
            Op::Cg => false,
        };
        let solve_points = SolvePoints::of(op, m, n, nb);
        // (Checkpoint-on-failure takes no spares.)
        let spares = if recovery == Policy::Cof { 0 } else { rng.random_range(0..=2u32) };
        let size = p * q;
        let r1 = rng.random_range(0..size);
        let row = |r: i32| r / q;
        let first = if solve && rng.random_bool(0.35) {
            FirstKill::Solve
        } else if rng.random_bool(0.12) {
            FirstKill::BeforeChecksums
        } else {
            FirstKill::Factorization
        };
        let k1 = match first {
            FirstKill::BeforeChecksums => format!("{r1}@0:{}", if rng.random_bool(0.5) { "args" } else { "encode" }),
            FirstKill::Factorization => {
                let step = rng.random_range(0..steps);
                format!("{r1}@{step}:{}", phases[rng.random_range(0..phases.len())])
            }
            FirstKill::Solve => format!("{r1}@{}", solve_points.draw(rng)),
        };
        let before_checksums = first == FirstKill::BeforeChecksums;
        let mut kills = vec![k1.clone()];
        let mut recoverable = true;
        if rng.random_bool(0.5) && size > 1 {
            let mut r2 = rng.random_range(0..size - 1);
            if r2 >= r1 {
                r2 += 1;
            }
            let point = &k1[k1.find('@').map_or(0, |i| i + 1)..];
            // A kill of `who` at a later step than the first kill's, in
            // the epoch the first repair made (`None` when there is none).
            let later = |rng: &mut StdRng, who: i32| -> Option<String> {
                match first {
                    FirstKill::Solve => {
                        // A later step of the solve (after the
                        // application point: any).
                        let step1: u64 = point.split(':').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
                        let from = if point.starts_with(crate::solve::APP_POINTS) { 0 } else { step1 + 1 };
                        (from < solve_points.steps).then(|| format!("{who}@{}/1", solve_points.at_step(rng, from)))
                    }
                    _ if solve && rng.random_bool(0.3) => Some(format!("{who}@{}/1", solve_points.at_step(rng, 0))),
                    _ => {
                        let step1: u64 = point.split(':').next().and_then(|s| s.parse().ok()).unwrap_or(0);
                        (step1 + 1 < steps).then(|| {
                            let step = rng.random_range(step1 + 1..steps);
                            format!("{who}@{step}:{}/1", phases[rng.random_range(0..phases.len())])
                        })
                    }
                }
            };
            // Two losses at once on two processes with no spare leave
            // nobody to report anything: then only the later-step kind.
            let nobody_left = size == 2 && spares == 0;
            let kind = if nobody_left { 2 } else { rng.random_range(0..4) };
            match kind {
                // Both (with f > 1, up to f + 1) at once.
                0 => {
                    let mut victims = vec![r1];
                    if f > 1 && rng.random_bool(0.5) {
                        let in_row: Vec<i32> = (0..size).filter(|&r| r != r1 && row(r) == row(r1)).collect();
                        let more = rng.random_range(1..=f);
                        for _ in 0..more {
                            let left: Vec<i32> = in_row.iter().copied().filter(|r| !victims.contains(r)).collect();
                            // (Somebody must be left to report.)
                            if left.is_empty() || (victims.len() + 1 >= size as usize && spares == 0) {
                                break;
                            }
                            victims.push(left[rng.random_range(0..left.len())]);
                        }
                    }
                    if victims.len() == 1 {
                        victims.push(r2);
                    }
                    kills.extend(victims[1..].iter().map(|r| format!("{r}@{point}")));
                    let most_in_a_row =
                        (0..p).map(|pr| victims.iter().filter(|&&r| row(r) == pr).count()).max().unwrap_or(0);
                    recoverable = before_checksums || most_in_a_row <= f;
                }
                // During the first one's repair (a spawn point fires only
                // when a replacement is spawned).
                1 => {
                    let at = REPAIR_POINTS[rng.random_range(0..REPAIR_POINTS.len())];
                    kills.push(format!("{r2}@{at}"));
                    // (Under checkpoint-on-failure nothing is repaired.)
                    let fires = recovery != Policy::Cof && (!at.ends_with("spawn") || spares == 0);
                    recoverable = before_checksums || !fires || row(r1) != row(r2) || f > 1;
                }
                // Two in different process rows at once (one spawn of two
                // replacements without spares), then one of their
                // replacements at a later step.
                3 if p > 1 => {
                    let other_rows: Vec<i32> = (0..size).filter(|&r| row(r) != row(r1)).collect();
                    let r2 = other_rows[rng.random_range(0..other_rows.len())];
                    kills.push(format!("{r2}@{point}"));
                    let who = if rng.random_bool(0.5) { r1 } else { r2 };
                    kills.extend(later(rng, who));
                }
                // After it, at a later step (the repair made epoch 1); the
                // first victim's replacement may be the one.
                _ => {
                    let who = if rng.random_bool(0.3) { r1 } else { r2 };
                    kills.extend(later(rng, who));
                }
            }
        }
        if recovery == Policy::Shrink && kills.len() > spares as usize {
            // (Under shrink nothing is spawned: without a spare for every
            // loss, too few survivors for F + 1 process columns, or two
            // losses of one row at once (where data must move), cannot be
            // recovered.)
            let point = |k: &String| k[k.find('@').map_or(0, |i| i + 1)..].to_string();
            let at_once: Vec<i32> = kills
                .iter()
                .filter(|k| point(k) == point(&k1))
                .filter_map(|k| k.split('@').next().and_then(|r| r.parse().ok()))
                .collect();
            let two_in_a_row = (0..p).any(|pr| at_once.iter().filter(|&&r| row(r) == pr).count() > 1);
            let left = (size as usize + spares as usize).saturating_sub(kills.len());
            if left < f + 1 || two_in_a_row {
                recoverable = false;
            }
        }
        Scenario { op, p, q, m, n, nb, spares, solve, kills, recoverable, recovery, layout }
    }

    /// The arguments of `ftla` for this scenario.
    fn args(&self, timeout: u64, json: &std::path::Path) -> Vec<String> {
        let mut a: Vec<String> =
            vec![self.op.name().into(), "--ft".into(), "--grid".into(), format!("{}x{}", self.p, self.q)];
        a.extend(["--n".into(), self.n.to_string()]);
        if self.m != self.n {
            a.extend(["--m".into(), self.m.to_string()]);
        }
        a.extend(["--nb".into(), self.nb.to_string(), "--spares".into(), self.spares.to_string()]);
        a.extend(["--kill".into(), self.kills.join(",")]);
        if let LayoutKind::Rotating { checksums } = self.layout {
            a.extend(["--layout".into(), "rotating".into(), "--checksums".into(), checksums.to_string()]);
        }
        // (The minimum-norm solve factors Aᵀ: its least-squares check
        // stands for --check's.)
        if !(self.solve && self.op == Op::Qr && self.m < self.n) {
            a.push("--check".into());
        }
        a.push("--verify".into());
        if self.recovery != Policy::InPlace {
            // (Next to the report: the soak removes both after each run.)
            let dir = json.with_extension("ckpt").display().to_string();
            a.extend(["--recovery".into(), self.recovery.name().into(), "--checkpoint-dir".into(), dir]);
        }
        match self.op {
            Op::Lu | Op::Chol if self.solve => a.push("--solve".into()),
            Op::Qr if self.solve => a.push("--lstsq".into()),
            _ => {}
        }
        a.extend(["--timeout".into(), timeout.to_string(), "--json".into(), json.display().to_string()]);
        a
    }
}

/// The verdict of a run from its exit code (and whether it timed out).
fn verdict(code: Option<i32>, timed_out: bool) -> SoakVerdict {
    match code {
        _ if timed_out => SoakVerdict::Hung,
        Some(0) => SoakVerdict::Correct,
        Some(EXIT_UNRECOVERABLE) => SoakVerdict::ReportedUnrecoverable,
        Some(EXIT_TIMEOUT) => SoakVerdict::Hung,
        _ => SoakVerdict::Wrong,
    }
}

/// Runs the soak; returns the exit code (1 on any hang or wrong answer).
pub fn run(a: SoakArgs) -> i32 {
    let op = Op::from(a.op);
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("ftla soak: cannot find this program: {e}");
            return 1;
        }
    };
    let layout = match a.layout.kind(a.checksums) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("ftla soak: {e}");
            return 2;
        }
    };
    let mut rng = StdRng::seed_from_u64(a.seed);
    let json = std::env::temp_dir().join(format!("ftla-soak-{}.json", std::process::id()));
    // The job's own timeout kills it first (exit 124); the outer one is a
    // backstop for a launcher that itself hangs.
    let inner = a.run_timeout.max(20);
    let outer = Duration::from_secs(inner + 30);
    println!(
        "ftla soak: {} random runs of `ftla {} --ft --recovery {}` (seed {}), {inner} s timeout each",
        a.runs,
        op.name(),
        a.recovery.name(),
        a.seed
    );
    let mut details = Vec::new();
    for index in 0..a.runs as usize {
        let sc = Scenario::draw(&mut rng, op, a.recovery, layout);
        let args = sc.args(inner, &json);
        let command = format!("ftla {}", args.join(" ").replace(&format!(" --json {}", json.display()), ""));
        let _ = std::fs::remove_file(&json);
        let _ = std::fs::remove_dir_all(json.with_extension("ckpt"));
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(&args).env_remove("FTLA_KILL");
        let t = Instant::now();
        let out = match run_with_timeout(cmd, outer) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("ftla soak: cannot start {}: {e}", exe.display());
                return 1;
            }
        };
        let seconds = t.elapsed().as_secs_f64();
        let mut v = verdict(out.code, out.timed_out);
        let report: Option<FactorReport> =
            std::fs::read_to_string(&json).ok().and_then(|t| serde_json::from_str(&t).ok());
        // A correct exit must come with a correct report, and a solve
        // with the factors with its residual, checked (< 16).
        let solved = |r: &FactorReport| {
            !sc.solve || r.solve_residual.or(r.lstsq_residual).is_some_and(|x| x < SOLVE_RESIDUAL_BOUND)
        };
        if v == SoakVerdict::Correct && !report.as_ref().is_some_and(|r| r.ok && solved(r)) {
            v = SoakVerdict::Wrong;
        }
        let recoveries = report.as_ref().and_then(|r| r.recoveries.as_ref()).map_or(0, Vec::len);
        let tag = match v {
            SoakVerdict::Correct => "correct".to_string(),
            SoakVerdict::ReportedUnrecoverable if sc.recoverable => {
                "reported unrecoverable (within the losses per process row it tolerates: it could have recovered)"
                    .to_string()
            }
            SoakVerdict::ReportedUnrecoverable => "reported unrecoverable".to_string(),
            SoakVerdict::Hung => "HUNG".to_string(),
            SoakVerdict::Wrong => format!("WRONG (exit code {:?})", out.code),
        };
        println!("[{:>3}/{}] {tag:<24} {seconds:>6.1} s  {}", index + 1, a.runs, sc.kills.join(","));
        if v != SoakVerdict::Correct {
            println!("          {command}");
            if v == SoakVerdict::Wrong || v == SoakVerdict::Hung {
                for l in out.stdout.lines().chain(out.stderr.lines()).rev().take(6).collect::<Vec<_>>().iter().rev() {
                    println!("            | {l}");
                }
            }
        }
        details.push(SoakRun {
            index,
            command,
            verdict: v,
            recoverable: sc.recoverable,
            exit_code: out.code,
            seconds,
            recoveries,
        });
    }
    let _ = std::fs::remove_file(&json);
    let _ = std::fs::remove_dir_all(json.with_extension("ckpt"));
    let count = |w: SoakVerdict| details.iter().filter(|d| d.verdict == w).count();
    let report = SoakReport {
        command: "soak".into(),
        op,
        seed: a.seed,
        runs: details.len(),
        correct: count(SoakVerdict::Correct),
        reported_unrecoverable: count(SoakVerdict::ReportedUnrecoverable),
        hung: count(SoakVerdict::Hung),
        wrong: count(SoakVerdict::Wrong),
        ok: count(SoakVerdict::Hung) == 0 && count(SoakVerdict::Wrong) == 0,
        details,
    };
    let surprising =
        report.details.iter().filter(|d| d.verdict == SoakVerdict::ReportedUnrecoverable && d.recoverable).count();
    println!(
        "soak: {} runs: {} correct, {} reported unrecoverable{}, {} hung, {} wrong — {}",
        report.runs,
        report.correct,
        report.reported_unrecoverable,
        if surprising > 0 { format!(" ({surprising} of them recoverable in principle)") } else { String::new() },
        report.hung,
        report.wrong,
        if report.ok { "ok" } else { "FAILED" }
    );
    if let Some(path) = &a.json {
        if let Err(e) = write_json(path, &report) {
            eprintln!("ftla soak: {e}");
            return 1;
        }
    }
    if report.ok {
        0
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_same_runs_and_every_run_is_a_valid_command() {
        let rotating = LayoutKind::Rotating { checksums: 2 };
        for (op, recovery, layout) in [
            (Op::Qr, Policy::InPlace, LayoutKind::ReverseNeighbor),
            (Op::Lu, Policy::Cof, LayoutKind::ReverseNeighbor),
            (Op::Cg, Policy::Auto, LayoutKind::ReverseNeighbor),
            (Op::Qr, Policy::InPlace, rotating),
            (Op::Lu, Policy::InPlace, rotating),
            (Op::Chol, Policy::Cof, LayoutKind::ReverseNeighbor),
            (Op::Chol, Policy::InPlace, rotating),
        ] {
            let draw = |seed| {
                let mut rng = StdRng::seed_from_u64(seed);
                (0..200).map(|_| Scenario::draw(&mut rng, op, recovery, layout)).collect::<Vec<_>>()
            };
            let runs = draw(7);
            assert_eq!(runs, draw(7));
            assert_ne!(runs, draw(8));
            let json = std::path::Path::new("/tmp/x.json");
            for sc in &runs {
                let words = sc.args(60, json);
                let cli =
                    <crate::cli::Cli as clap::Parser>::try_parse_from(std::iter::once("ftla".to_string()).chain(words))
                        .unwrap_or_else(|e| panic!("{sc:?}: {e}"));
                let job = match cli.command {
                    crate::cli::Command::Qr(q) if op == Op::Qr => crate::problem::FactorJob::from_qr(q),
                    crate::cli::Command::Lu(l) if op == Op::Lu => crate::problem::FactorJob::from_lu(l),
                    crate::cli::Command::Cg(c) if op == Op::Cg => crate::problem::FactorJob::from_cg(c),
                    crate::cli::Command::Chol(c) if op == Op::Chol => crate::problem::FactorJob::from_chol(c),
                    _ => panic!("{sc:?}"),
                };
                job.unwrap_or_else(|e| panic!("{sc:?}: {e}"));
            }
            // Double kills, and unrecoverable ones among them, are drawn;
            // LU's own phase too.
            assert!(runs.iter().any(|s| s.kills.len() == 2 && s.recoverable));
            assert!(runs.iter().any(|s| !s.recoverable));
            assert!(runs.iter().any(|s| s.kills.iter().any(|k| k.contains("repair:"))));
            // Two rows at once, then one of their replacements.
            let then_a_replacement = |s: &Scenario| {
                let rank = |k: &String| k.split('@').next().and_then(|r| r.parse::<i32>().ok());
                let at = |k: &String| k.split_once('@').map(|(_, a)| a.to_string());
                s.kills.len() == 3
                    && at(&s.kills[0]) == at(&s.kills[1])
                    && rank(&s.kills[0]).zip(rank(&s.kills[1])).is_some_and(|(a, b)| a / s.q != b / s.q)
                    && s.kills[2].ends_with("/1")
                    && [rank(&s.kills[0]), rank(&s.kills[1])].contains(&rank(&s.kills[2]))
                    && s.recoverable
            };
            assert!(runs.iter().any(then_a_replacement), "{op:?}: no two-rows-then-a-replacement run");
            assert_eq!(runs.iter().any(|s| s.kills.iter().any(|k| k.ends_with(":swap"))), op == Op::Lu);
            assert_eq!(runs.iter().any(|s| s.kills.iter().any(|k| k.ends_with(":matvec"))), op == Op::Cg);
            if layout != LayoutKind::ReverseNeighbor {
                // Two losses in one row that the rotating checksums rebuild, and three that they cannot.
                let same_row = |s: &Scenario, n: usize| {
                    let ranks: Vec<i32> = s.kills.iter().filter_map(|k| k.split('@').next()?.parse().ok()).collect();
                    s.kills.len() == n && ranks.iter().all(|r| r / s.q == ranks[0] / s.q)
                };
                assert!(runs.iter().any(|s| same_row(s, 2) && s.recoverable && s.q >= 3), "{op:?}");
                assert!(runs.iter().any(|s| same_row(s, 3) && !s.recoverable), "{op:?}");
            }
            // Kills in the solves, before B's checksums among them, and
            // between the factorization and the solve (LU).
            let solve_kill = |pat: &str| runs.iter().any(|s| s.kills.iter().any(|k| k.contains(pat)));
            let points = match op {
                Op::Lu => vec!["getrs:", "getrs:0:args", "getrs:0:encode", "@app:0"],
                Op::Qr => vec!["gels:", "gels:0:args", "gels:0:encode"],
                Op::Chol => vec!["potrs:", "potrs:0:args", "potrs:0:encode", "@app:0"],
                Op::Cg => vec![],
            };
            for pat in points {
                assert!(solve_kill(pat), "{op:?}: no {pat} kill drawn");
            }
        }
    }

    #[test]
    fn exit_codes_map_to_verdicts() {
        assert_eq!(verdict(Some(0), false), SoakVerdict::Correct);
        assert_eq!(verdict(Some(3), false), SoakVerdict::ReportedUnrecoverable);
        assert_eq!(verdict(Some(124), false), SoakVerdict::Hung);
        assert_eq!(verdict(None, true), SoakVerdict::Hung);
        assert_eq!(verdict(Some(1), false), SoakVerdict::Wrong);
    }
}
