//! Rebuilding lost processes' blocks from the survivors of their process
//! row and the checksums, for either layout (up to `f` losses per
//! process row: one for the reverse-neighboring pairs).
//!
//! Per group, the lost process columns erase `e ≤ f` data blocks, and
//! replicas or whole checksums. Each erased data block is rebuilt entry by
//! entry from `e` surviving checksums' relations: each entry from the
//! relation that covers it ([`super::Relations`]: for QR and LU the
//! entries of an erased block on or above its diagonal, and every entry
//! of an unfinished block, from the C relations, those strictly below the
//! diagonal of a finished block from the D relations; for Cholesky the
//! lower triangle of unfinished blocks from C, of finished ones from D,
//! the strictly upper triangle from U). Each survivor that
//! holds a member or a used checksum sends its share of the `e` relations'
//! right-hand sides to every replacement that holds an erased block; the
//! replacement adds the shares and, unless the relation is the plain sum
//! (`e = 1`, unit weight), solves the small system
//! ([`checksum::ErasurePlan`]) per entry. A lost replica of a surviving
//! checksum is copied from a surviving one; a checksum with no surviving
//! replica is encoded again once the data are whole.
//!
//! The sends run while their sender forms its next share
//! ([`Grid::with_sends`]), so a replacement copies one message while the
//! next is being computed.

use super::encode::axpy;
use super::extended::{layout_err, Extended};
use super::relations::{Parts, Relations};
use crate::error::Result;
use blacs_ft::Grid;
use checksum::{ChecksumLayout, ErasureError, ErasurePlan, GroupRebuild};
use std::borrow::Cow;
use std::ops::Range;

const TAG_SHARE: i32 = 0xC0B;
const TAG_CHECKSUM_COPY: i32 = 0xC0C;
const TAG_REENCODE: i32 = 0xC0D;

/// Sends in flight per survivor: enough for the replacement always to have
/// the next message waiting, few enough to bound the buffers they hold.
const SENDS_IN_FLIGHT: usize = 4;

/// What every process of the row knows about one rebuild: the lost process
/// columns, the local rows' global indices and how far the factorization got.
struct Rebuild<'l> {
    layout: &'l ChecksumLayout,
    q: usize,
    lost_cols: Vec<usize>,
    nb: usize,
    lr: usize,
    rows: Vec<usize>,
    /// Columns left of this are factored (final R and V, or L and U); a
    /// block column can be partly factored when min(M, N) is not a multiple
    /// of NB.
    done_cols: usize,
    /// The entries each relation covers.
    relations: Relations,
}

/// The relation an entry of an erased block is rebuilt from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Relation {
    /// The checksum block column (trailing matrix, R, U).
    C,
    /// The left-factor sums.
    D,
    /// The sums of the strictly upper triangle (Cholesky).
    Upper,
}

/// Of the erased blocks at one row segment of a column, those whose
/// entries there are in the D relations and those in the U relations
/// (bit m for erased block m; the others are in the C relations).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Masks {
    d: u32,
    upper: u32,
}

