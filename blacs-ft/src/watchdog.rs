//! Bounds on MPI calls that cannot be interrupted.
//!
//! Some ULFM-era MPI calls can block forever when a process dies at the
//! wrong moment (Open MPI's `MPI_Comm_spawn` if a parent dies during it). A
//! repair phase runs under a [`Deadline`]; past it the process reports an
//! unrecoverable stall and exits with [`EXIT_STALLED`] instead of hanging.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Exit code of a process whose repair stalled past its deadline.
pub const EXIT_STALLED: i32 = 76;

static DEADLINE_MS: AtomicU64 = AtomicU64::new(0);
static WHAT: Mutex<String> = Mutex::new(String::new());
static THREAD: OnceLock<()> = OnceLock::new();

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// The limit on one repair phase: `FTLA_REPAIR_TIMEOUT` seconds (default 60).
pub fn repair_timeout() -> Duration {
    let secs = std::env::var("FTLA_REPAIR_TIMEOUT").ok().and_then(|s| s.parse().ok()).unwrap_or(60u64);
    Duration::from_secs(secs.max(1))
}

/// An armed deadline; disarmed on drop.
pub struct Deadline(());

impl Deadline {
    /// Arms a deadline of `limit` for `what`.
    pub fn arm(what: &str, limit: Duration) -> Deadline {
        if let Ok(mut w) = WHAT.lock() {
            *w = what.to_string();
        }
        DEADLINE_MS.store(now_ms() + limit.as_millis() as u64, Ordering::Release);
        THREAD.get_or_init(|| {
            std::thread::spawn(|| loop {
                std::thread::sleep(Duration::from_millis(100));
                let d = DEADLINE_MS.load(Ordering::Acquire);
                if d != 0 && now_ms() > d {
                    let what = WHAT.lock().map(|w| w.clone()).unwrap_or_default();
                    let _ = writeln!(
                        std::io::stderr(),
                        "ftla: unrecoverable failure: {what} did not complete in time \
                         (a process probably died during it); exiting"
                    );
                    let _ = std::io::stdout().flush();
                    // SAFETY: terminating the process.
                    unsafe { libc::_exit(EXIT_STALLED) };
                }
            });
        });
        Deadline(())
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        DEADLINE_MS.store(0, Ordering::Release);
    }
}
