//! The job's register of its processes, kept next to the launcher's
//! status file (`FTLA_STATUS_FILE`), from which the launcher judges what
//! the processes themselves cannot report.
//!
//! * Every process that holds a place in the universe (a grid rank or a
//!   parked spare) writes `STATUS.member.PID` with its grid rank and the
//!   repair epoch, again after every repair ([`note_member`]).
//! * A process that dies of a fatal signal it can catch (SIGSEGV, SIGABRT,
//!   SIGBUS, SIGFPE, SIGILL) writes `STATUS.signal.PID` with its grid
//!   rank, epoch and the signal before it dies. MPI's launcher under ULFM
//!   neither fails the job nor says anything when a process dies that way.
//!
//! * A process that ends itself (MPI finished, or given up on after a
//!   failure) marks its record so ([`note_exit`]).
//!
//! The launcher ([`crate::launch`]) reads them: a grid rank that died of a
//! signal with no repair after it fails a job that otherwise reported
//! success ([`Register::unreplaced_signal_deaths`]), and a job in which the
//! last process of every grid rank is gone without ending itself has lost
//! its whole grid ([`Register::every_grid_rank_lost`]): nobody is left to
//! report it, and a replacement spawned just before may wait for its dead
//! parents until its repair deadline.

use std::ffi::CString;
use std::os::raw::c_int;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::sync::OnceLock;

/// The fatal signals a process records before it dies.
const FATAL_SIGNALS: [c_int; 5] = [libc::SIGSEGV, libc::SIGABRT, libc::SIGBUS, libc::SIGFPE, libc::SIGILL];
/// Role of a process that is a parked spare.
const SPARE_ROLE: i32 = -1;

/// This process's grid rank ([`SPARE_ROLE`] for a spare) and repair epoch,
/// for the signal handler.
static ROLE: AtomicI32 = AtomicI32::new(SPARE_ROLE);
static EPOCH: AtomicU32 = AtomicU32::new(0);
/// `STATUS.signal.PID`, set before the handler is installed.
static SIGNAL_PATH: OnceLock<CString> = OnceLock::new();
/// The handlers the recorder replaced (MPI's own, which print a stack
/// trace), put back before the signal is raised again.
static PREVIOUS: OnceLock<Vec<(c_int, libc::sigaction)>> = OnceLock::new();

/// The status file of the job, if a launcher asked for one.
fn status_file() -> Option<PathBuf> {
    std::env::var_os("FTLA_STATUS_FILE").filter(|p| !p.is_empty()).map(PathBuf::from)
}

fn record_path(status: &Path, kind: &str, pid: u32) -> PathBuf {
    PathBuf::from(format!("{}.{kind}.{pid}", status.display()))
}

/// Local: registers this process as grid rank `role` (`None`: a parked
/// spare) of repair epoch `epoch`, and installs the fatal-signal recorder
/// the first time. Does nothing outside a launcher that keeps a status
/// file.
pub(crate) fn note_member(role: Option<i32>, epoch: u32) {
    let Some(status) = status_file() else { return };
    ROLE.store(role.unwrap_or(SPARE_ROLE), Ordering::Release);
    EPOCH.store(epoch, Ordering::Release);
    let pid = std::process::id();
    write_member(&status, role.unwrap_or(SPARE_ROLE), epoch, Ending::Running);
    if let Ok(c) = CString::new(record_path(&status, "signal", pid).display().to_string()) {
        if SIGNAL_PATH.set(c).is_ok() {
            install_recorder();
            // Any ordinary end of the process (a return from main, a
            // panic that unwound it, `std::process::exit`) marks the record
            // ended: only a death by a signal leaves it running.
            // SAFETY: `ended_at_exit` is an `extern "C" fn()` that stays
            // valid for the whole process; atexit has no other
            // precondition.
            unsafe {
                libc::atexit(ended_at_exit);
            }
        }
    }
}

/// Local: marks this process's record as ended by the program (MPI
/// finished, or given up on after a failure): it was not lost.
pub(crate) fn note_exit() {
    let Some(status) = status_file() else { return };
    if SIGNAL_PATH.get().is_some() {
        write_member(&status, ROLE.load(Ordering::Acquire), EPOCH.load(Ordering::Acquire), Ending::Exited);
    }
}

