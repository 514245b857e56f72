//! # checksum — ABFT encodings for ftla
//!
//! The algorithm-based fault tolerance of the QR and LU drivers: where the
//! reverse-neighboring checksum pairs of each group of Q block columns live,
//! how they are encoded (row-wise sums along process rows), verified, and how
//! a lost process's blocks are rebuilt from the survivors and the checksums.
//! The math here touches no MPI, so it is tested without `mpiexec`.
//!
//! Status: the layout and rebuild code arrive with the fault-tolerant QR
//! (`pdgeqrf_ft`); this crate currently holds the local, MPI-free kernels
//! they are built from.

/// Element-wise sum of equally long blocks: the checksum of a group.
///
/// Returns `None` when the blocks do not all have the length of the first.
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

/// Rebuilds a lost block as `checksum − Σ survivors`.
///
/// Returns `None` when the lengths differ.
pub fn rebuild_lost_block<'a>(checksum: &[f64], survivors: impl IntoIterator<Item = &'a [f64]>) -> Option<Vec<f64>> {
    let mut lost = checksum.to_vec();
    for b in survivors {
        if b.len() != lost.len() {
            return None;
        }
        for (l, x) in lost.iter_mut().zip(b) {
            *l -= x;
        }
    }
    Some(lost)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_block_is_rebuilt_from_the_sum_and_the_survivors() {
        let a = [1.0, 2.0, 3.0];
        let b = [-4.0, 0.5, 8.0];
        let c = [0.25, 7.0, -1.0];
        let sum = sum_blocks([&a[..], &b[..], &c[..]]).unwrap();
        let rebuilt = rebuild_lost_block(&sum, [&a[..], &c[..]]).unwrap();
        for (x, y) in rebuilt.iter().zip(b) {
            assert!((x - y).abs() <= 1e-15 * 8.0);
        }
    }

    #[test]
    fn mismatched_lengths_are_rejected() {
        assert!(sum_blocks([&[1.0][..], &[1.0, 2.0][..]]).is_none());
        assert!(rebuild_lost_block(&[1.0, 2.0], [&[1.0][..]]).is_none());
        assert!(sum_blocks(std::iter::empty::<&[f64]>()).is_none());
    }
}
