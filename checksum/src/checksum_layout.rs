//! One checksum layout for the drivers: either scheme, asked the same questions.
//!
//! [`ChecksumLayout`] is the reverse-neighboring layout ([`ReverseNeighborLayout`]) or
//! the rotating one ([`RotatingLayout`]), seen as one scheme:
//!
//! * group `g` is a run of consecutive data block columns
//!   ([`ChecksumLayout::group_members`]);
//! * it has `f` checksums `C_g^(i) = Σ_{J∈g} w_{i,J}·Ã_J`
//!   ([`ChecksumLayout::checksums`], [`ChecksumLayout::weight`]);
//! * checksum `i` is stored in one or more replicas, each an extended block column on its
//!   own process column ([`ChecksumLayout::replica_block_cols`]), and a process column
//!   holds at most one replica of one checksum of a group ([`ChecksumLayout::held`]);
//!   the left-factor sums `D_g^(i)` live with them.
//!
//! The reverse-neighboring layout is the case of groups of `Q`, one checksum (`f = 1`)
//! with unit weights, replicated on two process columns; the rotating layout has groups
//! of `Q − f`, `f` weighted checksums, one replica each. The drivers' encoding, rebuild
//! and verification are written once over these answers.
//!
//! Why an enum rather than a trait: the set of layouts is closed (the drivers, the
//! checkpoints and the options name them), a layout is a plain value that is cloned
//! into protected results and compared, and the drivers keep it in their state without
//! becoming generic over it; each answer is one `match` here, not in every kernel.

use crate::erasure::{ErasureError, ErasurePlan, GroupBlock};
use crate::layout::{LayoutError, ReverseNeighborLayout};
use crate::rotating::RotatingLayout;
use crate::weights::CodeWeights;
use std::fmt;
use std::ops::Range;

/// Which checksum layout a fault-tolerant call uses (the user's choice;
/// a checkpoint records it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum LayoutKind {
    /// The reverse-neighboring pairs: one checksum per group of `Q`, stored twice (the default).
    #[default]
    ReverseNeighbor,
    /// The rotating layout: `checksums` (`f`) weighted checksums per group of `Q − f`.
    Rotating {
        /// Checksums per group `f`, the losses per process row tolerated (`1 ≤ f ≤ 3`).
        checksums: usize,
    },
}

impl LayoutKind {
    /// Checksums per group `f` (1 for the reverse-neighboring layout).
    pub fn checksums(&self) -> usize {
        match self {
            LayoutKind::ReverseNeighbor => 1,
            LayoutKind::Rotating { checksums } => *checksums,
        }
    }
}

impl fmt::Display for LayoutKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutKind::ReverseNeighbor => write!(f, "reverse-neighbor"),
            LayoutKind::Rotating { checksums } => write!(f, "rotating (f = {checksums})"),
        }
    }
}

/// Either checksum layout of an `M × N` matrix on a `P × Q` grid (module docs).
#[derive(Debug, Clone, PartialEq)]
pub enum ChecksumLayout {
    /// Groups of `Q`, one unit-weight checksum stored on two neighbouring process columns.
    ReverseNeighbor(ReverseNeighborLayout),
    /// Groups of `Q − f`, `f` weighted checksums on the process columns the group skips.
    Rotating(RotatingLayout),
}

/// One replica of one checksum of a group, as a process column holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldChecksum {
    /// Checksum index `i` (`0 ≤ i < f`).
    pub index: usize,
    /// Which replica of it (`0` for the rotating layout).
    pub replica: usize,
    /// Its extended block column.
    pub block_col: usize,
}

impl ChecksumLayout {
    /// The layout `kind` of an `m × n` matrix with `nb × nb` blocks on a `p × q` grid.
    ///
    /// Errors: those of [`ReverseNeighborLayout::new`] and [`RotatingLayout::new`]
    /// (`Q < 2`, `Q < f + 1`, `f` out of `1..=3`, …).
    pub fn new(kind: LayoutKind, m: usize, n: usize, nb: usize, p: usize, q: usize) -> Result<Self, LayoutError> {
        Ok(match kind {
            LayoutKind::ReverseNeighbor => ChecksumLayout::ReverseNeighbor(ReverseNeighborLayout::new(m, n, nb, p, q)?),
            LayoutKind::Rotating { checksums } => {
                ChecksumLayout::Rotating(RotatingLayout::new(m, n, nb, p, q, checksums)?)
            }
        })
    }

