//! The Cholesky routines with ScaLAPACK's argument lists, plain (not
//! fault tolerant): `ftla_pdpotrf_`, `ftla_pdpotrs_`, `ftla_pdposv_`.

use crate::call::{run, Protection, Routine, Work};
use crate::lost::{Access, ArrayArg};
use crate::matrix::{CheckedMatrix, MatrixArg};
use crate::solve_args::{check_nrhs, letter, solve_matrices};
use crate::tools::get;
use scalapack_ft::args::{arg_error, pdpotrf, pdpotrs};
use scalapack_ft::blas::Uplo;
use scalapack_ft::{chol, DistMatrix, Grid, Result};
use std::os::raw::{c_char, c_int};

/// UPLO (global), the letter `u` of argument 1.
fn uplo_of(routine: &str, u: u8) -> Result<Uplo> {
    match u {
        b'L' => Ok(Uplo::Lower),
        b'U' => Ok(Uplo::Upper),
        _ => Err(arg_error(routine, pdpotrf::UPLO, 0, "UPLO", "must be 'L' or 'U'")),
    }
}

/// Whether a factorization that ended with `done` wrote A: its factor,
/// or (a minor that is not positive definite, INFO > 0) what ScaLAPACK's
/// leaves there.
fn factored(done: &Result<()>) -> bool {
    matches!(done, Ok(()) | Err(scalapack_ft::Error::MinorNotPositiveDefinite { .. }))
}

/// A routine of this file: plain, its context in A's descriptor.
const fn plain(name: &'static str, log_name: &'static str, ctxt_desc: u32) -> Routine {
    Routine { name, log_name, protection: Protection::Plain, keeps_result: false, agrees_first: false, ctxt_desc }
}

/// A (N×N, square blocks) at PDPOTRF's positions.
fn potrf_matrix(n: *const c_int, a: *const f64, ia: *const c_int, ja: *const c_int, desca: *const c_int) -> MatrixArg {
    MatrixArg {
        name: "A",
        m: get(n),
        n: get(n),
        ia: get(ia),
        ja: get(ja),
        desc: desca,
        data: a,
        at: pdpotrf::MATRIX_A,
        square_blocks: true,
    }
}

/// What a Cholesky call works on: UPLO, A, and a solve's B.
struct CholArgs {
    uplo: Uplo,
    a_arg: CheckedMatrix,
    a: DistMatrix,
    b: Option<(CheckedMatrix, DistMatrix)>,
    /// The call factors A (`ftla_pdpotrf_`, `ftla_pdposv_`): it is not
    /// empty without right-hand sides.
    factors: bool,
}

impl Work for CholArgs {
    fn is_empty(&self) -> bool {
        self.a.m() == 0 || (!self.factors && self.b.as_ref().is_some_and(|(_, b)| b.n() == 0))
    }
}

/// Cholesky factorization of the N×N symmetric positive definite A
/// (ScaLAPACK `PDPOTRF`), ftla's own, not fault tolerant.
///
/// * `uplo` (global input): `"L"`: A's lower triangle is read and L
///   (A = L·Lᵀ) written there; `"U"`: the upper one, and U (A = Uᵀ·U).
///   The other triangle is not referenced.
/// * `n` (global input): the order of A.
/// * `a`, `ia`, `ja`, `desca` (local input/output): A; IA = JA = 1,
///   MB_A = NB_A, the first block on process (0, 0).
/// * `info` (global output): 0; `-i` or `-(i·100 + j)` for a bad argument
///   (ScaLAPACK's positions); `k > 0`: the leading minor of order k is not
///   positive definite, and the factorization stopped there (as
///   ScaLAPACK's); `FTLA_INFO_PROCESS_LOST` when a process was lost during
///   the call (the grid repaired, A undefined).
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn ftla_pdpotrf_(
    uplo: *const c_char,
    n: *const c_int,
    a: *mut f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    info: *mut c_int,
) {
    const R: Routine = plain("ftla_pdpotrf_", "ftla_pdpotrf", pdpotrf::DESCA);
    let arg = potrf_matrix(n, a, ia, ja, desca);
    let u = letter(uplo);
    let check = |grid: &Grid, ictxt: c_int, _: &_| -> Result<CholArgs> {
        // (ScaLAPACK's order: the descriptor, then UPLO.)
        let c = arg.check(R.name, grid, ictxt)?;
        let uplo = uplo_of(R.name, u)?;
        Ok(CholArgs { uplo, a: c.import(grid, R.name, a, false)?, a_arg: c, b: None, factors: true })
    };
    let arrays = [ArrayArg::new("A", pdpotrf::A, a, desca, Access::Update)];
    run(&R, info, &arrays, check, |ctx, p, _| {
        let done = chol::pdpotrf(ctx.region.grid(), p.uplo, &mut p.a);
        if factored(&done) {
            p.a_arg.export(&p.a, a);
        }
        done
    });
}

