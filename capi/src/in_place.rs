//! Factors kept in the program's own array: the size query
//! `ftla_kept_lsize_`, the declaration `ftla_in_place_`, the memory query
//! `ftla_kept_bytes_`, and the checks a fault-tolerant factorization
//! makes of a declared A before it works in it.

use crate::call::{no_grid, run_local, set_info, Protection, Routine};
use crate::drivers::{check_factored, factored};
use crate::kept::Declared;
use crate::lost::ArrayKey;
use crate::matrix::CheckedMatrix;
use crate::process;
use scalapack_ft::abft::{in_place_len, FtOptions};
use scalapack_ft::args::{arg_error, entry, pdgetrf};
use scalapack_ft::descriptor::Descriptor;
use scalapack_ft::storage::LocalStorage;
use scalapack_ft::{DistMatrix, Grid, Result};
use std::os::raw::c_int;

/// Local: the doubles this process's local array A (`c`, checked as the
/// factorizations check it) must hold for `routine` to keep its factors
/// in place: LLD_A × the local columns of the extended matrix of the
/// checksum layout in use (`FTLA_LAYOUT`, `FTLA_CHECKSUMS`). A's
/// descriptor must be the factored matrix's, M_A = M and N_A = N (the
/// checksum columns follow column N), and LLD_A max(1, LOCr(M)) (the
/// extended matrix's leading dimension): else an argument error at
/// DESCA's M, N or LLD entry (global for M_A and N_A).
pub(crate) fn in_place_need(routine: &str, grid: &Grid, c: &CheckedMatrix) -> Result<usize> {
    // (The factors and the checksum columns after them fill A from its
    // first column: a descriptor wider or taller than the factored
    // submatrix would have the program's columns past N taken for
    // padding and checksums.)
    for (what, entry, have, want) in [("M_A", entry::M, c.desc.m(), c.m), ("N_A", entry::N, c.desc.n(), c.n)] {
        if have != want {
            return Err(arg_error(
                routine,
                pdgetrf::DESCA,
                entry,
                what,
                format!(
                    "must be the factorization's {} = {want} for factors kept in place (A declared with \
                     ftla_in_place_), got {have}",
                    &what[..1]
                ),
            ));
        }
    }
    let (nprow, myrow) = (grid.nprow() as usize, grid.myrow() as usize);
    let rows = blacs_ft::index::numroc(c.m, c.desc.mb(), myrow, 0, nprow).max(1);
    if c.desc.lld() != rows {
        return Err(arg_error(
            routine,
            pdgetrf::DESCA,
            entry::LLD,
            "LLD_A",
            format!(
                "must be max(1, LOCr(M)) = {rows} on process row {myrow} for factors kept in place (A declared \
                 with ftla_in_place_), got {}",
                c.desc.lld()
            ),
        ));
    }
    // (The layout the factorization will use: FTLA_LAYOUT / FTLA_CHECKSUMS.)
    let kind = FtOptions::from_env()?.layout;
    in_place_len(routine, pdgetrf::DESCA, grid, kind, c.m, c.n, c.desc.nb(), rows)
}

/// Local: the caller's array A at `data`, declared as `declared`, as the
/// matrix a fault-tolerant factorization of `c` works in (no copy):
/// `routine`'s argument error when the declaration holds less than
/// [`in_place_need`] or LLD_A is not the extended matrix's.
///
/// # Safety
/// `data` holds `declared.len` doubles (the program's declaration), which
/// it leaves alone until `ftla_release_`.
pub(crate) unsafe fn lend(
    routine: &str,
    grid: &Grid,
    c: &CheckedMatrix,
    data: *mut f64,
    declared: Declared,
) -> Result<DistMatrix> {
    let need = in_place_need(routine, grid, c)?;
    if declared.len < need {
        return Err(arg_error(
            routine,
            pdgetrf::A,
            0,
            "A",
            format!(
                "was declared in place (ftla_in_place_) with LSIZE = {} doubles here, and needs {need} \
                 (ftla_kept_lsize_)",
                declared.len
            ),
        ));
    }
    let d = &c.desc;
    let (nprow, npcol, myrow) = (grid.nprow() as usize, grid.npcol() as usize, grid.myrow() as usize);
    let desc = Descriptor::new(c.m, c.n, d.mb(), d.nb(), 0, 0, d.lld(), d.ctxt(), nprow, npcol, myrow)
        .map_err(|e| scalapack_ft::args::descriptor_error(routine, pdgetrf::DESCA, Some("A"), &e))?;
    // SAFETY: the caller's contract.
    let storage = unsafe { LocalStorage::lent(data, declared.len) };
    DistMatrix::from_local(grid, desc, storage)
}

