//! `pdgetrs`: solves with the LU factors of [`super::pdgetrf`], by blocked
//! distributed triangular solves (one block row of the right-hand sides at
//! a time).

use super::swap::interchange;
use crate::args::pdgetrs::{A, DESCA, DESCB, IPIV};
use crate::args::{arg_error, check_grid, check_square_blocks, entry};
use crate::blas::{self, Diag, Side, Trans, Uplo};
use crate::error::{agree_on_arguments, check_not_lost, Result};
use crate::matrix::{pack, DistMatrix};
use blacs_ft::{Grid, Scope};

/// Which system [`pdgetrs`] solves (ScaLAPACK's `TRANS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transpose {
    /// `A·X = B` (`TRANS = 'N'`).
    NoTrans,
    /// `Aᵀ·X = B` (`TRANS = 'T'`, the same as `'C'` for real matrices).
    Trans,
}

const ROUTINE: &str = "pdgetrs";

/// Collective: solves `A·X = B` or `Aᵀ·X = B` with the factorization
/// `P·A = L·U` computed by [`super::pdgetrf`] (ScaLAPACK `PDGETRS` with
/// `IA = JA = IB = JB = 1`, `N = N_A`, `NRHS = N_B`).
///
/// * `grid`: the process grid;
/// * `trans` (global): which system;
/// * `a` (local input): the factors of an N×N matrix (square, `MB_A = NB_A`);
/// * `ipiv` (global input): the pivots from `pdgetrf`, length N;
/// * `b` (local input/output): on entry the N×NRHS right-hand sides, on
///   exit the solution X. Its rows must be distributed like A's
///   (`MB_B = NB_A`, same first process row); any `NB_B`.
///
/// # Errors
/// Agreed [`crate::Error::Argument`]s with ScaLAPACK's positions: A not
/// square (7, `M_`), `MB_A ≠ NB_A` (7, `NB_`; INFO = -706), `ipiv` of the
/// wrong length or out of range (8), B's row count ≠ N (12, `M_`;
/// INFO = -1203), `MB_B ≠ NB_A` (12, `NB_`; -1206 as ScaLAPACK), B's
/// first process row ≠ A's (12, `RSRC_`), either matrix from another grid.
/// A singular U is not detected here (as in ScaLAPACK): check the
/// result of `pdgetrf`. [`crate::Error::InputLost`] when A is lost on some
/// process (factors a replacement did not receive, see
/// [`DistMatrix::is_lost`]; nothing computed).
pub fn pdgetrs(grid: &Grid, trans: Transpose, a: &DistMatrix, ipiv: &[i64], b: &mut DistMatrix) -> Result<()> {
    agree_on_arguments(grid, check_args(grid, a, ipiv, b))?;
    let n = a.n();
    if n == 0 || b.n() == 0 {
        return Ok(());
    }
    let swaps: Vec<(usize, usize)> = ipiv.iter().enumerate().map(|(i, &p)| (i, p as usize)).collect();
    let all_cols = 0..b.local_cols();
    match trans {
        Transpose::NoTrans => {
            interchange(grid, b, &swaps, all_cols.clone())?;
            forward_l(grid, a, b)?;
            backward_u(grid, a, b)?;
        }
        Transpose::Trans => {
            forward_ut(grid, a, b)?;
            backward_lt(grid, a, b)?;
            let reversed: Vec<(usize, usize)> = swaps.into_iter().rev().collect();
            interchange(grid, b, &reversed, all_cols)?;
        }
    }
    b.set_lost(false);
    Ok(())
}

/// The local argument checks of [`pdgetrs`].
fn check_args(grid: &Grid, a: &DistMatrix, ipiv: &[i64], b: &DistMatrix) -> Result<()> {
    check_grid(grid, a, ROUTINE, DESCA, "A")?;
    check_grid(grid, b, ROUTINE, DESCB, "B")?;
    let n = a.n();
    if a.m() != n {
        return Err(arg_error(
            ROUTINE,
            DESCA,
            entry::M,
            "M_A",
            format!("A must be square: M_A = {}, N_A = {n}", a.m()),
        ));
    }
    check_square_blocks(ROUTINE, DESCA, "A", a.desc())?;
    if ipiv.len() != n {
        return Err(arg_error(ROUTINE, IPIV, 0, "IPIV", format!("has {} entries, N = {n}", ipiv.len())));
    }
    if let Some((i, &p)) = ipiv.iter().enumerate().find(|&(i, &p)| p < i as i64 || p >= n as i64) {
        return Err(arg_error(ROUTINE, IPIV, 0, "IPIV", format!("IPIV[{i}] = {p} is outside {i}..{n}")));
    }
    if b.m() != n {
        return Err(arg_error(
            ROUTINE,
            DESCB,
            entry::M,
            "M_B",
            format!("B must have N = {n} rows (the order of A), got M_B = {}", b.m()),
        ));
    }
    if b.mb() != a.nb() {
        return Err(arg_error(
            ROUTINE,
            DESCB,
            entry::NB,
            "MB_B",
            format!("MB_B must equal NB_A, got MB_B = {}, NB_A = {}", b.mb(), a.nb()),
        ));
    }
    if b.desc().rsrc() != a.desc().rsrc() {
        return Err(arg_error(
            ROUTINE,
            DESCB,
            entry::RSRC,
            "RSRC_B",
            format!("B's rows must start on A's process row {}, got {}", a.desc().rsrc(), b.desc().rsrc()),
        ));
    }
    // (B is overwritten with the solution: the program fills it.)
    check_not_lost(grid, ROUTINE, A, "A", a)
}

