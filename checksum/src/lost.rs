//! What one lost process held, and where each piece is rebuilt from.
//!
//! [`ReverseNeighborLayout::lost_blocks`] turns a lost process `(pr, pc)` and the
//! committed step (`finished_block_cols`) into a plain description
//! ([`LostBlocks`]) that a distributed driver acts on along process row `pr`:
//!
//! * every lost data block column `J` (`J mod Q = pc`), restricted to `pr`'s local
//!   rows: if `J` is finished, `stored(A_J) = D_g − Σ stored(A_J')` over the other
//!   finished `J'` of its group; otherwise `Ã_J = C_g − Σ Ã_J'` over all other
//!   `J'` of the group, finished ones contributing their R-only part
//!   ([`crate::encode::r_only_rows`]); the checksum is read from a copy on a
//!   surviving process column;
//! * every lost copy of a right checksum `C_g` (the extended block columns on
//!   `pc`) or of a left checksum `D_g`: copied from the duplicate on the other
//!   process column.
//!
//! Data block columns are rebuilt before any checksum copy is restored (both read
//! the surviving copy, so the order does not matter mathematically).

use crate::layout::{LayoutError, ReverseNeighborLayout};

/// One block column that survives on another process column and enters a rebuild sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Survivor {
    /// Data block column index.
    pub block_col: usize,
    /// Owning process column (`block_col mod Q`).
    pub process_col: usize,
    /// Whether the block column is finished at the committed step.
    pub finished: bool,
    /// For the rebuild of an unfinished block: whether this survivor enters the sum as its
    /// R-only part (strictly-below-diagonal entries zeroed). Always `false` for the rebuild of a
    /// finished block, which sums full stored contents.
    pub r_only: bool,
}

/// Which checksum a lost data block is rebuilt from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChecksumSource {
    /// The right checksum `C_g` (the block was unfinished): its copy `copy` (0 or 1), in
    /// extended block column `block_col` on process column `process_col`.
    Right {
        /// Copy index (0 or 1).
        copy: usize,
        /// Extended block column of that copy.
        block_col: usize,
        /// Process column holding that copy.
        process_col: usize,
    },
    /// The left checksum `D_g` (the block was finished): its copy `copy` (0 or 1), a separate
    /// local array on process column `process_col`.
    Left {
        /// Copy index (0 or 1).
        copy: usize,
        /// Process column holding that copy.
        process_col: usize,
    },
}

/// A lost data block column (its rows on the lost process row) and how to rebuild it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostDataBlock {
    /// Data block column index `J`.
    pub block_col: usize,
    /// Its group `g = J / Q`.
    pub group: usize,
    /// Whether `J` is finished (factored) at the committed step.
    pub finished: bool,
    /// First local column of the block in the lost process's local array of the extended matrix.
    pub local_col0: usize,
    /// The checksum copy to read (on a surviving process column).
    pub source: ChecksumSource,
    /// The block columns whose rows are subtracted from the checksum.
    pub survivors: Vec<Survivor>,
}

/// A lost copy of a right checksum `C_g` (an extended block column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LostRightCopy {
    /// Group `g`.
    pub group: usize,
    /// Which copy was lost (0 or 1).
    pub copy: usize,
    /// Extended block column of the lost copy.
    pub block_col: usize,
    /// First local column of the lost copy in the lost process's local array.
    pub local_col0: usize,
    /// Extended block column of the surviving duplicate.
    pub duplicate_block_col: usize,
    /// Process column of the surviving duplicate.
    pub duplicate_process_col: usize,
    /// Whether group `g` is finished (its pair no longer takes part in updates).
    pub group_finished: bool,
}

/// A lost copy of a left checksum `D_g` (a separate local array).
///
/// Listed for every group with a copy on the lost process column, also while no block column
/// of the group is finished (then `D_g` is zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LostLeftCopy {
    /// Group `g`.
    pub group: usize,
    /// Which copy was lost (0 or 1).
    pub copy: usize,
    /// Process column of the surviving duplicate.
    pub duplicate_process_col: usize,
    /// Number of finished block columns of group `g` (0: `D_g` is zero).
    pub finished_members: usize,
}

