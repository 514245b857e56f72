//! The process's ftla state behind the C ABI: the MPI runtime, the grid
//! context (its resilient region), and what happens when the program exits.

use blacs_ft::launch::{write_outcome, write_outcome_unless_failed, Outcome, EXIT_CHECKPOINTED};
use blacs_ft::{Grid, GridOptions, Injector, Joined, Runtime};
use recovery::{Region, RegionOptions};
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// A grid handed out by `Cftla_gridinit`.
pub(crate) struct Context {
    /// The number the program knows it by (ScaLAPACK's ICTXT).
    pub ictxt: c_int,
    /// The grid and the status log of the fault-tolerant calls made on it.
    pub region: Region,
    /// The arrays whose part on this process was lost with a failed process.
    pub lost: crate::lost::LostArrays,
    /// The factorizations ftla keeps protected for the program's arrays
    /// (released with the grid).
    pub kept: crate::kept::KeptFactors,
}

/// Everything ftla holds in this process.
pub(crate) struct Process {
    /// `None` once `Cftla_exit` finished MPI.
    rt: Option<Runtime>,
    /// A spawned replacement joins the grid in `Cftla_pinfo` (it must
    /// learn its grid rank there); its `Cftla_gridinit` takes it.
    joined: Option<Box<Grid>>,
    /// The live grid (one at a time).
    pub context: Option<Context>,
    /// This process's number and the number of processes once a grid was
    /// made, kept after `Cftla_gridexit` (the world communicator may hold
    /// dead processes by then, and a replacement is not in it); also says
    /// that ftla made its one grid of the run.
    numbering: Option<(c_int, c_int)>,
    options: RegionOptions,
    injector: Injector,
}

// SAFETY: the MPI handles inside are plain integers owned by this process;
// MPI runs at MPI_THREAD_FUNNELED and the C ABI documents that only the
// thread that initialised it may call ftla. The mutex only serialises.
unsafe impl Send for Process {}

static PROCESS: Mutex<Option<Process>> = Mutex::new(None);
/// MPI was finished (or was left unfinished on purpose after a failure:
/// then the exit handler ends the process with `_exit`).
static MPI_FINISHED: AtomicBool = AtomicBool::new(false);
static SKIP_EXIT_CLEANUP: AtomicBool = AtomicBool::new(false);
/// This process wrote the job's outcome itself (a checkpoint, a refused
/// resume): its exit status must not replace it.
static REPORTED: AtomicBool = AtomicBool::new(false);

/// The process state, initialising MPI and ftla on first use; `None` (the
/// reason printed) when that failed.
pub(crate) fn lock() -> MutexGuard<'static, Option<Process>> {
    let mut guard = PROCESS.lock().unwrap_or_else(|p| p.into_inner());
    if guard.is_none() && !MPI_FINISHED.load(Ordering::Acquire) {
        *guard = start();
    }
    guard
}

fn start() -> Option<Process> {
    let options = match RegionOptions::from_env() {
        // A C program's arrays and descriptors are its own: they cannot be
        // moved onto a smaller grid behind its back (FTLA_RECOVERY=shrink
        // repairs with hot spares only; auto never shrinks).
        Ok(o) => RegionOptions { no_shrink: true, ..o },
        Err(e) => {
            eprintln!("ftla: {e}");
            return None;
        }
    };
    let injector = match Injector::from_env() {
        // (A job started again from checkpoints does not repeat the kills
        // of the recoveries before it.)
        Ok(i) => i.after_restart(options.epoch_base),
        Err(e) => {
            eprintln!("ftla: FTLA_KILL: {e}");
            return None;
        }
    };
    let mut rt = match Runtime::init() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ftla: MPI start-up failed: {e}");
            return None;
        }
    };
    // SAFETY: registering a handler with a static function and no argument.
    unsafe { on_exit(at_exit, std::ptr::null_mut()) };
    let mut joined = None;
    if rt.is_spawned_replacement() {
        // A replacement takes the shape of the job it joins: its program
        // asks for the grid only after Cftla_pinfo told it its place.
        let grid = rt.world_dup().and_then(|c| {
            Grid::join(
                &mut rt,
                c,
                0,
                0,
                GridOptions { injector: injector.clone(), kills_from_env: false, placement: None },
            )
        });
        match grid {
            Ok(Joined::Active(g)) => joined = Some(g),
            Ok(Joined::Released) => rt.finish(0),
            Err(e) => {
                eprintln!("ftla: a replacement process cannot join the grid: {e}");
                rt.finish(1)
            }
        }
    }
    Some(Process { rt: Some(rt), joined, context: None, numbering: None, options, injector })
}

/// A process's number on `grid` and the number of processes: its grid
/// rank, and the grid's size plus the spares left.
fn numbering(grid: &Grid) -> (c_int, c_int) {
    (grid.rank(), grid.size() + grid.spares_left() as c_int)
}

impl Process {
    /// This process's number and the number of processes: once there is a
    /// grid (a replacement has one from the start), its grid rank and the
    /// grid's size plus the spares left — after a repair the world holds
    /// dead processes and a replacement is not in it; before, the world's.
    pub fn pinfo(&self) -> (c_int, c_int) {
        match self.joined.as_deref().or(self.context.as_ref().map(|c| c.region.grid())) {
            Some(g) => numbering(g),
            None => self.numbering.unwrap_or_else(|| self.rt.as_ref().map_or((-1, -1), Runtime::world_rank_size)),
        }
    }

