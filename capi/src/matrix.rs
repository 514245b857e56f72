//! The caller's matrices: ScaLAPACK's argument checks on a matrix
//! (M, N, IA, JA, DESC), and its local array copied into and out of a
//! [`DistMatrix`].

use crate::solve_args::null_part;
use scalapack_ft::abft::{FtOptions, FtWorkspace};
use scalapack_ft::args::{
    arg_error, check_first_block_at_origin, check_square_blocks, chk1mat, descriptor_error, entry, MatrixPositions,
    Submatrix,
};
use scalapack_ft::descriptor::{Descriptor, DLEN};
use scalapack_ft::{memory, DistMatrix, Grid, Result};
use std::os::raw::c_int;

/// A matrix argument as the caller passed it.
pub(crate) struct MatrixArg {
    /// Its name in messages ("A", "B").
    pub name: &'static str,
    /// Rows and columns of the (leading) submatrix the routine works on.
    pub m: c_int,
    pub n: c_int,
    pub ia: c_int,
    pub ja: c_int,
    pub desc: *const c_int,
    /// The local array.
    pub data: *const f64,
    /// Where its arguments sit in the routine's argument list.
    pub at: MatrixPositions,
    /// The routine needs MB = NB.
    pub square_blocks: bool,
}

/// A checked matrix argument: its descriptor and the submatrix's size.
#[derive(Clone, Copy)]
pub(crate) struct CheckedMatrix {
    pub desc: Descriptor,
    pub m: usize,
    pub n: usize,
}

impl MatrixArg {
    /// ScaLAPACK's checks of a matrix argument on this process (local; the
    /// caller agrees on the verdict), those of `scalapack_ft::args`: the
    /// descriptor, its context the call's, `CHK1MAT` (M, N ≥ 0, IA = JA =
    /// 1, M ≤ M_A, N ≤ N_A), square blocks where needed, the first block
    /// on process (0, 0), and a local array where this process holds a
    /// part.
    pub fn check(&self, routine: &str, grid: &Grid, ictxt: c_int) -> Result<CheckedMatrix> {
        let at = self.at;
        let name = self.name;
        if self.desc.is_null() {
            return Err(arg_error(routine, at.desc, 0, &format!("DESC{name}"), "is a null pointer"));
        }
        let mut raw = [0; DLEN];
        // SAFETY: a descriptor is 9 ints (null checked).
        unsafe { std::ptr::copy_nonoverlapping(self.desc, raw.as_mut_ptr(), DLEN) };
        let (nprow, npcol, myrow) = (grid.nprow() as usize, grid.npcol() as usize, grid.myrow() as usize);
        let desc = Descriptor::from_array(raw, nprow, npcol, myrow)
            .map_err(|e| descriptor_error(routine, at.desc, Some(name), &e))?;
        if desc.ctxt() != ictxt {
            return Err(arg_error(
                routine,
                at.desc,
                entry::CTXT,
                &format!("CTXT_{name}"),
                format!("is {}, another grid than the call's ({ictxt})", desc.ctxt()),
            ));
        }
        let sub = Submatrix { m: self.m, n: self.n, ia: self.ia, ja: self.ja };
        let (m, n) = chk1mat(routine, name, &at, sub, &desc)?;
        if self.square_blocks {
            check_square_blocks(routine, at.desc, name, &desc)?;
        }
        check_first_block_at_origin(routine, at.desc, name, &desc)?;
        let checked = CheckedMatrix { desc, m, n };
        let (rows, cols) = checked.local_shape(grid);
        if rows > 0 && cols > 0 && self.data.is_null() {
            return Err(null_part(routine, at.data, name));
        }
        Ok(checked)
    }
}

impl CheckedMatrix {
    /// Rows and columns of the submatrix's local array on this process.
    pub fn local_shape(&self, grid: &Grid) -> (usize, usize) {
        let d = &self.desc;
        let r = blacs_ft::index::numroc(self.m, d.mb(), grid.myrow() as usize, 0, grid.nprow() as usize);
        let c = blacs_ft::index::numroc(self.n, d.nb(), grid.mycol() as usize, 0, grid.npcol() as usize);
        (r, c)
    }

