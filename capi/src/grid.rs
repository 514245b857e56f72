//! The grid functions, shaped like Cblacs' (prefixed `Cftla_` so that a
//! BLACS linked into the same program never clashes).

use crate::process::{self, Process};
use blacs_ft::Scope;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

/// Runs `f` on the process state (MPI and ftla started on first use);
/// `None` when they could not start.
pub(crate) fn with_process<T>(f: impl FnOnce(&mut Process) -> T) -> Option<T> {
    let mut guard = process::lock();
    guard.as_mut().map(f)
}

/// Writes `v` through `p` unless `p` is null.
fn put(p: *mut c_int, v: c_int) {
    if !p.is_null() {
        // SAFETY: the caller passed a pointer to an int (null checked).
        unsafe { *p = v };
    }
}

/// Starts MPI and ftla on first use, then returns this process's number
/// and the number of processes (as `Cblacs_pinfo`).
///
/// * `mypnum` (local output): this process's rank in `MPI_COMM_WORLD`;
///   once there is a grid — in a spawned replacement from the start — its
///   grid rank (a replacement: the one it took over; grid ranks are the
///   first world ranks, so nothing changes for the others).
/// * `nprocs` (output): the number of processes of the job (grid and hot
///   spares); once there is a grid, its size plus the spares left (after
///   a repair the world holds dead processes). After `Cftla_gridexit` both
///   stay as the grid left them.
///
/// A replacement process (spawned by a repair) joins the survivors' grid
/// inside this call. Both are -1 when MPI or ftla could not start (the
/// reason is printed on stderr): bad `FTLA_RECOVERY`/`FTLA_KILL` settings
/// or an MPI that does not start.
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn Cftla_pinfo(mypnum: *mut c_int, nprocs: *mut c_int) {
    let (me, n) = with_process(|p| p.pinfo()).unwrap_or((-1, -1));
    put(mypnum, me);
    put(nprocs, n);
}

/// Builds the fault-tolerant `nprow`×`npcol` grid (as `Cblacs_gridinit`;
/// collective over every process of the job).
///
/// * `ictxt` (global output): the grid's context, for descriptors
///   (`DESC[1]`) and the other functions; -1 on an error, whose reason is
///   printed on stderr (a bad shape, more processes asked for than the job
///   has, an order other than row-major, a second grid).
/// * `order` (global input): `"Row"` (or `"R"`, or NULL): grid rank
///   `r` sits at process row `r / npcol`, column `r % npcol`. Column-major
///   order is not offered.
/// * `nprow`, `npcol` (global input): the shape.
///
/// Processes past `nprow*npcol` are hot spares: they park inside this call
/// (sleeping between polls) and either take over a lost process's place —
/// the call then returns in them as in a replacement — or, when the job
/// ends (`Cftla_gridexit`/`Cftla_exit` on the grid), exit with status 0
/// without returning. A job restarted after a checkpoint-on-failure save
/// reads its checkpoints here (an unusable checkpoint ends the job with
/// the reason, the same on every process).
///
/// ftla makes one grid per run (a second call returns -1): after
/// `Cftla_gridexit` the spares have left, and after a repair the world
/// holds dead processes, so no other grid can be built from it.
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn Cftla_gridinit(ictxt: *mut c_int, order: *const c_char, nprow: c_int, npcol: c_int) {
    let row_major = order.is_null() || {
        // SAFETY: the caller passes a NUL-terminated string.
        let o = unsafe { CStr::from_ptr(order) }.to_bytes();
        matches!(o.first(), Some(b'R' | b'r'))
    };
    let made = with_process(|p| {
        if !row_major {
            return Err("only row-major grids (order \"Row\") are offered".to_string());
        }
        p.gridinit(nprow, npcol)
    });
    match made {
        Some(Ok(c)) => put(ictxt, c),
        Some(Err(e)) => {
            eprintln!("ftla: Cftla_gridinit({nprow}, {npcol}): {e}");
            put(ictxt, -1);
        }
        None => put(ictxt, -1),
    }
}

/// The grid's shape and this process's place in it (as
/// `Cblacs_gridinfo`). The same after a repair: a replacement holds the
/// lost process's row and column. All -1 when `ictxt` is not a live grid.
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn Cftla_gridinfo(
    ictxt: c_int,
    nprow: *mut c_int,
    npcol: *mut c_int,
    myrow: *mut c_int,
    mycol: *mut c_int,
) {
    let info = with_process(|p| {
        p.context(ictxt).map(|c| {
            let g = c.region.grid();
            (g.nprow(), g.npcol(), g.myrow(), g.mycol())
        })
    })
    .flatten()
    .unwrap_or((-1, -1, -1, -1));
    put(nprow, info.0);
    put(npcol, info.1);
    put(myrow, info.2);
    put(mycol, info.3);
}

/// 1 when this process took over a lost process's place in the grid (a
/// spawned replacement or a promoted hot spare), else 0 (also for a
/// context that is not live).
///
/// A replacement ran `main` from the top: its local parts of the results
/// of calls that completed before it joined are lost (see the header's
/// introduction).
#[no_mangle]
pub extern "C" fn Cftla_is_replacement(ictxt: c_int) -> c_int {
    with_process(|p| p.context(ictxt).is_some_and(|c| c.region.grid().replacement().is_some()))
        .is_some_and(|r| r)
        .into()
}

/// The Fortran handle (`MPI_Fint`) of the grid's communicator, all of its
/// processes in grid-rank order, for the program's own MPI calls (C:
/// `MPI_Comm c = MPI_Comm_f2c(Cftla_comm_f(ictxt));`). -1 when `ictxt` is
/// not a live grid.
///
/// A repair replaces the communicator: get it again after a call that
/// recovered from a failure. A process failure inside the program's own
/// MPI calls is the program's to handle; ftla repairs inside its calls.
#[no_mangle]
pub extern "C" fn Cftla_comm_f(ictxt: c_int) -> c_int {
    with_process(|p| p.context(ictxt).map(|c| c.region.grid().comm(Scope::All).fortran_handle()))
        .flatten()
        .unwrap_or(-1)
}

/// Frees the grid (collective over the grid, as `Cblacs_gridexit`): a
/// barrier, then the parked hot spares are released (they exit).
#[no_mangle]
pub extern "C" fn Cftla_gridexit(ictxt: c_int) {
    with_process(|p| p.gridexit(ictxt));
}

/// Ends ftla (as `Cblacs_exit`). `notdone = 0`: frees a grid still in use
/// and finishes MPI; the program must not call MPI afterwards. Any other
/// value: frees the grid only, MPI stays usable (finish it yourself).
///
/// After a failure was repaired, MPI cannot be finalized (Open MPI hangs
/// on the dead peers): the process then ends without MPI's exit-time
/// clean-up when the program exits. Under `ftla launch`, every process's
/// exit status is reported to the launcher: the job's exit code is 0 when
/// every process returned 0 from `main`, 1 otherwise.
#[no_mangle]
pub extern "C" fn Cftla_exit(notdone: c_int) {
    let mut guard = process::lock();
    if let Some(p) = guard.as_mut() {
        if notdone == 0 {
            p.exit();
        } else if let Some(ictxt) = p.context.as_ref().map(|c| c.ictxt) {
            p.gridexit(ictxt);
        }
    }
}