/// Block `k` of the order-`n` factor: first index and size.
fn blocks(n: usize, nb: usize) -> impl DoubleEndedIterator<Item = (usize, usize)> {
    (0..n.div_ceil(nb)).map(move |k| (k * nb, nb.min(n - k * nb)))
}

/// Broadcasts, along each process row, the local rows `rows` of A's block
/// column starting at global column `j0` (width `jb`) from the process
/// column that owns it.
fn column_panel(grid: &Grid, a: &DistMatrix, j0: usize, jb: usize, rows: std::ops::Range<usize>) -> Result<Vec<f64>> {
    let pc = a.col_owner(j0);
    let mut buf = Vec::new();
    if a.coords().1 == pc {
        let lc0 = a.local_cols_before(j0);
        pack(a.local(), a.lld(), rows, lc0..lc0 + jb, &mut buf);
    } else {
        buf.resize(rows.len() * jb, 0.0);
    }
    if a.grid_shape().1 > 1 && !buf.is_empty() {
        grid.broadcast(Scope::Row, &mut buf, pc as i32)?;
    }
    Ok(buf)
}

/// Global block row `j0..j0+jb` of A, columns `c0..c1`, replicated on every
/// process (`jb × (c1-c0)`, leading dimension `jb`).
fn row_panel(grid: &Grid, a: &DistMatrix, j0: usize, jb: usize, c0: usize, c1: usize) -> Result<Vec<f64>> {
    let pr = a.row_owner(j0);
    let mut buf = vec![0.0; jb * (c1 - c0)];
    if buf.is_empty() {
        return Ok(buf);
    }
    let (myrow, _) = a.coords();
    if myrow == pr {
        let (lr0, lld) = (a.local_rows_before(j0), a.lld());
        for lj in a.local_cols_before(c0)..a.local_cols_before(c1) {
            let g = a.global_col(lj);
            buf[(g - c0) * jb..(g - c0 + 1) * jb].copy_from_slice(&a.local()[lr0 + lj * lld..lr0 + jb + lj * lld]);
        }
        if a.grid_shape().1 > 1 {
            grid.sum(Scope::Row, &mut buf, None)?;
        }
    }
    if a.grid_shape().0 > 1 {
        grid.broadcast(Scope::Column, &mut buf, pr as i32)?;
    }
    Ok(buf)
}

/// The block row `lr0..lr0+jb` of B's local columns after the diagonal
/// process row solved it, on every process of the column.
fn share_block_row(grid: &Grid, b: &DistMatrix, pr: usize, lr0: usize, jb: usize) -> Result<Vec<f64>> {
    let mut y = Vec::new();
    let ncols = b.local_cols();
    if b.coords().0 == pr {
        pack(b.local(), b.lld(), lr0..lr0 + jb, 0..ncols, &mut y);
    } else {
        y.resize(jb * ncols, 0.0);
    }
    if b.grid_shape().0 > 1 && !y.is_empty() {
        grid.broadcast(Scope::Column, &mut y, pr as i32)?;
    }
    Ok(y)
}

/// B := L⁻¹·B (L unit lower triangular).
fn forward_l(grid: &Grid, a: &DistMatrix, b: &mut DistMatrix) -> Result<()> {
    let (ncols, lldb, lr) = (b.local_cols(), b.lld(), b.local_rows());
    for (j0, jb) in blocks(a.n(), a.nb()) {
        let pr = a.row_owner(j0);
        let lr0 = a.local_rows_before(j0);
        let lrb = a.local_rows_before(j0 + jb);
        let l = column_panel(grid, a, j0, jb, lr0..lr)?;
        let lw = lr - lr0;
        if b.coords().0 == pr && ncols > 0 {
            let bl = b.local_mut();
            blas::dtrsm(Side::Left, Uplo::Lower, Trans::No, Diag::Unit, jb, ncols, 1.0, &l, lw, &mut bl[lr0..], lldb);
        }
        let y = share_block_row(grid, b, pr, lr0, jb)?;
        if lr > lrb && ncols > 0 {
            let bl = b.local_mut();
            blas::dgemm(
                Trans::No,
                Trans::No,
                lr - lrb,
                ncols,
                jb,
                -1.0,
                &l[lrb - lr0..],
                lw,
                &y,
                jb,
                1.0,
                &mut bl[lrb..],
                lldb,
            );
        }
    }
    Ok(())
}

