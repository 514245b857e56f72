//! The C ABI from C: `examples/c/qr_lu_solve.c` (a ScaLAPACK-style program)
//! and `tests/c/abi_checks.c`, compiled with the MPI's `mpicc` against
//! `capi/include/ftla.h` and `libftla.so`, run under `ftla launch --np 4`
//! on a 2x2 grid, with kills.

// (The helpers of full-tier tests are unused in the core tier.)
#![cfg_attr(not(feature = "full-tests"), allow(unused_imports, dead_code))]

mod common;

use common::c_programs::{launch as launch_c, lib_dir, root};
use harness::Captured;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// Compiles a C program against the header and the library (once per test
/// binary and program).
fn compile(source: &str, name: &str) -> PathBuf {
    let out = std::env::temp_dir().join(format!("ftla-capi-test-{}-{name}", std::process::id()));
    let lib = lib_dir();
    let mut cc = Command::new(blacs_ft::mpicc_path());
    cc.args(["-O2", "-Wall", "-Werror", "-I"])
        .arg(root().join("capi/include"))
        .arg(root().join(source))
        .arg("-L")
        .arg(&lib)
        .args(["-lftla", "-lopenblas", "-lm"])
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-o")
        .arg(&out);
    let done = harness::run(cc, Duration::from_secs(120));
    assert_eq!(done.code, Some(0), "mpicc {source} failed:\n{}\n{}", done.stdout, done.stderr);
    out
}

fn example() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| compile("examples/c/qr_lu_solve.c", "qr_lu_solve"))
}

/// `ftla launch ARGS -- EXAMPLE 256 32 2 2` with `FTLA_KILL = kill`.
fn launch(args: &[&str], kill: &str) -> Captured {
    let mut all: Vec<&str> = vec!["launch", "--np", "4"];
    all.extend_from_slice(args);
    let prog = example().display().to_string();
    all.extend_from_slice(&["--", &prog, "256", "32", "2", "2"]);
    launch_c(&all, kill)
}

/// Grid rank `r`'s line among `got` (see [`lines`]).
fn line_of<'a>(got: &'a [(i32, String)], r: i32, out: &Captured) -> &'a str {
    let line = got.iter().find(|(g, _)| *g == r);
    &line.unwrap_or_else(|| panic!("no line of rank {r}:\n{}\n{}", out.stdout, out.stderr)).1
}

/// Each grid rank's verdict line.
fn lines(out: &Captured) -> Vec<(i32, String)> {
    let mut v: Vec<(i32, String)> = out
        .stdout
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("qr_lu_solve: grid rank ")?;
            Some((rest.split_whitespace().next()?.parse().ok()?, l.to_string()))
        })
        .collect();
    v.sort();
    v
}

