//! Reading and writing distributed matrices from and to files (.npy,
//! MatrixMarket array), with errors agreed on by every rank.

use crate::descriptor::Descriptor;
use crate::error::Result;
use crate::io::{self, Layout};
use crate::matrix::DistMatrix;
use blacs_ft::Grid;
use std::path::Path;

fn is_mtx(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("mtx"))
}

fn layout(grid: &Grid, m: usize, n: usize, nb: usize) -> Layout {
    Layout::new(
        m,
        n,
        nb,
        nb,
        grid.myrow() as usize,
        grid.mycol() as usize,
        grid.nprow() as usize,
        grid.npcol() as usize,
    )
}

/// Collective: reads the matrix in `path` (`.npy` with dtype `<f8`, C or
/// Fortran order, read with positioned reads of each rank's own blocks; or
/// `.mtx`, MatrixMarket `array real general`) into `nb`×`nb` blocks.
///
/// # Errors
/// A missing, malformed, truncated or mis-sized file is an error on every
/// rank (the message of the lowest rank that saw it), never a panic.
pub fn read_matrix(grid: &Grid, path: &Path, nb: usize) -> Result<DistMatrix> {
    let shape = if is_mtx(path) {
        io::read_mtx(path).map(|d| (d.rows, d.cols, Some(d)))
    } else {
        io::read_npy_header(path).map(|h| (h.rows, h.cols, None))
    };
    let (m, n, dense) = grid.agree_ok(shape.map_err(|e| e.to_string()))?;
    // The shape is the same everywhere now; read the local pieces.
    Ok(grid.agree_ok(local_piece(grid, path, m, n, nb, dense.as_ref()))?)
}

/// Not collective: [`read_matrix`] on this process alone (its own blocks
/// only), for a process that must not wait for the others — one joining a
/// call the others are already in. An error is this process's alone.
pub fn read_matrix_local(grid: &Grid, path: &Path, nb: usize) -> std::result::Result<DistMatrix, String> {
    if is_mtx(path) {
        let d = io::read_mtx(path).map_err(|e| e.to_string())?;
        return local_piece(grid, path, d.rows, d.cols, nb, Some(&d));
    }
    let h = io::read_npy_header(path).map_err(|e| e.to_string())?;
    local_piece(grid, path, h.rows, h.cols, nb, None)
}

/// This process's blocks of the `m`×`n` matrix in `path` (`dense`: the
/// whole of a `.mtx` file, already read).
fn local_piece(
    grid: &Grid,
    path: &Path,
    m: usize,
    n: usize,
    nb: usize,
    dense: Option<&io::Dense>,
) -> std::result::Result<DistMatrix, String> {
    let local = match dense {
        Some(d) => Ok(DistMatrix::from_fn(grid, m, n, nb, nb, |i, j| d.data[i + j * m])),
        None => io::read_npy_local(path, &layout(grid, m, n, nb)).map_err(|e| e.to_string()).map(|(data, lld)| {
            // (In the leading dimension ftla gives its own arrays, so that a
            // fault-tolerant call works in this storage.)
            let (data, lld) = with_storage_lld(data, lld, layout(grid, m, n, nb).local_rows());
            Descriptor::new(
                m,
                n,
                nb,
                nb,
                0,
                0,
                lld,
                0,
                grid.nprow() as usize,
                grid.npcol() as usize,
                grid.myrow() as usize,
            )
            .map_err(|e| crate::args::descriptor_error("read_matrix", 3, None, &e))
            .and_then(|desc| DistMatrix::from_local(grid, desc, data))
        }),
    };
    local.map_err(|e| e.to_string()).and_then(|r| r.map_err(|e| e.to_string()))
}

/// Collective: writes `a` to `path` as a Fortran-order `.npy` (each rank
/// writes its own blocks at their offsets), or as MatrixMarket when the
/// name ends in `.mtx` (gathered to rank 0 first: for small matrices).
pub fn write_matrix(grid: &Grid, a: &DistMatrix, path: &Path) -> Result<()> {
    write_shaped(grid, a, path, false)
}

