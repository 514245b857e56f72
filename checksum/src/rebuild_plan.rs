//! The rebuild of one checksum group after processes of one process row are lost,
//! as plain data, for either layout.
//!
//! [`GroupRebuild::new`] takes a [`ChecksumLayout`], a group `g` and the lost process
//! columns of one process row and says, for that row:
//!
//! * which members of the group are erased (those on a lost process column);
//! * which relations rebuild them: the first `e` checksums that keep a replica, `e` the
//!   number of erased members, each read from its first surviving replica
//!   ([`Equation`]) — the checksums [`ErasurePlan`] solves with, in the same order;
//! * which lost replicas of a surviving checksum are copied from the kept one
//!   ([`ReplicaCopy`]; the left-factor sums `D` kept beside them travel along);
//! * which checksums lost every replica and are encoded again from the rebuilt group
//!   ([`Reencoded`]);
//! * which surviving process columns take part in the erased members' relations
//!   (those holding a member or an equation's replica).
//!
//! The reverse-neighboring layout (one checksum, two replicas) loses at most a replica
//! per lost column: one lost column erases at most one member, rebuilt from the other
//! replica, and its lost replicas are copied. The rotating layout (`f` checksums, one
//! replica each) turns up to `f` lost columns into at most `f` erased blocks of a group,
//! data and checksums together. The distributed rebuild and the simulations of the
//! checksum tests follow the same plan.

use crate::checksum_layout::ChecksumLayout;
use crate::erasure::{ErasureError, ErasurePlan};
use std::ops::Range;

/// A surviving checksum whose relation rebuilds erased members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Equation {
    /// Checksum index `i` (`0 ≤ i < f`).
    pub index: usize,
    /// The replica read: the first surviving one (an extended block column).
    pub block_col: usize,
    /// The process column holding it.
    pub holder: usize,
}

/// A lost replica of a checksum that survives elsewhere: copied from the kept replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaCopy {
    /// The lost replica (an extended block column).
    pub lost_block_col: usize,
    /// The lost process column that held it.
    pub lost_col: usize,
    /// The kept replica it is copied from (an extended block column).
    pub kept_block_col: usize,
    /// The process column holding the kept replica.
    pub holder: usize,
}

/// A checksum with no surviving replica: encoded again from the rebuilt group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reencoded {
    /// Checksum index `i`.
    pub index: usize,
    /// Its first replica (an extended block column), where it is encoded again.
    pub block_col: usize,
    /// The (lost, then replaced) process column holding that replica.
    pub holder: usize,
}

/// The rebuild of one checksum group on one process row (module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRebuild {
    /// The group `g`.
    pub group: usize,
    /// Its data block columns.
    pub members: Range<usize>,
    /// The erased members (data block columns on lost process columns), ascending.
    pub erased: Vec<usize>,
    /// The relations that rebuild them, one per erased member: the first `e` checksums
    /// with a surviving replica, by increasing index.
    pub equations: Vec<Equation>,
    /// Lost replicas of surviving checksums, by checksum then replica.
    pub copies: Vec<ReplicaCopy>,
    /// Checksums that lost every replica, by increasing index.
    pub reencoded: Vec<Reencoded>,
    /// Surviving process columns that contribute to the erased members' relations,
    /// ascending: every one holding a member or an equation's replica.
    pub contributors: Vec<usize>,
}

