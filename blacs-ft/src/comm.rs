//! An owned MPI communicator whose every call is checked.
//!
//! Each communicator this crate creates gets `MPI_ERRORS_RETURN`, so an MPI
//! failure becomes an [`Error`] instead of an abort, and no call here panics on
//! an MPI error.

use crate::error::{Error, Result};
use crate::ffi::{self, Handle};
use crate::wait::wait_politely;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once MPI is finalized (or abandoned): dropping a communicator after
/// that must not call into MPI.
pub(crate) static MPI_DONE: AtomicBool = AtomicBool::new(false);

/// Element types that can travel through the grid's data movement: `f64`,
/// `i64` and `u8`.
///
/// Sealed: MPI moves `KIND`'s size per element, so an element type of
/// another size would let it write past a buffer. Nothing outside this
/// crate can implement it:
///
/// ```compile_fail
/// #[derive(Clone, Copy, Default)]
/// struct Byte(u8);
/// impl blacs_ft::Element for Byte {
///     const KIND: i32 = 0;
/// }
/// ```
pub trait Element: sealed::Sealed + Copy + Default + 'static {
    #[doc(hidden)]
    const KIND: c_int;
}

mod sealed {
    /// Implemented only for the element types MPI moves with their own size.
    pub trait Sealed {}
    impl Sealed for f64 {}
    impl Sealed for i64 {}
    impl Sealed for u8 {}
}

impl Element for f64 {
    const KIND: c_int = ffi::KIND_F64;
}
impl Element for i64 {
    const KIND: c_int = ffi::KIND_I64;
}
impl Element for u8 {
    const KIND: c_int = ffi::KIND_U8;
}

/// Element-wise reduction operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    Sum,
    Max,
    Min,
    /// Bitwise or (integers only).
    BitOr,
    /// Bitwise and (integers only).
    BitAnd,
}

impl ReduceOp {
    fn raw(self) -> c_int {
        match self {
            ReduceOp::Sum => ffi::OP_SUM,
            ReduceOp::Max => ffi::OP_MAX,
            ReduceOp::Min => ffi::OP_MIN,
            ReduceOp::BitOr => ffi::OP_BOR,
            ReduceOp::BitAnd => ffi::OP_BAND,
        }
    }
}

fn count(n: usize) -> Result<c_int> {
    c_int::try_from(n).map_err(|_| Error::invalid("count", format!("{n} elements exceed MPI's int count")))
}

/// One `MPI_Test` of a request of `comm` (live, or completed and then
/// null): `true` once it has completed.
fn test_request(req: &mut Handle, comm: Handle) -> Result<bool> {
    let mut done: c_int = 0;
    // SAFETY: req is a live or null request handle; done is an out-parameter.
    check(unsafe { ffi::ftla_test(req, &mut done) }, Some(comm))?;
    Ok(done != 0)
}

/// An agreement started by [`Comm::start_agree`].
#[derive(Debug)]
#[must_use = "a started agreement must be waited for"]
pub struct PendingAgree {
    comm: Handle,
    req: Option<Handle>,
    flag: Option<Box<c_int>>,
}

impl PendingAgree {
    /// Progresses the agreement without blocking; `true` once it has
    /// completed (a later [`PendingAgree::wait`] then returns at once).
    /// An agreement is a tree: a process that computes while its
    /// agreement is in flight lets the others' complete only while it is
    /// inside MPI.
    pub fn test(&mut self) -> Result<bool> {
        let Some(req) = self.req.as_mut() else { return Ok(true) };
        let mut done: c_int = 0;
        // SAFETY: req is a live request handle; done is an out-parameter.
        let rc = unsafe { ffi::ftla_test(req, &mut done) };
        if rc != 0 {
            // The request stays: Drop keeps the flag alive for MPI.
            return check(rc, Some(self.comm)).map(|()| false);
        }
        if done != 0 {
            self.req = None;
        }
        Ok(done != 0)
    }

