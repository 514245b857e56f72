//! The `ftla` command line: help, argument errors (before anything is
//! launched), and real `ftla demo` / `ftla repair` runs with hard timeouts.

// (The helpers of full-tier tests are unused in the core tier.)
#![cfg_attr(not(feature = "full-tests"), allow(unused_imports, dead_code))]

use ftla_bench::report::RepairRunReport;
use harness::Captured;
use std::process::Command;
use std::time::Duration;

fn ftla(args: &[&str]) -> Captured {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ftla"));
    cmd.args(args).env_remove("FTLA_KILL");
    harness::launch(cmd)
}

#[test]
fn help_lists_every_command_and_option() {
    let top = ftla(&["--help"]);
    assert_eq!(top.code, Some(0));
    for c in ["demo", "grid-demo", "repair", "qr", "lu", "chol", "baseline", "soak", "scale", "launch"] {
        assert!(top.stdout.contains(&format!("  {c} ")), "{}", top.stdout);
    }
    let rep = ftla(&["repair", "--help"]);
    for o in [
        "--grid <PxQ>",
        "--spares <S>",
        "--kill <R[,R...]>",
        "--reps <K>",
        "--shrink",
        "--json <FILE>",
        "--timeout <SECS>",
    ] {
        assert!(rep.stdout.contains(o), "missing {o}:\n{}", rep.stdout);
    }
    // QR and LU document the same fault-tolerance options, the recovery
    // policies and checkpoint-on-failure's included (LU's kill phases
    // include its row exchange, and it solves).
    let ft = [
        "--ft",
        "--kill <R@STEP:PHASE[,...]>",
        "--spares <S>",
        "--compare",
        "--reps",
        "--verify",
        "--corrupt <R@STEP>",
        "--recovery <POLICY>",
        "--checkpoint-dir <D>",
        "--max-restarts <K>",
        "--resume <D>",
    ];
    let qr = ftla(&["qr", "--help"]);
    let lu = ftla(&["lu", "--help"]);
    // Both solve with the factors, with the same options for B and X, and
    // say which residual they report.
    let system = ["--nrhs <K>", "--rhs <FILE>", "--solution <FILE>"];
    let qr_extra =
        [&system[..], &["--lstsq", "‖Aᵀ(B−A·X)‖₁/(max(M,N,NRHS)·‖A‖₁·‖B‖₁·eps)", "‖X−P·X‖_F/(‖X‖_F·N·eps)"]].concat();
    let lu_extra = [&system[..], &["--solve", "swap", "‖A·X−B‖₁/(‖A‖₁·‖X‖₁·N·eps)", "R@app:0"]].concat();
    for (help, extra) in [(&qr, &qr_extra), (&lu, &lu_extra)] {
        for o in ft.iter().chain(extra) {
            assert!(help.stdout.contains(o), "missing {o}:\n{}", help.stdout);
        }
    }
    assert!(!qr.stdout.contains("--solve"), "{}", qr.stdout);
}

