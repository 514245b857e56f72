//! Where the reverse-neighboring checksum pairs live in the extended matrix.
//!
//! [`ReverseNeighborLayout`] is pure index arithmetic over the global shape
//! (`M × N`, square `nb × nb` blocks, `P × Q` grid, first block on process
//! `(0, 0)`). See the crate documentation for the scheme; the rebuild of what
//! lost processes held is planned by [`crate::GroupRebuild`] and the flop model is
//! in [`crate::overhead`].

use std::fmt;
use std::ops::Range;

/// Why a [`ReverseNeighborLayout`] could not be built or queried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayoutError {
    /// The block size is 0.
    ZeroBlockSize,
    /// The grid has no process rows.
    ZeroProcessRows,
    /// Fewer than two process columns: the two copies of a checksum must live on
    /// two different process columns.
    NeedTwoProcessColumns {
        /// The number of process columns given.
        q: usize,
    },
    /// A weighted layout with no checksum (`f = 0`).
    NoChecksums,
    /// More checksums per group than the weights support.
    TooManyChecksums {
        /// The number of checksums asked for.
        f: usize,
        /// The most supported ([`crate::weights::MAX_CHECKSUMS`]).
        max: usize,
    },
    /// `Q < f + 1`: a group of the rotating layout needs at least one process column of
    /// data besides the `f` process columns holding its checksums.
    TooFewProcessColumns {
        /// The number of process columns given.
        q: usize,
        /// The number of checksums per group.
        f: usize,
    },
    /// A checksum index at or beyond `f`.
    ChecksumOutOfRange {
        /// The checksum asked for.
        index: usize,
        /// Number of checksums per group `f`.
        checksums: usize,
    },
    /// The extended column count of the layout does not fit in `usize`.
    TooLarge {
        /// Global column count of the data.
        n: usize,
        /// Block size.
        nb: usize,
    },
    /// A group index at or beyond the number of groups.
    GroupOutOfRange {
        /// The group asked for.
        group: usize,
        /// Number of groups `G`.
        groups: usize,
    },
    /// A data block column index at or beyond `nbc`.
    BlockColumnOutOfRange {
        /// The block column asked for.
        block_col: usize,
        /// Number of data block columns `nbc`.
        block_cols: usize,
    },
    /// Process coordinates outside the `P × Q` grid.
    ProcessOutOfRange {
        /// Process row asked for.
        pr: usize,
        /// Process column asked for.
        pc: usize,
        /// Grid rows.
        p: usize,
        /// Grid columns.
        q: usize,
    },
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutError::ZeroBlockSize => write!(f, "block size nb must be at least 1"),
            LayoutError::ZeroProcessRows => write!(f, "the process grid needs at least one process row (P = 0)"),
            LayoutError::NeedTwoProcessColumns { q } => write!(
                f,
                "the reverse-neighboring checksum pair needs two process columns (Q ≥ 2), got Q = {q}: \
                 both copies would live on the same process column"
            ),
            LayoutError::NoChecksums => write!(f, "a weighted checksum layout needs at least one checksum (f = 0)"),
            LayoutError::TooManyChecksums { f: count, max } => {
                write!(f, "{count} checksums per group requested, at most {max} are supported")
            }
            LayoutError::TooFewProcessColumns { q, f: count } => write!(
                f,
                "{count} checksum(s) per group need at least {} process columns (Q >= f + 1), got Q = {q}",
                count + 1
            ),
            LayoutError::ChecksumOutOfRange { index, checksums } => {
                write!(f, "checksum {index} out of range: each group has {checksums} checksum(s)")
            }
            LayoutError::TooLarge { n, nb } => {
                write!(f, "extended matrix of {n} data columns with nb = {nb} has too many columns for usize")
            }
            LayoutError::GroupOutOfRange { group, groups } => {
                write!(f, "checksum group {group} out of range: the layout has {groups} group(s)")
            }
            LayoutError::BlockColumnOutOfRange { block_col, block_cols } => {
                write!(f, "data block column {block_col} out of range: the matrix has {block_cols} block column(s)")
            }
            LayoutError::ProcessOutOfRange { pr, pc, p, q } => {
                write!(f, "process ({pr}, {pc}) is outside the {p} x {q} grid")
            }
        }
    }
}

impl std::error::Error for LayoutError {}

