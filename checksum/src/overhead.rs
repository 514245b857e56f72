//! Flop model of the checksum maintenance in the fault-tolerant QR.
//!
//! The sums below are written for the reverse-neighboring layout; the rotating layout
//! ([`crate::rotating::RotatingLayout::overhead_model`]) uses the same sums over its own
//! active range, where `f` checksums per group of `Q − f` replace the pair per group of `Q`.
//!
//! Blocked Householder QR factors panel `k` (global columns `j0 = k·nb ..
//! j0 + jb`, `jb = min(nb, min(M, N) − j0)`) and applies its block reflector
//! (`M − j0` rows, `jb` reflectors) to the columns right of the panel. Applying
//! it to `w` columns costs ≈ `4·(M − j0)·jb·w` flops (PDLARFB: `W = Cᵀ·V`, then
//! `C −= V·T·Wᵀ`). With `K = ⌈min(M, N)/nb⌉` panels:
//!
//! ```text
//! plain  = Σ_{k<K} 4·(M − j0)·jb·(N − j0 − jb)                      data columns right of the panel
//! extra  = Σ_{k<K} 4·(M − j0)·jb·(active_end_col(k) − N)
//!        = Σ_{k<K} 4·(M − j0)·jb·((Npad − N) + 2·nb·(G − ⌊k/Q⌋))    padding + active checksum pairs
//! model  = extra / plain
//! ```
//!
//! (`⌊k/Q⌋` is the number of finished groups before panel `k`; for `k ≥ nbc` all `G` are.)
//! The padding columns count as extra work because a driver updates the contiguous
//! range `[panel end, active_end_col(k))` of the extended matrix.
//!
//! Asymptotics: for a square matrix with `nbc = N/nb` a multiple of `Q`, at panel
//! `k` there are `i = nbc − k` unfinished block columns, `(i − 1)·nb` data
//! columns and `2·nb·⌈i/Q⌉ ≥ 2·i·nb/Q` checksum columns to update, so the ratio
//! of each step is at least `2/Q` and tends to it as `nbc/Q` grows: the model
//! approaches the "≈ 2/Q" of docs/architecture.md ("ABFT checksums") from above, with an `O(Q/nbc)` excess from the
//! group granularity (a pair stays active until its whole group is finished).
//! For `M = N = 4096`, `nb = 64`: `1.0355` for `Q = 2` (2/Q = 1), `0.7298` for
//! `Q = 3` (2/3; 64 block columns do not split into full groups of 3) and
//! `0.5293` for `Q = 4` (2/Q = 0.5). Since the trailing updates are all but
//! `O(N²·nb)` of the QR's `4N³/3` flops, the ratio is also, to that order, the
//! overhead relative to the whole plain QR.

use crate::layout::ReverseNeighborLayout;

/// Trailing-update flops of the plain and the fault-tolerant QR (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OverheadFlops {
    /// Flops of the plain QR's trailing updates (data columns only).
    pub plain_update: f64,
    /// Extra flops of the fault-tolerant QR: updates of the padding and of the active checksum pairs.
    pub extra_update: f64,
}

impl OverheadFlops {
    /// `extra_update / plain_update`; `0` when there is no extra work, `+∞` when only the
    /// checksums are updated (a single panel, e.g. `N ≤ nb`).
    pub fn ratio(&self) -> f64 {
        if self.extra_update == 0.0 {
            0.0
        } else if self.plain_update == 0.0 {
            f64::INFINITY
        } else {
            self.extra_update / self.plain_update
        }
    }
}

/// The sums of every step's trailing update of an `m × n` factorization with `nb × nb`
/// panels: `per_col(j0, jb)` flops per updated column (step `k` with panel columns
/// `j0..j0 + jb`) over the data columns right of the panel (plain) and over the columns
/// `n..active_end(k)` of the extended matrix (extra: padding and active checksums). Shared
/// by every layout; each gives its own `active_end`.
pub(crate) fn update_flops(
    m: usize,
    n: usize,
    nb: usize,
    active_end: impl Fn(usize) -> usize,
    per_col: impl Fn(usize, usize) -> f64,
) -> OverheadFlops {
    let kmax = m.min(n);
    let mut flops = OverheadFlops { plain_update: 0.0, extra_update: 0.0 };
    for k in 0..kmax.div_ceil(nb) {
        let j0 = k * nb;
        let jb = nb.min(kmax - j0);
        let per_col = per_col(j0, jb);
        flops.plain_update += per_col * (n - j0 - jb) as f64;
        flops.extra_update += per_col * (active_end(k) - n) as f64;
    }
    flops
}

impl ReverseNeighborLayout {
    /// Trailing-update flops of the plain and the fault-tolerant QR for this layout
    /// (see [`crate::overhead`] for the formula).
    pub fn overhead_flops(&self) -> OverheadFlops {
        let m = self.m();
        update_flops(m, self.n(), self.nb(), |k| self.active_end_col(k), |j0, jb| 4.0 * (m - j0) as f64 * jb as f64)
    }

