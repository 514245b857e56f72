//! Declarations of the C shim in `csrc/ftla_mpi.c`. Every handle is an
//! `isize` (the shim casts MPI's own handle type to `intptr_t`); every
//! function returns an MPI error code unless noted.
#![allow(dead_code)]

use std::os::raw::{c_char, c_int};

pub type Handle = isize;

/// Element kinds understood by the shim's data-movement calls.
pub const KIND_F64: c_int = 0;
pub const KIND_I64: c_int = 1;
pub const KIND_U8: c_int = 2;

/// Reduction operators understood by the shim.
pub const OP_SUM: c_int = 0;
pub const OP_MAX: c_int = 1;
pub const OP_MIN: c_int = 2;
pub const OP_BOR: c_int = 3;
pub const OP_BAND: c_int = 4;

extern "C" {
    pub fn ftla_comm_world() -> Handle;
    pub fn ftla_comm_self() -> Handle;
    pub fn ftla_comm_null() -> Handle;
    pub fn ftla_any_source() -> c_int;
    pub fn ftla_undefined() -> c_int;
    pub fn ftla_err_proc_failed() -> c_int;
    pub fn ftla_err_proc_failed_pending() -> c_int;
    pub fn ftla_err_revoked() -> c_int;

    pub fn ftla_initialized(flag: *mut c_int) -> c_int;
    pub fn ftla_finalized(flag: *mut c_int) -> c_int;
    pub fn ftla_init(provided: *mut c_int) -> c_int;
    pub fn ftla_finalize() -> c_int;
    pub fn ftla_comm_c2f(comm: Handle) -> c_int;
    pub fn ftla_abort(comm: Handle, code: c_int) -> c_int;
    pub fn ftla_wtime() -> f64;
    /// Returns the length written (or a negative MPI error code).
    pub fn ftla_library_version(buf: *mut c_char, cap: c_int) -> c_int;
    /// 1 usable, 0 missing, 2 present but not enabled for this run.
    pub fn ftla_ulfm_status() -> c_int;

    pub fn ftla_error_class(code: c_int, cls: *mut c_int) -> c_int;
    /// Returns the length written, or -1.
    pub fn ftla_error_string(code: c_int, buf: *mut c_char, cap: c_int) -> c_int;

    pub fn ftla_comm_set_errors_return(comm: Handle) -> c_int;
    pub fn ftla_comm_rank(comm: Handle, rank: *mut c_int) -> c_int;
    pub fn ftla_comm_size(comm: Handle, size: *mut c_int) -> c_int;
    pub fn ftla_comm_remote_size(comm: Handle, size: *mut c_int) -> c_int;
    pub fn ftla_comm_dup(comm: Handle, out: *mut Handle) -> c_int;
    pub fn ftla_comm_split(comm: Handle, color: c_int, key: c_int, out: *mut Handle) -> c_int;
    pub fn ftla_comm_free(comm: *mut Handle) -> c_int;
    pub fn ftla_comm_disconnect(comm: *mut Handle) -> c_int;
    pub fn ftla_comm_get_parent(out: *mut Handle) -> c_int;
    pub fn ftla_comm_spawn(
        cmd: *const c_char,
        argv: *mut *mut c_char,
        n: c_int,
        root: c_int,
        comm: Handle,
        inter: *mut Handle,
        errcodes: *mut c_int,
    ) -> c_int;
    pub fn ftla_intercomm_merge(inter: Handle, high: c_int, out: *mut Handle) -> c_int;

    pub fn ftla_comm_revoke(comm: Handle) -> c_int;
    pub fn ftla_comm_is_revoked(comm: Handle, flag: *mut c_int) -> c_int;
    pub fn ftla_comm_shrink(comm: Handle, out: *mut Handle) -> c_int;
    pub fn ftla_comm_agree(comm: Handle, flag: *mut c_int) -> c_int;
    pub fn ftla_comm_failed_ranks(comm: Handle, ranks: *mut c_int, cap: c_int, n: *mut c_int) -> c_int;

    pub fn ftla_barrier(comm: Handle) -> c_int;
    pub fn ftla_bcast(comm: Handle, buf: *mut u8, count: i64, kind: c_int, root: c_int) -> c_int;
    pub fn ftla_ibcast(comm: Handle, buf: *mut u8, count: c_int, kind: c_int, root: c_int, req: *mut Handle) -> c_int;
    pub fn ftla_wait(req: *mut Handle) -> c_int;
    pub fn ftla_err_unsupported() -> c_int;
    pub fn ftla_test(req: *mut Handle, done: *mut c_int) -> c_int;
    pub fn ftla_comm_iagree(comm: Handle, flag: *mut c_int, req: *mut Handle) -> c_int;
    pub fn ftla_allreduce(comm: Handle, buf: *mut u8, count: c_int, kind: c_int, op: c_int) -> c_int;
    pub fn ftla_reduce(comm: Handle, buf: *mut u8, count: c_int, kind: c_int, op: c_int, root: c_int) -> c_int;
    pub fn ftla_allgather(comm: Handle, send: *const u8, count: c_int, kind: c_int, recv: *mut u8) -> c_int;
    pub fn ftla_send(comm: Handle, buf: *const u8, count: c_int, kind: c_int, dest: c_int, tag: c_int) -> c_int;
    pub fn ftla_isend(
        comm: Handle,
        buf: *const u8,
        count: c_int,
        kind: c_int,
        dest: c_int,
        tag: c_int,
        req: *mut Handle,
    ) -> c_int;
    pub fn ftla_recv(
        comm: Handle,
        buf: *mut u8,
        count: c_int,
        kind: c_int,
        src: c_int,
        tag: c_int,
        got_src: *mut c_int,
        got_count: *mut c_int,
    ) -> c_int;
    pub fn ftla_sendrecv(
        comm: Handle,
        sbuf: *const u8,
        scount: c_int,
        dest: c_int,
        rbuf: *mut u8,
        rcount: c_int,
        src: c_int,
        kind: c_int,
        tag: c_int,
        got_count: *mut c_int,
    ) -> c_int;
    pub fn ftla_iprobe(
        comm: Handle,
        src: c_int,
        tag: c_int,
        flag: *mut c_int,
        got_src: *mut c_int,
        got_count: *mut c_int,
        kind: c_int,
    ) -> c_int;
}
