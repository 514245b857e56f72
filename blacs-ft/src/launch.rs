//! Self-relaunch under `mpiexec`: a program started outside MPI re-executes
//! itself under `mpiexec --with-ft ulfm` with the right number of ranks, waits
//! with an optional hard timeout, and exits with the job's outcome.
//!
//! The outcome is not `mpiexec`'s exit code (it is non-zero whenever a rank
//! was killed, even when the job recovered): grid rank 0 writes it to the
//! file named by `FTLA_STATUS_FILE` with [`write_status`].

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Exit code when the job ran past its timeout (as `timeout(1)`).
pub const EXIT_TIMEOUT: i32 = 124;

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
}

/// The `mpiexec` command line that [`relaunch`] runs (for display and tests).
pub fn mpiexec_command(r: &Relaunch) -> Command {
    let mut cmd = Command::new(crate::mpiexec_path());
    if r.ulfm {
        cmd.args(["--with-ft", "ulfm"]);
    }
    // Respawned ranks need free slots; han/cuda collectives are not fault
    // tolerant (open-mpi/ompi issue tracker).
    cmd.args(["--oversubscribe", "--bind-to", "none", "--mca", "coll", "^han,cuda"]);
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } == 0 {
        cmd.arg("--allow-run-as-root");
    }
    for v in ["FTLA_STATUS_FILE", "FTLA_KILL", "OPENBLAS_NUM_THREADS"] {
        cmd.args(["-x", v]);
    }
    if let Ok(extra) = std::env::var("FTLA_MPIEXEC_ARGS") {
        cmd.args(extra.split_whitespace());
    }
    cmd.arg("-n").arg(r.nprocs.to_string());
    let exe = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default();
    cmd.arg(exe).args(std::env::args().skip(1));
    cmd
}

/// Re-executes this program under `mpiexec` and exits with the job's
/// outcome: 0 if grid rank 0 wrote `ok` to the status file, 1 if it wrote a
/// failure or nothing, [`EXIT_TIMEOUT`] on timeout.
///
/// A launcher that fails before starting any rank (PMIx's sporadic
/// "listener thread failed to start") is retried, at most
/// [`LAUNCH_ATTEMPTS`] times in all, with a notice; the timeout covers all
/// attempts.
pub fn relaunch(r: &Relaunch) -> ! {
    let started = Instant::now();
    for attempt in 1..=LAUNCH_ATTEMPTS {
        let (code, outcome, launcher_failed) = launch_once(r, started);
        if outcome.starts_with("ok") {
            std::process::exit(0);
        }
        let time_left = r.timeout.is_none_or(|t| started.elapsed() < t);
        if outcome.is_empty() && launcher_failed && attempt < LAUNCH_ATTEMPTS && time_left {
            eprintln!("ftla: the MPI launcher failed before starting any rank; launching again");
            std::thread::sleep(Duration::from_millis(200));
            continue;
        }
        if outcome.is_empty() {
            eprintln!("ftla: the job ended without reporting an outcome (mpiexec exit code {code})");
        }
        std::process::exit(1);
    }
    std::process::exit(1)
}

/// Launches of one job when the launcher itself fails to start.
pub const LAUNCH_ATTEMPTS: u32 = 3;

/// One `mpiexec` run: its exit code, the status rank 0 wrote (empty if
/// none), and whether the launcher reported failing before starting any
/// rank. Exits with [`EXIT_TIMEOUT`] once `since` is older than the timeout.
fn launch_once(r: &Relaunch, since: Instant) -> (i32, String, bool) {
    let status = std::env::temp_dir().join(format!("ftla-status-{}-{}", std::process::id(), now_nanos()));
    let _ = std::fs::remove_file(&status);
    let mut cmd = mpiexec_command(r);
    cmd.env("FTLA_STATUS_FILE", &status);
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
    let pgid = child.id() as i32;
    let filter = child.stderr.take().map(|e| std::thread::spawn(move || filter_launcher_noise(e)));
    let code = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st.code().unwrap_or(1),
            Ok(None) => {}
            Err(_) => break 1,
        }
        if let Some(t) = r.timeout {
            if since.elapsed() > t {
                eprintln!("ftla: job exceeded its {} s timeout; killing it", t.as_secs());
                // SAFETY: signalling the job's process group.
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
                let _ = child.wait();
                let _ = std::fs::remove_file(&status);
                std::process::exit(EXIT_TIMEOUT);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Stragglers (a rank stuck in finalize) must not outlive the job.
    // SAFETY: signalling the job's process group.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let launcher_failed = filter.map(|f| f.join().unwrap_or(false)).unwrap_or(false);
    let outcome = std::fs::read_to_string(&status).unwrap_or_default();
    let _ = std::fs::remove_file(&status);
    let _ = std::io::stdout().flush();
    (code, outcome, launcher_failed)
}

/// Whether a launcher message block says it failed before starting ranks.
fn is_launcher_start_failure(block: &str) -> bool {
    block.contains("PMIx server's listener thread failed to start")
}

/// Copies the job's stderr to ours, minus the launcher's complaints that
/// are expected in a fault-tolerant run: after a repair ranks exit without
/// `MPI_Finalize` on purpose (see [`crate::Runtime::finish`]), and the
/// launcher reports that as "exiting improperly".
///
/// Returns whether the launcher said it failed before starting any rank.
fn filter_launcher_noise(from: impl std::io::Read) -> bool {
    use std::io::BufRead;
    let mut out = std::io::stderr();
    let mut block: Option<Vec<String>> = None;
    let mut launcher_failed = false;
    for line in std::io::BufReader::new(from).lines().map_while(|l| l.ok()) {
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
pub fn write_status(ok: bool, detail: &str) {
    if let Some(path) = std::env::var_os("FTLA_STATUS_FILE").filter(|p| !p.is_empty()) {
        let tmp = std::path::PathBuf::from(format!("{}.tmp", path.to_string_lossy()));
        let text = format!("{} {detail}\n", if ok { "ok" } else { "fail" });
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, &path);
        }
    }
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
/// `timeout` the whole group is SIGKILLed. For tests and scripts that must
/// never hang.
pub fn run_with_timeout(mut cmd: Command, timeout: Duration) -> std::io::Result<Captured> {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
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
        if let Some(st) = child.try_wait()? {
            break Some(st);
        }
        if started.elapsed() > timeout {
            timed_out = true;
            // SAFETY: signalling the child's process group.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            break child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Nothing of the job may outlive it.
    // SAFETY: signalling the child's process group.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let stdout = t_out.join().unwrap_or_default();
    let stderr = t_err.join().unwrap_or_default();
    Ok(Captured { code: status.and_then(|s| s.code()), timed_out, stdout, stderr })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DASHES: &str = "--------------------------------------------------------------------------";

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
