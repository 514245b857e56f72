//! MPI start-up and bounded shut-down.

use crate::comm::{check, Comm, MPI_DONE};
use crate::error::{Error, Result};
use crate::ffi;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Set when this process has seen a failure or taken part in a repair: after
/// that `MPI_Finalize` is known to hang or crash in Open MPI (it tries to
/// disconnect from dead peers; open-mpi/ompi #9434, #11404), so [`Runtime::finish`]
/// skips it.
pub(crate) static SAW_FAILURE: AtomicBool = AtomicBool::new(false);
/// Set in a process that was spawned as a replacement.
static SPAWNED: AtomicBool = AtomicBool::new(false);
/// This process's parent when it started: under Open MPI's launcher, its
/// node's runtime daemon (`job@` kills it).
static DAEMON: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// This node's MPI runtime daemon, as recorded when MPI started here (0
/// before).
pub(crate) fn daemon_pid() -> i32 {
    DAEMON.load(Ordering::Acquire)
}

/// Whether this MPI run can use ULFM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UlfmStatus {
    /// MPIX_Comm_revoke/shrink/agree are there and fault tolerance is on.
    Available,
    /// The MPI library has no ULFM symbols (or this crate was built without
    /// `mpi-ext.h`).
    Missing,
    /// The symbols exist but this run did not enable fault tolerance (Open MPI
    /// launched without `--with-ft ulfm`).
    NotEnabled,
}

impl UlfmStatus {
    /// Why ULFM cannot be used, or `None` when it can.
    pub fn unavailable_reason(self) -> Option<&'static str> {
        match self {
            UlfmStatus::Available => None,
            UlfmStatus::Missing => Some("the MPI library has no MPIX_Comm_revoke/shrink/agree"),
            UlfmStatus::NotEnabled => {
                Some("fault tolerance is not enabled for this run (launch with `mpiexec --with-ft ulfm`)")
            }
        }
    }

    /// `Err(UlfmUnavailable)` unless ULFM is usable.
    pub fn require(self) -> Result<()> {
        match self.unavailable_reason() {
            None => Ok(()),
            Some(r) => Err(Error::UlfmUnavailable { reason: r.to_string() }),
        }
    }
}

/// What a replacement process re-executes: the program and its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchCommand {
    /// Absolute path of the executable.
    pub exe: String,
    /// Arguments (without the program name).
    pub args: Vec<String>,
}

impl LaunchCommand {
    /// The running program and its arguments. `FTLA_REPLACEMENT_EXE`
    /// overrides the program (for sites where replacements must start from
    /// another path).
    pub fn current() -> LaunchCommand {
        let exe = std::env::var("FTLA_REPLACEMENT_EXE").ok().filter(|e| !e.is_empty()).unwrap_or_else(|| {
            std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| std::env::args().next().unwrap_or_default())
        });
        LaunchCommand { exe, args: std::env::args().skip(1).collect() }
    }
}

/// The MPI library of this process: initialised once, finished once.
///
/// # Fault tolerance
/// `MPI_ERRORS_RETURN` is set on `MPI_COMM_WORLD` and `MPI_COMM_SELF` at
/// start-up; [`Runtime::finish`] never hangs, even after a respawn.
#[derive(Debug)]
pub struct Runtime {
    ulfm: UlfmStatus,
    launch: LaunchCommand,
    parent: Option<Comm>,
    version: String,
}

impl Runtime {
    /// `MPI_Init_thread(FUNNELED)`, error handlers, ULFM detection; also
    /// keeps freed scratch buffers mapped (glibc settings; see
    /// `FTLA_MALLOC_DEFAULTS`).
    pub fn init() -> Result<Runtime> {
        crate::malloc_tuning::keep_scratch_resident();
        // SAFETY: no preconditions.
        DAEMON.store(unsafe { libc::getppid() }, Ordering::Release);
        crate::universe::stall_if_asked();
        let mut flag = 0;
        // SAFETY: out-parameter.
        check(unsafe { ffi::ftla_initialized(&mut flag) }, None)?;
        if flag == 0 {
            let mut provided = 0;
            // SAFETY: out-parameter.
            check(unsafe { ffi::ftla_init(&mut provided) }, None)?;
        }
        // SAFETY: constant getters; set the error handlers on the predefined communicators.
        unsafe {
            check(ffi::ftla_comm_set_errors_return(ffi::ftla_comm_world()), None)?;
            check(ffi::ftla_comm_set_errors_return(ffi::ftla_comm_self()), None)?;
        }
        // SAFETY: no arguments.
        let ulfm = match unsafe { ffi::ftla_ulfm_status() } {
            1 => UlfmStatus::Available,
            2 => UlfmStatus::NotEnabled,
            _ => UlfmStatus::Missing,
        };
        let parent = Comm::parent()?;
        if parent.is_some() {
            SAW_FAILURE.store(true, Ordering::Release);
            SPAWNED.store(true, Ordering::Release);
        }
        let mut buf = vec![0u8; 8192];
        // SAFETY: the shim writes at most cap bytes.
        let n = unsafe { ffi::ftla_library_version(buf.as_mut_ptr().cast(), buf.len() as i32) };
        buf.truncate(n.max(0) as usize);
        if let Some(nul) = buf.iter().position(|&b| b == 0) {
            buf.truncate(nul);
        }
        // "Open MPI v5.0.11, package: ..." → "Open MPI v5.0.11".
        let version = String::from_utf8_lossy(&buf)
            .lines()
            .next()
            .unwrap_or("")
            .split(',')
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        Ok(Runtime { ulfm, launch: LaunchCommand::current(), parent, version })
    }

