//! pdgeqrf_ft under real SIGKILLs (`ftla qr --ft`): a representative part
//! of the fault matrix (every phase, early/middle/last steps, rank 0,
//! spawn and spare, two kills in different rows, a kill during the
//! recovery, two kills in one row), checksum verification, and bad input.
//! The whole matrix runs with `scripts/fault-matrix.sh`.

use blacs_ft::launch::{run_with_timeout, Captured};
use scalapack_ft::report::FactorReport;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

static SERIAL: Mutex<()> = Mutex::new(());

/// 260×200 in 16-blocks: 13 panels (steps 0..=12) on a 2x2 grid.
const SHAPE: [&str; 6] = ["--m", "260", "--n", "200", "--nb", "16"];

/// Runs `ftla qr --ft ARGS`; its output and its JSON report (`None` if it
/// wrote none).
fn ftla(args: &[&str]) -> (Captured, Option<FactorReport>) {
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let json = std::env::temp_dir().join(format!("ftla-qr-ft-{}-{}.json", std::process::id(), args.join("_").len()));
    let _ = std::fs::remove_file(&json);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ftla"));
    cmd.args(["qr", "--ft", "--timeout", "120", "--json"]).arg(&json).args(args).env_remove("FTLA_KILL");
    let out = run_with_timeout(cmd, Duration::from_secs(150)).expect("run ftla");
    assert!(!out.timed_out, "ftla hung:\n{}\n{}", out.stdout, out.stderr);
    let text = std::fs::read_to_string(&json).ok();
    let _ = std::fs::remove_file(&json);
    let report = text.map(|t| serde_json::from_str(&t).unwrap_or_else(|e| panic!("bad report {e}: {t}")));
    (out, report)
}

/// The report of a run that must have written one.
fn report(r: Option<FactorReport>, out: &Captured) -> FactorReport {
    r.unwrap_or_else(|| panic!("no JSON report:\n{}\n{}", out.stdout, out.stderr))
}

/// Both residuals computed and below 16.
fn residuals_pass(r: &FactorReport) -> bool {
    let ok = |c: Option<scalapack_ft::report::Checked>| c.and_then(|c| c.value()).is_some_and(|v| v < 16.0);
    ok(Some(r.residual)) && ok(r.orthogonality)
}

