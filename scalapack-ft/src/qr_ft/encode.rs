//! The extended matrix [A | padding | checksum pairs] and the left-factor
//! sums D_g of one process, and the initial encoding of the checksums.

use crate::error::Result;
use crate::matrix::DistMatrix;
use blacs_ft::{Grid, Scope};
use checksum::ReverseNeighborLayout;

/// This process's share of the ABFT state.
pub(super) struct Extended {
    /// M × N_ext: data, zero padding, checksum pairs (block-cyclic like A).
    pub e: DistMatrix,
    /// D_g (local rows × nb) for the groups whose pair this process column holds.
    pub d: Vec<Option<Vec<f64>>>,
    /// Global number of data columns (before padding).
    data_n: usize,
}

impl Extended {
    /// Copies A's local blocks into a new extended matrix (same row and
    /// column distribution for the data part, so local columns match).
    pub fn new(grid: &Grid, a: &DistMatrix, layout: &ReverseNeighborLayout) -> Result<Extended> {
        let mut e = DistMatrix::zeros(grid, a.m(), layout.n_extended(), a.nb(), a.nb())?;
        let (lr, lc) = (a.local_rows(), a.local_cols());
        let (lda, lde) = (a.lld(), e.lld());
        for j in 0..lc {
            e.local_mut()[j * lde..j * lde + lr].copy_from_slice(&a.local()[j * lda..j * lda + lr]);
        }
        let mycol = grid.mycol() as usize;
        let d = (0..layout.groups())
            .map(|g| {
                let holds = layout.pair_process_cols(g).map(|pc| pc.contains(&mycol)).unwrap_or(false);
                holds.then(|| vec![0.0; lr * a.nb()])
            })
            .collect();
        Ok(Extended { e, d, data_n: a.n() })
    }

    /// Local column range of extended block column `bc`, if this process holds it.
    pub fn local_block(&self, bc: usize) -> Option<std::ops::Range<usize>> {
        let nb = self.e.nb();
        let (_, mycol) = self.e.coords();
        (self.e.col_owner(bc * nb) == mycol).then(|| {
            let l0 = self.e.local_cols_before(bc * nb);
            l0..l0 + nb
        })
    }

    /// Copy of local columns `lc0..lc0+jb` (all local rows).
    pub fn panel_backup(&self, lc0: usize, jb: usize) -> Vec<f64> {
        let ld = self.e.lld();
        self.e.local()[lc0 * ld..(lc0 + jb) * ld].to_vec()
    }

    /// Puts a [`Extended::panel_backup`] back.
    pub fn restore_panel(&mut self, lc0: usize, backup: &[f64]) {
        let ld = self.e.lld();
        self.e.local_mut()[lc0 * ld..lc0 * ld + backup.len()].copy_from_slice(backup);
    }

    /// The factored panel's stored content (R and V, all local rows) sent
    /// along the process row from the owner column (the D_g holders need it).
    pub fn broadcast_stored_panel(&self, grid: &Grid, owner: usize, lc0: usize, jb: usize) -> Result<Vec<f64>> {
        let (lr, ld) = (self.e.local_rows(), self.e.lld());
        let mut buf = vec![0.0; lr * jb];
        if self.e.coords().1 == owner {
            for c in 0..jb {
                buf[c * lr..(c + 1) * lr].copy_from_slice(&self.e.local()[(lc0 + c) * ld..(lc0 + c) * ld + lr]);
            }
        }
        grid.broadcast(Scope::Row, &mut buf, owner as i32)?;
        Ok(buf)
    }

    /// Commit of panel `k`: its stored content joins D_g of its group.
    pub fn accumulate_finished(&mut self, layout: &ReverseNeighborLayout, k: usize, stored: &[f64]) {
        if let Ok(g) = layout.group_of(k) {
            if let Some(Some(d)) = self.d.get_mut(g) {
                for (x, s) in d.iter_mut().zip(stored) {
                    *x += s;
                }
            }
        }
    }

    /// Test hook: adds 1.0 to this process's last local data element at or
    /// right of global column `col0` (a silent error for `--verify` to find).
    pub fn corrupt_trailing(&mut self, col0: usize) {
        let (lr, lc, ld) = (self.e.local_rows(), self.e.local_cols(), self.e.lld());
        let data_end = self.e.local_cols_before(self.data_n);
        let first = self.e.local_cols_before(col0);
        if lr > 0 && first < data_end && data_end <= lc {
            self.e.local_mut()[(lr - 1) + (data_end - 1) * ld] += 1.0;
        }
    }

    /// Copies the data part back into `a` (same local layout).
    pub fn copy_data_into(&self, a: &mut DistMatrix) {
        let (lr, lc) = (a.local_rows(), a.local_cols());
        let (lda, lde) = (a.lld(), self.e.lld());
        for j in 0..lc {
            a.local_mut()[j * lda..j * lda + lr].copy_from_slice(&self.e.local()[j * lde..j * lde + lr]);
        }
    }
}

/// Collective: C_g = Σ_{J∈g} A_J along each process row, written into both
/// copies of each group's pair. One row reduction per group.
pub(super) fn encode_checksums(grid: &Grid, ext: &mut Extended, layout: &ReverseNeighborLayout) -> Result<()> {
    let (lr, ld, nb) = (ext.e.local_rows(), ext.e.lld(), ext.e.nb());
    for g in 0..layout.groups() {
        let mut sum = vec![0.0; lr * nb];
        for bc in layout.group_members(g).map_err(layout_err)? {
            if let Some(cols) = ext.local_block(bc) {
                for (c, lj) in cols.enumerate() {
                    for (s, x) in sum[c * lr..(c + 1) * lr].iter_mut().zip(&ext.e.local()[lj * ld..lj * ld + lr]) {
                        *s += x;
                    }
                }
            }
        }
        grid.sum(Scope::Row, &mut sum, None)?;
        for bc in layout.pair_block_cols(g).map_err(layout_err)? {
            if let Some(cols) = ext.local_block(bc) {
                for (c, lj) in cols.enumerate() {
                    ext.e.local_mut()[lj * ld..lj * ld + lr].copy_from_slice(&sum[c * lr..(c + 1) * lr]);
                }
            }
        }
    }
    Ok(())
}

/// A layout query that cannot fail for indices the layout itself produced.
pub(super) fn layout_err(e: checksum::LayoutError) -> crate::Error {
    blacs_ft::Error::Unrecoverable { reason: format!("checksum layout: {e}") }.into()
}