impl Rebuild<'_> {
    /// The length of the sums a checksum holder keeps beside its C
    /// replica (D, and U).
    fn side_len(&self) -> usize {
        self.lr * self.nb * self.relations.side_sums()
    }

    fn is_lost(&self, pc: usize) -> bool {
        self.lost_cols.contains(&pc)
    }

    /// The plan of group `g` on this row ([`GroupRebuild`]); too few surviving
    /// checksums for its erased members is unrecoverable.
    fn group(&self, g: usize) -> Result<GroupRebuild> {
        GroupRebuild::new(self.layout, g, &self.lost_cols).map_err(|err| match err {
            ErasureError::NotEnoughChecksums { group, erased_data, lost_checksums, checksums, tolerated } => {
                crate::Error::from(blacs_ft::Error::Unrecoverable {
                    reason: format!(
                        "checksum group {group} lost {erased_data} data block(s) and {lost_checksums} of its \
                         {checksums} checksum(s): the layout tolerates {tolerated} loss(es) per process row"
                    ),
                })
            }
            ErasureError::Layout(err) => layout_err(err),
            err => blacs_ft::Error::Unrecoverable { reason: format!("checksum rebuild: {err}") }.into(),
        })
    }

    /// The local rows of global column `gj` in each relation
    /// ([`Relations::parts`]).
    fn parts(&self, gj: usize) -> Parts {
        self.relations.parts(&self.rows, gj, self.done_cols)
    }

    /// Local rows of a group's checksum copy that a rebuild reads: a
    /// finished group's C_g is R alone, zero below its last column's
    /// diagonal (up to rounding), so only the rows down to there travel.
    fn copy_rows(&self, plan: &GroupRebuild) -> usize {
        if plan.members.end * self.nb <= self.done_cols {
            self.rows.partition_point(|&gi| gi < plan.members.end * self.nb)
        } else {
            self.lr
        }
    }

    /// D_g (and U_g) travel once a member of the group is finished (they
    /// are zero before, unless the relations put other entries in them).
    fn has_finished(&self, plan: &GroupRebuild) -> bool {
        !self.relations.side_starts_zero() || plan.members.start * self.nb < self.done_cols
    }

    /// Column `c` of the erased blocks: its row segments, each with the
    /// erased blocks whose entries there are in the D and U relations.
    fn segments(&self, plan: &GroupRebuild, c: usize) -> Vec<(Range<usize>, Masks)> {
        let parts: Vec<Parts> = plan.erased.iter().map(|&bc| self.parts(bc * self.nb + c)).collect();
        let mut bounds: Vec<usize> = vec![0, self.lr];
        for p in &parts {
            bounds.extend([p.c.start, p.c.end, p.d.start, p.d.end, p.upper.start, p.upper.end]);
        }
        bounds.sort_unstable();
        bounds.dedup();
        bounds
            .windows(2)
            .map(|w| {
                let within = |r: &Range<usize>| r.start <= w[0] && w[1] <= r.end;
                let mask = |f: &dyn Fn(&Parts) -> bool| {
                    parts.iter().enumerate().filter(|(_, p)| f(p)).fold(0u32, |m, (i, _)| m | 1 << i)
                };
                (w[0]..w[1], Masks { d: mask(&|p| within(&p.d)), upper: mask(&|p| within(&p.upper)) })
            })
            .collect()
    }

    /// Which relation share `k` is at a segment with `masks`: `(equation,
    /// relation)` (the first shares are D relations, then U relations,
    /// then C relations, each counted from equation 0).
    fn relation(k: usize, masks: Masks) -> (usize, Relation) {
        let (p, u) = (masks.d.count_ones() as usize, masks.upper.count_ones() as usize);
        if k < p {
            (k, Relation::D)
        } else if k < p + u {
            (k - p, Relation::Upper)
        } else {
            (k - p - u, Relation::C)
        }
    }

    /// This relation's rows of a column's parts.
    fn rows_in(parts: Parts, relation: Relation) -> Range<usize> {
        match relation {
            Relation::C => parts.c,
            Relation::D => parts.d,
            Relation::Upper => parts.upper,
        }
    }
}

/// Collective over each process row that lost processes: rebuilds their
/// data block columns (everything from the C relations except the left
/// factor of finished columns, which comes from the D relations), copies
/// the checksum and D replicas they held from surviving replicas, and
/// encodes again the checksums that lost every replica.
pub(crate) fn rebuild_lost_blocks(
    grid: &Grid,
    ext: &mut Extended,
    layout: &ChecksumLayout,
    committed: usize,
    lost: &[i32],
) -> Result<()> {
    let q = grid.npcol();
    let mut lost_cols: Vec<usize> =
        lost.iter().filter(|&&r| r / q == grid.myrow()).map(|&r| (r % q) as usize).collect();
    if lost_cols.is_empty() {
        return Ok(()); // nothing lost in this process row
    }
    lost_cols.sort_unstable();
    lost_cols.dedup();
    let (lr, nb) = (ext.matrix.local_rows(), ext.matrix.nb());
    let plan = Rebuild {
        layout,
        q: q as usize,
        lost_cols,
        nb,
        lr,
        rows: (0..lr).map(|li| ext.matrix.global_row(li)).collect(),
        done_cols: (committed * nb).min(layout.m().min(layout.n())),
        relations: ext.relations,
    };
    let groups = (0..layout.groups()).map(|g| plan.group(g)).collect::<Result<Vec<_>>>()?;
    if plan.is_lost(grid.mycol() as usize) {
        receive_lost_blocks(grid, ext, &plan, &groups)?;
    } else {
        send_shares_and_copies(grid, ext, &plan, &groups)?;
    }
    if groups.iter().any(|g| !g.reencoded.is_empty()) {
        reencode_lost_checksums(grid, ext, &plan, &groups)?;
    }
    Ok(())
}