extern "C" fn ended_at_exit() {
    note_exit();
}

/// Writes `ROLE EPOCH ENDING` whole and renames it into place: the
/// launcher never reads half a record.
fn write_member(status: &Path, role: i32, epoch: u32, ending: Ending) {
    let path = record_path(status, "member", std::process::id());
    let tmp = PathBuf::from(format!("{}.tmp", path.display()));
    if std::fs::write(&tmp, format!("{role} {epoch} {}\n", ending as u8)).is_ok() {
        let _ = std::fs::rename(&tmp, &path);
    }
}

/// How far a registered process got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Running, or lost without ending itself.
    Running = 0,
    /// Ended by the program.
    Exited = 1,
}

fn install_recorder() {
    let mut previous = Vec::new();
    for sig in FATAL_SIGNALS {
        // SAFETY: installing a handler that only makes async-signal-safe
        // calls; the old action is kept to be restored.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = record_fatal_signal as extern "C" fn(c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, &action, &mut old) == 0 {
                previous.push((sig, old));
            }
        }
    }
    let _ = PREVIOUS.set(previous);
}

/// Writes `ROLE EPOCH SIGNAL` to this process's signal record, puts the
/// previous handler back and raises the signal again, which ends the
/// process as it would have without the recorder.
extern "C" fn record_fatal_signal(sig: c_int) {
    if let Some(path) = SIGNAL_PATH.get() {
        let mut buf = [0u8; 48];
        let mut len = 0;
        for (k, v) in
            [ROLE.load(Ordering::Acquire) as i64, EPOCH.load(Ordering::Acquire) as i64, sig as i64].iter().enumerate()
        {
            if k > 0 {
                buf[len] = b' ';
                len += 1;
            }
            len += decimal(*v, &mut buf[len..]);
        }
        buf[len] = b'\n';
        len += 1;
        // SAFETY: open, write and close are async-signal-safe; the path is
        // a NUL-terminated string that lives for the process.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o644);
            if fd >= 0 {
                libc::write(fd, buf.as_ptr().cast(), len);
                libc::close(fd);
            }
        }
    }
    let old = PREVIOUS.get().and_then(|p| p.iter().find(|(s, _)| *s == sig));
    // SAFETY: restoring the saved action (or the default) and raising the
    // signal again: delivered when this handler returns.
    unsafe {
        match old {
            Some((_, a)) => {
                libc::sigaction(sig, a, std::ptr::null_mut());
            }
            None => {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        libc::raise(sig);
    }
}

/// Writes `v` in decimal into `out` without allocating (in a signal
/// handler); returns the bytes written.
fn decimal(v: i64, out: &mut [u8]) -> usize {
    let mut digits = [0u8; 20];
    let mut n = 0;
    let mut x = v.unsigned_abs();
    loop {
        digits[n] = b'0' + (x % 10) as u8;
        n += 1;
        x /= 10;
        if x == 0 {
            break;
        }
    }
    let mut len = 0;
    if v < 0 {
        out[0] = b'-';
        len = 1;
    }
    for d in digits[..n].iter().rev() {
        out[len] = *d;
        len += 1;
    }
    len
}

/// A process of the register: its grid rank (`None`: a spare), epoch and
/// whether it ended itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Member {
    pub pid: i32,
    pub rank: Option<i32>,
    pub epoch: u32,
    pub ending: Ending,
}

/// A process that recorded its death by a signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SignalDeath {
    pub member: Member,
    pub signal: i32,
}

impl SignalDeath {
    /// `grid rank 1 (process 4242) died of signal 11 (SIGSEGV)`.
    pub fn describe(&self) -> String {
        let who = match self.member.rank {
            Some(r) => format!("grid rank {r}"),
            None => "a spare".to_string(),
        };
        let name = match self.signal {
            libc::SIGSEGV => " (SIGSEGV)",
            libc::SIGABRT => " (SIGABRT)",
            libc::SIGBUS => " (SIGBUS)",
            libc::SIGFPE => " (SIGFPE)",
            libc::SIGILL => " (SIGILL)",
            _ => "",
        };
        format!("{who} (process {}) died of signal {}{name}", self.member.pid, self.signal)
    }
}

