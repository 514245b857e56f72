//! pdgeqrf / pdormqr / pdgels on real multi-rank grids: ScaLAPACK's
//! residual checks on many shapes, and bad input agreed on every rank.

use harness::Captured;
use std::process::Command;

fn qr_checks(grid: &str, cases: &[&str]) -> Captured {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_qr-checks"));
    cmd.args(["--grid", grid, "--timeout", "120"]).args(cases).env_remove("FTLA_KILL");
    harness::launch(cmd)
}

const CASES: &[&str] = &[
    "37x23x4",           // M > N, not multiples of NB
    "23x37x4",           // M < N
    "64x64x8",           // square, multiple of NB
    "61x61x16",          // square, ragged last block
    "120x101x4",         // many panels: with one process column, merged in groups
    "100x70x16:cond1e6", // ill-conditioned
    "9x9x32",            // one partial block
    "1x1x1",             // tiny
    "2x2x1",
    "0x5x2", // empty
    "5x0x2",
];

fn assert_cases_pass(grid: &str) {
    let out = qr_checks(grid, CASES);
    assert_eq!(out.code, Some(0), "grid {grid}:\n{}\n{}", out.stdout, out.stderr);
    for case in CASES {
        let line = out.stdout.lines().find(|l| l.starts_with(&format!("CASE {case} "))).unwrap_or("");
        assert!(line.ends_with(" ok"), "grid {grid}, case {case}: `{line}`\n{}", out.stdout);
    }
}

#[test]
fn qr_residuals_pass_on_1x1_and_1x2() {
    assert_cases_pass("1x1");
    assert_cases_pass("1x2");
}

#[test]
fn qr_residuals_pass_on_2x1_2x2_and_2x3() {
    assert_cases_pass("2x1");
    assert_cases_pass("2x2");
    assert_cases_pass("2x3");
}

#[test]
fn least_squares_recovers_the_solution_of_a_consistent_system() {
    for grid in ["1x2", "2x2"] {
        let out = qr_checks(grid, &["gels", "45x12x4"]);
        assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
        assert!(out.stdout.lines().any(|l| l.starts_with("GELS 45x12x4") && l.ends_with(" ok")), "{}", out.stdout);
    }
}

#[test]
fn arrays_scatter_view_and_gather_back_on_a_grid() {
    // Uneven blocks: 37 rows and 23 columns in 4-blocks on 2x3.
    let out = qr_checks("2x3", &["arrays", "37x23x4"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.lines().any(|l| l.starts_with("ARRAYS 37x23x4") && l.ends_with(" ok")), "{}", out.stdout);
}

#[test]
fn the_fault_tolerant_factorizations_refuse_one_process_column_at_ctxt_a() {
    let out = qr_checks("2x1", &["ft-one-column"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let lines: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with("ONE-COLUMN rank=")).collect();
    assert_eq!(lines.len(), 2, "{}", out.stdout);
    for l in &lines {
        assert!(l.contains("qr=-602 lu=-602") && l.contains("CTXT_A") && l.contains("two process columns"), "{l}");
    }
}

/// `case` makes every rank of a 2x2 grid print one `prefix` line with its
/// error, and each must hold all of `needles`.
fn same_error_on_every_rank(case: &str, prefix: &str, needles: &[&str]) {
    let out = qr_checks("2x2", &[case]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let lines: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with(prefix)).collect();
    assert_eq!(lines.len(), 4, "{}", out.stdout);
    for l in &lines {
        assert!(needles.iter().all(|n| l.contains(n)), "{l}");
    }
}

#[test]
fn unequal_block_sizes_are_the_same_typed_error_on_every_rank() {
    same_error_on_every_rank("bad-blocks", "BAD rank=", &["info=-606", "MB_A", "must equal NB_A"]);
}

#[test]
fn pdormqr_reports_its_arguments_at_scalapacks_positions() {
    same_error_on_every_rank("bad-apply", "BADAPPLY rank=", &["k=-5", "c=-1405"]);
}

#[test]
fn pdgeqrf_ft_in_place_and_in_a_separate_workspace_give_the_same_factors() {
    // 2x2: one process row's rows differ from the other's; 1x3: odd Q;
    // 6x20x8 on 2x2: process row 1 holds no rows.
    for (grid, case) in [("2x2", "70x50x8"), ("1x3", "70x50x8"), ("2x2", "6x20x8")] {
        let out = qr_checks(grid, &["ft-storage", case]);
        assert_eq!(out.code, Some(0), "{grid}: {}\n{}", out.stdout, out.stderr);
        let line = out.stdout.lines().find(|l| l.starts_with("FT-STORAGE")).unwrap_or_default();
        assert!(line.ends_with(" ok") && line.contains("identical=true"), "{grid}: {}", out.stdout);
    }
}

#[test]
fn pdgeqrf_ft_refuses_a_matrix_not_starting_on_process_0_0_on_every_rank() {
    same_error_on_every_rank("ft-bad-source", "BAD-FT rank=", &["info=-608", "CSRC_A", "must be 0"]);
}