    /// Builds the `nprow`×`npcol` grid (a replacement: takes the grid it
    /// joined) and its region. A spare parks inside and never returns.
    pub fn gridinit(&mut self, nprow: c_int, npcol: c_int) -> Result<c_int, String> {
        if self.numbering.is_some() {
            return Err("ftla makes one grid per run, and this run made it already".into());
        }
        let grid = match self.joined.take() {
            Some(g) if (g.nprow(), g.npcol()) == (nprow, npcol) => g,
            Some(g) => {
                // The survivors wait for this process in their repair: it
                // cannot go on with another grid.
                eprintln!(
                    "ftla: a replacement asked for a {nprow}x{npcol} grid but the job runs {}x{}; exiting",
                    g.nprow(),
                    g.npcol()
                );
                self.finish(1)
            }
            None => {
                let rt = self.rt.as_mut().ok_or("MPI was finished (Cftla_exit)")?;
                let opts = GridOptions { injector: self.injector.clone(), kills_from_env: false, placement: None };
                let mut spare = false;
                let joined = rt.world_dup().and_then(|c| {
                    spare = Grid::parks_as_spare(rt, &c, nprow, npcol);
                    Grid::join(rt, c, nprow, npcol, opts)
                });
                match joined {
                    Ok(Joined::Active(g)) => g,
                    // A spare that was never needed: the job is over.
                    Ok(Joined::Released) => self.finish(0),
                    // A repair the survivors refused as unrecoverable (they
                    // report it): an error exit of the unused spare could
                    // end the job before their reports are out.
                    Err(e) if spare && e.is_unrecoverable() => self.finish(0),
                    Err(e) => return Err(e.to_string()),
                }
            }
        };
        let rank = grid.rank();
        let region = match Region::with_options(grid, self.options.clone()) {
            Ok(r) => r,
            Err(e) => {
                // A checkpoint that cannot be used (the same on every rank)
                // or a failure the region could not get past: the job
                // cannot start.
                if rank == 0 {
                    eprintln!("ftla: cannot resume: {e}");
                }
                let outcome = Outcome::of_error(&e);
                write_outcome(outcome, &e.to_string());
                REPORTED.store(true, Ordering::Release);
                self.finish(outcome.exit_code())
            }
        };
        // (The context number BLACS would give the first grid.)
        let ictxt = 0;
        self.numbering = Some(numbering(region.grid()));
        self.context = Some(Context { ictxt, region, lost: Default::default(), kept: Default::default() });
        Ok(ictxt)
    }

    /// The live context named `ictxt`.
    pub fn context(&mut self, ictxt: c_int) -> Option<&mut Context> {
        self.context.as_mut().filter(|c| c.ictxt == ictxt)
    }

    /// Frees the grid: a barrier, then parked spares are released.
    pub fn gridexit(&mut self, ictxt: c_int) {
        if self.context.as_ref().is_some_and(|c| c.ictxt == ictxt) {
            if let Some(c) = self.context.take() {
                self.numbering = Some(numbering(c.region.grid()));
                c.region.remove_checkpoints_when_done();
                c.region.into_grid().close();
            }
        }
    }

    /// `Cftla_exit(0)`: frees the grid and finishes MPI (after a failure
    /// MPI cannot be finalized; the exit handler then ends the process
    /// without Open MPI's clean-up).
    pub fn exit(&mut self) {
        if let Some(c) = self.context.take() {
            c.region.remove_checkpoints_when_done();
            c.region.into_grid().close();
        }
        if let Some(rt) = self.rt.take() {
            let finalized = rt.finalize(0);
            SKIP_EXIT_CLEANUP.store(!finalized, Ordering::Release);
            MPI_FINISHED.store(true, Ordering::Release);
        }
    }

    /// Ends the process with `code` (MPI finished within bounded time).
    pub fn finish(&mut self, code: c_int) -> ! {
        flush_c_streams();
        MPI_FINISHED.store(true, Ordering::Release);
        match self.rt.take() {
            Some(rt) => rt.finish(code),
            None => std::process::exit(code),
        }
    }

    /// After a process loss under checkpoint-on-failure: the survivors
    /// saved their state; the job ends for a restart (exit 76), which
    /// `ftla launch` performs.
    pub fn end_for_restart(&mut self, epoch: u32, detail: &str) -> ! {
        write_outcome(Outcome::Checkpointed { epoch }, detail);
        REPORTED.store(true, Ordering::Release);
        eprintln!("ftla: {detail}");
        self.finish(EXIT_CHECKPOINTED)
    }
}

fn flush_c_streams() {
    // SAFETY: fflush(NULL) flushes every C output stream.
    unsafe { libc::fflush(std::ptr::null_mut()) };
}

extern "C" {
    /// glibc: like `atexit`, with the exit status.
    fn on_exit(f: extern "C" fn(c_int, *mut c_void), arg: *mut c_void) -> c_int;
}

/// At the program's exit: reports its status to `ftla launch` (any
/// process that failed makes the job fail; see
/// [`write_outcome_unless_failed`]) unless this process reported the
/// job's outcome itself, and finishes MPI if the program did not — after
/// a failure, or when the program failed (the others may be inside a
/// collective this process will never join), without MPI's clean-up.
extern "C" fn at_exit(status: c_int, _: *mut c_void) {
    if !REPORTED.load(Ordering::Acquire) {
        let outcome = if status == 0 { Outcome::Ok } else { Outcome::Failed };
        write_outcome_unless_failed(outcome, &format!("process {} exited with status {status}", std::process::id()));
    }
    if !MPI_FINISHED.load(Ordering::Acquire) {
        if status != 0 {
            SKIP_EXIT_CLEANUP.store(true, Ordering::Release);
        } else if let Ok(mut guard) = PROCESS.try_lock() {
            if let Some(p) = guard.as_mut() {
                p.exit();
            }
        }
    }
    if SKIP_EXIT_CLEANUP.load(Ordering::Acquire) {
        flush_c_streams();
        // SAFETY: ending the process after its exit handlers' work is done.
        unsafe { libc::_exit(status) };
    }
}
