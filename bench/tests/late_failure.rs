//! A process that learns of a failure after the others left a collective
//! (they completed it without waiting for this process's share of the
//! result) meets them at the next agreement, and they all repair together:
//! never one process repairing alone while the others wait for it at a
//! commit point (a hang until the job's timeout). Under load this happens
//! by itself at the end of a recovery, rarely; `FTLA_TEST_LATE_REVOKE`
//! makes it happen every time (one rank revokes the grid right after the
//! last collective). The losses are real SIGKILLs.

// (The helpers of full-tier tests are unused in the core tier.)
#![cfg_attr(not(feature = "full-tests"), allow(unused_imports, dead_code))]

mod common;

use common::{fresh_dir, residuals_pass, run_ft_with_json};
use ftla_bench::report::FactorReport;
use std::time::Duration;

/// Runs `ftla OP --ft --check --json F ARGS` with `FTLA_TEST_LATE_REVOKE`
/// set to `late`; returns the output, the report and the wall time.
fn run(op: &str, args: &[&str], late: &str) -> (harness::Captured, Option<FactorReport>, Duration) {
    let (out, text, took) = run_ft_with_json(op, args, &[(blacs_ft::LATE_REVOKE_VAR, late)]);
    (out, text.map(|t| serde_json::from_str(&t).expect("a report")), took)
}

/// The run ended well, in seconds, with the late revocation said, and
/// its recoveries are (ranks, mode).
fn recovered(out: &harness::Captured, report: Option<FactorReport>, took: Duration, want: &[(Vec<i32>, &str)]) {
    assert_eq!(out.code, Some(0), "({took:?})\n{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("FTLA_TEST_LATE_REVOKE: grid rank"), "{}", out.stderr);
    let r = report.expect("a report");
    assert!(r.ok && residuals_pass(&r), "{r:?}");
    let got: Vec<(Vec<i32>, String)> =
        r.recoveries.clone().unwrap_or_default().iter().map(|x| (x.ranks.clone(), x.mode.clone())).collect();
    let want: Vec<(Vec<i32>, String)> = want.iter().map(|(r, m)| (r.clone(), m.to_string())).collect();
    assert_eq!(got, want, "{r:?}");
    assert!(took < Duration::from_secs(40), "{took:?}");
}

#[test]
fn a_rank_that_fails_the_end_of_a_recovery_alone_brings_every_rank_back_to_the_repair() {
    // Rank 2 is lost at step 5; rank 4 alone sees the recovery's end fail.
    // One recovery: the repair is done again (nothing more is lost), and
    // its mode stays the spawn's.
    let args = ["--grid", "2x3", "--n", "161", "--nb", "16", "--spares", "0", "--kill", "2@5:update"];
    let (out, report, took) = run("qr", &args, "4");
    recovered(&out, report, took, &[(vec![2], "spawn")]);
}

#[cfg(feature = "full-tests")]
#[test]
fn a_rank_that_fails_the_end_of_a_periodic_save_alone_brings_every_rank_back_to_a_repair() {
    // No process is lost: the others have gone on to the next step, and
    // meet rank 3 at its commit point; the repair finds nothing to replace.
    let dir = fresh_dir("late-save");
    let d = dir.display().to_string();
    let args = ["--grid", "2x2", "--n", "400", "--nb", "32", "--checkpoint-every", "0", "--checkpoint-dir", &d];
    let (out, report, took) = run("lu", &args, "3@checkpoint");
    let _ = std::fs::remove_dir_all(&dir);
    recovered(&out, report, took, &[(vec![], "none")]);
}
