//! Which checksum relation covers each entry of a block column: the one
//! difference between the factorizations' checksums that the encoding,
//! the rebuild and the verification must know.

use std::ops::Range;

/// The entries of the matrix that the C and D relations cover.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Relations {
    /// QR and LU: every entry. C covers unfinished columns whole and the
    /// entries on and above the diagonal of finished ones (R, U); D the
    /// entries strictly below the diagonal of finished columns (V, L).
    #[default]
    Whole,
    /// Cholesky (lower): C covers the lower triangle (the diagonal
    /// included) of unfinished columns; D the rest — the finished columns
    /// (L) and the strictly upper triangle, which the factorization does
    /// not reference (as ScaLAPACK's PDPOTRF) and never changes, so that a
    /// replacement gets it back as the program had it.
    LowerTriangle,
}

impl Relations {
    /// The local rows of global column `gj` in the C relation and in the
    /// D relation, `rows` the local rows' global indices (ascending), at
    /// `done_cols` finished columns: each a range, together every row.
    pub fn rows(self, rows: &[usize], gj: usize, done_cols: usize) -> (Range<usize>, Range<usize>) {
        let lr = rows.len();
        let finished = gj < done_cols;
        match self {
            Relations::Whole if finished => {
                let below = rows.partition_point(|&gi| gi <= gj);
                (0..below, below..lr)
            }
            Relations::Whole => (0..lr, lr..lr),
            Relations::LowerTriangle if finished => (lr..lr, 0..lr),
            Relations::LowerTriangle => {
                let diagonal = rows.partition_point(|&gi| gi < gj);
                (diagonal..lr, 0..diagonal)
            }
        }
    }

    /// Whether D is zero until a column of its group is finished (the
    /// whole matrix's); Cholesky's holds the upper triangle from the start.
    pub fn d_starts_zero(self) -> bool {
        self == Relations::Whole
    }

    /// The first local row of column `gj`'s left factor once it is
    /// finished (`rows` as in [`Relations::rows`]).
    pub fn left_factor_start(self, rows: &[usize], gj: usize) -> usize {
        match self {
            Relations::Whole => rows.partition_point(|&gi| gi <= gj),
            Relations::LowerTriangle => rows.partition_point(|&gi| gi < gj),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_is_in_one_relation() {
        let rows = [0, 1, 4, 5, 8, 9];
        // Column 4: finished or not.
        assert_eq!(Relations::Whole.rows(&rows, 4, 8), (0..3, 3..6));
        assert_eq!(Relations::Whole.rows(&rows, 4, 4), (0..6, 6..6));
        assert_eq!(Relations::LowerTriangle.rows(&rows, 4, 8), (6..6, 0..6));
        assert_eq!(Relations::LowerTriangle.rows(&rows, 4, 4), (2..6, 0..2));
        assert_eq!(Relations::Whole.left_factor_start(&rows, 4), 3);
        assert_eq!(Relations::LowerTriangle.left_factor_start(&rows, 4), 2);
    }
}
