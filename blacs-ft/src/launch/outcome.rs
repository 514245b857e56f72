//! The job's outcome: what grid rank 0 (or the survivors, or every
//! process of a C program) reports in the file `FTLA_STATUS_FILE` names,
//! and what the launcher's exit code says of it.

use super::*;

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
    pub(super) fn word(self) -> &'static str {
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

    pub(super) fn parse(text: &str) -> Option<Outcome> {
        let mut words = text.split_whitespace();
        let word = words.next()?;
        if word == "checkpointed" {
            return Some(Outcome::Checkpointed { epoch: words.next()?.parse().ok()? });
        }
        [Outcome::Ok, Outcome::Failed, Outcome::Unrecoverable, Outcome::Stalled].into_iter().find(|o| o.word() == word)
    }
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
pub(super) const AT_EXIT_MARK: &str = "(reported at a process's exit)";

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
