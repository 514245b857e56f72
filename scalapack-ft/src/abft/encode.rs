//! The initial encoding of the right checksums:
//! C_g^(i) = Σ_{J∈g} w_{i,J}·A_J along each process row, with the checksum
//! crate's kernels, for either layout (see [`super::encode_plan`]).
//!
//! Only the process columns that hold a replica of a checksum need it, so
//! no reduction over the whole row is made (it would move every block
//! through every process and leave the sum where nobody keeps it). Each
//! holder sums its share of the group instead: its own member (if any)
//! and the members that the other columns send it. With two replicas (the
//! reverse-neighboring pair) the holders each sum half, then swap their
//! halves and add the other's, so each copy is `T₀ + T₁` (addition
//! commutes: the copies are bit-identical). Every process holds at most
//! one member of a group, which it sends straight from the matrix (to the
//! holder of each checksum it does not hold) while it goes on to the next
//! group.

use super::encode_plan::GroupSums;
use super::extended::{blocks_contiguous, layout_err, packed_block, Extended};
use crate::error::Result;
use blacs_ft::Grid;
use checksum::ChecksumLayout;
use std::borrow::Cow;

/// A member sent to the holder that sums it.
const TAG_MEMBER: i32 = 0xE1C;
/// A holder's half of the sum, swapped with the other replica's holder.
const TAG_HALF: i32 = 0xE1D;

/// Members in flight per process: the holders always have the next one
/// waiting, while the sends hold no buffer (they are the matrix's blocks).
const SENDS_IN_FLIGHT: usize = 4;

/// Collective: C_g^(i) = Σ_{J∈g} w_{i,J}·A_J along each process row,
/// written into every replica of each checksum (in place: no scratch
/// besides one block on a holder that receives).
///
/// A block travels as its local rows × nb, contiguous: straight from the
/// matrix where the leading dimension is the local row count, packed
/// where it is padded (the processes of a row may differ there: a C
/// program's array lent in place on some and copied on others).
pub(crate) fn encode_checksums(grid: &Grid, ext: &mut Extended, layout: &ChecksumLayout) -> Result<()> {
    let (lr, ld, nb) = (ext.matrix.local_rows(), ext.matrix.lld(), ext.matrix.nb());
    let len = lr * nb;
    let padded = !blocks_contiguous(lr, ld);
    let mycol = grid.mycol() as usize;
    let myrow = grid.myrow();
    let plans = (0..layout.groups())
        .map(|g| GroupSums::plan(layout, g, mycol, |bc| ext.local_block(bc).map(|cols| cols.start)))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(layout_err)?;
    // The checksums' local columns lie after every data column: the
    // members are read (and sent) while the copies are written.
    let split = ext.matrix.local_cols_before(layout.checksum_col0()) * ld;
    let (data, sums) = ext.matrix.local_mut().split_at_mut(split);
    let data: &[f64] = data;
    let block = |l: usize| packed_block(data, (lr, ld), l..l + nb);
    let mut scratch = Vec::new();
    let mut packed_copy = Vec::new();
    grid.with_sends(SENDS_IN_FLIGHT, |sends| {
        for plan in &plans {
            let mine = plan.member.map(block);
            if let Some(m) = &mine {
                for &to in &plan.sends_to {
                    match m {
                        Cow::Borrowed(m) => sends.send(m, myrow, to as i32, TAG_MEMBER)?,
                        Cow::Owned(m) => {
                            let mut copy = sends.buffer(m.len())?;
                            copy.extend_from_slice(m);
                            sends.send_owned(copy, myrow, to as i32, TAG_MEMBER)?;
                        }
                    }
                }
            }
            let Some(held) = plan.copy else { continue };
            let at = held.local_col * ld - split;
            let copy = if padded {
                packed_copy.resize(len, 0.0);
                &mut packed_copy[..]
            } else {
                &mut sums[at..at + len]
            };
            let other = plan.other_holder.map(|c| (myrow, c as i32));
            match (mine.as_deref(), other) {
                // Its half is its member, unweighted: swapped straight
                // from the matrix.
                (Some(m), Some(other)) if plan.receives_from.is_empty() && held.own_weight == 1.0 => {
                    grid.exchange(m, other, copy, other, TAG_HALF)?;
                    axpy(copy, m, 1.0)?;
                }
                (mine, _) => {
                    // The first member received lands in the copy (then
                    // weighted); the others, and this process's own, are
                    // added to it.
                    match plan.receives_from.first() {
                        Some(&(c, w)) => {
                            grid.recv_exact(copy, myrow, c as i32, TAG_MEMBER)?;
                            if w != 1.0 {
                                copy.iter_mut().for_each(|x| *x *= w);
                            }
                        }
                        None => copy.fill(0.0),
                    }
                    if let Some(m) = mine {
                        axpy(copy, m, held.own_weight)?;
                    }
                    scratch.resize(len, 0.0);
                    for &(c, w) in plan.receives_from.iter().skip(1) {
                        grid.recv_exact(&mut scratch, myrow, c as i32, TAG_MEMBER)?;
                        axpy(copy, &scratch, w)?;
                    }
                    if let Some(other) = other {
                        grid.exchange(copy, other, &mut scratch, other, TAG_HALF)?;
                        axpy(copy, &scratch, 1.0)?;
                    }
                }
            }
            if padded {
                crate::matrix::unpack(&packed_copy, &mut sums[at..], ld, 0..lr, 0..nb);
            }
        }
        Ok::<(), crate::Error>(())
    })
}

/// `dst += weight · src` over contiguous storage (a block, or a stretch
/// of one column), with the checksum crate's kernels: a plain sum or
/// difference for the unit weights (±1).
pub(crate) fn axpy(dst: &mut [f64], src: &[f64], weight: f64) -> Result<()> {
    let n = dst.len();
    if weight == 1.0 {
        checksum::add_block(dst, src, n, 1, n.max(1)).map_err(shape_err)
    } else if weight == -1.0 {
        checksum::sub_block(dst, src, n, 1, n.max(1)).map_err(shape_err)
    } else {
        checksum::axpy_block(dst, src, n, 1, n.max(1), weight).map_err(shape_err)
    }
}

/// A kernel's shape check that cannot fail for the extended matrix's blocks.
pub(crate) fn shape_err(e: checksum::ShapeError) -> crate::Error {
    blacs_ft::Error::Unrecoverable { reason: format!("checksum kernel: {e}") }.into()
}
