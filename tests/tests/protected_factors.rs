//! Protected LU factors survive real failures: real `mpiexec --with-ft
//! ulfm` launches of the `protected-factors` binary (2x2 and 2x3 grids,
//! processes SIGKILLed between the calls and inside a later
//! factorization, spawned replacements and hot spares, both ways of
//! writing the program, and checkpoint-on-failure), each with a hard
//! timeout. Every process,
//! replacements included, must end with the factors and pivots of a
//! failure-free `pdgetrf` of the same matrix, or — when more processes of
//! one row were lost than the checksums tolerate — every process must
//! refuse the factors.

use std::process::Command;

/// A launch of `protected-factors` with `args`, and what every process of
/// the PxQ grid must print: `replaced` are the grid ranks that died
/// (their replacements say so), `tail` the rest of each line.
fn launch(args: &[&str], ranks: i32, replaced: &[i32], kills: usize, tail: &str) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_protected-factors"));
    cmd.args(args).args(["--timeout", "120"]).env_remove("FTLA_KILL");
    let out = harness::launch(cmd);
    let all = format!("{args:?}\n{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.stderr.matches("ftla: injecting SIGKILL into").count(), kills, "{all}");
    for r in 0..ranks {
        let tag = if replaced.contains(&r) { " replacement" } else { "" };
        let want = format!("RANK {r}{tag} {tail}\n");
        assert!(out.stdout.contains(&want), "want {want}{all}");
    }
    assert_eq!(out.code, Some(0), "{all}");
}

#[test]
fn factors_lost_between_calls_and_in_a_later_call_are_rebuilt_on_every_process() {
    let whole = "holding=whole,whole ipiv=same,same factors=same,same";
    let cases: [(&[&str], i32, &[i32]); 6] = [
        // Region::run, spawn: a process of column 1 lost after the first
        // factorization, one of column 0 after the second (the first
        // replacement runs the body again and must get its mended copy
        // back).
        (&["--kill", "1@1", "--kill", "2@2"], 4, &[1, 2]),
        // A hot spare between the calls, then a loss inside the second
        // factorization: its recovery rebuilds the first factors too.
        (&["--spares", "1", "--kill", "1@1", "--kill-in-second", "2@lu:3:update"], 4, &[1, 2]),
        // Straight-line code with retries; a hot spare, then a spawn.
        (&["--style", "straight", "--spares", "1", "--kill", "2@1", "--kill", "1@2"], 4, &[1, 2]),
        // The first factors made before Region::run and kept outside it,
        // the second in its body; a hot spare, then a loss inside the
        // second.
        (&["--style", "outside", "--spares", "1", "--kill", "3@1", "--kill-in-second", "0@lu:2:update"], 4, &[0, 3]),
        // 2x3: each of columns 1 and 2, and 0 and 2, both styles.
        (&["--grid", "2x3", "--kill", "4@1", "--kill", "2@2"], 6, &[2, 4]),
        (&["--grid", "2x3", "--style", "straight", "--spares", "1", "--kill", "3@1", "--kill", "5@2"], 6, &[3, 5]),
    ];
    for &(args, ranks, replaced) in harness::cases!(cases, core = 2) {
        launch(args, ranks, replaced, 2, whole);
    }
}

#[test]
fn a_job_started_again_from_checkpoints_makes_the_first_factors_again_and_resumes_the_second() {
    // Checkpoint-on-failure: a loss inside the second factorization; the
    // job is started again, factors A1 afresh and resumes A2 from the
    // files (which are deleted at the end).
    let dir = std::env::temp_dir().join(format!("ftla-protected-factors-{}", std::process::id()));
    let dir_arg = dir.display().to_string();
    let whole = "holding=whole,whole ipiv=same,same factors=same,same";
    launch(&["--cof", &dir_arg, "--kill-in-second", "2@lu:3:update"], 4, &[], 1, whole);
    assert!(!dir.exists(), "checkpoints left in {dir_arg}");
}

#[test]
fn factors_that_lost_two_processes_of_a_row_at_once_are_refused_on_every_process() {
    // Ranks 2 and 3 (row 1) lost before the processes meet again: the
    // first factors are lost everywhere, a later replacement's copy
    // included; the second factors, made after, survive a later loss.
    let lost = "holding=lost,whole ipiv=same,same factors=input-lost(rank=0),same";
    let cases: [&[&str]; 2] = [
        &["--style", "straight", "--kill", "2@1", "--kill", "3@1", "--kill", "0@2"],
        // Region::run, row 0, then a loss inside the second factorization.
        &["--kill", "0@1", "--kill", "1@1", "--kill-in-second", "3@lu:2:update"],
    ];
    let replaced: [&[i32]; 2] = [&[0, 2, 3], &[0, 1, 3]];
    for (args, replaced) in harness::cases!(cases, core = 1).iter().zip(replaced) {
        launch(args, 4, replaced, 3, lost);
    }
}