/// Reverse-neighboring checksum layout of an `M × N` matrix on a `P × Q` grid.
///
/// The extended matrix is `[A | pad | C]`: `nbc = ⌈N/nb⌉` data block columns
/// (zero padding up to `Npad = nbc·nb` columns), then `2·G` checksum block
/// columns, `G = ⌈nbc/Q⌉`. Group `g` (data block columns `[g·Q, min((g+1)·Q, nbc))`)
/// keeps its checksum twice, in the adjacent extended block columns
/// `nbc + 2(G−1−g)` and `nbc + 2(G−1−g) + 1`: group 0's pair is rightmost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReverseNeighborLayout {
    m: usize,
    n: usize,
    nb: usize,
    p: usize,
    q: usize,
    nbc: usize,
    groups: usize,
    n_padded: usize,
    n_extended: usize,
}

impl ReverseNeighborLayout {
    /// Builds the layout of an `m × n` matrix with `nb × nb` blocks on a `p × q` grid
    /// (first block on process `(0, 0)`).
    ///
    /// Errors: `nb = 0` ([`LayoutError::ZeroBlockSize`]), `p = 0`
    /// ([`LayoutError::ZeroProcessRows`]), `q < 2`
    /// ([`LayoutError::NeedTwoProcessColumns`]), or an extended column count
    /// that overflows ([`LayoutError::TooLarge`]). Empty matrices (`m = 0` or
    /// `n = 0`) are valid; `n = 0` has no groups.
    pub fn new(m: usize, n: usize, nb: usize, p: usize, q: usize) -> Result<Self, LayoutError> {
        if nb == 0 {
            return Err(LayoutError::ZeroBlockSize);
        }
        if p == 0 {
            return Err(LayoutError::ZeroProcessRows);
        }
        if q < 2 {
            return Err(LayoutError::NeedTwoProcessColumns { q });
        }
        let nbc = n.div_ceil(nb);
        let groups = nbc.div_ceil(q);
        let too_large = LayoutError::TooLarge { n, nb };
        let n_padded = nbc.checked_mul(nb).ok_or_else(|| too_large.clone())?;
        let n_extended = groups
            .checked_mul(2)
            .and_then(|c| c.checked_mul(nb))
            .and_then(|c| c.checked_add(n_padded))
            .ok_or(too_large)?;
        Ok(Self { m, n, nb, p, q, nbc, groups, n_padded, n_extended })
    }

    /// Global row count `M`.
    pub fn m(&self) -> usize {
        self.m
    }

    /// Global data column count `N` (without padding or checksums).
    pub fn n(&self) -> usize {
        self.n
    }

    /// Block size `nb` (rows and columns).
    pub fn nb(&self) -> usize {
        self.nb
    }

    /// Process rows `P`.
    pub fn p(&self) -> usize {
        self.p
    }

    /// Process columns `Q` (≥ 2).
    pub fn q(&self) -> usize {
        self.q
    }

    /// Number of data block columns `nbc = ⌈N/nb⌉`.
    pub fn data_block_cols(&self) -> usize {
        self.nbc
    }

    /// Number of checksum groups `G = ⌈nbc/Q⌉`.
    pub fn groups(&self) -> usize {
        self.groups
    }

    /// Number of block columns of the extended matrix, `nbc + 2·G`.
    pub fn extended_block_cols(&self) -> usize {
        self.nbc + 2 * self.groups
    }

    /// Padded data column count `Npad = nbc·nb`; columns `N..Npad` are zero.
    pub fn n_padded(&self) -> usize {
        self.n_padded
    }

    /// Column count of the extended matrix, `N_ext = Npad + 2·G·nb`.
    pub fn n_extended(&self) -> usize {
        self.n_extended
    }

    /// First global column of the checksum area (`= Npad`).
    pub fn checksum_col0(&self) -> usize {
        self.n_padded
    }

    /// Process column owning extended block column `e` (`e mod Q`).
    pub fn process_col_of_block_col(&self, e: usize) -> usize {
        e % self.q
    }

    /// Group holding data block column `block_col` (`block_col / Q`).
    pub fn group_of(&self, block_col: usize) -> Result<usize, LayoutError> {
        self.check_block_col(block_col)?;
        Ok(block_col / self.q)
    }

    /// Data block columns of group `g`: `[g·Q, min((g+1)·Q, nbc))`.
    pub fn group_members(&self, g: usize) -> Result<Range<usize>, LayoutError> {
        self.check_group(g)?;
        Ok(g * self.q..((g + 1) * self.q).min(self.nbc))
    }

    /// Extended block columns of the two copies of group `g`'s checksum:
    /// `[nbc + 2(G−1−g), nbc + 2(G−1−g) + 1]`.
    pub fn pair_block_cols(&self, g: usize) -> Result<[usize; 2], LayoutError> {
        self.check_group(g)?;
        let e0 = self.nbc + 2 * (self.groups - 1 - g);
        Ok([e0, e0 + 1])
    }

