//! `pdgetrs`: solves with the LU factors of [`super::pdgetrf`], by blocked
//! distributed triangular solves (one block row of the right-hand sides at
//! a time).

use super::swap::exchange_rows;
use crate::args::pdgetrs::{A, DESCA, DESCB, IPIV};
use crate::args::{arg_error, check_grid, check_rhs_rows, check_square_blocks, entry};
use crate::blas::{self, Diag, Side, Trans, Uplo};
use crate::error::{agree_on_arguments, check_not_lost, Result};
use crate::matrix::{pack, unpack, DistMatrix};
use blacs_ft::{Grid, Scope};
use std::ops::Range;

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
    agree_on_arguments(grid, check_args(ROUTINE, grid, a, a.n(), ipiv, b))?;
    let n = a.n();
    if n == 0 || b.n() == 0 {
        return Ok(());
    }
    // Each step communicates, then commits at once.
    let whole = 0..b.local_cols();
    let all_cols = std::slice::from_ref(&whole);
    let swap = |b: &mut DistMatrix| -> Result<()> {
        exchange_rows(grid, b, &pivot_swaps(ipiv, trans), all_cols.to_vec()).map(|x| x.apply(b))
    };
    if trans == Transpose::NoTrans {
        swap(b)?;
    }
    for sweep in Sweep::of(trans) {
        for i in 0..n.div_ceil(a.nb()) {
            let panel = factor_panel(grid, sweep, a, n, sweep.block(n, a.nb(), i))?;
            panel.solve(grid, a, b, all_cols)?.commit(b);
        }
    }
    if trans == Transpose::Trans {
        swap(b)?;
    }
    b.set_lost(false);
    Ok(())
}

/// The local argument checks of [`pdgetrs`] (and of the fault-tolerant
/// solve, `routine`): `a` holds the N×N factors in its first `n` global
/// columns (the fault-tolerant solve's has its checksum columns after
/// them), `ipiv` the pivots, `b` the right-hand sides.
pub(crate) fn check_args(
    routine: &str,
    grid: &Grid,
    a: &DistMatrix,
    n: usize,
    ipiv: &[i64],
    b: &DistMatrix,
) -> Result<()> {
    check_grid(grid, a, routine, DESCA, "A")?;
    check_grid(grid, b, routine, DESCB, "B")?;
    if a.m() != n {
        return Err(arg_error(
            routine,
            DESCA,
            entry::M,
            "M_A",
            format!("A must be square: M_A = {}, N_A = {n}", a.m()),
        ));
    }
    check_square_blocks(routine, DESCA, "A", a.desc())?;
    if ipiv.len() != n {
        return Err(arg_error(routine, IPIV, 0, "IPIV", format!("has {} entries, N = {n}", ipiv.len())));
    }
    if let Some((i, &p)) = ipiv.iter().enumerate().find(|&(i, &p)| p < i as i64 || p >= n as i64) {
        return Err(arg_error(routine, IPIV, 0, "IPIV", format!("IPIV[{i}] = {p} is outside {i}..{n}")));
    }
    check_rhs_rows(routine, DESCB, n, a, b)?;
    // (B is overwritten with the solution: the program fills it.)
    check_not_lost(grid, routine, A, "A", a)
}

/// One of the four triangular solves with the LU factors, done block row
/// by block row of B: each block step solves the diagonal block's system
/// (on the diagonal process row) and subtracts its contribution from the
/// rows still to solve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sweep {
    /// B := L⁻¹·B (L unit lower triangular), first block first.
    ForwardL,
    /// B := U⁻¹·B (U upper triangular, non-unit), last block first.
    BackwardU,
    /// B := U⁻ᵀ·B, first block first.
    ForwardUt,
    /// B := L⁻ᵀ·B, last block first.
    BackwardLt,
}

impl Sweep {
    /// The two sweeps of the solve of `trans`, in order (the row
    /// interchanges come before them for `NoTrans`, after for `Trans`).
    pub(crate) fn of(trans: Transpose) -> [Sweep; 2] {
        match trans {
            Transpose::NoTrans => [Sweep::ForwardL, Sweep::BackwardU],
            Transpose::Trans => [Sweep::ForwardUt, Sweep::BackwardLt],
        }
    }

