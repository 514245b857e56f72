//! Self-relaunch under `mpiexec`: a program started outside MPI re-executes
//! itself under `mpiexec --with-ft ulfm` with the right number of ranks, waits
//! with an optional hard timeout, and exits with the job's outcome.
//!
//! The outcome is not `mpiexec`'s exit code (it is non-zero whenever a rank
//! was killed, even when the job recovered): grid rank 0 writes it to the
//! file named by `FTLA_STATUS_FILE` with [`write_outcome`]. What no process
//! can report the launcher judges from the job's register of processes
//! next to that file (`members`): a job whose every grid process was lost
//! ends at once as [`Outcome::Unrecoverable`], and a grid rank that died of
//! a signal with no repair after it makes a reported success a failure.
//!
//! The launcher owns its job. Every process of it (`mpiexec`, the ranks,
//! spawned replacements) carries the environment variable [`JOB_TAG_VAR`]
//! with a value unique to the job, so that the launcher finds them all even
//! after `mpiexec` is gone (Open MPI puts every rank in a process group of
//! its own). SIGINT, SIGTERM and SIGHUP are forwarded to the job; nothing of
//! it outlives the launcher.

mod interval;
mod job;
mod outcome;
mod processes;
mod rebuild;
mod slots;
mod stderr;
mod timeout;

use crate::members::{self, Register};
pub use interval::{CheckpointInterval, MTBF_VAR};
use job::launch_retrying;
pub use outcome::{write_outcome, write_outcome_unless_failed, write_status, Outcome};
use processes::{install_signal_handlers, now_nanos, STOP_SIGNAL};
pub use processes::{kill_tagged, tagged_processes};
use rebuild::rebuild_before_regrid;
pub use rebuild::SaveOnGrid;
pub use slots::{grid_for_slots, parse_job_grid, HostList, JobGrid, GRID_VAR};
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};
pub use timeout::{run_with_timeout, Captured};

/// Exit code when the job ran past its timeout (as `timeout(1)`).
pub const EXIT_TIMEOUT: i32 = 124;
/// Exit code of a job that reported a failure it could not recover from
/// (for example two lost processes in one process row).
pub const EXIT_UNRECOVERABLE: i32 = 3;
/// Exit code of a process that saved a checkpoint after a failure
/// (checkpoint-on-failure), and of the launcher when it leaves the
/// checkpoints for a later `--resume` (`--max-restarts` reached).
pub const EXIT_CHECKPOINTED: i32 = 76;
/// Recovery policy of the job's resilient regions: `inplace`, `cof` or `auto`.
pub const RECOVERY_VAR: &str = "FTLA_RECOVERY";
/// Directory of the checkpoints (checkpoint-on-failure).
pub const CHECKPOINT_DIR_VAR: &str = "FTLA_CHECKPOINT_DIR";
/// Identity of a run, kept across its restarts (hexadecimal).
pub const RUN_ID_VAR: &str = "FTLA_RUN_ID";
/// Set to `1` in a job that resumes from the checkpoints in [`CHECKPOINT_DIR_VAR`].
pub const RESUME_VAR: &str = "FTLA_RESUME";
/// Seconds between periodic checkpoints (fractions allowed; unset or
/// empty: none).
pub const CHECKPOINT_EVERY_VAR: &str = "FTLA_CHECKPOINT_EVERY";
/// Set to `1` to keep the periodic checkpoints after a successful run.
pub const KEEP_CHECKPOINTS_VAR: &str = "FTLA_KEEP_CHECKPOINTS";
/// Set to `1`: periodic checkpoints save the checksum columns (and the
/// left-factor sums) too, so that files missing for up to the layout's
/// losses per process row are rebuilt when resuming on the grid of the
/// save (node-local disks); by default they hold the data only and the
/// checksums are encoded again when resuming.
pub const CHECKPOINT_PARITY_VAR: &str = "FTLA_CHECKPOINT_PARITY";
/// Set to `1` in a job that only rebuilds the files missing from the
/// checkpoint it resumes (on the grid of the save), saves every process's
/// file again and ends as a checkpoint-on-failure job does: the launcher
/// runs one before a save with missing files resumes on another grid.
pub const REBUILD_CHECKPOINT_VAR: &str = "FTLA_REBUILD_CHECKPOINT";
/// Recoveries before this job (repair epochs of the jobs before it, each
/// restart counting one): kills of earlier epochs do not fire again.
pub const EPOCH_BASE_VAR: &str = "FTLA_EPOCH_BASE";
/// Restarts of the run so far (0 in its first job).
pub const RESTARTS_VAR: &str = "FTLA_RESTARTS";
/// The checksum layout of a C program's fault-tolerant calls
/// (`reverse-neighbor` or `rotating`; read by `scalapack_ft`).
pub const LAYOUT_VAR: &str = "FTLA_LAYOUT";
/// The rotating layout's checksums per group (read by `scalapack_ft`).
pub const CHECKSUMS_VAR: &str = "FTLA_CHECKSUMS";
/// Environment variable whose value marks every process of one job.
pub const JOB_TAG_VAR: &str = "FTLA_JOB_TAG";
/// How the ranks show a long run's progress: `live` (a line the launcher
/// draws over itself on its terminal), `lines` (a line per tenth of the
/// work) or `off`. The launcher sets it when it is unset.
pub const PROGRESS_VAR: &str = "FTLA_PROGRESS";
/// The block size `ftla … --nb auto` chose where it started, for every
/// process of its job.
pub const NB_VAR: &str = "FTLA_NB";
/// The start of every progress line a rank prints.
pub const PROGRESS_PREFIX: &str = "ftla: progress: ";
/// How long a job may take to end once grid rank 0 reported its outcome
/// before the launcher ends what is left of it (a replacement blocked in a
/// repair the survivors gave up, a process stuck in `MPI_Finalize`).
pub const OUTCOME_GRACE: Duration = Duration::from_secs(8);