/// Kills, then checks: exit 0, residuals < 16, checksums consistent, and
/// one recovery of the expected ranks at the expected step, seen in the
/// expected phase or a later one.
fn survives(grid: &str, spares: &str, kill: &str, ranks: &str, step: u64, phase: &str, mode: &str) {
    let mut args = vec!["--grid", grid, "--spares", spares, "--kill", kill, "--check", "--verify"];
    args.extend(SHAPE);
    let (out, json) = ftla(&args);
    assert_eq!(out.code, Some(0), "kill {kill}:\n{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(residuals_pass(&r) && r.ok, "{r:?}");
    assert!(r.checksum_check.as_ref().is_some_and(|c| c.ok), "{r:?}");
    let recoveries = r.recoveries.clone().unwrap_or_default();
    assert_eq!(recoveries.len(), 1, "kill {kill}: {r:?}");
    let rec = &recoveries[0];
    let want: Vec<i32> = ranks.split(',').map(|x| x.trim().parse().unwrap()).collect();
    assert_eq!((&rec.ranks, rec.step), (&want, step), "kill {kill}: {r:?}");
    // The survivors report the phase in which they saw the failure: the
    // victim's own or a later one of the same step (a panel its owner has
    // already sent reaches the others before the owner dies).
    const ORDER: [&str; 4] = ["panel", "bcast", "update", "commit"];
    let rank_of = |p: &str| ORDER.iter().position(|&o| o == p);
    assert!(
        rank_of(&rec.phase).is_some() && rank_of(&rec.phase) >= rank_of(phase),
        "kill {kill}: phase {:?}, expected {phase} or later: {r:?}",
        rec.phase
    );
    assert_eq!(rec.mode, mode, "kill {kill}: {r:?}");
}

#[test]
fn rank_0_killed_in_the_first_panel_is_rebuilt_through_a_spawn() {
    survives("2x2", "0", "0@0:panel", "0", 0, "panel", "spawn");
}

#[test]
fn kills_in_the_broadcast_and_update_phases_mid_factorization() {
    survives("2x2", "0", "3@5:bcast", "3", 5, "bcast", "spawn");
    survives("2x2", "0", "1@6:update", "1", 6, "update", "spawn");
}

#[test]
fn a_kill_after_the_commit_point_of_the_last_step_resumes_after_it() {
    // The victim dies after the agreement: the survivors commit step 12.
    survives("2x2", "0", "2@12:commit", "2", 13, "commit", "spawn");
}

/// A kill before the checksums exist cannot be rebuilt: every survivor
/// forgets the call, the grid is repaired, and the factorization starts
/// again from its input (the replacement runs the program from the top).
fn restarts(grid: &str, spares: &str, kill: &str) {
    let mut args = vec!["--grid", grid, "--spares", spares, "--kill", kill, "--check", "--verify"];
    args.extend(SHAPE);
    let (out, json) = ftla(&args);
    assert_eq!(out.code, Some(0), "kill {kill}:\n{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(residuals_pass(&r) && r.ok, "{r:?}");
    assert_eq!(r.restarts, Some(1), "kill {kill}: {r:?}");
    assert_eq!(r.recoveries.as_deref(), Some(&[][..]), "kill {kill}: {r:?}");
    assert!(out.stdout.contains("restarting the factorization"), "{}", out.stdout);
}

#[test]
fn a_kill_before_the_checksums_exist_restarts_the_call() {
    restarts("2x2", "0", "1@0:encode");
    restarts("2x3", "1", "0@0:encode");
    // Killed before the arguments are agreed on.
    restarts("2x2", "0", "2@0:args");
    // With --compare the restarted run is the run with the failure, not a
    // failure-free sample.
    let mut args = vec!["--grid", "1x2", "--kill", "1@0:encode", "--compare"];
    args.extend(SHAPE);
    let (out, json) = ftla(&args);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let c = report(json, &out).compare.expect("compare");
    let with = c.ft_with_failure_time_s.expect("a run with the failure");
    assert!(with > 0.0 && c.ft_time_s < with, "{c:?}");
}

#[test]
fn a_process_holding_no_rows_is_rebuilt_too() {
    // 6 rows in 8-blocks: process row 1 of the 2x2 grid holds none; its
    // blocks (and checksum copies) are empty but still take part.
    let args = ["--grid", "2x2", "--m", "6", "--n", "40", "--nb", "8", "--kill", "2@0:update", "--check", "--verify"];
    let (out, json) = ftla(&args);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(r.ok && residuals_pass(&r), "{r:?}");
    assert_eq!(r.recoveries.as_ref().map(|v| v[0].ranks.clone()), Some(vec![2]), "{r:?}");
}

#[test]
fn a_hot_spare_takes_over_on_a_2x3_grid() {
    survives("2x3", "1", "4@7:update", "4", 7, "update", "spare");
}

#[test]
fn two_simultaneous_kills_in_different_process_rows_are_both_rebuilt() {
    survives("2x2", "0", "1@4:update,2@4:update", "1, 2", 4, "update", "spawn");
}

/// Rank 3 (process row 1) dies at step 4; then, during its repair (at
/// `point`, with `spares` hot spares), rank `second` dies too. Rank 0 is in
/// another process row: both are rebuilt and the result is right. Rank 2 is
/// in row 1 as well: every survivor reports the run unrecoverable, within
/// the job's time (exit code 3), never hanging. Either way the second kill
/// really happened at `point` (the injector says so).
fn second_kill_during_the_repair(point: &str, spares: &str, second: i32) {
    let kills = format!("3@4:update,{second}@{point}");
    let mut args = vec!["--grid", "2x2", "--spares", spares, "--kill", &kills, "--check", "--verify"];
    args.extend(SHAPE);
    let started = std::time::Instant::now();
    let (out, json) = ftla(&args);
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
        assert_eq!(
            out.code,
            Some(blacs_ft::launch::EXIT_UNRECOVERABLE),
            "{kills} (spares {spares}):\n{}\n{}",
            out.stdout,
            out.stderr
        );
        let lines = out.stdout.lines().filter(|l| l.contains("unrecoverable failure")).count();
        assert!(lines >= 2, "{kills}: every survivor says it:\n{}", out.stdout);
        assert!(out.stdout.contains("ranks 2 and 3 of process row 1 were both lost"), "{}", out.stdout);
    }
    // Bounded: the repair timeout (60 s) is never what ended it.
    assert!(started.elapsed() < Duration::from_secs(50), "{kills}: {:?}", started.elapsed());
}

/// Every combination of a repair point: through a spawn and through a
/// spare, the second loss recoverable and not.
fn every_way_at(point: &str) {
    for spares in ["0", "2"] {
        for second in [0, 2] {
            second_kill_during_the_repair(point, spares, second);
        }
    }
}

#[test]
fn a_loss_while_the_repair_revokes() {
    every_way_at("repair:*:revoke");
}

#[test]
fn a_loss_while_the_repair_shrinks() {
    every_way_at("repair:*:shrink");
}

#[test]
fn a_loss_right_after_the_spawn() {
    // (With a spare nothing is spawned: this point exists only without.)
    for second in [0, 2] {
        second_kill_during_the_repair("repair:*:spawn", "0", second);
    }
}

#[test]
fn a_loss_after_the_merge_while_the_replacement_joins() {
    every_way_at("repair:*:merge");
}

#[test]
fn a_loss_while_the_grid_communicators_are_split() {
    every_way_at("repair:*:split");
}

#[test]
fn a_loss_while_the_log_is_handed_over() {
    every_way_at("region:*:share");
}

#[test]
fn two_kills_in_one_process_row_are_reported_as_unrecoverable_by_every_survivor() {
    let mut args = vec!["--grid", "2x2", "--kill", "2@3:panel,3@3:panel"];
    args.extend(SHAPE);
    let (out, _) = ftla(&args);
    // The launcher's exit code says it: an unrecoverable failure, reported.
    assert_eq!(out.code, Some(blacs_ft::launch::EXIT_UNRECOVERABLE), "{}\n{}", out.stdout, out.stderr);
    let lines: Vec<&str> = out.stdout.lines().filter(|l| l.contains("unrecoverable failure")).collect();
    assert!(lines.len() >= 2, "{}", out.stdout);
    for l in lines {
        assert!(l.contains("ranks 2 and 3 of process row 1 were both lost"), "{l}");
    }
}

#[test]
fn verify_reports_a_flipped_element_and_passes_without_one() {
    let mut args = vec!["--grid", "2x2", "--verify", "--corrupt", "1@2"];
    args.extend(SHAPE);
    let (out, json) = ftla(&args);
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("checksums MISMATCH"), "{}", out.stdout);
    let check = report(json, &out).checksum_check.expect("verified");
    assert!(check.max_c_defect > 0.1 && !check.ok, "{check:?}");
    let mut clean = vec!["--grid", "2x2", "--verify"];
    clean.extend(SHAPE);
    let (out, json) = ftla(&clean);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let check = report(json, &out).checksum_check.expect("verified");
    assert!(check.max_c_defect <= check.tolerance && check.ok, "{check:?}");
}