    /// The `i`-th block step of the sweep over the order-`n` factors with
    /// blocks of `nb`: the block's first global index and size.
    pub(crate) fn block(self, n: usize, nb: usize, i: usize) -> (usize, usize) {
        let k = match self {
            Sweep::ForwardL | Sweep::ForwardUt => i,
            Sweep::BackwardU | Sweep::BackwardLt => n.div_ceil(nb) - 1 - i,
        };
        (k * nb, nb.min(n - k * nb))
    }
}

/// The row interchanges of the pivots `ipiv`, in the order the solve of
/// `trans` applies them (forward for `NoTrans`, backward for `Trans`).
pub(crate) fn pivot_swaps(ipiv: &[i64], trans: Transpose) -> Vec<(usize, usize)> {
    let mut swaps: Vec<(usize, usize)> = ipiv.iter().enumerate().map(|(i, &p)| (i, p as usize)).collect();
    if trans == Transpose::Trans {
        swaps.reverse();
    }
    swaps
}

/// The part of the factors one block step needs, on every process that
/// needs it: a block column of L or U along the process rows
/// ([`Sweep::ForwardL`], [`Sweep::BackwardU`]), or a block row of U or L
/// on every process (the transposed sweeps).
pub(crate) struct FactorPanel {
    sweep: Sweep,
    /// L's diagonal: unit (LU's), or stored (Cholesky's).
    l_diag: Diag,
    j0: usize,
    jb: usize,
    data: Vec<f64>,
}

/// Collective (along the process rows; for the transposed sweeps over the
/// grid): the panel of the LU factors `a` (the first `n` global columns of
/// `a` are the N×N factors, further columns are not read) for the block
/// at `j0` (size `jb`) of `sweep`.
pub(crate) fn factor_panel(
    grid: &Grid,
    sweep: Sweep,
    a: &DistMatrix,
    n: usize,
    block: (usize, usize),
) -> Result<FactorPanel> {
    factor_panel_of(grid, (sweep, Diag::Unit), a, n, block)
}

/// [`factor_panel`] of a lower triangular factor L whose diagonal is
/// `l_diag` (the L sweeps only: Cholesky's L has its diagonal stored).
pub(crate) fn factor_panel_of(
    grid: &Grid,
    (sweep, l_diag): (Sweep, Diag),
    a: &DistMatrix,
    n: usize,
    (j0, jb): (usize, usize),
) -> Result<FactorPanel> {
    let data = match sweep {
        Sweep::ForwardL => column_panel(grid, a, j0, jb, a.local_rows_before(j0)..a.local_rows())?,
        Sweep::BackwardU => column_panel(grid, a, j0, jb, 0..a.local_rows_before(j0 + jb))?,
        Sweep::ForwardUt => row_panel(grid, a, j0, jb, j0, n)?,
        Sweep::BackwardLt => row_panel(grid, a, j0, jb, 0, j0 + jb)?,
    };
    Ok(FactorPanel { sweep, l_diag, j0, jb, data })
}

/// What a block step computed for B, to be written into it
/// ([`BlockStep::commit`]): the solved block row and the update of the
/// rows still to solve.
pub(crate) struct BlockStep {
    /// The local columns of B the step works on (ascending ranges).
    cols: Vec<Range<usize>>,
    /// The solved block row (`jb ×` those columns, packed), on every
    /// process of the process column.
    x: Vec<f64>,
    /// Its first local row in B (on the diagonal process row) and size.
    lr0: usize,
    jb: usize,
    /// Whether this process row holds the block row.
    diagonal: bool,
    /// The local rows of B the update subtracts from, and op(P) for them:
    /// `P = panel[offset..]` with leading dimension `ld`, transposed or not.
    rows: Range<usize>,
    panel: Vec<f64>,
    offset: usize,
    ld: usize,
    trans: Trans,
}

