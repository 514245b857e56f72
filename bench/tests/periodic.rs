//! Periodic checkpoints (`--checkpoint-every`) under the loss of the whole
//! job: `job@…` SIGKILLs the job's MPI runtime daemon mid-run, as a lost
//! node does, and every process of the job ends. The launcher names the
//! newest complete checkpoint and, under `--recovery auto`, resumes from
//! it by itself; under `inplace` it exits with its own code and a later
//! `--resume D` carries on. The result is the failure-free one's, the
//! work before the checkpoint kept.

// (The helpers of full-tier tests are unused in the core tier.)
#![cfg_attr(not(feature = "full-tests"), allow(unused_imports, dead_code))]

mod common;

use common::{report, residuals_pass, Ft};
use std::path::PathBuf;

fn fresh_dir(name: &str) -> PathBuf {
    common::fresh_dir(&format!("periodic-{name}"))
}

/// The step and generation the launcher names in "its newest checkpoint,
/// ROUTINE at step S (generation G)".
fn newest_named(stderr: &str) -> Option<(u64, u64)> {
    let at = stderr.find("its newest checkpoint, ")?;
    let rest = &stderr[at..];
    let step = rest.split("at step ").nth(1)?.split_whitespace().next()?.parse().ok()?;
    let generation = rest.split("(generation ").nth(1)?.split(')').next()?.parse().ok()?;
    Some((step, generation))
}

/// `ftla OP --ft SHAPE` on 2x2 with a checkpoint at every commit point (the
/// newest when the job is lost is known whatever the machine's speed) in a
/// fresh directory, `more` arguments, and the whole job lost at `kill`.
fn lost(
    op: &'static str,
    shape: &[&str],
    kill: &str,
    more: &[&str],
) -> (harness::Captured, Option<ftla_bench::report::FactorReport>, PathBuf) {
    let dir = fresh_dir(op);
    let d = dir.display().to_string();
    let ft = Ft::new(op, shape);
    let mut args = vec!["--grid", "2x2", "--checkpoint-every", "0", "--checkpoint-dir", &d, "--kill", kill, "--check"];
    args.extend(more);
    let (out, json) = ft.run(&args);
    (out, json, dir)
}

/// A process lost while periodic checkpoints are taken is repaired in
/// place and the saves go on with its replacement. The replacement, which
/// never checked the directory's room, and the survivors, which had, now
/// agree on whether to check it (they ran different collectives and the
/// job hung). And a loss found by a save, after its commit, drops the
/// look-ahead that commit started: Cholesky on 2x2, rank 1 lost at step
/// 6's commit, where its process column factors block column 7 ahead (it
/// was left factored in place for the rebuild and the next step).
#[test]
fn a_process_lost_between_periodic_saves_is_repaired_in_place_and_the_saves_go_on() {
    let dir = fresh_dir("in-place");
    let d = dir.display().to_string();
    let chol = Ft::new("chol", &["--n", "512", "--nb", "32", "--grid", "2x2"]);
    let args = ["--checkpoint-every", "0", "--checkpoint-dir", &d, "--kill", "1@potrf:6:commit", "--check", "--verify"];
    let (out, json) = chol.run(&args);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(r.ok && residuals_pass(&r) && r.checksum_check.as_ref().is_some_and(|c| c.ok), "{r:?}");
    // One loss, one recovery: found by step 6's save (7 steps committed).
    let recoveries = r.recoveries.clone().unwrap_or_default();
    assert_eq!(recoveries.len(), 1, "{recoveries:?}");
    let first = &recoveries[0];
    assert_eq!((first.ranks.as_slice(), first.step, first.phase.as_str()), (&[1][..], 7, "commit"), "{first:?}");
    // The saves went on after the repair, to the last commit point.
    let saved: Vec<u64> = r.checkpoints.iter().flatten().map(|c| c.step).collect();
    assert!(saved.contains(&16), "{saved:?}");
}

