//! Fault-tolerant least squares on protected QR factors (`pdgels_ft`;
//! `QrFactors::factor`, `pdormqr_ft`, `upper_solve_ft`): real `mpiexec
//! --with-ft ulfm` launches of the `ft-lstsq` binary with hard timeouts,
//! processes SIGKILLed in every kind of solve phase and between the
//! factorization and the solve, replaced by spawns and by hot spares. X
//! must equal a plain `pdgels`'s of the same problem on every process (a
//! replacement's rows included) and LAPACK's `dgels` on rank 0.

// (The helpers of full-tier tests are unused in the core tier.)
#![cfg_attr(not(feature = "full-tests"), allow(unused_imports, dead_code))]

use harness::Captured;
use std::process::Command;

/// One launch of `ft-lstsq` with `args`, the kill points `kill` in
/// FTLA_KILL.
fn ft_lstsq(args: &[&str], kill: &str) -> Captured {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ft-lstsq"));
    cmd.args(args).args(["--timeout", "120"]).env("FTLA_KILL", kill);
    harness::launch(cmd)
}

/// Every grid rank of `ranks` reports X equal to the plain solve's, with
/// `recoveries` recoveries inside the calls, `replaced` as a replacement;
/// rank 0 reports LAPACK's X; the job exits 0.
fn assert_solved(out: &Captured, ranks: i32, replaced: Option<i32>, recoveries: usize, what: &str) {
    assert_as_plain(out, ranks, replaced, recoveries, what);
    assert!(out.stdout.contains("LAPACK ok\n"), "{what}:\n{}\n{}", out.stdout, out.stderr);
}

/// Every grid rank's copy of the protected factors (`QrFactors::to_matrix`,
/// a replacement's rebuilt) and tau equal the plain pdgeqrf's of A.
fn assert_factors_kept(out: &Captured, ranks: i32, what: &str) {
    for r in 0..ranks {
        let want = format!("FACTORS {r} ok\n");
        assert!(out.stdout.contains(&want), "{what}: {want}\n{}\n{}", out.stdout, out.stderr);
    }
}

/// [`assert_solved`] without LAPACK (Q·B).
fn assert_as_plain(out: &Captured, ranks: i32, replaced: Option<i32>, recoveries: usize, what: &str) {
    for r in 0..ranks {
        let tag = if replaced == Some(r) { " replacement" } else { "" };
        let want = format!("RANK {r}{tag} recoveries={recoveries} plain=ok\n");
        assert!(out.stdout.contains(&want), "{what}: {want}\n{}\n{}", out.stdout, out.stderr);
    }
    assert_eq!(out.code, Some(0), "{what}:\n{}\n{}", out.stdout, out.stderr);
}

#[test]
fn pdgels_ft_matches_pdgels_and_lapack_without_and_with_kills_in_both_parts_of_its_solve() {
    // 200x130 in blocks of 16: steps 0..8 apply Qᵀ's 9 panels, steps
    // 9..17 solve with R's 9 block rows.
    let out = ft_lstsq(&["--nrhs", "7"], "");
    assert_solved(&out, 4, None, 0, "no kill");
    for (kill, rank, spares, nrhs) in
        [("1@gels:3:update", 1, "0", "7"), ("2@gels:12:bcast", 2, "1", "1"), ("0@gels:5:commit", 0, "0", "1")]
    {
        let out = ft_lstsq(&["--nrhs", nrhs, "--spares", spares], kill);
        assert!(out.stderr.contains(&format!("injecting SIGKILL into rank {rank} at")), "{kill}\n{}", out.stderr);
        assert_solved(&out, 4, Some(rank), 1, kill);
        assert_factors_kept(&out, 4, kill);
    }
}

#[test]
fn pdormqr_ft_and_upper_solve_ft_survive_a_kill_in_their_phases() {
    for (kill, rank, spares, nrhs) in [("1@ormqr:2:bcast", 1, "0", "7"), ("2@trsm:4:update", 2, "1", "1")] {
        let out = ft_lstsq(&["--mode", "apart", "--nrhs", nrhs, "--spares", spares], kill);
        assert!(out.stderr.contains(&format!("injecting SIGKILL into rank {rank} at")), "{kill}\n{}", out.stderr);
        assert_solved(&out, 4, Some(rank), 1, kill);
        assert_factors_kept(&out, 4, kill);
    }
}

#[test]
fn pdormqr_ft_applying_q_survives_a_kill_and_matches_pdormqr() {
    // 2x3 with a hot spare; 7 right-hand sides.
    let kill = "3@ormqr:5:update";
    let out = ft_lstsq(&["--mode", "q", "--grid", "2x3", "--spares", "1", "--nrhs", "7"], kill);
    assert!(out.stderr.contains("injecting SIGKILL into rank 3 at"), "{}", out.stderr);
    assert_as_plain(&out, 6, Some(3), 1, kill);
    assert_factors_kept(&out, 6, kill);
}

