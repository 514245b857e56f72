//! The extended matrix [A | padding | checksum pairs] and the left-factor
//! sums D_g of one process, and the initial encoding of the checksums.

use super::workspace::{sizes, FtWorkspace};
use crate::error::{Error, Result};
use crate::matrix::DistMatrix;
use crate::qr::reflectors::Panel;
use blacs_ft::{Grid, Scope};
use checksum::ReverseNeighborLayout;

/// How a call starts on this process: the extended matrix is filled
/// accordingly.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Start {
    /// A new call: A is taken over (or copied in), the checksums are
    /// encoded afterwards.
    Fresh,
    /// A replacement: every block it holds is rebuilt by the survivors, so
    /// A's content (meaningless) is not copied.
    Join,
}

/// This process's share of the ABFT state.
pub(super) struct Extended {
    /// M × N_ext: data, zero padding, checksum pairs (block-cyclic like A).
    pub e: DistMatrix,
    /// D_g (local rows × nb) for the groups whose pair this process column holds.
    pub d: Vec<Option<Vec<f64>>>,
    /// Global number of data columns (before padding).
    data_n: usize,
    /// Whether `e` lives in A's own storage (A's local array is its prefix).
    in_place: bool,
}

impl Extended {
    /// The extended matrix over A's local blocks (same row and column
    /// distribution for the data part, so local columns match): in A's own
    /// storage when it has room for the extra columns (nothing is copied;
    /// A is unusable until [`Extended::release`]), else in the workspace's
    /// storage with A's blocks copied in. The padding columns and the D_g
    /// are zeroed; the checksum columns too unless the call is fresh (the
    /// encoding then overwrites them all).
    pub fn new(
        grid: &Grid,
        a: &mut DistMatrix,
        layout: &ReverseNeighborLayout,
        work: &mut FtWorkspace,
        start: Start,
    ) -> Result<Extended> {
        let nb = a.nb();
        let (lr, lc, lda) = (a.local_rows(), a.local_cols(), a.lld());
        let lde = lr.max(1);
        let in_place = lda == lde && a.storage_mut().len() >= sizes(grid, a, layout).0;
        // (A memory error names this routine and what it is for.)
        let named = |e: Error| match e {
            Error::Memory { bytes, available, .. } => Error::Memory {
                routine: "pdgeqrf_ft".into(),
                what: "the checksum-extended matrix".into(),
                bytes,
                available,
            },
            e => e,
        };
        // The sums first: a memory error then leaves A's storage and the
        // workspace's as they were.
        let mycol = grid.mycol() as usize;
        let mut d: Vec<Option<Vec<f64>>> = Vec::with_capacity(layout.groups());
        for g in 0..layout.groups() {
            d.push(if layout.holds_pair(g, mycol) {
                let mut buf = work.d.pop().unwrap_or_default();
                buf.clear();
                if let Err(e) = crate::memory::grow_zeroed(&mut buf, lr * nb, "pdgeqrf_ft", "the left-factor checksums")
                {
                    work.d.extend(d.into_iter().flatten());
                    return Err(e);
                }
                Some(buf)
            } else {
                None
            });
        }
        // (`in_storage_from` takes the storage only when it succeeds.)
        let taken = if in_place {
            DistMatrix::in_storage_from(grid, a.m(), layout.n_extended(), nb, nb, a.storage_mut())
        } else {
            DistMatrix::in_storage_from(grid, a.m(), layout.n_extended(), nb, nb, &mut work.ext)
        };
        let mut e = match taken {
            Ok(e) => e,
            Err(err) => {
                work.d.extend(d.into_iter().flatten());
                return Err(named(err));
            }
        };
        if !in_place && start != Start::Join {
            for j in 0..lc {
                e.local_mut()[j * lde..j * lde + lr].copy_from_slice(&a.local()[j * lda..j * lda + lr]);
            }
        }
        let checksums_from = layout.n_extended() - 2 * layout.groups() * nb;
        let zero_to = if start == Start::Fresh { e.local_cols_before(checksums_from) } else { e.local_cols() };
        e.local_mut()[lc * lde..zero_to * lde].fill(0.0);
        Ok(Extended { e, d, data_n: a.n(), in_place })
    }