#[test]
fn a_job_lost_whole_is_resumed_from_its_newest_checkpoint_by_the_launcher() {
    let (out, json, dir) = lost("qr", &["--n", "1024", "--nb", "32"], "job@20:update", &["--recovery", "auto"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("ftla: the job was lost"), "{}", out.stderr);
    assert!(out.stderr.contains("resuming the job from it (restart 1"), "{}", out.stderr);
    // The newest checkpoint: step 19's commit (20 steps committed).
    let (step, _) = newest_named(&out.stderr).expect("the checkpoint named");
    assert_eq!(step, 20, "{}", out.stderr);
    let r = report(json, &out);
    assert!(r.ok && residuals_pass(&r), "{r:?}");
    // The work before the checkpoint was kept.
    assert_eq!(r.resumed_at_step, Some(step), "{r:?}");
    let rec = r.recoveries.clone().unwrap_or_default();
    assert_eq!(rec.iter().map(|x| (x.mode.as_str(), x.step)).collect::<Vec<_>>(), [("resume", step)], "{r:?}");
    assert!(out.stdout.contains(&format!("resumed at step {step} from the periodic checkpoint of a lost job")));
    // Deleted after the successful finish.
    assert!(!dir.exists(), "{} left behind", dir.display());
}

#[test]
fn a_job_lost_while_it_writes_a_checkpoint_resumes_from_the_previous_one() {
    // LU with its solve; the whole job lost with generation 2 half written.
    let (out, json, dir) =
        lost("lu", &["--n", "1024", "--nb", "32", "--solve"], "job@checkpoint:2:write", &["--recovery", "auto"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(newest_named(&out.stderr), Some((1, 1)), "{}", out.stderr);
    let r = report(json, &out);
    assert!(r.ok && residuals_pass(&r) && r.solve_residual.is_some_and(|s| s < 16.0), "{r:?}");
    assert_eq!(r.resumed_at_step, newest_named(&out.stderr).map(|(s, _)| s), "{r:?}");
    assert!(!dir.exists(), "{} left behind", dir.display());
}

#[test]
fn without_restarts_the_lost_job_says_how_to_resume_and_resume_carries_on() {
    // In place (no relaunch): exit 78, the checkpoint left, the command named.
    let (out, _, dir) = lost("qr", &["--n", "1024", "--nb", "32"], "job@16:bcast", &[]);
    assert_eq!(out.code, Some(blacs_ft::launch::EXIT_JOB_LOST), "{}\n{}", out.stdout, out.stderr);
    let d = dir.display().to_string();
    assert!(out.stderr.contains(&format!("resume it with the same command and --resume {d}")), "{}", out.stderr);
    let (step, generation) = newest_named(&out.stderr).expect("the checkpoint named");
    assert_eq!((step, generation), (16, 16), "{}", out.stderr);
    assert!(dir.join("manifest").exists() && dir.join(format!("gen-{generation}")).exists());
    // `--resume D` carries on, here on another grid, of two processes (the
    // saved blocks redistributed, the checksums encoded for 1x2; the kill
    // does not fire again: the loss of the job was one recovery).
    let ft = Ft::new("qr", &["--n", "1024", "--nb", "32"]);
    let (out, json) = ft.run(&["--grid", "1x2", "--resume", &d, "--kill", "job@16:bcast", "--check", "--verify"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(r.ok && residuals_pass(&r), "{r:?}");
    assert!(r.checksum_check.as_ref().is_some_and(|c| c.ok), "{r:?}");
    assert_eq!((r.resumed_at_step, r.grid), (Some(step), [1, 2]), "{r:?}");
    // (Every file of the 2x2 save removed, those of ranks 2 and 3 too.)
    assert!(!dir.exists(), "{d} left behind");
}

/// The whole job lost (exit 78, the checkpoint kept), then resumed with
/// `--resume` on `to`; returns the resumed run's report.
#[cfg(feature = "full-tests")]
fn lost_then_resumed_on(
    op: &'static str,
    from: &str,
    to: &str,
    kill: &str,
    more: &[&str],
) -> (harness::Captured, ftla_bench::report::FactorReport) {
    let dir = fresh_dir(&format!("{op}-{from}-{to}"));
    let d = dir.display().to_string();
    let shape = ["--n", "400", "--nb", "32"];
    let ft = Ft::new(op, &shape);
    let mut args = vec!["--grid", from, "--checkpoint-every", "0", "--checkpoint-dir", &d, "--kill", kill];
    args.extend(more);
    let (out, _) = ft.run(&args);
    assert_eq!(out.code, Some(blacs_ft::launch::EXIT_JOB_LOST), "{}\n{}", out.stdout, out.stderr);
    let mut args = vec!["--grid", to, "--resume", &d, "--check", "--verify"];
    args.extend(more);
    let (out, json) = ft.run(&args);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(r.ok && residuals_pass(&r), "{r:?}");
    assert!(r.checksum_check.as_ref().is_some_and(|c| c.ok), "{r:?}");
    assert!(r.resumed_at_step.is_some(), "{r:?}");
    assert!(!dir.exists(), "{d} left behind");
    (out, r)
}

#[cfg(feature = "full-tests")]
#[test]
fn lu_resumes_on_fewer_and_on_more_process_rows() {
    // 2x2 -> 1x2: at step 7, which one process row would have left half
    // updated (its deferred far update): the resumed state is put in that
    // form again.
    let (_, r) = lost_then_resumed_on("lu", "2x2", "1x2", "job@7:update", &[]);
    assert_eq!(r.resumed_at_step, Some(7), "{r:?}");
    // 1x2 -> 2x2: a one-row grid saves only at commit points whose state
    // any grid resumes (not at 7 steps, whose last left half its update to
    // the next one: the newest is at 6).
    let (_, r) = lost_then_resumed_on("lu", "1x2", "2x2", "job@7:update", &[]);
    assert_eq!(r.resumed_at_step, Some(6), "{r:?}");
    // 2x3 -> 2x2 with the rotating layout.
    lost_then_resumed_on("lu", "2x3", "2x2", "job@5:panel", &["--layout", "rotating", "--checksums", "1"]);
}

#[cfg(feature = "full-tests")]
#[test]
fn qr_resumes_on_another_shape_with_the_checksums_of_its_layout() {
    let (_, r) = lost_then_resumed_on("qr", "1x3", "2x3", "job@6:panel", &["--layout", "rotating", "--checksums", "2"]);
    assert_eq!((r.resumed_at_step, r.grid), (Some(6), [2, 3]), "{r:?}");
}

#[cfg(feature = "full-tests")]
#[test]
fn cg_lost_whole_resumes_in_the_failure_free_number_of_iterations() {
    let shape = ["--n", "400", "--nb", "16"];
    let (out, json) = Ft::new("cg", &shape).run(&["--grid", "2x2"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let want = report(json, &out).iterations.expect("iterations");
    let (out, json, dir) = lost("cg", &shape, "job@40:dot", &["--recovery", "auto"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(r.ok && residuals_pass(&r) && r.resumed_at_step.is_some(), "{r:?}");
    assert_eq!(r.iterations, Some(want), "{r:?}");
    assert!(!dir.exists(), "{} left behind", dir.display());
}

#[test]
fn a_run_without_a_loss_saves_its_checkpoints_and_removes_them_unless_kept() {
    let dir = fresh_dir("kept");
    let d = dir.display().to_string();
    let ft = Ft::new("qr", &["--n", "1024", "--nb", "32"]);
    let (out, json) =
        ft.run(&["--grid", "1x2", "--checkpoint-every", "0", "--checkpoint-dir", &d, "--keep-checkpoints", "--check"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    let saved = r.checkpoints.clone().unwrap_or_default();
    // (At every commit point: after each of the 32 steps.)
    assert_eq!(saved.iter().map(|c| c.step).collect::<Vec<_>>(), (1..=32).collect::<Vec<_>>(), "{r:?}");
    assert!(saved.iter().all(|c| c.bytes > 0 && c.write_ms > 0.0), "{r:?}");
    assert!(out.stdout.contains("periodic checkpoints: "), "{}", out.stdout);
    // Incremental: what no later step changes is written once, so a save's
    // volume falls as the factorization proceeds (the last one holds
    // little more than the last panel's rows).
    let (first, last) = (saved[0].bytes, saved[31].bytes);
    assert!(saved.windows(2).all(|w| w[1].bytes <= w[0].bytes) && last * 20 < first, "{r:?}");
    // Kept: the manifest, at most two generations and the base files.
    let names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    let gens = names.iter().filter(|n| n.starts_with("gen-")).count();
    assert!(dir.join("manifest").exists() && (1..=2).contains(&gens), "{names:?} in {d}");
    assert_eq!(names.iter().filter(|n| n.starts_with("base-")).count(), 1, "{names:?} in {d}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "full-tests")]
#[test]
fn cg_resumes_on_another_grid_in_the_failure_free_number_of_iterations() {
    let (out, json) = Ft::new("cg", &["--n", "400", "--nb", "32"]).run(&["--grid", "1x2", "--jacobi"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let want = report(json, &out).iterations.expect("iterations");
    let (_, r) = lost_then_resumed_on("cg", "2x2", "1x2", "job@6:matvec", &["--jacobi"]);
    assert_eq!((r.iterations, r.resumed_at_step), (Some(want), Some(6)), "{r:?}");
}

#[cfg(feature = "full-tests")]
#[test]
fn a_save_missing_a_file_is_refused_with_the_reason_unless_its_parity_rebuilds_it() {
    let shape = ["--n", "400", "--nb", "32"];
    let refused = |op: &'static str, d: &str, to: &str, why: &str| {
        let (out, _) = Ft::new(op, &shape).run(&["--grid", to, "--resume", d, "--check"]);
        assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
        let all = format!("{}{}", out.stdout, out.stderr);
        assert!(all.contains(why), "{all}");
    };
    // A file of the save missing. Saved with the data only (the default),
    // nothing rebuilds it; saved with the checksums (--checkpoint-parity),
    // they rebuild it on the grid of the save.
    let lost_with_a_file_missing = |name: &str, more: &[&str]| {
        let dir = fresh_dir(name);
        let d = dir.display().to_string();
        let mut args =
            vec!["--grid", "2x2", "--checkpoint-every", "0", "--checkpoint-dir", &d, "--kill", "job@6:update"];
        args.extend(more);
        let (out, _) = Ft::new("qr", &shape).run(&args);
        assert_eq!(out.code, Some(blacs_ft::launch::EXIT_JOB_LOST), "{}\n{}", out.stdout, out.stderr);
        let (step, generation) = newest_named(&out.stderr).expect("the checkpoint named");
        std::fs::remove_file(dir.join(format!("gen-{generation}/rank-3.ckpt"))).unwrap();
        (dir, d, step)
    };
    let (dir, d, _) = lost_with_a_file_missing("data-only", &[]);
    refused("qr", &d, "2x2", "missing: the checkpoint holds the data only");
    refused("qr", &d, "1x2", "missing: a save of a 2x2 grid resumes on a 1x2 grid only with every file of it");
    let _ = std::fs::remove_dir_all(&dir);
    let (dir, d, step) = lost_with_a_file_missing("parity", &["--checkpoint-parity"]);
    let (out, json) = Ft::new("qr", &shape).run(&["--grid", "2x2", "--resume", &d, "--check"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(r.ok && residuals_pass(&r) && r.resumed_at_step == Some(step), "{r:?}");
    assert!(!dir.exists(), "{d} left behind");
    // On another grid: a job on the grid of the save rebuilds the missing
    // file and saves every file again, then the 1x2 grid reads them all
    // (two recoveries: the resume that rebuilt rank 3, the restart here).
    let (dir, d, step) = lost_with_a_file_missing("parity-elsewhere", &["--checkpoint-parity"]);
    let (out, json) = Ft::new("qr", &shape).run(&["--grid", "1x2", "--resume", &d, "--check", "--verify"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("lacks the file(s) of grid rank(s) [3] of its 2x2 grid"), "{}", out.stderr);
    assert!(out.stdout.contains("the missing checkpoint files rebuilt"), "{}", out.stdout);
    let r = report(json, &out);
    assert!(r.ok && residuals_pass(&r) && r.resumed_at_step == Some(step), "{r:?}");
    assert!(r.checksum_check.as_ref().is_some_and(|c| c.ok) && r.grid == [1, 2], "{r:?}");
    let modes: Vec<_> = r.recoveries.iter().flatten().map(|x| (x.mode.as_str(), x.ranks.clone())).collect();
    assert_eq!(modes, [("resume", vec![3]), ("cof", vec![])], "{r:?}");
    assert!(!dir.exists(), "{d} left behind");
    // Two files of one process row missing: the job on the 2x2 grid says
    // so (unrecoverable, exit 3), and the generation is left as it was.
    let (dir, d, _) = lost_with_a_file_missing("parity-two-in-a-row", &["--checkpoint-parity"]);
    // (Rank 2's file too, of every generation: ranks 2 and 3 are process
    // row 1.)
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let _ = std::fs::remove_file(e.path().join("rank-2.ckpt"));
    }
    let names = |d: &std::path::Path| {
        let mut v: Vec<_> = std::fs::read_dir(d).unwrap().flatten().map(|e| e.file_name()).collect();
        v.sort();
        v
    };
    let before = names(&dir);
    let (out, _) = Ft::new("qr", &shape).run(&["--grid", "1x2", "--resume", &d, "--check"]);
    assert_eq!(out.code, Some(3), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("is left as it was"), "{}", out.stderr);
    assert_eq!(before, names(&dir), "{d}: the failed rebuild left files");
    let _ = std::fs::remove_dir_all(&dir);
    // A solve's checkpoint holds B half solved with the factors of its
    // grid: on another grid, whose factors the job computed again, the
    // solve starts again from its input.
    let dir = fresh_dir("solve");
    let d = dir.display().to_string();
    let lu = Ft::new("lu", &["--n", "400", "--nb", "32", "--solve"]);
    let (out, _) =
        lu.run(&["--grid", "2x2", "--checkpoint-every", "0", "--checkpoint-dir", &d, "--kill", "job@getrs:3"]);
    assert_eq!(out.code, Some(blacs_ft::launch::EXIT_JOB_LOST), "{}\n{}", out.stdout, out.stderr);
    let (out, json) = lu.run(&["--grid", "1x2", "--resume", &d, "--check"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let said = "pdgetrs_ft was saved at step 3 on a 2x2 grid, with the factors of that grid; on this 1x2 grid";
    assert!(out.stderr.contains(said), "{}", out.stderr);
    let r = report(json, &out);
    assert!(r.ok && residuals_pass(&r) && r.resumed_at_step.is_none(), "{r:?}");
    assert!(r.solve_residual.is_some_and(|x| x < 16.0), "{r:?}");
    assert!(!dir.exists(), "{d} left behind");
}

#[cfg(feature = "full-tests")]
#[test]
fn the_auto_interval_is_young_and_dalys_from_the_first_checkpoints_cost() {
    let dir = fresh_dir("auto");
    let d = dir.display().to_string();
    // MTBF 1.8 s: an interval well inside the run.
    let ft = Ft::new("qr", &["--n", "1024", "--nb", "32"]);
    let (out, json) =
        ft.run(&["--grid", "1x2", "--checkpoint-every", "auto", "--mtbf", "0.0005", "--checkpoint-dir", &d, "--check"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    let saved = r.checkpoints.clone().unwrap_or_default();
    // The first at the first commit point; then √(2·C·MTBF).
    assert_eq!(saved.first().map(|c| c.step), Some(1), "{r:?}");
    let want = (2.0 * saved[0].write_ms / 1e3 * 1.8).sqrt();
    let got = r.checkpoint_interval_s.expect("the interval");
    assert!((got - want).abs() <= 1e-3 * want + 1e-3, "{got} s, want {want} s: {r:?}");
    assert!(out.stdout.contains("(Young/Daly: √(2 × "), "{}", out.stdout);
    assert!(!dir.exists(), "{d} left behind");
}

#[cfg(feature = "full-tests")]
#[test]
fn a_lost_nodes_files_are_rebuilt_when_its_processes_were_spread_over_the_process_rows() {
    use common::ftla_with;
    // Two "nodes" of two processes each, filled in turn (as `--map-by
    // slot` does): in the default order node a holds process row 0 whole;
    // spread puts its processes in rows 0 and 1 (grid ranks 0 and 2).
    let nodes = [("FTLA_TEST_NODES", "a,a,b,b")];
    let dir = fresh_dir("spread");
    let d = dir.display().to_string();
    let json = std::env::temp_dir().join(format!("ftla-periodic-spread-{}.json", std::process::id()));
    let j = json.display().to_string();
    let qr = ["qr", "--ft", "--grid", "2x2", "--n", "400", "--nb", "32", "--placement", "spread"];
    let mut lost = qr.to_vec();
    lost.extend(["--checkpoint-every", "0", "--checkpoint-parity", "--checkpoint-dir", &d, "--kill", "job@6:update"]);
    let out = ftla_with(&lost, &nodes);
    assert_eq!(out.code, Some(blacs_ft::launch::EXIT_JOB_LOST), "{}\n{}", out.stdout, out.stderr);
    let (step, generation) = newest_named(&out.stderr).expect("the checkpoint named");
    // The node's disk is gone with it: its files, one per process row.
    for r in [0, 2] {
        std::fs::remove_file(dir.join(format!("gen-{generation}/rank-{r}.ckpt"))).unwrap();
    }
    let mut resumed = qr.to_vec();
    resumed.extend(["--resume", &d, "--check", "--json", &j]);
    let out = ftla_with(&resumed, &nodes);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r: ftla_bench::report::FactorReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(r.ok && residuals_pass(&r) && r.resumed_at_step == Some(step), "{r:?}");
    assert_eq!((r.placement.as_deref(), r.nodes.clone()), (Some("spread"), Some(vec![0, 1, 0, 1])), "{r:?}");
    assert!(out.stdout.contains("placement spread: 2 node(s), each holding at most 1 process(es) of a process row"));
    let _ = std::fs::remove_file(&json);
    assert!(!dir.exists(), "{d} left behind");
}
