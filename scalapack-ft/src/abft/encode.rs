//! The initial encoding of the right checksums: C_g = Σ_{J∈g} A_J along
//! each process row, with the checksum crate's kernels.

use super::extended::{layout_err, Extended};
use crate::error::Result;
use blacs_ft::{Grid, Scope};
use checksum::ReverseNeighborLayout;

/// Collective: C_g = Σ_{J∈g} A_J along each process row, written into both
/// copies of each group's pair. One row reduction per group, made in place
/// in this process's copy of the pair when it holds one (no scratch to
/// allocate, fill and copy back: the encoding touches each block once).
pub(crate) fn encode_checksums(grid: &Grid, ext: &mut Extended, layout: &ReverseNeighborLayout) -> Result<()> {
    let (lr, ld, nb) = (ext.e.local_rows(), ext.e.lld(), ext.e.nb());
    let len = lr * nb;
    let mut scratch = Vec::new();
    for g in 0..layout.groups() {
        let starts = |blocks: &mut dyn Iterator<Item = usize>| -> Vec<usize> {
            blocks.filter_map(|bc| ext.local_block(bc)).map(|cols| cols.start).collect()
        };
        let members = starts(&mut layout.group_members(g).map_err(layout_err)?);
        let copies = starts(&mut layout.pair_block_cols(g).map_err(layout_err)?.into_iter());
        // Blocks are contiguous (minimal leading dimension; see
        // `Extended::block`), so sums are formed in place.
        if one_member_per_column_of_two(layout, g)? {
            // Each column holds one member and one copy: the other column's
            // member comes straight into the copy and this one's is added
            // (no partial sum, no reduction buffer). Addition commutes, so
            // both copies are bit-identical.
            let (l0, m0) = (copies[0], members[0]);
            let other = (grid.myrow(), 1 - grid.mycol());
            let (data, rest) = ext.e.local_mut().split_at_mut(l0 * ld);
            let mine = &data[m0 * ld..m0 * ld + len];
            let copy = &mut rest[..len];
            grid.exchange(mine, other, copy, other, TAG_ENCODE)?;
            checksum::add_block(copy, mine, lr, nb, lr.max(1)).map_err(shape_err)?;
            continue;
        }
        match copies.first() {
            // The pair's local columns lie after every data column.
            Some(&l0) => {
                let (data, rest) = ext.e.local_mut().split_at_mut(l0 * ld);
                let sum = &mut rest[..len];
                partial_sum(data, &members, ld, lr, nb, sum)?;
                grid.sum(Scope::Row, sum, None)?;
                for &l1 in &copies[1..] {
                    ext.e.local_mut().copy_within(l0 * ld..l0 * ld + len, l1 * ld);
                }
            }
            // No copy here: this process only contributes its members.
            None => {
                scratch.resize(len, 0.0);
                partial_sum(ext.e.local(), &members, ld, lr, nb, &mut scratch)?;
                grid.sum(Scope::Row, &mut scratch, None)?;
            }
        }
    }
    Ok(())
}

const TAG_ENCODE: i32 = 0xE1C;

/// Whether group `g` has one member in each of exactly two process columns,
/// whose two process columns each hold one of its copies (global: every
/// process answers alike).
fn one_member_per_column_of_two(layout: &ReverseNeighborLayout, g: usize) -> Result<bool> {
    if layout.q() != 2 {
        return Ok(false);
    }
    let members = layout.group_members(g).map_err(layout_err)?;
    let per_col = |c: usize| members.clone().filter(|bc| bc % 2 == c).count();
    let holders = layout.pair_process_cols(g).map_err(layout_err)?;
    Ok(per_col(0) == 1 && per_col(1) == 1 && holders[0] != holders[1])
}

/// `sum` (lr × nb, contiguous) = Σ of the local blocks starting at local
/// columns `members` of `data` (leading dimension `ld`); zero when none.
fn partial_sum(data: &[f64], members: &[usize], ld: usize, lr: usize, nb: usize, sum: &mut [f64]) -> Result<()> {
    sum.fill(0.0);
    for &m in members {
        checksum::add_block(sum, &data[m * ld..], lr, nb, ld.max(1)).map_err(shape_err)?;
    }
    Ok(())
}

/// A kernel's shape check that cannot fail for the extended matrix's blocks.
pub(crate) fn shape_err(e: checksum::ShapeError) -> crate::Error {
    blacs_ft::Error::Unrecoverable { reason: format!("checksum kernel: {e}") }.into()
}