/// True when this process was started by an MPI launcher.
pub fn inside_mpi() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

/// How to relaunch.
#[derive(Clone, Debug)]
pub struct Relaunch {
    /// Number of MPI processes (grid ranks plus spares).
    pub nprocs: u32,
    /// Kill the whole job after this long (exit code [`EXIT_TIMEOUT`]).
    pub timeout: Option<Duration>,
    /// Launch with ULFM enabled (`--with-ft ulfm`); `false` runs without
    /// fault tolerance, as a plain MPI job.
    pub ulfm: bool,
    /// Checkpoint-on-failure: relaunch the job when its survivors saved
    /// checkpoints (`None`: a saved checkpoint ends the launcher with
    /// [`EXIT_CHECKPOINTED`]).
    pub cof: Option<CofRelaunch>,
    /// The program and its arguments (`None`: this program again, with its
    /// own arguments). A program that reports no outcome (see
    /// [`write_outcome`]) ends the launcher with `mpiexec`'s exit code.
    pub program: Option<Vec<String>>,
    /// The program's grid, when it can resume on another one (see
    /// [`GRID_VAR`]): a job lost with its node then resumes on the largest
    /// grid the hosts left hold. `None`: it resumes on the same number of
    /// processes only.
    pub grid: Option<JobGrid>,
}