    /// Completes the agreement: the bitwise AND of every live rank's flag,
    /// or a process-failure error (see `MPIX_Comm_agree`).
    pub fn wait(mut self) -> Result<i32> {
        if let Some(mut req) = self.req.take() {
            let rc = wait_politely(&mut req);
            if rc != 0 {
                // Leave the flag to Drop, which keeps it alive for MPI.
                self.req = Some(req);
                return check(rc, Some(self.comm)).map(|()| 0);
            }
        }
        Ok(self.flag.take().map_or(0, |f| *f))
    }
}

impl Drop for PendingAgree {
    /// MPI may still write the flag of an agreement that was not completed.
    fn drop(&mut self) {
        if self.req.is_some() {
            if let Some(f) = self.flag.take() {
                Box::leak(f);
            }
        }
    }
}

/// A broadcast started by [`Comm::ibcast`] and not yet waited for.
#[derive(Debug)]
#[must_use = "a started broadcast must be waited for"]
pub struct PendingBcast<T: Element> {
    req: Handle,
    comm: Handle,
    buf: Option<Vec<T>>,
}

impl<T: Element> PendingBcast<T> {
    /// Progresses the broadcast without blocking; `true` once it has
    /// completed (a later [`PendingBcast::wait`] then returns at once).
    pub fn test(&mut self) -> Result<bool> {
        test_request(&mut self.req, self.comm)
    }

    /// Completes the broadcast and returns the buffer (the root's data on
    /// every rank).
    pub fn wait(mut self) -> Result<Vec<T>> {
        check(wait_politely(&mut self.req), Some(self.comm))?;
        Ok(self.buf.take().unwrap_or_default())
    }
}

impl<T: Element> Drop for PendingBcast<T> {
    /// A broadcast that was never completed (its owner returned early on an
    /// error) may still write into its buffer, and MPI forbids freeing a
    /// collective's request: the buffer is leaked rather than freed under it.
    fn drop(&mut self) {
        if let Some(buf) = self.buf.take() {
            std::mem::forget(buf);
        }
    }
}

/// An MPI communicator owned by this process (freed on drop, unless it
/// was revoked: see the `Drop` implementation).
#[derive(Debug)]
pub struct Comm {
    h: Handle,
    owned: bool,
    /// Revoked by this process.
    revoked: std::cell::Cell<bool>,
}

/// Human-readable MPI error string for `code`.
pub fn error_string(code: c_int) -> String {
    let mut buf = vec![0u8; 512];
    // SAFETY: the shim writes at most `cap` bytes including the terminator.
    let n = unsafe { ffi::ftla_error_string(code, buf.as_mut_ptr().cast(), buf.len() as c_int) };
    if n < 0 {
        return format!("unknown MPI error {code}");
    }
    buf.truncate(n as usize);
    String::from_utf8_lossy(&buf).into_owned()
}

/// Maps an MPI return code to an [`Error`] (`Ok` for `MPI_SUCCESS`).
pub(crate) fn check(rc: c_int, comm: Option<Handle>) -> Result<()> {
    if rc == 0 {
        return Ok(());
    }
    let mut class: c_int = -1;
    // SAFETY: plain out-parameter.
    unsafe { ffi::ftla_error_class(rc, &mut class) };
    // SAFETY: constant getters.
    let (pf, pfp, rv) =
        unsafe { (ffi::ftla_err_proc_failed(), ffi::ftla_err_proc_failed_pending(), ffi::ftla_err_revoked()) };
    if class >= 0 && (class == pf || class == pfp) {
        let ranks = comm.map(failed_ranks_of).unwrap_or_default();
        return Err(Error::ProcFailed { ranks });
    }
    if class >= 0 && class == rv {
        return Err(Error::Revoked);
    }
    Err(Error::Mpi { code: rc, class, message: error_string(rc) })
}

fn failed_ranks_of(h: Handle) -> Vec<i32> {
    let mut buf = vec![0 as c_int; 64];
    let mut n: c_int = 0;
    // SAFETY: the shim writes at most `cap` ranks.
    let rc = unsafe { ffi::ftla_comm_failed_ranks(h, buf.as_mut_ptr(), buf.len() as c_int, &mut n) };
    if rc != 0 {
        return Vec::new();
    }
    buf.truncate((n.max(0) as usize).min(64));
    buf.sort_unstable();
    buf
}

