//! ScaLAPACK TOOLS index arithmetic for the 2D block-cyclic distribution, 0-based.
//!
//! These are the Rust counterparts of ScaLAPACK's `NUMROC`, `INDXG2P`,
//! `INDXG2L` and `INDXL2G`. They work on one dimension at a time (rows with
//! `MB`/`NPROW`/`RSRC`, or columns with `NB`/`NPCOL`/`CSRC`) and contain no
//! MPI, so they can be property-tested in-process.
//!
//! Differences from the Fortran originals:
//!
//! * every index (global or local) and every process coordinate is **0-based**;
//!   a global index `ig` here is `IG - 1` in ScaLAPACK;
//! * all quantities are `usize` (a grid's `i32` coordinates convert with
//!   `as usize` once validated non-negative);
//! * process coordinates are taken modulo `nprocs`, so an out-of-range `iproc`
//!   or `isrcproc` behaves like its residue instead of producing garbage.
//!
//! As in ScaLAPACK's documentation each argument is marked *(global)* when it
//! must have the same value on every process and *(local)* when it is
//! specific to the calling process.
//!
//! # Preconditions
//!
//! The block size `nb` and the process count `nprocs` must be at least 1; the
//! functions panic (division by zero) otherwise. Callers that take these values
//! from users validate them first (see `scalapack_ft::descriptor`).

/// Number of rows or columns of a distributed dimension owned by process `iproc`
/// (ScaLAPACK `NUMROC`).
///
/// * `n` *(global)*: number of rows/columns of the distributed matrix;
/// * `nb` *(global)*: block size (`MB` or `NB`), ≥ 1;
/// * `iproc` *(local)*: coordinate of the process whose count is wanted;
/// * `isrcproc` *(global)*: coordinate of the process owning the first block
///   (`RSRC` or `CSRC`);
/// * `nprocs` *(global)*: number of processes in this dimension, ≥ 1.
///
/// Also equals the number of global indices `< n` owned by `iproc`, i.e. the
/// local index of the first global index `≥ n` owned by `iproc` (see
/// [`local_count_before`]).
///
/// ```
/// use blacs_ft::index::numroc;
/// // 10 rows, blocks of 3, 2 process rows: p0 owns 0..3 and 6..9 (6 rows), p1 owns 3..6 and 9 (4 rows).
/// assert_eq!(numroc(10, 3, 0, 0, 2), 6);
/// assert_eq!(numroc(10, 3, 1, 0, 2), 4);
/// ```
pub fn numroc(n: usize, nb: usize, iproc: usize, isrcproc: usize, nprocs: usize) -> usize {
    let mydist = distance(iproc, isrcproc, nprocs);
    let nblocks = n / nb;
    let mut count = (nblocks / nprocs) * nb;
    let extrablks = nblocks % nprocs;
    if mydist < extrablks {
        count += nb;
    } else if mydist == extrablks {
        count += n % nb;
    }
    count
}

/// Process coordinate owning global index `ig` (ScaLAPACK `INDXG2P`).
///
/// * `ig` *(global)*: 0-based global row/column index;
/// * `nb` *(global)*: block size, ≥ 1;
/// * `isrcproc` *(global)*: coordinate of the process owning the first block;
/// * `nprocs` *(global)*: number of processes in this dimension, ≥ 1.
///
/// ```
/// use blacs_ft::index::indxg2p;
/// assert_eq!(indxg2p(7, 3, 0, 2), 0); // block 2 → process 0
/// assert_eq!(indxg2p(7, 3, 1, 2), 1); // same block when the first block is on process 1
/// ```
pub fn indxg2p(ig: usize, nb: usize, isrcproc: usize, nprocs: usize) -> usize {
    (isrcproc % nprocs + (ig / nb) % nprocs) % nprocs
}

/// Local index, on its owning process, of global index `ig` (ScaLAPACK `INDXG2L`).
///
/// The result does not depend on which process owns `ig` (ScaLAPACK's
/// `IPROC`/`ISRCPROC` arguments are dummies), so it is meaningful only on
/// the owner given by [`indxg2p`].
///
/// * `ig` *(global)*: 0-based global row/column index;
/// * `nb` *(global)*: block size, ≥ 1;
/// * `nprocs` *(global)*: number of processes in this dimension, ≥ 1.
///
/// ```
/// use blacs_ft::index::indxg2l;
/// assert_eq!(indxg2l(7, 3, 2), 4); // global block 2 is local block 1 on its owner; offset 1 inside it
/// ```
pub fn indxg2l(ig: usize, nb: usize, nprocs: usize) -> usize {
    (ig / nb / nprocs) * nb + ig % nb
}

