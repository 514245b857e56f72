//! Weighted encoding and the rebuild of up to `f` erased blocks of a group.
//!
//! A group of `r ≤ s` blocks `A_0 … A_{r−1}` (equal shapes) has `f` checksums
//! `C^(i) = Σ_t w_{i,t}·A_t` ([`encode_weighted`]; the weights are
//! [`CodeWeights`], a partial group uses the first `r` columns). When the blocks
//! at the positions `E` and the checksums `X` are erased, `|E| + |X| ≤ f`, the
//! data are rebuilt entry by entry from the first `|E|` surviving checksums `S`:
//!
//! ```text
//! W[S, E] · a_E = c_S − Σ_{t ∉ E} w_{S,t} · a_t
//! ```
//!
//! a `|E| × |E|` solve with partial pivoting ([`ErasurePlan`]), then the erased
//! checksums are encoded again. A distributed driver forms the right-hand sides
//! by a reduction along the process row (each survivor adds `−w_{i,t}·a_t` with
//! [`crate::encode::axpy_block`]) and calls [`ErasurePlan::solve`] where the
//! lost blocks go; which blocks of a group are erased and which checksums' replicas
//! give the relations is [`crate::GroupRebuild`]'s plan.
//! More than `f` erasures → [`ErasureError::TooManyErasures`].

use crate::encode::axpy_block;
use crate::layout::LayoutError;
use crate::shape::{check_len, compact_len, ShapeError};
use crate::weights::{CodeWeights, SmallLu, MAX_CHECKSUMS};
use std::fmt;

/// An erased member of a group: a data block (by its position in the group) or a checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupBlock {
    /// The data block at position `t` of the group (`0 ≤ t < r`).
    Data(usize),
    /// The checksum `C^(i)` (`0 ≤ i < f`).
    Checksum(usize),
}

/// Why a weighted encoding or rebuild cannot be done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErasureError {
    /// Buffers of the wrong shape.
    Shape(ShapeError),
    /// A layout query failed (a process outside the grid).
    Layout(LayoutError),
    /// More blocks of one group erased than it has checksums.
    TooManyErasures {
        /// Erased blocks (data and checksums, counted once).
        erased: usize,
        /// Checksums per group `f`: the most erasures tolerated.
        tolerated: usize,
    },
    /// More processes of one process row lost than the layout tolerates.
    TooManyLossesInProcessRow {
        /// The process row.
        row: usize,
        /// The lost process columns in that row (sorted).
        process_cols: Vec<usize>,
        /// Losses tolerated per process row (`f`).
        tolerated: usize,
    },
    /// A checksum group lost more data blocks than it has checksums with a surviving
    /// replica ([`crate::GroupRebuild::new`]).
    NotEnoughChecksums {
        /// The group.
        group: usize,
        /// Its erased data blocks.
        erased_data: usize,
        /// Its checksums that lost every replica.
        lost_checksums: usize,
        /// Checksums per group `f`.
        checksums: usize,
        /// Losses per process row the layout tolerates.
        tolerated: usize,
    },
    /// Lost process columns that are not ascending and distinct, or outside the grid.
    BadLostColumns {
        /// The lost process columns given.
        process_cols: Vec<usize>,
        /// Process columns of the grid `Q`.
        q: usize,
    },
    /// A group of more blocks than the weights have columns, a position at or beyond the
    /// group's size, or a checksum index at or beyond `f`.
    OutOfRange {
        /// The erased block or group size asked for.
        block: GroupBlock,
        /// Data blocks in the group.
        members: usize,
        /// Checksums per group.
        checksums: usize,
    },
    /// The number of data or checksum buffers differs from the group's.
    WrongBlockCount {
        /// Buffers expected.
        expected: usize,
        /// Buffers given.
        found: usize,
    },
    /// The small system was singular (a weight matrix that is not the one of
    /// [`CodeWeights`], or a NaN in its entries).
    SingularSystem,
}