impl Comm {
    /// A placeholder for a communicator that was moved elsewhere:
    /// `MPI_COMM_NULL`, never freed.
    pub(crate) fn null() -> Comm {
        // SAFETY: constant getter.
        Comm { h: unsafe { ffi::ftla_comm_null() }, owned: false, revoked: Default::default() }
    }

    /// The same communicator, not owned by the copy (never freed by it):
    /// for a view that lives shorter than its owner.
    pub(crate) fn borrowed(&self) -> Comm {
        Comm { h: self.h, owned: false, revoked: Default::default() }
    }

    /// True for [`Comm::null`].
    pub(crate) fn is_null(&self) -> bool {
        // SAFETY: constant getter.
        self.h == unsafe { ffi::ftla_comm_null() }
    }

    /// Wraps a handle, setting `MPI_ERRORS_RETURN` on it.
    pub(crate) fn adopt(h: Handle, owned: bool) -> Result<Comm> {
        let c = Comm { h, owned, revoked: Default::default() };
        // SAFETY: h is a valid communicator handle from MPI.
        check(unsafe { ffi::ftla_comm_set_errors_return(h) }, None)?;
        Ok(c)
    }

    fn chk(&self, rc: c_int) -> Result<()> {
        check(rc, Some(self.h))
    }

    /// This process's rank in the communicator.
    pub fn rank(&self) -> i32 {
        let mut r = -1;
        // SAFETY: out-parameter.
        unsafe { ffi::ftla_comm_rank(self.h, &mut r) };
        r
    }

    /// Number of processes in the communicator.
    pub fn size(&self) -> i32 {
        let mut s = 0;
        // SAFETY: out-parameter.
        unsafe { ffi::ftla_comm_size(self.h, &mut s) };
        s
    }

    /// The communicator's Fortran handle (`MPI_Comm_c2f`): how code in
    /// another language gets it (C: `MPI_Comm_f2c`). The handle stays valid
    /// as long as this `Comm` lives.
    pub fn fortran_handle(&self) -> i32 {
        // SAFETY: valid handle.
        unsafe { ffi::ftla_comm_c2f(self.h) }
    }

    /// Size of the remote group of an inter-communicator.
    pub fn remote_size(&self) -> i32 {
        let mut s = 0;
        // SAFETY: out-parameter.
        unsafe { ffi::ftla_comm_remote_size(self.h, &mut s) };
        s
    }

    /// `MPI_Comm_dup`.
    pub fn dup(&self) -> Result<Comm> {
        let mut out = 0;
        // SAFETY: out-parameter.
        self.chk(unsafe { ffi::ftla_comm_dup(self.h, &mut out) })?;
        Comm::adopt(out, true)
    }

    /// `MPI_Comm_split`; `color = None` means `MPI_UNDEFINED` (returns `None`).
    pub fn split(&self, color: Option<i32>, key: i32) -> Result<Option<Comm>> {
        // SAFETY: constant getters and out-parameter.
        let (undef, null) = unsafe { (ffi::ftla_undefined(), ffi::ftla_comm_null()) };
        let mut out = null;
        self.chk(unsafe { ffi::ftla_comm_split(self.h, color.unwrap_or(undef), key, &mut out) })?;
        if out == null {
            return Ok(None);
        }
        Comm::adopt(out, true).map(Some)
    }

    /// Collective: how many processes of this communicator share this
    /// one's node (by host name).
    ///
    /// One all-gather of a hash of the host name, on this communicator:
    /// no new communicator. (`MPI_Comm_split_type` creates one, and Open
    /// MPI 5.0 crashes in `ompi_comm_revoke_local` when it learns of a
    /// process failure while it activates a communicator being built:
    /// seen when a process is lost during a repair's last step.)
    pub fn node_size(&self) -> Result<usize> {
        let mine = host_hash();
        let all = self.allgather(&[mine])?;
        Ok(all.iter().filter(|&&h| h == mine).count().max(1))
    }

    /// `MPI_Barrier`.
    pub fn barrier(&self) -> Result<()> {
        // SAFETY: valid handle.
        self.chk(unsafe { ffi::ftla_barrier(self.h) })
    }

