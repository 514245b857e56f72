//! What a set of lost processes of one process row held under the rotating
//! layout, and how each group is rebuilt.
//!
//! [`RotatingLayout::lost_blocks`] turns up to `f` lost process columns of process
//! row `pr` and the committed step (`finished_block_cols`) into plain data
//! ([`RotatingLostBlocks`]) that a distributed driver acts on along row `pr`, group
//! by group, with [`crate::erasure::ErasurePlan`]:
//!
//! 1. **left solve** (finished erased blocks): the relations
//!    `D_g^(i) = Σ_{t finished} w_{i,t}·stored(A_t)` over the group's finished
//!    members, the erased ones unknown ([`LostGroup::left_erased`]), the finished
//!    surviving members entering with their full stored content
//!    ([`LostGroup::left_survivors`]), the surviving `D_g^(i)` on their process columns;
//! 2. **right solve** (unfinished erased blocks): `C_g^(i) = Σ_t w_{i,t}·Ã_t` over
//!    all members, finished members (those just rebuilt by step 1 included)
//!    entering with their R-only part ([`LostGroup::right_survivors`]);
//! 3. the erased checksums `C_g^(i)` (an extended block column) and `D_g^(i)` (a
//!    separate local array on the same process column) are encoded again from the
//!    rebuilt group: `Σ_t w_{i,t}·Ã_t` and `Σ_{t finished} w_{i,t}·stored(A_t)`;
//!
//! Each solve has at most `f` unknowns because a group has one block on each of its
//! `s + f ≤ Q` process columns (data and checksums), so `k ≤ f` lost process columns
//! erase at most `k` of its blocks.

use crate::erasure::{ErasureError, GroupBlock};
use crate::layout::LayoutError;
use crate::rotating::RotatingLayout;
use std::ops::Range;

/// A lost data block column of a group (its rows on the lost process row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErasedDataBlock {
    /// Data block column `J`.
    pub block_col: usize,
    /// Its position `t` in the group (the weights' column).
    pub position: usize,
    /// The lost process column holding it (`J mod Q`).
    pub process_col: usize,
    /// Whether `J` is finished at the committed step (rebuilt by the left solve).
    pub finished: bool,
    /// First local column of the block in the lost process's local array of the extended matrix.
    pub local_col0: usize,
}

/// A lost checksum `C_g^(i)` (and the `D_g^(i)` kept on the same process column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErasedChecksum {
    /// Checksum index `i`.
    pub index: usize,
    /// Extended block column of `C_g^(i)`.
    pub block_col: usize,
    /// The lost process column holding it.
    pub process_col: usize,
    /// First local column of `C_g^(i)` in the lost process's local array.
    pub local_col0: usize,
}

/// A group member that survives and enters a rebuild's right-hand side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WeightedSurvivor {
    /// Data block column.
    pub block_col: usize,
    /// Position in the group (the weights' column).
    pub position: usize,
    /// Owning process column (`block_col mod Q`; a lost one when `rebuilt_first`).
    pub process_col: usize,
    /// Enters as its R-only part (strictly-below-diagonal entries zeroed): a finished member
    /// in the right solve.
    pub r_only: bool,
    /// A finished member on a lost process column, rebuilt by the left solve before the right one.
    pub rebuilt_first: bool,
}

/// One group touched by the losses, and its two solves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostGroup {
    /// Group `g`.
    pub group: usize,
    /// Its data block columns.
    pub members: Range<usize>,
    /// How many of them are finished (a prefix of the group).
    pub finished_members: usize,
    /// Whether the whole group is finished (its checksums no longer take part in updates).
    pub group_finished: bool,
    /// Lost data blocks, in increasing order.
    pub erased_data: Vec<ErasedDataBlock>,
    /// Lost checksums, in increasing order.
    pub erased_checksums: Vec<ErasedChecksum>,
    /// The surviving checksums, with their process columns, in increasing index order.
    pub surviving_checksums: Vec<(usize, usize)>,
    /// The erasures of the left solve (finished lost blocks and lost checksums), for
    /// [`crate::erasure::ErasurePlan::new`] over `finished_members` blocks.
    pub left_erased: Vec<GroupBlock>,
    /// The finished surviving members (full stored content) of the left solve.
    pub left_survivors: Vec<WeightedSurvivor>,
    /// The erasures of the right solve (unfinished lost blocks and lost checksums), for
    /// [`crate::erasure::ErasurePlan::new`] over all members.
    pub right_erased: Vec<GroupBlock>,
    /// Every member but the unfinished lost ones, for the right solve.
    pub right_survivors: Vec<WeightedSurvivor>,
}