    /// Ends the call on this process: A gets its storage back (in place) or
    /// its factored blocks copied back (`copy_back`; else its content is
    /// left undefined), and the workspace gets its storage back for the
    /// next call.
    pub fn release(self, a: &mut DistMatrix, work: &mut FtWorkspace, copy_back: bool) {
        work.d = self.d.into_iter().flatten().collect();
        if self.in_place {
            *a.storage_mut() = self.e.into_local();
            return;
        }
        if copy_back {
            let (lr, lc) = (a.local_rows(), a.local_cols());
            let (lda, lde) = (a.lld(), self.e.lld());
            for j in 0..lc {
                a.local_mut()[j * lda..j * lda + lr].copy_from_slice(&self.e.local()[j * lde..j * lde + lr]);
            }
        }
        work.ext = self.e.into_local();
    }

    /// Global number of data columns (A's N).
    pub fn data_n(&self) -> usize {
        self.data_n
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

    /// The local storage of extended block column `bc` (its local rows ×
    /// nb, column-major), if this process holds it. Contiguous: the extended
    /// matrix has the minimal leading dimension (the local row count, or 1
    /// with no rows — the block is then empty).
    pub fn block(&self, bc: usize) -> Option<&[f64]> {
        let range = self.block_range(bc)?;
        Some(&self.e.local()[range])
    }

    /// [`Extended::block`], mutable.
    pub fn block_mut(&mut self, bc: usize) -> Option<&mut [f64]> {
        let range = self.block_range(bc)?;
        Some(&mut self.e.local_mut()[range])
    }

    fn block_range(&self, bc: usize) -> Option<std::ops::Range<usize>> {
        let cols = self.local_block(bc)?;
        let at = cols.start * self.e.lld();
        Some(at..at + self.e.local_rows() * cols.len())
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

    /// Commit of panel `k`: its left factor joins D_g of its group — the
    /// entries strictly below the diagonal, read from the explicit V (R,
    /// on and above the diagonal, stays protected by C_g, which holds the
    /// transformed columns with zeros below the diagonal).
    pub fn accumulate_finished(&mut self, layout: &ReverseNeighborLayout, k: usize, panel: &Panel) {
        let lr = self.e.local_rows();
        let Ok(g) = layout.group_of(k) else { return };
        // V's row 0 is local row lr − lrows; column c's strictly-lower rows
        // are the local rows from the first past global row j0 + c on.
        let v_first = lr - panel.lrows;
        let starts: Vec<usize> = (0..panel.jb).map(|c| self.e.local_rows_before(panel.j0 + c + 1) - v_first).collect();
        let Some(Some(d)) = self.d.get_mut(g) else { return };
        for (c, &below) in starts.iter().enumerate() {
            let v = &panel.v[c * panel.lrows + below..(c + 1) * panel.lrows];
            for (x, s) in d[c * lr + v_first + below..(c + 1) * lr].iter_mut().zip(v) {
                *x += s;
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
}

/// Collective: C_g = Σ_{J∈g} A_J along each process row, written into both
/// copies of each group's pair. One row reduction per group, made in place
/// in this process's copy of the pair when it holds one (no scratch to
/// allocate, fill and copy back: the encoding touches each block once).
pub(super) fn encode_checksums(grid: &Grid, ext: &mut Extended, layout: &ReverseNeighborLayout) -> Result<()> {
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
            for (c, x) in copy.iter_mut().zip(mine) {
                *c += x;
            }
            continue;
        }
        match copies.first() {
            // The pair's local columns lie after every data column.
            Some(&l0) => {
                let (data, rest) = ext.e.local_mut().split_at_mut(l0 * ld);
                let sum = &mut rest[..len];
                partial_sum(data, &members, ld, lr, nb, sum);
                grid.sum(Scope::Row, sum, None)?;
                for &l1 in &copies[1..] {
                    ext.e.local_mut().copy_within(l0 * ld..l0 * ld + len, l1 * ld);
                }
            }
            // No copy here: this process only contributes its members.
            None => {
                scratch.resize(len, 0.0);
                partial_sum(ext.e.local(), &members, ld, lr, nb, &mut scratch);
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
fn partial_sum(data: &[f64], members: &[usize], ld: usize, lr: usize, nb: usize, sum: &mut [f64]) {
    for c in 0..nb {
        let out = &mut sum[c * lr..(c + 1) * lr];
        match members.split_first() {
            None => out.fill(0.0),
            Some((&first, rest)) => {
                out.copy_from_slice(&data[(first + c) * ld..(first + c) * ld + lr]);
                for &m in rest {
                    for (s, x) in out.iter_mut().zip(&data[(m + c) * ld..(m + c) * ld + lr]) {
                        *s += x;
                    }
                }
            }
        }
    }
}

/// A layout query that cannot fail for indices the layout itself produced.
pub(super) fn layout_err(e: checksum::LayoutError) -> crate::Error {
    blacs_ft::Error::Unrecoverable { reason: format!("checksum layout: {e}") }.into()
}
