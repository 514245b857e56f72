//! pdgeqrf_ft under real SIGKILLs (`ftla qr --ft`): a representative part
//! of the fault matrix (every phase, early/middle/last steps, rank 0,
//! spawn and spare, two kills in different rows, a kill during the
//! recovery, two kills in one row), checksum verification, and bad input.
//! The whole matrix runs with `scripts/fault-matrix.sh`.

// (The helpers of full-tier tests are unused in the core tier.)
#![cfg_attr(not(feature = "full-tests"), allow(unused_imports, dead_code))]

mod common;

use common::{report, residuals_pass, Ft, Rebuilt};

/// 260×200 in 16-blocks: 13 panels (steps 0..=12) on a 2x2 grid.
const SHAPE: [&str; 6] = ["--m", "260", "--n", "200", "--nb", "16"];

fn qr() -> Ft {
    Ft::new("qr", &SHAPE)
}

/// Runs `ftla qr --ft SHAPE ARGS`.
fn ftla(args: &[&str]) -> (harness::Captured, Option<ftla_bench::report::FactorReport>) {
    qr().run(args)
}

fn survives(grid: &str, spares: &str, kill: &str, ranks: &str, step: u64, phase: &str, mode: &str) {
    qr().survives(grid, spares, kill, Rebuilt { ranks, step, phase, mode });
}

#[test]
fn rank_0_killed_in_the_first_panel_is_rebuilt_through_a_spawn() {
    survives("2x2", "0", "0@0:panel", "0", 0, "panel", "spawn");
}

#[cfg(feature = "full-tests")]
#[test]
fn kills_in_the_broadcast_and_update_phases_mid_factorization() {
    survives("2x2", "0", "3@5:bcast", "3", 5, "bcast", "spawn");
    survives("2x2", "0", "1@6:update", "1", 6, "update", "spawn");
}

#[cfg(feature = "full-tests")]
#[test]
fn a_kill_after_the_commit_point_of_the_last_step_resumes_after_it() {
    // The victim dies after the agreement: the survivors commit step 12.
    survives("2x2", "0", "2@12:commit", "2", 13, "commit", "spawn");
}

fn restarts(grid: &str, spares: &str, kill: &str) {
    qr().restarts(grid, spares, kill);
}

