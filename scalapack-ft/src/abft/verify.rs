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
    /// Defects of C and D up to this are rounding: 16 · eps · max(M, N) ·
    /// the largest |entry| they cover.
    pub tolerance: f64,
    /// Cholesky: the largest defect of U_g^(i), the sums of the strictly
    /// upper triangle (not referenced; the same non-finite value on both
    /// sides counts as agreement, since the program may keep anything
    /// there); 0 for the other factorizations.
    #[serde(default)]
    pub max_upper_defect: f64,
    /// U's defects up to this are rounding (as `tolerance`, with the
    /// largest finite |entry| of the strictly upper triangle).
    #[serde(default)]
    pub upper_tolerance: f64,
    /// Every defect within its tolerance.
    pub ok: bool,
    /// The group with the largest defect.
    pub worst_group: usize,
}

/// Collective: recomputes every group's weighted sums along the process
/// rows and compares them with every stored replica of C_g^(i), D_g^(i)
/// (and U_g^(i)).
pub(crate) fn verify_checksums(
    grid: &Grid,
    ext: &Extended,
    layout: &ChecksumLayout,
    committed: usize,
) -> Result<ChecksumCheck> {
    let (lr, ld, nb) = (ext.matrix.local_rows(), ext.matrix.lld(), ext.matrix.nb());
    let mycol = grid.mycol() as usize;
    let rows: Vec<usize> = (0..lr).map(|li| ext.matrix.global_row(li)).collect();
    let done_cols = finished_cols(ext, layout, committed);
    // The largest |entry| that C and D cover, and the largest finite one
    // U covers.
    let mut scale = [0.0f64, 0.0];
    for lj in 0..ext.matrix.local_cols_before(layout.n()) {
        let parts = ext.relations.parts(&rows, ext.matrix.global_col(lj), done_cols);
        let col = &ext.matrix.local()[lj * ld..lj * ld + lr];
        for li in parts.c.chain(parts.d) {
            scale[0] = scale[0].max(col[li].abs());
        }
        for li in parts.upper {
            if col[li].is_finite() {
                scale[1] = scale[1].max(col[li].abs());
            }
        }
    }
    grid.max(Scope::All, &mut scale)?;
    let rounding = |scale: f64| 16.0 * EPS * layout.m().max(layout.n()).max(1) as f64 * scale.max(1e-300);
    let tolerance = rounding(scale[0]);
    let upper_tolerance = if ext.relations.side_sums() > 1 { rounding(scale[1]) } else { 0.0 };
    let (mut worst, mut worst_g) = ([0.0f64; 3], 0usize);
    for g in 0..layout.groups() {
        let mut here = [0.0f64; 3];
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
                    here[0] = here[0].max(defect(&copy, &csum)?);
                }
            }
            if layout.held(g, mycol).is_some_and(|h| h.index == i) {
                if let Some(Some(d)) = ext.left_sums.get(g) {
                    let (d, upper) = d.split_at(lr * nb);
                    here[1] = here[1].max(defect(d, &dsum[..lr * nb])?);
                    here[2] = here[2].max(upper_defect(upper, &dsum[lr * nb..]));
                }
            }
        }
        grid.max(Scope::All, &mut here)?;
        let over = |d: [f64; 3]| (d[0].max(d[1]) / tolerance).max(d[2] / upper_tolerance);
        if over(here) > over(worst) {
            worst_g = g;
        }
        worst = [worst[0].max(here[0]), worst[1].max(here[1]), worst[2].max(here[2])];
    }
    Ok(ChecksumCheck {
        max_c_defect: worst[0],
        max_d_defect: worst[1],
        tolerance,
        max_upper_defect: worst[2],
        upper_tolerance,
        ok: worst[0] <= tolerance && worst[1] <= tolerance && worst[2] <= upper_tolerance,
        worst_group: worst_g,
    })
}

/// The largest |stored − sum| of the upper triangle's sums, where the
/// same non-finite value on both sides agrees (the program's own entries:
/// NaN stays NaN, and a sum that overflowed overflows alike).
fn upper_defect(stored: &[f64], sum: &[f64]) -> f64 {
    let differ = |(a, b): (&f64, &f64)| {
        if a.is_finite() && b.is_finite() {
            (a - b).abs()
        } else if (a.is_nan() && b.is_nan()) || a == b {
            0.0
        } else {
            f64::INFINITY
        }
    };
    stored.iter().zip(sum).map(differ).fold(0.0, f64::max)
}

/// The columns factored at `committed` steps (R and V, or U and L, final;
/// see the rebuild).
fn finished_cols(ext: &Extended, layout: &ChecksumLayout, committed: usize) -> usize {
    (committed * ext.matrix.nb()).min(layout.m().min(layout.n()))
}

/// Collective along the process row: checksum `i` of group `g` recomputed
/// from the group's blocks, as the relations at `done_cols` finished
/// columns have it (C_g^(i), and D_g^(i) with U_g^(i) after it for
/// Cholesky: the weighted sums of the entries each covers, see
/// [`super::Relations`]), each local rows × nb.
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
    // D, and U after it (Cholesky).
    let mut dsum = vec![0.0; lr * nb * ext.relations.side_sums()];
    for bc in members.clone() {
        let Some(cols) = ext.local_block(bc) else { continue };
        let w = layout.weight(i, bc - members.start);
        for (c, lj) in cols.enumerate() {
            let parts = ext.relations.parts(rows, bc * nb + c, done_cols);
            let col = &ext.matrix.local()[lj * ld..lj * ld + lr];
            for (sum, at, part) in [(&mut csum[..], c, parts.c), (&mut dsum[..], c, parts.d)] {
                for li in part {
                    sum[at * lr + li] += w * col[li];
                }
            }
            for li in parts.upper {
                dsum[(nb + c) * lr + li] += w * col[li];
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
                ext.set_block(bc, &csum);
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
