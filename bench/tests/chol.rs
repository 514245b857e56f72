//! `ftla chol`: plain `pdpotrf`, `pdpotrs` (a real job's report, a
//! matrix that is not positive definite reported with ScaLAPACK's INFO,
//! the arguments refused before anything is launched), and pdpotrf_ft
//! under real SIGKILLs (`ftla chol --ft`): every phase of a step, spawn and
//! spare, both checksum layouts (two losses in one process row with two
//! rotating checksums), the factor compared with plain pdpotrf's (its
//! strictly upper triangle, not referenced, as the program gave it, on a
//! replacement too), kills before the checksums exist, two losses in one
//! row, a matrix that is not positive definite (INFO on every rank), the
//! solve with the protected factor, a job lost whole, hard matrices, and
//! silent-error detection.

// (The helpers of full-tier tests are unused in the core tier.)
#![cfg_attr(not(feature = "full-tests"), allow(unused_imports, dead_code))]

mod common;

use common::{ftla, report, Ft, Rebuilt};
use ftla_bench::report::FactorReport;
use scalapack_ft::io::npy::read_npy;
use std::path::PathBuf;

fn json_of(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("ftla-chol-{name}-{}.json", std::process::id()))
}

fn read(path: &std::path::Path) -> FactorReport {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let _ = std::fs::remove_file(path);
    serde_json::from_str(&text).unwrap()
}

#[test]
fn factors_and_solves_with_scalapacks_residuals() {
    let json = json_of("ok");
    let j = json.display().to_string();
    let args = ["chol", "--grid", "2x2", "--n", "300", "--nb", "32", "--solve", "--nrhs", "2", "--check", "--json", &j];
    let out = ftla(&args);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = read(&json);
    assert!(r.ok && r.info.is_none(), "{r:?}");
    assert!(r.residual.value().is_some_and(|x| x < 16.0), "{r:?}");
    assert!(r.solve_residual.is_some_and(|x| x < 16.0) && r.nrhs == Some(2), "{r:?}");
    assert!(r.gflops > 0.0 && out.stdout.contains("solve (pdpotrs)"), "{}", out.stdout);
}

// (The core tier has the fault-tolerant one's INFO in the report, and
// tests/tests/chol.rs the plain one's agreement.)
#[cfg(feature = "full-tests")]
#[test]
fn a_matrix_that_is_not_positive_definite_is_reported_with_its_info() {
    let json = json_of("minor");
    let j = json.display().to_string();
    // (Uniform entries in [−0.5, 0.5): the first minor that is not
    // positive definite is of order 1 or 2 for this seed.)
    let args = ["chol", "--grid", "1x2", "--n", "200", "--nb", "16", "--matrix", "uniform", "--check", "--json", &j];
    let out = ftla(&args);
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    let r = read(&json);
    let info = r.info.expect("INFO in the report");
    assert!(!r.ok && (1..=2).contains(&info) && r.gflops.is_nan(), "{r:?}");
    let said = format!("the leading minor of order {info} is not positive definite");
    assert!(out.stdout.contains(&said), "{}", out.stdout);
    // Not square: refused before launching.
    let out = ftla(&["chol", "--grid", "1x2", "--n", "200", "--m", "100"]);
    assert_eq!(out.code, Some(2), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("chol factors a square matrix, got 100x200"), "{}", out.stderr);
}

/// 256×256 in 32-blocks: 8 block columns (steps 0..=7).
const SHAPE: [&str; 4] = ["--n", "256", "--nb", "32"];

fn chol() -> Ft {
    Ft::new("chol", &SHAPE)
}

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ftla-chol-{}-{name}.npy", std::process::id()))
}