#[test]
fn a_kill_before_the_checksums_exist_restarts_the_call() {
    // (The last: killed before the arguments are agreed on.)
    for &(grid, spares, kill) in
        harness::cases!([("2x2", "0", "1@0:encode"), ("2x3", "1", "0@0:encode"), ("2x2", "0", "2@0:args")], core = 1)
    {
        restarts(grid, spares, kill);
    }
    if !cfg!(feature = "full-tests") {
        return;
    }
    // With --compare the restarted run is the run with the failure, not a
    // failure-free sample.
    let (out, json) = ftla(&["--grid", "1x2", "--kill", "1@0:encode", "--compare"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let c = report(json, &out).compare.expect("compare");
    let with = c.ft_with_failure_time_s.expect("a run with the failure");
    assert!(with > 0.0 && c.ft_time_s < with, "{c:?}");
}

#[cfg(feature = "full-tests")]
#[test]
fn a_process_holding_no_rows_is_rebuilt_too() {
    // 6 rows in 8-blocks: process row 1 of the 2x2 grid holds none; its
    // blocks (and checksum copies) are empty but still take part.
    let args = ["--grid", "2x2", "--m", "6", "--n", "40", "--nb", "8", "--kill", "2@0:update", "--check", "--verify"];
    let (out, json) = Ft::new("qr", &[]).run(&args);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(r.ok && residuals_pass(&r), "{r:?}");
    assert_eq!(r.recoveries.as_ref().map(|v| v[0].ranks.clone()), Some(vec![2]), "{r:?}");
}

#[test]
fn a_hot_spare_takes_over_on_a_2x3_grid() {
    survives("2x3", "1", "4@7:update", "4", 7, "update", "spare");
}

// (The full tier: the core tier rebuilds two rows at once in LU's
// spawned_replacements case.)
#[cfg(feature = "full-tests")]
#[test]
fn two_simultaneous_kills_in_different_process_rows_are_both_rebuilt() {
    survives("2x2", "0", "1@4:update,2@4:update", "1, 2", 4, "update", "spawn");
}

fn second_kill_during_the_repair(point: &str, spares: &str, second: i32) {
    qr().second_kill_during_the_repair(point, spares, second);
}

fn every_way_at(point: &str) {
    qr().every_way_at(point);
}

#[cfg(feature = "full-tests")]
#[test]
fn a_loss_while_the_repair_revokes() {
    every_way_at("repair:*:revoke");
}

#[cfg(feature = "full-tests")]
#[test]
fn a_loss_while_the_repair_shrinks() {
    every_way_at("repair:*:shrink");
}

#[cfg(feature = "full-tests")]
#[test]
fn a_loss_right_after_the_spawn() {
    // (With a spare nothing is spawned: this point exists only without.)
    for second in [0, 2] {
        second_kill_during_the_repair("repair:*:spawn", "0", second);
    }
}

#[cfg(feature = "full-tests")]
#[test]
fn a_loss_after_the_merge_while_the_replacement_joins() {
    every_way_at("repair:*:merge");
}

#[cfg(feature = "full-tests")]
#[test]
fn a_loss_while_the_grid_communicators_are_split() {
    every_way_at("repair:*:split");
}

#[cfg(feature = "full-tests")]
#[test]
fn a_loss_while_the_log_is_handed_over() {
    every_way_at("region:*:share");
}

#[test]
fn two_kills_in_one_process_row_are_reported_as_unrecoverable_by_every_survivor() {
    qr().unrecoverable("2@3:panel,3@3:panel");
}

#[test]
fn verify_reports_a_flipped_element_and_passes_without_one() {
    let (out, json) = ftla(&["--grid", "2x2", "--verify", "--corrupt", "1@2"]);
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("checksums MISMATCH"), "{}", out.stdout);
    let check = report(json, &out).checksum_check.expect("verified");
    assert!(check.max_c_defect > 0.1 && !check.ok, "{check:?}");
    // (A clean run's verification: the full tier; the core tier's
    // `--verify` runs pass in cof.rs.)
    if cfg!(feature = "full-tests") {
        let (out, json) = ftla(&["--grid", "2x2", "--verify"]);
        assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
        let check = report(json, &out).checksum_check.expect("verified");
        assert!(check.max_c_defect <= check.tolerance && check.ok, "{check:?}");
    }
}

#[test]
fn compare_reports_plain_and_failure_free_times_from_the_same_run() {
    // (A layout whose model is not the default's: the failure-free runs
    // are compared in the run's own layout.)
    let rotating = ["--layout", "rotating", "--checksums", "1"];
    let args = [&["--grid", "1x3", "--kill", "1@3:update", "--compare", "--reps", "2"][..], &rotating].concat();
    let (out, json) = ftla(&args);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert_eq!(r.ft, Some(true), "{r:?}");
    let model = r.overhead_model.expect("a model");
    let c = r.compare.expect("compare");
    assert_eq!(c.ft_overhead_model, model, "the failure-free runs took another layout: {c:?}");
    assert!(out.stdout.contains(&format!("model +{:.1} %", 100.0 * model)), "{}", out.stdout);
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

fn refused(args: &[&str], why: &str) {
    qr().refused(args, why);
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

#[cfg(feature = "full-tests")]
#[test]
fn a_wide_matrix_whose_last_panel_is_partial_is_rebuilt_after_it() {
    // 100×200 in 16-blocks: the last panel factors 4 of block column 6's
    // 16 columns; rank 2 holds part of that mixed block and dies after it.
    let args =
        ["--grid", "2x2", "--m", "100", "--n", "200", "--nb", "16", "--kill", "2@6:commit", "--check", "--verify"];
    let (out, json) = Ft::new("qr", &[]).run(&args);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    let rec = r.recoveries.clone().unwrap_or_default();
    assert!(rec.len() == 1 && rec[0].ranks == [2] && rec[0].step == 7, "{r:?}");
    assert!(residuals_pass(&r), "{r:?}");
    let check = r.checksum_check.expect("verified");
    assert!(check.max_d_defect <= check.tolerance, "{check:?}");
}
