//! Rebuilding a lost process's blocks from the survivors of its process row
//! and the checksums (one loss per process row).
//!
//! The survivors send, the replacement receives: each survivor that holds
//! part of a lost block's sum sends its share, and the surviving holder of
//! each checksum pair sends the copies the lost process held. The sends
//! run while their sender forms its next share ([`Grid::with_sends`]), so
//! the replacement copies one message while the next is being computed.

use super::encode::axpy;
use super::extended::{layout_err, Extended};
use crate::error::Result;
use blacs_ft::Grid;
use checksum::ReverseNeighborLayout;

const TAG_SHARE: i32 = 0xC0B;
const TAG_CHECKSUM_COPY: i32 = 0xC0C;

/// Sends in flight per survivor: enough for the replacement always to have
/// the next message waiting, few enough to bound the buffers they hold.
const SENDS_IN_FLIGHT: usize = 4;

/// What every process of the row knows about one rebuild: the lost process
/// column, the local rows' global indices and how far the factorization got.
struct Rebuild<'l> {
    layout: &'l ReverseNeighborLayout,
    q: usize,
    lost_col: usize,
    nb: usize,
    lr: usize,
    rows: Vec<usize>,
    /// Columns left of this are factored (final R and V, or L and U); a
    /// block column can be partly factored when min(M, N) is not a multiple
    /// of NB.
    done_cols: usize,
}

/// One checksum group as the rebuild sees it.
struct GroupPlan {
    /// The group's member in the lost process column, rebuilt from the sum.
    target: Option<usize>,
    /// The group's other members.
    members: std::ops::Range<usize>,
    /// The surviving holder of the group's checksum pair, and which of the
    /// pair's two block columns is its copy.
    holder: usize,
    kept_copy: usize,
    /// The lost process held the pair's other copy.
    lost_copy: Option<usize>,
    /// Process columns that send a share of the target's sum, ascending:
    /// the holder and every other column holding a member.
    contributors: Vec<usize>,
}

impl Rebuild<'_> {
    fn group(&self, g: usize) -> Result<GroupPlan> {
        let members = self.layout.group_members(g).map_err(layout_err)?;
        let pair = self.layout.pair_block_cols(g).map_err(layout_err)?;
        let holders = self.layout.pair_process_cols(g).map_err(layout_err)?;
        // (Q ≥ 2: the two copies live in different process columns.)
        let keep = usize::from(holders[0] == self.lost_col);
        let target = members.clone().find(|&bc| bc % self.q == self.lost_col);
        let mut contributors: Vec<usize> =
            members.clone().map(|bc| bc % self.q).chain([holders[keep]]).filter(|&c| c != self.lost_col).collect();
        contributors.sort_unstable();
        contributors.dedup();
        Ok(GroupPlan {
            target,
            members,
            holder: holders[keep],
            kept_copy: pair[keep],
            lost_copy: holders.contains(&self.lost_col).then_some(pair[1 - keep]),
            contributors,
        })
    }

    /// Local rows of global column `gj` down to its diagonal when it is
    /// finished (its rows below hold the left factor), all rows otherwise.
    /// Local rows are in ascending global order, so this is a prefix.
    fn diag_end(&self, gj: usize) -> usize {
        if gj < self.done_cols {
            self.rows.partition_point(|&gi| gi <= gj)
        } else {
            self.lr
        }
    }

    /// Local rows of a group's checksum copy that a rebuild reads: a
    /// finished group's C_g is R alone, zero below its last column's
    /// diagonal (up to rounding), so only the rows down to there travel.
    fn copy_rows(&self, plan: &GroupPlan) -> usize {
        if plan.members.end * self.nb <= self.done_cols {
            self.rows.partition_point(|&gi| gi < plan.members.end * self.nb)
        } else {
            self.lr
        }
    }

    /// D_g travels once a member of the group is finished (it is zero
    /// before).
    fn has_finished(&self, plan: &GroupPlan) -> bool {
        plan.members.start * self.nb < self.done_cols
    }
}

/// Collective over each process row that lost a process: rebuilds that
/// process's data block columns (everything from C_g except the left factor
/// of finished columns, which comes from D_g), then copies its checksum and
/// D_g copies from the duplicates.
pub(crate) fn rebuild_lost_blocks(
    grid: &Grid,
    ext: &mut Extended,
    layout: &ReverseNeighborLayout,
    committed: usize,
    lost: &[i32],
) -> Result<()> {
    let q = grid.npcol();
    let Some(&victim) = lost.iter().find(|&&r| r / q == grid.myrow()) else {
        return Ok(()); // nothing lost in this process row
    };
    let (lr, nb) = (ext.matrix.local_rows(), ext.matrix.nb());
    let plan = Rebuild {
        layout,
        q: q as usize,
        lost_col: (victim % q) as usize,
        nb,
        lr,
        rows: (0..lr).map(|li| ext.matrix.global_row(li)).collect(),
        done_cols: (committed * nb).min(layout.m().min(layout.n())),
    };
    if grid.mycol() as usize == plan.lost_col {
        receive_lost_blocks(grid, ext, &plan)
    } else {
        send_shares_and_copies(grid, ext, &plan)
    }
}

