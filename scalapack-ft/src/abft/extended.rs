//! The extended matrix [A | padding | checksums] and the left-factor
//! sums D_g of one process.

use super::relations::Relations;
use super::workspace::{extended_lld, sizes, FtWorkspace};
use crate::error::{Error, Result};
use crate::matrix::DistMatrix;
use blacs_ft::Grid;
use checksum::{ChecksumLayout, LayoutKind};
use std::borrow::Cow;

/// How a call starts on this process: the extended matrix is filled
/// accordingly.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Start {
    /// A new call: A is taken over (or copied in), the checksums are
    /// encoded afterwards.
    Fresh,
    /// A replacement: every block it holds is rebuilt by the survivors, so
    /// A's content (meaningless) is not copied.
    Join,
}

/// The global shape of a fault-tolerant call's matrix and its checksum
/// layout: what its checkpoints must match (see
/// `recovery::protocol::Algorithm::Call`; a checkpoint saved with another
/// layout is refused).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MatrixShape {
    /// Rows, data columns (without padding and checksums), block size.
    pub m: u64,
    pub n: u64,
    pub nb: u64,
    /// The checksum layout of the extended matrix.
    pub layout: LayoutKind,
}

impl std::fmt::Display for MatrixShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "M={} N={} NB={} with {} checksums", self.m, self.n, self.nb, self.layout)
    }
}

/// This process's share of the ABFT state.
pub(crate) struct Extended {
    /// M × N_ext: data, zero padding, checksums (block-cyclic like A).
    pub matrix: DistMatrix,
    /// D_g^(i) (local rows × nb; for Cholesky followed by U_g^(i), see
    /// [`Relations::side_sums`]) for the groups of which this process
    /// column holds a checksum replica (`i` the one it holds).
    pub left_sums: Vec<Option<Vec<f64>>>,
    /// Global number of data columns (before padding).
    data_n: usize,
    /// The layout of its checksums.
    layout: LayoutKind,
    /// Whether `matrix` lives in A's own storage (A's local array is its prefix).
    in_place: bool,
    /// The entries the checksums protect (the whole matrix unless the
    /// factorization says otherwise: Cholesky's lower triangle).
    pub relations: Relations,
}