    /// Which layout this is.
    pub fn kind(&self) -> LayoutKind {
        match self {
            ChecksumLayout::ReverseNeighbor(_) => LayoutKind::ReverseNeighbor,
            ChecksumLayout::Rotating(l) => LayoutKind::Rotating { checksums: l.checksums() },
        }
    }

    /// Global row count `M`.
    pub fn m(&self) -> usize {
        match self {
            ChecksumLayout::ReverseNeighbor(l) => l.m(),
            ChecksumLayout::Rotating(l) => l.m(),
        }
    }

    /// Global data column count `N`.
    pub fn n(&self) -> usize {
        match self {
            ChecksumLayout::ReverseNeighbor(l) => l.n(),
            ChecksumLayout::Rotating(l) => l.n(),
        }
    }

    /// Block size `nb`.
    pub fn nb(&self) -> usize {
        match self {
            ChecksumLayout::ReverseNeighbor(l) => l.nb(),
            ChecksumLayout::Rotating(l) => l.nb(),
        }
    }

    /// Process rows `P`.
    pub fn p(&self) -> usize {
        match self {
            ChecksumLayout::ReverseNeighbor(l) => l.p(),
            ChecksumLayout::Rotating(l) => l.p(),
        }
    }

    /// Process columns `Q`.
    pub fn q(&self) -> usize {
        match self {
            ChecksumLayout::ReverseNeighbor(l) => l.q(),
            ChecksumLayout::Rotating(l) => l.q(),
        }
    }

    /// Checksums per group `f` (1 for the reverse-neighboring layout).
    pub fn checksums(&self) -> usize {
        match self {
            ChecksumLayout::ReverseNeighbor(_) => 1,
            ChecksumLayout::Rotating(l) => l.checksums(),
        }
    }

    /// Replicas of each checksum (2 for the reverse-neighboring layout, 1 for the rotating).
    pub fn replicas(&self) -> usize {
        match self {
            ChecksumLayout::ReverseNeighbor(_) => 2,
            ChecksumLayout::Rotating(_) => 1,
        }
    }

    /// Lost processes per process row that a rebuild tolerates: `f`.
    pub fn tolerated_losses(&self) -> usize {
        self.checksums()
    }

    /// The weights `W` (`f × s`, `s` the full group size): all ones for the
    /// reverse-neighboring layout (`f = 1`, `s = Q`).
    pub fn code_weights(&self) -> Result<CodeWeights, LayoutError> {
        match self {
            ChecksumLayout::ReverseNeighbor(l) => CodeWeights::new(1, l.q()),
            ChecksumLayout::Rotating(l) => Ok(l.weights().clone()),
        }
    }

    /// Weight `w_{i,t}` of the member at position `t` of its group in checksum `i`
    /// (1 for the reverse-neighboring layout; 0 for indices out of range).
    pub fn weight(&self, i: usize, t: usize) -> f64 {
        match self {
            ChecksumLayout::ReverseNeighbor(_) => f64::from(u8::from(i == 0)),
            ChecksumLayout::Rotating(l) => l.weights().weight(i, t).unwrap_or(0.0),
        }
    }

    /// Number of data block columns `nbc`.
    pub fn data_block_cols(&self) -> usize {
        match self {
            ChecksumLayout::ReverseNeighbor(l) => l.data_block_cols(),
            ChecksumLayout::Rotating(l) => l.data_block_cols(),
        }
    }

    /// Number of groups `G`.
    pub fn groups(&self) -> usize {
        match self {
            ChecksumLayout::ReverseNeighbor(l) => l.groups(),
            ChecksumLayout::Rotating(l) => l.groups(),
        }
    }

    /// Padded data column count `Npad = nbc·nb`.
    pub fn n_padded(&self) -> usize {
        match self {
            ChecksumLayout::ReverseNeighbor(l) => l.n_padded(),
            ChecksumLayout::Rotating(l) => l.n_padded(),
        }
    }

    /// Column count of the extended matrix.
    pub fn n_extended(&self) -> usize {
        match self {
            ChecksumLayout::ReverseNeighbor(l) => l.n_extended(),
            ChecksumLayout::Rotating(l) => l.n_extended(),
        }
    }

    /// First global column of the checksum area (`Npad`).
    pub fn checksum_col0(&self) -> usize {
        self.n_padded()
    }

    /// Data block columns of group `g`.
    pub fn group_members(&self, g: usize) -> Result<Range<usize>, LayoutError> {
        match self {
            ChecksumLayout::ReverseNeighbor(l) => l.group_members(g),
            ChecksumLayout::Rotating(l) => l.group_members(g),
        }
    }