/// A survivor's part: for each group, its share of the erased blocks'
/// relations (if it contributes) and the replicas it keeps of checksums
/// whose other replica was lost.
fn send_shares_and_copies(grid: &Grid, ext: &Extended, plan: &Rebuild, groups: &[GroupRebuild]) -> Result<()> {
    let (mycol, myrow) = (grid.mycol() as usize, grid.myrow());
    let (lr, ld, nb) = (plan.lr, ext.matrix.lld(), plan.nb);
    let d = |g: usize| ext.left_sums.get(g).and_then(Option::as_ref);
    grid.with_sends(SENDS_IN_FLIGHT, |sends| {
        for (g, group) in groups.iter().enumerate() {
            let e = group.erased.len();
            if e > 0 && group.contributors.contains(&mycol) {
                // For each share k and each column of the erased blocks,
                // each row from the relation it is in there (C: on and
                // above the diagonals of the D-part blocks, D below):
                //   share = holder's C or D rows − Σ w · this process's members' matching rows.
                let mut x = sends.buffer(e * lr * nb)?;
                x.resize(e * lr * nb, 0.0);
                let mine = group.members.clone().filter(|&bc| bc % plan.q == mycol && !group.erased.contains(&bc));
                let mine: Vec<(usize, Range<usize>)> =
                    mine.filter_map(|bc| ext.local_block(bc).map(|cols| (bc, cols))).collect();
                for c in 0..nb {
                    for (seg, masks) in plan.segments(group, c) {
                        for k in 0..e {
                            let (eq, relation) = Rebuild::relation(k, masks);
                            let equation = group.equations[eq];
                            let out = &mut x[k * lr * nb + c * lr..k * lr * nb + (c + 1) * lr];
                            if equation.holder == mycol {
                                let stored = match relation {
                                    Relation::D => d(g).map(|d| &d[c * lr..(c + 1) * lr]),
                                    Relation::Upper => d(g).map(|d| &d[(nb + c) * lr..(nb + c + 1) * lr]),
                                    Relation::C => ext.local_block(equation.block_col).map(|cols| {
                                        let lj = cols.start + c;
                                        &ext.matrix.local()[lj * ld..lj * ld + lr]
                                    }),
                                };
                                if let Some(s) = stored {
                                    out[seg.clone()].copy_from_slice(&s[seg.clone()]);
                                }
                            }
                            for (bc, cols) in &mine {
                                let lj = cols.start + c;
                                let a = &ext.matrix.local()[lj * ld..lj * ld + lr];
                                // This member's part of the relation: its rows
                                // in it.
                                let part = Rebuild::rows_in(plan.parts(bc * nb + c), relation);
                                let rows = seg.start.max(part.start)..seg.end.min(part.end);
                                if rows.start < rows.end {
                                    let w = plan.layout.weight(equation.index, bc - group.members.start);
                                    axpy(&mut out[rows.clone()], &a[rows], -w)?;
                                }
                            }
                        }
                    }
                }
                let targets = erased_cols(plan, group);
                for (n, &to) in targets.iter().enumerate() {
                    if n + 1 == targets.len() {
                        sends.send_owned(std::mem::take(&mut x), myrow, to as i32, TAG_SHARE)?;
                    } else {
                        let mut copy = sends.buffer(x.len())?;
                        copy.extend_from_slice(&x);
                        sends.send_owned(copy, myrow, to as i32, TAG_SHARE)?;
                    }
                }
            }
            for copy in group.copies.iter().filter(|c| c.holder == mycol) {
                let c_rows = plan.copy_rows(group);
                let to = copy.lost_col as i32;
                if c_rows == lr {
                    match ext.block(copy.kept_block_col).unwrap_or_default() {
                        Cow::Borrowed(kept) => sends.send(kept, myrow, to, TAG_CHECKSUM_COPY)?,
                        Cow::Owned(kept) => sends.send_owned(kept, myrow, to, TAG_CHECKSUM_COPY)?,
                    }
                } else {
                    // (The top rows straight from the storage, whatever its
                    // leading dimension: packed once.)
                    let cols = ext.local_block(copy.kept_block_col).unwrap_or(0..0);
                    let mut top = sends.buffer(c_rows * nb)?;
                    crate::matrix::pack(ext.matrix.local(), ext.matrix.lld(), 0..c_rows, cols, &mut top);
                    sends.send_owned(top, myrow, to, TAG_CHECKSUM_COPY)?;
                }
                if plan.has_finished(group) {
                    if let Some(d) = d(g) {
                        sends.send(d, myrow, to, TAG_CHECKSUM_COPY)?;
                    }
                }
            }
        }
        Ok(())
    })
}

