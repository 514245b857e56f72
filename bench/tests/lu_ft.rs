//! pdgetrf_ft under real SIGKILLs (`ftla lu --ft`): a representative part
//! of its fault matrix — every LU phase (its row exchange included) at
//! early, middle and last steps, spawn and spare, on 2x2 and 2x3 grids,
//! with the pivots of plain pdgetrf after every recovery — plus kills
//! before the checksums exist, two kills in different rows, a kill during
//! the recovery, two kills in one row, a singular matrix, silent-error
//! detection and the same-run comparison. The whole matrix runs with
//! `scripts/fault-matrix.sh lu`.

// (The helpers of full-tier tests are unused in the core tier.)
#![cfg_attr(not(feature = "full-tests"), allow(unused_imports, dead_code))]

mod common;

use common::{ftla, report, Ft, Rebuilt};
use scalapack_ft::io::npy::{read_npy_vector_i64, write_npy};
use std::path::PathBuf;

/// 200×200 in 16-blocks: 13 panels (steps 0..=12). Uniform, so that the
/// pivots interchange rows between process rows (a diagonally dominant
/// matrix, `ftla lu`'s default, would interchange none); solved with the
/// factors too.
const SHAPE: [&str; 6] = ["--n", "200", "--nb", "16", "--matrix", "uniform"];

fn lu() -> Ft {
    Ft::new("lu", &SHAPE).with(&["--solve"])
}

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ftla-lu-ft-{}-{name}.npy", std::process::id()))
}

/// The pivots of `path` (`FILE.ipiv.npy` next to the factored matrix),
/// the files removed.
fn pivots(path: &PathBuf) -> Vec<i64> {
    let ipiv = path.with_extension("ipiv.npy");
    let v = read_npy_vector_i64(&ipiv).unwrap_or_else(|e| panic!("{}: {e}", ipiv.display()));
    let _ = (std::fs::remove_file(path), std::fs::remove_file(ipiv));
    v
}

/// Plain pdgetrf's pivots of the same matrix on `grid`.
fn pdgetrf_pivots(grid: &str) -> Vec<i64> {
    let out = scratch(&format!("plain-{grid}"));
    let mut args = vec!["lu", "--grid", grid];
    args.extend(SHAPE);
    let o = ftla(&[&args[..], &["--check", "--output", out.to_str().unwrap()]].concat());
    assert_eq!(o.code, Some(0), "{}\n{}", o.stdout, o.stderr);
    let p = pivots(&out);
    // Rows really move (between process rows too, where there are two).
    let moved = p.iter().enumerate().filter(|&(i, &r)| r != i as i64 && (r / 16) % 2 != (i as i64 / 16) % 2).count();
    assert!(moved > 10, "{p:?}");
    p
}

/// Each kill (`R@STEP:PHASE`, the ranks rebuilt, the committed steps then)
/// on `grid` with `spares`: recovered in place, residuals (factorization
/// and solve) below 16, consistent checksums, and pdgetrf's pivots.
fn every_phase(grid: &str, spares: &str, kills: &[(&str, &str, u64)]) {
    let want = pdgetrf_pivots(grid);
    let mode = if spares == "0" { "spawn" } else { "spare" };
    for &(kill, ranks, step) in kills {
        let (at, phase) = kill.split_once('@').unwrap().1.split_once(':').unwrap();
        // A kill after a step's commit point is seen in the next step, in
        // whichever phase first talks to the victim.
        let phase = if step > at.parse().unwrap() { "panel" } else { phase };
        let out = scratch("ft");
        let r = lu().with(&["--output", out.to_str().unwrap()]).survives(
            grid,
            spares,
            kill,
            Rebuilt { ranks, step, phase, mode },
        );
        assert!(r.solve_residual.is_some_and(|s| s < 16.0), "{r:?}");
        assert_eq!(pivots(&out), want, "kill {kill} on {grid}: the pivots differ from pdgetrf's");
    }
}

#[test]
fn every_lu_phase_through_a_spawn_on_2x2_keeps_the_pivots_of_pdgetrf() {
    // (The core tier: the row interchange, LU's own phase.)
    every_phase(
        "2x2",
        "0",
        harness::cases!(
            [
                ("2@6:swap", "2", 6),
                ("0@0:panel", "0", 0),
                ("1@6:bcast", "1", 6),
                ("3@12:update", "3", 12),
                ("1@12:commit", "1", 13),
            ],
            core = 1
        ),
    );
}

