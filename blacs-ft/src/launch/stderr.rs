//! The job's stderr, copied to the launcher's minus what a fault-tolerant
//! run makes expected.

use super::*;

/// Whether a launcher message block says it failed before starting ranks.
pub(super) fn is_launcher_start_failure(block: &str) -> bool {
    block.contains("PMIx server's listener thread failed to start")
}

/// Whether `line` is Open MPI's note that a non-blocking collective was
/// abandoned because a process failed (`NBC_Progress: an error 75 was
/// found during schedule 0x… - aborting the schedule`, and the empty line
/// after it): ftla handles that failure, and says so itself.
pub(super) fn is_handled_failure_note(line: &str) -> bool {
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
pub(super) fn filter_launcher_noise(from: impl std::io::Read, live: Option<&LiveLine>) -> bool {
    copy_job_stderr(from, &mut std::io::stderr(), live)
}

/// The ranks' progress drawn as one line over itself on the launcher's
/// terminal (its job's output reaches it a whole line at a time, so the
/// ranks cannot draw it), shared by the copies of the job's stdout and
/// stderr: any other line clears it first.
#[derive(Default)]
pub(super) struct LiveLine(std::sync::Mutex<bool>);

impl LiveLine {
    /// Whether the launcher draws the progress ([`PROGRESS_VAR`] `live`).
    pub(super) fn wanted() -> bool {
        std::env::var(PROGRESS_VAR).is_ok_and(|v| v == "live")
    }

    fn draw(&self, out: &mut dyn Write, line: &str) {
        let mut drawn = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let _ = write!(out, "\r\x1b[K{line}");
        let _ = out.flush();
        *drawn = true;
    }

    /// Clears the line from `screen`, if it is drawn.
    pub(super) fn clear(&self, screen: &mut dyn Write) {
        let mut drawn = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if std::mem::take(&mut *drawn) {
            let _ = write!(screen, "\r\x1b[K");
            let _ = screen.flush();
        }
    }
}

/// Copies the job's stdout to ours, clearing the progress line first.
pub(super) fn copy_job_stdout(from: impl std::io::Read, live: &LiveLine) {
    use std::io::BufRead;
    for line in std::io::BufReader::new(from).lines().map_while(|l| l.ok()) {
        live.clear(&mut std::io::stderr());
        let mut out = std::io::stdout();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

/// [`filter_launcher_noise`] to `out`; with `live`, the ranks' progress
/// lines ([`PROGRESS_PREFIX`]) are drawn as one ([`LiveLine`]).
pub(super) fn copy_job_stderr(from: impl std::io::Read, out: &mut impl Write, live: Option<&LiveLine>) -> bool {
    use std::io::BufRead;
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
        if let (Some(live), None, true) = (live, &block, line.starts_with(PROGRESS_PREFIX)) {
            live.draw(out, &line);
            continue;
        }
        if let Some(live) = live {
            live.clear(out);
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
    if let Some(live) = live {
        live.clear(out);
    }
    if let Some(b) = block {
        let text = b.join("\n");
        launcher_failed |= is_launcher_start_failure(&text);
        let _ = writeln!(out, "{text}");
    }
    launcher_failed
}