/// The register of one job, as the launcher reads it.
#[derive(Debug, Default)]
pub(crate) struct Register {
    pub members: Vec<Member>,
    pub deaths: Vec<SignalDeath>,
}

fn parse_fields(text: &str) -> Option<Vec<i64>> {
    text.split_whitespace().map(|w| w.parse().ok()).collect()
}

impl Register {
    /// The records next to `status`.
    pub fn read(status: &Path) -> Register {
        let mut reg = Register::default();
        for (path, kind, pid) in records(status) {
            let Some(f) = std::fs::read_to_string(&path).ok().and_then(|t| parse_fields(&t)) else { continue };
            let member = |f: &[i64], ending| Member {
                pid,
                rank: (f[0] >= 0).then_some(f[0] as i32),
                epoch: f[1].clamp(0, u32::MAX as i64) as u32,
                ending,
            };
            match (kind.as_str(), f.len()) {
                ("member", 3) => {
                    let ending = if f[2] == Ending::Exited as i64 { Ending::Exited } else { Ending::Running };
                    reg.members.push(member(&f, ending))
                }
                ("signal", 3) => {
                    reg.deaths.push(SignalDeath { member: member(&f, Ending::Running), signal: f[2] as i32 })
                }
                _ => {}
            }
        }
        reg.members.sort_by_key(|m| (m.rank, m.epoch, m.pid));
        reg.deaths.sort_by_key(|d| (d.member.rank, d.member.pid));
        reg
    }

    /// Grid ranks that died of a signal with no repair after their death
    /// (a repair completes only with every grid rank held again, and every
    /// process registers the epoch it completed).
    pub fn unreplaced_signal_deaths(&self) -> Vec<SignalDeath> {
        let last_epoch = self.members.iter().map(|m| m.epoch).max().unwrap_or(0);
        self.deaths.iter().filter(|d| d.member.rank.is_some() && d.member.epoch >= last_epoch).copied().collect()
    }

    /// When no registered process runs any more (`running` says which
    /// pids do) and the last process of every grid rank was lost — gone
    /// without ending itself —: those grid ranks. `None` while a
    /// registered process runs, before any registered, or when a grid rank's
    /// last process ended itself.
    pub fn every_grid_rank_lost(&self, running: impl Fn(i32) -> bool) -> Option<Vec<i32>> {
        if self.members.is_empty() || self.members.iter().any(|m| m.ending == Ending::Running && running(m.pid)) {
            return None;
        }
        let mut ranks: Vec<i32> = self.members.iter().filter_map(|m| m.rank).collect();
        ranks.sort_unstable();
        ranks.dedup();
        let lost = |r: i32| {
            let last = self.members.iter().filter(|m| m.rank == Some(r)).map(|m| m.epoch).max();
            self.members
                .iter()
                .filter(|m| m.rank == Some(r) && Some(m.epoch) == last)
                .all(|m| m.ending == Ending::Running)
        };
        (!ranks.is_empty() && ranks.iter().all(|&r| lost(r))).then_some(ranks)
    }