/// Everything a lost process `(pr, pc)` held at a committed step, as plain data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostBlocks {
    /// Lost process row.
    pub pr: usize,
    /// Lost process column.
    pub pc: usize,
    /// Committed step: the first `finished_block_cols` data block columns are finished.
    pub finished_block_cols: usize,
    /// Number of local rows of process row `pr` (rows of every lost block).
    pub local_rows: usize,
    /// Global block-row indices owned by `pr`, in local order.
    pub row_blocks: Vec<usize>,
    /// Lost data block columns, in increasing order.
    pub data: Vec<LostDataBlock>,
    /// Lost copies of right checksums, in increasing group order.
    pub right_copies: Vec<LostRightCopy>,
    /// Lost copies of left checksums, in increasing group order.
    pub left_copies: Vec<LostLeftCopy>,
}

impl ReverseNeighborLayout {
    /// Describes what process `(pr, pc)` held when the first `finished_block_cols` block
    /// columns are finished (values beyond `nbc` count as `nbc`), and where each lost piece
    /// is rebuilt from. Errors when `(pr, pc)` is outside the grid.
    pub fn lost_blocks(&self, pr: usize, pc: usize, finished_block_cols: usize) -> Result<LostBlocks, LayoutError> {
        self.check_process(pr, pc)?;
        let (nb, p, q) = (self.nb(), self.p(), self.q());
        let f = finished_block_cols.min(self.data_block_cols());
        let local_col0 = |e: usize| blacs_ft::index::indxg2l(e * nb, nb, q);
        let local_rows = blacs_ft::index::numroc(self.m(), nb, pr, 0, p);
        let row_blocks = (pr..self.m().div_ceil(nb)).step_by(p).collect();

        let mut data = Vec::new();
        for j in (pc..self.data_block_cols()).step_by(q) {
            let g = j / q;
            let finished = j < f;
            let pair = self.pair_block_cols(g)?;
            // The copy on a process column other than pc (copy 0 unless it is on pc).
            let copy = usize::from(pair[0] % q == pc);
            let process_col = pair[copy] % q;
            let source = if finished {
                ChecksumSource::Left { copy, process_col }
            } else {
                ChecksumSource::Right { copy, block_col: pair[copy], process_col }
            };
            let survivors = self
                .group_members(g)?
                .filter(|&jj| jj != j && (!finished || jj < f))
                .map(|jj| Survivor {
                    block_col: jj,
                    process_col: jj % q,
                    finished: jj < f,
                    r_only: !finished && jj < f,
                })
                .collect();
            data.push(LostDataBlock { block_col: j, group: g, finished, local_col0: local_col0(j), source, survivors });
        }

        let mut right_copies = Vec::new();
        let mut left_copies = Vec::new();
        for g in 0..self.groups() {
            let pair = self.pair_block_cols(g)?;
            let members = self.group_members(g)?;
            for copy in 0..2 {
                if pair[copy] % q != pc {
                    continue;
                }
                let dup = 1 - copy;
                right_copies.push(LostRightCopy {
                    group: g,
                    copy,
                    block_col: pair[copy],
                    local_col0: local_col0(pair[copy]),
                    duplicate_block_col: pair[dup],
                    duplicate_process_col: pair[dup] % q,
                    group_finished: f >= members.end,
                });
                left_copies.push(LostLeftCopy {
                    group: g,
                    copy,
                    duplicate_process_col: pair[dup] % q,
                    finished_members: f.clamp(members.start, members.end) - members.start,
                });
            }
        }
        Ok(LostBlocks { pr, pc, finished_block_cols: f, local_rows, row_blocks, data, right_copies, left_copies })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_process_in_a_three_column_grid() {
        // 10 data block columns, Q = 3, groups {0,1,2} {3,4,5} {6,7,8} {9}; pairs at
        // extended block columns g3: 10,11  g2: 12,13  g1: 14,15  g0: 16,17.
        let l = ReverseNeighborLayout::new(7, 19, 2, 2, 3).unwrap();
        let lost = l.lost_blocks(1, 1, 4).unwrap();
        assert_eq!((lost.pr, lost.pc, lost.finished_block_cols, lost.local_rows), (1, 1, 4, 3));
        assert_eq!(lost.row_blocks, vec![1, 3]);
        let cols: Vec<_> = lost.data.iter().map(|d| (d.block_col, d.group, d.finished)).collect();
        assert_eq!(cols, vec![(1, 0, true), (4, 1, false), (7, 2, false)]);
        // Block 1 is finished: rebuilt from D_0 minus the other finished members (0 and 2).
        let d1 = &lost.data[0];
        assert_eq!(d1.local_col0, 0);
        assert_eq!(d1.source, ChecksumSource::Left { copy: 1, process_col: 2 });
        assert_eq!(
            d1.survivors.iter().map(|s| (s.block_col, s.r_only)).collect::<Vec<_>>(),
            vec![(0, false), (2, false)]
        );
        // Block 4 is unfinished: C_1 minus Ã_3 (finished, R only) and Ã_5.
        let d4 = &lost.data[1];
        assert_eq!(d4.local_col0, 2);
        assert_eq!(d4.source, ChecksumSource::Right { copy: 0, block_col: 14, process_col: 2 });
        let s: Vec<_> = d4.survivors.iter().map(|s| (s.block_col, s.process_col, s.finished, s.r_only)).collect();
        assert_eq!(s, vec![(3, 0, true, true), (5, 2, false, false)]);
        // Block 7: group 2's pair is at 12 (pc 0), 13 (pc 1): copy 0 survives.
        assert_eq!(lost.data[2].source, ChecksumSource::Right { copy: 0, block_col: 12, process_col: 0 });
        assert_eq!(lost.data[2].survivors.len(), 2);
        // Process column 1 holds extended block columns 10 (g3 copy 0), 13 (g2 copy 1), 16 (g0 copy 0).
        let rc: Vec<_> =
            lost.right_copies.iter().map(|c| (c.group, c.copy, c.block_col, c.duplicate_block_col)).collect();
        assert_eq!(rc, vec![(0, 0, 16, 17), (2, 1, 13, 12), (3, 0, 10, 11)]);
        assert_eq!(lost.right_copies[0].local_col0, 10);
        assert!(lost.right_copies[0].group_finished);
        assert!(!lost.right_copies[1].group_finished);
        let lc: Vec<_> = lost.left_copies.iter().map(|c| (c.group, c.copy, c.duplicate_process_col)).collect();
        assert_eq!(lc, vec![(0, 0, 2), (2, 1, 0), (3, 0, 2)]);
        assert_eq!(lost.left_copies.iter().map(|c| c.finished_members).collect::<Vec<_>>(), vec![3, 0, 0]);
    }

    #[test]
    fn process_column_without_data() {
        // One data block column, Q = 4: process columns 1..4 hold no data; the pair is at 1 and 2.
        let l = ReverseNeighborLayout::new(3, 2, 2, 1, 4).unwrap();
        let lost = l.lost_blocks(0, 3, 0).unwrap();
        assert!(lost.data.is_empty() && lost.right_copies.is_empty() && lost.left_copies.is_empty());
        let lost = l.lost_blocks(0, 2, 0).unwrap();
        assert!(lost.data.is_empty());
        assert_eq!(lost.right_copies.len(), 1);
        assert_eq!(lost.right_copies[0].duplicate_process_col, 1);
        let lost = l.lost_blocks(0, 0, 7).unwrap();
        assert_eq!(lost.finished_block_cols, 1);
        assert!(lost.data[0].finished && lost.data[0].survivors.is_empty());
    }

    #[test]
    fn outside_the_grid_is_an_error() {
        let l = ReverseNeighborLayout::new(3, 2, 2, 1, 4).unwrap();
        assert_eq!(l.lost_blocks(1, 0, 0), Err(LayoutError::ProcessOutOfRange { pr: 1, pc: 0, p: 1, q: 4 }));
        assert!(l.lost_blocks(0, 4, 0).is_err());
    }
}