impl GroupRebuild {
    /// The rebuild of group `g` (global) of `layout` (global) when the process columns
    /// `lost_cols` (global; ascending, distinct, each below `Q`) of one process row are lost.
    ///
    /// Errors: a group out of range ([`ErasureError::Layout`]); lost columns not ascending,
    /// repeated or outside the grid ([`ErasureError::BadLostColumns`]); fewer surviving
    /// checksums than erased members ([`ErasureError::NotEnoughChecksums`]).
    ///
    /// # Fault tolerance
    ///
    /// Pure: every process of the row computes the same plan from the same lost columns,
    /// so survivors and replacements agree on who sends what without a message.
    pub fn new(layout: &ChecksumLayout, g: usize, lost_cols: &[usize]) -> Result<Self, ErasureError> {
        let q = layout.q();
        if lost_cols.windows(2).any(|w| w[0] >= w[1]) || lost_cols.last().is_some_and(|&c| c >= q) {
            return Err(ErasureError::BadLostColumns { process_cols: lost_cols.to_vec(), q });
        }
        let is_lost = |bc: usize| lost_cols.contains(&(bc % q));
        let members = layout.group_members(g)?;
        let erased: Vec<usize> = members.clone().filter(|&bc| is_lost(bc)).collect();
        let (mut equations, mut copies, mut reencoded) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..layout.checksums() {
            let replicas = layout.replica_block_cols(g, i)?;
            match replicas.iter().find(|&&e| !is_lost(e)) {
                Some(&kept) => {
                    if equations.len() < erased.len() {
                        equations.push(Equation { index: i, block_col: kept, holder: kept % q });
                    }
                    for &e in replicas.iter().filter(|&&e| is_lost(e)) {
                        copies.push(ReplicaCopy {
                            lost_block_col: e,
                            lost_col: e % q,
                            kept_block_col: kept,
                            holder: kept % q,
                        });
                    }
                }
                None => reencoded.push(Reencoded { index: i, block_col: replicas[0], holder: replicas[0] % q }),
            }
        }
        if equations.len() < erased.len() {
            return Err(ErasureError::NotEnoughChecksums {
                group: g,
                erased_data: erased.len(),
                lost_checksums: reencoded.len(),
                checksums: layout.checksums(),
                tolerated: layout.tolerated_losses(),
            });
        }
        let mut contributors: Vec<usize> =
            members.clone().map(|bc| bc % q).chain(equations.iter().map(|e| e.holder)).collect();
        contributors.retain(|&c| !lost_cols.contains(&c));
        contributors.sort_unstable();
        contributors.dedup();
        Ok(GroupRebuild { group: g, members, erased, equations, copies, reencoded, contributors })
    }

    /// The small system that rebuilds the erased members `erased[range]` (local index range
    /// into [`Self::erased`]) from the first `range.len()` [`Self::equations`]: their
    /// relations with every other member known, the re-encoded checksums counted as erased.
    /// A rebuild that takes part of the erased members from one kind of relation (the left
    /// factor of finished blocks from the `D` sums) and the rest from the other asks for
    /// both parts.
    ///
    /// Errors: a range beyond [`Self::erased`] ([`ErasureError::WrongBlockCount`]); those of
    /// [`ChecksumLayout::erasure_plan`].
    pub fn erasure_plan(&self, layout: &ChecksumLayout, range: Range<usize>) -> Result<ErasurePlan, ErasureError> {
        let which: Vec<usize> = range.collect();
        self.erasure_plan_of(layout, &which)
    }