    /// Deletes the records next to `status`.
    pub fn remove(status: &Path) {
        for (path, _, _) in records(status) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The files `STATUS.KIND.PID` next to `status`.
fn records(status: &Path) -> Vec<(PathBuf, String, i32)> {
    let (Some(dir), Some(name)) = (status.parent(), status.file_name().and_then(|n| n.to_str())) else {
        return Vec::new();
    };
    let prefix = format!("{name}.");
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .filter_map(|e| {
            let file = e.ok()?.file_name().into_string().ok()?;
            let (kind, pid) = file.strip_prefix(&prefix)?.split_once('.')?;
            // (`KIND.PID.tmp`: a record being written, or left half
            // written by a process that died then.)
            let (pid, kind) = match pid.strip_suffix(".tmp") {
                Some(pid) => (pid, "partial"),
                None => (pid, kind),
            };
            Some((dir.join(&file), kind.to_string(), pid.parse().ok()?))
        })
        .collect()
}

/// Whether process `pid` still runs on this machine (a zombie has ended).
pub(crate) fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim_start().chars().next()))
        .is_some_and(|state| state.is_some_and(|c| c != 'Z' && c != 'X'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_written_without_allocating() {
        let mut buf = [0u8; 24];
        for v in [0i64, 7, -1, 42, 1234567890, i64::MIN + 1] {
            let n = decimal(v, &mut buf);
            assert_eq!(std::str::from_utf8(&buf[..n]).unwrap(), v.to_string());
        }
    }

    fn member(pid: i32, rank: i32, epoch: u32) -> Member {
        Member { pid, rank: (rank >= 0).then_some(rank), epoch, ending: Ending::Running }
    }

    fn exited(pid: i32, rank: i32, epoch: u32) -> Member {
        Member { ending: Ending::Exited, ..member(pid, rank, epoch) }
    }

    #[test]
    fn a_signal_death_counts_only_without_a_repair_after_it() {
        let death = |pid, rank, epoch| SignalDeath { member: member(pid, rank, epoch), signal: libc::SIGSEGV };
        let mut reg = Register { members: vec![member(10, 0, 0), member(11, 1, 0)], deaths: vec![death(11, 1, 0)] };
        assert_eq!(reg.unreplaced_signal_deaths(), vec![death(11, 1, 0)]);
        assert_eq!(reg.deaths[0].describe(), "grid rank 1 (process 11) died of signal 11 (SIGSEGV)");
        // The survivor and the replacement registered epoch 1: replaced.
        reg.members.extend([member(10, 0, 1), member(12, 1, 1)]);
        assert!(reg.unreplaced_signal_deaths().is_empty());
        // A spare's death loses no grid rank.
        reg.deaths = vec![death(13, -1, 1)];
        assert!(reg.unreplaced_signal_deaths().is_empty());
    }

    #[test]
    fn the_grid_is_lost_when_the_last_process_of_every_grid_rank_is_gone_without_ending() {
        let mut reg = Register { members: vec![member(10, 0, 0), member(11, 1, 0), member(12, -1, 0)], deaths: vec![] };
        let running = |live: &'static [i32]| move |p: i32| live.contains(&p);
        assert_eq!(reg.every_grid_rank_lost(running(&[20])), Some(vec![0, 1]));
        // A registered process still runs: no verdict.
        assert_eq!(reg.every_grid_rank_lost(running(&[11, 20])), None);
        // Grid rank 1 was replaced, and its replacement ended itself.
        reg.members.push(exited(13, 1, 1));
        assert_eq!(reg.every_grid_rank_lost(running(&[])), None);
        // Every process ended itself (an ending it marked is not judged by
        // its pid, which may run on a little).
        let done = Register { members: vec![exited(10, 0, 0), exited(11, 1, 0)], deaths: vec![] };
        assert_eq!(done.every_grid_rank_lost(running(&[10, 11])), None);
        // Nothing registered yet (a job before its grid).
        assert_eq!(Register::default().every_grid_rank_lost(running(&[])), None);
    }

    #[test]
    fn records_are_read_and_removed() {
        let dir = std::env::temp_dir().join(format!("ftla-members-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let status = dir.join("ftla-status-1-2");
        std::fs::write(status.with_extension("x"), "unrelated").unwrap();
        std::fs::write(record_path(&status, "member", 10), "0 0 0\n").unwrap();
        std::fs::write(record_path(&status, "member", 11), "-1 2 1\n").unwrap();
        std::fs::write(record_path(&status, "signal", 10), "0 0 6\n").unwrap();
        std::fs::write(record_path(&status, "member", 12), "garbage").unwrap();
        std::fs::write(status.with_extension("member.13.tmp"), "0 0").unwrap();
        let reg = Register::read(&status);
        assert_eq!(reg.members, vec![exited(11, -1, 2), member(10, 0, 0)]);
        assert_eq!(reg.deaths, vec![SignalDeath { member: member(10, 0, 0), signal: libc::SIGABRT }]);
        Register::remove(&status);
        assert!(records(&status).is_empty());
        assert!(status.with_extension("x").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn this_process_runs_and_a_reaped_one_does_not() {
        assert!(running(std::process::id() as i32));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        assert!(!running(pid));
    }
}