/// Every grid rank found its R, L, U, pivots and x equal to LAPACK's (a
/// replacement that joined after the QR too: ftla keeps the QR's factors
/// protected and its R is rebuilt when it meets the survivors).
fn all_equal(out: &Captured, replaced: Option<i32>) {
    let got = lines(out);
    let ranks: Vec<i32> = got.iter().map(|(r, _)| *r).collect();
    assert_eq!(ranks, vec![0, 1, 2, 3], "a line per grid rank:\n{}\n{}", out.stdout, out.stderr);
    for (r, l) in &got {
        assert_eq!(l.contains("[replacement]"), replaced == Some(*r), "{l}");
        assert!(l.contains("R equal to LAPACK's") && l.ends_with("INFO 0 0 0"), "{l}");
        for want in ["L and U equal to LAPACK's", "pivots identical", "x correct"] {
            assert!(l.contains(want), "{l}");
        }
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
}

#[test]
fn a_scalapack_style_c_program_survives_a_kill_in_pdgeqrf_ft_and_matches_lapack() {
    // Failure-free.
    all_equal(&launch(&[], ""), None);
    // Grid rank 1 killed in step 3 of the QR: a spawned replacement runs
    // main from the top, joins the QR's recovery and holds its R.
    let out = launch(&[], "1@qr:3:update");
    assert!(out.stderr.contains("injecting SIGKILL into rank 1 at qr:3:update"), "{}", out.stderr);
    all_equal(&out, Some(1));
    // Checkpoint-on-failure: the survivors save, the job starts again and
    // the QR resumes from the files.
    let dir = std::env::temp_dir().join(format!("ftla-capi-cof-{}", std::process::id()));
    let d = dir.display().to_string();
    let out = launch(&["--recovery", "cof", "--checkpoint-dir", &d], "1@qr:3:update");
    assert!(out.stderr.contains("starting the job again (restart 1"), "{}", out.stderr);
    all_equal(&out, None);
    assert!(!dir.exists(), "{d} left behind");
    if !cfg!(feature = "full-tests") {
        return;
    }
    // Killed while the QR's arguments are agreed (before anything is
    // protected): the call starts over with the replacement.
    all_equal(&launch(&[], "3@qr:0:args"), Some(3));
    // A hot spare replaces rank 2 killed in the LU's row exchange; it
    // joined after the QR, whose re-run returns INFO 0 with a hollow copy
    // of the kept factors: the LU's recovery rebuilds it, and its R is
    // copied into its array at the end of the LU.
    all_equal(&launch(&["--spares", "1"], "2@lu:4:swap"), Some(2));
}

#[test]
fn a_c_programs_job_lost_whole_resumes_from_its_periodic_checkpoint() {
    // FTLA_CHECKPOINT_EVERY through `ftla launch`; the whole job lost in
    // the QR (its runtime daemon killed): the launcher resumes it under
    // --recovery auto, and every process's results are LAPACK's.
    let dir = std::env::temp_dir().join(format!("ftla-capi-periodic-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.display().to_string();
    let prog = example().display().to_string();
    let lib = lib_dir().display().to_string();
    let args =
        ["launch", "--np", "4", "--recovery", "auto", "--checkpoint-dir", &d, "--", &prog, "256", "32", "2", "2"];
    // (A checkpoint at every commit point: the newest when the job is lost
    // is step 6's, whatever the machine's speed.)
    let env = [("FTLA_KILL", "job@qr:6:update"), ("FTLA_CHECKPOINT_EVERY", "0"), ("LD_LIBRARY_PATH", lib.as_str())];
    let out = common::ftla_with(&args, &env);
    assert!(
        out.stderr.contains("pdgeqrf_ft at step 6 (generation 6)") && out.stderr.contains("resuming the job from it"),
        "{}",
        out.stderr
    );
    all_equal(&out, None);
    assert!(!dir.exists(), "{d} left behind");
}

#[test]
fn two_losses_in_one_process_row_are_a_distinct_info_on_every_survivor() {
    // (Two hot spares take the lost ranks' places: Open MPI 5.0's spawn of
    // two replacements at once fails now and then in its runtime, about 1
    // in 80 here (docs/fault-tolerance.md, "Failures, errors and
    // repairs"), which is not what this test is about.)
    let out = launch(&["--spares", "2"], "0@qr:3:update,1@qr:3:update");
    let got = lines(&out);
    for r in [2, 3] {
        let l = line_of(&got, r, &out);
        assert!(l.contains("INFO -10001 0 0"), "{l}");
    }
    assert!(out.stderr.contains("unrecoverable"), "{}", out.stderr);
    // The program saw its R wrong and said so: the job fails.
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
}

#[cfg(feature = "full-tests")]
#[test]
fn a_c_program_never_shrinks_its_grid() {
    // FTLA_RECOVERY=shrink: a C program's arrays and descriptors are its
    // own, so a hot spare repairs the loss...
    all_equal(&launch(&["--recovery", "shrink", "--spares", "1"], "1@qr:3:update"), Some(1));
    // ...and with none left the loss is unrecoverable, never a smaller
    // grid behind the program's back: INFO FTLA_INFO_UNRECOVERABLE for
    // the QR, and for the calls after it on the grid left unrepaired.
    let out = launch(&["--recovery", "shrink"], "1@qr:3:update");
    let got = lines(&out);
    for r in [0, 2, 3] {
        let l = line_of(&got, r, &out);
        assert!(l.contains("INFO -10001 -10001 -10001"), "{l}");
    }
    assert!(out.stderr.contains("may neither spawn nor shrink"), "{}", out.stderr);
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
}

#[test]
fn the_c_abi_keeps_scalapack_semantics() {
    let bin = compile("bench/tests/c/abi_checks.c", "abi_checks");
    let bin = bin.display().to_string();
    let out = launch_c(&["launch", "--np", "4", "--", &bin], "");
    assert!(!out.stdout.contains("FAIL"), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.lines().filter(|l| l.starts_with("ok ")).count() >= 30, "{}", out.stdout);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let out = launch_c(&["launch", "--np", "4", "--", &bin, "column"], "");
    assert!(!out.stdout.contains("FAIL"), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.stdout.lines().filter(|l| l.starts_with("ok ")).count(), 3, "{}", out.stdout);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
}

#[test]
fn a_plain_routine_that_loses_a_process_is_called_again_with_the_replacement() {
    let bin = compile("bench/tests/c/abi_checks.c", "abi_checks_retry").display().to_string();
    let out = launch_c(&["launch", "--np", "4", "--", &bin, "plain-retry"], "2@ftla_pdgeqrf:0:call");
    assert!(
        out.stderr.contains("injecting SIGKILL into rank 2 at ftla_pdgeqrf:0:call"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(!out.stdout.contains("FAIL"), "{}\n{}", out.stdout, out.stderr);
    for r in 0..4 {
        let tag = if r == 2 { " [replacement]" } else { "" };
        let lost = if r == 2 { 0 } else { 1 };
        let want = format!("plain retry: grid rank {r}{tag}, {lost} call(s) lost a process");
        assert!(out.stdout.contains(&want), "{want}:\n{}\n{}", out.stdout, out.stderr);
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
}

#[test]
fn a_replacement_gets_the_info_of_calls_refused_before_it_joined() {
    let bin = compile("bench/tests/c/abi_checks.c", "abi_checks_refused").display().to_string();
    let out = launch_c(&["launch", "--np", "4", "--", &bin, "refused"], "1@qr:3:update");
    assert!(out.stderr.contains("injecting SIGKILL into rank 1 at qr:3:update"), "{}\n{}", out.stdout, out.stderr);
    assert!(!out.stdout.contains("FAIL"), "{}\n{}", out.stdout, out.stderr);
    for r in 0..4 {
        let tag = if r == 1 { " [replacement]" } else { "" };
        let want = format!("refused then kill: grid rank {r}{tag}\n");
        assert!(out.stdout.contains(&want), "{want}:\n{}\n{}", out.stdout, out.stderr);
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
}

/// `tests/c/crash_after_gridinit.c` under `ftla launch LAUNCHER --np 2`
/// (1x2 grid): grid rank 1 ends as `how` says, rank 0 exits with status 0.
fn crash_after_gridinit(launcher: &[&str], how: &[&str]) -> Captured {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    let bin = BIN.get_or_init(|| compile("bench/tests/c/crash_after_gridinit.c", "crash_after_gridinit"));
    let prog = bin.display().to_string();
    let mut args = vec!["launch"];
    args.extend_from_slice(launcher);
    args.extend_from_slice(&["--np", "2", "--", &prog]);
    args.extend_from_slice(how);
    launch_c(&args, "")
}

#[test]
fn a_process_that_dies_of_a_signal_fails_the_job_unless_a_recovery_replaced_it() {
    // SIGSEGV or abort() in rank 1, nothing that would notice it in rank
    // 0: MPI's launcher says nothing and exits 0; ftla's names the rank
    // and the signal, and fails the job.
    for &(how, signal) in harness::cases!([("segv", "signal 11 (SIGSEGV)"), ("abort", "signal 6 (SIGABRT)")], core = 1)
    {
        let out = crash_after_gridinit(&[], &[how]);
        assert_eq!(out.code, Some(1), "{how}:\n{}\n{}", out.stdout, out.stderr);
        assert!(out.stdout.contains("grid rank 0 done") && !out.stdout.contains("grid rank 1 done"), "{}", out.stdout);
        let says = format!("died of {signal}, and no recovery replaced it: the job failed");
        assert!(
            out.stderr.contains("ftla: grid rank 1 (process ") && out.stderr.contains(&says),
            "{how}:\n{}",
            out.stderr
        );
    }
    // The same death, then a fault-tolerant QR: rank 0 meets the loss, a
    // spawned replacement takes grid rank 1, and the job succeeds.
    for &how in harness::cases!(["segv", "abort"], core = 1) {
        let out = crash_after_gridinit(&[], &[how, "qr"]);
        assert_eq!(out.code, Some(0), "{how} qr:\n{}\n{}", out.stdout, out.stderr);
        for line in ["grid rank 0: pdgeqrf_ft_ INFO 0", "grid rank 1 [replacement]: pdgeqrf_ft_ INFO 0"] {
            assert!(out.stdout.contains(line), "{how} qr: {line}:\n{}\n{}", out.stdout, out.stderr);
        }
        assert!(!out.stderr.contains("no recovery replaced it"), "{how} qr:\n{}", out.stderr);
    }
    if !cfg!(feature = "full-tests") {
        return;
    }
    // Without ULFM the launcher ends the job at the first loss: the same
    // verdict (not a lost grid: rank 0 was ended by the launcher).
    let out = crash_after_gridinit(&["--no-ft"], &["segv"]);
    assert_eq!(out.code, Some(1), "no ULFM:\n{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("died of signal 11 (SIGSEGV), and no recovery replaced it"), "{}", out.stderr);
    assert!(!out.stderr.contains("every process of the grid was lost"), "{}", out.stderr);
    // An exit status is the process's own report: failed, no signal said.
    let out = crash_after_gridinit(&[], &["exit7"]);
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    assert!(!out.stderr.contains("died of signal"), "{}", out.stderr);
    let out = crash_after_gridinit(&[], &["ok"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("grid rank 0 done") && out.stdout.contains("grid rank 1 done"), "{}", out.stdout);
}

/// `tests/c/input_lost.c` under `ftla launch --np NP`: the plain
/// ftla_pdgetrf_, grid rank 2 lost (`how`: "between" the calls by its own
/// SIGKILL, or at the kill point of `kill`), then the plain ftla_pdgetrs_;
/// `refactor`: factor again after FTLA_INFO_INPUT_LOST. `replaced`: the
/// grid ranks whose replacements print the lines (they joined after the
/// first factorization).
fn input_lost(
    launch_args: &[&str],
    how: &str,
    kill: &str,
    refactor: bool,
    replaced: &[usize],
) -> (Captured, Vec<String>) {
    let (out, got) = input_lost_run(launch_args, how, kill, refactor, "plain");
    for (r, l) in got.iter().enumerate() {
        // A replacement's first factorization had completed before it joined.
        let replaced = replaced.contains(&r);
        assert_eq!(l.contains("[replacement]"), replaced, "{l}");
        let factor = if replaced { "factor INFO -10005," } else { "factor INFO 0," };
        assert!(l.contains(factor), "{l}");
        // Never INFO 0 with a wrong x: the solve refuses, on every process.
        assert!(l.contains("solve INFO -10006, x"), "{l}\n{}", out.stderr);
    }
    (out, got)
}

/// `tests/c/input_lost.c` with the first factorization `factor` ("plain"
/// or "ft"): each grid rank's line, sorted.
fn input_lost_run(
    launch_args: &[&str],
    how: &str,
    kill: &str,
    refactor: bool,
    factor: &str,
) -> (Captured, Vec<String>) {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    let bin = BIN.get_or_init(|| compile("bench/tests/c/input_lost.c", "input_lost")).display().to_string();
    let mut args = vec!["launch", "--np"];
    args.extend_from_slice(launch_args);
    args.extend_from_slice(&["--", &bin, "256", "32", how, "2", if refactor { "1" } else { "0" }, factor]);
    let out = launch_c(&args, kill);
    let mut got: Vec<String> =
        out.stdout.lines().filter(|l| l.starts_with("input_lost: grid rank ")).map(str::to_string).collect();
    got.sort();
    assert_eq!(got.len(), 4, "a line per grid rank:\n{}\n{}", out.stdout, out.stderr);
    for (r, l) in got.iter().enumerate() {
        assert!(l.starts_with(&format!("input_lost: grid rank {r}")), "{l}");
    }
    (out, got)
}

#[cfg(feature = "full-tests")]
#[test]
fn a_plain_solve_given_kept_factors_is_right_on_every_process_after_a_loss() {
    // pdgetrf_ft_ keeps its factors protected: grid rank 2 dies between
    // the calls, and the plain ftla_pdgetrs_ (the call where the
    // replacement meets the survivors, its A filled again first) gives the
    // right x on every process, with INFO 0, the replacement included.
    let (out, got) = input_lost_run(&["4"], "between", "", false, "ft");
    for (r, l) in got.iter().enumerate() {
        assert_eq!(l.contains("[replacement]"), r == 2, "{l}");
        assert!(l.contains("factor INFO 0, solve INFO 0, x correct"), "{l}\n{}", out.stderr);
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
}

#[cfg(feature = "full-tests")]
#[test]
fn a_plain_solve_given_factors_a_replacement_lost_is_refused_on_every_process() {
    // Grid rank 2 dies between the plain ftla_pdgetrf_ (whose factors
    // nothing protects) and the solve (a spawned replacement runs main from
    // the top; a hot spare takes over), the program factoring again, with
    // pdgetrf_ft_, after FTLA_INFO_INPUT_LOST: the right x on
    // every process, the replacement's part included, and exit 0.
    for launch_args in [&["4"][..], &["4", "--spares", "1"][..]] {
        let (out, got) = input_lost(launch_args, "between", "", true, &[2]);
        for l in &got {
            assert!(l.contains("refactor INFO 0, solve INFO 0, x correct"), "{l}");
        }
        assert!(out.stderr.contains("(A) is the output of a call that completed before grid rank 2"), "{}", out.stderr);
        assert_eq!(out.code, Some(0), "{launch_args:?}:\n{}\n{}", out.stdout, out.stderr);
    }
    // Killed inside the solve: the survivors get FTLA_INFO_PROCESS_LOST,
    // call it again and meet the replacement there; a program that gives up
    // on the lost input fails the job.
    let (out, got) = input_lost(&["4"], "none", "2@ftla_pdgetrs:0:call", false, &[2]);
    assert!(out.stderr.contains("injecting SIGKILL into rank 2 at ftla_pdgetrs:0:call"), "{}", out.stderr);
    for l in &got {
        assert!(l.contains("refactor INFO -1, solve INFO -10006"), "{l}");
    }
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
}

#[cfg(feature = "full-tests")]
#[test]
fn a_later_replacement_gets_the_lost_input_refusal_from_the_status_log() {
    // Grid rank 2 dies between the calls; after the refusal, grid rank 1
    // dies in the second factorization (after the first repair). Its
    // replacement runs main from the top: the first (plain) factorization
    // completed before it joined, the solve's refusal comes from the log (the same
    // INFO, without meeting anybody), and it joins the factorization's
    // recovery: the right x everywhere.
    let (out, got) = input_lost(&["4"], "between", "1@lu:2:update/1", true, &[1, 2]);
    assert!(out.stderr.contains("injecting SIGKILL into rank 1 at lu:2:update"), "{}", out.stderr);
    for l in &got {
        assert!(l.contains("refactor INFO 0, solve INFO 0, x correct"), "{l}");
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
}

/// `tests/c/protected_solve.c ARGS` under `ftla launch --np 4 LAUNCH`
/// with `FTLA_KILL = kill`: each grid rank's line, sorted.
fn protected_solve(launch_args: &[&str], args: &[&str], kill: &str) -> (Captured, Vec<String>) {
    protected_solve_on(4, launch_args, args, kill)
}

/// [`protected_solve`] on a grid of `np` processes.
fn protected_solve_on(np: usize, launch_args: &[&str], args: &[&str], kill: &str) -> (Captured, Vec<String>) {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    let bin = BIN.get_or_init(|| compile("bench/tests/c/protected_solve.c", "protected_solve"));
    rank_lines(bin, "protected_solve", np, launch_args, args, kill)
}

/// The C program `bin` (whose lines start with `name`) with `args` on `np`
/// processes under `ftla launch LAUNCH` with `FTLA_KILL = kill`: each
/// grid rank's line (its INFO checks' lines left out), sorted, one per
/// grid rank.
fn rank_lines(
    bin: &Path,
    name: &str,
    np: usize,
    launch_args: &[&str],
    args: &[&str],
    kill: &str,
) -> (Captured, Vec<String>) {
    let (bin, np_arg) = (bin.display().to_string(), np.to_string());
    let mut all = vec!["launch", "--np", &np_arg];
    all.extend_from_slice(launch_args);
    all.extend_from_slice(&["--", &bin]);
    all.extend_from_slice(args);
    let out = launch_c(&all, kill);
    let prefix = format!("{name}: grid rank ");
    let mut got: Vec<String> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with(&prefix) && !l.contains(", expected "))
        .map(str::to_string)
        .collect();
    got.sort();
    assert_eq!(got.len(), np, "a line per grid rank:\n{}\n{}", out.stdout, out.stderr);
    for (r, l) in got.iter().enumerate() {
        assert!(l.starts_with(&format!("{prefix}{r}")), "{l}");
    }
    (out, got)
}

#[test]
fn factors_kept_by_pdgetrf_ft_survive_a_process_lost_between_calls() {
    // The program of the usual pattern: pdgetrf_ft_, grid rank 2 dies
    // during the program's own work, the survivors call pdgetrs_ft_ and
    // again once on FTLA_INFO_PROCESS_LOST. Every process, the replacement
    // included (spawned, or a hot spare), ends with the known x, its A
    // holding LAPACK's L and U and its IPIV LAPACK's pivots.
    // (The core tier: the spawned replacement; the full tier adds the
    // spare and the 2x3 grid.)
    let launches: [&[&str]; 2] = [&[], &["--spares", "1"]];
    for &launch_args in harness::cases!(launches, core = 1) {
        let (out, got) = protected_solve(launch_args, &["lu", "512", "64", "2", "3"], "");
        for (r, l) in got.iter().enumerate() {
            assert_eq!(l.contains("[replacement]"), r == 2, "{l}");
            // The replacement's re-run pdgetrf_ft_ returns INFO 0 (its
            // copy of the factors is rebuilt when it meets the survivors),
            // and the solve's verdict repairs the grid and goes on.
            assert!(l.contains("factor INFO 0, solve INFO 0 (first 0)"), "{l}");
            assert!(l.contains("x correct") && l.contains("equal to LAPACK's L and U"), "{l}");
            assert!(l.contains("pivots identical"), "{l}");
        }
        assert_eq!(out.code, Some(0), "{launch_args:?}:\n{}\n{}", out.stdout, out.stderr);
    }
    if !cfg!(feature = "full-tests") {
        return;
    }
    // On a 2x3 grid, grid rank 4 lost between the calls.
    let (out, got) = protected_solve_on(6, &[], &["lu", "384", "32", "4", "2", "2x3"], "");
    for (r, l) in got.iter().enumerate() {
        assert_eq!(l.contains("[replacement]"), r == 4, "{l}");
        assert!(l.contains("factor INFO 0, solve INFO 0 (first 0), x correct"), "{l}");
        assert!(l.contains("equal to LAPACK's L and U"), "{l}");
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
}

#[test]
fn the_cholesky_factor_kept_by_pdpotrf_ft_survives_losses_between_and_in_the_calls() {
    // Grid rank 1 dies during the program's own work between pdpotrf_ft_
    // and pdpotrs_ft_; then (full tier) rank 3 inside the factorization
    // and rank 2 inside the solve. Every process, the replacements
    // included, ends with the known x, LAPACK's L in A's lower triangle
    // and the upper triangle as the program gave it; UPLO = 'U' is
    // refused (INFO -1) first.
    let cases: &[(&str, &str, &str)] =
        harness::cases!([("1", "", "1"), ("-1", "3@potrf:4:update", "3"), ("-1", "2@potrs:5:bcast", "2")], core = 1);
    for &(between, kill, replaced) in cases {
        let (out, got) = protected_solve(&[], &["chol", "384", "32", between, "2"], kill);
        for (r, l) in got.iter().enumerate() {
            assert_eq!(l.contains("[replacement]"), r.to_string() == replaced, "{kill}: {l}");
            assert!(l.contains("UPLO=U INFO -1, factor INFO 0, solve INFO 0"), "{kill}: {l}");
            assert!(l.contains("x correct") && l.contains("L equal to LAPACK's"), "{kill}: {l}");
            assert!(l.contains("upper triangle as given"), "{kill}: {l}");
        }
        assert_eq!(out.code, Some(0), "{kill}:\n{}\n{}", out.stdout, out.stderr);
    }
}

#[test]
fn pdposv_ft_factors_solves_and_keeps_the_factor_through_losses() {
    // A bad B on grid rank 1 is refused everywhere before A is touched
    // (INFO -1107: RSRC_B); then grid rank 2 dies inside pdposv_ft_'s
    // solve (full tier: rank 1 inside its factorization; rank 3 after
    // the call, whose replacement gets FTLA_INFO_RESULT_LOST from its
    // re-run, X lost but A's factor kept), and a pdpotrs_ft_ with the
    // factor pdposv_ft_ kept gives the known x again, on the replacement
    // too.
    let cases: &[(&str, &str, &str)] =
        harness::cases!([("-1", "2@potrs:3:update", "2"), ("3", "", "3"), ("-1", "1@potrf:2:bcast", "1")], core = 1);
    for &(between, kill, replaced) in cases {
        let (out, got) = protected_solve(&[], &["posv", "256", "32", between, "2"], kill);
        for (r, l) in got.iter().enumerate() {
            assert_eq!(l.contains("[replacement]"), r.to_string() == replaced, "{kill}: {l}");
            assert!(l.contains("bad B INFO -1107, factor INFO 0, solve INFO 0"), "{kill}: {l}");
            assert!(l.contains("x correct") && l.contains("L equal to LAPACK's"), "{kill}: {l}");
            assert!(l.contains("upper triangle as given"), "{kill}: {l}");
        }
        assert_eq!(out.code, Some(0), "{kill}:\n{}\n{}", out.stdout, out.stderr);
    }
}

#[cfg(feature = "full-tests")]
#[test]
fn kept_factors_that_cannot_be_rebuilt_are_refused_on_every_process() {
    // Grid ranks 0 and 1, one process row, die together between
    // pdgetrf_ft_ and the solve: more than the checksums rebuild. Both are
    // replaced, and the solve refuses the factors everywhere (never a
    // wrong x); the program gives up, and the job fails.
    let (out, got) = protected_solve(&[], &["lu", "256", "32", "0,1", "1"], "");
    for (r, l) in got.iter().enumerate() {
        assert_eq!(l.contains("[replacement]"), r < 2, "{l}");
        assert!(l.contains("factor INFO 0, solve INFO -10006 (first -10006)"), "{l}");
    }
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
}

#[cfg(feature = "full-tests")]
#[test]
fn a_kill_inside_pdgetrs_ft_is_repaired_there() {
    // Seven right-hand sides; grid rank 2 killed in a block step of L^-1.
    let (out, got) = protected_solve(&[], &["lu", "512", "64", "-1", "7"], "2@getrs:3:update");
    assert!(out.stderr.contains("injecting SIGKILL into rank 2 at getrs:3:update"), "{}", out.stderr);
    for (r, l) in got.iter().enumerate() {
        assert_eq!(l.contains("[replacement]"), r == 2, "{l}");
        assert!(l.contains("factor INFO 0, solve INFO 0 (first 0), x correct"), "{l}");
        assert!(l.contains("equal to LAPACK's L and U"), "{l}");
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
}

#[cfg(feature = "full-tests")]
#[test]
fn kept_qr_factors_and_least_squares_survive_a_process_lost() {
    // pdgeqrf_ft_, grid rank 1 dies between the calls, pdormqr_ft_ applies
    // Q^T: LAPACK's dormqr everywhere, and the replacement's A holds R.
    let (out, got) = protected_solve(&[], &["qr", "256", "32", "1", "2"], "");
    for l in &got {
        assert!(l.contains("ormqr INFO 0") && l.contains("Q^T C equal to LAPACK's"), "{l}");
        assert!(l.contains("R equal to LAPACK's"), "{l}");
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    // pdgels_ft_ after a loss between calls (M >= N), and with a kill in
    // its protected solve (M < N, minimum norm): LAPACK's dgels.
    let (out, got) = protected_solve(&[], &["gels", "320", "192", "32", "3", "2"], "");
    for (r, l) in got.iter().enumerate() {
        assert_eq!(l.contains("[replacement]"), r == 3, "{l}");
        assert!(l.contains("gels 320x192 query INFO 0") && l.contains("equal to LAPACK's dgels"), "{l}");
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    // Killed in the solve's encoding, after the factorization inside
    // pdgels_ft_ completed: the survivors run it again from its
    // factorization (kept), the replacement re-runs it from the log.
    let (out, got) = protected_solve(&[], &["gels", "320", "192", "32", "-1", "2"], "3@gels:0:encode");
    assert!(out.stderr.contains("injecting SIGKILL into rank 3 at gels:0:encode"), "{}", out.stderr);
    for l in &got {
        assert!(l.contains("INFO 0 (first 0)") && l.contains("equal to LAPACK's dgels"), "{l}");
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let (out, got) = protected_solve(&[], &["gels", "192", "320", "32", "-1", "1"], "1@gels:2:update");
    assert!(out.stderr.contains("injecting SIGKILL into rank 1 at gels:2:update"), "{}", out.stderr);
    for l in &got {
        assert!(l.contains("INFO 0 (first 0)") && l.contains("equal to LAPACK's dgels"), "{l}");
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    // One process's LWORK one short, where the minimum-norm solve
    // transposes A before its factorization's verdict: refused on every
    // process (never a process alone in an agreement), then solved.
    let (out, got) = protected_solve(&[], &["gels", "192", "320", "32", "-1", "1", "2"], "");
    for l in &got {
        assert!(l.contains("short INFO -14, INFO 0 (first 0)") && l.contains("equal to LAPACK's dgels"), "{l}");
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
}

#[test]
fn a_solve_refuses_factors_the_program_changed_or_released() {
    let (out, got) = protected_solve(&[], &["refusals", "256", "32"], "");
    for l in &got {
        assert!(l.ends_with("refusals as documented"), "{l}\n{}", out.stdout);
    }
    for said in [
        "(A) is not what pdgetrf_ft_ returned (changed since)",
        "(IPIV) is not what pdgetrf_ft_ returned",
        "factor A with pdgetrf_ft_ first",
        "holds the factors of pdgetrf_ft_: factor A with pdgeqrf_ft_ first",
    ] {
        assert!(out.stderr.contains(said), "{said}:\n{}", out.stderr);
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
}

#[cfg(feature = "full-tests")]
#[test]
fn the_factor_once_solve_many_example_survives_a_kill_between_solves() {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    let bin = BIN
        .get_or_init(|| compile("examples/c/factor_once_solve_many.c", "factor_once_solve_many"))
        .display()
        .to_string();
    // Grid rank 1 dies after the second of four solves (index 1).
    let out = launch_c(&["launch", "--np", "4", "--", &bin, "512", "64", "4", "1", "1"], "");
    let mut got: Vec<&str> =
        out.stdout.lines().filter(|l| l.starts_with("factor_once_solve_many: grid rank ")).collect();
    got.sort();
    assert_eq!(got.len(), 4, "a line per grid rank:\n{}\n{}", out.stdout, out.stderr);
    for (r, l) in got.iter().enumerate() {
        assert!(l.starts_with(&format!("factor_once_solve_many: grid rank {r}")), "{l}");
        // The replacement's first two solves had completed before it
        // joined; every solve after the loss is right everywhere.
        let infos =
            if r == 1 { "[replacement]: 4 solves, INFO -10005 -10005 0 0;" } else { "): 4 solves, INFO 0 0 0 0;" };
        assert!(l.contains(infos) && l.contains("x correct"), "{l}");
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    // The factors kept in A itself (in-place), grid rank 3 dying after
    // the first solve: the same solves, ftla holding no copy of A.
    let out = launch_c(&["launch", "--np", "4", "--", &bin, "512", "64", "4", "3", "0", "in-place"], "");
    let mut got: Vec<&str> =
        out.stdout.lines().filter(|l| l.starts_with("factor_once_solve_many: grid rank ")).collect();
    got.sort();
    assert_eq!(got.len(), 4, "a line per grid rank:\n{}\n{}", out.stdout, out.stderr);
    for (r, l) in got.iter().enumerate() {
        let infos = if r == 3 { "[replacement]: 4 solves, INFO -10005 0 0 0;" } else { "): 4 solves, INFO 0 0 0 0;" };
        assert!(l.contains(infos) && l.contains("x correct") && l.contains("(in place, A's local array"), "{l}");
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    // Two failures at different times: grid rank 1 dies after the first
    // solve, and grid rank 2 inside the second (after the first repair).
    let out = launch_c(&["launch", "--np", "4", "--", &bin, "512", "64", "4", "1", "0"], "2@getrs:2:update/1");
    assert!(out.stderr.contains("injecting SIGKILL into rank 2 at getrs:2:update (epoch 1)"), "{}", out.stderr);
    let mut got: Vec<&str> =
        out.stdout.lines().filter(|l| l.starts_with("factor_once_solve_many: grid rank ")).collect();
    got.sort();
    assert_eq!(got.len(), 4, "a line per grid rank:\n{}\n{}", out.stdout, out.stderr);
    for (r, l) in got.iter().enumerate() {
        let infos =
            if r == 1 || r == 2 { "[replacement]: 4 solves, INFO -10005 0 0 0;" } else { "): 4 solves, INFO 0 0 0 0;" };
        assert!(l.contains(infos) && l.contains("x correct"), "{l}");
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
}

/// `tests/c/in_place.c ARGS` on `np` processes under `ftla launch
/// LAUNCH` with `FTLA_KILL = kill`: each grid rank's line, sorted.
fn in_place(np: usize, launch_args: &[&str], args: &[&str], kill: &str) -> (Captured, Vec<String>) {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    let bin = BIN.get_or_init(|| compile("bench/tests/c/in_place.c", "in_place"));
    rank_lines(bin, "in_place", np, launch_args, args, kill)
}

/// The bytes ftla keeps and the local A's bytes, from a line of
/// `in_place.c`.
fn kept_and_local(line: &str) -> (u64, u64) {
    let number_before = |what: &str| -> u64 {
        let head = &line[..line.find(what).unwrap_or_else(|| panic!("no '{what}' in {line}"))];
        head.rsplit(' ').find(|w| !w.is_empty()).and_then(|w| w.parse().ok()).unwrap_or_else(|| panic!("{line}"))
    };
    let kept = number_before(" bytes, local A");
    let local = line
        .rsplit("local A ")
        .next()
        .and_then(|t| t.trim_end_matches(" bytes").parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    (kept, local)
}

#[cfg(feature = "full-tests")]
#[test]
fn factors_kept_in_the_programs_own_array_survive_a_process_lost_between_calls() {
    // A allocated with the room ftla_kept_lsize_ says and declared with
    // ftla_in_place_: pdgetrf_ft_ works in it and keeps the factors there.
    // Grid rank 2 dies between the factorization and the solves; its
    // replacement (spawned, or a hot spare) re-runs the program from the
    // top, and the mend writes its part of the factors straight into its
    // A. Every process solves right and holds LAPACK's L and U.
    let mut in_place_kept = Vec::new();
    for launch_args in [&[][..], &["--spares", "1"][..]] {
        let (out, got) = in_place(4, launch_args, &["lu", "512", "32", "2", "3", "2x2"], "");
        in_place_kept.clear();
        for (r, l) in got.iter().enumerate() {
            assert_eq!(l.contains("[replacement]"), r == 2, "{l}");
            assert!(l.contains("in place, declare INFO 0, factor INFO 0, solve INFO 0 0, x correct"), "{l}");
            assert!(l.contains("equal to LAPACK's L and U") && l.contains("pivots identical"), "{l}");
            // ftla holds the left-factor sums (their pair on two process
            // columns: 2/Q of A's local array) and the N pivots, no copy.
            let (kept, local) = kept_and_local(l);
            assert!(kept > 0 && kept <= local + 512 * 8, "{l}");
            in_place_kept.push(kept);
        }
        assert_eq!(out.code, Some(0), "{launch_args:?}:\n{}\n{}", out.stdout, out.stderr);
    }
    // The copy path keeps A's copy with its checksum columns, (1 + 2/Q)
    // times A's local array, on top.
    let (out, got) = in_place(4, &[], &["lu", "512", "32", "-1", "1", "2x2", "copy"], "");
    for (l, in_place) in got.iter().zip(&in_place_kept) {
        assert!(l.contains("copy, declare INFO 0, factor INFO 0, solve INFO 0 0, x correct"), "{l}");
        let (kept, local) = kept_and_local(l);
        assert!(kept >= local && kept - in_place >= 2 * local, "in place {in_place}: {l}");
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    // Declared on the even grid ranks only, 512 local rows: the processes
    // of a row work in their own A (leading dimension 512) and in a copy
    // (padded to 520) side by side; grid rank 1 lost between the calls.
    let (out, got) = in_place(4, &[], &["lu", "1024", "32", "1", "1", "2x2", "mixed"], "");
    for (r, l) in got.iter().enumerate() {
        let how = if r % 2 == 0 { "in place" } else { "copy" };
        assert_eq!(l.contains("[replacement]"), r == 1, "{l}");
        assert!(l.contains(&format!("{how}, declare INFO 0, factor INFO 0, solve INFO 0 0, x correct")), "{l}");
        assert!(l.contains("equal to LAPACK's L and U") && l.contains("pivots identical"), "{l}");
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    // On a 2x3 grid, grid rank 4 lost between the calls.
    let (out, got) = in_place(6, &[], &["lu", "384", "32", "4", "2", "2x3"], "");
    for (r, l) in got.iter().enumerate() {
        assert_eq!(l.contains("[replacement]"), r == 4, "{l}");
        assert!(l.contains("in place, declare INFO 0, factor INFO 0, solve INFO 0 0, x correct"), "{l}");
        assert!(l.contains("equal to LAPACK's L and U"), "{l}");
        let (kept, local) = kept_and_local(l);
        assert!(kept > 0 && 5 * kept <= 4 * local, "{l}");
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
}

#[cfg(feature = "full-tests")]
#[test]
fn a_kill_inside_an_in_place_factorization_or_solve_is_repaired_there() {
    // Grid rank 1 killed in step 3 of pdgetrf_ft_ working in A: its
    // replacement's call joins the recovery in its own declared A. Grid
    // rank 2 killed in a block step of pdgetrs_ft_ on factors in place.
    for kill in ["1@lu:3:update", "2@getrs:3:update"] {
        let (out, got) = in_place(4, &[], &["lu", "512", "32", "-1", "2", "2x2"], kill);
        assert!(out.stderr.contains(&format!("injecting SIGKILL into rank {}", &kill[..1])), "{}", out.stderr);
        for (r, l) in got.iter().enumerate() {
            assert_eq!(l.contains("[replacement]"), r.to_string() == kill[..1], "{l}");
            assert!(l.contains("in place, declare INFO 0, factor INFO 0, solve INFO 0 0, x correct"), "{l}");
            assert!(l.contains("equal to LAPACK's L and U") && l.contains("pivots identical"), "{l}");
        }
        assert_eq!(out.code, Some(0), "{kill}:\n{}\n{}", out.stdout, out.stderr);
    }
}

#[cfg(feature = "full-tests")]
#[test]
fn released_in_place_factors_are_never_mended_into_the_freed_array() {
    // Factor in place, solve, release and free A; grid rank 1 dies; the
    // next in-place factorization and solve of a new A meet after the
    // repair: the released factors are not rebuilt (their array is gone),
    // and everything is right on every process.
    let (out, got) = in_place(4, &[], &["again", "256", "32", "1"], "");
    for (r, l) in got.iter().enumerate() {
        assert_eq!(l.contains("[replacement]"), r == 1, "{l}");
        // (The replacement's first solve had completed before it joined.)
        let first = if r == 1 { "again, first lost here" } else { "again, first right" };
        assert!(l.contains(first) && l.contains("second right"), "{l}");
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
}

#[cfg(feature = "full-tests")]
#[test]
fn qr_factors_kept_in_place_survive_a_process_lost_between_calls() {
    // pdgeqrf_ft_ in A itself, grid rank 1 dies (replaced by a spawned
    // process, or a hot spare), pdormqr_ft_ applies Q^T (LAPACK's dormqr)
    // then Q (C back): A unchanged by the first call.
    for launch_args in [&[][..], &["--spares", "1"][..]] {
        let (out, got) = in_place(4, launch_args, &["qr", "256", "32", "1", "2", "2x2"], "");
        for (r, l) in got.iter().enumerate() {
            assert_eq!(l.contains("[replacement]"), r == 1, "{l}");
            assert!(l.contains("factor INFO 0, ormqr INFO 0 0, Q^T C equal to LAPACK's"), "{l}");
            assert!(l.contains("Q Q^T C equal to C") && l.contains("R equal to LAPACK's"), "{l}");
        }
        assert_eq!(out.code, Some(0), "{launch_args:?}:\n{}\n{}", out.stdout, out.stderr);
    }
}

#[test]
fn an_in_place_declaration_that_does_not_fit_or_an_a_changed_since_is_refused_everywhere() {
    let (out, got) = in_place(4, &[], &["refusals", "256", "32"], "");
    for l in &got {
        assert!(l.ends_with("refusals as documented"), "{l}\n{}", out.stdout);
    }
    for said in [
        "(A) was declared in place (ftla_in_place_) with LSIZE",
        "(LLD_A, descriptor entry 9) must be max(1, LOCr(M))",
        "(N_A, descriptor entry 4) must be the factorization's N",
        "(A) is not what pdgetrf_ft_ returned (changed since)",
    ] {
        assert!(out.stderr.contains(said), "{said}:\n{}", out.stderr);
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
}

#[cfg(feature = "full-tests")]
#[test]
fn ftla_layout_gives_a_c_program_the_rotating_checksums() {
    let (lib, prog) = (lib_dir().display().to_string(), example().display().to_string());
    let run = |kill: &str, layout: &str| {
        let args = ["launch", "--np", "4", "--", &prog, "256", "32", "2", "2"];
        common::ftla_with(&args, &[("FTLA_KILL", kill), ("LD_LIBRARY_PATH", &lib), ("FTLA_LAYOUT", layout)])
    };
    // (On 2x2 one rotating checksum per block column: a copy on the other process column.)
    let out = run("1@qr:3:update", "rotating");
    assert!(out.stderr.contains("injecting SIGKILL into rank 1 at qr:3:update"), "{}", out.stderr);
    all_equal(&out, Some(1));
    let out = run("", "pairs");
    assert_ne!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(format!("{}{}", out.stdout, out.stderr).contains("FTLA_LAYOUT"), "{}\n{}", out.stdout, out.stderr);
}
