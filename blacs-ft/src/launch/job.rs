//! One job under the launcher: `mpiexec` started with the job's
//! environment, watched until it ends — its outcome file, its register of
//! processes, the signals the launcher got, the timeout — and ended
//! whole, nothing of it left behind.

use super::outcome::AT_EXIT_MARK;
use super::processes::job_tag;
use super::stderr::{copy_job_stdout, filter_launcher_noise, LiveLine};
use super::*;

/// How long the survivors of a stalled repair have to say so (each one's
/// bound fires within a tenth of a second of the others') before the
/// launcher ends the job.
const STALL_GRACE: Duration = Duration::from_millis(1500);

/// How often the launcher looks for the job's processes once it reported
/// its outcome…
const SCAN: Duration = Duration::from_millis(200);

/// …and how long mpiexec may stay alone after its ranks ended.
const LINGER: Duration = Duration::from_millis(400);

/// One `mpiexec` run: its exit code, the status rank 0 wrote (empty if
/// none), and whether the launcher reported failing before starting any
/// rank. Exits with [`EXIT_TIMEOUT`] once `since` is older than the
/// timeout, and with 128 + the signal when stopped by one.
/// [`launch_once`], again while the MPI launcher fails before starting
/// any rank (at most [`LAUNCH_ATTEMPTS`] times, while the job's timeout
/// since `since` is not over): its exit code and the status rank 0 wrote.
/// A signal that came between two attempts ends the launcher.
pub(super) fn launch_retrying(r: &Relaunch, since: Instant, env: &[(&'static str, String)]) -> (i32, String) {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let (code, outcome, launcher_failed) = launch_once(r, since, env);
        let time_left = r.timeout.is_none_or(|t| since.elapsed() < t);
        if !(launcher_failed && attempt < LAUNCH_ATTEMPTS && time_left) {
            return (code, outcome);
        }
        eprintln!("ftla: the MPI launcher failed before starting any rank; launching again");
        std::thread::sleep(Duration::from_millis(200));
        let sig = STOP_SIGNAL.load(Ordering::SeqCst);
        if sig != 0 {
            std::process::exit(128 + sig);
        }
    }
}

pub(super) fn launch_once(r: &Relaunch, since: Instant, env: &[(&'static str, String)]) -> (i32, String, bool) {
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
    // (A live progress line: the job's stdout passes through here too, so
    // that the line is cleared before any other.)
    let live = LiveLine::wanted().then(|| std::sync::Arc::new(LiveLine::default()));
    if live.is_some() {
        cmd.stdout(Stdio::piped());
    }
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
    let stdout_copy = match (child.stdout.take(), &live) {
        (Some(o), Some(l)) => {
            let l = l.clone();
            Some(std::thread::spawn(move || copy_job_stdout(o, &l)))
        }
        _ => None,
    };
    let filter = child.stderr.take().map(|e| {
        let live = live.clone();
        std::thread::spawn(move || filter_launcher_noise(e, live.as_deref()))
    });
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
    if let Some(c) = stdout_copy {
        let _ = c.join();
    }
    let mut outcome = std::fs::read_to_string(&status).unwrap_or_default();
    let _ = std::fs::remove_file(&status);
    // A job that reported nothing but left a periodic checkpoint was lost
    // whole: the relaunch loop says so and resumes it (no verdict here).
    let resumable = outcome.trim().is_empty()
        && r.cof.as_ref().is_some_and(|c| c.newest_checkpoint.is_some_and(|f| f(&c.dir).is_some()));
    if resumable {
        Register::remove(&status);
        let _ = std::io::stdout().flush();
        return (code, outcome, launcher_failed);
    }
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
pub(super) fn name_ranks(ranks: &[i32]) -> String {
    let words: Vec<String> = ranks.iter().map(i32::to_string).collect();
    match words.as_slice() {
        [] => "no grid rank".to_string(),
        [one] => format!("grid rank {one}"),
        [head @ .., last] => format!("grid ranks {} and {last}", head.join(", ")),
    }
}
