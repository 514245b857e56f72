//! Cholesky (`pdpotrf`) on real process grids: every test is an `mpiexec`
//! launch of the `chol-checks` binary with a hard timeout, one at a time,
//! asserting on what the ranks printed. Residuals are ScaLAPACK's
//! (‖A − L·Lᵀ‖₁/(‖A‖₁·N·eps)) and must be below 16; small cases must also
//! give LAPACK DPOTRF's L, and the triangle that is not referenced must come
//! back untouched; `pdpotrs` and `pdposv` solve with ScaLAPACK's solve
//! residual below 16.

use harness::Captured;
use std::process::Command;

fn chol_checks(args: &[&str]) -> Captured {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_chol-checks"));
    cmd.args(args).args(["--timeout", "120"]);
    harness::launch(cmd)
}

/// Runs `check` on `grid` and asserts every case passed on every rank.
fn check_grid(grid: &str, cases: &[&str]) {
    let mut args = vec!["check", "--grid", grid];
    args.extend_from_slice(cases);
    let out = chol_checks(&args);
    assert_eq!(out.code, Some(0), "job failed:\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    let (p, q) = grid.split_once('x').unwrap();
    for r in 0..p.parse::<usize>().unwrap() * q.parse::<usize>().unwrap() {
        assert!(out.stdout.contains(&format!("RANK {r} ok")), "rank {r} did not finish:\n{}", out.stdout);
    }
    for case in cases {
        let (n, nb) = case.split_once(',').unwrap();
        let head = format!("CASE n={n} nb={nb} ");
        let line = out.stdout.lines().find(|l| l.starts_with(&head)).unwrap_or_else(|| {
            panic!("no result for case {case} on {grid}:\n{}", out.stdout);
        });
        assert!(line.ends_with(" ok") && line.contains("other_triangle=kept"), "{grid} {case}: {line}");
        assert!(line.contains("solve_lower=") && line.contains("posv="), "{grid} {case}: {line}");
    }
}

#[test]
fn factors_on_every_grid_shape_with_both_triangles() {
    // Edge blocks, one block, N below NB, and LAPACK's L on small cases.
    check_grid("1x1", &["37,8", "200,32"]);
    check_grid("2x3", &["1,4", "5,8", "37,4", "131,16", "300,32"]);
    check_grid("3x2", &["64,8", "203,16"]);
}

#[test]
fn a_matrix_that_is_not_positive_definite_and_bad_input_are_agreed() {
    // (One process row or column: the look-ahead's column finds the
    // minor while the others still update.)
    for grid in ["1x3", "3x1"] {
        let out = chol_checks(&["errors", "--grid", grid]);
        assert_eq!(out.code, Some(0), "{grid}:\n{}\n{}", out.stdout, out.stderr);
        assert!(!out.stdout.contains("same=false"), "{grid}:\n{}", out.stdout);
    }
    let out = chol_checks(&["errors", "--grid", "2x2"]);
    assert_eq!(out.code, Some(0), "job failed:\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    for (case, info) in [
        ("minor-mid-L", 10),
        ("minor-mid-U", 10),
        ("minor-start-L", 13),
        ("minor-last-U", 40),
        ("square", -2),
        ("mbnb", -606),
        ("nan-lower", -3),
        ("nan-upper-not-read", 0),
        ("brows", -1103),
        ("bmb", -1106),
        ("posv-minor", 1),
        ("posv-nan", -4),
        ("empty", 0),
    ] {
        let want = format!("AGREE case={case} same=true info={info}");
        assert!(out.stdout.contains(&want), "{want}:\n{}", out.stdout);
    }
}
