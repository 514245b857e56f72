//! A 2D block-cyclic distributed matrix with column-major local storage
//! (ScaLAPACK's layout: block (I, J) lives on process
//! ((I + RSRC) mod P, (J + CSRC) mod Q)).

use crate::args::{arg_error, descriptor_error};
use crate::descriptor::{largest_storage_lld, Descriptor};
use crate::error::Result;
use crate::storage::LocalStorage;
use blacs_ft::index::{indxg2p, indxl2g, numroc};
use blacs_ft::{Grid, Scope};

/// A distributed dense matrix: a descriptor plus this process's local array.
#[derive(Debug)]
pub struct DistMatrix {
    desc: Descriptor,
    nprow: usize,
    npcol: usize,
    myrow: usize,
    mycol: usize,
    /// The local array in its first `len` elements; storage past them is
    /// room a caller reserved (see [`DistMatrix::in_storage`]). ftla's own,
    /// or an array the program lent ([`DistMatrix::from_local`]).
    data: LocalStorage,
    len: usize,
    /// This process's part was lost with a failed process (see
    /// [`DistMatrix::is_lost`]).
    lost: bool,
}

impl Clone for DistMatrix {
    /// A copy of the matrix: its local array (owned), without the room
    /// past it.
    fn clone(&self) -> DistMatrix {
        DistMatrix { data: self.local().to_vec().into(), ..*self }
    }
}

impl DistMatrix {
    /// An `m`×`n` zero matrix in `mb`×`nb` blocks, first block on process
    /// (0, 0), local leading dimension [`crate::descriptor::storage_lld`]
    /// of the local rows (the minimal one, padded where columns would lie a
    /// multiple of 4 KiB apart). All arguments (global).
    /// Not collective: bad sizes are a local error (every rank computes the
    /// same one from the same global arguments).
    ///
    /// A local array larger than this process can get is an
    /// [`crate::Error::Memory`] (never an abort).
    pub fn zeros(grid: &Grid, m: usize, n: usize, mb: usize, nb: usize) -> Result<DistMatrix> {
        DistMatrix::shaped(grid, (m, n, mb, nb), None, "DistMatrix::zeros", |len| {
            crate::memory::zeroed(len, "DistMatrix::zeros", &format!("the local array of a {m}x{n} matrix"))
                .map(LocalStorage::from)
        })
    }

    /// Like [`DistMatrix::zeros`], but in `storage` (local; grown to the
    /// local length if shorter): what `storage` held is kept, only a grown
    /// tail is zeroed, and storage past the local array stays as room (for
    /// `pdgeqrf_ft`'s checksum columns, which then need no copy of A). For
    /// matrices whose memory a caller reuses or prepared ahead (a hot spare,
    /// see [`DistMatrix::local_len_bound`]).
    pub fn in_storage(grid: &Grid, m: usize, n: usize, mb: usize, nb: usize, storage: Vec<f64>) -> Result<DistMatrix> {
        DistMatrix::in_storage_from(grid, m, n, mb, nb, None, &mut storage.into())
    }

    /// [`DistMatrix::in_storage`] that takes the storage out of `slot` only
    /// when it succeeds (on an error `slot` keeps it), with local leading
    /// dimension `lld` (at least the local rows; `None`:
    /// [`crate::descriptor::storage_lld`]'s). Lent storage (see
    /// [`LocalStorage::lent`]) is taken as it is when long enough, and is
    /// an [`crate::Error::Storage`] otherwise.
    pub(crate) fn in_storage_from(
        grid: &Grid,
        m: usize,
        n: usize,
        mb: usize,
        nb: usize,
        lld: Option<usize>,
        slot: &mut LocalStorage,
    ) -> Result<DistMatrix> {
        DistMatrix::shaped(grid, (m, n, mb, nb), lld, "DistMatrix::in_storage", |len| {
            slot.grow_zeroed(len, "DistMatrix::in_storage", &format!("the local array of a {m}x{n} matrix"))?;
            Ok(std::mem::take(slot))
        })
    }