/// Everything the lost processes of one process row held at a committed step, as plain data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RotatingLostBlocks {
    /// Lost process row.
    pub pr: usize,
    /// Lost process columns (sorted, distinct, at most `f`).
    pub process_cols: Vec<usize>,
    /// Committed step: the first `finished_block_cols` data block columns are finished.
    pub finished_block_cols: usize,
    /// Number of local rows of process row `pr`.
    pub local_rows: usize,
    /// Global block-row indices owned by `pr`, in local order.
    pub row_blocks: Vec<usize>,
    /// Groups with at least one lost block (data or checksum), in increasing order.
    pub groups: Vec<LostGroup>,
}

impl RotatingLayout {
    /// Describes what processes `(pr, pc)`, `pc ∈ process_cols` (duplicates count once),
    /// held when the first `finished_block_cols` block columns are finished (values beyond
    /// `nbc` count as `nbc`), and how each group is rebuilt.
    ///
    /// Errors: a process outside the grid ([`ErasureError::Layout`]); more than `f` lost
    /// process columns ([`ErasureError::TooManyLossesInProcessRow`]).
    pub fn lost_blocks(
        &self,
        pr: usize,
        process_cols: &[usize],
        finished_block_cols: usize,
    ) -> Result<RotatingLostBlocks, ErasureError> {
        let (nb, p, q, f) = (self.nb(), self.p(), self.q(), self.checksums());
        let mut lost: Vec<usize> = process_cols.to_vec();
        lost.sort_unstable();
        lost.dedup();
        if pr >= p || lost.last().is_some_and(|&pc| pc >= q) {
            let pc = lost.last().copied().unwrap_or(0);
            return Err(ErasureError::Layout(LayoutError::ProcessOutOfRange { pr, pc, p, q }));
        }
        if lost.len() > f {
            return Err(ErasureError::TooManyLossesInProcessRow { row: pr, process_cols: lost, tolerated: f });
        }
        let done = finished_block_cols.min(self.data_block_cols());
        let local_col0 = |e: usize| blacs_ft::index::indxg2l(e * nb, nb, q);
        let is_lost = |e: usize| lost.contains(&(e % q));

        let mut groups = Vec::new();
        for g in 0..self.groups() {
            let members = self.group_members(g)?;
            let checksum_cols = self.checksum_block_cols(g)?;
            let erased_data: Vec<ErasedDataBlock> = members
                .clone()
                .filter(|&j| is_lost(j))
                .map(|j| ErasedDataBlock {
                    block_col: j,
                    position: j - members.start,
                    process_col: j % q,
                    finished: j < done,
                    local_col0: local_col0(j),
                })
                .collect();
            let erased_checksums: Vec<ErasedChecksum> = checksum_cols
                .clone()
                .enumerate()
                .filter(|&(_, e)| is_lost(e))
                .map(|(i, e)| ErasedChecksum { index: i, block_col: e, process_col: e % q, local_col0: local_col0(e) })
                .collect();
            if erased_data.is_empty() && erased_checksums.is_empty() {
                continue;
            }
            let surviving_checksums =
                checksum_cols.clone().enumerate().filter(|&(_, e)| !is_lost(e)).map(|(i, e)| (i, e % q)).collect();
            let lost_checksums = erased_checksums.iter().map(|c| GroupBlock::Checksum(c.index));
            let left_erased = erased_data
                .iter()
                .filter(|d| d.finished)
                .map(|d| GroupBlock::Data(d.position))
                .chain(lost_checksums.clone())
                .collect();
            let right_erased = erased_data
                .iter()
                .filter(|d| !d.finished)
                .map(|d| GroupBlock::Data(d.position))
                .chain(lost_checksums)
                .collect();
            let survivor = |j: usize, r_only: bool| WeightedSurvivor {
                block_col: j,
                position: j - members.start,
                process_col: j % q,
                r_only,
                rebuilt_first: is_lost(j),
            };
            let left_survivors =
                members.clone().filter(|&j| j < done && !is_lost(j)).map(|j| survivor(j, false)).collect();
            let right_survivors =
                members.clone().filter(|&j| j < done || !is_lost(j)).map(|j| survivor(j, j < done)).collect();
            groups.push(LostGroup {
                group: g,
                members: members.clone(),
                finished_members: done.clamp(members.start, members.end) - members.start,
                group_finished: done >= members.end,
                erased_data,
                erased_checksums,
                surviving_checksums,
                left_erased,
                left_survivors,
                right_erased,
                right_survivors,
            });
        }
        let local_rows = blacs_ft::index::numroc(self.m(), nb, pr, 0, p);
        let row_blocks = (pr..self.m().div_ceil(nb)).step_by(p).collect();
        Ok(RotatingLostBlocks { pr, process_cols: lost, finished_block_cols: done, local_rows, row_blocks, groups })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_lost_columns_of_four_with_two_checksums() {
        // nbc = 10, Q = 4, f = 2, s = 2: groups {0,1} {2,3} {4,5} {6,7} {8,9}; group g's data on
        // process columns 2g, 2g+1 mod 4, its checksums on 2g+2, 2g+3 mod 4.
        let l = RotatingLayout::new(7, 19, 2, 2, 4, 2).unwrap();
        let lost = l.lost_blocks(1, &[3, 0, 3], 3).unwrap();
        assert_eq!((lost.pr, lost.process_cols.clone(), lost.finished_block_cols), (1, vec![0, 3], 3));
        assert_eq!((lost.local_rows, lost.row_blocks.clone()), (3, vec![1, 3]));
        assert_eq!(lost.groups.len(), 5);
        // Group 0: data 0 (pc 0, finished) and checksum 1 (pc 3) lost.
        let g0 = &lost.groups[0];
        assert_eq!(g0.erased_data.iter().map(|d| (d.block_col, d.finished)).collect::<Vec<_>>(), vec![(0, true)]);
        assert_eq!(g0.erased_checksums.iter().map(|c| (c.index, c.block_col)).collect::<Vec<_>>(), vec![(1, 19)]);
        assert_eq!(g0.surviving_checksums, vec![(0, 2)]);
        assert_eq!(g0.left_erased, vec![GroupBlock::Data(0), GroupBlock::Checksum(1)]);
        assert_eq!(g0.left_survivors.iter().map(|s| s.block_col).collect::<Vec<_>>(), vec![1]);
        assert_eq!(g0.right_erased, vec![GroupBlock::Checksum(1)]);
        assert!(g0.right_survivors.iter().all(|s| s.r_only));
        assert!(g0.right_survivors[0].rebuilt_first && !g0.right_survivors[1].rebuilt_first);
        assert!(g0.group_finished && g0.finished_members == 2);
        // Group 1: data 3 (pc 3, unfinished); block 2 finished (3 done).
        let g1 = &lost.groups[1];
        assert_eq!(g1.finished_members, 1);
        assert_eq!(g1.right_erased, vec![GroupBlock::Data(1), GroupBlock::Checksum(0)]);
        assert_eq!(g1.left_erased, vec![GroupBlock::Checksum(0)]);
        assert_eq!(g1.right_survivors.iter().map(|s| (s.block_col, s.r_only)).collect::<Vec<_>>(), vec![(2, true)]);
        assert_eq!(g1.erased_checksums.iter().map(|c| c.index).collect::<Vec<_>>(), vec![0]);
    }

    #[test]
    fn too_many_losses_and_bad_processes_are_errors() {
        let l = RotatingLayout::new(7, 19, 2, 2, 4, 2).unwrap();
        let e = l.lost_blocks(0, &[1, 2, 3], 0).unwrap_err();
        assert_eq!(e, ErasureError::TooManyLossesInProcessRow { row: 0, process_cols: vec![1, 2, 3], tolerated: 2 });
        assert!(matches!(l.lost_blocks(0, &[4], 0), Err(ErasureError::Layout(_))));
        assert!(matches!(l.lost_blocks(2, &[0], 0), Err(ErasureError::Layout(_))));
        assert_eq!(l.lost_blocks(0, &[], 0).unwrap().groups, Vec::new());
    }
}
