//! Argument checking and argument errors, ftla's `PXERBLA` and `CHK1MAT`.
//!
//! ScaLAPACK checks a routine's arguments before it computes anything.
//! `CHK1MAT` checks a matrix argument `(M, N, IA, JA, DESCA)` against its
//! descriptor; the routine's own tests cover the rest; the first failing
//! argument is reported by `PXERBLA` as a negative `INFO`:
//!
//! * `INFO = -(i·100 + j)` when entry `j` of the descriptor that is
//!   argument `i` is wrong (for instance `-606`: `NB_A`, entry 6 of
//!   `DESCA`, argument 6 of `PDGEQRF`);
//! * `INFO = -i` when argument `i` itself is wrong.
//!
//! Here an argument error is an [`Error::Argument`] built by
//! [`arg_error`] ([`Error::info`] gives its `INFO`); the descriptor entry
//! numbers are [`entry`]'s and the argument positions of each routine are
//! named in its module (for instance [`pdgeqrf::DESCA`]). The checks every
//! routine shares are here, written once: a matrix on the caller's grid
//! ([`check_grid`]), square blocks ([`check_square_blocks`]), the first
//! block on process (0, 0) ([`check_first_block_at_origin`]) and the two
//! process columns of the fault-tolerant routines
//! ([`check_two_process_columns`]); [`chk1mat`] checks a submatrix
//! `(M, N, IA, JA)` against its descriptor for the C ABI, which reports
//! every argument through these functions.
//!
//! The checks are local: each process checks what it holds, and the
//! routine agrees on the verdict (`crate::error::agree_on_arguments`), so
//! that every process returns the same error, as ScaLAPACK's `PXERBLA`
//! after a `PCHK1MAT` global check.

mod checks;
mod chk1mat;
pub mod entry;
mod positions;

pub use checks::{
    check_first_block_at_origin, check_grid, check_rhs_rows, check_square_blocks, check_two_process_columns,
};
pub use chk1mat::{chk1mat, MatrixPositions, Submatrix};
pub use positions::{
    cholesky_residual, lu_residual, pdcg, pdgels, pdgemm, pdgeqrf, pdgetrf, pdgetrs, pdlaswp, pdormqr, pdpotrf,
    pdpotrs, upper_solve,
};

use crate::descriptor::DescError;
use crate::error::Error;

/// The error of argument `position` (1-based, in the routine's ScaLAPACK
/// argument list) of `routine`, ScaLAPACK's `PXERBLA`.
///
/// * `entry`: the descriptor entry at fault (1-based, see [`entry`]) when
///   argument `position` is a descriptor, 0 otherwise; `INFO` is then
///   `-(position·100 + entry)`, or `-position` for 0.
/// * `name`: what is wrong, as ScaLAPACK's documentation names it (`"M"`,
///   `"NB_A"`, `"IPIV"`).
/// * `reason`: why, phrased to follow the name ("must be positive, got 0").
pub fn arg_error(routine: &str, position: u32, entry: u32, name: &str, reason: impl Into<String>) -> Error {
    Error::Argument { routine: routine.into(), position, entry, name: name.into(), reason: reason.into() }
}

/// The argument error of a descriptor (argument `position` of `routine`)
/// that [`crate::descriptor::Descriptor`]'s validation refused: the
/// rejected entry is `e`'s. Its name is the entry's (`"NB"`), or, with
/// `matrix`, the entry's for that matrix (`"NB_A"`).
pub fn descriptor_error(routine: &str, position: u32, matrix: Option<&str>, e: &DescError) -> Error {
    let name = match matrix {
        Some(m) => format!("{}_{m}", e.arg),
        None => e.arg.to_string(),
    };
    arg_error(routine, position, e.index, &name, e.reason.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::descriptor::Descriptor;

    #[test]
    fn a_refused_descriptor_entry_is_its_info() {
        let e = Descriptor::new(4, 4, 2, 0, 0, 0, 2, 0, 1, 1, 0).unwrap_err();
        let err = descriptor_error("pdgeqrf", pdgeqrf::DESCA, Some("A"), &e);
        assert_eq!(err.info(), -606);
        assert!(err.to_string().contains("NB_A"), "{err}");
        assert_eq!(arg_error("pdgetrs", pdgetrs::IPIV, 0, "IPIV", "x").info(), -8);
    }
}
