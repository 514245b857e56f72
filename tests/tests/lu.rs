//! LU (`pdgetrf` / `pdgetrs`) on real process grids: every test is an
//! `mpiexec` launch of the `lu-checks` binary with a hard timeout, one at a
//! time, asserting on what the ranks printed. Residuals are ScaLAPACK's
//! (`‖PA − LU‖₁/(‖A‖₁·max(M,N)·eps)`, `‖AX − B‖₁/(‖A‖₁·‖X‖₁·N·eps)`) and
//! must be below 16; small cases must also pick LAPACK DGETRF's pivots.

// (The helpers of full-tier tests are unused in the core tier.)
#![cfg_attr(not(feature = "full-tests"), allow(unused_imports, dead_code))]

use harness::Captured;
use std::collections::HashMap;
use std::process::Command;

fn lu_checks(args: &[&str]) -> Captured {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lu-checks"));
    cmd.args(args).args(["--timeout", "120"]);
    harness::launch(cmd)
}

/// The `key=value` fields of a line.
fn fields(line: &str) -> HashMap<&str, &str> {
    line.split_whitespace().filter_map(|w| w.split_once('=')).collect()
}

/// Runs `check` on `grid` and asserts every case passed.
fn check_grid(grid: &str, cases: &[&str]) {
    check_grid_with(grid, &[], cases);
}

