//! pdcg_ft under real SIGKILLs (`ftla cg --ft`): every CG phase at early,
//! middle and late iterations, through a spawn (2x2) and a hot spare
//! (2x3), each recovered with no lost iteration — the failure-free run's
//! iteration count and a converged true residual — plus kills before the
//! checksums exist, a kill during the recovery, two kills in one row, a
//! corrupted matrix-vector product caught by the checksums, a matrix that
//! is not positive definite, and the plain solver. The whole matrix runs
//! with `scripts/fault-matrix.sh cg`.

// (The helpers of full-tier tests are unused in the core tier.)
#![cfg_attr(not(feature = "full-tests"), allow(unused_imports, dead_code))]

mod common;

use common::{ftla, report, Ft, Rebuilt};
use scalapack_ft::io::npy::write_npy;

/// The 2-D Poisson matrix of 400 points (20 wide) in 16-blocks.
const SHAPE: [&str; 4] = ["--n", "400", "--nb", "16"];

fn cg() -> Ft {
    Ft::new("cg", &SHAPE)
}

/// The failure-free FT solve's iterations on `grid`.
fn failure_free_iterations(grid: &str) -> u64 {
    let (out, json) = cg().run(&["--grid", grid, "--verify"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(r.ok && r.converged == Some(true), "{r:?}");
    let its = r.iterations.expect("iterations");
    assert!(its > 40, "{r:?}");
    its
}

/// Each kill (`R@ITERATION:PHASE`, the ranks rebuilt, the committed steps
/// then) on `grid` with `spares`: recovered in place, in the failure-free
/// number of iterations, converged.
fn every_phase(grid: &str, spares: &str, kills: &[(&str, &str, u64)]) {
    let want = failure_free_iterations(grid);
    let mode = if spares == "0" { "spawn" } else { "spare" };
    for &(kill, ranks, step) in kills {
        let (at, phase) = kill.split_once('@').unwrap().1.split_once(':').unwrap();
        // A kill after a step's commit point is seen in the next step.
        let phase = if step > at.parse().unwrap() { "matvec" } else { phase };
        let r = cg().survives(grid, spares, kill, Rebuilt { ranks, step, phase, mode });
        assert_eq!(r.iterations, Some(want), "kill {kill} on {grid}: iterations lost or added: {r:?}");
        assert!(r.relative_residual.is_some_and(|v| v <= 1e-7), "{r:?}");
    }
}

#[test]
fn every_cg_phase_through_a_spawn_on_2x2_loses_no_iteration() {
    every_phase(
        "2x2",
        "0",
        harness::cases!(
            [
                ("2@30:matvec", "2", 30),
                ("0@0:matvec", "0", 0),
                ("1@1:dot", "1", 1),
                ("3@30:commit", "3", 31),
                ("1@61:dot", "1", 61),
            ],
            core = 1
        ),
    );
}

#[cfg(feature = "full-tests")]
#[test]
fn every_cg_phase_through_a_hot_spare_on_2x3_loses_no_iteration() {
    every_phase("2x3", "1", &[("4@2:commit", "4", 3), ("5@25:matvec", "5", 25), ("3@55:dot", "3", 55)]);
}

#[cfg(feature = "full-tests")]
#[test]
fn a_kill_before_the_checksums_exist_restarts_the_call() {
    cg().restarts("2x2", "0", "2@0:args");
    cg().restarts("2x3", "1", "3@0:encode");
}

#[cfg(feature = "full-tests")]
#[test]
fn a_second_kill_during_the_recovery() {
    // Another process row, after the merge: both rebuilt.
    cg().second_kill_during_the_repair("repair:*:merge", "0", 0);
    // The same process row, while the log is handed to the spare: reported.
    cg().second_kill_during_the_repair("region:*:share", "2", 2);
}

#[cfg(feature = "full-tests")]
#[test]
fn two_kills_in_one_process_row_are_reported_as_unrecoverable_by_every_survivor() {
    cg().unrecoverable("2@3:dot,3@3:dot");
}

#[test]
fn a_corrupted_product_is_caught_recomputed_and_costs_no_iteration() {
    let want = failure_free_iterations("2x2");
    let (out, json) = cg().run(&["--grid", "2x2", "--corrupt", "2@20"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("silent error caught in the matrix-vector product of iteration 20"), "{}", out.stdout);
    let r = report(json, &out);
    let d = r.detections.clone().unwrap_or_default();
    assert!(d.len() == 1 && d[0].iteration == 20 && d[0].defect > d[0].tolerance, "{r:?}");
    assert_eq!((r.iterations, r.converged), (Some(want), Some(true)), "{r:?}");
}

#[test]
fn the_plain_solver_converges_and_compare_reports_the_iterations() {
    let out = ftla(&["cg", "--grid", "2x2", "--n", "400", "--nb", "16", "--tol", "1e-10", "--jacobi"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("(converged, tol 1.0e-10, Jacobi)"), "{}", out.stdout);
    // The same JSON as qr/lu --ft --compare, with the iterations of each run.
    let (out, json) = cg().run(&["--grid", "1x2", "--spares", "2", "--kill", "1@10:dot", "--compare", "--reps", "2"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let c = report(json, &out).compare.expect("compare");
    let (p, f, w) = (c.iterations_nonft.unwrap(), c.iterations_ft.unwrap(), c.iterations_with_failure.unwrap());
    assert!(p.len() == 2 && p == f && w == f, "{p:?} {f:?} {w:?}");
}

#[test]
fn a_matrix_that_is_not_positive_definite_is_the_same_error_on_every_rank() {
    // diag(1, −2, 1, −2, …): pᵀAp < 0 for the first direction (b > 0).
    let n = 64;
    let data: Vec<f64> = (0..n * n)
        .map(|k| {
            if k % n == k / n {
                if (k % n) % 2 == 0 {
                    1.0
                } else {
                    -2.0
                }
            } else {
                0.0
            }
        })
        .collect();
    let input = std::env::temp_dir().join(format!("ftla-cg-npd-{}.npy", std::process::id()));
    write_npy(&input, n, n, &data).expect("write the matrix");
    let path = input.to_str().unwrap();
    let json = std::env::temp_dir().join(format!("ftla-cg-npd-{}.json", std::process::id()));
    let json_arg = json.to_str().unwrap();
    // (The plain solver's: the full tier.)
    let runs: &[bool] = if cfg!(feature = "full-tests") { &[false, true] } else { &[true] };
    for &ft in runs {
        let mut args = vec!["cg", "--grid", "2x2", "--nb", "8", "--input", path, "--json", json_arg];
        if ft {
            args.push("--ft");
        }
        let _ = std::fs::remove_file(&json);
        let out = ftla(&args);
        assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
        let routine = if ft { "pdcg_ft" } else { "pdcg" };
        let says = format!("{routine}: pᵀA·p = ");
        assert!(out.stdout.contains(&says) && out.stdout.contains("not positive definite"), "{}", out.stdout);
        // The solver stopped before computing any residual: none is printed
        // or reported, and the run has not converged.
        assert!(out.stdout.contains("no residual computed"), "{}", out.stdout);
        assert!(!out.stdout.contains("true relative residual"), "{}", out.stdout);
        let text = std::fs::read_to_string(&json).expect("the JSON report");
        let r: ftla_bench::report::FactorReport = serde_json::from_str(&text).expect("a report");
        assert_eq!((r.relative_residual, r.iterations, r.converged, r.ok), (None, None, Some(false), false), "{text}");
        assert!(!text.contains("relative_residual"), "{text}");
    }
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(&json);
}

#[test]
fn a_grid_with_one_process_column_is_refused() {
    cg().refused(&["--grid", "2x1", "--n", "100"], "--ft needs at least 2 process columns");
    cg().refused(&["--grid", "2x2", "--n", "100", "--kill", "1@9:update"], "`update` is not a phase of cg");
}
