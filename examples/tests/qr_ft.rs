//! The README's Rust program (`qr-ft`) under mpiexec with ULFM, as
//! `ftla launch` starts it (the same command line, forwarding of
//! `FTLA_KILL` and outcome file): with a kill, a replacement joins and the
//! QR completes with one recovery; every job runs under a hard timeout.
//! (mpiexec's own exit code says that a process was killed: the outcome
//! the program reports is what `ftla launch` goes by.)

use blacs_ft::launch::{mpiexec_command, Relaunch};
use harness::Captured;

/// `qr-ft` on 4 processes with `FTLA_KILL = kill`, and
/// the outcome it reported.
fn qr_ft(kill: &str) -> (Captured, String) {
    let program = vec![env!("CARGO_BIN_EXE_qr-ft").to_string()];
    let job = Relaunch { nprocs: 4, timeout: None, ulfm: true, cof: None, program: Some(program), grid: None };
    let mut cmd = mpiexec_command(&job);
    let status = std::env::temp_dir().join(format!("ftla-example-qr-ft-{}.status", std::process::id()));
    let _ = std::fs::remove_file(&status);
    cmd.env("FTLA_KILL", kill).env("FTLA_STATUS_FILE", &status);
    let out = harness::launch(cmd);
    let outcome = std::fs::read_to_string(&status).unwrap_or_default();
    let _ = std::fs::remove_file(&status);
    (out, outcome)
}

#[test]
fn the_readme_program_survives_a_kill_without_asking_for_it() {
    let (out, outcome) = qr_ft("1@qr:4:update");
    assert!(outcome.starts_with("ok QR done"), "outcome `{outcome}`:\n{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("injecting SIGKILL into rank 1 at qr:4:update"), "{}", out.stderr);
    assert!(out.stdout.contains("QR done, 1 recovery(ies)"), "{}", out.stdout);
}
