//! Where the rotating layout's weighted checksums live in the extended matrix.
//!
//! [`RotatingLayout`] is pure index arithmetic over the global shape (`M × N`,
//! square `nb × nb` blocks, `P × Q` grid, first block on process `(0, 0)`) and
//! the number `f` of checksums per group. See the crate documentation for the
//! scheme; the rebuild of what lost processes held is planned by [`crate::GroupRebuild`].
//!
//! ## The placement, and why it works
//!
//! `s = Q − f`, `G = ⌈nbc/s⌉` groups, `o = G·s − nbc < s`. The groups are the
//! consecutive runs of `s` data block columns counted from the right end, so that
//! only group 0 may be short: group `g` is `[max(0, b_g), b_g + s)` with
//! `b_g = g·s − o` (group 0 has the `s − o` columns `0..s−o`). The extended matrix
//! has `nbc + G·f` block columns:
//!
//! ```text
//! [ data 0..nbc | C_{G−1}^(0..f) | … | C_1^(0..f) | C_0^(0..f) ]
//! ```
//!
//! checksum `i` of group `g` in extended block column `e(g, i) = nbc + (G−1−g)·f + i`.
//!
//! *Claim 1: group `g`'s checksums lie on `f` distinct process columns, none of
//! which holds a data block of `g`.* Block column `e` lives on process column
//! `e mod Q`. With `nbc = b_{G−1} + s`, `b_{G−1} − (G−1−g)·s = b_g` and
//! `f ≡ −s (mod Q)`: `e(g, i) ≡ b_g + s + i (mod Q)`, while the data of `g` are at
//! `b_g + t`, `0 ≤ t < s` (group 0: `o ≤ t < s`). The offsets `t` and `s + i`
//! (`0 ≤ i < f`) are distinct numbers in `[0, Q)`, so their process columns are
//! distinct mod `Q`; the `f` checksums, offsets `s..Q`, are distinct among themselves.
//!
//! *Claim 2: the checksums of finished groups are a suffix outside the active
//! trailing update.* The slots are in reverse group order, group 0 rightmost.
//! With `k` block columns finished, `g_min = ⌊(k + o)/s⌋` groups are finished
//! (`(g+1)·s − o ≤ k`); every unfinished `g ≥ g_min` has its slot within
//! `[nbc, nbc + (G − g_min)·f)`, every finished `g < g_min` at or beyond its end,
//! which is [`RotatingLayout::active_end_col`] (in columns).
//!
//! Putting the short group first (rather than last) leaves no gap between the data
//! and the checksums: the slots align at `nbc` whatever `nbc mod s` is. `Q = 2,
//! f = 1` gives `s = 1`: every block column has a plain copy on the other process column.

use crate::layout::LayoutError;
use crate::overhead::{update_flops, OverheadFlops};
use crate::weights::CodeWeights;
use std::ops::Range;

/// Rotating layout of `f` weighted checksums per group of `Q − f` block columns (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct RotatingLayout {
    m: usize,
    n: usize,
    nb: usize,
    p: usize,
    q: usize,
    f: usize,
    s: usize,
    nbc: usize,
    groups: usize,
    n_padded: usize,
    n_extended: usize,
    weights: CodeWeights,
}

