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

use crate::members::{self, Register};
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

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
}

/// How the launcher runs a job under checkpoint-on-failure.
#[derive(Clone, Debug)]
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
    /// The recovery policy passed to the jobs (`cof` or `auto`).
    pub policy: &'static str,
    /// Recoveries of the run before its first job here (a resumed run's).
    pub epoch_base: u32,
}

impl CofRelaunch {
    /// The environment of one job of the run.
    fn env(&self, restarts: u32, epoch_base: u32, resume: bool) -> Vec<(&'static str, String)> {
        vec![
            (RECOVERY_VAR, self.policy.to_string()),
            (CHECKPOINT_DIR_VAR, self.dir.display().to_string()),
            (RUN_ID_VAR, format!("{:016x}", self.run_id)),
            (RESUME_VAR, if resume { "1" } else { "" }.to_string()),
            (EPOCH_BASE_VAR, epoch_base.to_string()),
            (RESTARTS_VAR, restarts.to_string()),
        ]
    }
}

/// A new run identity: the clock and the process id, mixed.
pub fn new_run_id() -> u64 {
    let t = now_nanos() as u64;
    let x = t ^ ((std::process::id() as u64) << 32) ^ 0x9E37_79B9_7F4A_7C15;
    // (splitmix64's finaliser: nearby clocks give unrelated identities.)
    let x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The outcome of a job, as grid rank 0 reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Finished, results checked where asked: exit code 0.
    Ok,
    /// Finished with a wrong result or an error: exit code 1.
    Failed,
    /// Stopped by a failure it could not recover from, reported as such:
    /// exit code [`EXIT_UNRECOVERABLE`].
    Unrecoverable,
    /// A process was lost and the survivors saved checkpoints
    /// (checkpoint-on-failure): exit code [`EXIT_CHECKPOINTED`]. `epoch`
    /// counts the recoveries of the run so far, this one included.
    Checkpointed { epoch: u32 },
    /// A repair did not complete within its bound (a spawned replacement
    /// that never joined, a process lost inside a call that cannot notice
    /// it): unrecoverable, exit code [`EXIT_UNRECOVERABLE`]. Written by the
    /// survivors whose bound on the repair fired; the launcher ends what
    /// is left of the job at once, since what stalled will not end by
    /// itself.
    Stalled,
}