    /// Group holding data block column `block_col`.
    pub fn group_of(&self, block_col: usize) -> Result<usize, LayoutError> {
        match self {
            ChecksumLayout::ReverseNeighbor(l) => l.group_of(block_col),
            ChecksumLayout::Rotating(l) => l.group_of(block_col),
        }
    }

    /// Position of data block column `block_col` in its group (the weights' column).
    pub fn position_in_group(&self, block_col: usize) -> Result<usize, LayoutError> {
        let g = self.group_of(block_col)?;
        Ok(block_col - self.group_members(g)?.start)
    }

    /// Extended block columns of the replicas of checksum `i` of group `g`, replica 0 first.
    pub fn replica_block_cols(&self, g: usize, i: usize) -> Result<Vec<usize>, LayoutError> {
        match self {
            ChecksumLayout::ReverseNeighbor(l) => {
                if i != 0 {
                    return Err(LayoutError::ChecksumOutOfRange { index: i, checksums: 1 });
                }
                Ok(l.pair_block_cols(g)?.to_vec())
            }
            ChecksumLayout::Rotating(l) => Ok(vec![l.checksum_block_col(g, i)?]),
        }
    }

    /// Every replica of every checksum of group `g` (its extended block columns, in
    /// checksum then replica order).
    pub fn checksum_block_cols(&self, g: usize) -> Result<Vec<usize>, LayoutError> {
        let mut cols = Vec::with_capacity(self.checksums() * self.replicas());
        for i in 0..self.checksums() {
            cols.extend(self.replica_block_cols(g, i)?);
        }
        Ok(cols)
    }

    /// The checksum replica of group `g` that process column `pc` holds, if any (`None`
    /// also for a group that does not exist).
    pub fn held(&self, g: usize, pc: usize) -> Option<HeldChecksum> {
        let q = self.q();
        (0..self.checksums()).find_map(|i| {
            let cols = self.replica_block_cols(g, i).ok()?;
            cols.iter().position(|e| e % q == pc).map(|replica| HeldChecksum {
                index: i,
                replica,
                block_col: cols[replica],
            })
        })
    }

    /// Whether process column `pc` holds a checksum replica of group `g` (and so a `D_g`).
    pub fn holds_checksum(&self, g: usize, pc: usize) -> bool {
        self.held(g, pc).is_some()
    }

    /// Global row indices owned by process row `pr`, ascending. Errors when `pr ≥ P`.
    pub fn global_rows_of(&self, pr: usize) -> Result<Vec<usize>, LayoutError> {
        match self {
            ChecksumLayout::ReverseNeighbor(l) => l.global_rows_of(pr),
            ChecksumLayout::Rotating(l) => l.global_rows_of(pr),
        }
    }

    /// Number of groups finished when the first `finished_block_cols` block columns are.
    pub fn finished_groups(&self, finished_block_cols: usize) -> usize {
        match self {
            ChecksumLayout::ReverseNeighbor(l) => l.finished_groups(finished_block_cols),
            ChecksumLayout::Rotating(l) => l.finished_groups(finished_block_cols),
        }
    }

    /// Global column where the active trailing-update range ends when the first
    /// `finished_block_cols` block columns are finished.
    pub fn active_end_col(&self, finished_block_cols: usize) -> usize {
        match self {
            ChecksumLayout::ReverseNeighbor(l) => l.active_end_col(finished_block_cols),
            ChecksumLayout::Rotating(l) => l.active_end_col(finished_block_cols),
        }
    }

    /// Predicted extra trailing-update flops of the fault-tolerant QR (`≈ 2/Q` or `f/(Q − f)`).
    pub fn overhead_model(&self) -> f64 {
        match self {
            ChecksumLayout::ReverseNeighbor(l) => l.overhead_model(),
            ChecksumLayout::Rotating(l) => l.overhead_model(),
        }
    }

    /// [`Self::overhead_model`] for the LU.
    pub fn overhead_model_lu(&self) -> f64 {
        match self {
            ChecksumLayout::ReverseNeighbor(l) => l.overhead_model_lu(),
            ChecksumLayout::Rotating(l) => l.overhead_model_lu(),
        }
    }