/// How the launcher runs a job that saves checkpoints: on a failure
/// (checkpoint-on-failure) or periodically.
#[derive(Clone, Debug, Default)]
pub struct CofRelaunch {
    /// The checkpoint directory.
    pub dir: std::path::PathBuf,
    /// The run's identity (a new one per run; kept across its restarts).
    pub run_id: u64,
    /// Restarts allowed; 0 stops after the first save, leaving the
    /// checkpoints for `--resume`.
    pub max_restarts: u32,
    /// The first job resumes from checkpoints left by an earlier run.
    pub resume: bool,
    /// The recovery policy passed to the jobs (`inplace`, `cof` or `auto`).
    pub policy: &'static str,
    /// Recoveries of the run before its first job here (a resumed run's).
    pub epoch_base: u32,
    /// Periodic checkpoints (`None`: none).
    pub checkpoint_every: Option<CheckpointInterval>,
    /// Keep the periodic checkpoints after a successful finish.
    pub keep_checkpoints: bool,
    /// Periodic checkpoints save the checksum columns too (the parity
    /// that rebuilds missing files).
    pub checkpoint_parity: bool,
    /// The newest complete periodic checkpoint in a directory, if any (a
    /// job that ended with no outcome then was lost, not a process, and
    /// can be resumed).
    pub newest_checkpoint: Option<fn(&std::path::Path) -> Option<SavedGeneration>>,
    /// The save a job resuming from a directory would load (the files
    /// saved on a failure, else the newest generation): its grid and its
    /// missing files. A save with missing files that the next job resumes
    /// on another grid is first rebuilt on its own grid.
    pub save_in: Option<fn(&std::path::Path) -> Option<SaveOnGrid>>,
}

/// A periodic checkpoint a lost job left: where to resume it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavedGeneration {
    /// Its generation, and the routine's committed steps it holds.
    pub generation: u64,
    pub routine: String,
    pub step: u64,
    /// The run's recoveries when it was saved.
    pub epoch: u32,
}

impl CofRelaunch {
    /// The environment of one job of the run.
    fn env(&self, restarts: u32, epoch_base: u32, resume: bool) -> Vec<(&'static str, String)> {
        let (every, mtbf) = self.checkpoint_every.map(CheckpointInterval::to_env).unwrap_or_default();
        vec![
            (RECOVERY_VAR, self.policy.to_string()),
            (CHECKPOINT_DIR_VAR, self.dir.display().to_string()),
            (RUN_ID_VAR, format!("{:016x}", self.run_id)),
            (RESUME_VAR, if resume { "1" } else { "" }.to_string()),
            (EPOCH_BASE_VAR, epoch_base.to_string()),
            (RESTARTS_VAR, restarts.to_string()),
            (CHECKPOINT_EVERY_VAR, every),
            (MTBF_VAR, mtbf),
            (KEEP_CHECKPOINTS_VAR, if self.keep_checkpoints { "1" } else { "" }.to_string()),
            (CHECKPOINT_PARITY_VAR, if self.checkpoint_parity { "1" } else { "" }.to_string()),
            (REBUILD_CHECKPOINT_VAR, String::new()),
        ]
    }
}

/// Exit code of a job lost whole (its MPI runtime ended it, as a lost node
/// does) that left a periodic checkpoint to resume from, when the launcher
/// does not resume it itself.
pub const EXIT_JOB_LOST: i32 = 78;