    /// Whether ULFM can be used in this run.
    pub fn ulfm(&self) -> UlfmStatus {
        self.ulfm
    }

    /// The MPI library's version line.
    pub fn mpi_version(&self) -> &str {
        &self.version
    }

    /// True when this process was spawned to replace a failed rank.
    pub fn is_spawned_replacement(&self) -> bool {
        SPAWNED.load(Ordering::Acquire)
    }

    pub(crate) fn take_parent(&mut self) -> Option<Comm> {
        self.parent.take()
    }

    /// The command a replacement re-executes.
    pub fn launch(&self) -> &LaunchCommand {
        &self.launch
    }

    /// Replaces the command a replacement re-executes (the default is this
    /// program with its arguments).
    pub fn set_launch(&mut self, launch: LaunchCommand) {
        self.launch = launch;
    }

    /// A private duplicate of `MPI_COMM_WORLD` for building the grid. The
    /// world communicator itself is never used after start-up.
    pub fn world_dup(&self) -> Result<Comm> {
        // SAFETY: constant getter.
        let world = Comm::adopt(unsafe { ffi::ftla_comm_world() }, false)?;
        world.dup()
    }

    /// This process's rank in `MPI_COMM_WORLD` and the world's size
    /// (local: no communicator is made).
    pub fn world_rank_size(&self) -> (i32, i32) {
        // SAFETY: constant getter; a predefined communicator is never freed.
        match Comm::adopt(unsafe { ffi::ftla_comm_world() }, false) {
            Ok(w) => (w.rank(), w.size()),
            Err(_) => (-1, -1),
        }
    }

    /// MPI wall-clock time in seconds.
    pub fn wtime() -> f64 {
        // SAFETY: no arguments.
        unsafe { ffi::ftla_wtime() }
    }

    /// Ends the process with `code`, finalizing MPI within a bounded time.
    ///
    /// After a failure or repair was seen, `MPI_Finalize` is skipped: Open MPI
    /// tries to disconnect from the dead peers there and hangs or crashes
    /// (open-mpi/ompi #9434, #11404). Otherwise it runs under a watchdog
    /// (`FTLA_FINALIZE_TIMEOUT` seconds, default 20) that ends the process
    /// if it does not return.
    pub fn finish(self, code: i32) -> ! {
        if self.finalize(code) {
            std::process::exit(code);
        }
        // SAFETY: terminating the process without finalize, on purpose.
        unsafe { libc::_exit(code) }
    }

    /// [`Runtime::finish`] without ending the process: finalizes MPI
    /// within a bounded time (past it the process ends with `code`), or,
    /// after a failure or repair was seen, marks MPI as done without
    /// finalizing it (see [`Runtime::finish`]). Returns whether MPI was
    /// finalized; when it was not, the process must end with `_exit`
    /// (Open MPI's exit-time clean-up may hang on the dead peers too).
    pub fn finalize(self, code: i32) -> bool {
        crate::members::note_exit();
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        let spawned = self.parent.is_some() || SPAWNED.load(Ordering::Acquire);
        drop(self.parent);
        let mut finalized = 0;
        // SAFETY: out-parameter.
        unsafe { ffi::ftla_finalized(&mut finalized) };
        if finalized != 0 {
            // (Finalized by the program itself.)
            MPI_DONE.store(true, Ordering::Release);
            return true;
        }
        if !SAW_FAILURE.load(Ordering::Acquire) {
            let secs: u64 = std::env::var("FTLA_FINALIZE_TIMEOUT").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
            // (The program may go on after a finalize that returned: the
            // watchdog then stands down.)
            static RETURNED: AtomicBool = AtomicBool::new(false);
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_secs(secs));
                if RETURNED.load(Ordering::Acquire) {
                    return;
                }
                let _ = writeln!(std::io::stderr(), "ftla: MPI_Finalize did not return in {secs} s; exiting");
                // SAFETY: terminating the process.
                unsafe { libc::_exit(code) };
            });
            MPI_DONE.store(true, Ordering::Release);
            // SAFETY: MPI was initialised by init().
            unsafe { ffi::ftla_finalize() };
            RETURNED.store(true, Ordering::Release);
            return true;
        }
        MPI_DONE.store(true, Ordering::Release);
        if !spawned {
            // Let the launcher forward the last output of the spawned
            // replacements before the original processes (whose exit ends
            // the job) leave.
            std::thread::sleep(Duration::from_millis(200));
        }
        false
    }
}

/// Records that this process saw a failure (used by the grid's error paths).
pub(crate) fn note_failure() {
    SAW_FAILURE.store(true, Ordering::Release);
}

/// True when `FTLA_DEBUG` is set: the repair protocol then traces its phases
/// on stderr. (Read once; [`trace!`](crate::trace) is the one place that
/// asks.)
#[doc(hidden)]
pub fn debug_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("FTLA_DEBUG").is_some_and(|v| !v.is_empty() && v != "0"))
}

/// Traces a line on stderr when `FTLA_DEBUG` is set (every crate of ftla
/// traces through this one macro).
#[macro_export]
macro_rules! trace {
    ($($arg:tt)*) => {
        if $crate::debug_enabled() {
            eprintln!("[ftla pid {}] {}", std::process::id(), format!($($arg)*));
        }
    };
}
pub(crate) use crate::trace;