/// The query's checks are the fault-tolerant factorizations'.
const KEPT_LSIZE: Routine = Routine {
    name: "ftla_kept_lsize_",
    log_name: "ftla_kept_lsize",
    protection: Protection::FaultTolerant,
    keeps_result: false,
    agrees_first: false,
    ctxt_desc: pdgetrf::DESCA,
};

/// The number of doubles this process's local array A must hold for
/// `pdgetrf_ft_` or `pdgeqrf_ft_` to keep their factors in place, in A
/// itself (local; no communication, not recorded in the status log).
///
/// * `m`, `n` (global input): the size of the submatrix the factorization
///   will factor (its M and N).
/// * `desca` (global and local input): A's descriptor, as the
///   factorization will get it; beyond the factorization's checks, M_A =
///   M and N_A = N (the whole of A is factored: the checksum columns
///   follow column N, where a wider A would hold the program's columns),
///   and LLD_A must be max(1, LOCr(M)) (A's local rows, no padding: the
///   checksum columns follow A's columns with the same leading
///   dimension).
/// * `lsize` (local output): LLD_A × LOCc(N + padding + checksum
///   columns): A's local array LLD_A × LOCc(N), then room for the
///   checksums; 0 on an error.
/// * `info` (local output): 0; -i or -(i·100+j) for a bad argument,
///   numbered as in `pdgetrf_ft_`'s argument list (-1 for M, -2 for N,
///   -(600+j) for entry j of DESCA: -603 or -604 for M_A ≠ M or N_A ≠
///   N, -609 for an LLD_A with padding);
///   local: a process-dependent check gives its INFO on the processes it
///   fails on only.
///
/// The room holds the checksum columns of the layout the factorization
/// will use (`FTLA_LAYOUT`, `FTLA_CHECKSUMS`: query with the same
/// environment): with the default reverse-neighboring layout the checksum
/// pairs, two block columns per group of Q block columns (Q process
/// columns), about 2/Q of A's local array; with the rotating layout and F
/// checksums, F block columns per group of Q − F, about F/(Q − F); a block
/// column more where the cyclic distribution rounds up; and the zero
/// padding of a last partial block column. See the header's introduction
/// for the memory of both paths.
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn ftla_kept_lsize_(
    m: *const c_int,
    n: *const c_int,
    desca: *const c_int,
    lsize: *mut i64,
    info: *mut c_int,
) {
    let one: c_int = 1;
    // (No array to check: a stand-in for A's local array.)
    let stand_in = [0.0f64];
    let arg = factored(m, n, stand_in.as_ptr(), &one, &one, desca);
    let need = run_local(&KEPT_LSIZE, info, |grid, ictxt| {
        let c = check_factored(&KEPT_LSIZE, &arg, grid, ictxt)?;
        in_place_need(KEPT_LSIZE.name, grid, &c)
    });
    if !lsize.is_null() {
        // SAFETY: LSIZE points to an int64_t (null checked).
        unsafe { *lsize = need.map_or(0, |n| n as i64) };
    }
}