    /// `MPI_Bcast` of `buf` from `root`.
    pub fn bcast<T: Element>(&self, buf: &mut [T], root: i32) -> Result<()> {
        // SAFETY: buf is valid for buf.len() elements of T.
        self.chk(unsafe { ffi::ftla_bcast(self.h, buf.as_mut_ptr().cast(), buf.len() as i64, T::KIND, root) })
    }

    /// `MPI_Ibcast` of `buf` from `root`: returns at once; the buffer comes
    /// back from [`PendingBcast::wait`]. Every rank of the communicator must
    /// start its non-blocking collectives in the same order.
    pub fn ibcast<T: Element>(&self, mut buf: Vec<T>, root: i32) -> Result<PendingBcast<T>> {
        let n = count(buf.len())?;
        let mut req: Handle = 0;
        // SAFETY: the Vec's heap buffer stays where it is (it is moved into
        // the PendingBcast, never resized) until the request completes.
        self.chk(unsafe { ffi::ftla_ibcast(self.h, buf.as_mut_ptr().cast(), n, T::KIND, root, &mut req) })?;
        Ok(PendingBcast { req, comm: self.h, buf: Some(buf) })
    }

    /// In-place `MPI_Allreduce`.
    pub fn allreduce<T: Element>(&self, buf: &mut [T], op: ReduceOp) -> Result<()> {
        let n = count(buf.len())?;
        // SAFETY: buf is valid for n elements.
        self.chk(unsafe { ffi::ftla_allreduce(self.h, buf.as_mut_ptr().cast(), n, T::KIND, op.raw()) })
    }

    /// In-place `MPI_Reduce` to `root` (other ranks' `buf` is left as is).
    pub fn reduce<T: Element>(&self, buf: &mut [T], op: ReduceOp, root: i32) -> Result<()> {
        let n = count(buf.len())?;
        // SAFETY: buf is valid for n elements.
        self.chk(unsafe { ffi::ftla_reduce(self.h, buf.as_mut_ptr().cast(), n, T::KIND, op.raw(), root) })
    }

    /// `MPI_Allgather`: every rank contributes `send`, gets all contributions
    /// in rank order.
    pub fn allgather<T: Element>(&self, send: &[T]) -> Result<Vec<T>> {
        let n = count(send.len())?;
        let mut out = vec![T::default(); send.len() * self.size().max(0) as usize];
        // SAFETY: out holds size*n elements.
        self.chk(unsafe { ffi::ftla_allgather(self.h, send.as_ptr().cast(), n, T::KIND, out.as_mut_ptr().cast()) })?;
        Ok(out)
    }

    /// Blocking `MPI_Send`.
    pub fn send<T: Element>(&self, buf: &[T], dest: i32, tag: i32) -> Result<()> {
        let n = count(buf.len())?;
        // SAFETY: buf valid for n elements.
        self.chk(unsafe { ffi::ftla_send(self.h, buf.as_ptr().cast(), n, T::KIND, dest, tag) })
    }

    /// `MPI_Isend` of `buf` to `dest`: returns the request at once.
    ///
    /// # Safety
    /// `buf` must stay valid and unchanged until the request has completed
    /// ([`Comm::complete`]); [`crate::Sends`] is the safe way to get that.
    pub(crate) unsafe fn isend<T: Element>(&self, buf: &[T], dest: i32, tag: i32) -> Result<Handle> {
        let n = count(buf.len())?;
        let mut req: Handle = 0;
        // SAFETY: buf is valid for n elements (and, per this function's
        // contract, stays so until the request completes).
        self.chk(unsafe { ffi::ftla_isend(self.h, buf.as_ptr().cast(), n, T::KIND, dest, tag, &mut req) })?;
        Ok(req)
    }

    /// Completes a request of this communicator without holding a core
    /// while it waits (see [`wait_politely`]).
    pub(crate) fn complete(&self, req: &mut Handle) -> Result<()> {
        self.chk(wait_politely(req))
    }

    /// Tests a request of this communicator: `true` once it has completed.
    pub(crate) fn test_request(&self, req: &mut Handle) -> Result<bool> {
        test_request(req, self.h)
    }

