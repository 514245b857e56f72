//! Checkpoint-on-failure under real SIGKILLs (`ftla qr|lu|cg --ft
//! --recovery cof|auto`): each rank of a 2x2 grid killed at an early, a
//! middle and a late step of each driver, the survivors saving, the job
//! started again and resumed with a correct result and no checkpoint left
//! behind; every kind of bad checkpoint refused with the file named; the
//! `auto` policy falling back to checkpoint-on-failure when the spawn is
//! refused.

mod common;

use common::{ftla_with, report, residuals_pass, Ft};
use ftla_bench::report::FactorReport;
use harness::Captured;
use std::path::{Path, PathBuf};

/// A fresh checkpoint directory for one test (not created).
fn fresh_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ftla-cof-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The checkpoint files in `dir`.
fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned())).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// `ftla OP --ft` on 2x2 under `--recovery cof` with its checkpoints in
/// `dir`, killed at `kill`, with `more` arguments.
fn run_cof(ft: &Ft, dir: &Path, kill: &str, more: &[&str]) -> (Captured, Option<FactorReport>) {
    let d = dir.display().to_string();
    let mut args = vec!["--grid", "2x2", "--recovery", "cof", "--checkpoint-dir", &d, "--kill", kill];
    args.extend(more);
    ft.run(&args)
}

/// Each kill `R@STEP:PHASE` on 2x2 under `--recovery cof`: exit 0, a
/// correct result, one recovery of rank R by `cof` at step STEP or the
/// next, with its breakdown, and no checkpoint file left.
fn survives_cof(ft: &Ft, kills: &[&str]) {
    for kill in kills {
        let dir = fresh_dir("survive");
        let d = dir.display().to_string();
        let (out, json) = run_cof(ft, &dir, kill, &["--check", "--verify"]);
        assert_eq!(out.code, Some(0), "kill {kill}:\n{}\n{}", out.stdout, out.stderr);
        let r = report(json, &out);
        assert!(r.ok && residuals_pass(&r), "kill {kill}: {r:?}");
        assert!(r.checksum_check.as_ref().is_some_and(|c| c.ok), "kill {kill}: {r:?}");
        let recs = r.recoveries.clone().unwrap_or_default();
        assert_eq!(recs.len(), 1, "kill {kill}: {r:?}");
        let rec = &recs[0];
        let (rank, rest) = kill.split_once('@').unwrap();
        let step: u64 = rest.split(':').next().unwrap().parse().unwrap();
        assert_eq!(rec.mode, "cof", "kill {kill}: {r:?}");
        assert_eq!(rec.ranks, vec![rank.parse::<i32>().unwrap()], "kill {kill}: {r:?}");
        // (A kill after a step's commit point is handled at the next step.)
        assert!(rec.step == step || rec.step == step + 1, "kill {kill}: {r:?}");
        let (save, relaunch, load) = (rec.save_ms.unwrap(), rec.relaunch_ms.unwrap(), rec.load_ms.unwrap());
        assert!(save > 0.0 && relaunch > 0.0 && load > 0.0, "kill {kill}: {r:?}");
        assert!((rec.repair_ms - (save + relaunch + load)).abs() < 0.01, "kill {kill}: {r:?}");
        assert!(out.stderr.contains("starting the job again (restart 1 of at most 3)"), "{}", out.stderr);
        assert!(files_in(&dir).is_empty(), "kill {kill}: left behind in {d}: {:?}", files_in(&dir));
        assert!(!dir.exists(), "kill {kill}: {d} left behind");
    }
}

/// Every rank at an early, a middle and a late step, in every phase of a
/// step (rotating), for a driver with `steps` steps.
fn kills(phases: &[&str], steps: [u64; 3]) -> Vec<String> {
    let mut v = Vec::new();
    for rank in 0..4 {
        for (i, step) in steps.iter().enumerate() {
            let phase = phases[(rank + i) % phases.len()];
            v.push(format!("{rank}@{step}:{phase}"));
        }
    }
    v
}

