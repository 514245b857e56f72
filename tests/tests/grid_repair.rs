//! The grid repairs itself after real SIGKILLs: every test is a real
//! `mpiexec --with-ft ulfm` launch (4–6 oversubscribed ranks) with a hard
//! timeout, and asserts on what every rank printed.

// (The helpers of full-tier tests are unused in the core tier.)
#![cfg_attr(not(feature = "full-tests"), allow(unused_imports, dead_code))]

use harness::Captured;
use std::process::Command;

fn scenario(args: &[&str], kill: &str, extra_env: &[(&str, &str)]) -> Captured {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_grid-scenarios"));
    cmd.args(args).args(["--timeout", "120"]).env("FTLA_KILL", kill);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    harness::launch(cmd)
}

fn assert_all_ranks_ok(out: &Captured, nranks: i32) {
    assert_eq!(out.code, Some(0), "job failed:\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    for r in 0..nranks {
        assert!(
            out.stdout.contains(&format!("RANK {r} ok")),
            "rank {r} did not finish ok:\n{}\n{}",
            out.stdout,
            out.stderr
        );
    }
}

#[cfg(feature = "full-tests")]
#[test]
fn every_rank_of_a_2x2_grid_killed_in_turn_is_replaced_in_place() {
    for victim in 0..4 {
        let out = scenario(&["check", "--grid", "2x2", "--steps", "3"], &format!("{victim}@check:1:verify"), &[]);
        assert_all_ranks_ok(&out, 4);
        assert!(
            out.stdout.contains(&format!("epoch=1 mode=spawn killed=[{victim}]")),
            "victim {victim}:\n{}",
            out.stdout
        );
        assert!(out.stdout.contains(&format!("REPLACEMENT rank={victim} epoch=1 mode=spawn")), "{}", out.stdout);
        // The step that failed was redone and the last one ran on the repaired grid.
        assert!(out.stdout.contains("STEP 1 ok epoch=1") && out.stdout.contains("STEP 2 ok epoch=1"), "{}", out.stdout);
        assert!(out.stderr.contains(&format!("injecting SIGKILL into rank {victim}")), "{}", out.stderr);
    }
}

#[test]
fn the_last_rank_of_a_2x3_grid_is_replaced() {
    let out = scenario(&["check", "--grid", "2x3", "--steps", "2"], "5@check:0:verify", &[]);
    assert_all_ranks_ok(&out, 6);
    assert!(out.stdout.contains("epoch=1 mode=spawn killed=[5]"), "{}", out.stdout);
}

#[test]
fn two_ranks_killed_at_once_are_both_replaced() {
    let out = scenario(&["check", "--grid", "2x2", "--steps", "3"], "1@check:1:verify,2@check:1:verify", &[]);
    assert_all_ranks_ok(&out, 4);
    assert!(out.stdout.contains("epoch=1 mode=spawn killed=[1, 2]"), "{}", out.stdout);
    assert!(out.stdout.contains("REPLACEMENT rank=1") && out.stdout.contains("REPLACEMENT rank=2"), "{}", out.stdout);
}

#[test]
fn a_kill_during_the_repair_restarts_the_repair_and_replaces_both() {
    let out = scenario(&["check", "--grid", "2x2", "--steps", "3"], "3@check:1:verify,2@repair:*:shrink", &[]);
    assert_all_ranks_ok(&out, 4);
    assert!(out.stdout.contains("killed=[2, 3] attempts=2"), "{}", out.stdout);
    assert!(out.stderr.contains("injecting SIGKILL into rank 2 at repair:1:shrink"), "{}", out.stderr);
}

#[test]
fn a_hot_spare_takes_the_dead_rank_without_a_spawn() {
    let out = scenario(&["check", "--grid", "2x2", "--spares", "2", "--steps", "3"], "3@check:1:verify", &[]);
    assert_all_ranks_ok(&out, 4);
    assert!(out.stdout.contains("epoch=1 mode=spare killed=[3]"), "{}", out.stdout);
    assert!(out.stdout.contains("REPLACEMENT rank=3 epoch=1 mode=spare"), "{}", out.stdout);
    // The spare that was not needed is released at the end.
    assert_eq!(out.stdout.matches("SPARE released").count(), 1, "{}", out.stdout);
}