/// The lost process columns holding an erased member of `group`, ascending.
fn erased_cols(plan: &Rebuild, group: &GroupRebuild) -> Vec<usize> {
    group.erased.iter().map(|bc| bc % plan.q).collect()
}

/// A replacement's part, in the survivors' order: each relation's
/// right-hand side is the sum of the shares sent for it (the first
/// received in place), solved for the erased blocks where needed; then the
/// copies of C and D replicas.
fn receive_lost_blocks(grid: &Grid, ext: &mut Extended, plan: &Rebuild, groups: &[GroupRebuild]) -> Result<()> {
    let (myrow, mycol) = (grid.myrow(), grid.mycol() as usize);
    let (lr, nb) = (plan.lr, plan.nb);
    let mut scratch: Vec<f64> = Vec::new();
    let mut others: Vec<f64> = Vec::new();
    let mut rhs: Vec<f64> = Vec::new();
    for (g, group) in groups.iter().enumerate() {
        let e = group.erased.len();
        if let Some(m) = group.erased.iter().position(|bc| bc % plan.q == mycol) {
            let target = group.erased[m];
            let len = lr * nb;
            // The plain sum: the shares add up to the block itself.
            let plain = e == 1 && plan.layout.weight(group.equations[0].index, target - group.members.start) == 1.0;
            if plain {
                scratch.resize(len, 0.0);
                receive_sum(grid, myrow, &group.contributors, &mut scratch, &mut others)?;
                ext.set_block(target, &scratch);
            } else {
                rhs.clear();
                rhs.resize(e * len, 0.0);
                receive_sum(grid, myrow, &group.contributors, &mut rhs, &mut others)?;
                let solved = solve_erased(plan, group, &rhs, m)?;
                ext.set_block(target, &solved);
            }
        }
        for copy in group.copies.iter().filter(|c| c.lost_col == mycol) {
            let c_rows = plan.copy_rows(group);
            let from = copy.holder as i32;
            scratch.resize(lr * nb, 0.0);
            let dst = &mut scratch[..];
            if c_rows == lr {
                grid.recv_exact(dst, myrow, from, TAG_CHECKSUM_COPY)?;
            } else {
                // (Into the buffer the shares use: received whole.)
                others.resize(c_rows * nb, 0.0);
                grid.recv_exact(&mut others, myrow, from, TAG_CHECKSUM_COPY)?;
                for (c, col) in dst.chunks_exact_mut(lr.max(1)).enumerate().take(nb) {
                    col[..c_rows].copy_from_slice(&others[c * c_rows..(c + 1) * c_rows]);
                    col[c_rows..].fill(0.0);
                }
            }
            ext.set_block(copy.lost_block_col, &scratch);
            // D (and U) are zero until a member of the group is finished.
            let finished = plan.has_finished(group);
            if let Some(slot) = ext.left_sums.get_mut(g) {
                let d = slot.get_or_insert_with(Vec::new);
                if finished {
                    // (Received whole: no zeroing first.)
                    d.resize(plan.side_len(), 0.0);
                    grid.recv_exact(d, myrow, from, TAG_CHECKSUM_COPY)?;
                } else {
                    d.clear();
                    d.resize(plan.side_len(), 0.0);
                }
            }
        }
    }
    Ok(())
}

/// `into` = the sum of one message from each of `contributors`, in their
/// order (the first received in place).
fn receive_sum(grid: &Grid, myrow: i32, contributors: &[usize], into: &mut [f64], others: &mut Vec<f64>) -> Result<()> {
    for (i, &from) in contributors.iter().enumerate() {
        if i == 0 {
            grid.recv_exact(into, myrow, from as i32, TAG_SHARE)?;
        } else {
            others.resize(into.len(), 0.0);
            grid.recv_exact(others, myrow, from as i32, TAG_SHARE)?;
            axpy(into, others, 1.0)?;
        }
    }
    Ok(())
}