/// B := U⁻¹·B (U upper triangular, non-unit).
fn backward_u(grid: &Grid, a: &DistMatrix, b: &mut DistMatrix) -> Result<()> {
    let (ncols, lldb) = (b.local_cols(), b.lld());
    for (j0, jb) in blocks(a.n(), a.nb()).rev() {
        let pr = a.row_owner(j0);
        let lr0 = a.local_rows_before(j0);
        let lre = a.local_rows_before(j0 + jb);
        let u = column_panel(grid, a, j0, jb, 0..lre)?;
        if b.coords().0 == pr && ncols > 0 {
            let bl = b.local_mut();
            blas::dtrsm(
                Side::Left,
                Uplo::Upper,
                Trans::No,
                Diag::NonUnit,
                jb,
                ncols,
                1.0,
                &u[lr0..],
                lre,
                &mut bl[lr0..],
                lldb,
            );
        }
        let x = share_block_row(grid, b, pr, lr0, jb)?;
        if lr0 > 0 && ncols > 0 {
            let bl = b.local_mut();
            blas::dgemm(Trans::No, Trans::No, lr0, ncols, jb, -1.0, &u, lre, &x, jb, 1.0, bl, lldb);
        }
    }
    Ok(())
}

/// Columns of the replicated row panel `r` (`jb × …`, first global column
/// `c0`) for B's local rows `rows`, as a `jb × rows.len()` matrix.
fn select_columns(r: &[f64], jb: usize, c0: usize, b: &DistMatrix, rows: std::ops::Range<usize>) -> Vec<f64> {
    let mut out = Vec::with_capacity(jb * rows.len());
    for li in rows {
        let g = b.global_row(li) - c0;
        out.extend_from_slice(&r[g * jb..(g + 1) * jb]);
    }
    out
}

/// B := U⁻ᵀ·B.
fn forward_ut(grid: &Grid, a: &DistMatrix, b: &mut DistMatrix) -> Result<()> {
    let (n, ncols, lldb, lr) = (a.n(), b.local_cols(), b.lld(), b.local_rows());
    for (j0, jb) in blocks(n, a.nb()) {
        let pr = a.row_owner(j0);
        let lr0 = a.local_rows_before(j0);
        let lrb = a.local_rows_before(j0 + jb);
        let r = row_panel(grid, a, j0, jb, j0, n)?;
        if b.coords().0 == pr && ncols > 0 {
            let bl = b.local_mut();
            blas::dtrsm(
                Side::Left,
                Uplo::Upper,
                Trans::Yes,
                Diag::NonUnit,
                jb,
                ncols,
                1.0,
                &r,
                jb,
                &mut bl[lr0..],
                lldb,
            );
        }
        let y = share_block_row(grid, b, pr, lr0, jb)?;
        if lr > lrb && ncols > 0 {
            let rt = select_columns(&r, jb, j0, b, lrb..lr);
            let bl = b.local_mut();
            blas::dgemm(Trans::Yes, Trans::No, lr - lrb, ncols, jb, -1.0, &rt, jb, &y, jb, 1.0, &mut bl[lrb..], lldb);
        }
    }
    Ok(())
}

/// B := L⁻ᵀ·B (L unit lower triangular).
fn backward_lt(grid: &Grid, a: &DistMatrix, b: &mut DistMatrix) -> Result<()> {
    let (ncols, lldb) = (b.local_cols(), b.lld());
    for (j0, jb) in blocks(a.n(), a.nb()).rev() {
        let pr = a.row_owner(j0);
        let lr0 = a.local_rows_before(j0);
        let r = row_panel(grid, a, j0, jb, 0, j0 + jb)?;
        if b.coords().0 == pr && ncols > 0 {
            let bl = b.local_mut();
            blas::dtrsm(
                Side::Left,
                Uplo::Lower,
                Trans::Yes,
                Diag::Unit,
                jb,
                ncols,
                1.0,
                &r[j0 * jb..],
                jb,
                &mut bl[lr0..],
                lldb,
            );
        }
        let z = share_block_row(grid, b, pr, lr0, jb)?;
        if lr0 > 0 && ncols > 0 {
            let rt = select_columns(&r, jb, 0, b, 0..lr0);
            let bl = b.local_mut();
            blas::dgemm(Trans::Yes, Trans::No, lr0, ncols, jb, -1.0, &rt, jb, &z, jb, 1.0, bl, lldb);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_the_order_once() {
        let v: Vec<_> = blocks(10, 4).collect();
        assert_eq!(v, vec![(0, 4), (4, 4), (8, 2)]);
        assert_eq!(blocks(0, 4).count(), 0);
        let r: Vec<_> = blocks(8, 4).rev().collect();
        assert_eq!(r, vec![(4, 4), (0, 4)]);
    }
}