/// A new run identity: the clock and the process id, mixed.
pub fn new_run_id() -> u64 {
    let t = now_nanos() as u64;
    let x = t ^ ((std::process::id() as u64) << 32) ^ 0x9E37_79B9_7F4A_7C15;
    // (splitmix64's finaliser: nearby clocks give unrelated identities.)
    let x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Whether the launcher's extra arguments name other hosts (then the
/// cores and memory of this machine say nothing about the job's).
pub fn runs_on_other_hosts() -> bool {
    std::env::var("FTLA_MPIEXEC_ARGS").is_ok_and(|a| {
        a.split_whitespace().any(|w| {
            ["--hostfile", "--machinefile", "--host", "-H", "-hostfile", "--default-hostfile"]
                .iter()
                .any(|f| w == *f || w.starts_with(&format!("{f}=")))
        })
    })
}

/// Cores of this machine that this process may use.
pub fn local_cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// PRRTE's defaults for jobs that do not say otherwise, which the jobs of
/// `MPI_Comm_spawn` do not: every replacement's job is recoverable and its
/// failures are announced.
///
/// `--with-ft ulfm` makes only the job on the command line recoverable
/// (PRRTE 3.0's `schizo_ompi`). A spawned job keeps PRRTE's defaults, so
/// the death of one of its processes aborts that job — PRRTE kills its
/// other processes, the replacements of the same `MPI_Comm_spawn` — and
/// no failure event is sent. A repair that spawned two replacements at
/// once then lost the second to the runtime during the next repair's
/// spawn, which never completed (its `PMIx_Connect` waited for the dead
/// process). With these defaults each loss is one loss, announced.
/// Programs launched by hand need the same arguments (docs/c-abi.md).
pub const SPAWNED_JOBS_RECOVERABLE: [(&str, &str); 2] =
    [("state_base_recoverable", "1"), ("state_base_notify_errors", "1")];

/// The `mpiexec` command line that [`relaunch`] runs (for display and tests).
pub fn mpiexec_command(r: &Relaunch) -> Command {
    let mut cmd = Command::new(crate::mpiexec_path());
    if r.ulfm {
        cmd.args(["--with-ft", "ulfm"]);
        cmd.args(SPAWNED_JOBS_RECOVERABLE.iter().flat_map(|(k, v)| ["--prtemca", k, v]));
    }
    // Respawned ranks need free slots; han/cuda collectives are not fault
    // tolerant (open-mpi/ompi issue tracker).
    cmd.args(["--oversubscribe", "--bind-to", "none", "--mca", "coll", "^han,cuda"]);
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } == 0 {
        cmd.arg("--allow-run-as-root");
    }
    for v in ["FTLA_STATUS_FILE", "FTLA_KILL", "OPENBLAS_NUM_THREADS", JOB_TAG_VAR].iter().chain(FORWARDED) {
        cmd.args(["-x", v]);
    }
    if let Ok(extra) = std::env::var("FTLA_MPIEXEC_ARGS") {
        cmd.args(extra.split_whitespace());
    }
    cmd.arg("-n").arg(r.nprocs.to_string());
    match &r.program {
        Some(argv) => {
            cmd.args(argv);
        }
        None => {
            let exe = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default();
            cmd.arg(exe).args(std::env::args().skip(1));
        }
    }
    cmd
}