/// Erased block `m` of `group` from the `e` relations' right-hand sides
/// `rhs` (share-major): per row segment of each column, the blocks in the
/// D relations from those, the blocks in the U relations from those, and
/// the others from the C relations, each a small solve ([`ErasurePlan`]).
fn solve_erased(plan: &Rebuild, group: &GroupRebuild, rhs: &[f64], m: usize) -> Result<Vec<f64>> {
    let (lr, nb, e) = (plan.lr, plan.nb, group.erased.len());
    let len = lr * nb;
    let erasure = |which: &[usize]| -> Result<ErasurePlan> {
        group.erasure_plan_of(plan.layout, which).map_err(|err| {
            crate::Error::from(blacs_ft::Error::Unrecoverable { reason: format!("checksum rebuild: {err}") })
        })
    };
    // One triple of systems per split of the erased blocks between the
    // relations: D over the blocks in D, U over those in U, C over the
    // others (made when first needed).
    let mut systems: Vec<Option<[ErasurePlan; 3]>> = (0..1usize << (2 * e)).map(|_| None).collect();
    let mut out = vec![0.0; len];
    for c in 0..nb {
        for (seg, masks) in plan.segments(group, c) {
            if seg.is_empty() {
                continue;
            }
            let n = seg.len();
            let slice = |k: usize| &rhs[k * len + c * lr + seg.start..k * len + c * lr + seg.end];
            let [in_d, in_upper, in_c] = match &mut systems[(masks.d | masks.upper << e) as usize] {
                Some(s) => &*s,
                slot => {
                    let set = |f: &dyn Fn(usize) -> bool| (0..e).filter(|&i| f(i)).collect::<Vec<usize>>();
                    let d_set = set(&|i| masks.d & (1 << i) != 0);
                    let u_set = set(&|i| masks.upper & (1 << i) != 0);
                    let c_set = set(&|i| (masks.d | masks.upper) & (1 << i) == 0);
                    &*slot.insert([erasure(&d_set)?, erasure(&u_set)?, erasure(&c_set)?])
                }
            };
            let (p, u) = (masks.d.count_ones() as usize, masks.upper.count_ones() as usize);
            let below = (1u32 << m) - 1;
            let (d_below, u_below) =
                ((masks.d & below).count_ones() as usize, (masks.upper & below).count_ones() as usize);
            let (system, first, own, count) = if masks.d & (1 << m) != 0 {
                (in_d, 0, d_below, p)
            } else if masks.upper & (1 << m) != 0 {
                (in_upper, p, u_below, u)
            } else {
                (in_c, p + u, m - d_below - u_below, e - p - u)
            };
            let parts: Vec<&[f64]> = (first..first + count).map(slice).collect();
            let solved = system.solve(&parts, n).map_err(|err| {
                crate::Error::from(blacs_ft::Error::Unrecoverable { reason: format!("checksum rebuild: {err}") })
            })?;
            out[c * lr + seg.start..c * lr + seg.end].copy_from_slice(&solved[own]);
        }
    }
    Ok(out)
}

