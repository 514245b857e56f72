//! ScaLAPACK's tool routines for descriptors, prefixed `ftla_`.

use crate::grid::with_process;
use blacs_ft::index::numroc;
use scalapack_ft::args::entry;
use scalapack_ft::descriptor::{Descriptor, DLEN};
use std::os::raw::c_int;

/// Reads an int argument passed by reference (0 for a null pointer).
pub(crate) fn get(p: *const c_int) -> c_int {
    if p.is_null() {
        0
    } else {
        // SAFETY: the caller passed a pointer to an int (null checked).
        unsafe { *p }
    }
}

/// The number of rows or columns of a distributed matrix that process
/// `*iproc` owns (ScaLAPACK `NUMROC`): `*n` rows or columns in blocks of
/// `*nb`, the first block on process `*isrcproc`, over `*nprocs`
/// processes. All arguments (global) except `iproc` (local). 0 when `*n`,
/// `*nb` or `*nprocs` is out of range.
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn ftla_numroc_(
    n: *const c_int,
    nb: *const c_int,
    iproc: *const c_int,
    isrcproc: *const c_int,
    nprocs: *const c_int,
) -> c_int {
    let (n, nb, nprocs) = (get(n), get(nb), get(nprocs));
    if n < 0 || nb < 1 || nprocs < 1 {
        return 0;
    }
    let iproc = get(iproc).rem_euclid(nprocs) as usize;
    let src = get(isrcproc).rem_euclid(nprocs) as usize;
    numroc(n as usize, nb as usize, iproc, src, nprocs as usize) as c_int
}

/// Fills a descriptor for an `*m`×`*n` matrix in `*mb`×`*nb` blocks, the
/// first block on process (`*irsrc`, `*icsrc`), over the grid `*ictxt`,
/// with local leading dimension `*lld` (ScaLAPACK `DESCINIT`).
///
/// * `desc` (output): the 9 integers `DTYPE=1, CTXT, M, N, MB, NB, RSRC,
///   CSRC, LLD`.
/// * `info` (output): 0, or `-i` when argument `i` is wrong (2 `M` … 9
///   `LLD`; 8 when `*ictxt` is not a live grid). As in ScaLAPACK the
///   descriptor is filled even then, `LLD` raised to its smallest valid
///   value.
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn ftla_descinit_(
    desc: *mut c_int,
    m: *const c_int,
    n: *const c_int,
    mb: *const c_int,
    nb: *const c_int,
    irsrc: *const c_int,
    icsrc: *const c_int,
    ictxt: *const c_int,
    lld: *const c_int,
    info: *mut c_int,
) {
    let ictxt = get(ictxt);
    let raw = [1, ictxt, get(m), get(n), get(mb), get(nb), get(irsrc), get(icsrc), get(lld)];
    let shape = with_process(|p| {
        p.context(ictxt).map(|c| {
            let g = c.region.grid();
            (g.nprow(), g.npcol(), g.myrow())
        })
    })
    .flatten();
    let (code, lld) = match shape {
        None => (-8, raw[8]),
        Some((nprow, npcol, myrow)) => {
            let min_lld = if raw[2] >= 0 && raw[4] >= 1 && (0..nprow).contains(&raw[6]) {
                numroc(raw[2] as usize, raw[4] as usize, myrow as usize, raw[6] as usize, nprow as usize).max(1)
                    as c_int
            } else {
                1
            };
            let code = match Descriptor::from_array(raw, nprow as usize, npcol as usize, myrow as usize) {
                Ok(_) => 0,
                // DESCINIT numbers its own arguments: M is the second.
                Err(e) if e.index == entry::LLD => -9,
                Err(e) => -(e.index as c_int - 1),
            };
            (code, raw[8].max(min_lld))
        }
    };
    if !desc.is_null() {
        let mut out = raw;
        out[DLEN - 1] = lld;
        // SAFETY: the caller passes room for the 9 descriptor integers.
        unsafe { std::ptr::copy_nonoverlapping(out.as_ptr(), desc, DLEN) };
    }
    if !info.is_null() {
        // SAFETY: pointer to an int (null checked).
        unsafe { *info = code };
    }
}