/// A survivor's part: for each group, its share of the lost block's sum
/// (if it contributes) and, if it holds the surviving copy of the group's
/// pair, the copies the lost process held.
fn send_shares_and_copies(grid: &Grid, ext: &Extended, plan: &Rebuild) -> Result<()> {
    let (mycol, myrow, lost_col) = (grid.mycol() as usize, grid.myrow(), plan.lost_col as i32);
    let (lr, ld, nb) = (plan.lr, ext.matrix.lld(), plan.nb);
    grid.with_sends(SENDS_IN_FLIGHT, |sends| {
        for g in 0..plan.layout.groups() {
            let group = plan.group(g)?;
            if let Some(target) = group.target.filter(|_| group.contributors.contains(&mycol)) {
                // For each column of the lost block, the rows down to its
                // diagonal come from C_g (Σ Ã: R or U on and above the
                // diagonal of finished columns, zeros below), the rows below
                // it — the left factor of a finished column — from D_g:
                //   share = holder's C_g or D_g rows − this process's members' matching rows.
                let mut x = sends.buffer(lr * nb)?;
                match ext.local_block(group.kept_copy).filter(|_| mycol == group.holder) {
                    Some(cols) => {
                        let d = ext.left_sums.get(g).and_then(Option::as_ref);
                        for (c, lj) in cols.enumerate() {
                            let split = plan.diag_end(target * nb + c);
                            x.extend_from_slice(&ext.matrix.local()[lj * ld..lj * ld + split]);
                            match d {
                                Some(d) => x.extend_from_slice(&d[c * lr + split..(c + 1) * lr]),
                                None => x.resize((c + 1) * lr, 0.0),
                            }
                        }
                    }
                    None => x.resize(lr * nb, 0.0),
                }
                for bc in group.members.clone().filter(|&bc| bc != target && bc % plan.q == mycol) {
                    let Some(cols) = ext.local_block(bc) else { continue };
                    for (c, lj) in cols.enumerate() {
                        let (split, own) = (plan.diag_end(target * nb + c), plan.diag_end(bc * nb + c));
                        let a = &ext.matrix.local()[lj * ld..lj * ld + lr];
                        // Above the split: this member's part of C_g (its rows
                        // down to its own diagonal); below: its part of D_g.
                        let above = split.min(own);
                        axpy(&mut x[c * lr..c * lr + above], &a[..above], -1.0)?;
                        let below = split.max(own);
                        axpy(&mut x[c * lr + below..(c + 1) * lr], &a[below..], -1.0)?;
                    }
                }
                sends.send_owned(x, myrow, lost_col, TAG_SHARE)?;
            }
            if group.lost_copy.is_some() && mycol == group.holder {
                let copy = ext.block(group.kept_copy).unwrap_or(&[]);
                let c_rows = plan.copy_rows(&group);
                if c_rows == lr {
                    sends.send(copy, myrow, lost_col, TAG_CHECKSUM_COPY)?;
                } else {
                    let mut top = sends.buffer(c_rows * nb)?;
                    crate::matrix::pack(copy, lr, 0..c_rows, 0..nb, &mut top);
                    sends.send_owned(top, myrow, lost_col, TAG_CHECKSUM_COPY)?;
                }
                if plan.has_finished(&group) {
                    if let Some(Some(d)) = ext.left_sums.get(g) {
                        sends.send(d, myrow, lost_col, TAG_CHECKSUM_COPY)?;
                    }
                }
            }
        }
        Ok(())
    })
}

/// The replacement's part, in the survivors' order: each lost block is the
/// sum of the shares sent for it (the first received in place), then the
/// copies of C_g and D_g.
fn receive_lost_blocks(grid: &Grid, ext: &mut Extended, plan: &Rebuild) -> Result<()> {
    let myrow = grid.myrow();
    let (lr, nb) = (plan.lr, plan.nb);
    let mut scratch: Vec<f64> = Vec::new();
    let mut others: Vec<f64> = Vec::new();
    for g in 0..plan.layout.groups() {
        let group = plan.group(g)?;
        if let Some(target) = group.target {
            let block = stored_or_scratch(ext, target, &mut scratch, lr * nb);
            for (i, &from) in group.contributors.iter().enumerate() {
                if i == 0 {
                    grid.recv_exact(block, myrow, from as i32, TAG_SHARE)?;
                } else {
                    others.resize(block.len(), 0.0);
                    grid.recv_exact(&mut others, myrow, from as i32, TAG_SHARE)?;
                    axpy(block, &others, 1.0)?;
                }
            }
        }
        if let Some(lost_copy) = group.lost_copy {
            let c_rows = plan.copy_rows(&group);
            let from = group.holder as i32;
            let dst = stored_or_scratch(ext, lost_copy, &mut scratch, lr * nb);
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
            // D_g is zero until a member of the group is finished.
            let finished = plan.has_finished(&group);
            if let Some(slot) = ext.left_sums.get_mut(g) {
                let d = slot.get_or_insert_with(Vec::new);
                if finished {
                    // (Received whole: no zeroing first.)
                    d.resize(lr * nb, 0.0);
                    grid.recv_exact(d, myrow, from, TAG_CHECKSUM_COPY)?;
                } else {
                    d.clear();
                    d.resize(lr * nb, 0.0);
                }
            }
        }
    }
    Ok(())
}

/// The local storage of block column `bc`, or — for a block this process
/// does not store — `scratch` of `len`, which a received block is dropped
/// into (its senders sent it all the same).
fn stored_or_scratch<'e>(ext: &'e mut Extended, bc: usize, scratch: &'e mut Vec<f64>, len: usize) -> &'e mut [f64] {
    match ext.block_mut(bc) {
        Some(block) => block,
        None => {
            scratch.resize(len, 0.0);
            &mut scratch[..]
        }
    }
}