#[test]
fn bad_arguments_fail_fast_with_a_clear_message() {
    for (args, msg) in [
        (vec!["repair", "--grid", "2"], "wants PxQ"),
        (vec!["repair", "--grid", "2x2", "--kill", "7"], "rank 7 is not in the 2x2 grid"),
        (vec!["repair", "--kill", "0,1,2,3"], "some must survive"),
        (vec!["repair", "--reps", "0"], "--reps"),
        (vec!["repair", "--bogus"], "unexpected argument '--bogus'"),
        (vec!["grid-demo", "--step", "9"], "--step 9 must be below --steps 4"),
        (vec!["demo", "--grid", "2x1"], "needs at least 2 process columns"),
        (vec!["qr", "--n", "10", "--kill", "1@2:panel"], "--ft"),
        (vec!["lu", "--n", "10", "--kill", "1@2:panel"], "--ft"),
        (vec!["lu", "--ft", "--grid", "2x1", "--n", "10"], "needs at least 2 process columns"),
        (vec!["lu", "--ft", "--grid", "2x2", "--n", "100", "--nb", "16", "--kill", "1@2:pivot"], "not a phase of lu"),
        (vec!["lu", "--ft", "--grid", "2x2", "--n", "100", "--nb", "16", "--kill", "1@7:swap"], "the last is 6"),
        (vec!["lu", "--m", "100", "--n", "90", "--solve"], "--solve needs a square matrix"),
        (vec!["soak", "--op", "svd"], "invalid value 'svd'"),
        (vec!["baseline", "scalapack", "cg", "--grid", "1x2", "--n", "8", "--nb", "4"], "invalid value 'cg'"),
        (vec!["cg", "--grid", "2x2", "--n", "100", "--m", "50"], "cg needs a square matrix"),
        (vec!["cg", "--grid", "2x2", "--n", "100", "--maxit", "0"], "--maxit must be at least 1"),
        (vec!["frobnicate"], "unrecognized subcommand"),
        (vec!["qr", "--n", "100", "--nb", "0"], "neither a block size (1 or more) nor `auto`"),
        (vec!["qr", "--n", "100", "--nb", "big"], "neither a block size (1 or more) nor `auto`"),
        // A kill that can never fire names the last step.
        (vec!["qr", "--ft", "--grid", "2x2", "--n", "100", "--nb", "16", "--kill", "1@99:panel"], "the last is 6"),
        (vec!["qr", "--ft", "--grid", "2x2", "--n", "100", "--nb", "16", "--kill", "1@2:pivot"], "not a phase of qr"),
        // More memory than the machine has: one line, before launching.
        (vec!["qr", "--grid", "2x2", "--n", "100000000"], "N = 100000000 needs"),
    ] {
        let out = ftla(&args);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(msg), "{args:?}: {}", out.stderr);
        assert!(!out.stderr.contains("panicked") && !out.stderr.contains("backtrace"), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn grid_demo_kills_a_rank_and_the_repaired_grid_computes_correctly() {
    let out = ftla(&["grid-demo", "--timeout", "120"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("injecting SIGKILL into rank 1 at demo:2"), "{}", out.stderr);
    assert!(out.stdout.contains("rank 1 is a new process"), "{}", out.stdout);
    assert!(out.stdout.contains("repaired (spawn)"), "{}", out.stdout);
    assert!(out.stdout.contains("demo result: ok"), "{}", out.stdout);
}

/// `ftla repair ARGS --json FILE --timeout 120`: its output and its report.
fn repair(args: &[&str]) -> (Captured, RepairRunReport) {
    let path = std::env::temp_dir().join(format!("ftla-repair-{}.json", std::process::id()));
    let p = path.to_str().unwrap();
    let out = ftla(&[&["repair"], args, &["--json", p, "--timeout", "120"]].concat());
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let text = std::fs::read_to_string(&path).expect("json written");
    let _ = std::fs::remove_file(&path);
    let r: RepairRunReport = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    (out, r)
}

#[test]
fn repair_times_each_phase_and_writes_json() {
    // One spare: the first repetition hands over to it, the second spawns.
    let (out, r) = repair(&["--grid", "2x2", "--spares", "1", "--reps", "2", "--kill", "2"]);
    assert_eq!((r.command.as_str(), r.grid, r.ok, r.repairs.len()), ("repair", [2, 2], true, 2), "{r:?}");
    let modes: Vec<&str> = r.repairs.iter().map(|x| x.mode.as_str()).collect();
    assert_eq!(modes, ["spare", "spawn"], "{r:?}");
    for x in &r.repairs {
        assert_eq!(x.killed, [2], "{r:?}");
        for v in [x.detect_ms, x.revoke_ms, x.shrink_ms, x.spawn_ms, x.merge_ms, x.split_ms, x.total_ms] {
            assert!((0.0..60_000.0).contains(&v), "{r:?}");
        }
    }
    assert!(r.median_total_ms > 0.0, "{r:?}");
    assert!(out.stdout.contains("repair 2/2"), "{}", out.stdout);
}

#[test]
fn repair_shrinks_the_grid_once_no_spare_is_left_and_parks_the_survivor_left_over() {
    // 2x3 and one parked spare, rank 1 killed four times: the spare first;
    // then 2x2 and a survivor left over, which parks; it takes the next
    // loss; then 2x1 and a survivor left over again.
    let (out, r) = repair(&["--grid", "2x3", "--spares", "1", "--shrink", "--reps", "4", "--kill", "1"]);
    let modes: Vec<&str> = r.repairs.iter().map(|x| x.mode.as_str()).collect();
    assert_eq!(modes, ["spare", "shrink", "spare", "shrink"], "{r:?}");
    let grids: Vec<String> = r
        .repairs
        .iter()
        .map(|x| format!("{:?} {:?}", x.grid_before.map(|g| g.to_string()), x.grid_after.map(|g| g.to_string())))
        .collect();
    assert_eq!(grids[1], r#"Some("2x3") Some("2x2")"#, "{r:?}");
    assert_eq!(grids[3], r#"Some("2x2") Some("2x1")"#, "{r:?}");
    assert_eq!((grids[0].as_str(), grids[2].as_str()), ("None None", "None None"), "{r:?}");
    assert_eq!(r.final_grid.map(|g| g.to_string()).as_deref(), Some("2x1"), "{r:?}");
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains(r#""grid_after":"2x2""#), "{json}");
    // Every grid was verified position by position after its repair.
    for (k, g) in [(2, "2x2"), (3, "2x2"), (4, "2x1")] {
        assert!(out.stdout.contains(&format!("repair {k}/4: killed [1]")), "{}", out.stdout);
        assert!(out.stdout.contains(&format!("grid {g} verified")), "{}", out.stdout);
    }
    // Without --shrink and without spawning the same loss is refused.
    let refused = {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ftla"));
        cmd.args(["repair", "--grid", "2x3", "--kill", "1", "--timeout", "120"])
            .env_remove("FTLA_KILL")
            .env("FTLA_TEST_REFUSE_SPAWN", "1");
        harness::launch(cmd)
    };
    assert_ne!(refused.code, Some(0), "{}\n{}", refused.stdout, refused.stderr);
    assert!(refused.stderr.contains("spawning a replacement failed"), "{}", refused.stderr);
}

#[cfg(feature = "full-tests")]
#[test]
fn the_qr_demo_recovers_by_a_spare_then_by_a_spawn_then_from_a_checkpoint_on_a_smaller_grid() {
    // A smaller matrix than the default keeps the test short.
    let out = ftla(&["demo", "--n", "512", "--timeout", "120"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.stderr.matches("injecting SIGKILL into rank 1 at qr:4:update").count(), 2, "{}", out.stderr);
    // The spare scenario comes first, the spawn second, each with its checks.
    let spare = out.stdout.find("recovered ranks [1] at step 4 (update phase) by spare");
    let spawn = out.stdout.find("recovered ranks [1] at step 4 (update phase) by spawn");
    assert!(matches!((spare, spawn), (Some(a), Some(b)) if a < b), "{}", out.stdout);
    for (s, times) in [("residual", 3), ("orthogonality", 3), ("checksums consistent", 3), ("overhead: plain QR", 2)] {
        assert_eq!(out.stdout.matches(s).count(), times, "`{s}`:\n{}", out.stdout);
    }
    assert!(out.stdout.contains("the spawn's cost: its repair took"), "{}", out.stdout);
    // Third, the whole job lost at step 4 and resumed on 1x2 from its
    // newest checkpoint.
    assert!(out.stderr.contains("ftla: the job was lost"), "{}", out.stderr);
    assert!(out.stdout.contains("resuming it on a 1x2 grid from its newest checkpoint"), "{}", out.stdout);
    let last = out.stdout.lines().last().unwrap_or_default();
    assert!(last.starts_with("the work of steps 0 to ") && last.ends_with("were done again"), "{}", out.stdout);
}

#[test]
fn each_command_help_names_its_own_operation_inputs_outputs_and_phases() {
    let help = |c: &str| ftla(&[c, "--help"]).stdout;
    let (qr, lu, cg) = (help("qr"), help("lu"), help("cg"));
    let lower = cg.to_lowercase();
    for word in ["factoriz", "factored", "factor the", "tau", "pivot"] {
        assert!(!lower.contains(word), "`ftla cg --help` mentions `{word}`:\n{cg}");
    }
    for s in ["pdcg_ft", "Solve with the symmetric positive definite matrix A in FILE", "the solution x", "matvec, dot"]
    {
        assert!(cg.contains(s), "`ftla cg --help` lacks `{s}`:\n{cg}");
    }
    for s in ["pdgeqrf_ft", "Factor the matrix in FILE", "tau to FILE.tau.npy", "panel, bcast, update or commit"] {
        assert!(qr.contains(s), "`ftla qr --help` lacks `{s}`:\n{qr}");
    }
    for s in ["pdgetrf_ft", "Factor the matrix in FILE", "pivots", "FILE.ipiv.npy", "swap (the row interchanges)"] {
        assert!(lu.contains(s), "`ftla lu --help` lacks `{s}`:\n{lu}");
    }
    // Neither factorization offers the other's outputs or phases, nor CG's.
    for (name, text, foreign) in
        [("qr", &qr, ["pivot", "swap", "matvec"]), ("lu", &lu, ["tau", "orthogonality", "matvec"])]
    {
        for f in foreign {
            assert!(!text.contains(f), "`ftla {name} --help` mentions `{f}`:\n{text}");
        }
    }
}

#[test]
fn sigterm_to_the_launcher_ends_the_whole_job() {
    use blacs_ft::launch::{kill_tagged, tagged_processes};
    use std::time::Instant;
    let _one_at_a_time = harness::one_job_at_a_time();
    // The job's processes carry this tag: they can be found wherever they
    // were re-parented.
    let tag = format!("ftla-sigterm-test-{}", std::process::id());
    let mut child = Command::new(env!("CARGO_BIN_EXE_ftla"))
        .args(["qr", "--ft", "--grid", "2x2", "--spares", "1", "--n", "2000", "--compare", "--reps", "50"])
        .args(["--timeout", "120"])
        .env("FTLA_JOB_TAG", &tag)
        .env_remove("FTLA_KILL")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start ftla");
    // mpiexec and its 5 ranks.
    let up = Instant::now();
    while tagged_processes(&tag).len() < 6 && up.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let running = tagged_processes(&tag).len();
    let sent = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    let stopped = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break Some(st);
        }
        if stopped.elapsed() > Duration::from_secs(8) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let left = tagged_processes(&tag);
    // Whatever happened, nothing of this test outlives it.
    let _ = child.kill();
    kill_tagged(&tag);
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut stderr);
    }
    assert!(running >= 6 && sent.success(), "the job never ran ({running} processes):\n{stderr}");
    let status = status.unwrap_or_else(|| panic!("the launcher was still running 8 s after SIGTERM:\n{stderr}"));
    assert_eq!(status.code(), Some(128 + 15), "{stderr}");
    assert!(left.is_empty(), "processes of the job left 8 s after SIGTERM: {left:?}\n{stderr}");
    // 5 processes on this machine's cores: said once when oversubscribed.
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 5 {
        assert_eq!(stderr.matches("oversubscribed").count(), 1, "{stderr}");
    }
}

#[cfg(feature = "full-tests")]
#[test]
fn a_nan_in_the_input_is_one_clear_error_for_every_factorization() {
    // A 24×24 diagonally dominant matrix with one NaN, in a .npy file.
    let path = std::env::temp_dir().join(format!("ftla-nan-{}.npy", std::process::id()));
    let n = 24;
    let mut a: Vec<f64> = (0..n * n).map(|k| ((k * 7) % 11) as f64 / 11.0).collect();
    for i in 0..n {
        a[i + i * n] += n as f64;
    }
    a[5 + 7 * n] = f64::NAN;
    scalapack_ft::io::write_npy(&path, n, n, &a).expect("write the input");
    let p = path.to_str().unwrap();
    for cmd in [vec!["qr"], vec!["lu"], vec!["qr", "--ft"]] {
        let mut args = cmd.clone();
        args.extend(["--grid", "2x2", "--nb", "4", "--input", p, "--timeout", "60"]);
        let out = ftla(&args);
        assert_eq!(out.code, Some(1), "{cmd:?}: {}\n{}", out.stdout, out.stderr);
        let all = format!("{}{}", out.stdout, out.stderr);
        let said: Vec<&str> = all.lines().filter(|l| l.contains("non-finite value")).collect();
        assert_eq!(said.len(), 1, "{cmd:?}: said once, by rank 0:\n{all}");
        assert!(said[0].contains("A(5, 7) = NaN"), "{}", said[0]);
        assert!(!all.contains("panicked") && !all.contains("backtrace"), "{all}");
    }
    let _ = std::fs::remove_file(&path);
}

#[test]
fn launch_runs_any_program_under_mpiexec_and_exits_with_its_outcome() {
    // Two processes of a shell: MPI's environment, and the kill points.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ftla"));
    cmd.args(["launch", "--np", "2", "--timeout", "60", "--", "sh", "-c"])
        .arg("echo rank $OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE kills=$FTLA_KILL")
        .env("FTLA_KILL", "1@x:3");
    let out = harness::launch(cmd);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    for r in 0..2 {
        assert!(out.stdout.contains(&format!("rank {r} of 2 kills=1@x:3")), "{}", out.stdout);
    }
    // A program that reports no outcome: mpiexec's exit code.
    let out = ftla(&["launch", "--np", "2", "--timeout", "60", "--", "sh", "-c", "exit 5"]);
    assert_eq!(out.code, Some(5), "{}\n{}", out.stdout, out.stderr);
    // A program on ftla's runtime reports its outcome; under
    // checkpoint-on-failure the launcher starts it again after a save.
    let dir = std::env::temp_dir().join(format!("ftla-launch-cof-{}", std::process::id()));
    let d = dir.display().to_string();
    let out = ftla(&[
        "launch",
        "--np",
        "4",
        "--recovery",
        "cof",
        "--checkpoint-dir",
        &d,
        "--timeout",
        "120",
        "--",
        env!("CARGO_BIN_EXE_ftla"),
        "qr",
        "--ft",
        "--grid",
        "2x2",
        "--n",
        "256",
        "--nb",
        "32",
        "--check",
        "--kill",
        "1@3:update",
    ]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("starting the job again (restart 1"), "{}", out.stderr);
    assert!(out.stdout.contains("by cof") && out.stdout.contains("pass: < 16"), "{}", out.stdout);
    assert!(!dir.exists(), "{d} left behind");
    // Nothing to launch.
    let out = ftla(&["launch", "--np", "2"]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
}

/// `--nb auto`: the launcher measures, says what it chose and why, and the
/// job runs with it (here capped by the matrix: a quarter of its share of
/// a process column, 512 / (4·2) = 64).
#[test]
fn nb_auto_says_what_it_chose_and_the_job_uses_it() {
    let json = std::env::temp_dir().join(format!("ftla-nb-auto-{}.json", std::process::id()));
    let j = json.display().to_string();
    let out = ftla(&["qr", "--grid", "1x2", "--n", "512", "--nb", "auto", "--check", "--json", &j, "--timeout", "120"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("ftla: --nb auto: NB 64 (DGEMM Gflop/s by inner dimension"), "{}", out.stderr);
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    assert_eq!(r["nb"], 64, "{r}");
    assert_eq!(r["ok"], true, "{r}");
}
