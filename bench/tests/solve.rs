//! Solving with the factors from the command line: `ftla lu --solve` and
//! `ftla qr --lstsq`, with NRHS right-hand sides generated or read from
//! `--rhs`, the solution written to `--solution` and read back here,
//! LAPACK's checks in the report, kills from `FTLA_KILL` and inside the
//! solves (`R@getrs:…` in `pdgetrs_ft`, `R@gels:…` in `pdgels_ft`), and the
//! usage errors. Every job runs under a hard timeout.

// (The helpers of full-tier tests are unused in the core tier.)
#![cfg_attr(not(feature = "full-tests"), allow(unused_imports, dead_code))]

mod common;

use common::{ftla, ftla_with, report, residuals_pass, Ft};
use scalapack_ft::io::npy::{read_npy, read_npy_header, write_npy, write_npy_vector_f64};
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ftla-solve-{}-{name}", std::process::id()))
}

/// A diagonally dominant N×N matrix (column-major), a known X (N×K) and
/// B = A·X, made here.
fn system(n: usize, k: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let a: Vec<f64> = (0..n * n)
        .map(|e| {
            let (i, j) = (e % n, e / n);
            let wave = ((7 * i + 3 * j) % 11) as f64 / 11.0 - 0.5;
            if i == j {
                n as f64 + wave
            } else {
                wave
            }
        })
        .collect();
    let x: Vec<f64> = (0..n * k).map(|e| 1.0 + (e % 13) as f64 / 4.0).collect();
    let mut b = vec![0.0; n * k];
    for c in 0..k {
        for j in 0..n {
            for i in 0..n {
                b[i + c * n] += a[i + j * n] * x[j + c * n];
            }
        }
    }
    (a, x, b)
}

/// X as written to `--solution` equals the known solution (`what` names
/// the case in the failure message).
fn assert_solution(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len());
    let error = got.iter().zip(want).map(|(g, w)| (g - w).abs()).fold(0.0, f64::max);
    assert!(error < 1e-10, "{what}{:?} vs {:?}", &got[..4], &want[..4]);
}

/// The test's scratch files, removed (whatever is already gone).
fn remove_files(files: impl IntoIterator<Item = std::path::PathBuf>) {
    for f in files {
        let _ = std::fs::remove_file(f);
    }
}

/// `--input A --rhs B --solution X` for the test's scratch files.
fn file_args(a: &std::path::Path, b: &std::path::Path, x: &std::path::Path) -> Vec<String> {
    let path = |f: &std::path::Path| f.display().to_string();
    vec!["--input".into(), path(a), "--rhs".into(), path(b), "--solution".into(), path(x)]
}

#[test]
fn lu_solve_round_trips_rhs_and_solution_files_for_one_and_three_columns() {
    let n = 120;
    for k in [1, 3] {
        let (a, x_true, b) = system(n, k);
        let (fa, fb, fx) =
            (scratch(&format!("a{k}.npy")), scratch(&format!("b{k}.npy")), scratch(&format!("x{k}.npy")));
        write_npy(&fa, n, n, &a).unwrap();
        // One column as NumPy writes a vector (N,), three as N×3.
        if k == 1 {
            write_npy_vector_f64(&fb, &b).unwrap();
        } else {
            write_npy(&fb, n, k, &b).unwrap();
        }
        let (a_arg, b_arg, x_arg) = (fa.display().to_string(), fb.display().to_string(), fx.display().to_string());
        let out = ftla(&[
            "lu",
            "--grid",
            "2x2",
            "--nb",
            "16",
            "--input",
            &a_arg,
            "--solve",
            "--rhs",
            &b_arg,
            "--solution",
            &x_arg,
        ]);
        assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
        let shape = read_npy_header(&fx).unwrap().shape;
        assert_eq!(shape, if k == 1 { vec![n] } else { vec![n, k] }, "the shape of X");
        let x = read_npy(&fx).unwrap();
        assert_solution(&x.data, &x_true, &format!("k = {k}: "));
        remove_files([fa, fb, fx]);
    }
}

