//! ndarray at the edge of the library: a [`DistMatrix`] scattered from an
//! [`Array2`] and gathered into one, a process's local array as a view,
//! and `.npy` files read into and written from arrays. Inside, the library
//! keeps ScaLAPACK's column-major local storage; these only convert at the
//! boundary, so an application can hand over and take back its data in
//! the type it already uses.

use crate::error::{agree_on_arguments, Error, Result};
use crate::io::{read_npy, write_npy, IoError};
use crate::DistMatrix;
use blacs_ft::{Grid, Scope};
use ndarray::{Array2, ArrayView2, ArrayViewMut2, ShapeBuilder};
use std::path::Path;

impl DistMatrix {
    /// Collective: distributes `a` (significant on grid rank `root` only;
    /// any memory order) into a new matrix with `mb`×`nb` blocks. The other
    /// ranks pass `None` and learn the shape from `root`.
    pub fn from_array(
        grid: &Grid,
        root: i32,
        a: Option<ArrayView2<'_, f64>>,
        mb: usize,
        nb: usize,
    ) -> Result<DistMatrix> {
        let mine = a.filter(|_| grid.rank() == root);
        let mut shape = [mine.as_ref().map_or(0, |a| a.nrows()) as i64, mine.as_ref().map_or(0, |a| a.ncols()) as i64];
        let missing = grid.rank() == root && mine.is_none();
        agree_on_arguments(
            grid,
            if missing {
                Err(Error::Argument {
                    routine: "DistMatrix::from_array".into(),
                    position: 3,
                    entry: 0,
                    name: "a".into(),
                    reason: format!("grid rank {root} (the root) has no array"),
                })
            } else {
                Ok(())
            },
        )?;
        grid.broadcast(Scope::All, &mut shape, root)?;
        let (m, n) = (shape[0] as usize, shape[1] as usize);
        // Column-major, as the scatter takes it: the columns of `a`, in order.
        let full: Option<Vec<f64>> = mine.map(|a| a.t().iter().copied().collect());
        DistMatrix::scatter(grid, root, full.as_deref(), m, n, mb, nb)
    }

    /// Collective: the whole matrix as an [`Array2`] on grid rank `root`
    /// (`None` elsewhere). For tests and small I/O, like
    /// [`DistMatrix::gather`].
    pub fn to_array(&self, grid: &Grid, root: i32) -> Result<Option<Array2<f64>>> {
        let (m, n) = (self.m(), self.n());
        Ok(self.gather(grid, root)?.map(|full| {
            Array2::from_shape_vec((m, n).f(), full).expect("gather returns m·n values in column-major order")
        }))
    }

    /// This process's local array (local rows × local columns) as a view
    /// of its storage: column-major, the leading dimension as its column
    /// stride.
    pub fn local_view(&self) -> ArrayView2<'_, f64> {
        let (lr, lc, lld) = (self.local_rows(), self.local_cols(), self.lld().max(1));
        ArrayView2::from_shape((lr, lc).strides((1, lld)), self.local())
            .expect("the local array holds lld·(lc−1)+lr values")
    }

    /// [`DistMatrix::local_view`], mutable.
    pub fn local_view_mut(&mut self) -> ArrayViewMut2<'_, f64> {
        let (lr, lc, lld) = (self.local_rows(), self.local_cols(), self.lld().max(1));
        ArrayViewMut2::from_shape((lr, lc).strides((1, lld)), self.local_mut())
            .expect("the local array holds lld·(lc−1)+lr values")
    }
}

/// Reads a whole 2-D `<f8` `.npy` file (C or Fortran order) into an array.
pub fn read_npy_array(path: impl AsRef<Path>) -> std::result::Result<Array2<f64>, IoError> {
    let d = read_npy(path)?;
    Array2::from_shape_vec((d.rows, d.cols).f(), d.data)
        .map_err(|e| IoError::InvalidLayout(format!("a {}x{} array: {e}", d.rows, d.cols)))
}

/// Writes an array (any memory order) as a Fortran-order `<f8` `.npy`
/// file.
pub fn write_npy_array(path: impl AsRef<Path>, a: ArrayView2<'_, f64>) -> std::result::Result<(), IoError> {
    let column_major: Vec<f64> = a.t().iter().copied().collect();
    write_npy(path, a.nrows(), a.ncols(), &column_major)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn npy_files_round_trip_arrays_in_either_order() {
        let dir = std::env::temp_dir();
        let c_order = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let f_order = Array2::from_shape_vec((2, 3).f(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]).unwrap();
        assert_eq!(f_order, c_order);
        assert!(!f_order.is_standard_layout());
        for (k, a) in [c_order.view(), f_order.view()].into_iter().enumerate() {
            let path = dir.join(format!("ftla-array-{}-{k}.npy", std::process::id()));
            write_npy_array(&path, a).unwrap();
            let back = read_npy_array(&path).unwrap();
            let _ = std::fs::remove_file(&path);
            assert_eq!(back, c_order);
        }
    }
}