    /// Predicted extra trailing-update flops of the fault-tolerant QR relative to the plain
    /// QR's trailing updates: `extra / plain` of [`Self::overhead_flops`] (module
    /// [`crate::overhead`] documents the sums); tends to `2/Q` for large square matrices.
    /// `0` when there is no extra work, `+∞` when the plain QR has no trailing update.
    pub fn overhead_model(&self) -> f64 {
        self.overhead_flops().ratio()
    }

    /// Trailing-update flops of the plain and the fault-tolerant LU: step `k` solves the
    /// block row of U (TRSM, `jb²` per column) and updates the rows below it
    /// (`2·(M − j0 − jb)·jb` per column), over the data columns right of the panel for the
    /// plain LU and, for the extra work, over the padding and the active checksum pairs.
    pub fn overhead_flops_lu(&self) -> OverheadFlops {
        let m = self.m();
        update_flops(
            m,
            self.n(),
            self.nb(),
            |k| self.active_end_col(k),
            |j0, jb| (jb * jb) as f64 + 2.0 * (m - j0 - jb) as f64 * jb as f64,
        )
    }

    /// [`Self::overhead_model`] for the LU: `extra / plain` of
    /// [`Self::overhead_flops_lu`]; tends to `2/Q` as well.
    pub fn overhead_model_lu(&self) -> f64 {
        self.overhead_flops_lu().ratio()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(m: usize, n: usize, nb: usize, q: usize) -> f64 {
        ReverseNeighborLayout::new(m, n, nb, 1, q).unwrap().overhead_model()
    }

    #[test]
    fn documented_values_for_4096() {
        let q2 = model(4096, 4096, 64, 2);
        let q3 = model(4096, 4096, 64, 3);
        let q4 = model(4096, 4096, 64, 4);
        approx::assert_abs_diff_eq!(q2, 1.0355, epsilon = 1e-4);
        approx::assert_abs_diff_eq!(q3, 0.7298, epsilon = 1e-4);
        approx::assert_abs_diff_eq!(q4, 0.5293, epsilon = 1e-4);
    }

    #[test]
    fn approaches_two_over_q_from_above() {
        for q in [2usize, 3, 4, 8] {
            let mut prev = f64::INFINITY;
            for nbc in [16usize, 64, 256, 1024] {
                let r = model(nbc * 8, nbc * 8, 8, q);
                assert!(r >= 2.0 / q as f64, "q={q} nbc={nbc} r={r}");
                assert!(r <= prev, "q={q} nbc={nbc} r={r} prev={prev}");
                prev = r;
            }
            approx::assert_abs_diff_eq!(prev, 2.0 / q as f64, epsilon = 0.02 * 2.0);
        }
    }

    #[test]
    fn hand_computed_small_case() {
        // M = N = 4, nb = 1, Q = 2: groups {0,1} {2,3}; pairs: g1 at block cols 4,5, g0 at 6,7.
        // k=0: rows 4, data 3, active checksum 4 → plain 4·4·3, extra 4·4·4
        // k=1: rows 3, data 2, checksum 4      → 4·3·2, 4·3·4
        // k=2: rows 2, data 1, checksum 2      → 4·2·1, 4·2·2
        // k=3: rows 1, data 0, checksum 2      → 0,     4·1·2
        let l = ReverseNeighborLayout::new(4, 4, 1, 1, 2).unwrap();
        let f = l.overhead_flops();
        assert_eq!(f.plain_update, 4.0 * (12.0 + 6.0 + 2.0));
        assert_eq!(f.extra_update, 4.0 * (16.0 + 12.0 + 4.0 + 2.0));
        assert_eq!(l.overhead_model(), 34.0 / 20.0);
    }

    #[test]
    fn the_lu_model_is_near_the_qr_one_and_two_over_q() {
        for q in [2usize, 4] {
            let l = ReverseNeighborLayout::new(4096, 4096, 64, 1, q).unwrap();
            let (qr, lu) = (l.overhead_model(), l.overhead_model_lu());
            assert!(lu >= 2.0 / q as f64 && (lu - qr).abs() < 0.05 * qr, "q={q}: lu {lu}, qr {qr}");
        }
    }

    #[test]
    fn degenerate_cases() {
        assert_eq!(model(0, 0, 4, 2), 0.0);
        assert_eq!(model(5, 3, 4, 2), f64::INFINITY);
        assert_eq!(OverheadFlops { plain_update: 0.0, extra_update: 0.0 }.ratio(), 0.0);
        // Wide matrices: panels stop at M, the remaining columns are still updated.
        assert!(model(8, 64, 4, 2).is_finite());
        // Padding counts as extra work.
        let padded = ReverseNeighborLayout::new(10, 10, 4, 1, 2).unwrap().overhead_flops();
        assert!(padded.extra_update > 0.0 && padded.plain_update > 0.0);
    }
}