#[test]
fn compare_reports_plain_and_failure_free_times_from_the_same_run() {
    let mut args = vec!["--grid", "1x2", "--kill", "1@3:update", "--compare", "--reps", "2"];
    args.extend(SHAPE);
    let (out, json) = ftla(&args);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert_eq!(r.ft, Some(true), "{r:?}");
    assert!(r.overhead_model.is_some_and(|m| m > 0.0), "{r:?}");
    let c = r.compare.expect("compare");
    assert!(c.nonft_time_s > 0.0 && c.ft_time_s > 0.0 && c.ft_with_failure_time_s.is_some_and(|t| t > 0.0), "{c:?}");
    // Two alternating pairs, their medians reported; with a kill, each
    // repetition also repeats the run with the failure (a second spawned
    // replacement joins the second one and goes on with the survivors).
    assert_eq!(c.reps, 2, "{c:?}");
    let (plain, free) = (&c.nonft_times_s, &c.ft_times_s);
    let with = c.ft_with_failure_times_s.clone().unwrap_or_default();
    assert!(plain.len() == 2 && free.len() == 2 && with.len() == 2, "{c:?}");
    // The paired figures are the medians (of two: means) of the ratios
    // within each repetition.
    let paired = ((free[0] / plain[0] + free[1] / plain[1]) / 2.0) - 1.0;
    approx::assert_abs_diff_eq!(c.paired_overhead, paired, epsilon = 1e-9);
    let paired = ((with[0] / free[0] + with[1] / free[1]) / 2.0) - 1.0;
    approx::assert_abs_diff_eq!(c.paired_failure_overhead.expect("a failure"), paired, epsilon = 1e-9);
    assert!(out.stdout.contains("paired (median of the per-repetition ratios)"), "{}", out.stdout);
    assert!(out.stdout.contains("medians of 2"), "{}", out.stdout);
    assert!(out.stdout.contains("median of 2"), "{}", out.stdout);
    assert!(out.stdout.contains("repetition 2: recovered ranks [1] at step 3"), "{}", out.stdout);
}