impl Extended {
    /// The extended matrix over A's local blocks (same row and column
    /// distribution for the data part, so local columns match): in A's own
    /// storage when it has room for the extra columns (nothing is copied;
    /// A is unusable until [`Extended::release`]), else in the workspace's
    /// storage with A's blocks copied in. The padding columns and the D_g
    /// are zeroed; the checksum columns are left to the encoding (a fresh
    /// call) or to the rebuild (a replacement), which write them all.
    ///
    /// `routine` names the call in a memory error; `relations` are the
    /// entries the checksums cover (and so the sums kept beside them).
    ///
    /// # Errors
    /// [`Error::Memory`] (local) for the copy or the sums; for storage the
    /// program lent (see [`crate::storage::LocalStorage::lent`]), which is
    /// worked in place or not at all, [`Error::Storage`] when it is too
    /// short for the extended matrix and an unrecoverable error when its
    /// leading dimension is not the extended matrix's (local: the callers
    /// check both with their arguments first, so neither happens there).
    pub fn new(
        grid: &Grid,
        a: &mut DistMatrix,
        layout: &ChecksumLayout,
        work: &mut FtWorkspace,
        start: Start,
        relations: Relations,
        routine: &str,
    ) -> Result<Extended> {
        // (Rows as A's; columns in the layout's blocks: A's own, or a
        // solve's right-hand sides in blocks of at most NRHS columns.)
        let (mb, nb) = (a.mb(), layout.nb());
        let (lr, lc, lda) = (a.local_rows(), a.local_cols(), a.lld());
        let lde = extended_lld(a);
        let (need, d_one, _) = sizes(grid, a, layout);
        let in_place = lda == lde && a.storage_mut().len() >= need;
        // The program's array (lent) is worked in place or not at all: a
        // copy would leave it without the factors its program expects there.
        if !in_place && !a.storage().is_owned() {
            let len = a.storage().len();
            return Err(if lda != lde {
                Error::Grid(blacs_ft::Error::Unrecoverable {
                    reason: format!(
                        "{routine}: the program's array A has leading dimension {lda}, and the checksum-extended \
                         matrix kept in it needs {lde}"
                    ),
                })
            } else {
                Error::Storage { routine: routine.into(), what: "the checksum-extended matrix".into(), len, need }
            });
        }
        // (A memory error names this routine and what it is for.)
        let named = |e: Error| match e {
            Error::Memory { bytes, available, .. } => {
                Error::Memory { routine: routine.into(), what: "the checksum-extended matrix".into(), bytes, available }
            }
            e => e,
        };
        // The sums first: a memory error then leaves A's storage and the
        // workspace's as they were.
        let mycol = grid.mycol() as usize;
        let d_len = d_one * relations.side_sums();
        let mut d: Vec<Option<Vec<f64>>> = Vec::with_capacity(layout.groups());
        for g in 0..layout.groups() {
            d.push(if layout.holds_checksum(g, mycol) {
                let mut buf = work.d.pop().unwrap_or_default();
                // (A replacement's sums are all written by the rebuild: a
                // buffer it already holds is taken as it is.)
                if start == Start::Join && buf.len() >= d_len {
                    buf.truncate(d_len);
                } else {
                    buf.clear();
                }
                if let Err(e) = crate::memory::grow_zeroed(&mut buf, d_len, routine, "the left-factor checksums") {
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
            DistMatrix::in_storage_from(grid, a.m(), layout.n_extended(), mb, nb, Some(lde), a.storage_mut())
        } else {
            DistMatrix::in_storage_from(grid, a.m(), layout.n_extended(), mb, nb, Some(lde), &mut work.ext)
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
        // The padding is zeroed. The checksum columns are not: a fresh
        // call encodes them all, and a replacement receives every one it
        // holds from the duplicates during the rebuild (zeroing them first
        // would keep the survivors waiting while it touches them again).
        let zero_to = e.local_cols_before(layout.checksum_col0());
        e.local_mut()[lc * lde..zero_to * lde].fill(0.0);
        Ok(Extended { matrix: e, left_sums: d, data_n: a.n(), layout: layout.kind(), in_place, relations })
    }

    /// Ends the call on this process: A gets its storage back (in place) or
    /// its factored blocks copied back (`copy_back`; else its content is
    /// left undefined), and the workspace gets its storage back for the
    /// next call.
    pub fn release(self, a: &mut DistMatrix, work: &mut FtWorkspace, copy_back: bool) {
        work.d = self.left_sums.into_iter().flatten().collect();
        if self.in_place {
            *a.storage_mut() = self.matrix.into_local();
            return;
        }
        if copy_back {
            let (lr, lc) = (a.local_rows(), a.local_cols());
            let (lda, lde) = (a.lld(), self.matrix.lld());
            for j in 0..lc {
                a.local_mut()[j * lda..j * lda + lr].copy_from_slice(&self.matrix.local()[j * lde..j * lde + lr]);
            }
        }
        work.ext = self.matrix.into_local();
    }

    /// The call's global shape as a checkpoint records it.
    pub fn shape(&self) -> MatrixShape {
        MatrixShape {
            m: self.matrix.m() as u64,
            n: self.data_n as u64,
            nb: self.matrix.nb() as u64,
            layout: self.layout,
        }
    }

    /// This process's arrays of the ABFT state: the extended matrix's local
    /// storage, then the D_g it holds (what a checkpoint saves).
    pub fn saved_arrays(&mut self) -> Vec<&mut [f64]> {
        let mut v: Vec<&mut [f64]> = vec![self.matrix.local_mut()];
        v.extend(self.left_sums.iter_mut().flatten().map(|d| d.as_mut_slice()));
        v
    }

    /// The length of the prefix of the local array that holds the data
    /// columns (and padding): what comes before the checksum columns.
    pub fn data_len(&self, layout: &ChecksumLayout) -> usize {
        self.matrix.lld() * self.matrix.local_cols_before(layout.checksum_col0())
    }

    /// Local column range of extended block column `bc`, if this process holds it.
    pub fn local_block(&self, bc: usize) -> Option<std::ops::Range<usize>> {
        let nb = self.matrix.nb();
        let (_, mycol) = self.matrix.coords();
        (self.matrix.col_owner(bc * nb) == mycol).then(|| {
            let l0 = self.matrix.local_cols_before(bc * nb);
            l0..l0 + nb
        })
    }

    /// Extended block column `bc` (its local rows × nb, column-major,
    /// contiguous), if this process holds it: the local storage itself
    /// where the leading dimension is the local row count, else a packed
    /// copy (see [`crate::descriptor::storage_lld`]).
    pub fn block(&self, bc: usize) -> Option<Cow<'_, [f64]>> {
        let cols = self.local_block(bc)?;
        Some(packed_block(self.matrix.local(), (self.matrix.local_rows(), self.matrix.lld()), cols))
    }

    /// Writes `data` (local rows × nb, contiguous, as [`Extended::block`]
    /// gives it) into extended block column `bc`; false (and nothing
    /// written) where this process does not hold it.
    pub fn set_block(&mut self, bc: usize, data: &[f64]) -> bool {
        let Some(cols) = self.local_block(bc) else {
            return false;
        };
        let (lr, ld) = (self.matrix.local_rows(), self.matrix.lld());
        debug_assert_eq!(data.len(), lr * cols.len());
        crate::matrix::unpack(data, self.matrix.local_mut(), ld, 0..lr, cols);
        true
    }

    /// Copy of local columns `lc0..lc0+jb` (all local rows).
    pub fn panel_backup(&self, lc0: usize, jb: usize) -> Vec<f64> {
        let ld = self.matrix.lld();
        self.matrix.local()[lc0 * ld..(lc0 + jb) * ld].to_vec()
    }

    /// Puts a [`Extended::panel_backup`] back.
    pub fn restore_panel(&mut self, lc0: usize, backup: &[f64]) {
        let ld = self.matrix.lld();
        self.matrix.local_mut()[lc0 * ld..lc0 * ld + backup.len()].copy_from_slice(backup);
    }

    /// Commit of panel `k` (global columns `j0..j0+jb`): its left factor
    /// (QR's V, LU's L: the entries strictly below the diagonal;
    /// Cholesky's L: the diagonal too) joins D_g^(i) of its group,
    /// weighted by `w_{i,k}`. `lower` holds
    /// the panel's last `lrows` local rows (`lrows × jb`, leading
    /// dimension `lrows`); on and above the diagonal (R, U) the columns
    /// stay protected by C_g, which holds the transformed columns with
    /// zeros below the diagonal.
    pub fn accumulate_finished(
        &mut self,
        layout: &ChecksumLayout,
        k: usize,
        j0: usize,
        jb: usize,
        lower: &[f64],
        lrows: usize,
    ) {
        let _sums = recovery::profile::part(recovery::profile::Part::Checksums, None);
        let lr = self.matrix.local_rows();
        let (Ok(g), Ok(t)) = (layout.group_of(k), layout.position_in_group(k)) else { return };
        let Some(held) = layout.held(g, self.matrix.coords().1) else { return };
        let weight = layout.weight(held.index, t);
        // `lower`'s row 0 is local row lr − lrows; column c's left factor
        // is in the local rows from its start on.
        let first = lr - lrows;
        let rows: Vec<usize> = (0..lr).map(|li| self.matrix.global_row(li)).collect();
        let starts: Vec<usize> =
            (0..jb).map(|c| self.relations.left_factor_start(&rows, j0 + c).max(first) - first).collect();
        let Some(Some(d)) = self.left_sums.get_mut(g) else { return };
        for (c, &below) in starts.iter().enumerate() {
            let (acc, x) = (&mut d[c * lr + first + below..(c + 1) * lr], &lower[c * lrows + below..(c + 1) * lrows]);
            super::encode::axpy(acc, x, weight).expect("one column of the panel's left factor");
        }
    }

    /// Test hook: adds 1.0 to this process's last local data element at or
    /// right of global column `col0` (a silent error for `--verify` to find).
    pub fn corrupt_trailing(&mut self, col0: usize) {
        let (lr, lc, ld) = (self.matrix.local_rows(), self.matrix.local_cols(), self.matrix.lld());
        let data_end = self.matrix.local_cols_before(self.data_n);
        let first = self.matrix.local_cols_before(col0);
        if lr > 0 && first < data_end && data_end <= lc {
            self.matrix.local_mut()[(lr - 1) + (data_end - 1) * ld] += 1.0;
        }
    }
}

/// The length of the storage (local) that an in-place fault-tolerant
/// factorization of an `m`×`n` matrix in `nb`×`nb` blocks needs on this
/// process, its local array with leading dimension `lld` first (all
/// global but `lld`): `lld` × the local columns of the extended matrix
/// [A | padding | checksum columns] of checksum layout `kind`. With `lld`
/// = max(1, local rows), the length `Extended::new` looks for in storage
/// a program lent to work in place (storage ftla owns has
/// [`crate::descriptor::storage_lld`]'s).
///
/// # Errors
/// A shape that cannot carry checksums: `routine`'s argument error at its
/// descriptor `desc` (as the factorizations give it).
#[allow(clippy::too_many_arguments)]
pub fn in_place_len(
    routine: &str,
    desc: u32,
    grid: &Grid,
    kind: LayoutKind,
    m: usize,
    n: usize,
    nb: usize,
    lld: usize,
) -> Result<usize> {
    let (nprow, npcol) = (grid.nprow() as usize, grid.npcol() as usize);
    let layout = ChecksumLayout::new(kind, m, n, nb, nprow, npcol);
    super::check_layout(routine, desc, kind, &layout)?;
    let layout = layout.map_err(layout_err)?;
    Ok(lld * blacs_ft::index::numroc(layout.n_extended(), nb, grid.mycol() as usize, 0, npcol))
}

/// A layout query that cannot fail for indices the layout itself produced.
pub(crate) fn layout_err(e: checksum::LayoutError) -> crate::Error {
    blacs_ft::Error::Unrecoverable { reason: format!("checksum layout: {e}") }.into()
}

/// Whether a local array of `lr` rows with leading dimension `ld` holds
/// its blocks contiguous (local rows × nb): where `ld` is the row count.
pub(crate) fn blocks_contiguous(lr: usize, ld: usize) -> bool {
    ld == lr || lr == 0
}

/// Local columns `cols` (all `lr` local rows) of a local array with
/// leading dimension `ld`, contiguous: the array itself where
/// [`blocks_contiguous`], else a packed copy.
pub(crate) fn packed_block(local: &[f64], (lr, ld): (usize, usize), cols: std::ops::Range<usize>) -> Cow<'_, [f64]> {
    if blocks_contiguous(lr, ld) {
        Cow::Borrowed(&local[cols.start * ld..cols.start * ld + lr * cols.len()])
    } else {
        let mut packed = Vec::new();
        crate::matrix::pack(local, ld, 0..lr, cols, &mut packed);
        Cow::Owned(packed)
    }
}
