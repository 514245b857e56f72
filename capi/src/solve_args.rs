//! The argument pieces the plain and the fault-tolerant solves share.

use crate::matrix::MatrixArg;
use crate::tools::get;
use scalapack_ft::args::{arg_error, pdgetrs, MatrixPositions};
use scalapack_ft::lu::Transpose;
use scalapack_ft::{Error, Result};
use std::os::raw::{c_char, c_int};

/// The character an argument points to, in upper case (0 for NULL).
pub(crate) fn letter(p: *const c_char) -> u8 {
    if p.is_null() {
        0
    } else {
        // SAFETY: the caller passes a pointer to a character.
        (unsafe { *p } as u8).to_ascii_uppercase()
    }
}

/// The error (local) of an array argument (a matrix's local array, IPIV,
/// TAU; ScaLAPACK's argument `position`) that is a null pointer on a
/// process that holds a part of it.
pub(crate) fn null_part(routine: &str, position: u32, name: &str) -> Error {
    arg_error(routine, position, 0, name, "is a null pointer, but this process holds a part of it")
}

/// Checks a number of right-hand sides `nrhs` (global), ScaLAPACK's
/// argument `position`: `Err` when negative.
pub(crate) fn check_nrhs(routine: &str, position: u32, nrhs: c_int) -> Result<()> {
    if nrhs < 0 {
        return Err(arg_error(routine, position, 0, "NRHS", format!("must be non-negative, got {nrhs}")));
    }
    Ok(())
}

/// PDGETRS's TRANS (global), the letter `t`: `'N'`, or `'T'`/`'C'` for the
/// transposed system.
pub(crate) fn getrs_transpose(routine: &str, t: u8) -> Result<Transpose> {
    match t {
        b'N' => Ok(Transpose::NoTrans),
        b'T' | b'C' => Ok(Transpose::Trans),
        _ => Err(arg_error(routine, pdgetrs::TRANS, 0, "TRANS", "must be 'N', 'T' or 'C'")),
    }
}

/// PDGETRS's matrix arguments: A (N×N, square blocks) and B (N×NRHS), as
/// the caller passed them (local pointers to global scalars and to the
/// local arrays).
#[allow(clippy::too_many_arguments)]
pub(crate) fn getrs_matrices(
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
) -> (MatrixArg, MatrixArg) {
    solve_matrices((pdgetrs::MATRIX_A, pdgetrs::MATRIX_B), n, nrhs, a, ia, ja, desca, b, ib, jb, descb)
}

/// A solve's matrix arguments at `at` (A's and B's positions in its
/// argument list): A (N×N, square blocks) and B (N×NRHS), as the caller
/// passed them.
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve_matrices(
    at: (MatrixPositions, MatrixPositions),
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
) -> (MatrixArg, MatrixArg) {
    let a_arg = MatrixArg {
        name: "A",
        m: get(n),
        n: get(n),
        ia: get(ia),
        ja: get(ja),
        desc: desca,
        data: a,
        at: at.0,
        square_blocks: true,
    };
    let b_arg = MatrixArg {
        name: "B",
        m: get(n),
        n: get(nrhs),
        ia: get(ib),
        ja: get(jb),
        desc: descb,
        data: b,
        at: at.1,
        square_blocks: false,
    };
    (a_arg, b_arg)
}