#[test]
fn a_process_lost_between_the_factorization_and_the_solve_gets_its_factors_back() {
    // The replacement's factorization call returns a hollow copy, which
    // the region fills from the checksums when the solve starts.
    let out = ft_lstsq(&["--mode", "apart", "--kill-between", "3", "--nrhs", "7"], "");
    assert!(out.stderr.contains("injecting SIGKILL into grid rank 3"), "{}", out.stderr);
    assert_solved(&out, 4, Some(3), 0, "apart, between, spawn");
    assert_factors_kept(&out, 4, "apart, between, spawn");
    // In pdgels_ft, between its factorization and its solve: the solve's
    // first point (its argument verdict); the call is abandoned, the
    // region repairs and runs the body again.
    let out = ft_lstsq(&["--grid", "2x3", "--spares", "1"], "1@gels:0:args");
    assert!(out.stderr.contains("injecting SIGKILL into rank 1 at gels:0:args"), "{}", out.stderr);
    assert_solved(&out, 6, Some(1), 0, "gels, between, spare, 2x3");
    assert_factors_kept(&out, 6, "gels, between, spare, 2x3");
}

#[test]
fn after_a_loss_between_two_solves_the_first_b_is_lost_there_and_the_second_solve_is_right() {
    // The first solve completed before the replacement joined: its B is
    // marked lost there (and only there); the same protected factors,
    // rebuilt on the replacement, then solve the problem again.
    let out = ft_lstsq(&["--mode", "apart", "--grid", "2x3", "--kill-after", "4", "--spares", "1"], "");
    assert!(out.stderr.contains("injecting SIGKILL into grid rank 4 after the solve"), "{}", out.stderr);
    for r in 0..6 {
        let (tag, lost) = if r == 4 { (" replacement", true) } else { ("", false) };
        let want = format!("RANK {r}{tag} recoveries=0 plain=ok lost={lost}\n");
        assert!(out.stdout.contains(&want), "{want}\n{}\n{}", out.stdout, out.stderr);
    }
    assert!(out.stdout.contains("LAPACK ok\n"), "{}", out.stdout);
    assert_factors_kept(&out, 6, "after");
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
}

#[cfg(feature = "full-tests")]
#[test]
fn pdgels_ft_gives_the_minimum_norm_solution_for_fewer_rows_than_columns_under_kills() {
    // 100x130: the QR of Aᵀ (130x100), then steps 0..6 of the solve are
    // the forward substitution with Rᵀ (the last commit zeroes rows
    // 100..130), steps 7..13 apply Q's 7 panels.
    let wide = ["--m", "100", "--n", "130"];
    let out = ft_lstsq(&[&wide[..], &["--nrhs", "3"]].concat(), "");
    assert_solved(&out, 4, None, 0, "minimum norm, no kill");
    for (kill, rank, spares, nrhs) in [
        ("1@gels:2:bcast", 1, "0", "7"),
        ("2@gels:9:update", 2, "1", "1"),
        ("0@gels:6:commit", 0, "0", "1"),
        // (A replacement joining the factorization of Aᵀ does not take
        // part in the transpose the survivors made before it.)
        ("3@qr:2:panel", 3, "0", "7"),
    ] {
        let out = ft_lstsq(&[&wide[..], &["--nrhs", nrhs, "--spares", spares]].concat(), kill);
        assert!(out.stderr.contains(&format!("injecting SIGKILL into rank {rank} at")), "{kill}\n{}", out.stderr);
        assert_solved(&out, 4, Some(rank), 1, kill);
    }
    // More process rows than columns (the transpose's messages cross both
    // ways), ragged blocks.
    let kill = "4@gels:3:update";
    let out = ft_lstsq(&["--grid", "3x2", "--m", "77", "--n", "141", "--nb", "8", "--nrhs", "5"], kill);
    assert_solved(&out, 6, Some(4), 1, kill);
}