impl RotatingLayout {
    /// Builds the layout of an `m × n` matrix with `nb × nb` blocks on a `p × q` grid
    /// with `f` checksums per group.
    ///
    /// Errors: `nb = 0` ([`LayoutError::ZeroBlockSize`]), `p = 0`
    /// ([`LayoutError::ZeroProcessRows`]), `f = 0` ([`LayoutError::NoChecksums`]),
    /// `f > 3` ([`LayoutError::TooManyChecksums`]), `q < f + 1`
    /// ([`LayoutError::TooFewProcessColumns`]), an extended column count that overflows
    /// ([`LayoutError::TooLarge`]). Empty matrices are valid; `n = 0` has no groups.
    pub fn new(m: usize, n: usize, nb: usize, p: usize, q: usize, f: usize) -> Result<Self, LayoutError> {
        if nb == 0 {
            return Err(LayoutError::ZeroBlockSize);
        }
        if p == 0 {
            return Err(LayoutError::ZeroProcessRows);
        }
        if f == 0 {
            return Err(LayoutError::NoChecksums);
        }
        if q < f + 1 {
            return Err(LayoutError::TooFewProcessColumns { q, f });
        }
        let s = q - f;
        let weights = CodeWeights::new(f, s)?;
        let nbc = n.div_ceil(nb);
        let groups = nbc.div_ceil(s);
        let too_large = LayoutError::TooLarge { n, nb };
        let n_padded = nbc.checked_mul(nb).ok_or_else(|| too_large.clone())?;
        let n_extended =
            groups.checked_mul(f).and_then(|c| c.checked_add(nbc)).and_then(|c| c.checked_mul(nb)).ok_or(too_large)?;
        Ok(Self { m, n, nb, p, q, f, s, nbc, groups, n_padded, n_extended, weights })
    }

    /// Global row count `M`.
    pub fn m(&self) -> usize {
        self.m
    }

    /// Global data column count `N`.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Block size `nb`.
    pub fn nb(&self) -> usize {
        self.nb
    }

    /// Process rows `P`.
    pub fn p(&self) -> usize {
        self.p
    }

    /// Process columns `Q` (≥ `f + 1`).
    pub fn q(&self) -> usize {
        self.q
    }

    /// Checksums per group `f`: the losses per process row the layout tolerates.
    pub fn checksums(&self) -> usize {
        self.f
    }

    /// Data block columns per (full) group, `s = Q − f`.
    pub fn group_size(&self) -> usize {
        self.s
    }

    /// The weights `w_{i,t}` of the checksums (`f × s`).
    pub fn weights(&self) -> &CodeWeights {
        &self.weights
    }

    /// Number of data block columns `nbc = ⌈N/nb⌉`.
    pub fn data_block_cols(&self) -> usize {
        self.nbc
    }

    /// Number of groups `G = ⌈nbc/s⌉`.
    pub fn groups(&self) -> usize {
        self.groups
    }

    /// Padded data column count `Npad = nbc·nb`; columns `N..Npad` are zero.
    pub fn n_padded(&self) -> usize {
        self.n_padded
    }

    /// Data block columns group 0 lacks to be full, `o = G·s − nbc` (`0 ≤ o < s`; 0 for `G = 0`).
    pub fn short_by(&self) -> usize {
        self.groups * self.s - self.nbc
    }

    /// Number of block columns of the extended matrix, `nbc + G·f`.
    pub fn extended_block_cols(&self) -> usize {
        self.nbc + self.groups * self.f
    }

    /// Column count of the extended matrix, `(nbc + G·f)·nb`.
    pub fn n_extended(&self) -> usize {
        self.n_extended
    }

    /// First global column of the checksum area, `Npad`.
    pub fn checksum_col0(&self) -> usize {
        self.n_padded
    }

    /// Process column owning extended block column `e` (`e mod Q`).
    pub fn process_col_of_block_col(&self, e: usize) -> usize {
        e % self.q
    }

    /// Group holding data block column `block_col` (`(block_col + o) / s`).
    pub fn group_of(&self, block_col: usize) -> Result<usize, LayoutError> {
        self.check_block_col(block_col)?;
        Ok((block_col + self.short_by()) / self.s)
    }

    /// Position of data block column `block_col` among its group's members (0 for the
    /// first): the column of the weights it is multiplied by.
    pub fn position_in_group(&self, block_col: usize) -> Result<usize, LayoutError> {
        let g = self.group_of(block_col)?;
        Ok(block_col - self.group_members(g)?.start)
    }

    /// Data block columns of group `g`: `[max(0, g·s − o), (g+1)·s − o)`.
    pub fn group_members(&self, g: usize) -> Result<Range<usize>, LayoutError> {
        self.check_group(g)?;
        let o = self.short_by();
        Ok((g * self.s).saturating_sub(o)..(g + 1) * self.s - o)
    }