#[cfg(feature = "full-tests")]
#[test]
fn lu_ft_solve_takes_ftla_kill_and_seven_right_hand_sides() {
    let json = scratch("lu.json");
    let j = json.display().to_string();
    let args = ["lu", "--ft", "--grid", "2x2", "--n", "256", "--nb", "32", "--solve", "--nrhs", "7", "--check"];
    let out = ftla_with(&[&args[..], &["--json", &j]].concat(), &[("FTLA_KILL", "1@lu:3:update")]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("kill points armed: 1@lu:3:update (FTLA_KILL)"), "{}", out.stdout);
    let r: ftla_bench::report::FactorReport =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("the report")).expect("a report");
    let _ = std::fs::remove_file(&json);
    assert_eq!(r.recoveries.as_ref().map(Vec::len), Some(1), "{r:?}");
    assert_eq!(r.nrhs, Some(7), "{r:?}");
    assert!(r.solve_residual.is_some_and(|s| s < 16.0) && residuals_pass(&r) && r.ok, "{r:?}");
}

#[cfg(feature = "full-tests")]
#[test]
fn lu_ft_solve_survives_kills_in_the_factorization_and_in_pdgetrs_ft() {
    let lu = Ft::new("lu", &["--grid", "2x2", "--n", "256", "--nb", "32", "--solve", "--nrhs", "2", "--check"]);
    // One list, both operations: rank 1 in the factorization, rank 2 in
    // the solve (step 4: a block step of L), each through a spawn.
    let (out, r) = lu.run(&["--kill", "1@3:update,2@getrs:4:update"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("injecting SIGKILL into rank 2 at getrs:4:update"), "{}", out.stderr);
    let r = report(r, &out);
    let ranks: Vec<Vec<i32>> = r.recoveries.iter().flatten().map(|e| e.ranks.clone()).collect();
    assert_eq!(ranks, [vec![1], vec![2]], "{r:?}");
    assert!(r.solve_residual.is_some_and(|s| s < 16.0) && residuals_pass(&r) && r.ok, "{r:?}");
    // Grid rank 0, which writes the report, lost in the solve and
    // replaced by a hot spare: its part of X is rebuilt.
    let (out, r) = lu.run(&["--spares", "1", "--kill", "0@getrs:11:bcast"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(r, &out);
    let modes: Vec<&str> = r.recoveries.iter().flatten().map(|e| e.mode.as_str()).collect();
    assert_eq!(modes, ["spare"], "{r:?}");
    assert!(r.solve_residual.is_some_and(|s| s < 16.0) && residuals_pass(&r) && r.ok, "{r:?}");
}

#[cfg(feature = "full-tests")]
#[test]
fn qr_lstsq_passes_lapacks_check_plain_and_after_a_kill() {
    // Overdetermined and inconsistent (B random): X solves the normal
    // equations only.
    let shape = ["--grid", "2x2", "--m", "300", "--n", "160", "--nb", "16", "--lstsq", "--nrhs", "2", "--check"];
    let json = scratch("qr.json");
    let j = json.display().to_string();
    let out = ftla(&[&["qr"][..], &shape, &["--json", &j]].concat());
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let plain: ftla_bench::report::FactorReport =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("the report")).expect("a report");
    let _ = std::fs::remove_file(&json);
    let lstsq = plain.lstsq_residual.expect("lstsq_residual");
    assert!(lstsq < 16.0 && plain.ok && plain.nrhs == Some(2), "{plain:?}");
    assert_solve_timed(&plain, &out.stdout, "pdgels");
    // pdgels_ft, one rank killed mid-factorization and another in the
    // solve (step 12: a block row of R): the same check.
    let (out, r) = Ft::new("qr", &shape[..]).run(&["--kill", "3@4:update,1@gels:12:bcast"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("injecting SIGKILL into rank 1 at gels:12:bcast"), "{}", out.stderr);
    let r = report(r, &out);
    let ranks: Vec<Vec<i32>> = r.recoveries.iter().flatten().map(|e| e.ranks.clone()).collect();
    assert_eq!(ranks, [vec![3], vec![1]], "{r:?}");
    assert!(r.lstsq_residual.is_some_and(|v| v < 16.0) && residuals_pass(&r) && r.ok, "{r:?}");
    assert_solve_timed(&r, &out.stdout, "pdgels_ft");
}

/// The solve with the factors is timed alone: `solve_s` in the JSON
/// report, part of the whole run's time, and the `solve (ROUTINE)` line.
fn assert_solve_timed(r: &ftla_bench::report::FactorReport, stdout: &str, routine: &str) {
    assert!(r.solve_s.is_some_and(|s| s > 0.0 && s < r.time_s), "{routine}: {r:?}");
    assert!(stdout.contains(&format!("solve ({routine}) ")), "{stdout}");
}

#[cfg(feature = "full-tests")]
#[test]
fn qr_ft_lstsq_of_a_consistent_system_recovers_x_after_a_restart() {
    // B = A·X in A's range: the least-squares solution is X. The kill
    // comes before the checksums exist: the factorization restarts, and
    // the replacement reads its blocks of B from the file again.
    let (n, k) = (96, 2);
    let (a, x_true, b) = system(n, k);
    // A taller A: [A; A] (2N×N), B stacked likewise.
    let mut tall = vec![0.0; 2 * n * n];
    let mut tall_b = vec![0.0; 2 * n * k];
    for j in 0..n {
        tall[j * 2 * n..j * 2 * n + n].copy_from_slice(&a[j * n..(j + 1) * n]);
        tall[j * 2 * n + n..(j + 1) * 2 * n].copy_from_slice(&a[j * n..(j + 1) * n]);
    }
    for c in 0..k {
        tall_b[c * 2 * n..c * 2 * n + n].copy_from_slice(&b[c * n..(c + 1) * n]);
        tall_b[c * 2 * n + n..(c + 1) * 2 * n].copy_from_slice(&b[c * n..(c + 1) * n]);
    }
    let (fa, fb, fx) = (scratch("ta.npy"), scratch("tb.npy"), scratch("tx.npy"));
    write_npy(&fa, 2 * n, n, &tall).unwrap();
    write_npy(&fb, 2 * n, k, &tall_b).unwrap();
    let mut args = file_args(&fa, &fb, &fx);
    args.extend(["--kill".into(), "1@0:encode".into()]);
    let (out, r) = Ft::new("qr", &["--grid", "2x2", "--nb", "16", "--lstsq"])
        .run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(r, &out);
    assert_eq!(r.restarts, Some(1), "{r:?}");
    assert!(r.lstsq_residual.is_some_and(|v| v < 16.0), "{r:?}");
    let x = read_npy(&fx).unwrap();
    assert_eq!((x.rows, x.cols), (n, k));
    assert_solution(&x.data, &x_true, "");
    remove_files([fa, fb, fx]);
}

#[test]
fn lu_ft_solve_lost_before_bs_checksums_is_solved_again_with_the_kept_factors() {
    // A loss at pdgetrs_ft's verdicts: the call returns a process failure,
    // the job repairs and calls it again with B made again; nothing of
    // the factors is recomputed (no recovery: the replacement's blocks of
    // the factors are mended from their checksums at the solve's start).
    let lu = Ft::new("lu", &["--grid", "2x2", "--n", "256", "--nb", "32", "--solve", "--nrhs", "3", "--check"]);
    for (kill, spares) in [("1@getrs:0:args", "0"), ("0@getrs:0:encode", "1")] {
        let (out, r) = lu.run(&["--verify", "--spares", spares, "--kill", kill]);
        assert_eq!(out.code, Some(0), "{kill}: {}\n{}", out.stdout, out.stderr);
        assert!(out.stdout.contains("solving again with the kept factors"), "{kill}: {}", out.stdout);
        let r = report(r, &out);
        assert_eq!(r.restarts, Some(1), "{kill}: {r:?}");
        assert!(r.recoveries.iter().flatten().next().is_none(), "{kill}: {r:?}");
        // The repair behind the restart is in the report, and its count in
        // the text.
        let victim: i32 = kill[..1].parse().unwrap();
        let repairs = r.restart_repairs.clone().unwrap_or_default();
        assert_eq!(repairs.len(), 1, "{kill}: {r:?}");
        assert_eq!((&repairs[0].ranks, repairs[0].restarted.as_str()), (&vec![victim], "solve"), "{kill}: {r:?}");
        let mode = if spares == "0" { "spawn" } else { "spare" };
        assert!(repairs[0].mode == mode && repairs[0].repair_ms > 0.0, "{kill}: {r:?}");
        assert!(out.stdout.contains("0 recoveries, 1 restart"), "{kill}: {}", out.stdout);
        assert!(r.solve_residual.is_some_and(|s| s < 16.0) && residuals_pass(&r) && r.ok, "{kill}: {r:?}");
    }
}

#[test]
fn lu_ft_solve_after_a_loss_between_the_calls_gives_the_exact_x_on_every_rank() {
    // B = A·X read from a file; rank 1 dies in the program's own work
    // between pdgetrf_ft and pdgetrs_ft. Its replacement re-reads its
    // blocks of B, gets its blocks of the factors rebuilt, and its part of
    // X, written to the file with the others', is exact.
    let (n, k) = (128, 2);
    let (a, x_true, b) = system(n, k);
    let (fa, fb, fx) = (scratch("app-a.npy"), scratch("app-b.npy"), scratch("app-x.npy"));
    write_npy(&fa, n, n, &a).unwrap();
    write_npy(&fb, n, k, &b).unwrap();
    let mut args = file_args(&fa, &fb, &fx);
    args.extend(["--kill".into(), "1@app:0".into()]);
    let (out, r) = Ft::new("lu", &["--grid", "2x2", "--nb", "16", "--solve"])
        .run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("injecting SIGKILL into rank 1 at app:0"), "{}", out.stderr);
    assert_eq!(report(r, &out).restarts, Some(1));
    let x = read_npy(&fx).unwrap();
    assert_solution(&x.data, &x_true, "");
    remove_files([fa, fb, fx]);
}

#[test]
fn qr_ft_lstsq_lost_at_gels_encode_is_solved_again() {
    let shape = ["--grid", "2x3", "--m", "240", "--n", "150", "--nb", "16", "--lstsq", "--nrhs", "2", "--check"];
    let (out, r) = Ft::new("qr", &shape).run(&["--verify", "--kill", "4@gels:0:encode"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("solving again with the kept factors: rank(s) [4]"), "{}", out.stdout);
    let r = report(r, &out);
    assert_eq!(r.restarts, Some(1), "{r:?}");
    assert!(r.lstsq_residual.is_some_and(|v| v < 16.0) && residuals_pass(&r) && r.ok, "{r:?}");
}

#[cfg(feature = "full-tests")]
#[test]
fn qr_lstsq_minimum_norm_plain_and_ft_with_kills() {
    // M < N: the minimum-norm solution, LAPACK's dqrt16 and dqrt14 checks.
    let shape = ["--grid", "2x2", "--m", "100", "--n", "230", "--nb", "16", "--lstsq", "--nrhs", "3"];
    let json = scratch("mn.json");
    let j = json.display().to_string();
    let out = ftla(&[&["qr"][..], &shape, &["--json", &j]].concat());
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("least-squares residual"), "{}", out.stdout);
    let plain: ftla_bench::report::FactorReport =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("the report")).expect("a report");
    let _ = std::fs::remove_file(&json);
    assert!(plain.lstsq_residual.is_some_and(|v| v < 16.0) && plain.ok, "{plain:?}");
    assert_eq!((plain.m, plain.n), (100, 230), "{plain:?}");
    assert_solve_timed(&plain, &out.stdout, "pdgels");
    // pdgels_ft: a loss at the solve's verdicts (solved again), then in
    // the solve made again (the forward substitution with Rᵀ, step 3),
    // rebuilt.
    let (out, r) = Ft::new("qr", &shape).run(&["--verify", "--kill", "1@gels:0:args,3@gels:3:update"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("‖X−P·X‖_F"), "{}", out.stdout);
    let r = report(r, &out);
    assert_eq!(r.restarts, Some(1), "{r:?}");
    let ranks: Vec<Vec<i32>> = r.recoveries.iter().flatten().map(|e| e.ranks.clone()).collect();
    assert_eq!(ranks, [vec![3]], "{r:?}");
    assert!(r.lstsq_residual.is_some_and(|v| v < 16.0) && r.ok, "{r:?}");
    assert_solve_timed(&r, &out.stdout, "pdgels_ft");
}

#[test]
fn solve_options_that_cannot_apply_are_usage_errors() {
    let b = scratch("b-usage.npy");
    write_npy(&b, 50, 2, &[1.0; 100]).unwrap();
    let bf = b.display().to_string();
    let missing = scratch("missing.npy").display().to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["lu", "--n", "50", "--rhs", &bf], "--rhs needs --solve"),
        (vec!["lu", "--n", "50", "--nrhs", "2"], "--nrhs needs --solve"),
        (vec!["qr", "--n", "50", "--solution", "x.npy"], "--solution needs --lstsq"),
        (vec!["lu", "--n", "60", "--solve", "--rhs", &bf], "holds a 50x2 matrix, but B needs M = 60 rows"),
        (vec!["qr", "--m", "70", "--n", "50", "--lstsq", "--rhs", &bf], "B needs M = 70 rows"),
        (vec!["lu", "--n", "50", "--solve", "--nrhs", "3", "--rhs", &bf], "--nrhs 3 disagrees with --rhs"),
        (vec!["lu", "--n", "50", "--solve", "--rhs", &missing], "does not exist"),
        (vec!["qr", "--m", "40", "--n", "50", "--lstsq", "--check"], "--check with --lstsq needs M ≥ N"),
        (vec!["lu", "--n", "50", "--solve", "--nrhs", "0"], "0 is not in 1.."),
        // Kills in the solve: a step and a phase it has, once.
        (
            vec!["lu", "--ft", "--grid", "2x2", "--n", "64", "--nb", "16", "--kill", "1@getrs:3"],
            "getrs or app with --solve",
        ),
        (
            vec!["lu", "--ft", "--grid", "2x2", "--n", "64", "--nb", "16", "--solve", "--kill", "1@getrs:9"],
            "the last is 8",
        ),
        (
            vec!["lu", "--ft", "--grid", "2x2", "--n", "64", "--nb", "16", "--solve", "--kill", "1@getrs:2:encode"],
            "comes once, before step 0",
        ),
        (
            vec!["qr", "--ft", "--grid", "2x2", "--n", "64", "--nb", "16", "--lstsq", "--kill", "1@gels:8"],
            "the last is 7",
        ),
        (vec!["qr", "--ft", "--grid", "2x2", "--n", "64", "--nb", "16", "--kill", "1@gels:2"], "gels with --lstsq"),
    ];
    for (args, says) in &cases {
        let out = ftla(args);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
    }
    // FTLA_KILL cannot apply without --ft.
    let out = ftla_with(&["lu", "--n", "50", "--solve"], &[("FTLA_KILL", "1@lu:1:update")]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("kill points need --ft"), "{}", out.stderr);
    let _ = std::fs::remove_file(b);
}
