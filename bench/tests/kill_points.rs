//! When kill points fire (`ftla qr --ft`): a point without `/EPOCH` fires
//! the first time its rank reaches it, in whatever epoch, and only once; a
//! point that never fired is named at the end; `FTLA_KILL` reaches ftla's
//! own commands, merged with `--kill`; the application's point between
//! the factorization and the solve (`R@app:0`). Every job runs under a
//! hard timeout.

// (The helpers of full-tier tests are unused in the core tier.)
#![cfg_attr(not(feature = "full-tests"), allow(unused_imports, dead_code))]

mod common;

use common::{ftla_with, report, residuals_pass, Ft};

fn qr() -> Ft {
    Ft::new("qr", &["--check", "--verify"])
}

/// The ranks of every recovery of a report, in order.
fn recovered(r: &ftla_bench::report::FactorReport) -> Vec<Vec<i32>> {
    r.recoveries.as_ref().expect("recoveries").iter().map(|e| e.ranks.clone()).collect()
}

#[cfg(feature = "full-tests")]
#[test]
fn points_without_an_epoch_fire_in_later_epochs_once_each() {
    // Epochs 0, 1 and 2: before, the later two named epoch 0, long over.
    let (out, json) =
        qr().run(&["--grid", "2x3", "--n", "1200", "--nb", "32", "--kill", "1@5:update,4@15:panel,2@25:commit"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert_eq!(recovered(&r), [vec![1], vec![4], vec![2]], "{}", out.stdout);
    assert!(r.ok && residuals_pass(&r), "{}", out.stdout);
    // Each point fired once: its replacement, which reaches it again, lives.
    for point in ["rank 1 at qr:5:update", "rank 4 at qr:15:panel", "rank 2 at qr:25:commit"] {
        assert_eq!(out.stderr.matches(point).count(), 1, "{point}: {}", out.stderr);
    }
    assert!(!out.stderr.contains("never fired"), "{}", out.stderr);
}

#[test]
fn a_point_that_never_fired_is_named() {
    // Rank 1's points are armed in the order listed: after step 3 the
    // factorization never comes back to step 1.
    let (out, json) = qr().run(&["--grid", "1x2", "--n", "256", "--nb", "32", "--kill", "1@3:update,1@1:panel"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(recovered(&report(json, &out)), [vec![1]], "{}", out.stdout);
    assert_eq!(out.stderr.matches("never fired").count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("warning: kill point 1@qr:1:panel never fired"), "{}", out.stderr);
}

#[test]
fn ftla_kill_reaches_ftla_qr_and_merges_with_kill() {
    let json = std::env::temp_dir().join(format!("ftla-kill-env-{}.json", std::process::id()));
    let j = json.display().to_string();
    let base = ["qr", "--ft", "--grid", "1x2", "--n", "256", "--nb", "32", "--check", "--json", &j];
    let read = || -> ftla_bench::report::FactorReport {
        let text = std::fs::read_to_string(&json).expect("JSON report");
        serde_json::from_str(&text).expect("a report")
    };
    let out = ftla_with(&base, &[("FTLA_KILL", "1@qr:3:update")]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(recovered(&read()), [vec![1]], "{}", out.stdout);
    // Both lists, FTLA_KILL's first: rank 1 at step 3 (epoch 0), then its
    // replacement at step 6 (epoch 1).
    let mut with_kill = base.to_vec();
    with_kill.extend(["--kill", "1@6:update"]);
    let out = ftla_with(&with_kill, &[("FTLA_KILL", "1@qr:3:update")]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(recovered(&read()), [vec![1], vec![1]], "{}", out.stdout);
    assert!(
        out.stdout.contains("kill points armed: 1@qr:3:update (FTLA_KILL), 1@qr:6:update (--kill)"),
        "{}",
        out.stdout
    );
    let _ = std::fs::remove_file(&json);
}

#[cfg(feature = "full-tests")]
#[test]
fn the_application_point_fires_between_the_factorization_and_the_solve_once() {
    // Rank 1 dies in the program's own work after pdgetrf_ft; the
    // survivors meet the loss at pdgetrs_ft's start and solve again with
    // the kept factors. Its replacement runs the program from the top and
    // passes the point again without dying; its next point, in the solve
    // made again, fires there (epoch 1) and is rebuilt.
    let lu = Ft::new("lu", &["--grid", "2x2", "--n", "256", "--nb", "32", "--solve", "--nrhs", "2", "--check"]);
    let (out, json) = lu.run(&["--verify", "--kill", "1@app:0,1@getrs:5:update"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.stderr.matches("rank 1 at app:0:work").count(), 1, "{}", out.stderr);
    assert!(out.stdout.contains("solving again with the kept factors: rank(s) [1]"), "{}", out.stdout);
    let r = report(json, &out);
    assert_eq!(r.restarts, Some(1), "{}", out.stdout);
    assert_eq!(recovered(&r), [vec![1]], "{}", out.stdout);
    assert!(r.ok && residuals_pass(&r) && r.solve_residual.is_some_and(|v| v < 16.0), "{}", out.stdout);
    assert!(!out.stderr.contains("never fired"), "{}", out.stderr);
    // The point belongs to lu --solve: a step other than 0, or a job
    // without a solve, is a usage error.
    for (args, says) in [
        (&["--solve", "--kill", "1@app:1"][..], "one point, R@app:0"),
        (&["--kill", "1@app:0"][..], "getrs or app with --solve"),
    ] {
        let out = ftla_with(&[&["lu", "--ft", "--grid", "2x2", "--n", "64", "--nb", "16"][..], args].concat(), &[]);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn a_bad_or_unused_ftla_kill_is_a_usage_error() {
    let cases: [(&[&str], &str, &str); 5] = [
        (&["qr", "--ft", "--grid", "1x2", "--n", "64"], "1@x:y:z:w", "FTLA_KILL: `1@x:y:z:w`: too many fields"),
        (&["qr", "--ft", "--grid", "1x2", "--n", "64"], "5@qr:1:update", "rank 5 is not in the 1x2 grid"),
        (&["qr", "--grid", "1x2", "--n", "64"], "1@qr:1:update", "kill points need --ft"),
        // Commands with kills of their own do not read it.
        (&["repair", "--grid", "2x2"], "1@2", "ftla repair does not read it"),
        (
            &["scale", "--op", "qr", "--mode", "strong", "--ranks", "2", "--n", "64"],
            "1@2",
            "ftla scale does not read it",
        ),
    ];
    for (args, kill, says) in cases {
        let out = ftla_with(args, &[("FTLA_KILL", kill)]);
        assert_eq!(out.code, Some(2), "{args:?} {kill}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{args:?} {kill}: {}", out.stderr);
    }
}