    /// Extended block columns of group `g`'s checksums `0..f`:
    /// `nbc + (G−1−g)·f + (0..f)`.
    pub fn checksum_block_cols(&self, g: usize) -> Result<Range<usize>, LayoutError> {
        self.check_group(g)?;
        let e0 = self.nbc + (self.groups - 1 - g) * self.f;
        Ok(e0..e0 + self.f)
    }

    /// Extended block column of checksum `i` of group `g`.
    pub fn checksum_block_col(&self, g: usize, i: usize) -> Result<usize, LayoutError> {
        let cols = self.checksum_block_cols(g)?;
        if i >= self.f {
            return Err(LayoutError::ChecksumOutOfRange { index: i, checksums: self.f });
        }
        Ok(cols.start + i)
    }

    /// First global column (in the extended matrix) of checksum `i` of group `g`.
    pub fn checksum_global_col(&self, g: usize, i: usize) -> Result<usize, LayoutError> {
        Ok(self.checksum_block_col(g, i)? * self.nb)
    }

    /// Process column of checksum `i` of group `g`, `(b_g + s + i) mod Q`: one of the
    /// process columns the group's data skip. The left-factor checksum `D_g^(i)` lives there too.
    pub fn checksum_process_col(&self, g: usize, i: usize) -> Result<usize, LayoutError> {
        Ok(self.checksum_block_col(g, i)? % self.q)
    }

    /// The checksum of group `g` held by process column `pc`, if any (`None` also for a
    /// group that does not exist).
    pub fn checksum_on(&self, g: usize, pc: usize) -> Option<usize> {
        self.checksum_block_cols(g).ok()?.position(|e| e % self.q == pc)
    }

    /// Number of groups whose block columns are all finished when the first
    /// `finished_block_cols` block columns are; equivalently the lowest unfinished group.
    pub fn finished_groups(&self, finished_block_cols: usize) -> usize {
        (finished_block_cols.min(self.nbc) + self.short_by()) / self.s
    }

    /// Whether every block column of group `g` is finished when the first
    /// `finished_block_cols` are.
    pub fn is_group_finished(&self, g: usize, finished_block_cols: usize) -> Result<bool, LayoutError> {
        Ok(finished_block_cols >= self.group_members(g)?.end)
    }

    /// Global column where the active trailing-update range ends when the first
    /// `finished_block_cols` block columns are finished: `(nbc + (G − g_min)·f)·nb`,
    /// `g_min` = [`Self::finished_groups`]. The range holds the data and the checksums of
    /// every unfinished group; values beyond `nbc` count as `nbc` (the result is then `Npad`).
    pub fn active_end_col(&self, finished_block_cols: usize) -> usize {
        (self.nbc + (self.groups - self.finished_groups(finished_block_cols)) * self.f) * self.nb
    }

    /// Global row indices owned by process row `pr`, in local order.
    pub fn global_rows_of(&self, pr: usize) -> Result<Vec<usize>, LayoutError> {
        if pr >= self.p {
            return Err(LayoutError::ProcessOutOfRange { pr, pc: 0, p: self.p, q: self.q });
        }
        let local = blacs_ft::index::numroc(self.m, self.nb, pr, 0, self.p);
        Ok((0..local).map(|il| blacs_ft::index::indxl2g(il, self.nb, pr, 0, self.p)).collect())
    }

    /// Trailing-update flops of the plain and the fault-tolerant QR with this layout
    /// (the sums of [`crate::overhead`] over this layout's active range).
    pub fn overhead_flops(&self) -> OverheadFlops {
        let m = self.m;
        update_flops(self.m, self.n, self.nb, |k| self.active_end_col(k), |j0, jb| 4.0 * (m - j0) as f64 * jb as f64)
    }

    /// Predicted extra trailing-update flops relative to the plain QR's: tends to
    /// `f/(Q − f)` for large square matrices, from above (a group's checksums stay active
    /// until its last block column is finished: an `O(s/nbc)` excess).
    pub fn overhead_model(&self) -> f64 {
        self.overhead_flops().ratio()
    }