/// Global index of local index `il` on process `iproc` (ScaLAPACK `INDXL2G`).
///
/// * `il` *(local)*: 0-based local row/column index on `iproc`;
/// * `nb` *(global)*: block size, ≥ 1;
/// * `iproc` *(local)*: coordinate of the process owning the local index;
/// * `isrcproc` *(global)*: coordinate of the process owning the first block;
/// * `nprocs` *(global)*: number of processes in this dimension, ≥ 1.
///
/// ```
/// use blacs_ft::index::indxl2g;
/// assert_eq!(indxl2g(4, 3, 0, 0, 2), 7);
/// ```
pub fn indxl2g(il: usize, nb: usize, iproc: usize, isrcproc: usize, nprocs: usize) -> usize {
    let mydist = distance(iproc, isrcproc, nprocs);
    (il / nb * nprocs + mydist) * nb + il % nb
}

/// Number of global indices `< ig` that process `iproc` owns; equivalently the
/// local index, on `iproc`, of the first global index `≥ ig` that `iproc` owns
/// (the local start of a trailing submatrix `ig..`).
///
/// This is `numroc(ig, nb, iproc, isrcproc, nprocs)`; it is given its own name
/// because factorizations use it to find where a trailing submatrix starts in
/// local storage (ScaLAPACK computes the same with `INFOG1L`/`INFOG2L`).
///
/// * `ig` *(global)*: 0-based global index (may equal the dimension `n`);
/// * `nb` *(global)*: block size, ≥ 1;
/// * `iproc` *(local)*: process coordinate;
/// * `isrcproc` *(global)*: coordinate of the process owning the first block;
/// * `nprocs` *(global)*: number of processes in this dimension, ≥ 1.
///
/// ```
/// use blacs_ft::index::local_count_before;
/// // 3-blocks on 2 processes: process 1 owns 3,4,5, 9,10,11, ...; before index 10 it owns 3,4,5,9.
/// assert_eq!(local_count_before(10, 3, 1, 0, 2), 4);
/// ```
pub fn local_count_before(ig: usize, nb: usize, iproc: usize, isrcproc: usize, nprocs: usize) -> usize {
    numroc(ig, nb, iproc, isrcproc, nprocs)
}

