//! pdgeqrf's panel methods on real multi-rank grids: TSQR with Householder
//! reconstruction, CholeskyQR2 (and its TSQR fallback) and the Householder
//! panel pass ScaLAPACK's residual and orthogonality checks on the
//! generated kinds and on the hard cases of a panel (graded columns,
//! Kahan's matrix, rank deficiency, scaling near overflow and underflow),
//! on grids with several process rows.

use std::process::Command;

const CASES: &[&str] = &[
    "200x40x8",         // tall, several panels
    "37x23x4",          // ragged blocks
    "23x37x4",          // M < N
    "9x9x32",           // one partial block: process row 1 holds nothing
    "150x30x8:cond1e6", // ill-conditioned
    "120x48x8:graded",  // columns graded over 12 decades
    "64x64x8:kahan",    // Kahan
    "160x40x8:rankdef", // rank 20
    "100x30x8:big",     // 1e300
    "100x30x8:tiny",    // 1e-300
    "60x40x8:dd",       // diagonally dominant
    "150x121x4:graded", // many panels (merged in groups with one process column)
    "124x124x4:kahan",
    "160x120x4:rankdef",
];

fn assert_cases_pass(grid: &str, panel: &str) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_qr-checks"));
    cmd.args(["--grid", grid, "--timeout", "120", "--panel", panel]).args(CASES).env_remove("FTLA_KILL");
    let out = harness::launch(cmd);
    assert_eq!(out.code, Some(0), "grid {grid}, panel {panel}:\n{}\n{}", out.stdout, out.stderr);
    for case in CASES {
        let line = out.stdout.lines().find(|l| l.starts_with(&format!("CASE {case} "))).unwrap_or("");
        assert!(line.ends_with(" ok"), "grid {grid}, panel {panel}, case {case}: `{line}`\n{}", out.stdout);
    }
}

#[test]
fn tsqr_panels_pass_the_residual_checks_on_hard_cases_on_2x1() {
    assert_cases_pass("2x1", "tsqr");
}

/// The well-conditioned cases take CholeskyQR2, the ill-conditioned,
/// rank-deficient and out-of-range ones (its Gram matrix refused) TSQR on
/// three process rows.
#[test]
fn cholqr2_panels_and_their_fallback_pass_the_same_hard_cases_on_3x2() {
    assert_cases_pass("3x2", "cholqr2");
}

#[test]
fn householder_panels_pass_the_same_hard_cases_on_2x2() {
    assert_cases_pass("2x2", "householder");
}
