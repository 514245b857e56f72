//! The `ftla` command line: help, argument errors (before anything is
//! launched), and real `ftla demo` / `ftla repair` runs with hard timeouts.

use blacs_ft::launch::{run_with_timeout, Captured};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

static SERIAL: Mutex<()> = Mutex::new(());

fn ftla(args: &[&str]) -> Captured {
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ftla"));
    cmd.args(args).env_remove("FTLA_KILL");
    let out = run_with_timeout(cmd, Duration::from_secs(150)).expect("run ftla");
    assert!(!out.timed_out, "ftla hung:\n{}\n{}", out.stdout, out.stderr);
    out
}

#[test]
fn help_lists_every_command_and_option() {
    let top = ftla(&["--help"]);
    assert_eq!(top.code, Some(0));
    for c in ["demo", "grid-demo", "repair", "qr", "lu", "baseline"] {
        assert!(top.stdout.contains(&format!("  {c} ")), "{}", top.stdout);
    }
    let rep = ftla(&["repair", "--help"]);
    for o in ["--grid PxQ", "--spares S", "--kill R[,R...]", "--reps K", "--json FILE", "--timeout SECS"] {
        assert!(rep.stdout.contains(o), "missing {o}:\n{}", rep.stdout);
    }
}

#[test]
fn bad_arguments_fail_fast_with_a_clear_message() {
    for (args, msg) in [
        (vec!["repair", "--grid", "2"], "--grid wants PxQ"),
        (vec!["repair", "--grid", "2x2", "--kill", "7"], "rank 7 is not in the 2x2 grid"),
        (vec!["repair", "--kill", "0,1,2,3"], "some must survive"),
        (vec!["repair", "--reps", "0"], "--reps must be"),
        (vec!["repair", "--bogus"], "unknown option --bogus"),
        (vec!["grid-demo", "--step", "9"], "--step 9 must be below --steps 4"),
        (vec!["demo", "--grid", "2x1"], "needs at least 2 process columns"),
        (vec!["qr", "--n", "10", "--kill", "1@2:panel"], "--kill needs --ft"),
        (vec!["lu", "--n", "10", "--ft"], "--ft is available for qr only"),
        (vec!["frobnicate"], "unknown command"),
    ] {
        let out = ftla(&args);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(msg), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn grid_demo_kills_a_rank_and_the_repaired_grid_computes_correctly() {
    let out = ftla(&["grid-demo", "--timeout", "120"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("injecting SIGKILL into rank 1 at demo:2"), "{}", out.stderr);
    assert!(out.stdout.contains("rank 1 is a new process"), "{}", out.stdout);
    assert!(out.stdout.contains("repaired (spawn)"), "{}", out.stdout);
    assert!(out.stdout.contains("demo result: ok"), "{}", out.stdout);
}

fn json_number(text: &str, key: &str) -> f64 {
    let at = text.find(&format!("\"{key}\": ")).unwrap_or_else(|| panic!("no {key} in {text}"));
    let rest = &text[at + key.len() + 4..];
    let end = rest.find([',', '\n', '}']).unwrap_or(rest.len());
    rest[..end].trim().parse().unwrap_or_else(|_| panic!("{key} is not a number in {text}"))
}

#[test]
fn repair_times_each_phase_and_writes_json() {
    let path = std::env::temp_dir().join(format!("ftla-repair-{}.json", std::process::id()));
    let p = path.to_str().unwrap();
    // One spare: the first repetition hands over to it, the second spawns.
    let out = ftla(&[
        "repair",
        "--grid",
        "2x2",
        "--spares",
        "1",
        "--reps",
        "2",
        "--kill",
        "2",
        "--json",
        p,
        "--timeout",
        "120",
    ]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let text = std::fs::read_to_string(&path).expect("json written");
    let _ = std::fs::remove_file(&path);
    for key in [
        "\"command\": \"repair\"",
        "\"grid\": [2, 2]",
        "\"ok\": true",
        "\"mode\": \"spare\"",
        "\"mode\": \"spawn\"",
        "\"killed\": [2]",
    ] {
        assert!(text.contains(key), "missing {key}:\n{text}");
    }
    for key in ["detect_ms", "revoke_ms", "shrink_ms", "spawn_ms", "merge_ms", "split_ms", "total_ms"] {
        let v = json_number(&text, key);
        assert!((0.0..60_000.0).contains(&v), "{key} = {v}");
    }
    let median = json_number(&text, "median_total_ms");
    assert!(median > 0.0, "{text}");
    assert_eq!(text.matches("\"total_ms\"").count(), 2, "{text}");
    assert!(out.stdout.contains("repair 2/2"), "{}", out.stdout);
}

#[test]
fn the_qr_demo_survives_a_kill_and_reports_the_recovery_and_overhead() {
    // A smaller matrix than the default keeps the test short.
    let out = ftla(&["demo", "--n", "512", "--timeout", "120"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("injecting SIGKILL into rank 1 at qr:4:update"), "{}", out.stderr);
    for s in [
        "recovered ranks [1] at step 4 (update phase) by spawn",
        "residual",
        "orthogonality",
        "checksums consistent",
        "overhead: plain QR",
    ] {
        assert!(out.stdout.contains(s), "missing `{s}`:\n{}", out.stdout);
    }
}