    /// [`Self::overhead_flops`] for the LU (TRSM and the update of the rows below the panel).
    pub fn overhead_flops_lu(&self) -> OverheadFlops {
        let m = self.m;
        update_flops(
            self.m,
            self.n,
            self.nb,
            |k| self.active_end_col(k),
            |j0, jb| (jb * jb) as f64 + 2.0 * (m - j0 - jb) as f64 * jb as f64,
        )
    }

    /// [`Self::overhead_model`] for the LU.
    pub fn overhead_model_lu(&self) -> f64 {
        self.overhead_flops_lu().ratio()
    }

    pub(crate) fn check_group(&self, g: usize) -> Result<(), LayoutError> {
        if g >= self.groups {
            return Err(LayoutError::GroupOutOfRange { group: g, groups: self.groups });
        }
        Ok(())
    }

    pub(crate) fn check_block_col(&self, block_col: usize) -> Result<(), LayoutError> {
        if block_col >= self.nbc {
            return Err(LayoutError::BlockColumnOutOfRange { block_col, block_cols: self.nbc });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_parameters_are_typed_errors() {
        assert_eq!(RotatingLayout::new(8, 8, 0, 1, 2, 1), Err(LayoutError::ZeroBlockSize));
        assert_eq!(RotatingLayout::new(8, 8, 2, 0, 2, 1), Err(LayoutError::ZeroProcessRows));
        assert_eq!(RotatingLayout::new(8, 8, 2, 1, 2, 0), Err(LayoutError::NoChecksums));
        assert_eq!(RotatingLayout::new(8, 8, 2, 1, 2, 2), Err(LayoutError::TooFewProcessColumns { q: 2, f: 2 }));
        assert_eq!(RotatingLayout::new(8, 8, 2, 1, 1, 1), Err(LayoutError::TooFewProcessColumns { q: 1, f: 1 }));
        assert_eq!(RotatingLayout::new(8, 8, 2, 1, 9, 4), Err(LayoutError::TooManyChecksums { f: 4, max: 3 }));
        assert_eq!(RotatingLayout::new(8, usize::MAX, 2, 1, 4, 1), Err(LayoutError::TooLarge { n: usize::MAX, nb: 2 }));
        let msg = LayoutError::TooFewProcessColumns { q: 2, f: 2 }.to_string();
        assert!(msg.contains("Q >= f + 1") && msg.contains("Q = 2"), "{msg}");
        assert!(LayoutError::NoChecksums.to_string().contains("f = 0"));
        assert!(LayoutError::ChecksumOutOfRange { index: 3, checksums: 2 }.to_string().contains("2 checksum"));
    }

    #[test]
    fn example_ten_blocks_on_four_columns_with_two_checksums() {
        // nbc = 10, Q = 4, f = 2, s = 2: groups {0,1} {2,3} {4,5} {6,7} {8,9}; G = 5,
        // checksums at 10.. in reverse group order.
        let l = RotatingLayout::new(7, 19, 2, 2, 4, 2).unwrap();
        assert_eq!((l.data_block_cols(), l.groups(), l.group_size(), l.checksums()), (10, 5, 2, 2));
        assert_eq!(l.short_by(), 0);
        assert_eq!((l.extended_block_cols(), l.n_extended(), l.checksum_col0()), (20, 40, 20));
        assert_eq!(l.checksum_block_cols(4).unwrap(), 10..12);
        assert_eq!(l.checksum_block_cols(0).unwrap(), 18..20);
        // Group 0 (process columns 0, 1) keeps its checksums on 2 and 3; group 1 (2, 3) on 0 and 1.
        assert_eq!([l.checksum_process_col(0, 0).unwrap(), l.checksum_process_col(0, 1).unwrap()], [2, 3]);
        assert_eq!([l.checksum_process_col(1, 0).unwrap(), l.checksum_process_col(1, 1).unwrap()], [0, 1]);
        assert_eq!(l.checksum_on(1, 1), Some(1));
        assert_eq!(l.checksum_on(1, 2), None);
        assert_eq!(l.checksum_on(7, 0), None);
        assert_eq!(l.checksum_global_col(0, 1).unwrap(), 38);
        assert_eq!(l.checksum_block_col(0, 2), Err(LayoutError::ChecksumOutOfRange { index: 2, checksums: 2 }));
        assert_eq!((l.group_of(5).unwrap(), l.position_in_group(5).unwrap()), (2, 1));
        assert!(l.group_of(10).is_err() && l.position_in_group(10).is_err() && l.group_members(5).is_err());
        assert_eq!(l.active_end_col(0), 40);
        assert_eq!(l.active_end_col(2), 36);
        assert_eq!(l.active_end_col(9), 24);
        assert_eq!(l.active_end_col(10), 20);
        assert!(l.is_group_finished(0, 2).unwrap() && !l.is_group_finished(1, 3).unwrap());
        assert_eq!(l.global_rows_of(1).unwrap(), vec![2, 3, 6]);
        assert!(l.global_rows_of(2).is_err());
        assert_eq!(l.weights().checksums(), 2);
        assert_eq!((l.m(), l.n(), l.nb(), l.p(), l.q(), l.n_padded()), (7, 19, 2, 2, 4, 20));
        assert_eq!(l.process_col_of_block_col(13), 1);
    }

    #[test]
    fn a_short_first_group_needs_no_gap() {
        // nbc = 5, Q = 3, f = 1, s = 2: groups {0} {1,2} {3,4}; checksums at 5 (g2), 6 (g1), 7 (g0).
        let l = RotatingLayout::new(4, 5, 1, 1, 3, 1).unwrap();
        assert_eq!((l.groups(), l.short_by(), l.extended_block_cols()), (3, 1, 8));
        assert_eq!(l.group_members(0).unwrap(), 0..1);
        assert_eq!(l.group_members(2).unwrap(), 3..5);
        assert_eq!((l.group_of(0).unwrap(), l.group_of(1).unwrap(), l.position_in_group(2).unwrap()), (0, 1, 1));
        // Group 2 on process columns 0, 1: its checksum on 2 (block column 5); group 0 on 0: checksum on 1.
        assert_eq!(l.checksum_block_col(2, 0).unwrap(), 5);
        assert_eq!(l.checksum_process_col(2, 0).unwrap(), 2);
        assert_eq!(l.checksum_process_col(0, 0).unwrap(), 1);
        assert_eq!(l.finished_groups(1), 1);
        assert_eq!(l.active_end_col(1), 7);
        assert_eq!(l.active_end_col(4), 6);
        assert_eq!(l.active_end_col(5), 5);
    }

    #[test]
    fn two_columns_and_one_checksum_replicate_every_block() {
        let l = RotatingLayout::new(4, 4, 1, 1, 2, 1).unwrap();
        assert_eq!(l.weights().row(0).unwrap(), &[1.0]);
        for j in 0..4 {
            let g = l.group_of(j).unwrap();
            assert_eq!(l.group_members(g).unwrap(), j..j + 1);
            assert_ne!(l.checksum_process_col(g, 0).unwrap(), j % 2);
        }
    }

    #[test]
    fn the_model_tends_to_f_over_q_minus_f() {
        for (q, f) in [(2usize, 1usize), (4, 1), (4, 2), (8, 1), (8, 3), (16, 1)] {
            let want = f as f64 / (q - f) as f64;
            let mut prev = f64::INFINITY;
            for nbc in [60usize, 240, 960] {
                let l = RotatingLayout::new(nbc * 4, nbc * 4, 4, 1, q, f).unwrap();
                let r = l.overhead_model();
                assert!(r >= want - 1e-12 && r <= prev, "q={q} f={f} nbc={nbc}: {r}");
                prev = r;
                let lu = l.overhead_model_lu();
                assert!(lu >= want - 1e-12 && (lu - r).abs() < 0.1 * r, "q={q} f={f}: lu {lu}, qr {r}");
            }
            assert!((prev - want).abs() < 0.03 * want.max(0.1), "q={q} f={f}: {prev} vs {want}");
        }
    }
}