#[test]
fn qr_resumes_from_checkpoints_after_each_rank_is_killed_early_midway_and_late() {
    let k = kills(&["panel", "bcast", "update", "commit"], [1, 4, 7]);
    let k: Vec<&str> = k.iter().map(String::as_str).collect();
    // (The core tier: one of them; the full tier: all.)
    survives_cof(&Ft::new("qr", &["--n", "256", "--nb", "32"]), harness::cases!(k, core = 1));
}

#[test]
fn lu_resumes_from_checkpoints_after_each_rank_is_killed_early_midway_and_late() {
    let k = kills(&["panel", "bcast", "swap", "update", "commit"], [1, 4, 7]);
    let lu = Ft::new("lu", &["--n", "256", "--nb", "32", "--solve"]);
    let k: Vec<&str> = k.iter().map(String::as_str).collect();
    survives_cof(&lu, harness::cases!(k, core = 1));
}

#[test]
fn cg_resumes_from_checkpoints_after_each_rank_is_killed_early_midway_and_late() {
    let cg = Ft::new("cg", &["--n", "400", "--nb", "16"]);
    let (out, json) = cg.run(&["--grid", "2x2"]);
    let want = report(json, &out).iterations.expect("iterations");
    assert!(want > 60, "{want}");
    let k = kills(&["matvec", "dot", "commit"], [1, 30, 58]);
    for kill in harness::cases!(k, core = 1) {
        survives_cof(&cg, &[kill]);
    }
    // No iteration lost or added by a restart. (The full tier: the core
    // tier's CG iterations are checked across a repair in cg_ft.rs.)
    if cfg!(feature = "full-tests") {
        let dir = fresh_dir("cg-its");
        let (out, json) = run_cof(&cg, &dir, "2@30:dot", &[]);
        assert_eq!(report(json, &out).iterations, Some(want), "{}", out.stdout);
    }
}

