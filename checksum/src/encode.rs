//! Local (one process) encoding kernels on column-major arrays.
//!
//! Checksums are row-wise sums: the local rows of `C_g` on a process are the sum of
//! the same local rows of the group's block columns. These kernels work on one
//! process's local rows; the distributed driver sums across its process row.
//! Results are compact (`ld = rows`); inputs may be strided (see [`crate::shape`]).

use crate::shape::{check_len, check_strided, compact_len, ShapeError};

/// Element-wise sum of equally long compact blocks.
///
/// Returns `None` when there is no block or the blocks do not all have the length of the
/// first (kept from the crate's first version; [`encode_group`] is the checked, strided form).
pub fn sum_blocks<'a>(blocks: impl IntoIterator<Item = &'a [f64]>) -> Option<Vec<f64>> {
    let mut it = blocks.into_iter();
    let mut acc = it.next()?.to_vec();
    for b in it {
        if b.len() != acc.len() {
            return None;
        }
        for (a, x) in acc.iter_mut().zip(b) {
            *a += x;
        }
    }
    Some(acc)
}

/// Checksum of a group on one process: the compact `rows × nb` sum of `blocks`, each a
/// strided `rows × nb` block with leading dimension `ld`. An empty group gives zeros.
pub fn encode_group(blocks: &[&[f64]], rows: usize, nb: usize, ld: usize) -> Result<Vec<f64>, ShapeError> {
    let mut acc = vec![0.0; compact_len(rows, nb)?];
    for b in blocks {
        add_block(&mut acc, b, rows, nb, ld)?;
    }
    Ok(acc)
}

/// `acc += x`, where `acc` is a compact `rows × cols` block and `x` a strided one with
/// leading dimension `ld`.
pub fn add_block(acc: &mut [f64], x: &[f64], rows: usize, cols: usize, ld: usize) -> Result<(), ShapeError> {
    axpy_block(acc, x, rows, cols, ld, 1.0)
}

/// `acc −= x`, where `acc` is a compact `rows × cols` block and `x` a strided one with
/// leading dimension `ld`.
pub fn sub_block(acc: &mut [f64], x: &[f64], rows: usize, cols: usize, ld: usize) -> Result<(), ShapeError> {
    axpy_block(acc, x, rows, cols, ld, -1.0)
}

/// `acc += alpha·x`, where `acc` is a compact `rows × cols` block and `x` a strided one
/// with leading dimension `ld` (a weighted checksum's term, or its removal with `−alpha`).
pub fn axpy_block(
    acc: &mut [f64],
    x: &[f64],
    rows: usize,
    cols: usize,
    ld: usize,
    alpha: f64,
) -> Result<(), ShapeError> {
    check_len(acc.len(), compact_len(rows, cols)?)?;
    check_strided(x.len(), rows, cols, ld)?;
    if rows == 0 {
        return Ok(());
    }
    for (j, acc_col) in acc.chunks_exact_mut(rows).enumerate() {
        for (a, v) in acc_col.iter_mut().zip(&x[j * ld..j * ld + rows]) {
            *a += alpha * v;
        }
    }
    Ok(())
}

/// The Ã (R-only) form of a strided `rows × cols` block whose local rows are the
/// consecutive global rows `row0_global ..` and whose columns are the global columns
/// `col0_global ..`: a compact copy with every entry strictly below the global diagonal
/// (global row > global column) set to zero.
pub fn r_only(
    block: &[f64],
    rows: usize,
    cols: usize,
    ld: usize,
    row0_global: usize,
    col0_global: usize,
) -> Result<Vec<f64>, ShapeError> {
    let global_rows: Vec<usize> = (row0_global..row0_global.saturating_add(rows)).collect();
    r_only_rows(block, rows, cols, ld, &global_rows, col0_global)
}

/// [`r_only`] for local rows that are not consecutive globally (a process's rows in a
/// block-cyclic distribution): local row `i` is global row `global_rows[i]`
/// (`global_rows.len()` must equal `rows`).
pub fn r_only_rows(
    block: &[f64],
    rows: usize,
    cols: usize,
    ld: usize,
    global_rows: &[usize],
    col0_global: usize,
) -> Result<Vec<f64>, ShapeError> {
    check_len(global_rows.len(), rows)?;
    let mut out = vec![0.0; compact_len(rows, cols)?];
    add_block(&mut out, block, rows, cols, ld)?;
    zero_below_diagonal(&mut out, rows, cols, global_rows, col0_global)?;
    Ok(out)
}

