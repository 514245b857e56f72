//! Checking the checksum relations (`--verify`): detects silent corruption
//! of data or checksums.

use super::extended::{layout_err, Extended};
use crate::error::Result;
use crate::norms::EPS;
use blacs_ft::{Grid, Scope};
use checksum::ChecksumLayout;

/// Outcome of `verify_checksums` (the check of a fault-tolerant call's
/// `verify` option), the same on every rank.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChecksumCheck {
    /// Largest |C_g^(i) − Σ w_{i,J}·Ã_J| over all groups, checksums, replicas and rows.
    pub max_c_defect: f64,
    /// Largest |D_g^(i) − Σ w_{i,J}·(left factor) of the finished A_J|.
    pub max_d_defect: f64,
    /// Defects up to this are rounding: 16 · eps · max(M, N) · max|A|.
    pub tolerance: f64,
    /// Both defects within the tolerance.
    pub ok: bool,
    /// The group with the largest defect.
    pub worst_group: usize,
}

/// Collective: recomputes every group's weighted sums along the process
/// rows and compares them with every stored replica of C_g^(i) and D_g^(i).
pub(crate) fn verify_checksums(
    grid: &Grid,
    ext: &Extended,
    layout: &ChecksumLayout,
    committed: usize,
) -> Result<ChecksumCheck> {
    let (lr, ld) = (ext.matrix.local_rows(), ext.matrix.lld());
    let mycol = grid.mycol() as usize;
    let rows: Vec<usize> = (0..lr).map(|li| ext.matrix.global_row(li)).collect();
    let done_cols = finished_cols(ext, layout, committed);
    let mut scale = [0.0f64];
    let data_cols = ext.matrix.local_cols_before(layout.n());
    for x in ext.matrix.local()[..data_cols * ld].iter() {
        scale[0] = scale[0].max(x.abs());
    }
    grid.max(Scope::All, &mut scale)?;
    let (mut worst_c, mut worst_d, mut worst_g) = (0.0f64, 0.0f64, 0usize);
    for g in 0..layout.groups() {
        let (mut dc, mut dd) = (0.0f64, 0.0f64);
        for i in 0..layout.checksums() {
            let (csum, dsum) = recomputed_sums(grid, ext, layout, &rows, done_cols, g, i)?;
            // Each stored replica against the recomputed sums (the checksum
            // crate's relation check; only the largest defect is kept here).
            let defect = |stored: &[f64], sum: &[f64]| -> Result<f64> {
                let v = checksum::verify_relation(stored, sum, lr, 1, 0.0, 0.0).map_err(|e| {
                    crate::Error::Grid(blacs_ft::Error::Unrecoverable { reason: format!("checksum verification: {e}") })
                })?;
                Ok(v.max_abs_diff)
            };
            for bc in layout.replica_block_cols(g, i).map_err(layout_err)? {
                if let Some(copy) = ext.block(bc) {
                    dc = dc.max(defect(copy, &csum)?);
                }
            }
            if layout.held(g, mycol).is_some_and(|h| h.index == i) {
                if let Some(Some(d)) = ext.left_sums.get(g) {
                    dd = dd.max(defect(d, &dsum)?);
                }
            }
        }
        let mut v = [dc, dd];
        grid.max(Scope::All, &mut v)?;
        if v[0].max(v[1]) > worst_c.max(worst_d) {
            worst_g = g;
        }
        worst_c = worst_c.max(v[0]);
        worst_d = worst_d.max(v[1]);
    }
    let tolerance = 16.0 * EPS * layout.m().max(layout.n()).max(1) as f64 * scale[0].max(1e-300);
    Ok(ChecksumCheck {
        max_c_defect: worst_c,
        max_d_defect: worst_d,
        tolerance,
        ok: worst_c <= tolerance && worst_d <= tolerance,
        worst_group: worst_g,
    })
}

/// The columns factored at `committed` steps (R and V, or U and L, final;
/// see the rebuild).
fn finished_cols(ext: &Extended, layout: &ChecksumLayout, committed: usize) -> usize {
    (committed * ext.matrix.nb()).min(layout.m().min(layout.n()))
}

/// Collective along the process row: checksum `i` of group `g` recomputed
/// from the group's blocks, as the relations at `done_cols` finished
/// columns have it (C_g^(i), D_g^(i): the weighted sums of the entries
/// each covers, see [`super::Relations`]), each local rows × nb.
fn recomputed_sums(
    grid: &Grid,
    ext: &Extended,
    layout: &ChecksumLayout,
    rows: &[usize],
    done_cols: usize,
    g: usize,
    i: usize,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let (lr, ld, nb) = (ext.matrix.local_rows(), ext.matrix.lld(), ext.matrix.nb());
    let members = layout.group_members(g).map_err(layout_err)?;
    let mut csum = vec![0.0; lr * nb];
    let mut dsum = vec![0.0; lr * nb];
    for bc in members.clone() {
        let Some(cols) = ext.local_block(bc) else { continue };
        let w = layout.weight(i, bc - members.start);
        for (c, lj) in cols.enumerate() {
            let (in_c, in_d) = ext.relations.rows(rows, bc * nb + c, done_cols);
            let col = &ext.matrix.local()[lj * ld..lj * ld + lr];
            for (sum, part) in [(&mut csum, in_c), (&mut dsum, in_d)] {
                for li in part {
                    sum[c * lr + li] += w * col[li];
                }
            }
        }
    }
    grid.sum(Scope::Row, &mut csum, None)?;
    grid.sum(Scope::Row, &mut dsum, None)?;
    Ok((csum, dsum))
}

/// Collective: every checksum replica C_g^(i) and every D_g^(i) written
/// anew from the blocks, as the relations at `committed` steps have them
/// (what [`verify_checksums`] checks) — the encoding of a call resumed on
/// another grid at its saved step (see `super::regrid`).
pub(crate) fn reencode_checksums(
    grid: &Grid,
    ext: &mut Extended,
    layout: &ChecksumLayout,
    committed: usize,
) -> Result<()> {
    let mycol = grid.mycol() as usize;
    let rows: Vec<usize> = (0..ext.matrix.local_rows()).map(|li| ext.matrix.global_row(li)).collect();
    let done_cols = finished_cols(ext, layout, committed);
    for g in 0..layout.groups() {
        for i in 0..layout.checksums() {
            let (csum, dsum) = recomputed_sums(grid, ext, layout, &rows, done_cols, g, i)?;
            for bc in layout.replica_block_cols(g, i).map_err(layout_err)? {
                if let Some(copy) = ext.block_mut(bc) {
                    copy.copy_from_slice(&csum);
                }
            }
            if layout.held(g, mycol).is_some_and(|h| h.index == i) {
                if let Some(Some(d)) = ext.left_sums.get_mut(g) {
                    d[..dsum.len()].copy_from_slice(&dsum);
                }
            }
        }
    }
    Ok(())
}