#[test]
fn a_kill_before_the_checksums_restarts_the_job_from_its_input() {
    let dir = fresh_dir("encode");
    let d = dir.display().to_string();
    let qr = Ft::new("qr", &["--n", "256", "--nb", "32"]);
    let (out, json) = run_cof(&qr, &dir, "1@0:encode", &["--check"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(r.ok && residuals_pass(&r), "{r:?}");
    assert_eq!((r.restarts, r.recoveries.as_deref()), (Some(1), Some(&[][..])), "{r:?}");
    assert!(out.stdout.contains("restarting the factorization from its input"), "{}", out.stdout);
    assert!(!dir.exists(), "{d} left behind");
}

#[cfg(feature = "full-tests")]
/// Leaves the checkpoints of `ftla qr --ft` on 2x2 (N 256) killed at
/// `kill` in `dir` (`--max-restarts 0`).
fn leave_checkpoints(dir: &Path, kill: &str) {
    let d = dir.display().to_string();
    let out = common::ftla(&[
        "qr",
        "--ft",
        "--grid",
        "2x2",
        "--n",
        "256",
        "--nb",
        "32",
        "--recovery",
        "cof",
        "--checkpoint-dir",
        &d,
        "--max-restarts",
        "0",
        "--kill",
        kill,
    ]);
    assert_eq!(out.code, Some(76), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains(&format!("continue with --resume {d}")), "{}", out.stderr);
}

#[cfg(feature = "full-tests")]
/// `ftla ARGS --resume DIR` fails (exit 1) saying `why` about `file`.
fn refused(args: &[&str], dir: &Path, file: &str, why: &str) {
    refused_with(1, args, dir, file, why)
}

#[cfg(feature = "full-tests")]
/// [`refused`] with the exit code `code`.
fn refused_with(code: i32, args: &[&str], dir: &Path, file: &str, why: &str) {
    let d = dir.display().to_string();
    let mut all = args.to_vec();
    all.extend(["--ft", "--resume", &d]);
    let out = common::ftla(&all);
    assert_eq!(out.code, Some(code), "{args:?}:\n{}\n{}", out.stdout, out.stderr);
    let text = format!("{}{}", out.stdout, out.stderr);
    let line = text
        .lines()
        .find(|l| l.contains("checkpoint") && l.contains(why))
        .unwrap_or_else(|| panic!("{args:?}: {text}"));
    let named = if file.is_empty() { d.clone() } else { dir.join(file).display().to_string() };
    assert!(line.contains(&named) && line.contains(why), "{args:?}: {line}");
}

#[cfg(feature = "full-tests")]
#[test]
fn bad_checkpoints_are_refused_on_every_rank_with_the_file_named() {
    let good = fresh_dir("good");
    leave_checkpoints(&good, "0@3:update");
    assert_eq!(files_in(&good), ["rank-1.ckpt", "rank-2.ckpt", "rank-3.ckpt"]);
    for f in files_in(&good) {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(good.join(&f)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{f}");
    }
    let qr: &[&str] = &["qr", "--grid", "2x2", "--n", "256", "--nb", "32"];
    // Each case on its own copy of the good set.
    let case = |name: &str, spoil: &dyn Fn(&Path)| -> PathBuf {
        let d = fresh_dir(name);
        std::fs::create_dir_all(&d).unwrap();
        for f in files_in(&good) {
            std::fs::copy(good.join(&f), d.join(&f)).unwrap();
        }
        spoil(&d);
        d
    };
    let flip = |path: PathBuf, at: u64| {
        let mut bytes = std::fs::read(&path).unwrap();
        let at = if at == u64::MAX { bytes.len() - 9 } else { at as usize };
        bytes[at] ^= 0x40;
        std::fs::write(&path, bytes).unwrap();
    };
    let d = case("corrupt", &|d| flip(d.join("rank-2.ckpt"), u64::MAX));
    refused(qr, &d, "rank-2.ckpt", "payload checksum mismatch");
    let d = case("header", &|d| flip(d.join("rank-3.ckpt"), 40));
    refused(qr, &d, "rank-3.ckpt", "header checksum mismatch");
    let d = case("truncated", &|d| {
        let f = std::fs::OpenOptions::new().write(true).open(d.join("rank-1.ckpt")).unwrap();
        f.set_len(5000).unwrap();
    });
    refused(qr, &d, "rank-1.ckpt", "truncated");
    // Rank 0 died; without rank 1's file process row 0 lost both:
    // unrecoverable, as in place (exit 3).
    let d = case("two-in-a-row", &|d| std::fs::remove_file(d.join("rank-1.ckpt")).unwrap());
    refused_with(3, qr, &d, "rank-1.ckpt", "all lost in process row 0");
    // (The same on another grid: the job on the 2x2 grid that would
    // rebuild them first says so.)
    refused_with(
        3,
        &["qr", "--grid", "1x4", "--n", "256", "--nb", "32"],
        &d,
        "rank-1.ckpt",
        "all lost in process row 0",
    );
    let d = case("empty", &|d| {
        for f in files_in(d) {
            std::fs::remove_file(d.join(f)).unwrap();
        }
    });
    refused(qr, &d, "", "no checkpoint file");
    let d = case("grid", &|_| {});
    refused(&["qr", "--grid", "2x2", "--n", "320", "--nb", "32"], &d, "", "for M=256 N=256 NB=32");
    refused(&["lu", "--grid", "2x2", "--n", "256", "--nb", "32"], &d, "", "saved in pdgeqrf_ft");
    // On another grid every file of the save is needed: rank 0's died. A
    // job on the 2x2 grid rebuilds it first, then the 1x4 grid resumes.
    let g = d.display().to_string();
    let out = common::ftla(&["qr", "--ft", "--grid", "1x4", "--n", "256", "--nb", "32", "--resume", &g, "--check"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("lacks the file(s) of grid rank(s) [0] of its 2x2 grid"), "{}", out.stderr);
    assert!(out.stdout.contains("1x4 grid") && out.stdout.contains("residual"), "{}", out.stdout);
    assert!(!d.exists(), "{g} left behind");
    // A file of another run, slipped in.
    let other = fresh_dir("other");
    leave_checkpoints(&other, "0@3:update");
    let d = case("run", &|d| std::fs::copy(other.join("rank-3.ckpt"), d.join("rank-3.ckpt")).map(|_| ()).unwrap());
    refused(qr, &d, "rank-3.ckpt", "from another run");
    // The refusals kept the files; the good set still resumes, and goes.
    assert_eq!(files_in(&d).len(), 3);
    let g = good.display().to_string();
    let out = common::ftla(&["qr", "--ft", "--grid", "2x2", "--n", "256", "--nb", "32", "--resume", &g, "--check"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("resuming pdgeqrf_ft at step 3"), "{}", out.stdout);
    assert!(!good.exists(), "{g} left behind");
    for name in ["corrupt", "header", "truncated", "two-in-a-row", "empty", "grid", "run", "other"] {
        let _ = std::fs::remove_dir_all(fresh_dir(name));
    }
}

#[test]
fn auto_falls_back_to_checkpoints_when_the_spawn_is_refused() {
    let refuse = [("FTLA_TEST_REFUSE_SPAWN", "1")];
    let json = std::env::temp_dir().join(format!("ftla-cof-auto-{}.json", std::process::id()));
    let j = json.display().to_string();
    // A spare first (in place), then nothing left but the refused spawn,
    // and one survivor too few for a smaller grid with the checksums'
    // two process columns (on 2x2, auto would shrink: tests/shrink.rs).
    let out = ftla_with(
        &[
            "lu",
            "--ft",
            "--grid",
            "1x2",
            "--n",
            "256",
            "--nb",
            "32",
            "--spares",
            "1",
            "--recovery",
            "auto",
            "--kill",
            "1@2:update,1@5:update/1",
            "--check",
            "--json",
            &j,
        ],
        &refuse,
    );
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r: ftla_bench::report::FactorReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    assert!(r.ok && residuals_pass(&r), "{r:?}");
    let modes: Vec<(&str, Vec<i32>)> =
        r.recoveries.as_ref().unwrap().iter().map(|x| (x.mode.as_str(), x.ranks.clone())).collect();
    assert_eq!(modes, [("spare", vec![1]), ("cof", vec![1])], "{r:?}");
    assert!(out.stderr.contains("saving checkpoints instead (recovery policy auto)"), "{}", out.stderr);
    // In place only, the same refusal is unrecoverable, said as such.
    let out = ftla_with(&["qr", "--ft", "--grid", "2x2", "--n", "256", "--nb", "32", "--kill", "1@2:update"], &refuse);
    assert_eq!(out.code, Some(3), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("spawning a replacement failed"), "{}", out.stdout);
}

#[test]
fn checkpoint_options_that_cannot_work_are_refused_before_launching() {
    let qr = Ft::new("qr", &[]);
    let shape = ["--grid", "2x2", "--n", "64", "--nb", "16"];
    let with = |more: &[&'static str]| [&shape[..], more].concat();
    qr.refused(&with(&["--recovery", "cof", "--spares", "1"]), "--spares needs --recovery inplace or auto");
    qr.refused(&with(&["--recovery", "auto", "--kill", "1@2:update", "--compare", "--reps", "2"]), "use --reps 1");
    qr.refused(&with(&["--recovery", "sometimes"]), "must be inplace, cof, auto or shrink");
}

#[cfg(feature = "full-tests")]
#[test]
fn a_second_loss_in_the_restarted_job_is_saved_and_resumed_again() {
    let dir = fresh_dir("twice");
    let d = dir.display().to_string();
    let lu = Ft::new("lu", &["--n", "256", "--nb", "32", "--solve"]);
    // Rank 1 at step 2; then, in the restarted job (recovery epoch 1),
    // rank 2 at step 4.
    let (out, json) = run_cof(&lu, &dir, "1@2:update,2@4:bcast/1", &["--check"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(r.ok && residuals_pass(&r), "{r:?}");
    let recs: Vec<(String, Vec<i32>, u64)> =
        r.recoveries.unwrap().into_iter().map(|x| (x.mode, x.ranks, x.step)).collect();
    assert_eq!(recs, [("cof".to_string(), vec![1], 2), ("cof".to_string(), vec![2], 4)]);
    assert!(out.stderr.contains("restart 2 of at most 3"), "{}", out.stderr);
    assert!(!dir.exists(), "{d} left behind");
}