/// In place: zeroes the entries of a compact `rows × cols` block that lie strictly below
/// the global diagonal (local row `i` is global row `global_rows[i]`, column `j` is global
/// column `col0_global + j`).
pub fn zero_below_diagonal(
    block: &mut [f64],
    rows: usize,
    cols: usize,
    global_rows: &[usize],
    col0_global: usize,
) -> Result<(), ShapeError> {
    check_len(block.len(), compact_len(rows, cols)?)?;
    check_len(global_rows.len(), rows)?;
    if rows == 0 {
        return Ok(());
    }
    for (j, col) in block.chunks_exact_mut(rows).enumerate() {
        let gc = col0_global.saturating_add(j);
        for (v, &gr) in col.iter_mut().zip(global_rows) {
            if gr > gc {
                *v = 0.0;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sum_blocks_sums_and_rejects_mismatches() {
        let s = sum_blocks([&[1.0, 2.0][..], &[3.0, -1.0][..]]).unwrap();
        assert_eq!(s, vec![4.0, 1.0]);
        assert!(sum_blocks([&[1.0][..], &[1.0, 2.0][..]]).is_none());
        assert!(sum_blocks(std::iter::empty::<&[f64]>()).is_none());
    }

    #[test]
    fn encode_group_sums_strided_blocks() {
        // Two 2×2 blocks stored with ld = 3 (third row is foreign data).
        let a = [1.0, 2.0, 99.0, 3.0, 4.0];
        let b = [10.0, 20.0, -99.0, 30.0, 40.0, 77.0];
        let c = encode_group(&[&a, &b], 2, 2, 3).unwrap();
        assert_eq!(c, vec![11.0, 22.0, 33.0, 44.0]);
        assert_eq!(encode_group(&[], 2, 3, 2).unwrap(), vec![0.0; 6]);
        assert_eq!(encode_group(&[&a[..4]], 2, 2, 3), Err(ShapeError::BufferTooShort { needed: 5, len: 4 }));
        assert_eq!(encode_group(&[&a], 4, 2, 3), Err(ShapeError::LeadingDimTooSmall { ld: 3, rows: 4 }));
        assert_eq!(encode_group(&[&a], usize::MAX, 2, 3), Err(ShapeError::Overflow));
    }

    #[test]
    fn add_and_sub_are_inverse() {
        let x = [1.5, -2.0, 0.0, 7.0, 3.25, 0.0];
        let mut acc = vec![0.5, 0.25, 1.0, 2.0];
        let orig = acc.clone();
        add_block(&mut acc, &x, 2, 2, 3).unwrap();
        assert_eq!(acc, vec![2.0, -1.75, 8.0, 5.25]);
        sub_block(&mut acc, &x, 2, 2, 3).unwrap();
        assert_eq!(acc, orig);
        assert_eq!(add_block(&mut acc, &x, 3, 2, 3), Err(ShapeError::LengthMismatch { expected: 6, found: 4 }));
        assert!(sub_block(&mut acc, &x[..3], 2, 2, 3).is_err());
        add_block(&mut [], &[], 0, 5, 0).unwrap();
    }

    #[test]
    fn r_only_zeroes_strictly_below_the_global_diagonal() {
        // A 3×2 block at global rows 4..7, columns 5..7: (4,5) (4,6) kept, (5,5) kept (diagonal),
        // (6,5) zeroed, (5,6) (6,6) kept.
        let block = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        assert_eq!(r_only(&block, 3, 2, 3, 4, 5).unwrap(), vec![1.0, 2.0, 0.0, 4.0, 5.0, 6.0]);
        // Non-consecutive rows (block-cyclic): rows 0 and 8 of columns 1..3.
        let r = r_only_rows(&[1.0, 2.0, 3.0, 4.0], 2, 2, 2, &[0, 8], 1).unwrap();
        assert_eq!(r, vec![1.0, 0.0, 3.0, 0.0]);
        // Blocks entirely above the diagonal are unchanged; entirely below become zero.
        assert_eq!(r_only(&block, 3, 2, 3, 0, 10).unwrap(), block.to_vec());
        assert_eq!(r_only(&block, 3, 2, 3, 10, 0).unwrap(), vec![0.0; 6]);
        assert!(r_only_rows(&block, 3, 2, 3, &[0, 1], 0).is_err());
        assert!(r_only(&block, 3, 3, 3, 0, 0).is_err());
        let mut b = vec![1.0; 4];
        assert!(zero_below_diagonal(&mut b, 2, 2, &[0], 0).is_err());
        zero_below_diagonal(&mut b, 2, 2, &[1, 2], 1).unwrap();
        assert_eq!(b, vec![1.0, 0.0, 1.0, 1.0]);
    }
}