/// Re-executes this program under `mpiexec` and exits with the job's
/// outcome ([`Outcome::exit_code`]: 0 ok, 1 failed — also when grid rank 0
/// wrote nothing, or a grid rank died of a signal that no recovery
/// answered —, [`EXIT_UNRECOVERABLE`], also when every grid process was
/// lost, said within seconds), [`EXIT_TIMEOUT`] on timeout,
/// and 128 + the signal when SIGINT, SIGTERM or SIGHUP stopped it (the
/// signal is forwarded to the job, and every process of it is gone before
/// the launcher exits).
///
/// A launcher that fails before starting any rank (PMIx's sporadic
/// "listener thread failed to start") is retried, at most
/// [`LAUNCH_ATTEMPTS`] times in all, with a notice; the timeout covers all
/// attempts. More ranks than cores (without a hostfile) is said in one
/// line: timings are then meaningless.
pub fn relaunch(r: &Relaunch) -> ! {
    install_signal_handlers();
    // (The ranks' progress: a live line where this launcher writes to a
    // terminal, lines elsewhere; `off` when the command said `--quiet`.)
    if std::env::var(PROGRESS_VAR).map_or(true, |v| v.is_empty()) {
        // SAFETY: isatty on a file descriptor number.
        let terminal = unsafe { libc::isatty(2) } == 1;
        std::env::set_var(PROGRESS_VAR, if terminal { "live" } else { "lines" });
    }
    if !runs_on_other_hosts() && r.nprocs as usize > local_cores() {
        eprintln!(
            "ftla: {} processes on {} cores: oversubscribed, so timings are not meaningful",
            r.nprocs,
            local_cores()
        );
    }
    let started = Instant::now();
    // (A job lost with its node runs again on the hosts left; a grid for it
    // is the launcher's to set, never one left in the environment.)
    let mut job = r.clone();
    std::env::set_var(GRID_VAR, "");
    let mut restarts = 0;
    let mut epoch_base = r.cof.as_ref().map_or(0, |c| c.epoch_base);
    let mut rebuilt = false;
    loop {
        // (A signal that came between two attempts ends the launcher.)
        let sig = STOP_SIGNAL.load(Ordering::SeqCst);
        if sig != 0 {
            std::process::exit(128 + sig);
        }
        let env = r.cof.as_ref().map(|c| c.env(restarts, epoch_base, c.resume || restarts > 0)).unwrap_or_default();
        // (Once per resume: the rebuilt save is complete.)
        if let Some(cof) = r.cof.as_ref().filter(|c| (c.resume || restarts > 0) && !rebuilt) {
            rebuilt = true;
            if let Some(epoch) = rebuild_before_regrid(&job, cof, started, &env) {
                epoch_base = epoch;
                continue;
            }
        }
        let (code, outcome) = launch_retrying(&job, started, &env);
        match (Outcome::parse(&outcome), &r.cof) {
            (Some(Outcome::Checkpointed { epoch }), Some(cof)) if restarts < cof.max_restarts => {
                restarts += 1;
                epoch_base = epoch;
                eprintln!(
                    "ftla: a process was lost; the survivors saved checkpoints in {}: starting the job again \
                     (restart {restarts} of at most {})",
                    cof.dir.display(),
                    cof.max_restarts
                );
                continue;
            }
            (Some(Outcome::Checkpointed { .. }), cof) => {
                let dir = cof
                    .as_ref()
                    .map(|c| c.dir.display().to_string())
                    .unwrap_or_else(|| "the checkpoint directory".into());
                eprintln!(
                    "ftla: a process was lost; the survivors saved checkpoints in {dir}; not restarting ({} restart(s) \
                     allowed): continue with --resume {dir}",
                    cof.as_ref().map_or(0, |c| c.max_restarts)
                );
                std::process::exit(EXIT_CHECKPOINTED);
            }
            (Some(o), cof) => {
                if let (Outcome::Ok, Some(c)) = (o, cof) {
                    // The checkpoints are deleted by the processes that
                    // loaded them; the directory goes when it is empty.
                    let _ = std::fs::remove_dir(&c.dir);
                }
                std::process::exit(o.exit_code());
            }
            (None, _) => {}
        }
        // No outcome and a periodic checkpoint: the job was lost whole.
        let lost = r.cof.as_ref().and_then(|c| Some((c, c.newest_checkpoint?(&c.dir)?)));
        if let Some((cof, saved)) = lost {
            let dir = cof.dir.display();
            eprintln!(
                "ftla: the job was lost (its MPI runtime ended every process, as a lost node does; mpiexec exit \
                 code {code}); its newest checkpoint, {} at step {} (generation {}), is in {dir}",
                saved.routine, saved.step, saved.generation
            );
            if cof.policy != "inplace" && restarts < cof.max_restarts {
                if let Some(shape) = where_to_resume(&mut job) {
                    restarts += 1;
                    // (The loss of the job counts as one recovery: kills of
                    // earlier epochs do not fire again.)
                    epoch_base = saved.epoch + 1;
                    rebuilt = false;
                    eprintln!(
                        "ftla: resuming the job from it{shape} (restart {restarts} of at most {})",
                        cof.max_restarts
                    );
                    continue;
                }
            }
            eprintln!("ftla: resume it with the same command and --resume {dir}");
            std::process::exit(EXIT_JOB_LOST);
        }
        if r.program.is_some() {
            // Another program: its job's outcome is mpiexec's.
            std::process::exit(code);
        }
        eprintln!("ftla: the job ended without reporting an outcome (mpiexec exit code {code})");
        std::process::exit(1);
    }
}