/// Declares that the local array A holds LSIZE doubles, room for the
/// factors' checksums after A's local array (local; no communication,
/// not recorded in the status log): the next `pdgetrf_ft_` or
/// `pdgeqrf_ft_` given this A with this DESCA (IA = JA = 1) works in A
/// itself and keeps the factors there, protected, instead of in a copy.
///
/// * `a` (local input): the local array; NULL only where LSIZE = 0.
/// * `desca` (global and local input): its descriptor, as the
///   factorizations will get it.
/// * `lsize` (local input): the doubles at A, at least what
///   `ftla_kept_lsize_` says for the factorization's M, N and DESCA.
/// * `info` (local output): 0; -1, -2 or -3 for a null A (with LSIZE >
///   0), a null DESCA, or a null or negative LSIZE (nothing declared);
///   `FTLA_INFO_ERROR` when ftla could not start, -202 (DESCA's CTXT) when
///   there is no grid. May be NULL.
///
/// The factorization checks the declaration with its arguments, and
/// refuses it with INFO the same on every process: -3 (A) when LSIZE is
/// less than `ftla_kept_lsize_`'s, -603 (M_A) or -604 (N_A) when A's
/// descriptor is larger than the factored M × N (the whole of A must be
/// factored: the checksums take the columns after N), -609 (LLD_A) when
/// LLD_A ≠ max(1, LOCr(M)). Declare A on every process of the grid (a process that did
/// not works on a copy, as without a declaration).
///
/// Lifetime: the declaration stays with the array (this address and
/// descriptor) until `ftla_release_(a, desca, &info)` or the grid's exit:
/// every fault-tolerant factorization of A until then works in it. From
/// that factorization until `ftla_release_`, A belongs to ftla: its
/// leading LLD_A × LOCc(N) part holds the factors exactly as ScaLAPACK
/// leaves them (read them freely), the rest the checksums; the program
/// must not write to either, nor free A. A replacement process (running
/// the program from the top) declares its A again before its
/// factorization call.
///
/// # Safety
/// A points to LSIZE writable doubles that stay allocated until
/// `ftla_release_` (or the grid's exit); every other pointer is null
/// where this says it may be, or points to what the argument list says.
#[no_mangle]
pub unsafe extern "C" fn ftla_in_place_(a: *mut f64, desca: *const c_int, lsize: *const i64, info: *mut c_int) {
    // SAFETY: LSIZE points to an int64_t (null checked).
    let len = if lsize.is_null() { -1 } else { unsafe { *lsize } };
    let refused = if desca.is_null() {
        Some((2, "DESCA is a null pointer"))
    } else if len < 0 {
        Some((3, "LSIZE must be a non-negative number of doubles"))
    } else if a.is_null() && len > 0 {
        Some((1, "A is a null pointer, with LSIZE > 0"))
    } else {
        None
    };
    if let Some((position, why)) = refused {
        eprintln!("ftla: ftla_in_place_: argument {position}: {why}");
        return set_info(info, -position);
    }
    let Some(key) = ArrayKey::of_kept(a, desca) else {
        return set_info(info, -2);
    };
    const DECLARE: Routine = Routine {
        name: "ftla_in_place_",
        log_name: "ftla_in_place",
        protection: Protection::FaultTolerant,
        keeps_result: false,
        agrees_first: false,
        ctxt_desc: 2,
    };
    let mut guard = process::lock();
    let Some(p) = guard.as_mut() else {
        return set_info(info, crate::call::FTLA_INFO_ERROR);
    };
    let Some(ctx) = p.context.as_mut() else {
        return no_grid(&DECLARE, info);
    };
    ctx.kept.declare(key, len as usize);
    set_info(info, 0);
}

/// The bytes ftla itself holds on this process for every factorization
/// it keeps (local; no communication): for each, its copy of the factors
/// and their checksum columns (none in place: they are in the program's
/// A), the left-factor sums and the pivots or tau. 0 without a grid.
///
/// * `bytes` (local output).
///
/// # Safety
/// `bytes` is null or points to an int64_t.
#[no_mangle]
pub unsafe extern "C" fn ftla_kept_bytes_(bytes: *mut i64) {
    let held = {
        let guard = process::lock();
        guard.as_ref().and_then(|p| p.context.as_ref()).map_or(0, |c| c.kept.held_bytes())
    };
    if !bytes.is_null() {
        // SAFETY: pointer to an int64_t (null checked).
        unsafe { *bytes = held as i64 };
    }
}