    /// Blocking `MPI_Recv` into `buf`; returns (source, received count).
    /// `src = None` means any source.
    pub fn recv<T: Element>(&self, buf: &mut [T], src: Option<i32>, tag: i32) -> Result<(i32, usize)> {
        let n = count(buf.len())?;
        // SAFETY: constant getter.
        let src = src.unwrap_or_else(|| unsafe { ffi::ftla_any_source() });
        let (mut s, mut c) = (-1, 0);
        // SAFETY: buf valid for n elements; out-parameters.
        self.chk(unsafe { ffi::ftla_recv(self.h, buf.as_mut_ptr().cast(), n, T::KIND, src, tag, &mut s, &mut c) })?;
        Ok((s, c.max(0) as usize))
    }

    /// `MPI_Sendrecv`; returns the number of elements received.
    pub fn sendrecv<T: Element>(&self, send: &[T], dest: i32, recv: &mut [T], src: i32, tag: i32) -> Result<usize> {
        let (ns, nr) = (count(send.len())?, count(recv.len())?);
        let mut got = 0;
        // SAFETY: buffers valid for their lengths; `got` is an out-parameter.
        self.chk(unsafe {
            ffi::ftla_sendrecv(
                self.h,
                send.as_ptr().cast(),
                ns,
                dest,
                recv.as_mut_ptr().cast(),
                nr,
                src,
                T::KIND,
                tag,
                &mut got,
            )
        })?;
        Ok(got.max(0) as usize)
    }

    /// Non-blocking probe: `Some((source, count of T))` if a message is there.
    pub fn iprobe<T: Element>(&self, src: Option<i32>, tag: i32) -> Result<Option<(i32, usize)>> {
        // SAFETY: constant getter.
        let src = src.unwrap_or_else(|| unsafe { ffi::ftla_any_source() });
        let (mut flag, mut s, mut c) = (0, -1, 0);
        // SAFETY: out-parameters.
        self.chk(unsafe { ffi::ftla_iprobe(self.h, src, tag, &mut flag, &mut s, &mut c, T::KIND) })?;
        Ok((flag != 0).then_some((s, c.max(0) as usize)))
    }

    /// `MPIX_Comm_revoke`: every pending and future operation on this
    /// communicator, on every rank, returns [`Error::Revoked`].
    pub fn revoke(&self) -> Result<()> {
        self.revoked.set(true);
        // SAFETY: valid handle.
        self.chk(unsafe { ffi::ftla_comm_revoke(self.h) })
    }

    /// Whether the communicator was revoked, by this process or another.
    pub fn is_revoked(&self) -> bool {
        if self.revoked.get() {
            return true;
        }
        let mut flag = 0;
        // SAFETY: valid handle; out-parameter.
        let rc = unsafe { ffi::ftla_comm_is_revoked(self.h, &mut flag) };
        rc == 0 && flag != 0
    }

    /// `MPIX_Comm_shrink`: a new communicator of the live processes, in the
    /// same relative order. Works on a revoked communicator.
    pub fn shrink(&self) -> Result<Comm> {
        let mut out = 0;
        // SAFETY: out-parameter.
        self.chk(unsafe { ffi::ftla_comm_shrink(self.h, &mut out) })?;
        Comm::adopt(out, true)
    }

    /// `MPIX_Comm_agree`: the bitwise AND of `flag` over the live processes,
    /// the same on every one of them. Works on a revoked communicator.
    pub fn agree(&self, flag: i32) -> Result<i32> {
        let mut f = flag;
        // SAFETY: out-parameter.
        self.chk(unsafe { ffi::ftla_comm_agree(self.h, &mut f) })?;
        Ok(f)
    }