/// Where a lost job runs again: on the hosts of its `mpiexec` arguments
/// that still start a process (the job's host list is narrowed to them),
/// with its grid when their slots hold it, otherwise on the largest grid
/// they hold ([`grid_for_slots`], told to the job by [`GRID_VAR`]). Says
/// what changed, and returns the words for the launcher's line (empty on
/// this machine alone, which is there, or with every host answering), or
/// `None` (with the reason said) when the job cannot run on them.
fn where_to_resume(job: &mut Relaunch) -> Option<String> {
    let args = std::env::var("FTLA_MPIEXEC_ARGS").unwrap_or_default();
    let hosts = match HostList::parse(&args) {
        Ok(Some(h)) => h,
        Ok(None) => return Some(String::new()),
        Err(e) => {
            eprintln!("ftla: cannot read the job's hosts to resume it: {e}");
            return None;
        }
    };
    let left = hosts.answering();
    if left.hosts.len() == hosts.hosts.len() {
        return Some(String::new());
    }
    let gone: Vec<&str> = hosts.hosts.iter().filter(|h| !left.hosts.contains(h)).map(|(h, _)| h.as_str()).collect();
    let slots = left.slots();
    eprintln!("ftla: host(s) {} no longer start a process; {slots} slot(s) left", gone.join(", "));
    if slots == 0 {
        return None;
    }
    std::env::set_var("FTLA_MPIEXEC_ARGS", left.args());
    if slots >= job.nprocs {
        return Some(format!(" on the hosts left ({slots} slots)"));
    }
    let Some(grid) = job.grid else {
        eprintln!("ftla: the job needs {} processes; this program cannot resume on another grid by itself", job.nprocs);
        return None;
    };
    let Some((p, q)) = grid_for_slots(grid.p, grid.q, grid.min_q, slots) else {
        eprintln!("ftla: {slots} slot(s) hold no grid of at least {} process columns", grid.min_q);
        return None;
    };
    let spares = grid.spares.min(slots - p * q);
    job.nprocs = p * q + spares;
    std::env::set_var(GRID_VAR, format!("{p}x{q}+{spares}"));
    let kept = if grid.spares > 0 { format!(", {spares} of {} hot spares", grid.spares) } else { String::new() };
    Some(format!(" on a {p}x{q} grid (was {}x{}{kept}) on the hosts left", grid.p, grid.q))
}

/// The variables of recovery and of the checksum layout passed on to
/// every process (set, possibly empty, by [`launch_once`]).
const FORWARDED: &[&str] = &[
    RECOVERY_VAR,
    CHECKPOINT_DIR_VAR,
    RUN_ID_VAR,
    RESUME_VAR,
    CHECKPOINT_EVERY_VAR,
    MTBF_VAR,
    KEEP_CHECKPOINTS_VAR,
    CHECKPOINT_PARITY_VAR,
    REBUILD_CHECKPOINT_VAR,
    EPOCH_BASE_VAR,
    RESTARTS_VAR,
    crate::universe::REFUSE_SPAWN_VAR,
    crate::universe::STALL_SPAWN_VAR,
    crate::universe::LATE_REVOKE_VAR,
    PROGRESS_VAR,
    NB_VAR,
    // (Every process's calls use one layout, on other hosts too.)
    LAYOUT_VAR,
    CHECKSUMS_VAR,
    crate::placement::PLACEMENT_VAR,
    crate::placement::TEST_NODES_VAR,
    GRID_VAR,
];

/// Launches of one job when the launcher itself fails to start.
pub const LAUNCH_ATTEMPTS: u32 = 3;

#[cfg(test)]
mod tests {
    use super::job::name_ranks;
    use super::stderr::{copy_job_stderr, filter_launcher_noise, is_handled_failure_note, LiveLine};
    use super::*;

    const DASHES: &str = "--------------------------------------------------------------------------";

    #[test]
    fn every_process_exit_code_means_one_thing() {
        let mut codes = [
            EXIT_UNRECOVERABLE,
            EXIT_CHECKPOINTED,
            EXIT_TIMEOUT,
            EXIT_JOB_LOST,
            crate::watchdog::EXIT_STALLED,
            crate::universe::EXIT_ABANDONED,
        ];
        codes.sort_unstable();
        assert!(codes.windows(2).all(|w| w[0] != w[1]), "{codes:?}");
    }