/// Collective: [`write_matrix`] for the columns of a solution or
/// right-hand sides: an N×1 matrix goes to a `.npy` as a 1-D array of
/// length N (NumPy's shape for a vector); wider ones, and `.mtx` files, as
/// [`write_matrix`] writes them.
pub fn write_columns(grid: &Grid, a: &DistMatrix, path: &Path) -> Result<()> {
    write_shaped(grid, a, path, a.n() == 1)
}

/// [`write_matrix`], a `.npy` file 1-D when `vector`.
fn write_shaped(grid: &Grid, a: &DistMatrix, path: &Path, vector: bool) -> Result<()> {
    if is_mtx(path) {
        let full = a.gather(grid, 0)?;
        let r = match full {
            Some(f) => io::write_mtx(path, a.m(), a.n(), &f).map_err(|e| e.to_string()),
            None => Ok(()),
        };
        return Ok(grid.agree_ok(r)?);
    }
    let created = if grid.rank() == 0 {
        let header = if vector { io::create_npy_vector(path, a.m()) } else { io::create_npy(path, a.m(), a.n(), true) };
        header.map(|_| ()).map_err(|e| e.to_string())
    } else {
        Ok(())
    };
    grid.agree_ok(created)?;
    let l = layout(grid, a.m(), a.n(), a.nb());
    let w = io::write_npy_local(path, &l, a.local(), a.lld()).map_err(|e| e.to_string());
    Ok(grid.agree_ok(w)?)
}

/// Writes a replicated vector (tau, pivots) from rank 0; agreed.
pub fn write_vector(grid: &Grid, path: &Path, v: VectorData<'_>) -> Result<()> {
    let r = if grid.rank() == 0 {
        match v {
            VectorData::F64(x) => io::write_npy_vector_f64(path, x),
            VectorData::I64(x) => io::write_npy_vector_i64(path, x),
        }
        .map_err(|e| e.to_string())
    } else {
        Ok(())
    };
    Ok(grid.agree_ok(r)?)
}

/// A vector to write with [`write_vector`].
pub enum VectorData<'a> {
    F64(&'a [f64]),
    I64(&'a [i64]),
}

/// `data` (leading dimension `lld`, `lr` rows a column) laid out again with
/// [`crate::descriptor::storage_lld`]'s leading dimension, where that
/// differs: in place, from the last column (the padded columns are
/// longer), so that no second copy of the local array is held.
fn with_storage_lld(mut data: Vec<f64>, lld: usize, lr: usize) -> (Vec<f64>, usize) {
    let to = crate::descriptor::storage_lld(lr);
    if to <= lld || lr == 0 {
        return (data, lld);
    }
    let cols = data.len() / lld;
    data.resize(to * cols, 0.0);
    for j in (0..cols).rev() {
        data.copy_within(j * lld..j * lld + lr, j * to);
        data[j * to + lr..(j + 1) * to].fill(0.0);
    }
    (data, to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_array_read_with_the_minimal_leading_dimension_is_padded_in_place() {
        // 512 rows a column, 3 columns: padded to 520; each entry keeps its
        // (row, column), the padding rows are zero.
        let (lr, cols) = (512, 3);
        let data: Vec<f64> = (0..lr * cols).map(|k| (k % lr + 1000 * (k / lr)) as f64).collect();
        let (out, ld) = with_storage_lld(data, lr, lr);
        assert_eq!((ld, out.len()), (520, 520 * cols));
        for j in 0..cols {
            for i in 0..lr {
                assert_eq!(out[i + j * ld], (i + 1000 * j) as f64);
            }
            assert!(out[j * ld + lr..(j + 1) * ld].iter().all(|&x| x == 0.0));
        }
        // Unpadded row counts are left as they are.
        let (same, ld) = with_storage_lld(vec![1.0; 6], 3, 3);
        assert_eq!((same, ld), (vec![1.0; 6], 3));
    }
}
