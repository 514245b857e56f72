//! A command under a hard timeout, output captured and every process of
//! its job gone at the end: for the soak's runs, scripts and tests.

use super::*;

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