/// Distance of `iproc` from the source process, counted cyclically: the
/// process that owns global block `k` has distance `k mod nprocs`.
fn distance(iproc: usize, isrcproc: usize, nprocs: usize) -> usize {
    (nprocs + iproc % nprocs - isrcproc % nprocs) % nprocs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute-force reference: walk every global index and assign it by block.
    fn owners(n: usize, nb: usize, isrc: usize, nprocs: usize) -> Vec<usize> {
        (0..n).map(|ig| ((ig / nb) + isrc) % nprocs).collect()
    }

    fn combos() -> impl Iterator<Item = (usize, usize, usize, usize)> {
        let ns = [0usize, 1, 2, 3, 5, 7, 8, 16, 17, 31, 64, 100, 129];
        let nbs = [1usize, 2, 3, 4, 7, 8, 32, 64, 200];
        let nps = [1usize, 2, 3, 4, 5, 7];
        ns.into_iter().flat_map(move |n| {
            nbs.into_iter()
                .flat_map(move |nb| nps.into_iter().flat_map(move |np| (0..np).map(move |src| (n, nb, np, src))))
        })
    }

    #[test]
    fn scalapack_reference_values() {
        // Values from ScaLAPACK's NUMROC documentation example style: N=10, NB=3, P=3.
        assert_eq!(numroc(10, 3, 0, 0, 3), 4); // rows 0,1,2,9
        assert_eq!(numroc(10, 3, 1, 0, 3), 3);
        assert_eq!(numroc(10, 3, 2, 0, 3), 3);
        assert_eq!(numroc(10, 3, 0, 1, 3), 3);
        assert_eq!(numroc(10, 3, 1, 1, 3), 4);
        assert_eq!(numroc(0, 3, 0, 0, 3), 0);
        assert_eq!(numroc(5, 64, 0, 0, 4), 5);
        assert_eq!(numroc(5, 64, 1, 0, 4), 0);
        assert_eq!(indxg2p(0, 3, 2, 3), 2);
        assert_eq!(indxg2p(3, 3, 2, 3), 0);
        assert_eq!(indxg2l(9, 3, 3), 3);
        assert_eq!(indxl2g(3, 3, 0, 0, 3), 9);
        assert_eq!(indxl2g(3, 3, 0, 1, 3), 15);
    }

    #[test]
    fn numroc_sums_to_n_and_matches_brute_force() {
        for (n, nb, np, src) in combos() {
            let own = owners(n, nb, src, np);
            let mut total = 0;
            for p in 0..np {
                let count = numroc(n, nb, p, src, np);
                assert_eq!(count, own.iter().filter(|&&o| o == p).count(), "n={n} nb={nb} np={np} src={src} p={p}");
                total += count;
            }
            assert_eq!(total, n, "n={n} nb={nb} np={np} src={src}");
        }
    }

    #[test]
    fn owner_and_local_index_match_brute_force() {
        for (n, nb, np, src) in combos() {
            let own = owners(n, nb, src, np);
            let mut next_local = vec![0usize; np];
            for (ig, &o) in own.iter().enumerate() {
                assert_eq!(indxg2p(ig, nb, src, np), o, "ig={ig} n={n} nb={nb} np={np} src={src}");
                // Local indices on the owner are handed out in increasing global order.
                assert_eq!(indxg2l(ig, nb, np), next_local[o], "ig={ig} nb={nb} np={np} src={src}");
                next_local[o] += 1;
            }
        }
    }

    #[test]
    fn l2g_and_g2l_are_inverse() {
        for (n, nb, np, src) in combos() {
            for ig in 0..n {
                let p = indxg2p(ig, nb, src, np);
                let il = indxg2l(ig, nb, np);
                assert!(il < numroc(n, nb, p, src, np));
                assert_eq!(indxl2g(il, nb, p, src, np), ig, "ig={ig} nb={nb} np={np} src={src}");
            }
            for p in 0..np {
                for il in 0..numroc(n, nb, p, src, np) {
                    let ig = indxl2g(il, nb, p, src, np);
                    assert!(ig < n);
                    assert_eq!(indxg2p(ig, nb, src, np), p);
                    assert_eq!(indxg2l(ig, nb, np), il);
                }
            }
        }
    }

    #[test]
    fn local_count_before_is_local_start_of_trailing_part() {
        for (n, nb, np, src) in combos() {
            for p in 0..np {
                let total = numroc(n, nb, p, src, np);
                for ig in 0..=n {
                    let start = local_count_before(ig, nb, p, src, np);
                    let brute = (0..ig).filter(|&g| indxg2p(g, nb, src, np) == p).count();
                    assert_eq!(start, brute);
                    // The first owned global index at or after ig has local index `start`.
                    if let Some(g) = (ig..n).find(|&g| indxg2p(g, nb, src, np) == p) {
                        assert_eq!(indxg2l(g, nb, np), start);
                    } else {
                        assert_eq!(start, total);
                    }
                }
            }
        }
    }

    #[test]
    fn out_of_range_coordinates_wrap() {
        assert_eq!(numroc(10, 3, 4, 0, 3), numroc(10, 3, 1, 0, 3));
        assert_eq!(numroc(10, 3, 0, 5, 3), numroc(10, 3, 0, 2, 3));
        assert_eq!(indxg2p(4, 3, 5, 3), indxg2p(4, 3, 2, 3));
        assert_eq!(indxl2g(1, 3, 4, 0, 3), indxl2g(1, 3, 1, 0, 3));
    }

    #[test]
    fn large_values_do_not_overflow() {
        let n = usize::MAX / 2;
        let total: usize = (0..4).map(|p| numroc(n, 1 << 20, p, 1, 4)).sum();
        assert_eq!(total, n);
        let ig = n - 5;
        let p = indxg2p(ig, 1 << 20, 1, 4);
        assert_eq!(indxl2g(indxg2l(ig, 1 << 20, 4), 1 << 20, p, 1, 4), ig);
    }
}