/// The shared body of `ftla_pdpotrs_` (`factor`: false) and
/// `ftla_pdposv_` (true).
#[allow(clippy::too_many_arguments)]
fn potrs_call(
    r: &Routine,
    factor: bool,
    uplo: *const c_char,
    n: *const c_int,
    nrhs: *const c_int,
    a: *mut f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    b: *mut f64,
    ib: *const c_int,
    jb: *const c_int,
    descb: *const c_int,
    info: *mut c_int,
) {
    let (a_arg, b_arg) =
        solve_matrices((pdpotrs::MATRIX_A, pdpotrs::MATRIX_B), n, nrhs, a, ia, ja, desca, b, ib, jb, descb);
    let u = letter(uplo);
    let check = |grid: &Grid, ictxt: c_int, _: &_| -> Result<CholArgs> {
        // (ScaLAPACK's order: the descriptors, then UPLO and NRHS.)
        let ca = a_arg.check(r.name, grid, ictxt)?;
        let cb = b_arg.check(r.name, grid, ictxt)?;
        let uplo = uplo_of(r.name, u)?;
        check_nrhs(r.name, pdpotrs::NRHS, get(nrhs))?;
        let bm = cb.import(grid, r.name, b, false)?;
        Ok(CholArgs { uplo, a: ca.import(grid, r.name, a, false)?, a_arg: ca, b: Some((cb, bm)), factors: factor })
    };
    let a_access = if factor { Access::Update } else { Access::Read };
    let arrays =
        [ArrayArg::new("A", pdpotrs::A, a, desca, a_access), ArrayArg::new("B", pdpotrs::B, b, descb, Access::Update)];
    run(r, info, &arrays, check, |ctx, p, _| {
        let grid = ctx.region.grid();
        let Some((b_arg, bm)) = p.b.as_mut() else { return Ok(()) };
        if factor {
            let done = chol::pdposv(grid, p.uplo, &mut p.a, bm);
            if factored(&done) {
                p.a_arg.export(&p.a, a);
            }
            done?;
        } else {
            chol::pdpotrs(grid, p.uplo, &p.a, bm)?;
        }
        b_arg.export(bm, b);
        Ok(())
    });
}

/// Solves `A·X = B` with the Cholesky factor from `ftla_pdpotrf_`
/// (ScaLAPACK `PDPOTRS`), ftla's own, not fault tolerant.
///
/// * `uplo` (global input): the triangle of A holding the factor, `"L"` or
///   `"U"` (as given to the factorization).
/// * `n`, `nrhs` (global input): the order of A and the number of
///   right-hand sides.
/// * `a`, `ia`, `ja`, `desca` (local input): the factor; IA = JA = 1,
///   MB_A = NB_A.
/// * `b`, `ib`, `jb`, `descb` (local input/output): the right-hand sides
///   on entry, the solution on exit; IB = JB = 1, B's rows in A's row
///   blocks (MB_B = MB_A).
/// * `info` (global output): as `ftla_pdpotrf_`; `FTLA_INFO_INPUT_LOST`
///   on every process when A is a factor that a replacement process did
///   not receive (nothing computed: factor again).
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn ftla_pdpotrs_(
    uplo: *const c_char,
    n: *const c_int,
    nrhs: *const c_int,
    a: *const f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    b: *mut f64,
    ib: *const c_int,
    jb: *const c_int,
    descb: *const c_int,
    info: *mut c_int,
) {
    const R: Routine = plain("ftla_pdpotrs_", "ftla_pdpotrs", pdpotrs::DESCA);
    potrs_call(&R, false, uplo, n, nrhs, a as *mut f64, ia, ja, desca, b, ib, jb, descb, info);
}

/// Factors the N×N symmetric positive definite A and solves `A·X = B`
/// (ScaLAPACK `PDPOSV`), ftla's own, not fault tolerant: the arguments of
/// `ftla_pdpotrs_`, A overwritten with the factor as `ftla_pdpotrf_`
/// does; INFO = k > 0 when the leading minor of order k is not positive
/// definite (B then unchanged).
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn ftla_pdposv_(
    uplo: *const c_char,
    n: *const c_int,
    nrhs: *const c_int,
    a: *mut f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    b: *mut f64,
    ib: *const c_int,
    jb: *const c_int,
    descb: *const c_int,
    info: *mut c_int,
) {
    const R: Routine = plain("ftla_pdposv_", "ftla_pdposv", pdpotrs::DESCA);
    potrs_call(&R, true, uplo, n, nrhs, a, ia, ja, desca, b, ib, jb, descb, info);
}
