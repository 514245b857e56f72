//! Shape checks for the column-major buffers the kernels read and write.
//!
//! A *strided block* is `rows × cols` entries of a column-major array with
//! leading dimension `ld` (entry `(i, j)` at `i + j·ld`), as in BLAS/LAPACK.
//! A *compact block* is a strided block with `ld = rows`. Every kernel of this
//! crate checks its buffers with [`check_strided`] / [`check_len`] and returns
//! a [`ShapeError`] instead of indexing out of bounds.

use std::fmt;

/// A buffer does not have the shape a kernel was asked to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShapeError {
    /// The leading dimension is smaller than the number of rows.
    LeadingDimTooSmall {
        /// The leading dimension given.
        ld: usize,
        /// The number of rows it must cover.
        rows: usize,
    },
    /// A strided buffer is too short for `rows × cols` entries with its leading dimension.
    BufferTooShort {
        /// Entries needed: `(cols − 1)·ld + rows` (0 for an empty block).
        needed: usize,
        /// Entries present.
        len: usize,
    },
    /// Two buffers that must have the same number of entries do not.
    LengthMismatch {
        /// Entries expected.
        expected: usize,
        /// Entries found.
        found: usize,
    },
    /// `rows × cols` (or the strided extent) does not fit in `usize`.
    Overflow,
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShapeError::LeadingDimTooSmall { ld, rows } => {
                write!(f, "leading dimension {ld} is smaller than the number of rows {rows}")
            }
            ShapeError::BufferTooShort { needed, len } => {
                write!(f, "buffer holds {len} entries but the block needs {needed}")
            }
            ShapeError::LengthMismatch { expected, found } => {
                write!(f, "buffer holds {found} entries, expected {expected}")
            }
            ShapeError::Overflow => write!(f, "block dimensions overflow usize"),
        }
    }
}

impl std::error::Error for ShapeError {}

/// Number of entries of a compact `rows × cols` block, or [`ShapeError::Overflow`].
pub fn compact_len(rows: usize, cols: usize) -> Result<usize, ShapeError> {
    rows.checked_mul(cols).ok_or(ShapeError::Overflow)
}

/// Checks that `len` entries hold a strided `rows × cols` block with leading dimension `ld`
/// (`ld ≥ rows` and `len ≥ (cols − 1)·ld + rows` when the block is not empty).
pub fn check_strided(len: usize, rows: usize, cols: usize, ld: usize) -> Result<(), ShapeError> {
    if ld < rows {
        return Err(ShapeError::LeadingDimTooSmall { ld, rows });
    }
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    let needed = (cols - 1).checked_mul(ld).and_then(|x| x.checked_add(rows)).ok_or(ShapeError::Overflow)?;
    if len < needed {
        return Err(ShapeError::BufferTooShort { needed, len });
    }
    Ok(())
}

/// Checks that a buffer has exactly `expected` entries.
pub fn check_len(found: usize, expected: usize) -> Result<(), ShapeError> {
    if found != expected {
        return Err(ShapeError::LengthMismatch { expected, found });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_blocks_are_checked() {
        assert_eq!(check_strided(0, 0, 5, 0), Ok(()));
        assert_eq!(check_strided(0, 3, 0, 3), Ok(()));
        assert_eq!(check_strided(8, 3, 2, 5), Ok(()));
        assert_eq!(check_strided(7, 3, 2, 5), Err(ShapeError::BufferTooShort { needed: 8, len: 7 }));
        assert_eq!(check_strided(100, 3, 2, 2), Err(ShapeError::LeadingDimTooSmall { ld: 2, rows: 3 }));
        assert_eq!(check_strided(100, 1, usize::MAX, usize::MAX), Err(ShapeError::Overflow));
    }

    #[test]
    fn lengths_are_checked() {
        assert_eq!(check_len(4, 4), Ok(()));
        assert_eq!(check_len(3, 4), Err(ShapeError::LengthMismatch { expected: 4, found: 3 }));
        assert_eq!(compact_len(3, 4), Ok(12));
        assert_eq!(compact_len(usize::MAX, 2), Err(ShapeError::Overflow));
    }

    #[test]
    fn errors_have_messages() {
        let e = ShapeError::BufferTooShort { needed: 8, len: 7 };
        assert!(e.to_string().contains("needs 8"));
        assert!(ShapeError::Overflow.to_string().contains("overflow"));
    }
}