    /// First global columns (in the extended matrix) of the two copies of group `g`'s checksum.
    pub fn pair_global_cols(&self, g: usize) -> Result<[usize; 2], LayoutError> {
        let [e0, e1] = self.pair_block_cols(g)?;
        Ok([e0 * self.nb, e1 * self.nb])
    }

    /// Process columns of the two copies of group `g`'s checksum (always distinct).
    ///
    /// The two copies of the left-factor checksum `D_g` live on the same process columns.
    pub fn pair_process_cols(&self, g: usize) -> Result<[usize; 2], LayoutError> {
        let [e0, e1] = self.pair_block_cols(g)?;
        Ok([e0 % self.q, e1 % self.q])
    }

    /// Whether process column `pc` holds a copy of group `g`'s checksum pair
    /// (and so of `D_g`); `false` for a group that does not exist.
    pub fn holds_pair(&self, g: usize, pc: usize) -> bool {
        self.pair_process_cols(g).is_ok_and(|cols| cols.contains(&pc))
    }

    /// Number of groups whose block columns are all finished when the first
    /// `finished_block_cols` block columns are finished; equivalently the lowest
    /// unfinished group (`G` when every group is finished).
    pub fn finished_groups(&self, finished_block_cols: usize) -> usize {
        if finished_block_cols >= self.nbc {
            self.groups
        } else {
            finished_block_cols / self.q
        }
    }

    /// Whether every block column of group `g` is finished when the first
    /// `finished_block_cols` block columns are.
    pub fn is_group_finished(&self, g: usize, finished_block_cols: usize) -> Result<bool, LayoutError> {
        Ok(finished_block_cols >= self.group_members(g)?.end)
    }

    /// Global column (in the extended matrix) where the active trailing-update range ends
    /// when the first `finished_block_cols` block columns are finished:
    /// `(nbc + 2(G − g_min))·nb`, `g_min` = [`Self::finished_groups`].
    ///
    /// Panel `k` (factored with `k` block columns finished) applies its reflectors to the
    /// columns right of the panel up to `active_end_col(k)`: the data, the padding and the
    /// pairs of every group not yet finished, including the panel's own group. Values of
    /// `finished_block_cols` beyond `nbc` are treated as `nbc` (the result is then `Npad`).
    pub fn active_end_col(&self, finished_block_cols: usize) -> usize {
        (self.nbc + 2 * (self.groups - self.finished_groups(finished_block_cols))) * self.nb
    }

    /// Global row indices owned by process row `pr`, in local order (row `i` of the
    /// process's local array is global row `global_rows_of(pr)[i]`).
    pub fn global_rows_of(&self, pr: usize) -> Result<Vec<usize>, LayoutError> {
        if pr >= self.p {
            return Err(LayoutError::ProcessOutOfRange { pr, pc: 0, p: self.p, q: self.q });
        }
        let local = blacs_ft::index::numroc(self.m, self.nb, pr, 0, self.p);
        Ok((0..local).map(|il| blacs_ft::index::indxl2g(il, self.nb, pr, 0, self.p)).collect())
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
        assert_eq!(ReverseNeighborLayout::new(8, 8, 0, 1, 2), Err(LayoutError::ZeroBlockSize));
        assert_eq!(ReverseNeighborLayout::new(8, 8, 2, 0, 2), Err(LayoutError::ZeroProcessRows));
        assert_eq!(ReverseNeighborLayout::new(8, 8, 2, 2, 1), Err(LayoutError::NeedTwoProcessColumns { q: 1 }));
        assert_eq!(ReverseNeighborLayout::new(8, 8, 2, 2, 0), Err(LayoutError::NeedTwoProcessColumns { q: 0 }));
        assert_eq!(
            ReverseNeighborLayout::new(8, usize::MAX, 2, 2, 2),
            Err(LayoutError::TooLarge { n: usize::MAX, nb: 2 })
        );
        let msg = LayoutError::NeedTwoProcessColumns { q: 1 }.to_string();
        assert!(msg.contains("two process columns") && msg.contains("Q = 1"), "{msg}");
        assert!(LayoutError::ZeroBlockSize.to_string().contains("nb"));
        assert!(LayoutError::ZeroProcessRows.to_string().contains("P = 0"));
        assert!(LayoutError::TooLarge { n: 1, nb: 1 }.to_string().contains("too many"));
    }