    /// The layout [`DistMatrix::zeros`] describes (with local leading
    /// dimension `lld` where given), with the local array of the length it
    /// needs made by `local`; bad sizes are reported as `routine`'s
    /// argument errors.
    fn shaped(
        grid: &Grid,
        (m, n, mb, nb): (usize, usize, usize, usize),
        lld: Option<usize>,
        routine: &str,
        local: impl FnOnce(usize) -> Result<LocalStorage>,
    ) -> Result<DistMatrix> {
        let (nprow, npcol) = (grid.nprow() as usize, grid.npcol() as usize);
        let (myrow, mycol) = (grid.myrow() as usize, grid.mycol() as usize);
        let desc = match lld {
            None => Descriptor::with_min_lld(m, n, mb, nb, 0, 0, 0, nprow, npcol, myrow).map(Descriptor::for_storage),
            Some(lld) => Descriptor::new(m, n, mb, nb, 0, 0, lld, 0, nprow, npcol, myrow),
        }
        .map_err(|e| descriptor_error(routine, e.index, None, &e))?;
        let len = desc.lld() * numroc(n, nb, mycol, 0, npcol);
        let data = local(len)?;
        Ok(DistMatrix { desc, nprow, npcol, myrow, mycol, data, len, lost: false })
    }

    /// Process `(myrow, mycol)`'s part of an `m`×`n` zero matrix on a
    /// `nprow`×`npcol` grid, without the grid (unit tests of local
    /// arithmetic on a distributed layout).
    #[cfg(test)]
    pub(crate) fn on_process(
        (m, n, mb, nb): (usize, usize, usize, usize),
        (nprow, npcol): (usize, usize),
        (myrow, mycol): (usize, usize),
    ) -> DistMatrix {
        let desc =
            Descriptor::with_min_lld(m, n, mb, nb, 0, 0, 0, nprow, npcol, myrow).expect("a valid shape").for_storage();
        let len = desc.lld() * numroc(n, nb, mycol, 0, npcol);
        DistMatrix { desc, nprow, npcol, myrow, mycol, data: vec![0.0; len].into(), len, lost: false }
    }

    /// The largest local array length any process of a `nprow`×`npcol`
    /// grid needs for an `m`×`n` matrix in `mb`×`nb` blocks (all global;
    /// process column 0 holds the most columns, and the largest leading
    /// dimension is taken over the process rows).
    pub fn local_len_bound(m: usize, n: usize, mb: usize, nb: usize, nprow: usize, npcol: usize) -> usize {
        if mb == 0 || nb == 0 || nprow == 0 || npcol == 0 {
            return 0;
        }
        largest_storage_lld(m, mb, nprow) * numroc(n, nb, 0, 0, npcol)
    }

    /// Storage for [`DistMatrix::in_storage`] large enough for any process
    /// of a `nprow`×`npcol` grid (see [`DistMatrix::local_len_bound`]), its
    /// pages touched now: what a hot spare prepares while it is parked for
    /// a plain matrix (for `pdgeqrf_ft`, `qr_ft::FtWorkspace::for_spare`
    /// adds the room for the checksum columns).
    pub fn spare_storage(m: usize, n: usize, mb: usize, nb: usize, nprow: usize, npcol: usize) -> Result<Vec<f64>> {
        touched(
            DistMatrix::local_len_bound(m, n, mb, nb, nprow, npcol),
            "DistMatrix::spare_storage",
            "a spare's matrix",
        )
    }

    /// Gives the storage back (for reuse): the local array and any room
    /// after it.
    pub(crate) fn into_local(self) -> LocalStorage {
        self.data
    }

    /// The storage, room included (see [`DistMatrix::in_storage`]).
    pub(crate) fn storage_mut(&mut self) -> &mut LocalStorage {
        &mut self.data
    }

    /// The storage (local), room included: ftla's own, or the program's
    /// array (see [`DistMatrix::from_local`]).
    pub fn storage(&self) -> &LocalStorage {
        &self.data
    }

    /// Grows the storage to at least `len` elements, the local array kept
    /// and the room past it zeroed (its pages touched now); lent storage
    /// does not grow ([`crate::Error::Storage`]).
    pub(crate) fn reserve_room(&mut self, len: usize, routine: &str, what: &str) -> Result<()> {
        self.data.grow_zeroed(len, routine, what)
    }

