//! Checking a checksum relation `checksum ≈ Σ blocks` in floating point.
//!
//! The tolerance is
//!
//! ```text
//! tol = tol_factor · eps · max(1, norm_scale) · summed_blocks
//! ```
//!
//! with `eps = f64::EPSILON` (2⁻⁵²). `norm_scale` is a norm of the data the
//! checksum was built from (e.g. `‖A‖_F`, which orthogonal transformations
//! preserve); `summed_blocks` (counted as at least 1) accounts for the rounding
//! of the sum itself; `tol_factor` absorbs the growth of rounding errors with the
//! number of updates the checksum went through (a few times the matrix dimension
//! is typical for a factorization).

use crate::shape::{check_len, ShapeError};
use std::fmt;

/// Outcome of [`verify_relation`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verification {
    /// Largest `|checksum − sum|` over all entries (`+∞` if a difference is NaN or infinite).
    pub max_abs_diff: f64,
    /// The tolerance it was compared with (see the module docs).
    pub tolerance: f64,
    /// `max_abs_diff ≤ tolerance`.
    pub ok: bool,
    /// Row of the worst entry (0 for an empty block).
    pub worst_row: usize,
    /// Column of the worst entry (0 for an empty block).
    pub worst_col: usize,
}

/// Why a relation could not be checked.
#[derive(Debug, Clone, PartialEq)]
pub enum VerifyError {
    /// The two buffers or the row count do not fit together.
    Shape(ShapeError),
    /// `tol_factor` or `norm_scale` is negative or NaN.
    InvalidTolerance {
        /// The tolerance factor given.
        tol_factor: f64,
        /// The norm scale given.
        norm_scale: f64,
    },
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerifyError::Shape(e) => write!(f, "cannot verify checksum relation: {e}"),
            VerifyError::InvalidTolerance { tol_factor, norm_scale } => write!(
                f,
                "invalid tolerance: tol_factor = {tol_factor} and norm_scale = {norm_scale} must be non-negative numbers"
            ),
        }
    }
}

impl std::error::Error for VerifyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            VerifyError::Shape(e) => Some(e),
            VerifyError::InvalidTolerance { .. } => None,
        }
    }
}

impl From<ShapeError> for VerifyError {
    fn from(e: ShapeError) -> Self {
        VerifyError::Shape(e)
    }
}

/// The tolerance `tol_factor · eps · max(1, norm_scale) · max(1, summed_blocks)`.
pub fn tolerance(norm_scale: f64, tol_factor: f64, summed_blocks: usize) -> f64 {
    tol_factor * f64::EPSILON * norm_scale.max(1.0) * summed_blocks.max(1) as f64
}

/// Compares a compact `rows × (len/rows)` checksum with the sum of the blocks it encodes.
///
/// `summed_blocks` is the number of blocks in the sum; the tolerance is
/// [`tolerance`]`(norm_scale, tol_factor, summed_blocks)`. Errors when the buffers differ
/// in length, when their length is not a multiple of `rows` (`rows = 0` requires empty
/// buffers), or when `norm_scale` / `tol_factor` is negative or NaN.
pub fn verify_relation(
    checksum: &[f64],
    sum_of_blocks: &[f64],
    rows: usize,
    summed_blocks: usize,
    norm_scale: f64,
    tol_factor: f64,
) -> Result<Verification, VerifyError> {
    check_len(sum_of_blocks.len(), checksum.len())?;
    // A whole number of columns (`rows = 0`: no entries at all).
    let whole_columns = checksum.len().checked_div(rows).map_or(0, |cols| cols * rows);
    check_len(checksum.len(), whole_columns)?;
    if tol_factor.is_nan() || tol_factor < 0.0 || norm_scale.is_nan() || norm_scale < 0.0 {
        return Err(VerifyError::InvalidTolerance { tol_factor, norm_scale });
    }
    let tol = tolerance(norm_scale, tol_factor, summed_blocks);
    let (mut max_abs_diff, mut worst) = (0.0f64, 0usize);
    for (i, (c, s)) in checksum.iter().zip(sum_of_blocks).enumerate() {
        let d = (c - s).abs();
        let d = if d.is_nan() { f64::INFINITY } else { d };
        if d > max_abs_diff {
            max_abs_diff = d;
            worst = i;
        }
    }
    let (worst_row, worst_col) = if rows == 0 { (0, 0) } else { (worst % rows, worst / rows) };
    Ok(Verification { max_abs_diff, tolerance: tol, ok: max_abs_diff <= tol, worst_row, worst_col })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_and_rounded_relations_pass() {
        let c = [1.0, 2.0, 3.0, 4.0];
        let v = verify_relation(&c, &c, 2, 3, 10.0, 4.0).unwrap();
        assert!(v.ok);
        assert_eq!(v.max_abs_diff, 0.0);
        assert_eq!(v.tolerance, 4.0 * f64::EPSILON * 10.0 * 3.0);
        let s = [1.0 + 2.0 * f64::EPSILON, 2.0, 3.0, 4.0];
        assert!(verify_relation(&c, &s, 2, 1, 0.5, 4.0).unwrap().ok);
    }

    #[test]
    fn the_worst_entry_is_reported() {
        let c = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let s = [1.0, 2.0, 3.0, 4.0, 5.5, 6.0];
        let v = verify_relation(&c, &s, 2, 2, 1.0, 10.0).unwrap();
        assert!(!v.ok);
        assert_eq!(v.max_abs_diff, 0.5);
        assert_eq!((v.worst_row, v.worst_col), (0, 2));
    }

    #[test]
    fn nan_fails() {
        let v = verify_relation(&[1.0, f64::NAN], &[1.0, 1.0], 1, 1, 1.0, 1e6).unwrap();
        assert!(!v.ok);
        assert_eq!(v.max_abs_diff, f64::INFINITY);
        assert_eq!((v.worst_row, v.worst_col), (0, 1));
    }

    #[test]
    fn tolerance_scales_with_norm_and_blocks() {
        assert_eq!(tolerance(0.1, 2.0, 0), 2.0 * f64::EPSILON);
        assert_eq!(tolerance(100.0, 2.0, 4), 2.0 * f64::EPSILON * 400.0);
    }

    #[test]
    fn bad_inputs_are_errors() {
        assert_eq!(
            verify_relation(&[1.0], &[1.0, 2.0], 1, 1, 1.0, 1.0),
            Err(VerifyError::Shape(ShapeError::LengthMismatch { expected: 1, found: 2 }))
        );
        assert!(verify_relation(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0], 2, 1, 1.0, 1.0).is_err());
        assert!(verify_relation(&[1.0], &[1.0], 0, 1, 1.0, 1.0).is_err());
        assert!(verify_relation(&[1.0], &[1.0], 1, 1, f64::NAN, 1.0).is_err());
        let e = verify_relation(&[1.0], &[1.0], 1, 1, 1.0, -1.0).unwrap_err();
        assert!(e.to_string().contains("tol_factor = -1"));
        assert!(std::error::Error::source(&e).is_none());
        let e = VerifyError::from(ShapeError::Overflow);
        assert!(std::error::Error::source(&e).is_some() && e.to_string().contains("overflow"));
        let v = verify_relation(&[], &[], 0, 0, 1.0, 1.0).unwrap();
        assert!(v.ok && v.worst_row == 0 && v.worst_col == 0);
    }
}
