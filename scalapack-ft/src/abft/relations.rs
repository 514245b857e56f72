//! Which checksum relation covers each entry of a block column: the one
//! difference between the factorizations' checksums that the encoding,
//! the rebuild and the verification must know.

use std::ops::Range;

/// The entries of the matrix that the C, D and U relations cover.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Relations {
    /// QR and LU: every entry, in C or D. C covers unfinished columns
    /// whole and the entries on and above the diagonal of finished ones
    /// (R, U); D the entries strictly below the diagonal of finished
    /// columns (V, L).
    #[default]
    Whole,
    /// Cholesky (lower): C covers the lower triangle (the diagonal
    /// included) of unfinished columns; D the same entries of finished
    /// columns (L); U the strictly upper triangle, which the factorization
    /// does not reference (as ScaLAPACK's PDPOTRF) and never changes, so
    /// that a replacement gets it back as the program had it. U's sums
    /// are apart from the others' so that whatever the program keeps
    /// there (a copy of A, or entries never set, NaN and Inf included)
    /// cannot spoil the rebuild of L or of the trailing matrix.
    LowerTriangle,
}

/// The local rows of one global column in each relation (ranges of the
/// local rows; together every row, each in one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Parts {
    pub c: Range<usize>,
    pub d: Range<usize>,
    pub upper: Range<usize>,
}

impl Relations {
    /// The local rows of global column `gj` in the C, D and U relations,
    /// `rows` the local rows' global indices (ascending), at `done_cols`
    /// finished columns.
    pub(crate) fn parts(self, rows: &[usize], gj: usize, done_cols: usize) -> Parts {
        let lr = rows.len();
        let finished = gj < done_cols;
        match self {
            Relations::Whole if finished => {
                let below = rows.partition_point(|&gi| gi <= gj);
                Parts { c: 0..below, d: below..lr, upper: 0..0 }
            }
            Relations::Whole => Parts { c: 0..lr, d: lr..lr, upper: 0..0 },
            Relations::LowerTriangle => {
                let diagonal = rows.partition_point(|&gi| gi < gj);
                let (c, d) = if finished { (lr..lr, diagonal..lr) } else { (diagonal..lr, lr..lr) };
                Parts { c, d, upper: 0..diagonal }
            }
        }
    }

    /// The sums each checksum holder keeps beside its C replica, each
    /// local rows × nb, one after the other in one array: D, and for
    /// Cholesky U.
    pub(crate) fn side_sums(self) -> usize {
        match self {
            Relations::Whole => 1,
            Relations::LowerTriangle => 2,
        }
    }

    /// Whether the side sums are zero until a column of their group is
    /// finished (the whole matrix's); Cholesky's U holds the upper
    /// triangle from the start.
    pub(crate) fn side_starts_zero(self) -> bool {
        self == Relations::Whole
    }

    /// The first local row of column `gj`'s left factor once it is
    /// finished (`rows` as in [`Relations::parts`]).
    pub(crate) fn left_factor_start(self, rows: &[usize], gj: usize) -> usize {
        match self {
            Relations::Whole => rows.partition_point(|&gi| gi <= gj),
            Relations::LowerTriangle => rows.partition_point(|&gi| gi < gj),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(c: Range<usize>, d: Range<usize>, upper: Range<usize>) -> Parts {
        Parts { c, d, upper }
    }

    #[test]
    fn every_entry_is_in_one_relation() {
        let rows = [0, 1, 4, 5, 8, 9];
        // Column 4: finished or not.
        assert_eq!(Relations::Whole.parts(&rows, 4, 8), parts(0..3, 3..6, 0..0));
        assert_eq!(Relations::Whole.parts(&rows, 4, 4), parts(0..6, 6..6, 0..0));
        assert_eq!(Relations::LowerTriangle.parts(&rows, 4, 8), parts(6..6, 2..6, 0..2));
        assert_eq!(Relations::LowerTriangle.parts(&rows, 4, 4), parts(2..6, 6..6, 0..2));
        assert_eq!(Relations::Whole.left_factor_start(&rows, 4), 3);
        assert_eq!(Relations::LowerTriangle.left_factor_start(&rows, 4), 2);
        for r in [Relations::Whole, Relations::LowerTriangle] {
            for gj in 0..11 {
                for done in [0, 4, 8, 12] {
                    let p = r.parts(&rows, gj, done);
                    let mut covered = [0; 6];
                    for li in p.c.chain(p.d).chain(p.upper) {
                        covered[li] += 1;
                    }
                    assert_eq!(covered, [1; 6], "{r:?} column {gj} at {done} finished columns");
                }
            }
        }
    }
}