impl Outcome {
    fn word(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "fail",
            Outcome::Unrecoverable => "unrecoverable",
            Outcome::Checkpointed { .. } => "checkpointed",
            Outcome::Stalled => "stalled",
        }
    }

    /// The outcome of a job that ends with the error `e`: unrecoverable
    /// when `e` says so, else failed.
    pub fn of_error(e: &crate::Error) -> Outcome {
        if e.is_unrecoverable() {
            Outcome::Unrecoverable
        } else {
            Outcome::Failed
        }
    }

    /// The launcher's exit code for this outcome.
    pub fn exit_code(self) -> i32 {
        match self {
            Outcome::Ok => 0,
            Outcome::Failed => 1,
            Outcome::Unrecoverable | Outcome::Stalled => EXIT_UNRECOVERABLE,
            Outcome::Checkpointed { .. } => EXIT_CHECKPOINTED,
        }
    }

    fn parse(text: &str) -> Option<Outcome> {
        let mut words = text.split_whitespace();
        let word = words.next()?;
        if word == "checkpointed" {
            return Some(Outcome::Checkpointed { epoch: words.next()?.parse().ok()? });
        }
        [Outcome::Ok, Outcome::Failed, Outcome::Unrecoverable, Outcome::Stalled].into_iter().find(|o| o.word() == word)
    }
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
    if !runs_on_other_hosts() && r.nprocs as usize > local_cores() {
        eprintln!(
            "ftla: {} processes on {} cores: oversubscribed, so timings are not meaningful",
            r.nprocs,
            local_cores()
        );
    }
    let started = Instant::now();
    let mut restarts = 0;
    let mut epoch_base = r.cof.as_ref().map_or(0, |c| c.epoch_base);
    let mut attempt = 0;
    loop {
        attempt += 1;
        // (A signal that came between two attempts ends the launcher.)
        let sig = STOP_SIGNAL.load(Ordering::SeqCst);
        if sig != 0 {
            std::process::exit(128 + sig);
        }
        let env = r.cof.as_ref().map(|c| c.env(restarts, epoch_base, c.resume || restarts > 0)).unwrap_or_default();
        let (code, outcome, launcher_failed) = launch_once(r, started, &env);
        match (Outcome::parse(&outcome), &r.cof) {
            (Some(Outcome::Checkpointed { epoch }), Some(cof)) if restarts < cof.max_restarts => {
                restarts += 1;
                epoch_base = epoch;
                attempt = 0;
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
        let time_left = r.timeout.is_none_or(|t| started.elapsed() < t);
        if launcher_failed && attempt < LAUNCH_ATTEMPTS && time_left {
            eprintln!("ftla: the MPI launcher failed before starting any rank; launching again");
            std::thread::sleep(Duration::from_millis(200));
            continue;
        }
        if r.program.is_some() {
            // Another program: its job's outcome is mpiexec's.
            std::process::exit(code);
        }
        eprintln!("ftla: the job ended without reporting an outcome (mpiexec exit code {code})");
        std::process::exit(1);
    }
}

/// The variables of recovery and of the checksum layout passed on to
/// every process (set, possibly empty, by [`launch_once`]).
const FORWARDED: &[&str] = &[
    RECOVERY_VAR,
    CHECKPOINT_DIR_VAR,
    RUN_ID_VAR,
    RESUME_VAR,
    EPOCH_BASE_VAR,
    RESTARTS_VAR,
    crate::universe::REFUSE_SPAWN_VAR,
    crate::universe::STALL_SPAWN_VAR,
    // (Every process's calls use one layout, on other hosts too.)
    LAYOUT_VAR,
    CHECKSUMS_VAR,
];

/// How long the survivors of a stalled repair have to say so (each one's
/// bound fires within a tenth of a second of the others') before the
/// launcher ends the job.
const STALL_GRACE: Duration = Duration::from_millis(1500);

/// How often the launcher looks for the job's processes once it reported
/// its outcome, and how long mpiexec may stay alone after its ranks ended.
const SCAN: Duration = Duration::from_millis(200);
const LINGER: Duration = Duration::from_millis(400);

/// Launches of one job when the launcher itself fails to start.
pub const LAUNCH_ATTEMPTS: u32 = 3;

/// The signal that asked the launcher to stop (0: none yet).
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn note_stop_signal(sig: libc::c_int) {
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
}

/// SIGINT, SIGTERM and SIGHUP set [`STOP_SIGNAL`] instead of ending the
/// launcher: its wait loop forwards them to the job and cleans up.
fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installing an async-signal-safe handler (one atomic store).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = note_stop_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// This job's tag: inherited (a caller that must find the job's processes
/// itself, like [`run_with_timeout`], sets it) or made up here.
fn job_tag() -> String {
    std::env::var(JOB_TAG_VAR)
        .ok()
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| format!("ftla-{}-{}", std::process::id(), now_nanos()))
}

/// Processes (other than this one) whose environment carries
/// `JOB_TAG_VAR=tag`.
pub fn tagged_processes(tag: &str) -> Vec<i32> {
    let want = format!("{JOB_TAG_VAR}={tag}");
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|var| var == want.as_bytes()))
        })
        .collect()
}