    /// An `m`×`n` matrix whose element (i, j) (0-based, global) is `f(i, j)`.
    pub fn from_fn(
        grid: &Grid,
        m: usize,
        n: usize,
        mb: usize,
        nb: usize,
        f: impl Fn(usize, usize) -> f64,
    ) -> Result<DistMatrix> {
        let mut a = DistMatrix::zeros(grid, m, n, mb, nb)?;
        let (lld, lr, lc) = (a.lld(), a.local_rows(), a.local_cols());
        for lj in 0..lc {
            let j = a.global_col(lj);
            for li in 0..lr {
                a.data[li + lj * lld] = f(a.global_row(li), j);
            }
        }
        Ok(a)
    }

    /// Wraps an existing local array laid out as `desc` says: a `Vec<f64>`
    /// (taken), or the program's array as [`LocalStorage::lent`] (worked in
    /// place, never copied). Elements of `data` past the local array are
    /// kept as room (see [`DistMatrix::in_storage`]);
    /// [`DistMatrix::local`] is the array.
    pub fn from_local(grid: &Grid, desc: Descriptor, data: impl Into<LocalStorage>) -> Result<DistMatrix> {
        let data = data.into();
        let (nprow, npcol) = (grid.nprow() as usize, grid.npcol() as usize);
        let (myrow, mycol) = (grid.myrow() as usize, grid.mycol() as usize);
        let need = desc.lld() * desc.local_cols(mycol, npcol);
        if data.len() < need {
            return Err(arg_error(
                "DistMatrix::from_local",
                2,
                0,
                "A",
                format!("local array has {} elements, the descriptor needs {need}", data.len()),
            ));
        }
        Ok(DistMatrix { desc, nprow, npcol, myrow, mycol, data, len: need, lost: false })
    }

    /// True when this process's part of the matrix was lost with a failed
    /// process (local): on a replacement process, a fault-tolerant routine
    /// (`pdgeqrf_ft`, `pdgetrf_ft`, `pdcg_ft`) that finds its call
    /// completed in the status log — it completed before this process
    /// replaced the failed one — fills in its replicated outputs (tau, the
    /// pivots) and marks its matrix output (A, X) lost, as the survivors
    /// hold their parts of the result and this process does not.
    ///
    /// # Fault tolerance
    /// Every routine refuses a matrix it reads but does not overwrite (the
    /// factors given to `lu::pdgetrs`, CG's A and B) when it is lost on
    /// any process: the same [`crate::Error::InputLost`] on every process,
    /// before computing anything. A matrix the routine overwrites with its
    /// results (a factorization's A, a solve's B, CG's X) is taken as the
    /// program's data for the call, and its mark is cleared when the call
    /// completes; a matrix built again has none.
    pub fn is_lost(&self) -> bool {
        self.lost
    }

    /// Marks this process's part lost or not (see [`DistMatrix::is_lost`]).
    pub(crate) fn set_lost(&mut self, lost: bool) {
        self.lost = lost;
    }