    /// The submatrix as a [`DistMatrix`] of its own (its local array
    /// copied out of the caller's, whose leading dimension is LLD). With
    /// `room`, its storage is reserved large enough for a fault-tolerant
    /// factorization's checksum columns after the array (see
    /// `FtWorkspace::in_place`), so that adding them later moves nothing.
    pub fn import(&self, grid: &Grid, routine: &str, data: *const f64, room: bool) -> Result<DistMatrix> {
        let d = &self.desc;
        let (nprow, npcol, myrow) = (grid.nprow() as usize, grid.npcol() as usize, grid.myrow() as usize);
        let sub = Descriptor::with_min_lld(self.m, self.n, d.mb(), d.nb(), 0, 0, d.ctxt(), nprow, npcol, myrow)
            .map_err(|e| descriptor_error(routine, 0, None, &e))?
            .for_storage();
        let (rows, cols) = self.local_shape(grid);
        let lld = sub.lld();
        let len = lld * cols;
        // (In the checksum layout the factorization will use.)
        let extended = if room {
            FtWorkspace::bytes_per_process(self.m, self.n, d.nb(), nprow, npcol, FtOptions::from_env()?.layout)
        } else {
            None
        }
        .map_or(0, |b| (b / 8) as usize);
        let what = "a copy of a matrix argument";
        let bytes = (len as u64).saturating_mul(8);
        if memory::available_bytes().is_some_and(|a| bytes > a) {
            return Err(memory::memory_error(routine, what, bytes));
        }
        let mut local: Vec<f64> = Vec::new();
        local.try_reserve_exact(len.max(extended)).map_err(|_| memory::memory_error(routine, what, bytes))?;
        if cols > 0 {
            // SAFETY: the caller's local array holds LLD × LOCc(N_A) doubles,
            // which covers the submatrix's local part.
            let src = (rows > 0).then(|| unsafe { std::slice::from_raw_parts(data, (cols - 1) * d.lld() + rows) });
            for j in 0..cols {
                // (Written once: no zeroing pass before the copy.)
                if let Some(src) = src {
                    local.extend_from_slice(&src[j * d.lld()..j * d.lld() + rows]);
                }
                local.resize((j + 1) * lld, 0.0);
            }
        }
        DistMatrix::from_local(grid, sub, local)
    }

    /// Copies `a`'s local array back into the caller's.
    pub fn export(&self, a: &DistMatrix, data: *mut f64) {
        self.export_part(a, a.local_rows(), a.local_cols(), data);
    }

    /// Copies the leading local part of `stored` that holds this
    /// submatrix (for protected factors: the extended matrix, whose
    /// checksum columns come after the factors) into the caller's array.
    pub fn export_leading(&self, grid: &Grid, stored: &DistMatrix, data: *mut f64) {
        let (rows, cols) = self.local_shape(grid);
        self.export_part(stored, rows, cols, data);
    }

    fn export_part(&self, a: &DistMatrix, rows: usize, cols: usize, data: *mut f64) {
        if rows == 0 || cols == 0 {
            return;
        }
        let ld = self.desc.lld();
        // SAFETY: as in `import`; the caller's array is writable.
        let dst = unsafe { std::slice::from_raw_parts_mut(data, (cols - 1) * ld + rows) };
        let (src, lld) = (a.local(), a.lld());
        for j in 0..cols {
            dst[j * ld..j * ld + rows].copy_from_slice(&src[j * lld..j * lld + rows]);
        }
    }

    /// Local: whether the caller's array holds, bit for bit, the leading
    /// local part of `stored` (see [`CheckedMatrix::export_leading`]): one pass
    /// over the local array.
    pub fn holds_leading(&self, grid: &Grid, stored: &DistMatrix, data: *const f64) -> bool {
        let (rows, cols) = self.local_shape(grid);
        if rows == 0 || cols == 0 {
            return true;
        }
        let ld = self.desc.lld();
        // SAFETY: as in `import`.
        let given = unsafe { std::slice::from_raw_parts(data, (cols - 1) * ld + rows) };
        let (src, lld) = (stored.local(), stored.lld());
        (0..cols).all(|j| {
            let (g, s) = (&given[j * ld..j * ld + rows], &src[j * lld..j * lld + rows]);
            g.iter().zip(s).all(|(x, y)| x.to_bits() == y.to_bits())
        })
    }
}