/// SIGKILLs every process of the job tagged `tag` until none is left
/// (they may still be forking replacements), for at most two seconds.
pub fn kill_tagged(tag: &str) {
    let until = Instant::now() + Duration::from_secs(2);
    loop {
        let left = tagged_processes(tag);
        if left.is_empty() || Instant::now() > until {
            return;
        }
        for pid in left {
            // SAFETY: signalling a process of our own job.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One `mpiexec` run: its exit code, the status rank 0 wrote (empty if
/// none), and whether the launcher reported failing before starting any
/// rank. Exits with [`EXIT_TIMEOUT`] once `since` is older than the
/// timeout, and with 128 + the signal when stopped by one.
fn launch_once(r: &Relaunch, since: Instant, env: &[(&'static str, String)]) -> (i32, String, bool) {
    let status = std::env::temp_dir().join(format!("ftla-status-{}-{}", std::process::id(), now_nanos()));
    let _ = std::fs::remove_file(&status);
    let tag = job_tag();
    let mut cmd = mpiexec_command(r);
    cmd.env("FTLA_STATUS_FILE", &status).env(JOB_TAG_VAR, &tag);
    for (k, v) in env {
        cmd.env(k, v);
    }
    // Every variable passed on with `-x` is set (empty when unused).
    for v in FORWARDED {
        if std::env::var_os(v).is_none() && !env.iter().any(|(k, _)| k == v) {
            cmd.env(v, "");
        }
    }
    if std::env::var_os("OPENBLAS_NUM_THREADS").is_none() {
        cmd.env("OPENBLAS_NUM_THREADS", "1");
    }
    if std::env::var_os("FTLA_KILL").is_none() {
        cmd.env("FTLA_KILL", "");
    }
    cmd.stdin(Stdio::null()).stderr(Stdio::piped());
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ftla: cannot start {}: {e} (run scripts/setup.sh, or set FTLA_MPIEXEC)", crate::mpiexec_path());
            std::process::exit(1);
        }
    };
    let pid = child.id() as i32;
    let filter = child.stderr.take().map(|e| std::thread::spawn(move || filter_launcher_noise(e)));
    // Ends the job: mpiexec's group, then every tagged process.
    let end_job = |child: &mut std::process::Child| {
        // SAFETY: signalling the job's launcher and its process group.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        kill_tagged(&tag);
        let _ = child.wait();
    };
    let mut outcome_seen: Option<Instant> = None;
    // Since when a survivor reported a stalled repair, and when the
    // outcome was last read for one.
    let mut stalled_since: Option<Instant> = None;
    let mut last_stall_check = Instant::now();
    // An outcome a process reported as it exited (the C ABI's): the
    // others may still be running the program's last lines, so no grace
    // applies; the job ends when its processes have.
    let mut at_exit = false;
    // When the ranks were last looked for, and since when only mpiexec is left.
    let mut last_scan = Instant::now();
    let mut alone_since: Option<Instant> = None;
    // The last process of every grid rank gone without ending itself (see
    // [`Register::every_grid_rank_lost`]): since when, and the verdict.
    // The register's processes are judged on this machine only, and in a
    // job without ULFM, whose first loss ends every process, not at all.
    let judge_members = r.ulfm && !runs_on_other_hosts();
    let mut last_member_scan = Instant::now();
    let mut lost_since: Option<Instant> = None;
    let mut grid_lost: Option<Vec<i32>> = None;
    let code = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st.code().unwrap_or(1),
            Ok(None) => {}
            Err(_) => break 1,
        }
        let sig = STOP_SIGNAL.load(Ordering::SeqCst);
        if sig != 0 {
            eprintln!("ftla: stopped by signal {sig}; ending the job");
            // mpiexec ends the job itself on this signal; whatever is left
            // after a moment is killed.
            // SAFETY: forwarding the signal to the job's launcher.
            unsafe { libc::kill(pid, sig) };
            let until = Instant::now() + Duration::from_secs(3);
            while Instant::now() < until && !matches!(child.try_wait(), Ok(Some(_))) {
                std::thread::sleep(Duration::from_millis(20));
            }
            end_job(&mut child);
            let _ = std::fs::remove_file(&status);
            std::process::exit(128 + sig);
        }
        if let Some(t) = r.timeout {
            if since.elapsed() > t {
                eprintln!("ftla: job exceeded its {} s timeout; killing it", t.as_secs());
                end_job(&mut child);
                let _ = std::fs::remove_file(&status);
                std::process::exit(EXIT_TIMEOUT);
            }
        }
        if outcome_seen.is_none() && status.exists() {
            outcome_seen = Some(Instant::now());
            at_exit = std::fs::read_to_string(&status).is_ok_and(|t| t.contains(AT_EXIT_MARK));
        }
        if outcome_seen.is_some() && stalled_since.is_none() && last_stall_check.elapsed() > SCAN {
            // (Read again: a survivor's stall may replace another outcome.)
            last_stall_check = Instant::now();
            let text = std::fs::read_to_string(&status).unwrap_or_default();
            if Outcome::parse(&text) == Some(Outcome::Stalled) {
                stalled_since = Some(Instant::now());
            }
        }
        if stalled_since.is_some_and(|t| t.elapsed() > STALL_GRACE) {
            // What stalled (a replacement that never started, a call
            // waiting for a dead process) does not end by itself.
            eprintln!("ftla: a repair stalled (the survivors said where); ending the job");
            end_job(&mut child);
            break EXIT_UNRECOVERABLE;
        }
        if outcome_seen.is_none() && judge_members && last_member_scan.elapsed() > SCAN {
            // Nobody is left to report: a replacement whose parents all
            // died waits for them until its repair deadline (a minute).
            last_member_scan = Instant::now();
            match Register::read(&status).every_grid_rank_lost(members::running) {
                Some(ranks) if lost_since.is_some_and(|t| t.elapsed() > ALL_LOST_GRACE) => {
                    grid_lost = Some(ranks);
                    end_job(&mut child);
                    break 1;
                }
                Some(_) => {
                    lost_since.get_or_insert_with(Instant::now);
                }
                None => lost_since = None,
            }
        }
        if outcome_seen.is_some_and(|t| t.elapsed() > Duration::from_millis(300)) && last_scan.elapsed() > SCAN {
            // Every process of the job but mpiexec itself has ended: it has
            // nothing left to forward or wait for. (Open MPI's lingers at
            // times when every rank that saw a failure exits without
            // MPI_Finalize, as the survivors of a checkpoint-on-failure
            // save do.)
            last_scan = Instant::now();
            let only_mpiexec = tagged_processes(&tag).iter().all(|&p| p == pid);
            match (only_mpiexec, alone_since) {
                (false, _) => alone_since = None,
                (true, None) => alone_since = Some(Instant::now()),
                (true, Some(t)) if t.elapsed() > LINGER => {
                    end_job(&mut child);
                    break 0;
                }
                _ => {}
            }
        }
        if !at_exit && outcome_seen.is_some_and(|t| t.elapsed() > OUTCOME_GRACE) {
            let left = tagged_processes(&tag).len();
            eprintln!(
                "ftla: the job reported its outcome, but {left} of its processes did not end within {} s; \
                 ending them",
                OUTCOME_GRACE.as_secs()
            );
            end_job(&mut child);
            break 1;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Stragglers must not outlive the job.
    end_job(&mut child);
    let launcher_failed = filter.map(|f| f.join().unwrap_or(false)).unwrap_or(false);
    let mut outcome = std::fs::read_to_string(&status).unwrap_or_default();
    let _ = std::fs::remove_file(&status);
    if outcome.trim().is_empty() && judge_members {
        // (Also when the job ended by itself once they were gone.)
        if let Some(ranks) = grid_lost.or_else(|| Register::read(&status).every_grid_rank_lost(members::running)) {
            let detail = format!(
                "every process of the grid was lost ({}), so none was left to recover or report",
                name_ranks(&ranks)
            );
            eprintln!("ftla: unrecoverable failure: {detail}; the job ended");
            outcome = format!("{} {detail}\n", Outcome::Unrecoverable.word());
        }
    }
    // A grid rank that died of a signal, with no repair after it, fails a
    // job that reported success or nothing (MPI's launcher does not).
    let deaths = Register::read(&status).unreplaced_signal_deaths();
    Register::remove(&status);
    let parsed = Outcome::parse(&outcome);
    if !deaths.is_empty() && !matches!(parsed, Some(Outcome::Checkpointed { .. })) {
        let fails = matches!(parsed, None | Some(Outcome::Ok));
        for d in &deaths {
            eprintln!(
                "ftla: {}, and no recovery replaced it{}",
                d.describe(),
                if fails { ": the job failed" } else { "" }
            );
        }
        if fails {
            outcome = format!("{} {}\n", Outcome::Failed.word(), deaths[0].describe());
        }
    }
    let _ = std::io::stdout().flush();
    (code, outcome, launcher_failed)
}

/// How long the last process of every grid rank must have been gone
/// before the launcher says the grid was lost (and ends what is left).
const ALL_LOST_GRACE: Duration = Duration::from_secs(1);

/// `grid ranks 0 and 1`, `grid rank 3`, `grid ranks 0, 1 and 2`.
fn name_ranks(ranks: &[i32]) -> String {
    let words: Vec<String> = ranks.iter().map(i32::to_string).collect();
    match words.as_slice() {
        [] => "no grid rank".to_string(),
        [one] => format!("grid rank {one}"),
        [head @ .., last] => format!("grid ranks {} and {last}", head.join(", ")),
    }
}

/// Whether a launcher message block says it failed before starting ranks.
fn is_launcher_start_failure(block: &str) -> bool {
    block.contains("PMIx server's listener thread failed to start")
}

/// Whether `line` is Open MPI's note that a non-blocking collective was
/// abandoned because a process failed (`NBC_Progress: an error 75 was
/// found during schedule 0x… - aborting the schedule`, and the empty line
/// after it): ftla handles that failure, and says so itself.
fn is_handled_failure_note(line: &str) -> bool {
    line.starts_with("NBC_Progress: an error ") && line.contains("aborting the schedule")
}

/// Copies the job's stderr to ours, minus what is expected in a
/// fault-tolerant run: the launcher's complaints (after a repair ranks
/// exit without `MPI_Finalize` on purpose, see [`crate::Runtime::finish`],
/// and the launcher reports that as "exiting improperly") and Open MPI's
/// notes on collectives abandoned at a failure that ftla then repairs
/// (kept with `FTLA_DEBUG`).
///
/// Returns whether the launcher said it failed before starting any rank.
fn filter_launcher_noise(from: impl std::io::Read) -> bool {
    use std::io::BufRead;
    let mut out = std::io::stderr();
    let mut block: Option<Vec<String>> = None;
    let mut launcher_failed = false;
    let keep_notes = crate::debug_enabled();
    // (The empty line that follows a dropped note.)
    let mut after_note = false;
    for line in std::io::BufReader::new(from).lines().map_while(|l| l.ok()) {
        if !keep_notes && block.is_none() {
            if is_handled_failure_note(&line) {
                after_note = true;
                continue;
            }
            if std::mem::take(&mut after_note) && line.trim().is_empty() {
                continue;
            }
        }
        let dashes = line.starts_with("-----") && line.trim_end().chars().all(|c| c == '-');
        match (&mut block, dashes) {
            (None, true) => block = Some(vec![line]),
            (None, false) => {
                if !line.starts_with("[warn] Epoll ") {
                    let _ = writeln!(out, "{line}");
                }
            }
            (Some(b), false) => b.push(line),
            (Some(b), true) => {
                b.push(line);
                let text = b.join("\n");
                launcher_failed |= is_launcher_start_failure(&text);
                // Also the notice that an injected SIGKILL killed a rank: the
                // rank announced it itself before dying.
                let expected = text.contains("exiting\nimproperly")
                    || text.contains("exiting improperly")
                    || text.contains("signal 9 (Killed)");
                if !expected {
                    let _ = writeln!(out, "{text}");
                }
                block = None;
            }
        }
    }
    if let Some(b) = block {
        let text = b.join("\n");
        launcher_failed |= is_launcher_start_failure(&text);
        let _ = writeln!(out, "{text}");
    }
    launcher_failed
}

fn now_nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}

/// Writes the job's outcome for [`relaunch`] (call on grid rank 0 only).
/// Does nothing when `FTLA_STATUS_FILE` is unset (a job launched by hand).
pub fn write_outcome(outcome: Outcome, detail: &str) {
    write_outcome_file(outcome, detail, false);
}

/// [`write_outcome`] for programs in which every process reports as it
/// exits (the C ABI's report their exit status this way): a process
/// reporting [`Outcome::Ok`] writes only when no process has reported yet,
/// any other outcome replaces what is there — one process that failed
/// makes the job's outcome a failure, whichever reports first. The
/// launcher then waits for the job's processes to end (no grace period:
/// the others may still be running the program's last lines).
pub fn write_outcome_unless_failed(outcome: Outcome, detail: &str) {
    write_outcome_file(outcome, &format!("{detail} {AT_EXIT_MARK}"), outcome == Outcome::Ok);
}

/// Marks an outcome written by [`write_outcome_unless_failed`].
const AT_EXIT_MARK: &str = "(reported at a process's exit)";

fn write_outcome_file(outcome: Outcome, detail: &str, only_if_first: bool) {
    if let Some(path) = std::env::var_os("FTLA_STATUS_FILE").filter(|p| !p.is_empty()) {
        // (Several survivors may report a checkpoint at once: each writes
        // its own temporary file; the renames are atomic.)
        let tmp = std::path::PathBuf::from(format!("{}.{}.tmp", path.to_string_lossy(), std::process::id()));
        let text = match outcome {
            Outcome::Checkpointed { epoch } => format!("{} {epoch} {detail}\n", outcome.word()),
            _ => format!("{} {detail}\n", outcome.word()),
        };
        if std::fs::write(&tmp, text).is_ok() {
            if only_if_first {
                // A hard link never replaces an existing file.
                let _ = std::fs::hard_link(&tmp, &path);
                let _ = std::fs::remove_file(&tmp);
            } else {
                let _ = std::fs::rename(&tmp, &path);
            }
        }
    }
}

/// [`write_outcome`] with [`Outcome::Ok`] or [`Outcome::Failed`].
pub fn write_status(ok: bool, detail: &str) {
    write_outcome(if ok { Outcome::Ok } else { Outcome::Failed }, detail);
}

/// Output of a command run by [`run_with_timeout`].
#[derive(Debug)]
pub struct Captured {
    /// Exit code (`None`: killed by a signal or by the timeout).
    pub code: Option<i32>,
    /// True when the timeout killed it.
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `cmd` in its own process group, capturing its output; past
/// `timeout` the command is asked to stop (SIGTERM, which `ftla` forwards
/// to its job), then its group and every process of its job are
/// SIGKILLed. For tests and scripts that must never hang or leave
/// processes behind: the command gets a [`JOB_TAG_VAR`] of its own (unless
/// the caller set one), which the processes of an MPI job it starts carry.
pub fn run_with_timeout(mut cmd: Command, timeout: Duration) -> std::io::Result<Captured> {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    let tag = cmd
        .get_envs()
        .find(|(k, _)| *k == JOB_TAG_VAR)
        .and_then(|(_, v)| v.map(|v| v.to_string_lossy().into_owned()))
        .unwrap_or_else(|| format!("run-{}-{}", std::process::id(), now_nanos()));
    cmd.env(JOB_TAG_VAR, &tag);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let mut child = cmd.spawn()?;
    let pgid = child.id() as i32;
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(o) = out.as_mut() {
            let _ = o.read_to_string(&mut s);
        }
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(e) = err.as_mut() {
            let _ = e.read_to_string(&mut s);
        }
        s
    });
    let started = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) => {}
            Err(_) => break None,
        }
        if started.elapsed() > timeout {
            timed_out = true;
            // SAFETY: signalling the child's process group.
            unsafe { libc::kill(-pgid, libc::SIGTERM) };
            let until = Instant::now() + Duration::from_secs(5);
            while Instant::now() < until && matches!(child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(20));
            }
            // SAFETY: signalling the child's process group.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            break child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Nothing of the job may outlive it.
    // SAFETY: signalling the child's process group.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    kill_tagged(&tag);
    let stdout = t_out.join().unwrap_or_default();
    let stderr = t_err.join().unwrap_or_default();
    Ok(Captured { code: status.and_then(|s| s.code()), timed_out, stdout, stderr })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DASHES: &str = "--------------------------------------------------------------------------";

    #[test]
    fn every_process_exit_code_means_one_thing() {
        let mut codes = [
            EXIT_UNRECOVERABLE,
            EXIT_CHECKPOINTED,
            EXIT_TIMEOUT,
            crate::watchdog::EXIT_STALLED,
            crate::universe::EXIT_ABANDONED,
        ];
        codes.sort_unstable();
        assert!(codes.windows(2).all(|w| w[0] != w[1]), "{codes:?}");
    }

    #[test]
    fn the_checksum_layout_reaches_every_process_on_every_host() {
        let r = Relaunch { nprocs: 4, timeout: None, ulfm: true, cof: None, program: Some(vec!["app".into()]) };
        let args: Vec<String> = mpiexec_command(&r).get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        for var in [LAYOUT_VAR, CHECKSUMS_VAR] {
            assert!(args.windows(2).any(|w| w[0] == "-x" && w[1] == var), "{var} not passed on: {args:?}");
        }
    }

    #[test]
    fn every_job_of_a_fault_tolerant_launch_is_recoverable_spawned_ones_too() {
        let args = |ulfm: bool| -> Vec<String> {
            let r = Relaunch { nprocs: 4, timeout: None, ulfm, cof: None, program: Some(vec!["app".into()]) };
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
    fn lost_ranks_are_named_in_words() {
        assert_eq!(name_ranks(&[3]), "grid rank 3");
        assert_eq!(name_ranks(&[0, 1]), "grid ranks 0 and 1");
        assert_eq!(name_ranks(&[0, 1, 2]), "grid ranks 0, 1 and 2");
    }

    #[test]
    fn a_launcher_that_did_not_start_is_recognised() {
        let failed =
            format!("{DASHES}\nThe PMIx server's listener thread failed to start. We cannot\ncontinue.\n{DASHES}\n");
        assert!(filter_launcher_noise(failed.as_bytes()));
        let killed = format!(
            "rank 1 says hello\n{DASHES}\nprterun noticed that process rank 1 with PID 7 on node vm \
                              exited on\nsignal 9 (Killed).\n{DASHES}\n"
        );
        assert!(!filter_launcher_noise(killed.as_bytes()));
        // An unterminated block is judged too.
        assert!(filter_launcher_noise(
            format!("{DASHES}\nThe PMIx server's listener thread failed to start.").as_bytes()
        ));
    }
}