/// The factored matrix in `path` (column-major, N×N), the file removed.
fn factored(path: &PathBuf) -> Vec<f64> {
    let m = read_npy(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let _ = std::fs::remove_file(path);
    m.data
}

/// Plain pdpotrf's output of the same matrix on `grid`.
fn pdpotrf_output(grid: &str) -> Vec<f64> {
    let out = scratch(&format!("plain-{grid}"));
    let o = ftla(&[&["chol", "--grid", grid][..], &SHAPE, &["--check", "--output", out.to_str().unwrap()]].concat());
    assert_eq!(o.code, Some(0), "{}\n{}", o.stdout, o.stderr);
    factored(&out)
}

/// `got` against pdpotrf's `want`, up to rounding: L, and the strictly
/// upper triangle (not referenced: as generated, rebuilt from the
/// checksums on a replacement).
fn same_factor(got: &[f64], want: &[f64], what: &str) {
    let n: usize = SHAPE[1].parse().unwrap();
    for j in 0..n {
        for i in 0..n {
            let (g, w) = (got[i + j * n], want[i + j * n]);
            let part = if i < j { "upper triangle" } else { "factor L" };
            assert!((g - w).abs() <= 1e-10 * w.abs().max(1.0), "{what}: A({i}, {j}) of the {part}: {g} vs {w}");
        }
    }
}

/// Each kill (`R@potrf:STEP:PHASE`, the ranks rebuilt, the committed steps
/// then) on `grid` with `spares` (and `more` options): recovered in place,
/// residual below 16, consistent checksums, and pdpotrf's factor.
fn every_phase(grid: &str, spares: &str, more: &[&str], kills: &[(&str, &str, u64)]) {
    let want = pdpotrf_output(grid);
    let mode = if spares == "0" { "spawn" } else { "spare" };
    for &(kill, ranks, step) in kills {
        let (at, phase) = kill.split_once("@potrf:").unwrap().1.split_once(':').unwrap();
        // A kill after a step's commit point is seen in the next step, in
        // whichever phase first talks to the victim.
        let phase = if step > at.parse().unwrap() { "panel" } else { phase };
        let out = scratch("ft");
        let rebuilt = Rebuilt { ranks, step, phase, mode };
        let r = chol().with(more).with(&["--output", out.to_str().unwrap()]).survives(grid, spares, kill, rebuilt);
        assert_eq!(r.command, "chol", "{r:?}");
        same_factor(&factored(&out), &want, &format!("kill {kill} on {grid}"));
    }
}

/// An n×n symmetric positive definite lower triangle (n on the diagonal,
/// 1/(1 + i − j) below) with NaN in the strictly upper one, column-major,
/// and the .npy file `name` in the scratch directory that holds it.
fn nan_upper_input(n: usize, name: &str) -> (Vec<f64>, PathBuf) {
    let entry = |i: usize, j: usize| match i.cmp(&j) {
        std::cmp::Ordering::Less => f64::NAN,
        std::cmp::Ordering::Equal => n as f64,
        std::cmp::Ordering::Greater => 1.0 / (1 + i - j) as f64,
    };
    let a: Vec<f64> = (0..n * n).map(|k| entry(k % n, k / n)).collect();
    let input = scratch(name);
    scalapack_ft::io::npy::write_npy(&input, n, n, &a).unwrap();
    (a, input)
}

/// The strictly upper triangle is not referenced, and whatever the
/// program keeps there — NaN here — spoils no rebuild: after a kill, L is
/// LAPACK's and the upper triangle comes back as given (NaN everywhere,
/// on the replacement too), the checksums consistent.
#[test]
fn nan_in_the_upper_triangle_spoils_no_rebuild() {
    let n: usize = SHAPE[1].parse().unwrap();
    let (a, input) = nan_upper_input(n, "nan-upper-input");
    let i = input.to_str().unwrap();
    // LAPACK's L of the same matrix (DPOTRF reads the lower triangle).
    let mut want = a.clone();
    assert_eq!(scalapack_ft::blas::dpotrf(scalapack_ft::blas::Uplo::Lower, n, &mut want, n), 0);
    let out = scratch("nan-upper-ft");
    // (Rank 0 holds diagonal block 2, whose group's other member, block
    // column 3, holds NaN in the same rows: the rebuild of L(2, 2) would
    // read them if the upper triangle were summed with L.)
    let rebuilt = Rebuilt { ranks: "0", step: 4, phase: "update", mode: "spare" };
    chol().with(&["--input", i, "--output", out.to_str().unwrap()]).survives("2x2", "1", "0@potrf:4:update", rebuilt);
    let got = factored(&out);
    let _ = std::fs::remove_file(&input);
    for j in 0..n {
        for i in 0..n {
            let (g, w) = (got[i + j * n], want[i + j * n]);
            if i < j {
                assert!(g.is_nan(), "A({i}, {j}) of the upper triangle: {g}, given NaN");
            } else {
                assert!((g - w).abs() <= 1e-10 * w.abs().max(1.0), "L({i}, {j}): {g} vs LAPACK's {w}");
            }
        }
    }
}

/// The encoding of the lower triangle's checksums (whole blocks, then
/// the groups' bands split along the diagonal) holds the relations as
/// they are defined, recomputed right after it (`FTLA_TEST_CHECK_ENCODING`):
/// several process rows, a last block shorter than NB, the rotating layout
/// with two and three weighted checksums, NaN in the upper triangle; and
/// the whole matrix's encoding (QR, LU) too.
#[cfg(feature = "full-tests")]
#[test]
fn the_checksums_hold_right_after_the_encoding() {
    let check = [("FTLA_TEST_CHECK_ENCODING", "1")];
    let (_, input) = nan_upper_input(150, "encoding-nan-upper");
    let i = input.to_str().unwrap();
    for args in [
        &["chol", "--grid", "3x2", "--n", "517", "--nb", "16"][..],
        &["chol", "--grid", "2x4", "--n", "999", "--nb", "32", "--layout", "rotating", "--checksums", "2"],
        &["chol", "--grid", "1x4", "--n", "300", "--nb", "16", "--layout", "rotating", "--checksums", "3"],
        &["chol", "--grid", "2x3", "--nb", "16", "--input", i],
        &["qr", "--grid", "2x3", "--m", "300", "--n", "200", "--nb", "16"],
        &["lu", "--grid", "2x4", "--n", "333", "--nb", "16", "--layout", "rotating", "--checksums", "2"],
    ] {
        let (out, json, _) = common::run_ft_with_json(args[0], &args[1..], &check);
        assert_eq!(out.code, Some(0), "{args:?}:\n{}\n{}", out.stdout, out.stderr);
        let r: FactorReport = serde_json::from_str(&json.expect("a report")).unwrap();
        assert!(r.ok, "{args:?}: {r:?}");
    }
    let _ = std::fs::remove_file(&input);
}

#[cfg(feature = "full-tests")]
#[test]
fn every_phase_through_a_spawn_on_2x2_gives_pdpotrfs_factor() {
    every_phase(
        "2x2",
        "0",
        &[],
        &[
            ("1@potrf:3:update", "1", 3),
            ("2@potrf:0:panel", "2", 0),
            ("3@potrf:4:bcast", "3", 4),
            ("0@potrf:7:update", "0", 7),
            ("1@potrf:5:commit", "1", 6),
        ],
    );
}

#[cfg(feature = "full-tests")]
#[test]
fn every_phase_through_a_hot_spare_on_2x3() {
    every_phase(
        "2x3",
        "1",
        &[],
        &[
            ("4@potrf:2:panel", "4", 2),
            ("5@potrf:5:bcast", "5", 5),
            ("0@potrf:6:update", "0", 6),
            ("3@potrf:3:commit", "3", 4),
        ],
    );
}

#[cfg(feature = "full-tests")]
#[test]
fn two_losses_in_one_process_row_with_two_rotating_checksums() {
    // 1x4, f = 2: groups of two block columns and two weighted checksums;
    // ranks 1 and 2 lost together erase two members of a group (each
    // entry solved from the D or the C relations, or left above the
    // diagonal).
    let r = chol().with(&["--layout", "rotating", "--checksums", "2"]).survives(
        "1x4",
        "0",
        "1@potrf:3:bcast,2@potrf:3:bcast",
        Rebuilt { ranks: "1, 2", step: 3, phase: "bcast", mode: "spawn" },
    );
    assert!(r.checksum_check.is_some_and(|c| c.ok));
    every_phase(
        "2x3",
        "0",
        &["--layout", "rotating"],
        &[("2@potrf:1:update", "2", 1), ("4@potrf:6:panel", "4", 6), ("1@potrf:4:commit", "1", 5)],
    );
}

#[test]
fn a_matrix_that_is_not_positive_definite_is_the_same_info_everywhere() {
    // (Uniform entries in [−0.5, 0.5): a minor of order 1 or 2 fails.)
    let (out, json) = chol().run(&["--grid", "2x2", "--matrix", "uniform", "--check"]);
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    let info = r.info.expect("INFO in the report");
    assert!(!r.ok && (1..=2).contains(&info), "{r:?}");
    assert!(out.stdout.contains(&format!("(INFO {info} on every rank)")), "{}", out.stdout);
    // Kill points name the catalogue's operation.
    let (out, _) = chol().run(&["--grid", "2x2", "--kill", "1@chol:2:panel"]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("`chol` names no kill point of ftla chol (use potrf"), "{}", out.stderr);
}

/// `chol --ft --solve`: pdpotrs_ft on the protected factor, B protected
/// too; each kill (in the factorization, a solve step's phase, the
/// program's own work between the calls, the solve's encoding) recovered,
/// the factorization's and the solve's residuals below 16.
#[test]
fn the_solve_with_the_protected_factor_survives_kills() {
    let solve = chol().with(&["--solve", "--nrhs", "2"]);
    for &(grid, kill, restarted) in harness::cases!(
        [
            // (The core tier's one run: a loss in the factorization and
            // one in the solve.)
            ("2x2", "1@potrf:3:update,2@potrs:3:update", false),
            ("2x3", "4@potrs:12:bcast,2@potrf:4:panel", false),
            ("2x2", "3@app:0", true),
            ("2x2", "2@potrs:0:encode", true),
        ],
        core = 1
    ) {
        let (out, json) = solve.run(&["--grid", grid, "--kill", kill, "--check", "--verify"]);
        assert_eq!(out.code, Some(0), "{kill}:\n{}\n{}", out.stdout, out.stderr);
        let r = report(json, &out);
        assert!(r.ok && r.solve_residual.is_some_and(|x| x < 16.0), "{kill}: {r:?}");
        assert!(out.stdout.contains("solve (pdpotrs_ft)"), "{}", out.stdout);
        let recovered = r.recoveries.as_deref().unwrap_or_default().len();
        if restarted {
            assert!(out.stdout.contains("solving again with the kept factors"), "{kill}: {}", out.stdout);
        } else {
            assert_eq!(recovered, kill.matches('@').count(), "{kill}: {r:?}");
        }
    }
    if cfg!(feature = "full-tests") {
        // Two losses in one process row during the solve: two rotating
        // checksums rebuild both ranks' parts of the factor and of B.
        let (out, json) = solve.run(&[
            "--grid",
            "1x4",
            "--layout",
            "rotating",
            "--checksums",
            "2",
            "--kill",
            "1@potrs:9:update,3@potrs:9:update",
            "--check",
        ]);
        let r = report(json, &out);
        assert!(r.ok && r.solve_residual.is_some_and(|x| x < 16.0), "{r:?}");
    }
}

#[cfg(feature = "full-tests")]
#[test]
fn a_kill_before_the_checksums_exist_restarts_the_call() {
    for (grid, spares, kill) in [("2x2", "0", "2@potrf:0:args"), ("2x3", "1", "3@potrf:0:encode")] {
        chol().restarts(grid, spares, kill);
    }
}

#[cfg(feature = "full-tests")]
#[test]
fn two_losses_in_one_process_row_are_unrecoverable_on_every_survivor() {
    chol().unrecoverable("2@potrf:3:update,3@potrf:3:update");
}

#[cfg(feature = "full-tests")]
#[test]
fn a_second_loss_during_the_repair() {
    chol().every_way_at("repair:*:merge");
}

#[cfg(feature = "full-tests")]
#[test]
fn verify_reports_a_flipped_element_and_compare_pairs_the_runs() {
    // Rank 2's last element, A(255, 223), lies in L by the end: the D
    // relations see it; rank 1's, A(223, 255), in the upper triangle,
    // which the factorization does not reference: U's sums see it.
    for (corrupt, in_upper) in [("2@2", false), ("1@2", true)] {
        let (out, json) = chol().run(&["--grid", "2x2", "--verify", "--corrupt", corrupt]);
        assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
        assert!(out.stdout.contains("checksums MISMATCH"), "{}", out.stdout);
        let check = report(json, &out).checksum_check.expect("verified");
        let seen = if in_upper { check.max_upper_defect } else { check.max_c_defect.max(check.max_d_defect) };
        assert!(seen > 0.1 && !check.ok, "{corrupt}: {check:?}");
    }
    let (out, json) = chol().run(&["--grid", "1x2", "--kill", "1@potrf:3:update", "--compare", "--reps", "2"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert_eq!((r.command.as_str(), r.ft), ("chol", Some(true)), "{r:?}");
    // (Two process columns: the pair's rows below each group cost as much
    // as the update of the lower triangle, more on a small matrix.)
    assert!(r.overhead_model.is_some_and(|m| (0.9..3.0).contains(&m)), "{r:?}");
    let c = r.compare.expect("compare");
    assert_eq!((c.reps, c.nonft_times_s.len(), c.ft_times_s.len()), (2, 2, 2), "{c:?}");
}

#[cfg(feature = "full-tests")]
#[test]
fn a_job_lost_whole_resumes_from_its_periodic_checkpoint_on_another_grid() {
    // A checkpoint at every commit point; the whole job lost at step 5
    // (exit 78: resume it), then resumed on a 1x2 grid: its blocks read
    // from the 2x2 files, the checksums encoded again for the new grid.
    let dir = common::fresh_dir("chol-periodic");
    let d = dir.display().to_string();
    let (out, _) = chol().run(&[
        "--grid",
        "2x2",
        "--checkpoint-dir",
        &d,
        "--checkpoint-every",
        "0",
        "--kill",
        "job@potrf:5:update",
    ]);
    assert_eq!(out.code, Some(78), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("pdpotrf_ft at step 5"), "{}", out.stderr);
    let (out, json) = chol().run(&["--grid", "1x2", "--resume", &d, "--check", "--verify"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(r.ok && r.checksum_check.as_ref().is_some_and(|c| c.ok), "{r:?}");
    assert_eq!(r.resumed_at_step, Some(5), "{r:?}");
    assert!(!dir.exists(), "{d} left behind");
}

/// Hard symmetric positive definite matrices, given as files: the
/// Hilbert matrix (condition number about 1.6·10¹³ at N = 10) and a
/// graded one (D·S·D, D spanning twelve decades): pdpotrf_ft on 2x2 with
/// a kill gives LAPACK's DPOTRF factor (pdpotrf on one process is DPOTRF
/// itself) up to rounding, row by row relative to its scale.
#[cfg(feature = "full-tests")]
#[test]
fn hard_matrices_give_lapacks_factor_after_a_kill() {
    let graded = |n: usize| {
        let d = |i: usize| 10f64.powf(-12.0 * i as f64 / (n - 1) as f64);
        let s = |i: usize, j: usize| if i == j { 2.0 } else { 1.0 / (1.0 + (i as f64 - j as f64).abs()) / n as f64 };
        (0..n * n).map(|k| (k % n, k / n)).map(|(i, j)| d(i) * s(i, j) * d(j)).collect::<Vec<f64>>()
    };
    let hilbert = |n: usize| (0..n * n).map(|k| 1.0 / (1.0 + (k % n + k / n) as f64)).collect::<Vec<f64>>();
    for (name, n, nb, a, tol) in [("hilbert", 10, 2, hilbert(10), 1e-6), ("graded", 160, 16, graded(160), 1e-10)] {
        let input = scratch(&format!("{name}-input"));
        scalapack_ft::io::npy::write_npy(&input, n, n, &a).unwrap();
        let i = input.to_str().unwrap();
        let (ns, nbs) = (n.to_string(), nb.to_string());
        let lapack = scratch(&format!("{name}-lapack"));
        let o = ftla(&["chol", "--grid", "1x1", "--nb", &nbs, "--input", i, "--output", lapack.to_str().unwrap()]);
        assert_eq!(o.code, Some(0), "{name}: {}\n{}", o.stdout, o.stderr);
        let want = factored(&lapack);
        let ft = scratch(&format!("{name}-ft"));
        let (out, json) = Ft::new("chol", &["--nb", &nbs]).run(&[
            "--grid",
            "2x2",
            "--input",
            i,
            "--kill",
            "1@potrf:1:update",
            "--check",
            "--verify",
            "--output",
            ft.to_str().unwrap(),
        ]);
        assert_eq!(out.code, Some(0), "{name}: {}\n{}", out.stdout, out.stderr);
        let r = report(json, &out);
        assert_eq!(r.recoveries.as_deref().map(<[_]>::len), Some(1), "{name}: {r:?}");
        let got = factored(&ft);
        let _ = std::fs::remove_file(&input);
        for row in 0..n {
            let scale = (0..=row).map(|j| want[row + j * n].abs()).fold(0.0, f64::max);
            for j in 0..=row {
                let (g, w) = (got[row + j * n], want[row + j * n]);
                assert!((g - w).abs() <= tol * scale, "{name} (N {ns}): L({row}, {j}) = {g}, LAPACK's {w}");
            }
        }
    }
}

/// A minor that is not positive definite at block column 6 (order 101),
/// then a loss in a later step (which does nothing): the checksums count
/// only the columns before the failing one as finished, so the
/// replacement's blocks come back as they were — the output equals the
/// failure-free run's, and INFO is 101 everywhere.
#[cfg(feature = "full-tests")]
#[test]
fn a_loss_after_the_minor_that_stopped_the_factorization_changes_nothing() {
    let n = 256;
    let a: Vec<f64> = (0..n * n)
        .map(|k| (k % n, k / n))
        .map(|(i, j)| {
            if i == j && i == 100 {
                -1e6
            } else if i == j {
                2.0 + n as f64
            } else {
                1.0 / (1.0 + (i + j) as f64)
            }
        })
        .collect();
    let input = scratch("stopped-input");
    scalapack_ft::io::npy::write_npy(&input, n, n, &a).unwrap();
    let i = input.to_str().unwrap();
    let mut outputs = Vec::new();
    for (name, kill) in [("clean", None), ("killed", Some("3@potrf:9:commit"))] {
        let out_file = scratch(&format!("stopped-{name}"));
        let mut args = vec!["--grid", "2x2", "--nb", "16", "--input", i, "--output", out_file.to_str().unwrap()];
        if let Some(k) = kill {
            args.extend(["--kill", k]);
        }
        let (out, json) = Ft::new("chol", &[]).run(&args);
        assert_eq!(out.code, Some(1), "{name}: {}\n{}", out.stdout, out.stderr);
        assert_eq!(report(json, &out).info, Some(101), "{name}");
        outputs.push(factored(&out_file));
    }
    let _ = std::fs::remove_file(&input);
    let worst = outputs[0].iter().zip(&outputs[1]).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
    assert!(worst < 1e-9, "the outputs differ by {worst:e}");
}
