//! grid-sums, a program written as the README's Rust snippet is (its grid
//! joined with `GridOptions::default()`), started through the launcher
//! that `ftla launch` is (it relaunches itself under mpiexec with the same
//! forwarding of `FTLA_KILL`): the kill reaches it without the program
//! asking, and an unparsable `FTLA_KILL` is a clear error. Every job runs
//! under a hard timeout.

use harness::Captured;
use std::process::Command;

/// `grid-sums 2x2 3` with `FTLA_KILL = kill`.
fn grid_sums(kill: &str) -> Captured {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_grid-sums"));
    cmd.args(["2x2", "3"]).env("FTLA_KILL", kill);
    harness::launch(cmd)
}

#[test]
fn ftla_kill_reaches_a_program_on_the_default_grid_options() {
    let out = grid_sums("2@sums:1");
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    // Once: rank 2's replacement, which runs round 1 again, lives.
    assert_eq!(out.stderr.matches("injecting SIGKILL into rank 2 at sums:1").count(), 1, "{}", out.stderr);
    assert!(out.stdout.contains("grid-sums: 3 rounds ok after 1 repair(s)"), "{}", out.stdout);
}

#[test]
fn an_unparsable_ftla_kill_is_a_clear_error() {
    let out = grid_sums("2@x:y:z:w");
    assert_ne!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("invalid argument FTLA_KILL: `2@x:y:z:w`: too many fields"), "{}", out.stderr);
}