/// `ftla qr --ft ARGS` is refused with a usage error (exit 2) naming `why`,
/// before anything is launched.
fn refused(args: &[&str], why: &str) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ftla"));
    cmd.args(["qr", "--ft"]).args(args);
    let out = run_with_timeout(cmd, Duration::from_secs(30)).expect("run ftla");
    assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
    assert!(out.stderr.contains(why), "{args:?}: {}", out.stderr);
}

#[test]
fn repetitions_refuse_kills_they_cannot_repeat() {
    // 64 columns in 16-blocks: steps 0..=3.
    let reps = ["--grid", "1x2", "--n", "64", "--nb", "16", "--compare", "--reps", "2", "--kill"];
    refused(&[&reps[..], &["0@1:panel"]].concat(), "rank 0 collects the repetitions");
    refused(&[&reps[..], &["1@1:panel/1"]].concat(), "later repair epochs");
    refused(&[&reps[..], &["1@0:encode"]].concat(), "restarts the call");
    refused(&["--grid", "1x2", "--n", "64", "--nb", "16", "--kill", "1@3:encode"], "before step 0");
}

#[test]
fn reps_without_compare_is_refused() {
    refused(&["--grid", "1x2", "--n", "64", "--reps", "3"], "--compare");
}

#[test]
fn one_process_column_is_refused_before_launching() {
    refused(&["--grid", "2x1", "--n", "64"], "--ft needs at least 2 process columns");
}

#[test]
fn a_wide_matrix_whose_last_panel_is_partial_is_rebuilt_after_it() {
    // 100×200 in 16-blocks: the last panel factors 4 of block column 6's
    // 16 columns; rank 2 holds part of that mixed block and dies after it.
    let args =
        ["--grid", "2x2", "--m", "100", "--n", "200", "--nb", "16", "--kill", "2@6:commit", "--check", "--verify"];
    let (out, json) = ftla(&args);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    let rec = r.recoveries.clone().unwrap_or_default();
    assert!(rec.len() == 1 && rec[0].ranks == [2] && rec[0].step == 7, "{r:?}");
    assert!(residuals_pass(&r), "{r:?}");
    let check = r.checksum_check.expect("verified");
    assert!(check.max_d_defect <= check.tolerance, "{check:?}");
}