#[cfg(feature = "full-tests")]
#[test]
fn every_lu_phase_through_a_hot_spare_on_2x3_keeps_the_pivots_of_pdgetrf() {
    every_phase(
        "2x3",
        "1",
        &[
            ("4@3:panel", "4", 3),
            ("5@7:bcast", "5", 7),
            ("1@7:swap", "1", 7),
            ("2@12:update", "2", 12),
            ("3@6:commit", "3", 7),
        ],
    );
}

#[cfg(feature = "full-tests")]
#[test]
fn every_lu_phase_on_one_process_row_where_the_next_panel_is_factored_ahead() {
    // With one process row the owner of the next panel factors it while
    // the step's agreement runs and sends it at the commit: kills of that
    // owner and of the others around it.
    every_phase(
        "1x3",
        "0",
        &[
            ("2@4:panel", "2", 4),
            ("1@5:bcast", "1", 5),
            ("0@5:swap", "0", 5),
            ("2@7:update", "2", 7),
            ("1@8:commit", "1", 9),
        ],
    );
}

#[test]
fn a_kill_before_the_checksums_exist_restarts_the_call() {
    for &(grid, spares, kill) in harness::cases!([("2x2", "0", "2@0:args"), ("2x3", "1", "3@0:encode")], core = 1) {
        lu().restarts(grid, spares, kill);
    }
}

#[cfg(feature = "full-tests")]
#[test]
fn two_simultaneous_kills_in_different_process_rows_are_both_rebuilt() {
    lu().survives("2x2", "0", "1@4:swap,2@4:swap", Rebuilt { ranks: "1, 2", step: 4, phase: "swap", mode: "spawn" });
}

#[cfg(feature = "full-tests")]
#[test]
fn a_second_kill_during_the_recovery() {
    // Another process row, after the merge: both rebuilt.
    lu().second_kill_during_the_repair("repair:*:merge", "0", 0);
    // The same process row, while the log is handed to the spare: reported.
    lu().second_kill_during_the_repair("region:*:share", "2", 2);
}

#[cfg(feature = "full-tests")]
#[test]
fn two_kills_in_one_process_row_are_reported_as_unrecoverable_by_every_survivor() {
    lu().unrecoverable("2@3:swap,3@3:swap");
}

#[test]
fn a_singular_matrix_is_factored_and_reported_after_a_recovery() {
    // Column 37 is zero: U(38,38) is exactly zero (step 2); rank 1 dies at
    // step 5, so the replacement learns the singularity from the survivors.
    let n = 200;
    let data: Vec<f64> = (0..n * n)
        .map(|k| {
            let (i, j) = (k % n, k / n);
            if j == 37 {
                0.0
            } else {
                ((i * 7 + j * 13) % 31) as f64 / 31.0 - 0.5 + ((i * j) % 7) as f64 * 0.01
            }
        })
        .collect();
    let input = scratch("singular-in");
    write_npy(&input, n, n, &data).expect("write the matrix");
    let (out, json) = Ft::new("lu", &["--input", input.to_str().unwrap(), "--nb", "16"]).run(&[
        "--grid",
        "2x2",
        "--kill",
        "1@5:update",
        "--check",
        "--verify",
    ]);
    let _ = std::fs::remove_file(&input);
    // Not a success: the matrix is singular; but not a failure to recover.
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("injecting SIGKILL into rank 1 at lu:5:update"), "{}", out.stderr);
    assert!(
        out.stdout.contains("pdgetrf_ft: U(38,38) is exactly zero: the matrix is singular (INFO 38 on every rank)"),
        "{}",
        out.stdout
    );
    // Completed: P·A = L·U holds.
    let r = report(json, &out);
    assert!(r.residual.value().is_some_and(|v| v < 16.0) && !r.ok, "{r:?}");
}