    #[test]
    fn the_checksum_layout_reaches_every_process_on_every_host() {
        let r =
            Relaunch { nprocs: 4, timeout: None, ulfm: true, cof: None, program: Some(vec!["app".into()]), grid: None };
        let args: Vec<String> = mpiexec_command(&r).get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        for var in [LAYOUT_VAR, CHECKSUMS_VAR] {
            assert!(args.windows(2).any(|w| w[0] == "-x" && w[1] == var), "{var} not passed on: {args:?}");
        }
    }

    #[test]
    fn every_job_of_a_fault_tolerant_launch_is_recoverable_spawned_ones_too() {
        let args = |ulfm: bool| -> Vec<String> {
            let r =
                Relaunch { nprocs: 4, timeout: None, ulfm, cof: None, program: Some(vec!["app".into()]), grid: None };
            mpiexec_command(&r).get_args().map(|a| a.to_string_lossy().into_owned()).collect()
        };
        let ft = args(true);
        for setting in ["state_base_recoverable", "state_base_notify_errors"] {
            assert!(ft.windows(3).any(|w| w == ["--prtemca", setting, "1"]), "{setting}: {ft:?}");
        }
        assert!(!args(false).iter().any(|a| a == "--prtemca"), "{:?}", args(false));
    }

    #[test]
    fn a_stall_is_an_unrecoverable_outcome_of_its_own() {
        assert_eq!(Outcome::parse("stalled grid rank 2: MPI_Comm_spawn …"), Some(Outcome::Stalled));
        assert_eq!(Outcome::Stalled.exit_code(), EXIT_UNRECOVERABLE);
        assert_ne!(Outcome::parse("unrecoverable two losses"), Some(Outcome::Stalled));
    }

    #[test]
    fn open_mpis_notes_on_abandoned_collectives_are_recognised() {
        assert!(is_handled_failure_note(
            "NBC_Progress: an error 75 was found during schedule 0x55c47bad4cf0 at row-offset 0 - aborting the \
             schedule"
        ));
        assert!(!is_handled_failure_note("ftla: injecting SIGKILL into rank 1 at qr:2:panel (epoch 0)"));
    }

    #[test]
    fn on_a_terminal_progress_lines_are_one_line_drawn_over_itself() {
        let job = "ftla: progress: step 1 of 8\nftla: progress: step 2 of 8\nQR done\nftla: progress: step 3 of 8\n";
        let mut out = Vec::new();
        copy_job_stderr(job.as_bytes(), &mut out, Some(&LiveLine::default()));
        let out = String::from_utf8(out).unwrap();
        assert_eq!(
            out,
            "\r\x1b[Kftla: progress: step 1 of 8\r\x1b[Kftla: progress: step 2 of 8\r\x1b[KQR done\n\r\x1b[K\
             ftla: progress: step 3 of 8\r\x1b[K"
        );
        // Elsewhere they are lines like any other.
        let mut plain = Vec::new();
        copy_job_stderr(job.as_bytes(), &mut plain, None);
        assert_eq!(String::from_utf8(plain).unwrap(), job);
    }

    #[test]
    fn lost_ranks_are_named_in_words() {
        assert_eq!(name_ranks(&[3]), "grid rank 3");
        assert_eq!(name_ranks(&[0, 1]), "grid ranks 0 and 1");
        assert_eq!(name_ranks(&[0, 1, 2]), "grid ranks 0, 1 and 2");
    }

    #[test]
    fn a_launcher_that_did_not_start_is_recognised() {
        let failed =
            format!("{DASHES}\nThe PMIx server's listener thread failed to start. We cannot\ncontinue.\n{DASHES}\n");
        assert!(filter_launcher_noise(failed.as_bytes(), None));
        let killed = format!(
            "rank 1 says hello\n{DASHES}\nprterun noticed that process rank 1 with PID 7 on node vm \
                              exited on\nsignal 9 (Killed).\n{DASHES}\n"
        );
        assert!(!filter_launcher_noise(killed.as_bytes(), None));
        // An unterminated block is judged too.
        assert!(filter_launcher_noise(
            format!("{DASHES}\nThe PMIx server's listener thread failed to start.").as_bytes(),
            None
        ));
    }
}