    /// Starts `MPIX_Comm_agree` in its non-blocking form
    /// (`MPIX_Comm_iagree`); where the library lacks it, runs the blocking
    /// one now. Complete it with [`PendingAgree::wait`].
    pub fn start_agree(&self, flag: i32) -> Result<PendingAgree> {
        let mut f = Box::new(flag);
        let mut req: Handle = 0;
        // SAFETY: `f` is boxed and lives in the PendingAgree until the
        // request completes (leaked if it never does).
        let rc = unsafe { ffi::ftla_comm_iagree(self.h, &mut *f, &mut req) };
        if rc != 0 {
            let mut class = -1;
            // SAFETY: out-parameter; constant getter.
            let unsupported = unsafe {
                ffi::ftla_error_class(rc, &mut class);
                ffi::ftla_err_unsupported()
            };
            if class == unsupported {
                return Ok(PendingAgree { comm: self.h, req: None, flag: Some(Box::new(self.agree(flag)?)) });
            }
            self.chk(rc)?;
        }
        Ok(PendingAgree { comm: self.h, req: Some(req), flag: Some(f) })
    }

    /// Ranks of this communicator known (and acknowledged) to have failed.
    pub fn failed_ranks(&self) -> Vec<i32> {
        failed_ranks_of(self.h)
    }

    /// `MPI_Comm_spawn` of `n` copies of `exe args...` with `root` as the
    /// spawning rank; returns the inter-communicator to the children.
    pub fn spawn(&self, exe: &str, args: &[String], n: i32, root: i32) -> Result<Comm> {
        use std::ffi::CString;
        let cexe = CString::new(exe).map_err(|_| Error::invalid("exe", "contains a NUL byte"))?;
        let cargs: Vec<CString> = args
            .iter()
            .map(|a| CString::new(a.as_str()).map_err(|_| Error::invalid("args", "contain a NUL byte")))
            .collect::<Result<_>>()?;
        let mut argv: Vec<*mut std::os::raw::c_char> = cargs.iter().map(|a| a.as_ptr() as *mut _).collect();
        argv.push(std::ptr::null_mut());
        let mut errcodes = vec![0 as c_int; n.max(1) as usize];
        let mut inter = 0;
        // SAFETY: argv is NULL-terminated and outlives the call; errcodes holds n codes.
        let rc = unsafe {
            ffi::ftla_comm_spawn(cexe.as_ptr(), argv.as_mut_ptr(), n, root, self.h, &mut inter, errcodes.as_mut_ptr())
        };
        self.chk(rc)?;
        Comm::adopt(inter, true)
    }

    /// `MPI_Intercomm_merge`.
    pub fn merge(&self, high: bool) -> Result<Comm> {
        let mut out = 0;
        // SAFETY: out-parameter.
        self.chk(unsafe { ffi::ftla_intercomm_merge(self.h, high as c_int, &mut out) })?;
        Comm::adopt(out, true)
    }

    /// The parent inter-communicator of a spawned process, if any.
    pub(crate) fn parent() -> Result<Option<Comm>> {
        // SAFETY: constant getter and out-parameter.
        let null = unsafe { ffi::ftla_comm_null() };
        let mut out = null;
        check(unsafe { ffi::ftla_comm_get_parent(&mut out) }, None)?;
        if out == null {
            return Ok(None);
        }
        // The parent handle belongs to MPI: never free it ourselves.
        Comm::adopt(out, false).map(Some)
    }
}

impl Drop for Comm {
    /// Frees the communicator — unless it was revoked. A revoked
    /// communicator is kept (a few hundred bytes per repair): freeing it
    /// lets MPI give its context id to a new communicator while revoke
    /// messages for the old one may still be in flight, and Open MPI 5 then
    /// lets a later collective on the new communicator block for ever (seen
    /// when a spawn that was abandoned is followed by another).
    fn drop(&mut self) {
        if self.owned && !MPI_DONE.load(Ordering::Acquire) && !self.is_revoked() {
            // Errors are ignored: nothing can be done about them here.
            // SAFETY: we own the handle.
            unsafe { ffi::ftla_comm_free(&mut self.h) };
        }
    }
}

/// A hash of this host's name (FNV-1a), as an `i64` for the all-gather.
pub(crate) fn host_hash() -> i64 {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length.
    let n = if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0 {
        buf.iter().position(|&b| b == 0).unwrap_or(buf.len())
    } else {
        0
    };
    hash_name(&buf[..n])
}

/// FNV-1a of a node's name.
pub(crate) fn hash_name(name: &[u8]) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    h as i64
}
