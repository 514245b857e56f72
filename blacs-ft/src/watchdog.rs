//! Bounds on MPI calls that cannot be interrupted.
//!
//! Some ULFM-era MPI calls can block forever when a process dies at the
//! wrong moment: Open MPI's `MPI_Comm_spawn` if a parent dies during it,
//! its `MPI_Intercomm_merge` and `MPI_Comm_split` when a member dies
//! unnoticed, and anything a spawned replacement does with a process of
//! its parents' job that died (Open MPI 5 does not tell spawned processes
//! of those failures). A repair phase runs under a [`Deadline`]; past it
//! the process reports an unrecoverable stall and exits with its code
//! ([`EXIT_STALLED`] by default) instead of hanging. Deadlines nest: the
//! earliest armed one fires.
//!
//! A stall ([`Deadline::arm`]) is also the job's outcome
//! ([`Outcome::Stalled`]): the launcher ends the job at once, since what
//! stalled does not end by itself.

use crate::launch::Outcome;
use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Exit code of a process whose repair stalled past its deadline (not
/// [`crate::launch::EXIT_CHECKPOINTED`]'s 76: a stall saved nothing).
pub const EXIT_STALLED: i32 = 77;

struct Armed {
    id: u64,
    due: Instant,
    what: String,
    code: i32,
    /// Whether firing reports [`Outcome::Stalled`] as the job's outcome.
    reports_stall: bool,
}

struct Table {
    next_id: u64,
    armed: Vec<Armed>,
}

static TABLE: Mutex<Table> = Mutex::new(Table { next_id: 0, armed: Vec::new() });
static THREAD: OnceLock<()> = OnceLock::new();

/// The limit on one repair phase: `FTLA_REPAIR_TIMEOUT` seconds (default 60).
pub fn repair_timeout() -> Duration {
    let secs = std::env::var("FTLA_REPAIR_TIMEOUT").ok().and_then(|s| s.parse().ok()).unwrap_or(60u64);
    Duration::from_secs(secs.max(1))
}

/// An armed deadline; disarmed on drop.
#[must_use = "a deadline is disarmed when dropped"]
pub struct Deadline(u64);

impl Deadline {
    /// Arms a deadline of `limit` for `what`; past it the process says
    /// that `what` stalled, writes [`Outcome::Stalled`] as the job's
    /// outcome (for `ftla`'s launcher) and exits with [`EXIT_STALLED`].
    pub fn arm(what: &str, limit: Duration) -> Deadline {
        Deadline::arm_as(what, limit, EXIT_STALLED, true)
    }

    /// A deadline past which the process exits with `code` after saying
    /// why, leaving the job's outcome to others (a replacement abandoned
    /// by its parents, survivors that wrote their outcome already).
    pub fn arm_with_code(what: &str, limit: Duration, code: i32) -> Deadline {
        Deadline::arm_as(what, limit, code, false)
    }

    fn arm_as(what: &str, limit: Duration, code: i32, reports_stall: bool) -> Deadline {
        let id = {
            let mut t = TABLE.lock().unwrap_or_else(|e| e.into_inner());
            t.next_id += 1;
            let id = t.next_id;
            t.armed.push(Armed { id, due: Instant::now() + limit, what: what.to_string(), code, reports_stall });
            id
        };
        THREAD.get_or_init(|| {
            std::thread::spawn(|| loop {
                std::thread::sleep(Duration::from_millis(100));
                let fired = {
                    let t = TABLE.lock().unwrap_or_else(|e| e.into_inner());
                    let now = Instant::now();
                    t.armed
                        .iter()
                        .filter(|a| a.due <= now)
                        .min_by_key(|a| a.due)
                        .map(|a| (a.what.clone(), a.code, a.reports_stall))
                };
                if let Some((what, code, reports_stall)) = fired {
                    let line = format!("{what} did not complete in time (a process died during it, or never started)");
                    let _ = writeln!(std::io::stderr(), "ftla: unrecoverable failure: {line}; exiting");
                    let _ = std::io::stdout().flush();
                    if reports_stall {
                        crate::launch::write_outcome(Outcome::Stalled, &line);
                    }
                    // SAFETY: terminating the process.
                    unsafe { libc::_exit(code) };
                }
            });
        });
        Deadline(id)
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        let mut t = TABLE.lock().unwrap_or_else(|e| e.into_inner());
        t.armed.retain(|a| a.id != self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropping_a_deadline_disarms_only_that_one() {
        let outer = Deadline::arm("outer", Duration::from_secs(3600));
        let inner = Deadline::arm("inner", Duration::from_secs(3600));
        let count = |what: &str| TABLE.lock().unwrap().armed.iter().filter(|a| a.what == what).count();
        assert_eq!((count("outer"), count("inner")), (1, 1));
        drop(inner);
        assert_eq!((count("outer"), count("inner")), (1, 0));
        drop(outer);
        assert_eq!(count("outer"), 0);
    }
}
