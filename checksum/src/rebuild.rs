//! Rebuilding a lost process's blocks from checksums and survivors.
//!
//! A lost data block is `checksum − Σ survivors` ([`rebuild_lost_block`]), with
//! the survivors' sum formed by [`crate::encode::encode_group`] /
//! [`crate::encode::add_block`] (R-only parts via [`crate::encode::r_only_rows`]
//! where the scheme says so). A lost checksum copy is copied from its duplicate
//! ([`restore_from_duplicate`]). Whether a set of losses can be repaired at all
//! is decided by [`check_recoverable`]: one loss per process row is the limit.

use crate::shape::{check_len, ShapeError};
use std::collections::BTreeMap;
use std::fmt;

/// Why a rebuild cannot (or must not) be done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RebuildError {
    /// Buffers of different lengths.
    Shape(ShapeError),
    /// Two or more processes of one process row are lost: each row-wise checksum
    /// relation has two unknowns, so the lost blocks cannot be determined.
    TwoLossesInProcessRow {
        /// The process row.
        row: usize,
        /// The lost process columns in that row (sorted, at least two).
        process_cols: Vec<usize>,
    },
}

impl fmt::Display for RebuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RebuildError::Shape(e) => write!(f, "cannot rebuild lost block: {e}"),
            RebuildError::TwoLossesInProcessRow { row, process_cols } => write!(
                f,
                "unrecoverable: {} processes lost in process row {row} (process columns {process_cols:?}); \
                 the checksums tolerate one loss per process row",
                process_cols.len()
            ),
        }
    }
}

impl std::error::Error for RebuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RebuildError::Shape(e) => Some(e),
            RebuildError::TwoLossesInProcessRow { .. } => None,
        }
    }
}

impl From<ShapeError> for RebuildError {
    fn from(e: ShapeError) -> Self {
        RebuildError::Shape(e)
    }
}

/// The lost block `checksum − sum_of_survivors` (compact buffers of equal length).
pub fn rebuild_lost_block(checksum: &[f64], sum_of_survivors: &[f64]) -> Result<Vec<f64>, RebuildError> {
    check_len(sum_of_survivors.len(), checksum.len())?;
    Ok(checksum.iter().zip(sum_of_survivors).map(|(c, s)| c - s).collect())
}

/// Restores a lost checksum copy: `lost ← duplicate` (equal lengths).
pub fn restore_from_duplicate(lost: &mut [f64], duplicate: &[f64]) -> Result<(), RebuildError> {
    check_len(duplicate.len(), lost.len())?;
    lost.copy_from_slice(duplicate);
    Ok(())
}

/// Checks that a set of lost processes (grid coordinates `(pr, pc)`; duplicates count once)
/// can be rebuilt: at most one loss per process row. Reports the lowest offending row.
pub fn check_recoverable(lost: &[(usize, usize)]) -> Result<(), RebuildError> {
    let mut by_row: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &(pr, pc) in lost {
        let cols = by_row.entry(pr).or_default();
        if !cols.contains(&pc) {
            cols.push(pc);
        }
    }
    match by_row.into_iter().find(|(_, cols)| cols.len() > 1) {
        Some((row, mut process_cols)) => {
            process_cols.sort_unstable();
            Err(RebuildError::TwoLossesInProcessRow { row, process_cols })
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::sum_blocks;

    #[test]
    fn a_lost_block_is_rebuilt_from_the_sum_and_the_survivors() {
        let a = [1.0, 2.0, 3.0];
        let b = [-4.0, 0.5, 8.0];
        let c = [0.25, 7.0, -1.0];
        let sum = sum_blocks([&a[..], &b[..], &c[..]]).unwrap();
        let survivors = sum_blocks([&a[..], &c[..]]).unwrap();
        let rebuilt = rebuild_lost_block(&sum, &survivors).unwrap();
        for (x, y) in rebuilt.iter().zip(b) {
            approx::assert_abs_diff_eq!(*x, y, epsilon = 1e-15 * 8.0);
        }
    }

    #[test]
    fn mismatched_lengths_are_rejected() {
        let e = rebuild_lost_block(&[1.0, 2.0], &[1.0]).unwrap_err();
        assert_eq!(e, RebuildError::Shape(ShapeError::LengthMismatch { expected: 2, found: 1 }));
        assert!(e.to_string().contains("cannot rebuild") && std::error::Error::source(&e).is_some());
        assert!(restore_from_duplicate(&mut [0.0; 2], &[1.0]).is_err());
    }

    #[test]
    fn copies_are_restored_from_duplicates() {
        let mut lost = [f64::NAN; 3];
        restore_from_duplicate(&mut lost, &[1.0, -2.0, 3.5]).unwrap();
        assert_eq!(lost, [1.0, -2.0, 3.5]);
    }

    #[test]
    fn one_loss_per_process_row_is_the_limit() {
        assert_eq!(check_recoverable(&[]), Ok(()));
        assert_eq!(check_recoverable(&[(0, 1), (1, 1), (2, 0)]), Ok(()));
        assert_eq!(check_recoverable(&[(1, 2), (1, 2)]), Ok(()));
        let e = check_recoverable(&[(2, 3), (0, 1), (2, 0), (1, 1), (1, 0)]).unwrap_err();
        assert_eq!(e, RebuildError::TwoLossesInProcessRow { row: 1, process_cols: vec![0, 1] });
        assert!(e.to_string().contains("process row 1") && std::error::Error::source(&e).is_none());
    }
}