impl fmt::Display for ErasureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErasureError::Shape(e) => write!(f, "cannot encode or rebuild a weighted checksum: {e}"),
            ErasureError::Layout(e) => write!(f, "cannot describe the lost blocks: {e}"),
            ErasureError::TooManyErasures { erased, tolerated } => write!(
                f,
                "unrecoverable: {erased} blocks of one checksum group erased; the group tolerates {tolerated}"
            ),
            ErasureError::TooManyLossesInProcessRow { row, process_cols, tolerated } => write!(
                f,
                "unrecoverable: {} processes lost in process row {row} (process columns {process_cols:?}); \
                 the checksums tolerate {tolerated} loss(es) per process row",
                process_cols.len()
            ),
            ErasureError::NotEnoughChecksums { group, erased_data, lost_checksums, checksums, tolerated } => write!(
                f,
                "unrecoverable: checksum group {group} lost {erased_data} data block(s) and {lost_checksums} of its \
                 {checksums} checksum(s): the layout tolerates {tolerated} loss(es) per process row"
            ),
            ErasureError::BadLostColumns { process_cols, q } => write!(
                f,
                "lost process columns {process_cols:?} are not ascending and distinct process columns of a grid \
                 of {q}"
            ),
            ErasureError::OutOfRange { block, members, checksums } => {
                write!(f, "{block:?} is outside a group of {members} data block(s) and {checksums} checksum(s)")
            }
            ErasureError::WrongBlockCount { expected, found } => {
                write!(f, "{found} buffers given for a group that has {expected}")
            }
            ErasureError::SingularSystem => write!(f, "the rebuild's small system is singular"),
        }
    }
}

impl std::error::Error for ErasureError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ErasureError::Shape(e) => Some(e),
            ErasureError::Layout(e) => Some(e),
            _ => None,
        }
    }
}

impl From<LayoutError> for ErasureError {
    fn from(e: LayoutError) -> Self {
        ErasureError::Layout(e)
    }
}

impl From<ShapeError> for ErasureError {
    fn from(e: ShapeError) -> Self {
        ErasureError::Shape(e)
    }
}

/// The `f` checksums of a group on one process: compact `rows × cols` blocks
/// `C^(i) = Σ_t w_{i,t}·blocks[t]`, each input strided with leading dimension `ld`.
/// `blocks.len()` may be below `s` (a partial last group); an empty group gives zeros.
pub fn encode_weighted(
    weights: &CodeWeights,
    blocks: &[&[f64]],
    rows: usize,
    cols: usize,
    ld: usize,
) -> Result<Vec<Vec<f64>>, ErasureError> {
    check_group_size(weights, blocks.len())?;
    let len = compact_len(rows, cols)?;
    (0..weights.checksums())
        .map(|i| {
            let mut acc = vec![0.0; len];
            for (t, b) in blocks.iter().enumerate() {
                axpy_block(&mut acc, b, rows, cols, ld, weights.at(i, t))?;
            }
            Ok(acc)
        })
        .collect()
}

/// Which blocks of a group are erased, which checksums rebuild them, and the factored
/// `|E| × |E|` system `W[S, E]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ErasurePlan {
    members: usize,
    erased_data: Vec<usize>,
    erased_checksums: Vec<usize>,
    rows_used: Vec<usize>,
    lu: Option<SmallLu>,
}

impl ErasurePlan {
    /// Plans the rebuild of the blocks `erased` (duplicates count once) of a group of
    /// `members` data blocks.
    ///
    /// Errors: more than `f` erased blocks ([`ErasureError::TooManyErasures`]); a group larger
    /// than the weights, a position `≥ members` or a checksum `≥ f` ([`ErasureError::OutOfRange`]).
    pub fn new(weights: &CodeWeights, members: usize, erased: &[GroupBlock]) -> Result<Self, ErasureError> {
        check_group_size(weights, members)?;
        let f = weights.checksums();
        let mut erased: Vec<GroupBlock> = erased.to_vec();
        erased.sort_unstable();
        erased.dedup();
        for &block in &erased {
            let inside = match block {
                GroupBlock::Data(t) => t < members,
                GroupBlock::Checksum(i) => i < f,
            };
            if !inside {
                return Err(ErasureError::OutOfRange { block, members, checksums: f });
            }
        }
        if erased.len() > f {
            return Err(ErasureError::TooManyErasures { erased: erased.len(), tolerated: f });
        }
        let erased_data: Vec<usize> =
            erased.iter().filter_map(|b| if let GroupBlock::Data(t) = b { Some(*t) } else { None }).collect();
        let erased_checksums: Vec<usize> =
            erased.iter().filter_map(|b| if let GroupBlock::Checksum(i) = b { Some(*i) } else { None }).collect();
        let rows_used: Vec<usize> = (0..f).filter(|i| !erased_checksums.contains(i)).take(erased_data.len()).collect();
        let lu = if erased_data.is_empty() {
            None
        } else {
            Some(weights.submatrix(&rows_used, &erased_data).factor().ok_or(ErasureError::SingularSystem)?)
        };
        Ok(Self { members, erased_data, erased_checksums, rows_used, lu })
    }