#[test]
fn with_the_spares_used_up_the_rest_is_spawned() {
    let out = scenario(
        &["check", "--grid", "2x2", "--spares", "1", "--steps", "3"],
        "0@check:1:verify,2@check:1:verify",
        &[],
    );
    assert_all_ranks_ok(&out, 4);
    assert!(out.stdout.contains("epoch=1 mode=spawn killed=[0, 2]"), "{}", out.stdout);
    assert!(out.stdout.contains("mode=spare") && out.stdout.contains("mode=spawn"), "{}", out.stdout);
}

#[test]
fn a_failed_spawn_with_no_spare_is_a_clear_error_on_every_survivor() {
    let out = scenario(
        &["check", "--grid", "2x2", "--steps", "3"],
        "1@check:1:verify",
        &[("FTLA_REPLACEMENT_EXE", "/nonexistent/ftla-replacement")],
    );
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    for r in [0, 2, 3] {
        let line = out.stdout.lines().find(|l| l.starts_with(&format!("RANK {r} failed"))).unwrap_or("");
        assert!(
            line.contains("unrecoverable failure") && line.contains("no hot spare left"),
            "rank {r}: {}",
            out.stdout
        );
    }
}

#[test]
fn a_local_error_on_one_rank_reaches_every_rank_as_the_same_error() {
    let out = scenario(&["local-error", "--grid", "2x2", "--error-rank", "2"], "", &[]);
    assert_all_ranks_ok(&out, 4);
    for r in 0..4 {
        assert!(
            out.stdout.contains(&format!("ERROR rank={r} got: error on rank 2: invalid input on rank 2: N = -5")),
            "{}",
            out.stdout
        );
    }
}

#[test]
fn sends_run_while_their_sender_computes_a_failed_scope_returns_its_error_and_short_messages_are_refused() {
    let out = scenario(&["sends", "--grid", "2x2"], "", &[]);
    assert_all_ranks_ok(&out, 4);
    assert!(out.stdout.contains("SENDS received 6 in order"), "{}", out.stdout);
    assert!(out.stdout.contains("SENDS sent 6 reused=true"), "{}", out.stdout);
    assert!(out.stdout.contains("SENDS scope returned: invalid"), "{}", out.stdout);
    assert!(
        out.stdout.contains("SHORT unrecoverable=true")
            && out.stdout.contains("holds 10 elements where 11 were expected"),
        "a short message must be refused by recv_exact: {}",
        out.stdout
    );
    assert!(
        out.stdout.contains("EXCHANGE whole")
            && out.stdout.contains("EXCHANGE unrecoverable=true")
            && out.stdout.contains("(0, 0) with tag 0xa holds 10 elements where 11 were expected"),
        "a short half of an exchange must be refused: {}",
        out.stdout
    );
    for r in 0..4 {
        assert!(out.stdout.contains(&format!("ERROR rank={r} got: error on rank 0: invalid")), "{}", out.stdout);
    }
}

#[test]
fn bad_arguments_are_agreed_on_without_ulfm() {
    let out = scenario(&["agree-error", "--grid", "2x3", "--error-rank", "4", "--no-ft"], "", &[]);
    assert_all_ranks_ok(&out, 6);
    assert_eq!(
        out.stdout.matches("got: error on rank 4: argument 3 (NB) is -1 on rank 4").count(),
        6,
        "{}",
        out.stdout
    );
}

#[test]
fn an_mpi_run_without_ulfm_is_detected_and_repair_is_refused_clearly() {
    let out = scenario(&["ulfm-status", "--grid", "2x2", "--no-ft"], "", &[]);
    assert_all_ranks_ok(&out, 4);
    assert_eq!(out.stdout.matches("status=NotEnabled").count(), 4, "{}", out.stdout);
    assert!(out.stdout.contains("a lost process cannot be repaired in place"), "{}", out.stdout);
    let with_ft = scenario(&["ulfm-status", "--grid", "2x2"], "", &[]);
    assert_eq!(with_ft.stdout.matches("status=Available").count(), 4, "{}", with_ft.stdout);
}
