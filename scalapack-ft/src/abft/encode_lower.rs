//! The initial encoding of Cholesky's checksums ([`Relations::LowerTriangle`]):
//! C_g^(i) over the lower triangle, U_g^(i) over the strictly upper one,
//! D_g^(i) zero — the relations at step 0 that
//! [`super::verify::reencode_checksums`] writes at any step, but with the
//! whole blocks' encoding of [`super::encode`] (each member sent once, to
//! the holders) instead of a reduction of every sum over the whole
//! process row per group.
//!
//! A row of group g's checksum at or below the group's last member
//! column is in the lower triangle of every member, and a row above its
//! first is in the upper triangle of every member: there the whole
//! blocks' sum is C's (U zero) or U's (C zero). Only the rows of the
//! group's own band of block rows mix the two; they are summed apart,
//! for every group at once, in one reduction along the process rows.
//! Whatever the program keeps in the upper triangle (NaN included) ends
//! in U alone: the band's C rows are overwritten, the rows above zeroed.
//!
//! [`Relations::LowerTriangle`]: super::Relations::LowerTriangle

use super::encode::encode_checksums;
use super::extended::{layout_err, Extended};
use crate::error::Result;
use blacs_ft::{Grid, Scope};
use checksum::ChecksumLayout;
use std::ops::Range;

/// Collective along each process row: C_g^(i) and U_g^(i) of every group
/// at step 0 for the lower-triangle relations, in every replica and on
/// every holder, whose sums `Extended::new` zeroed (a fresh call's: D_g
/// stays zero, and so do U_g's rows below the group).
pub(crate) fn encode_lower_checksums(grid: &Grid, ext: &mut Extended, layout: &ChecksumLayout) -> Result<()> {
    encode_checksums(grid, ext, layout)?;
    let (lr, nb, mycol) = (ext.matrix.local_rows(), ext.matrix.nb(), grid.mycol() as usize);
    let m = ext.matrix.m();
    let q = layout.q();
    let groups: Vec<Range<usize>> = (0..layout.groups())
        .map(|g| layout.group_members(g))
        .collect::<std::result::Result<_, _>>()
        .map_err(layout_err)?;
    // Each group's band (its local rows) and where it sits in the
    // reduction's buffer (C's and U's parts of every checksum, nb columns each).
    let bands: Vec<Range<usize>> = groups
        .iter()
        .map(|members| {
            let rows = |bc: usize| ext.matrix.local_rows_before((bc * nb).min(m));
            rows(members.start)..rows(members.end)
        })
        .collect();
    let f = layout.checksums();
    let mut offsets = Vec::with_capacity(groups.len());
    let mut len = 0;
    for rows in &bands {
        offsets.push(len);
        len += rows.len() * nb * 2 * f;
    }
    // This process's member of each group, split along its diagonal and
    // weighted for each checksum.
    let mut parts = vec![0.0; len];
    let ld = ext.matrix.lld();
    for ((members, rows), &at) in groups.iter().zip(&bands).zip(&offsets) {
        let rows = rows.clone();
        let h = rows.len();
        let Some(member) = members.clone().find(|bc| bc % q == mycol) else { continue };
        let Some(cols) = ext.local_block(member) else { continue };
        for i in 0..f {
            let w = layout.weight(i, member - members.start);
            let (c_part, u_part) = parts[at + i * 2 * h * nb..at + (i + 1) * 2 * h * nb].split_at_mut(h * nb);
            for (c, lj) in cols.clone().enumerate() {
                // (Local rows ascend globally: the diagonal splits the
                // band's rows of this column in two.)
                let diagonal = ext.matrix.local_rows_before(member * nb + c).clamp(rows.start, rows.end) - rows.start;
                let column = &ext.matrix.local()[lj * ld + rows.start..lj * ld + rows.end];
                let (above, below) = column.split_at(diagonal);
                u_part[c * h..c * h + diagonal].iter_mut().zip(above).for_each(|(u, &x)| *u = w * x);
                c_part[c * h + diagonal..(c + 1) * h].iter_mut().zip(below).for_each(|(c, &x)| *c = w * x);
            }
        }
    }
    grid.sum(Scope::Row, &mut parts, None)?;
    // The holders' rows: above the band U, in it the sums just made, below C.
    for (g, (rows, &at)) in bands.iter().zip(&offsets).enumerate() {
        let rows = rows.clone();
        let h = rows.len();
        for i in 0..f {
            let (c_part, u_part) = parts[at + i * 2 * h * nb..at + (i + 1) * 2 * h * nb].split_at(h * nb);
            let holder = layout.held(g, mycol).is_some_and(|held| held.index == i);
            let replicas = layout.replica_block_cols(g, i).map_err(layout_err)?;
            let mut first_copy = true;
            for bc in replicas {
                let Some(cols) = ext.local_block(bc) else { continue };
                // (The block's storage, with stride ld.)
                let copy = &mut ext.matrix.local_mut()[cols.start * ld..cols.start * ld + (nb - 1) * ld + lr];
                if holder && first_copy {
                    // U from the copy's rows above the band (before
                    // they are zeroed), then the band's. (D, and U below
                    // the band, are zero from `Extended::new`: written
                    // here they would only cost their pages now.)
                    if let Some(Some(sums)) = ext.left_sums.get_mut(g) {
                        debug_assert!(sums.iter().all(|&x| x == 0.0), "a fresh call's sums are zero");
                        let u = &mut sums[lr * nb..2 * lr * nb];
                        for c in 0..nb {
                            let (uc, cc) = (&mut u[c * lr..(c + 1) * lr], &copy[c * ld..c * ld + lr]);
                            uc[..rows.start].copy_from_slice(&cc[..rows.start]);
                            uc[rows.clone()].copy_from_slice(&u_part[c * h..(c + 1) * h]);
                        }
                    }
                }
                first_copy = false;
                for c in 0..nb {
                    let cc = &mut copy[c * ld..c * ld + lr];
                    cc[..rows.start].fill(0.0);
                    cc[rows.clone()].copy_from_slice(&c_part[c * h..(c + 1) * h]);
                }
            }
        }
    }
    Ok(())
}
