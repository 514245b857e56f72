//! Replacements started by `MPI_Comm_spawn`, lost in their turn, under
//! real SIGKILLs: two processes of different rows lost at once are
//! replaced by one spawn of two; when one of those replacements dies later
//! it is replaced again (Open MPI 5.0 aborts a spawned job at its first
//! loss unless the job is recoverable, which `ftla`'s launcher makes every
//! job), and a spawn that cannot complete ends the job within seconds of
//! its measured bound, said by every survivor.

// (The helpers of full-tier tests are unused in the core tier.)
#![cfg_attr(not(feature = "full-tests"), allow(unused_imports, dead_code))]

mod common;

use common::{residuals_pass, run_ft_with_json as run};
use std::time::Duration;

/// Two processes of different rows die at `first` (one spawn of two
/// replacements), then the replacement of `again` dies: three
/// recoveries' worth of losses, rebuilt in two repairs, and the result is
/// right.
fn two_at_once_then_one_of_their_replacements(op: &str, shape: &[&str], kills: &str, first: [i32; 2], again: i32) {
    with_spares(op, shape, "0", kills, first, again);
}

/// [`two_at_once_then_one_of_their_replacements`] with `spares` hot
/// spares (one of them and a spawn replace the first two: the repair's
/// mode is the spawn's).
fn with_spares(op: &str, shape: &[&str], spares: &str, kills: &str, first: [i32; 2], again: i32) {
    let mut args = shape.to_vec();
    args.extend(["--spares", spares, "--kill", kills]);
    let (out, json, took) = run(op, &args, &[]);
    assert_eq!(out.code, Some(0), "{op} {kills} ({took:?}):\n{}\n{}", out.stdout, out.stderr);
    let r: ftla_bench::report::FactorReport = serde_json::from_str(&json.expect("a report")).expect("report");
    assert!(r.ok && residuals_pass(&r), "{op} {kills}: {r:?}");
    let recoveries = r.recoveries.clone().unwrap_or_default();
    let rebuilt: Vec<(Vec<i32>, String)> = recoveries.iter().map(|x| (x.ranks.clone(), x.mode.clone())).collect();
    assert_eq!(
        rebuilt,
        [(first.to_vec(), "spawn".to_string()), (vec![again], "spawn".to_string())],
        "{op} {kills}: {r:?}"
    );
    // Each repair takes about a second (a spawn); never a stalled minute.
    assert!(took < Duration::from_secs(40), "{op} {kills}: {took:?}");
}

#[test]
fn lu_a_replacement_of_a_two_process_spawn_lost_later_is_replaced_again() {
    two_at_once_then_one_of_their_replacements(
        "lu",
        &["--grid", "2x3", "--nb", "32", "--n", "185"],
        "5@lu:2:panel,0@lu:2:panel,5@lu:4:update",
        [0, 5],
        5,
    );
}

#[cfg(feature = "full-tests")]
#[test]
fn qr_a_replacement_of_a_two_process_spawn_lost_later_is_replaced_again() {
    two_at_once_then_one_of_their_replacements(
        "qr",
        &["--grid", "2x2", "--nb", "32", "--n", "400"],
        "1@qr:2:panel,2@qr:2:panel,1@qr:5:update",
        [1, 2],
        1,
    );
}

#[cfg(feature = "full-tests")]
#[test]
fn a_two_process_spawn_made_by_a_loss_during_the_repair_survives_a_later_loss() {
    // Rank 0 dies while the grid repairs rank 5's loss: the retry spawns both.
    two_at_once_then_one_of_their_replacements(
        "lu",
        &["--grid", "2x3", "--nb", "32", "--n", "185"],
        "5@lu:2:panel,0@repair:*:shrink,5@lu:3:update",
        [0, 5],
        5,
    );
}

#[cfg(feature = "full-tests")]
#[test]
fn grid_rank_0_replaced_twice_reports_every_recovery() {
    // A spare and a spawn replace ranks 0 and 5; then rank 0's replacement
    // dies: the report, written by rank 0's second replacement, names
    // the recoveries from before it joined too.
    with_spares(
        "lu",
        &["--grid", "2x3", "--nb", "32", "--n", "185"],
        "1",
        "5@lu:2:panel,0@lu:2:panel,0@lu:4:update",
        [0, 5],
        0,
    );
}

#[cfg(feature = "full-tests")]
#[test]
fn a_spawn_that_cannot_complete_ends_the_job_within_its_measured_bound() {
    // The first spawn completes (about a second); the replacement of the
    // second never starts: the survivors give up 15 s later (10 × the
    // first spawn, at least 15 s) and the launcher ends the rest.
    let args = ["--grid", "2x2", "--nb", "32", "--n", "400", "--spares", "0", "--kill", "1@2:panel,1@6:update"];
    let (out, _, took) = run("lu", &args, &[(blacs_ft::STALL_SPAWN_VAR, "2")]);
    assert_eq!(out.code, Some(blacs_ft::launch::EXIT_UNRECOVERABLE), "({took:?})\n{}\n{}", out.stdout, out.stderr);
    // Said by every survivor (grid ranks 0, 2 and 3), naming the call and
    // the bound: 10 × the first spawn, at least 15 s (more when the first
    // spawn took over 1.5 s on a loaded machine), at most the 60 s cap.
    let mut bounds = Vec::new();
    for rank in [0, 2, 3] {
        let said = format!(
            "unrecoverable failure: grid rank {rank}: MPI_Comm_spawn of the replacement of grid rank 1 (bound "
        );
        let at = out.stderr.find(&said).unwrap_or_else(|| panic!("{said}:\n{}", out.stderr)) + said.len();
        let bound: f64 = out.stderr[at..].split(' ').next().and_then(|b| b.parse().ok()).expect("the bound in seconds");
        assert!((15.0..=60.0).contains(&bound), "bound {bound} s:\n{}", out.stderr);
        bounds.push(bound);
    }
    let bound = bounds.iter().copied().fold(0.0, f64::max);
    assert!(out.stderr.contains("a repair stalled"), "{}", out.stderr);
    assert!(!out.stderr.contains("every process of the grid was lost"), "{}", out.stderr);
    assert!(took < Duration::from_secs_f64(bound + 25.0), "{took:?} (bound {bound} s):\n{}", out.stderr);
}
