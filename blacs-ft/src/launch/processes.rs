//! Finding and ending every process of a job: each carries
//! [`JOB_TAG_VAR`] in its environment (Open MPI puts every rank in a
//! process group of its own, and spawned replacements are children of the
//! runtime, not of `mpiexec`), and the signals that stop the launcher.

use super::*;

/// The signal that asked the launcher to stop (0: none yet).
pub(super) static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn note_stop_signal(sig: libc::c_int) {
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
}

/// SIGINT, SIGTERM and SIGHUP set [`STOP_SIGNAL`] instead of ending the
/// launcher: its wait loop forwards them to the job and cleans up.
pub(super) fn install_signal_handlers() {
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
pub(super) fn job_tag() -> String {
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

pub(super) fn now_nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}