    /// Erased data positions, increasing.
    pub fn erased_data(&self) -> &[usize] {
        &self.erased_data
    }

    /// Erased checksum indices, increasing (re-encoded after the data are rebuilt).
    pub fn erased_checksums(&self) -> &[usize] {
        &self.erased_checksums
    }

    /// The surviving checksums `S` whose relations rebuild the data, one per erased data
    /// block (the lowest-numbered survivors), in the order [`Self::solve`] takes them.
    pub fn rows_used(&self) -> &[usize] {
        &self.rows_used
    }

    /// Data blocks in the group.
    pub fn members(&self) -> usize {
        self.members
    }

    /// Solves for the erased data blocks: `rhs[k]` (compact, all of length `len`) is
    /// `c_{S[k]} − Σ_{t ∉ E} w_{S[k],t}·a_t`; returns the blocks at [`Self::erased_data`], in
    /// that order. Empty when no data block is erased.
    pub fn solve(&self, rhs: &[&[f64]], len: usize) -> Result<Vec<Vec<f64>>, ErasureError> {
        let k = self.erased_data.len();
        if rhs.len() != k {
            return Err(ErasureError::WrongBlockCount { expected: k, found: rhs.len() });
        }
        for r in rhs {
            check_len(r.len(), len)?;
        }
        let Some(lu) = &self.lu else {
            return Ok(Vec::new());
        };
        let mut out = vec![vec![0.0; len]; k];
        for entry in 0..len {
            let mut x = [0.0; MAX_CHECKSUMS];
            for (xr, r) in x.iter_mut().zip(rhs) {
                *xr = r[entry];
            }
            lu.solve(&mut x);
            for (o, xr) in out.iter_mut().zip(x) {
                o[entry] = xr;
            }
        }
        Ok(out)
    }
}

/// Checks that a set of lost processes (grid coordinates `(pr, pc)`; duplicates count once)
/// can be rebuilt with `tolerated` losses per process row. Reports the lowest offending row.
pub fn check_recoverable_up_to(lost: &[(usize, usize)], tolerated: usize) -> Result<(), ErasureError> {
    match blacs_ft::row_beyond_tolerance(lost, tolerated) {
        Some((row, process_cols)) => Err(ErasureError::TooManyLossesInProcessRow { row, process_cols, tolerated }),
        None => Ok(()),
    }
}

fn check_group_size(weights: &CodeWeights, members: usize) -> Result<(), ErasureError> {
    if members > weights.group_size() {
        return Err(ErasureError::OutOfRange {
            block: GroupBlock::Data(members - 1),
            members: weights.group_size(),
            checksums: weights.checksums(),
        });
    }
    Ok(())
}