#[cfg(feature = "full-tests")]
#[test]
fn b_in_any_column_blocks_is_solved_as_by_the_plain_routines() {
    // B's rows in A's blocks of 16, its 7 columns in blocks of 1 (seven
    // blocks in four checksum groups on 2x2, three on 2x3), 5 (two
    // blocks, the last padded), 3 and 40 (more than NRHS: one block of
    // seven), through every solve, with a kill in each but the first.
    let out = ft_lstsq(&["--nrhs", "7", "--nb-b", "1"], "");
    assert_solved(&out, 4, None, 0, "gels, NB_B = 1");
    // (Step 12: the back substitution with R.)
    let kill = "1@gels:12:update";
    let out = ft_lstsq(&["--grid", "2x3", "--nrhs", "7", "--nb-b", "5"], kill);
    assert!(out.stderr.contains("injecting SIGKILL into rank 1 at"), "{kill}\n{}", out.stderr);
    assert_solved(&out, 6, Some(1), 1, "gels, NB_B = 5, 2x3");
    // Minimum norm: step 2 is the forward substitution with Rᵀ.
    let kill = "2@gels:2:update";
    let out = ft_lstsq(&["--m", "100", "--n", "130", "--nrhs", "7", "--nb-b", "40", "--spares", "1"], kill);
    assert!(out.stderr.contains("injecting SIGKILL into rank 2 at"), "{kill}\n{}", out.stderr);
    assert_solved(&out, 4, Some(2), 1, "gels, minimum norm, NB_B = 40");
    let kill = "3@trsm:2:bcast";
    let out = ft_lstsq(&["--mode", "apart", "--grid", "2x3", "--nrhs", "7", "--nb-b", "3"], kill);
    assert!(out.stderr.contains("injecting SIGKILL into rank 3 at"), "{kill}\n{}", out.stderr);
    assert_solved(&out, 6, Some(3), 1, "apart, NB_B = 3, 2x3");
    let kill = "0@ormqr:4:update";
    let out = ft_lstsq(&["--mode", "q", "--nrhs", "7", "--nb-b", "1"], kill);
    assert!(out.stderr.contains("injecting SIGKILL into rank 0 at"), "{kill}\n{}", out.stderr);
    assert_as_plain(&out, 4, Some(0), 1, "q, NB_B = 1");
}

#[test]
fn pdgels_ft_refuses_b_with_other_row_blocks_than_a_on_every_process() {
    // PDGELS's DESCB (argument 12), entry MB: MB_B ≠ MB_A.
    let out = ft_lstsq(&["--mb-b", "8"], "");
    for r in 0..4 {
        let want = format!("RANK {r} error: pdgels_ft: argument 12 (B, descriptor entry 5)");
        assert!(out.stdout.contains(&want), "{want}\n{}\n{}", out.stdout, out.stderr);
    }
    assert!(out.stdout.contains("(INFO -1205)\n"), "{}", out.stdout);
}

#[test]
fn factors_two_losses_in_a_process_row_took_are_refused_by_the_solve_on_every_process() {
    // Grid ranks 0 and 1 (process row 0) die between the calls: one
    // checksum per process row cannot rebuild both, so the factors are
    // lost and pdormqr_ft computes nothing, never a wrong X. (Two hot
    // spares take their places: a spawn of two replacements at once fails
    // now and then in Open MPI 5.0's runtime, docs/fault-tolerance.md, and
    // is not what this tests.)
    let out = ft_lstsq(&["--mode", "apart", "--spares", "2", "--kill-between", "0,1"], "");
    for r in 0..4 {
        let want = format!("RANK {r} error: pdormqr_ft: argument 6 (A) is the output of a call");
        assert!(out.stdout.contains(&want), "{want}\n{}\n{}", out.stdout, out.stderr);
    }
    assert!(!out.stdout.contains("plain="), "{}", out.stdout);
}

#[cfg(feature = "full-tests")]
#[test]
fn under_checkpoint_on_failure_a_restored_solve_or_factorization_resumes_and_solves() {
    let dir = std::env::temp_dir().join(format!("ftla-ft-lstsq-cof-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.display().to_string();
    // A loss in the solve: the job starts again and runs the program
    // again, its factorization too (the factors are whole in the new
    // job), and the solve resumes from its checkpoints (B at the
    // committed step): the solution is right, and no checkpoint is left.
    let out = ft_lstsq(&["--cof", &d], "1@gels:3:update");
    assert!(out.stderr.contains("starting the job again"), "{}", out.stderr);
    assert_solved(&out, 4, None, 1, "cof in the solve");
    assert_factors_kept(&out, 4, "cof in the solve");
    assert!(!dir.exists(), "{d} left behind");
    // A loss in the factorization: it resumes from its checkpoints and
    // completes in the new job, whose factors are whole: the solve is right.
    let out = ft_lstsq(&["--cof", &d, "--nrhs", "7"], "1@qr:3:update");
    assert!(out.stderr.contains("starting the job again"), "{}", out.stderr);
    assert_solved(&out, 4, None, 1, "cof in the factorization");
    assert!(!dir.exists(), "{d} left behind");
}
