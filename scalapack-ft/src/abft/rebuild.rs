//! Rebuilding a lost process's blocks from the survivors of its process row
//! and the checksums (one loss per process row).

use super::encode::shape_err;
use super::extended::{layout_err, Extended};
use crate::error::Result;
use blacs_ft::{Grid, Scope};
use checksum::ReverseNeighborLayout;

const TAG_CHECKSUM_COPY: i32 = 0xC0C;

/// `dst += sign · src`, a stretch of one column (the checksum crate's
/// kernels).
fn axpy(dst: &mut [f64], src: &[f64], sign: f64) -> Result<()> {
    let n = dst.len();
    if sign > 0.0 {
        checksum::add_block(dst, src, n, 1, n.max(1)).map_err(shape_err)
    } else {
        checksum::sub_block(dst, src, n, 1, n.max(1)).map_err(shape_err)
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
    let lost_col = (victim % q) as usize;
    let mycol = grid.mycol() as usize;
    let me_lost = mycol == lost_col;
    let (lr, ld, nb) = (ext.e.local_rows(), ext.e.lld(), ext.e.nb());
    let rows: Vec<usize> = (0..lr).map(|li| ext.e.global_row(li)).collect();
    // Columns left of this are factored (final R and V); a block column can
    // be partly factored when min(M, N) is not a multiple of NB.
    let done_cols = (committed * nb).min(layout.m().min(layout.n()));
    // Blocks are contiguous (see `Extended::block`): the replacement
    // receives straight into them.
    let mut x = vec![0.0; lr * nb];
    for g in 0..layout.groups() {
        let members = layout.group_members(g).map_err(layout_err)?;
        let pair = layout.pair_block_cols(g).map_err(layout_err)?;
        let holders = layout.pair_process_cols(g).map_err(layout_err)?;
        // The surviving holder of the group's copies (Q ≥ 2: they differ).
        let (keep, _) = if holders[0] != lost_col { (0, 1) } else { (1, 0) };
        if let Some(target) = members.clone().find(|&bc| bc % q as usize == lost_col) {
            // Local rows are in ascending global order, so the rows below
            // the diagonal of a finished column are a suffix: from `diag_end`
            // of column gj on (all rows when it is not finished).
            let diag_end = |gj: usize| if gj < done_cols { rows.partition_point(|&gi| gi <= gj) } else { lr };
            // One sum per group: for each column of the lost block, the rows
            // down to its diagonal come from C_g (Σ Ã: R on and above the
            // diagonal of finished columns, zeros below), the rows below it
            // — the left factor of a finished column — from D_g. The
            // replacement's share is zero; the survivors' is
            //   holder's C_g or D_g rows − the other members' matching rows.
            if !me_lost {
                // The holder's share starts as its C_g rows and D_g rows (a
                // copy: no zeroing pass before the sums), the others' as zero.
                match ext.local_block(pair[keep]).filter(|_| mycol == holders[keep]) {
                    Some(cols) => {
                        let d = ext.d.get(g).and_then(Option::as_ref);
                        for (c, lj) in cols.enumerate() {
                            let split = diag_end(target * nb + c);
                            let col = &mut x[c * lr..(c + 1) * lr];
                            col[..split].copy_from_slice(&ext.e.local()[lj * ld..lj * ld + split]);
                            match d {
                                Some(d) => col[split..].copy_from_slice(&d[c * lr + split..(c + 1) * lr]),
                                None => col[split..].fill(0.0),
                            }
                        }
                    }
                    None => x.fill(0.0),
                }
                for bc in members.clone().filter(|&bc| bc != target && bc % q as usize == mycol) {
                    let Some(cols) = ext.local_block(bc) else { continue };
                    for (c, lj) in cols.enumerate() {
                        let (split, own) = (diag_end(target * nb + c), diag_end(bc * nb + c));
                        let a = &ext.e.local()[lj * ld..lj * ld + lr];
                        // Above the split: this member's part of C_g (its rows
                        // down to its own diagonal); below: its part of D_g.
                        let above = split.min(own);
                        axpy(&mut x[c * lr..c * lr + above], &a[..above], -1.0)?;
                        let below = split.max(own);
                        axpy(&mut x[c * lr + below..(c + 1) * lr], &a[below..], -1.0)?;
                    }
                }
                grid.sum(Scope::Row, &mut x, Some(lost_col as i32))?;
            } else {
                // The (zeroed) block is the replacement's share and receives
                // the sum in place (the replacement holds `target`: it is
                // in the lost process column).
                let block = ext.block_mut(target).unwrap_or(&mut x);
                block.fill(0.0);
                grid.sum(Scope::Row, block, Some(lost_col as i32))?;
            }
        }
        // The lost process's copies of C_g and D_g come from the duplicate.
        if holders.contains(&lost_col) {
            let group_has_finished = members.start * nb < done_cols;
            let from = holders[keep] as i32;
            let myrow = grid.myrow();
            let lost_copy = pair[1 - keep];
            // A finished group's C_g is R alone: zero below its last
            // column's diagonal (up to rounding), rows no rebuild reads.
            // Only the rows down to there travel; the copy is zero below.
            let c_rows =
                if members.end * nb <= done_cols { rows.partition_point(|&gi| gi < members.end * nb) } else { lr };
            if mycol as i32 == from {
                // The surviving holder holds its copy (`keep` says so).
                let copy = ext.block(pair[keep]).unwrap_or(&[]);
                if c_rows == lr {
                    grid.send(copy, myrow, lost_col as i32, TAG_CHECKSUM_COPY)?;
                } else {
                    let mut top = Vec::with_capacity(c_rows * nb);
                    crate::lu::pack(copy, lr, 0..c_rows, 0..nb, &mut top);
                    grid.send(&top, myrow, lost_col as i32, TAG_CHECKSUM_COPY)?;
                }
                if group_has_finished {
                    if let Some(Some(d)) = ext.d.get(g) {
                        grid.send(d, myrow, lost_col as i32, TAG_CHECKSUM_COPY)?;
                    }
                }
            } else if me_lost {
                let dst = ext.block_mut(lost_copy).unwrap_or(&mut x);
                if c_rows == lr {
                    grid.recv(dst, myrow, from, TAG_CHECKSUM_COPY)?;
                } else {
                    let mut top = vec![0.0; c_rows * nb];
                    grid.recv(&mut top, myrow, from, TAG_CHECKSUM_COPY)?;
                    for (c, col) in dst.chunks_exact_mut(lr.max(1)).enumerate().take(nb) {
                        col[..c_rows].copy_from_slice(&top[c * c_rows..(c + 1) * c_rows]);
                        col[c_rows..].fill(0.0);
                    }
                }
                // D_g is zero until a member of the group is finished.
                if let Some(slot) = ext.d.get_mut(g) {
                    let d = slot.get_or_insert_with(Vec::new);
                    if group_has_finished {
                        // (Received whole: no zeroing first.)
                        d.resize(lr * nb, 0.0);
                        grid.recv(d, myrow, from, TAG_CHECKSUM_COPY)?;
                    } else {
                        d.clear();
                        d.resize(lr * nb, 0.0);
                    }
                }
            }
        }
    }
    Ok(())
}