    /// The descriptor.
    pub fn desc(&self) -> &Descriptor {
        &self.desc
    }
    /// Global rows.
    pub fn m(&self) -> usize {
        self.desc.m()
    }
    /// Global columns.
    pub fn n(&self) -> usize {
        self.desc.n()
    }
    /// Row block size.
    pub fn mb(&self) -> usize {
        self.desc.mb()
    }
    /// Column block size.
    pub fn nb(&self) -> usize {
        self.desc.nb()
    }
    /// Local leading dimension.
    pub fn lld(&self) -> usize {
        self.desc.lld()
    }
    /// Rows stored on this process.
    pub fn local_rows(&self) -> usize {
        numroc(self.m(), self.mb(), self.myrow, self.desc.rsrc(), self.nprow)
    }
    /// Columns stored on this process.
    pub fn local_cols(&self) -> usize {
        numroc(self.n(), self.nb(), self.mycol, self.desc.csrc(), self.npcol)
    }
    /// The local array (column-major, leading dimension [`DistMatrix::lld`]).
    pub fn local(&self) -> &[f64] {
        &self.data[..self.len]
    }
    /// The local array, mutable.
    pub fn local_mut(&mut self) -> &mut [f64] {
        &mut self.data[..self.len]
    }
    /// Global row of local row `li`.
    pub fn global_row(&self, li: usize) -> usize {
        indxl2g(li, self.mb(), self.myrow, self.desc.rsrc(), self.nprow)
    }
    /// Global column of local column `lj`.
    pub fn global_col(&self, lj: usize) -> usize {
        indxl2g(lj, self.nb(), self.mycol, self.desc.csrc(), self.npcol)
    }
    /// Number of local rows whose global index is below `i` (the local
    /// start of the global rows `i..`).
    pub fn local_rows_before(&self, i: usize) -> usize {
        numroc(i.min(self.m()), self.mb(), self.myrow, self.desc.rsrc(), self.nprow)
    }
    /// Number of local columns whose global index is below `j`.
    pub fn local_cols_before(&self, j: usize) -> usize {
        numroc(j.min(self.n()), self.nb(), self.mycol, self.desc.csrc(), self.npcol)
    }
    /// Process row owning global row `i`.
    pub fn row_owner(&self, i: usize) -> usize {
        indxg2p(i, self.mb(), self.desc.rsrc(), self.nprow)
    }
    /// Process column owning global column `j`.
    pub fn col_owner(&self, j: usize) -> usize {
        indxg2p(j, self.nb(), self.desc.csrc(), self.npcol)
    }
    /// This process's (row, column) in the grid.
    pub fn coords(&self) -> (usize, usize) {
        (self.myrow, self.mycol)
    }
    /// Grid shape (P, Q).
    pub fn grid_shape(&self) -> (usize, usize) {
        (self.nprow, self.npcol)
    }

    /// Element (i, j) if this process stores it.
    pub fn get(&self, i: usize, j: usize) -> Option<f64> {
        if i >= self.m() || j >= self.n() || self.row_owner(i) != self.myrow || self.col_owner(j) != self.mycol {
            return None;
        }
        Some(self.data[self.local_rows_before(i) + self.local_cols_before(j) * self.lld()])
    }

    /// Collective: the whole matrix, column-major `m×n`, on grid rank `root`
    /// (`None` elsewhere). For tests and small I/O.
    pub fn gather(&self, grid: &Grid, root: i32) -> Result<Option<Vec<f64>>> {
        let (m, n) = (self.m(), self.n());
        // Each column of blocks is assembled by a sum over the grid: every
        // process contributes its elements, zeros elsewhere. Simple and
        // collective; meant for small matrices.
        let mut full = vec![0.0; m * n];
        for lj in 0..self.local_cols() {
            let j = self.global_col(lj);
            for li in 0..self.local_rows() {
                full[self.global_row(li) + j * m] = self.data[li + lj * self.lld()];
            }
        }
        grid.sum(Scope::All, &mut full, Some(root))?;
        Ok((grid.rank() == root).then_some(full))
    }

    /// Collective: distributes `full` (column-major `m×n`, significant on
    /// `root` only) into a new matrix with `mb`×`nb` blocks.
    pub fn scatter(
        grid: &Grid,
        root: i32,
        full: Option<&[f64]>,
        m: usize,
        n: usize,
        mb: usize,
        nb: usize,
    ) -> Result<DistMatrix> {
        let mut buf = match full {
            Some(f) if grid.rank() == root => {
                let ok = f.len() == m * n;
                crate::error::agree_on_arguments(
                    grid,
                    if ok {
                        Ok(())
                    } else {
                        Err(arg_error(
                            "DistMatrix::scatter",
                            3,
                            0,
                            "full",
                            format!("has {} elements, m·n = {}", f.len(), m * n),
                        ))
                    },
                )?;
                f.to_vec()
            }
            _ => {
                crate::error::agree_on_arguments(grid, Ok(()))?;
                vec![0.0; m * n]
            }
        };
        grid.broadcast(Scope::All, &mut buf, root)?;
        DistMatrix::from_fn(grid, m, n, mb, nb, |i, j| buf[i + j * m])
    }
}