#[cfg(feature = "full-tests")]
#[test]
fn verify_reports_a_flipped_element_and_compare_pairs_the_runs() {
    let (out, json) = lu().run(&["--grid", "2x2", "--verify", "--corrupt", "1@2"]);
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("checksums MISMATCH"), "{}", out.stdout);
    let check = report(json, &out).checksum_check.expect("verified");
    assert!(check.max_c_defect > 0.1 && !check.ok, "{check:?}");
    // The same JSON as qr --ft: the plain and failure-free FT pairs and the
    // run with the failure, per repetition.
    let (out, json) = lu().run(&["--grid", "1x2", "--kill", "1@3:swap", "--compare", "--reps", "2"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert_eq!((r.command.as_str(), r.ft, r.restarts), ("lu", Some(true), Some(0)), "{r:?}");
    assert!(r.overhead_model.is_some_and(|m| m > 0.0) && r.solve_residual.is_some_and(|s| s < 16.0), "{r:?}");
    let c = r.compare.expect("compare");
    assert_eq!((c.reps, c.nonft_times_s.len(), c.ft_times_s.len()), (2, 2, 2), "{c:?}");
    assert_eq!(c.ft_with_failure_times_s.map(|v| v.len()), Some(2));
    assert!(c.paired_failure_overhead.is_some(), "{}", out.stdout);
    assert!(out.stdout.contains("overhead: plain LU"), "{}", out.stdout);
    assert!(out.stdout.contains("repetition 2: recovered ranks [1] at step 3"), "{}", out.stdout);
}

/// Where the time goes: `phases_s` in the JSON of a plain and a
/// fault-tolerant run (grid rank 0's parts, which sum to the run's time),
/// and `--trace`'s file, every rank's timeline in the Chrome trace format.
#[test]
fn every_run_says_where_its_time_went_and_traces_every_rank() {
    let dir = std::env::temp_dir().join(format!("ftla-phases-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for ft in [false, true] {
        let (json, trace) = (dir.join(format!("r{ft}.json")), dir.join(format!("r{ft}.trace")));
        let (j, t) = (json.to_str().unwrap(), trace.to_str().unwrap());
        let mut args = vec!["lu", "--grid", "1x2", "--n", "512", "--nb", "32", "--json", j, "--trace", t];
        if ft {
            args.extend(["--ft", "--compare"]);
        }
        let out = ftla(&args);
        assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
        assert!(out.stdout.contains("time per part (grid rank 0): "), "{}", out.stdout);
        let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let phases = r["phases_s"].as_object().unwrap_or_else(|| panic!("no phases_s: {r}"));
        for name in ["panel", "update"] {
            assert!(phases.get(name).and_then(|v| v.as_f64()).is_some_and(|s| s > 0.0), "{name}: {phases:?}");
        }
        if ft {
            assert!(phases.contains_key("encode") && phases.contains_key("wait"), "{phases:?}");
            // `--compare`: plain and FT side by side.
            assert!(out.stdout.contains("time per part, plain | FT failure-free (grid rank 0): "), "{}", out.stdout);
            let (plain, free) = (&r["compare"]["phases_nonft_s"], &r["compare"]["phases_ft_s"]);
            assert!(plain["update"].as_f64().is_some_and(|s| s > 0.0), "{r}");
            assert!(free["update"].as_f64().is_some_and(|s| s > 0.0), "{r}");
            assert!(free["encode"].as_f64().is_some_and(|s| s > 0.0) && plain["encode"] == 0.0, "{r}");
        }
        // Rank 0's parts against the slowest rank's time.
        let sum: f64 = phases.values().map(|v| v.as_f64().unwrap()).sum();
        let time = r["time_s"].as_f64().unwrap();
        assert!((sum - time).abs() <= 0.1 * time + 0.01, "parts {sum} s, time {time} s: {phases:?}");
        let t: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
        let events = t["traceEvents"].as_array().unwrap();
        let spans: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
        for rank in [0, 1] {
            assert!(spans.iter().any(|e| e["pid"] == rank && e["name"] == "update"), "rank {rank}: {t}");
        }
        assert!(spans.iter().all(|e| e["dur"].as_f64().is_some_and(|d| d >= 0.0) && e["ts"].as_f64().is_some()));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A long run says where it is, a line per tenth of the flops once it has
/// taken two seconds (the launcher's stderr is no terminal here), with the
/// recoveries so far; `--quiet` says nothing.
#[cfg(feature = "full-tests")]
#[test]
fn a_long_run_says_where_it_is_unless_quiet() {
    let args = ["qr", "--ft", "--grid", "1x2", "--n", "3072", "--nb", "64", "--kill", "1@12:update"];
    let out = ftla(&args);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let lines: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with("ftla: progress: step ")).collect();
    assert!(!lines.is_empty(), "{}", out.stderr);
    let percent = |l: &str| -> u32 { l.split(", ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap() };
    let said: Vec<u32> = lines.iter().map(|l| percent(l)).collect();
    assert!(said.windows(2).all(|w| w[0] / 10 < w[1] / 10), "one line per tenth: {said:?}");
    let last = lines.last().unwrap();
    assert!(last.starts_with("ftla: progress: step 48 of 48, 100 % of the flops") && last.ends_with(", 1 recovery"));
    let quiet = ftla(&[&args[..], &["--quiet"]].concat());
    assert_eq!(quiet.code, Some(0), "{}", quiet.stderr);
    assert!(!quiet.stderr.contains("ftla: progress:"), "{}", quiet.stderr);
}