    /// [`Self::erasure_plan`] for the erased members at indices `which`
    /// (ascending, into [`Self::erased`]): a rebuild whose entries take
    /// their relation member by member, not by a split of the list.
    ///
    /// Errors: an index beyond [`Self::erased`] ([`ErasureError::WrongBlockCount`]); those of
    /// [`ChecksumLayout::erasure_plan`].
    pub fn erasure_plan_of(&self, layout: &ChecksumLayout, which: &[usize]) -> Result<ErasurePlan, ErasureError> {
        let mut positions = Vec::with_capacity(which.len());
        for &i in which {
            let Some(bc) = self.erased.get(i) else {
                return Err(ErasureError::WrongBlockCount { expected: self.erased.len(), found: i + 1 });
            };
            positions.push(bc - self.members.start);
        }
        let lost: Vec<usize> = self.reencoded.iter().map(|r| r.index).collect();
        layout.erasure_plan(self.members.len(), &positions, &lost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum_layout::LayoutKind;
    use crate::layout::LayoutError;

    /// Reverse-neighbor: one lost column erases at most one member, rebuilt from the
    /// surviving replica's relation, and its lost replicas are copied.
    #[test]
    fn a_reverse_neighbor_loss_is_one_relation_and_replica_copies() {
        let layout = ChecksumLayout::new(LayoutKind::ReverseNeighbor, 40, 76, 4, 1, 3).unwrap();
        for lost in 0..3 {
            for g in 0..layout.groups() {
                let group = GroupRebuild::new(&layout, g, &[lost]).unwrap();
                assert!(group.erased.len() <= 1 && group.reencoded.is_empty(), "g={g}");
                assert_eq!(group.equations.len(), group.erased.len());
                for eq in &group.equations {
                    assert_ne!(eq.holder, lost);
                }
                let holds = layout.holds_checksum(g, lost);
                assert_eq!(group.copies.len(), usize::from(holds), "g={g} lost={lost}");
                assert!(!group.contributors.contains(&lost));
            }
        }
    }

    /// Rotating, f = 2: any two lost columns leave enough surviving checksums for the
    /// erased members, and a checksum without a copy is encoded again; three are too many
    /// for some group.
    #[test]
    fn rotating_losses_up_to_f_are_solvable_and_more_are_not() {
        let layout = ChecksumLayout::new(LayoutKind::Rotating { checksums: 2 }, 40, 76, 4, 1, 5).unwrap();
        for a in 0..5 {
            for b in a + 1..5 {
                for g in 0..layout.groups() {
                    let group = GroupRebuild::new(&layout, g, &[a, b]).unwrap();
                    assert_eq!(group.equations.len(), group.erased.len(), "lost {a},{b} g={g}");
                    assert!(group.erased.len() + group.reencoded.len() <= 2);
                    assert!(group.copies.is_empty());
                    let e = group.erased.len();
                    let plan = group.erasure_plan(&layout, 0..e).unwrap();
                    let used: Vec<usize> = group.equations.iter().map(|q| q.index).collect();
                    assert_eq!(plan.rows_used(), used.as_slice());
                }
            }
        }
        let err = (0..layout.groups()).find_map(|g| GroupRebuild::new(&layout, g, &[0, 1, 2]).err()).unwrap();
        assert!(matches!(err, ErasureError::NotEnoughChecksums { checksums: 2, tolerated: 2, .. }), "{err:?}");
        assert!(err.to_string().contains("unrecoverable"));
    }

    /// A worked case: Q = 3, nbc = 10, groups {0,1,2} {3,4,5} {6,7,8} {9}, pairs at
    /// extended block columns g3: 10,11  g2: 12,13  g1: 14,15  g0: 16,17.
    #[test]
    fn a_reverse_neighbor_group_in_detail() {
        let layout = ChecksumLayout::new(LayoutKind::ReverseNeighbor, 7, 19, 2, 2, 3).unwrap();
        let g1 = GroupRebuild::new(&layout, 1, &[1]).unwrap();
        assert_eq!((g1.members.clone(), g1.erased.clone()), (3..6, vec![4]));
        assert_eq!(g1.equations, vec![Equation { index: 0, block_col: 14, holder: 2 }]);
        assert!(g1.copies.is_empty() && g1.reencoded.is_empty());
        assert_eq!(g1.contributors, vec![0, 2]);
        let g2 = GroupRebuild::new(&layout, 2, &[1]).unwrap();
        assert_eq!(g2.equations, vec![Equation { index: 0, block_col: 12, holder: 0 }]);
        assert_eq!(g2.copies, vec![ReplicaCopy { lost_block_col: 13, lost_col: 1, kept_block_col: 12, holder: 0 }]);
        // Group 3 has one member (on column 0); losing column 2 erases only its replica 11.
        let g3 = GroupRebuild::new(&layout, 3, &[2]).unwrap();
        assert!(g3.erased.is_empty() && g3.equations.is_empty() && g3.reencoded.is_empty());
        assert_eq!(g3.copies, vec![ReplicaCopy { lost_block_col: 11, lost_col: 2, kept_block_col: 10, holder: 1 }]);
        assert_eq!(g3.contributors, vec![0]);
    }

    /// Every layout of both kinds over small grids and widths, every set of up to `f` lost
    /// columns of a row: each lost data block is erased in its group once, each lost
    /// replica is copied or encoded again once, the equations are the first surviving
    /// checksums read from their first surviving replica (the rows [`ErasurePlan`] solves
    /// with), and the contributors are exactly the surviving columns that hold a member or
    /// an equation's replica.
    #[test]
    fn plans_cover_every_lost_block_once() {
        for q in 2..=8usize {
            let mut kinds = vec![LayoutKind::ReverseNeighbor];
            kinds.extend((1..=(q - 1).min(3)).map(|f| LayoutKind::Rotating { checksums: f }));
            for kind in kinds {
                for nbc in [0, 1, q - 1, q, q + 1, 3 * q + 2] {
                    let layout = ChecksumLayout::new(kind, 5, nbc * 2, 2, 1, q).unwrap();
                    let f = layout.tolerated_losses();
                    for k in 1..=f {
                        for cols in crate::weights::combinations(q, k) {
                            check_plans(&layout, &cols);
                        }
                    }
                }
            }
        }
    }

    fn check_plans(layout: &ChecksumLayout, cols: &[usize]) {
        let q = layout.q();
        let lost = |bc: usize| cols.contains(&(bc % q));
        let mut data_seen = vec![0usize; layout.data_block_cols()];
        let mut replicas_seen = vec![0usize; layout.n_extended() / layout.nb()];
        for g in 0..layout.groups() {
            let plan = GroupRebuild::new(layout, g, cols).unwrap();
            let what = format!("{layout:?} lost {cols:?} g={g}: {plan:?}");
            assert_eq!((plan.group, plan.members.clone()), (g, layout.group_members(g).unwrap()), "{what}");
            for &j in &plan.erased {
                data_seen[j] += 1;
            }
            assert!(plan.members.clone().all(|j| plan.erased.contains(&j) == lost(j)), "{what}");
            let surviving: Vec<usize> = (0..layout.checksums())
                .filter(|&i| layout.replica_block_cols(g, i).unwrap().iter().any(|&e| !lost(e)))
                .collect();
            assert_eq!(plan.equations.len(), plan.erased.len(), "{what}");
            for (eq, &i) in plan.equations.iter().zip(&surviving) {
                let first = *layout.replica_block_cols(g, i).unwrap().iter().find(|&&e| !lost(e)).unwrap();
                assert_eq!(*eq, Equation { index: i, block_col: first, holder: first % q }, "{what}");
            }
            for copy in &plan.copies {
                assert!(lost(copy.lost_block_col) && !lost(copy.kept_block_col), "{what}");
                assert_eq!((copy.lost_col, copy.holder), (copy.lost_block_col % q, copy.kept_block_col % q));
                replicas_seen[copy.lost_block_col] += 1;
            }
            for r in &plan.reencoded {
                let replicas = layout.replica_block_cols(g, r.index).unwrap();
                assert!(replicas.iter().all(|&e| lost(e)) && !surviving.contains(&r.index), "{what}");
                assert_eq!((r.block_col, r.holder), (replicas[0], replicas[0] % q));
                for e in replicas {
                    replicas_seen[e] += 1;
                }
            }
            let mut expected: Vec<usize> = plan
                .members
                .clone()
                .map(|j| j % q)
                .chain(plan.equations.iter().map(|eq| eq.holder))
                .filter(|c| !cols.contains(c))
                .collect();
            expected.sort_unstable();
            expected.dedup();
            assert_eq!(plan.contributors, expected, "{what}");
            let e = plan.erased.len();
            for p in 0..=e {
                for part in [0..p, p..e] {
                    let system = plan.erasure_plan(layout, part.clone()).unwrap();
                    let used: Vec<usize> = plan.equations[..part.len()].iter().map(|eq| eq.index).collect();
                    assert_eq!(system.rows_used(), used.as_slice(), "{what}");
                    let positions: Vec<usize> = plan.erased[part].iter().map(|j| j - plan.members.start).collect();
                    assert_eq!(system.erased_data(), positions.as_slice(), "{what}");
                }
            }
        }
        for (j, &seen) in data_seen.iter().enumerate() {
            assert_eq!(seen, usize::from(lost(j)), "{layout:?} lost {cols:?} j={j}");
        }
        for (e, &seen) in replicas_seen.iter().enumerate().skip(layout.data_block_cols()) {
            assert_eq!(seen, usize::from(lost(e)), "{layout:?} lost {cols:?} e={e}");
        }
    }

    #[test]
    fn bad_arguments_are_typed_errors() {
        let layout = ChecksumLayout::new(LayoutKind::Rotating { checksums: 2 }, 8, 8, 2, 1, 4).unwrap();
        for cols in [&[1, 1][..], &[2, 1], &[4]] {
            assert_eq!(
                GroupRebuild::new(&layout, 0, cols),
                Err(ErasureError::BadLostColumns { process_cols: cols.to_vec(), q: 4 })
            );
        }
        assert!(matches!(
            GroupRebuild::new(&layout, 9, &[0]),
            Err(ErasureError::Layout(LayoutError::GroupOutOfRange { group: 9, .. }))
        ));
        let group = GroupRebuild::new(&layout, 0, &[0]).unwrap();
        assert!(matches!(group.erasure_plan(&layout, 0..3), Err(ErasureError::WrongBlockCount { .. })));
    }
}