/// Tests of the small solves on local buffers: the `erased` blocks of a group (data
/// `data`, checksums `sums`, owned vectors of `len` values) overwritten with NaN, the data
/// solved for from the first surviving checksums, the erased checksums encoded again.
#[cfg(test)]
pub(crate) fn erase_and_rebuild(
    weights: &CodeWeights,
    data: &mut [Vec<f64>],
    sums: &mut [Vec<f64>],
    erased: &[GroupBlock],
    len: usize,
) -> Result<(), ErasureError> {
    let plan = ErasurePlan::new(weights, data.len(), erased)?;
    if sums.len() != weights.checksums() {
        return Err(ErasureError::WrongBlockCount { expected: weights.checksums(), found: sums.len() });
    }
    for b in erased {
        match *b {
            GroupBlock::Data(t) => data[t].fill(f64::NAN),
            GroupBlock::Checksum(i) => sums[i].fill(f64::NAN),
        }
    }
    let mut rhs = Vec::with_capacity(plan.rows_used().len());
    for &i in plan.rows_used() {
        let mut acc = sums[i].clone();
        for (t, block) in data.iter().enumerate() {
            if !plan.erased_data().contains(&t) {
                axpy_block(&mut acc, block, len, 1, len, -weights.at(i, t))?;
            }
        }
        rhs.push(acc);
    }
    let rhs_refs: Vec<&[f64]> = rhs.iter().map(Vec::as_slice).collect();
    for (&t, block) in plan.erased_data().iter().zip(plan.solve(&rhs_refs, len)?) {
        data[t] = block;
    }
    for &i in plan.erased_checksums() {
        sums[i].fill(0.0);
        for (t, block) in data.iter().enumerate() {
            axpy_block(&mut sums[i], block, len, 1, len, weights.at(i, t))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(s: usize, len: usize) -> Vec<Vec<f64>> {
        (0..s).map(|t| (0..len).map(|k| ((t * 7 + k * 3) % 11) as f64 - 5.0 + 0.25 * t as f64).collect()).collect()
    }

    #[test]
    fn every_pattern_of_up_to_f_erasures_is_rebuilt() {
        for f in 1..=3 {
            for s in 1..=6 {
                let w = CodeWeights::new(f, s).unwrap();
                let data = group(s, 5);
                let refs: Vec<&[f64]> = data.iter().map(Vec::as_slice).collect();
                let sums = encode_weighted(&w, &refs, 5, 1, 5).unwrap();
                let all: Vec<GroupBlock> =
                    (0..s).map(GroupBlock::Data).chain((0..f).map(GroupBlock::Checksum)).collect();
                for e in 0..=f {
                    for pick in crate::weights::combinations(all.len(), e) {
                        let erased: Vec<GroupBlock> = pick.iter().map(|&x| all[x]).collect();
                        let (mut d, mut c) = (data.clone(), sums.clone());
                        erase_and_rebuild(&w, &mut d, &mut c, &erased, 5).unwrap();
                        for (x, y) in d
                            .iter()
                            .flatten()
                            .chain(c.iter().flatten())
                            .zip(data.iter().flatten().chain(sums.iter().flatten()))
                        {
                            assert!((x - y).abs() <= 1e-11 * (s * s) as f64, "f={f} s={s} {erased:?}: {x} vs {y}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn more_than_f_erasures_are_unrecoverable() {
        let w = CodeWeights::new(2, 4).unwrap();
        let erased = [GroupBlock::Data(0), GroupBlock::Checksum(1), GroupBlock::Data(3)];
        let e = ErasurePlan::new(&w, 4, &erased).unwrap_err();
        assert_eq!(e, ErasureError::TooManyErasures { erased: 3, tolerated: 2 });
        assert!(e.to_string().contains("unrecoverable"));
        // Duplicates count once.
        assert!(ErasurePlan::new(&w, 4, &[GroupBlock::Data(1), GroupBlock::Data(1)]).is_ok());
    }

    #[test]
    fn bad_arguments_are_typed_errors() {
        let w = CodeWeights::new(2, 4).unwrap();
        assert!(matches!(ErasurePlan::new(&w, 5, &[]), Err(ErasureError::OutOfRange { .. })));
        assert!(matches!(ErasurePlan::new(&w, 3, &[GroupBlock::Data(3)]), Err(ErasureError::OutOfRange { .. })));
        assert!(matches!(ErasurePlan::new(&w, 3, &[GroupBlock::Checksum(2)]), Err(ErasureError::OutOfRange { .. })));
        let plan = ErasurePlan::new(&w, 3, &[GroupBlock::Data(1), GroupBlock::Checksum(0)]).unwrap();
        assert_eq!(
            (plan.erased_data(), plan.erased_checksums(), plan.rows_used(), plan.members()),
            (&[1][..], &[0][..], &[1][..], 3)
        );
        assert_eq!(plan.solve(&[], 2), Err(ErasureError::WrongBlockCount { expected: 1, found: 0 }));
        assert!(matches!(plan.solve(&[&[1.0]], 2), Err(ErasureError::Shape(_))));
        let (mut d, mut c) = (vec![vec![0.0; 2]; 3], vec![vec![0.0; 2]; 1]);
        assert_eq!(
            erase_and_rebuild(&w, &mut d, &mut c, &[], 2),
            Err(ErasureError::WrongBlockCount { expected: 2, found: 1 })
        );
        assert!(encode_weighted(&w, &[&[1.0][..]; 5], 1, 1, 1).is_err());
        assert!(ErasureError::SingularSystem.to_string().contains("singular"));
    }

    #[test]
    fn process_losses_are_checked_per_row() {
        assert_eq!(check_recoverable_up_to(&[(0, 1), (0, 2), (1, 0)], 2), Ok(()));
        let e = check_recoverable_up_to(&[(1, 3), (0, 1), (1, 0), (1, 2), (1, 2)], 2).unwrap_err();
        assert_eq!(e, ErasureError::TooManyLossesInProcessRow { row: 1, process_cols: vec![0, 2, 3], tolerated: 2 });
        assert!(e.to_string().contains("3 processes lost in process row 1"));
    }
}