    #[test]
    fn example_layout_10_blocks_on_three_columns() {
        // N = 19, nb = 2: 10 data block columns (one padding column), Q = 3: groups {0,1,2} {3,4,5} {6,7,8} {9}.
        let l = ReverseNeighborLayout::new(7, 19, 2, 2, 3).unwrap();
        assert_eq!((l.m(), l.n(), l.nb(), l.p(), l.q()), (7, 19, 2, 2, 3));
        assert_eq!(l.data_block_cols(), 10);
        assert_eq!(l.groups(), 4);
        assert_eq!(l.n_padded(), 20);
        assert_eq!(l.checksum_col0(), 20);
        assert_eq!(l.n_extended(), 20 + 2 * 4 * 2);
        assert_eq!(l.extended_block_cols(), 18);
        assert_eq!(l.group_members(0).unwrap(), 0..3);
        assert_eq!(l.group_members(3).unwrap(), 9..10);
        assert_eq!(l.group_of(0).unwrap(), 0);
        assert_eq!(l.group_of(5).unwrap(), 1);
        assert_eq!(l.group_of(9).unwrap(), 3);
        // Reverse order: the last group next to the data, group 0 rightmost.
        assert_eq!(l.pair_block_cols(3).unwrap(), [10, 11]);
        assert_eq!(l.pair_block_cols(0).unwrap(), [16, 17]);
        assert_eq!(l.pair_global_cols(0).unwrap(), [32, 34]);
        assert_eq!(l.pair_process_cols(3).unwrap(), [1, 2]);
        assert_eq!(l.pair_process_cols(0).unwrap(), [1, 2]);
        assert_eq!(l.pair_process_cols(1).unwrap(), [2, 0]);
        assert_eq!(l.process_col_of_block_col(14), 2);
        assert_eq!(l.global_rows_of(1).unwrap(), vec![2, 3, 6]);
        assert_eq!(l.global_rows_of(0).unwrap(), vec![0, 1, 4, 5]);
    }

    #[test]
    fn out_of_range_queries_are_errors() {
        let l = ReverseNeighborLayout::new(7, 19, 2, 2, 3).unwrap();
        assert_eq!(l.group_of(10), Err(LayoutError::BlockColumnOutOfRange { block_col: 10, block_cols: 10 }));
        assert_eq!(l.group_members(4), Err(LayoutError::GroupOutOfRange { group: 4, groups: 4 }));
        assert!(l.pair_block_cols(4).is_err());
        assert!(l.pair_process_cols(4).is_err());
        assert!(l.holds_pair(1, 2) && l.holds_pair(1, 0) && !l.holds_pair(1, 1) && !l.holds_pair(4, 0));
        assert!(l.pair_global_cols(4).is_err());
        assert!(l.is_group_finished(4, 0).is_err());
        assert!(l.global_rows_of(2).is_err());
        assert!(LayoutError::GroupOutOfRange { group: 4, groups: 4 }.to_string().contains("4 group"));
        assert!(LayoutError::BlockColumnOutOfRange { block_col: 1, block_cols: 1 }.to_string().contains("1 block"));
        assert!(LayoutError::ProcessOutOfRange { pr: 1, pc: 2, p: 1, q: 2 }.to_string().contains("1 x 2"));
    }

    #[test]
    fn finishing_panels_shrinks_the_active_range() {
        let l = ReverseNeighborLayout::new(7, 19, 2, 2, 3).unwrap();
        // Nothing finished: all four pairs active.
        assert_eq!(l.active_end_col(0), 36);
        assert_eq!(l.active_end_col(2), 36);
        assert!(!l.is_group_finished(0, 2).unwrap());
        // Block columns 0,1,2 finished: group 0 (rightmost pair) drops out.
        assert!(l.is_group_finished(0, 3).unwrap());
        assert_eq!(l.finished_groups(3), 1);
        assert_eq!(l.active_end_col(3), 32);
        assert_eq!(l.active_end_col(9), 24);
        assert!(!l.is_group_finished(3, 9).unwrap());
        assert!(l.is_group_finished(3, 10).unwrap());
        assert_eq!(l.active_end_col(10), 20);
        assert_eq!(l.active_end_col(1000), 20);
        assert_eq!(l.finished_groups(1000), 4);
    }

    #[test]
    fn empty_matrices_are_valid() {
        let l = ReverseNeighborLayout::new(0, 0, 3, 1, 2).unwrap();
        assert_eq!((l.data_block_cols(), l.groups(), l.n_extended()), (0, 0, 0));
        assert_eq!(l.active_end_col(0), 0);
        assert!(l.group_of(0).is_err());
        assert!(l.global_rows_of(0).unwrap().is_empty());
    }
}
