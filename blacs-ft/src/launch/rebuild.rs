//! A save with missing files resumed on another grid: its checksums
//! rebuild the missing files only in the layout of the grid they were
//! saved on, so a job there rebuilds and saves them all first (docs/cof.md,
//! "Missing files, on another grid").

use super::job::launch_retrying;
use super::{parse_job_grid, CofRelaunch, Outcome, Relaunch, EXIT_CHECKPOINTED, GRID_VAR, REBUILD_CHECKPOINT_VAR};
use std::time::Instant;

/// A checkpoint as saved on its grid: which of its files are missing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaveOnGrid {
    /// The saving grid.
    pub p: u32,
    pub q: u32,
    /// Grid ranks of that grid whose file is missing or unreadable.
    pub missing: Vec<u32>,
    /// The files hold the checksums (saved on a failure, or with
    /// `--checkpoint-parity`): a job on the saving grid rebuilds missing
    /// ones, as far as the checksums reach.
    pub parity: bool,
    /// The files are those saved on a failure (`DIR/rank-R.ckpt`), not a
    /// periodic generation's.
    pub saved_on_failure: bool,
}

/// Before a job resumes a save on another grid than the save's: when files
/// of the save are missing and it holds the checksums, a job on the
/// saving grid (as many processes, oversubscribed on the slots there are)
/// loads it, rebuilds the missing files' blocks from the checksums and
/// saves every file again; the job on the new grid then reads them all.
/// Returns the rebuilt save's epoch (the run's recoveries then) when such
/// a job ran and saved every file; exits with its outcome when it failed
/// (it said why: more files of one process row missing than the checksums
/// rebuild, a bad file; [`EXIT_CHECKPOINTED`] when it lost a process and
/// saved only part). A periodic generation is then left as it was (the
/// files the failed rebuild wrote beside it are removed); a save on a
/// failure, rewritten in place, resumes on its own grid. `None`: nothing
/// to rebuild first (the new job loads the save as it is, or refuses it,
/// naming the file).
pub(super) fn rebuild_before_regrid(
    job: &Relaunch,
    cof: &CofRelaunch,
    started: Instant,
    env: &[(&'static str, String)],
) -> Option<u32> {
    let grid = job.grid?;
    let save = cof.save_in?(&cof.dir)?;
    let target = match std::env::var(GRID_VAR).ok().filter(|g| !g.is_empty()) {
        Some(g) => parse_job_grid(&g).map(|(p, q, _)| (p, q)).ok()?,
        None => (grid.p, grid.q),
    };
    if save.missing.is_empty() || !save.parity || (save.p, save.q) == target {
        return None;
    }
    let t = Instant::now();
    eprintln!(
        "ftla: the checkpoint in {} lacks the file(s) of grid rank(s) {:?} of its {}x{} grid: rebuilding them from \
         its checksums in a job on a {}x{} grid first",
        cof.dir.display(),
        save.missing,
        save.p,
        save.q,
        save.p,
        save.q
    );
    // (What the directory held: a failed rebuild's new files go.)
    let files_in = |d: &std::path::Path| -> Vec<std::ffi::OsString> {
        std::fs::read_dir(d).map(|e| e.flatten().map(|e| e.file_name()).collect()).unwrap_or_default()
    };
    let before_rebuild = files_in(&cof.dir);
    let mut rebuild = job.clone();
    rebuild.nprocs = save.p * save.q;
    let mut env = env.to_vec();
    env.retain(|(k, _)| *k != REBUILD_CHECKPOINT_VAR);
    env.push((REBUILD_CHECKPOINT_VAR, "1".into()));
    let before = std::env::var(GRID_VAR).unwrap_or_default();
    std::env::set_var(GRID_VAR, format!("{}x{}+0", save.p, save.q));
    let (code, outcome) = launch_retrying(&rebuild, started, &env);
    std::env::set_var(GRID_VAR, before);
    // The save must now be complete (a process lost during the rebuild
    // under checkpoint-on-failure saves what it holds, which is not).
    let complete = cof.save_in.and_then(|f| f(&cof.dir)).is_some_and(|s| s.missing.is_empty());
    let failed = match Outcome::parse(&outcome) {
        Some(Outcome::Checkpointed { epoch }) if complete => {
            eprintln!(
                "ftla: rebuilt and saved again in {:.1} s; resuming on a {}x{} grid",
                t.elapsed().as_secs_f64(),
                target.0,
                target.1
            );
            return Some(epoch);
        }
        Some(Outcome::Checkpointed { .. }) => {
            eprintln!("ftla: the job rebuilding the missing checkpoint files lost a process and did not complete");
            EXIT_CHECKPOINTED
        }
        Some(o) => {
            eprintln!("ftla: the missing checkpoint files could not be rebuilt");
            o.exit_code()
        }
        None => {
            eprintln!(
                "ftla: the job rebuilding the missing checkpoint files ended without reporting an outcome (mpiexec \
                 exit code {code})"
            );
            1
        }
    };
    // The save as it was: a periodic generation's, whose files the
    // rebuild's files saved on a failure would hide, has them removed. (A
    // save on a failure was rewritten in place: resume it on its own grid.)
    if !save.saved_on_failure {
        for name in files_in(&cof.dir).into_iter().filter(|n| !before_rebuild.contains(n)) {
            let path = cof.dir.join(name);
            if path.is_file() {
                let _ = std::fs::remove_file(path);
            }
        }
        eprintln!("ftla: the checkpoint in {} is left as it was", cof.dir.display());
    } else {
        eprintln!(
            "ftla: resume the checkpoint in {} on its {}x{} grid, where the checksums rebuild what is missing",
            cof.dir.display(),
            save.p,
            save.q
        );
    }
    std::process::exit(failed)
}