/// A zeroed vector whose pages are all touched (a plain zeroed allocation
/// is mapped lazily and faults on first use); [`crate::Error::Memory`] if this
/// process cannot get it.
pub(crate) fn touched(len: usize, routine: &str, what: &str) -> Result<Vec<f64>> {
    let mut v = crate::memory::zeroed(len, routine, what)?;
    for i in (0..len).step_by(512) {
        // SAFETY: i < len; a volatile store cannot be elided, so the page is
        // really written.
        unsafe { std::ptr::write_volatile(v.as_mut_ptr().add(i), 0.0) };
    }
    Ok(v)
}

/// Copies the local submatrix rows `r0..r1`, columns `c0..c1` of a
/// column-major array with leading dimension `ld` into `out`
/// (column-major, leading dimension `r1 - r0`), replacing its contents.
pub(crate) fn pack(
    src: &[f64],
    ld: usize,
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
    out: &mut Vec<f64>,
) {
    out.clear();
    out.reserve(rows.len() * cols.len());
    for c in cols {
        out.extend_from_slice(&src[rows.start + c * ld..rows.end + c * ld]);
    }
}

/// Inverse of [`pack`]: writes `buf` (leading dimension `rows.len()`) into
/// rows `rows`, columns `cols` of `dst` (leading dimension `ld`).
pub(crate) fn unpack(
    buf: &[f64],
    dst: &mut [f64],
    ld: usize,
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
) {
    let h = rows.len();
    if h == 0 {
        return;
    }
    for (t, c) in cols.enumerate() {
        dst[rows.start + c * ld..rows.end + c * ld].copy_from_slice(&buf[t * h..(t + 1) * h]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_len_bound_is_the_largest_local_array() {
        for (m, n, mb, nb) in [(4096, 4096, 64, 64), (260, 200, 16, 16), (5, 300, 2, 7), (0, 10, 4, 4)] {
            for (p, q) in [(1, 1), (1, 2), (2, 1), (2, 3), (4, 4)] {
                let largest = (0..p)
                    .flat_map(|r| (0..q).map(move |c| (r, c)))
                    .map(|(r, c)| DistMatrix::on_process((m, n, mb, nb), (p, q), (r, c)).local().len())
                    .max()
                    .unwrap();
                assert_eq!(DistMatrix::local_len_bound(m, n, mb, nb, p, q), largest, "{m}x{n} {mb}x{nb} on {p}x{q}");
            }
        }
        assert_eq!(DistMatrix::local_len_bound(10, 10, 0, 2, 1, 1), 0);
    }

    #[test]
    fn local_arrays_whose_columns_would_be_4_kib_apart_are_padded_by_a_cache_line() {
        // 4096 rows on 2 process rows: 2048 local rows, a multiple of 512.
        let padded = DistMatrix::on_process((4096, 256, 64, 64), (2, 1), (1, 0));
        assert_eq!((padded.local_rows(), padded.lld()), (2048, 2056));
        assert_eq!(padded.local().len(), 2056 * 256);
        // 4064 rows: 2048 and 2016 local rows; only the first is padded.
        let rows: Vec<_> =
            (0..2).map(|r| DistMatrix::on_process((4064, 64, 64, 64), (2, 1), (r, 0))).map(|a| a.lld()).collect();
        assert_eq!(rows, [2056, 2016]);
        assert_eq!(crate::descriptor::storage_lld(0), 1);
    }

    #[test]
    fn pack_and_unpack_are_inverse() {
        // 4×3 column-major, ld 5 (one padding row).
        let src: Vec<f64> = (0..15).map(|x| x as f64).collect();
        let mut buf = Vec::new();
        pack(&src, 5, 1..3, 1..3, &mut buf);
        assert_eq!(buf, vec![6.0, 7.0, 11.0, 12.0]);
        let mut dst = vec![0.0; 15];
        unpack(&buf, &mut dst, 5, 1..3, 1..3);
        assert_eq!(dst[6], 6.0);
        assert_eq!(dst[12], 12.0);
        assert_eq!(dst.iter().filter(|&&x| x != 0.0).count(), 4);
    }
}