/// [`check_grid`] with extra `lu-checks` options.
fn check_grid_with(grid: &str, options: &[&str], cases: &[&str]) {
    let mut args = vec!["check", "--grid", grid];
    args.extend_from_slice(options);
    args.extend_from_slice(cases);
    let out = lu_checks(&args);
    assert_eq!(out.code, Some(0), "job failed:\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    let (p, q) = grid.split_once('x').unwrap();
    let ranks: usize = p.parse::<usize>().unwrap() * q.parse::<usize>().unwrap();
    for r in 0..ranks {
        assert!(out.stdout.contains(&format!("RANK {r} ok")), "rank {r} did not finish:\n{}", out.stdout);
    }
    for case in cases {
        let parts: Vec<&str> = case.split(',').collect();
        let kind = parts.get(3).copied().unwrap_or("uniform");
        let head = format!("CASE m={} n={} nb={} kind={kind} ", parts[0], parts[1], parts[2]);
        let line = out.stdout.lines().find(|l| l.starts_with(&head)).unwrap_or_else(|| {
            panic!("no result for case {case} on {grid}:\n{}", out.stdout);
        });
        assert!(line.ends_with(" ok"), "{grid} {case}: {line}");
        let f = fields(line);
        for key in ["lu_residual", "solve_residual", "trans_residual"] {
            match f.get(key) {
                Some(&"-") => assert_ne!(parts[0], parts[1], "{grid} {case}: square case without {key}: {line}"),
                Some(v) => {
                    let v: f64 = v.parse().unwrap_or(f64::INFINITY);
                    assert!(v < 16.0, "{grid} {case}: {key} = {v}: {line}");
                }
                None => panic!("{grid} {case}: no {key}: {line}"),
            }
        }
        assert_ne!(f.get("pivots"), Some(&"differ"), "{grid} {case}: pivots differ from LAPACK: {line}");
    }
}

/// Shapes every grid runs: tiny, empty, M > N, M < N, sizes that are not
/// multiples of NB, NB = 1, several matrix kinds.
const COMMON: &[&str] = &[
    "1,1,1",
    "2,2,1",
    "2,2,3",
    "0,5,2",
    "5,0,2",
    "0,0,3",
    "5,5,2",
    "17,13,4",
    "13,17,4",
    "37,37,5",
    "50,50,7,cond",
    "64,64,16,diagdom",
    "130,70,8",
    "70,130,8",
];

#[test]
fn lu_on_a_1x1_grid_matches_lapack() {
    let mut cases = COMMON.to_vec();
    cases.extend(["150,150,20", "211,199,12"]);
    check_grid("1x1", &cases);
}

#[test]
fn lu_on_a_1x2_grid() {
    let mut cases = COMMON.to_vec();
    cases.extend(["150,150,20", "211,199,12", "97,301,9"]);
    check_grid("1x2", &cases);
}

/// One process row gathers panels wider than NB to a rotating leader:
/// narrow target widths make many steps, with panels spread over the
/// process columns (and the ring of three columns forwarding them).
#[test]
fn lu_on_one_process_row_with_wide_panels() {
    let cases = ["40,40,4", "61,47,3", "47,61,3", "130,130,5,cond", "200,150,2", "1,9,2", "9,1,2"];
    check_grid_with("1x2", &["--panel-width", "8"], &cases);
    check_grid_with("1x3", &["--panel-width", "12"], &cases);
}

#[cfg(feature = "full-tests")]
#[test]
fn lu_on_a_2x1_grid() {
    let mut cases = COMMON.to_vec();
    cases.extend(["150,150,20", "301,97,9", "120,120,40"]);
    check_grid("2x1", &cases);
}

#[test]
fn lu_on_a_2x2_grid() {
    let mut cases = COMMON.to_vec();
    cases.extend(["150,150,20", "211,199,12"]);
    check_grid("2x2", &cases);
}

#[test]
fn lu_on_a_2x3_grid() {
    let mut cases = COMMON.to_vec();
    cases.push("160,160,10");
    check_grid("2x3", &cases);
}

/// Bad arguments and singular matrices: every rank reports the same typed
/// error with ScaLAPACK's INFO.
fn errors_agree(grid: &str, options: &[&str]) {
    let mut args = vec!["errors", "--grid", grid];
    args.extend_from_slice(options);
    let out = lu_checks(&args);
    assert_eq!(out.code, Some(0), "job failed:\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    let (p, q) = grid.split_once('x').unwrap();
    let ranks: usize = p.parse::<usize>().unwrap() * q.parse::<usize>().unwrap();
    let expected = [
        ("mbnb", -606, "MB_A must equal NB_A"),
        ("brows", -1203, "M_B"),
        ("bmb", -1206, "MB_B"),
        ("ipiv", -8, "IPIV"),
        ("gemm", -1403, "M_B"),
        ("singular-mid", 10, "U(10,10) is exactly zero"),
        ("singular-start", 13, "U(13,13) is exactly zero"),
        ("singular-last", 24, "U(24,24) is exactly zero"),
        ("singular-zero", 1, "U(1,1) is exactly zero"),
    ];
    for (case, info, text) in expected {
        let lines: Vec<&str> =
            out.stdout.lines().filter(|l| l.starts_with(&format!("ERROR case={case} rank="))).collect();
        assert_eq!(lines.len(), ranks, "{grid} {case}: one line per rank expected:\n{}", out.stdout);
        for l in &lines {
            assert!(l.contains(&format!(" info={info} ")) && l.contains(text), "{grid} {case}: {l}");
        }
        let agree = format!("AGREE case={case} same=true info={info}");
        assert!(out.stdout.lines().any(|l| l == agree), "{grid}: missing '{agree}':\n{}", out.stdout);
    }
    // A singular matrix is still factored completely (P·A = L·U holds).
    for l in out.stdout.lines().filter(|l| l.starts_with("SINGULAR ")) {
        let v: f64 = fields(l)["lu_residual"].parse().unwrap();
        assert!(v < 16.0, "{grid}: {l}");
    }
    assert_eq!(out.stdout.lines().filter(|l| l.starts_with("SINGULAR ")).count(), 3, "{}", out.stdout);
}

#[test]
fn errors_agree_on_a_1x2_grid() {
    errors_agree("1x2", &[]);
    // Zero columns in the second and later (wide) panels.
    errors_agree("1x2", &["--panel-width", "8"]);
}

#[cfg(feature = "full-tests")]
#[test]
fn errors_agree_on_a_2x1_grid() {
    errors_agree("2x1", &[]);
}

#[cfg(feature = "full-tests")]
#[test]
fn errors_agree_on_a_2x3_grid() {
    errors_agree("2x3", &[]);
}

/// pdgetrf_ft without failures: the pivots and factors of pdgetrf (square,
/// tall, wide, partial last blocks, a process row without rows, a
/// diagonally dominant matrix that interchanges nothing), consistent
/// checksums; singular matrices and bad input reported as pdgetrf reports
/// them, the same on every rank.
fn ft_matches_pdgetrf(grid: &str, cases: &[&str]) {
    let mut args = vec!["ft", "--grid", grid];
    args.extend_from_slice(cases);
    let out = lu_checks(&args);
    assert_eq!(out.code, Some(0), "job failed:\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    for case in cases {
        let parts: Vec<&str> = case.split(',').collect();
        let kind = parts.get(3).copied().unwrap_or("uniform");
        let head = format!("FTCASE m={} n={} nb={} kind={kind} ", parts[0], parts[1], parts[2]);
        let line = out.stdout.lines().find(|l| l.starts_with(&head)).unwrap_or_else(|| {
            panic!("no result for case {case} on {grid}:\n{}", out.stdout);
        });
        let f = fields(line);
        assert!(line.ends_with(" ok") && f["pivots"] == "same" && f["checksums"] == "ok", "{grid} {case}: {line}");
    }
    let (p, q) = grid.split_once('x').unwrap();
    let ranks: usize = p.parse::<usize>().unwrap() * q.parse::<usize>().unwrap();
    for (case, info, text) in [
        ("ft-singular-mid", 10, "U(10,10) is exactly zero"),
        ("ft-singular-start", 13, "U(13,13) is exactly zero"),
        ("ft-singular-last", 24, "U(24,24) is exactly zero"),
        ("ft-mbnb", -606, "MB_A must equal NB_A"),
        ("ft-nan", -3, "NaN"),
    ] {
        let lines: Vec<&str> =
            out.stdout.lines().filter(|l| l.starts_with(&format!("ERROR case={case} rank="))).collect();
        assert_eq!(lines.len(), ranks, "{grid} {case}: one line per rank expected:\n{}", out.stdout);
        for l in &lines {
            assert!(l.contains(&format!(" info={info} ")) && l.contains(text), "{grid} {case}: {l}");
        }
        let agree = format!("AGREE case={case} same=true info={info}");
        assert!(out.stdout.lines().any(|l| l == agree), "{grid}: missing '{agree}':\n{}", out.stdout);
    }
}

#[cfg(feature = "full-tests")]
#[test]
fn ft_lu_matches_pdgetrf_on_a_1x2_grid() {
    ft_matches_pdgetrf("1x2", &["200,200,16", "150,180,16", "211,199,12", "64,64,16,diagdom"]);
}

#[test]
fn ft_lu_matches_pdgetrf_on_a_2x2_grid() {
    ft_matches_pdgetrf("2x2", &["200,200,16", "150,180,16", "211,199,12", "6,40,8", "64,64,16,diagdom"]);
}

#[cfg(feature = "full-tests")]
#[test]
fn ft_lu_matches_pdgetrf_on_a_2x3_grid() {
    ft_matches_pdgetrf("2x3", &["200,200,16", "260,200,16", "100,200,16", "97,97,7"]);
}