    /// The rebuild of the data blocks at `erased_positions` of a group of `members` blocks
    /// from its surviving checksums (`lost_checksums`: those with no surviving replica):
    /// which checksums' relations are used and the factored small system.
    ///
    /// Errors: more erasures than checksums ([`ErasureError::TooManyErasures`]).
    pub fn erasure_plan(
        &self,
        members: usize,
        erased_positions: &[usize],
        lost_checksums: &[usize],
    ) -> Result<ErasurePlan, ErasureError> {
        let erased: Vec<GroupBlock> = erased_positions
            .iter()
            .map(|&t| GroupBlock::Data(t))
            .chain(lost_checksums.iter().map(|&i| GroupBlock::Checksum(i)))
            .collect();
        ErasurePlan::new(&self.code_weights()?, members, &erased)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reverse_neighbor_is_one_unit_checksum_replicated_twice() {
        let rn = ReverseNeighborLayout::new(7, 19, 2, 2, 3).unwrap();
        let l = ChecksumLayout::new(LayoutKind::ReverseNeighbor, 7, 19, 2, 2, 3).unwrap();
        assert_eq!((l.checksums(), l.replicas(), l.tolerated_losses()), (1, 2, 1));
        assert_eq!(l.kind(), LayoutKind::ReverseNeighbor);
        for g in 0..rn.groups() {
            assert_eq!(l.group_members(g).unwrap(), rn.group_members(g).unwrap());
            assert_eq!(l.replica_block_cols(g, 0).unwrap(), rn.pair_block_cols(g).unwrap().to_vec());
            for pc in 0..3 {
                assert_eq!(l.holds_checksum(g, pc), rn.holds_pair(g, pc), "g={g} pc={pc}");
            }
            for t in 0..3 {
                assert_eq!(l.weight(0, t), 1.0);
            }
        }
        assert!(l.replica_block_cols(0, 1).is_err());
        assert_eq!(l.active_end_col(3), rn.active_end_col(3));
        assert_eq!(l.overhead_model(), rn.overhead_model());
        assert_eq!(l.held(1, 0), Some(HeldChecksum { index: 0, replica: 1, block_col: 15 }));
    }

    #[test]
    fn rotating_holds_f_single_checksums_off_the_group() {
        let l = ChecksumLayout::new(LayoutKind::Rotating { checksums: 2 }, 7, 19, 2, 2, 4).unwrap();
        assert_eq!((l.checksums(), l.replicas(), l.tolerated_losses()), (2, 1, 2));
        assert_eq!(l.kind(), LayoutKind::Rotating { checksums: 2 });
        for g in 0..l.groups() {
            let members = l.group_members(g).unwrap();
            let holders: Vec<usize> = (0..4).filter(|&pc| l.holds_checksum(g, pc)).collect();
            assert_eq!(holders.len(), 2);
            assert!(members.clone().all(|j| !holders.contains(&(j % 4))));
            assert_eq!(l.checksum_block_cols(g).unwrap().len(), 2);
        }
        assert!(l.weight(1, 0) != l.weight(1, 1));
        assert_eq!(
            ChecksumLayout::new(LayoutKind::Rotating { checksums: 2 }, 4, 4, 1, 1, 2),
            Err(LayoutError::TooFewProcessColumns { q: 2, f: 2 })
        );
        assert_eq!(LayoutKind::Rotating { checksums: 2 }.to_string(), "rotating (f = 2)");
    }

    /// What the drivers rely on: a process column holds at most one replica of
    /// a group's checksums, the replicas of one checksum are on distinct
    /// process columns, and a rotating group's checksums skip its members.
    #[test]
    fn a_process_column_holds_at_most_one_replica_of_a_group() {
        for q in 2..=8usize {
            let mut kinds = vec![LayoutKind::ReverseNeighbor];
            kinds.extend((1..=3).filter(|&f| q > f).map(|f| LayoutKind::Rotating { checksums: f }));
            for kind in kinds {
                for nbc in [1, q - 1, q, q + 1, 4 * q + 3] {
                    let l = ChecksumLayout::new(kind, 8, nbc * 2, 2, 1, q).unwrap();
                    for g in 0..l.groups() {
                        let cols = l.checksum_block_cols(g).unwrap();
                        let mut pcs: Vec<usize> = cols.iter().map(|e| e % q).collect();
                        pcs.sort_unstable();
                        pcs.dedup();
                        assert_eq!(pcs.len(), cols.len(), "{kind} q={q} nbc={nbc} g={g}");
                        for (k, &e) in cols.iter().enumerate() {
                            let held = l.held(g, e % q).unwrap();
                            assert_eq!(
                                (held.index, held.replica, held.block_col),
                                (k / l.replicas(), k % l.replicas(), e)
                            );
                        }
                        if l.replicas() == 1 {
                            assert!(l.group_members(g).unwrap().all(|j| !pcs.contains(&(j % q))), "{kind} q={q} g={g}");
                        }
                    }
                }
            }
        }
    }
}