impl FactorPanel {
    /// Collective over the process columns (B is only read): the diagonal
    /// process row solves B's block row on a copy, and every process of
    /// its process column receives the result. The step works on B's
    /// local columns `cols` (ascending ranges, the same on every process
    /// of a process column): a column left out must stay as it is (zero)
    /// under the solve.
    pub(crate) fn solve(self, grid: &Grid, a: &DistMatrix, b: &DistMatrix, cols: &[Range<usize>]) -> Result<BlockStep> {
        let FactorPanel { sweep, l_diag, j0, jb, data } = self;
        let (lldb, lr) = (b.lld(), b.local_rows());
        let ncols: usize = cols.iter().map(ExactSizeIterator::len).sum();
        let pr = a.row_owner(j0);
        let lr0 = a.local_rows_before(j0);
        let lrb = a.local_rows_before(j0 + jb);
        let diagonal = b.coords().0 == pr;
        // The diagonal block's triangle in the panel, and its form.
        let (tri, ldt, uplo, tt, diag) = match sweep {
            Sweep::ForwardL => (0, lr - lr0, Uplo::Lower, Trans::No, l_diag),
            Sweep::BackwardU => (lr0, lrb, Uplo::Upper, Trans::No, Diag::NonUnit),
            Sweep::ForwardUt => (0, jb, Uplo::Upper, Trans::Yes, Diag::NonUnit),
            Sweep::BackwardLt => (j0 * jb, jb, Uplo::Lower, Trans::Yes, l_diag),
        };
        let mut x = Vec::with_capacity(jb * ncols);
        if diagonal {
            for c in cols {
                x.extend(c.clone().flat_map(|c| &b.local()[lr0 + c * lldb..lr0 + jb + c * lldb]));
            }
            if ncols > 0 {
                blas::dtrsm(Side::Left, uplo, tt, diag, jb, ncols, 1.0, &data[tri..], ldt, &mut x, jb);
            }
        } else {
            x.resize(jb * ncols, 0.0);
        }
        if b.grid_shape().0 > 1 && !x.is_empty() {
            grid.broadcast(Scope::Column, &mut x, pr as i32)?;
        }
        // The rows below (forward) or above (backward) the block.
        let (rows, panel, offset, ld, trans) = match sweep {
            Sweep::ForwardL => (lrb..lr, data, lrb - lr0, lr - lr0, Trans::No),
            Sweep::BackwardU => (0..lr0, data, 0, lrb, Trans::No),
            Sweep::ForwardUt => (lrb..lr, select_columns(&data, jb, j0, b, lrb..lr), 0, jb, Trans::Yes),
            Sweep::BackwardLt => (0..lr0, select_columns(&data, jb, 0, b, 0..lr0), 0, jb, Trans::Yes),
        };
        Ok(BlockStep { cols: cols.to_vec(), x, lr0, jb, diagonal, rows, panel, offset, ld, trans })
    }
}

impl BlockStep {
    /// Local: writes the solved block row into B (on the diagonal process
    /// row) and subtracts its contribution from the rows still to solve.
    pub(crate) fn commit(self, b: &mut DistMatrix) {
        let BlockStep { cols, x, lr0, jb, diagonal, rows, panel, offset, ld, trans } = self;
        let lldb = b.lld();
        // (Each range's part of the block row starts at `at`.)
        let mut at = 0;
        for c in cols.into_iter().filter(|c| !c.is_empty()) {
            let (n, xc) = (c.len(), &x[at * jb..]);
            if diagonal {
                unpack(&xc[..n * jb], b.local_mut(), lldb, lr0..lr0 + jb, c.clone());
            }
            if !rows.is_empty() {
                let dst = &mut b.local_mut()[rows.start + c.start * lldb..];
                blas::dgemm(trans, Trans::No, rows.len(), n, jb, -1.0, &panel[offset..], ld, xc, jb, 1.0, dst, lldb);
            }
            at += n;
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_cover_the_order_once_in_their_direction() {
        let steps = |s: Sweep, n: usize| (0..n.div_ceil(4)).map(|i| s.block(n, 4, i)).collect::<Vec<_>>();
        assert_eq!(steps(Sweep::ForwardL, 10), vec![(0, 4), (4, 4), (8, 2)]);
        assert_eq!(steps(Sweep::BackwardLt, 10), vec![(8, 2), (4, 4), (0, 4)]);
        assert_eq!(steps(Sweep::BackwardU, 8), vec![(4, 4), (0, 4)]);
        assert_eq!(steps(Sweep::ForwardUt, 0), vec![]);
        assert_eq!(Sweep::of(Transpose::Trans), [Sweep::ForwardUt, Sweep::BackwardLt]);
    }

    #[test]
    fn the_transposed_solve_undoes_the_interchanges_backwards() {
        assert_eq!(pivot_swaps(&[2, 1, 2], Transpose::NoTrans), vec![(0, 2), (1, 1), (2, 2)]);
        assert_eq!(pivot_swaps(&[2, 1, 2], Transpose::Trans), vec![(2, 2), (1, 1), (0, 2)]);
    }
}