/// Every process of the row, after the data are rebuilt: each checksum that
/// lost every replica is encoded again on its (replacement) holder: C, D
/// (and U) from the members' entries each covers; every member column
/// sends its whole block.
fn reencode_lost_checksums(grid: &Grid, ext: &mut Extended, plan: &Rebuild, groups: &[GroupRebuild]) -> Result<()> {
    let (mycol, myrow) = (grid.mycol() as usize, grid.myrow());
    let (lr, nb) = (plan.lr, plan.nb);
    let mut incoming = Vec::new();
    for (g, group) in groups.iter().enumerate() {
        for lost in &group.reencoded {
            // (At most one member per process column and group.)
            let member = group.members.clone().find(|bc| bc % plan.q == mycol);
            if lost.holder != mycol {
                if let Some(block) = member.and_then(|bc| ext.block(bc)) {
                    grid.send(&block, myrow, lost.holder as i32, TAG_REENCODE)?;
                }
                continue;
            }
            let mut csum = vec![0.0; lr * nb];
            let mut dsum = vec![0.0; plan.side_len()];
            for bc in group.members.clone() {
                incoming.resize(lr * nb, 0.0);
                match ext.block(bc) {
                    Some(own) => incoming.copy_from_slice(&own),
                    None => grid.recv_exact(&mut incoming, myrow, (bc % plan.q) as i32, TAG_REENCODE)?,
                }
                let w = plan.layout.weight(lost.index, bc - group.members.start);
                for c in 0..nb {
                    let parts = plan.parts(bc * nb + c);
                    let a = &incoming[c * lr..(c + 1) * lr];
                    axpy(&mut csum[c * lr..(c + 1) * lr][parts.c.clone()], &a[parts.c], w)?;
                    axpy(&mut dsum[c * lr..(c + 1) * lr][parts.d.clone()], &a[parts.d], w)?;
                    if !parts.upper.is_empty() {
                        let us = &mut dsum[(nb + c) * lr..(nb + c + 1) * lr];
                        axpy(&mut us[parts.upper.clone()], &a[parts.upper], w)?;
                    }
                }
            }
            ext.set_block(lost.block_col, &csum);
            if let Some(slot) = ext.left_sums.get_mut(g) {
                *slot = Some(dsum);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use checksum::LayoutKind;

    /// The rebuild on one process row (every global row local).
    fn rebuild(layout: &ChecksumLayout, lost_cols: Vec<usize>, done_cols: usize) -> Rebuild<'_> {
        rebuild_of(layout, lost_cols, done_cols, Relations::Whole)
    }

    fn rebuild_of(
        layout: &ChecksumLayout,
        lost_cols: Vec<usize>,
        done_cols: usize,
        relations: Relations,
    ) -> Rebuild<'_> {
        let rows: Vec<usize> = (0..layout.m()).collect();
        Rebuild { layout, q: layout.q(), lost_cols, nb: layout.nb(), lr: rows.len(), rows, done_cols, relations }
    }

    /// Too few surviving checksums for a group's erased members is unrecoverable,
    /// with the group, its losses and the layout's tolerance named.
    #[test]
    fn too_many_losses_in_a_group_are_unrecoverable() {
        let layout = ChecksumLayout::new(LayoutKind::Rotating { checksums: 2 }, 40, 76, 4, 1, 5).unwrap();
        let plan = rebuild(&layout, vec![0, 1, 2], 0);
        let err = (0..layout.groups()).find_map(|g| plan.group(g).err()).unwrap();
        let message = err.to_string();
        assert!(
            message.contains("checksum group ")
                && message.contains("of its 2 checksum(s): the layout tolerates 2 loss(es) per process row"),
            "{message}"
        );
        let plan = rebuild(&layout, vec![0, 1], 0);
        assert!((0..layout.groups()).all(|g| plan.group(g).is_ok()));
    }

    /// The row segments of an erased column cover its rows once, in
    /// order; for the whole matrix the erased blocks in the D relations
    /// are always the first ones (finished columns come first), further
    /// down more of them, and none is in the U relations; for Cholesky's
    /// lower triangle, an erased block is in U above its diagonal only.
    #[test]
    fn segments_cover_the_rows_in_order() {
        let layout = ChecksumLayout::new(LayoutKind::Rotating { checksums: 2 }, 40, 40, 4, 1, 4).unwrap();
        for relations in [Relations::Whole, Relations::LowerTriangle] {
            for done in [0, 6, 13, 40] {
                let plan = rebuild_of(&layout, vec![0, 1], done, relations);
                for g in 0..layout.groups() {
                    let group = plan.group(g).unwrap();
                    for c in 0..layout.nb() {
                        let mut next = 0;
                        let mut last = 0;
                        for (rows, masks) in plan.segments(&group, c) {
                            assert_eq!(rows.start, next, "{relations:?} done={done} g={g} c={c}");
                            assert_eq!(masks.d & masks.upper, 0);
                            let p = masks.d.count_ones();
                            if relations == Relations::Whole {
                                assert_eq!(masks.d, (1 << p) - 1, "done={done} g={g} c={c}");
                                assert_eq!(masks.upper, 0);
                                assert!(p >= last);
                            }
                            for (m, &bc) in group.erased.iter().enumerate() {
                                let above = rows.end <= bc * layout.nb() + c;
                                if relations == Relations::LowerTriangle {
                                    assert_eq!(masks.upper & (1 << m) != 0, above, "done={done} g={g} c={c}");
                                }
                            }
                            (next, last) = (rows.end, p);
                        }
                        assert_eq!(next, plan.lr);
                    }
                }
            }
        }
        let masks = |d, upper| Masks { d, upper };
        assert_eq!(Rebuild::relation(0, masks(1, 0)), (0, Relation::D));
        assert_eq!(Rebuild::relation(1, masks(1, 0)), (0, Relation::C));
        assert_eq!(Rebuild::relation(1, masks(0, 0)), (1, Relation::C));
        assert_eq!(Rebuild::relation(0, masks(0, 2)), (0, Relation::Upper));
        assert_eq!(Rebuild::relation(1, masks(1, 2)), (0, Relation::Upper));
        assert_eq!(Rebuild::relation(1, masks(0, 1)), (0, Relation::C));
    }
}
