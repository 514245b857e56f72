//! `pdgels`-style least squares: minimise ‖A·X − B‖₂ through QR (M ≥ N),
//! or the minimum-norm solution through the QR of Aᵀ (M < N).

use super::apply::pdormqr;
use super::factor::pdgeqrf;
use super::lower_solve::{transposed_upper_solve, zero_rows};
use super::transpose::transpose;
use crate::args::pdgels::{DESCA, DESCB};
use crate::args::{arg_error, check_first_block_at_origin, check_square_blocks, entry};
use crate::blas::{self, Diag, Side, Trans, Uplo};
use crate::error::{agree_on_arguments, check_not_lost, Result};
use crate::matrix::{unpack, DistMatrix};
use blacs_ft::{Grid, Scope};
use std::ops::Range;
use std::time::{Duration, Instant};

/// Least squares of a full-rank system (ScaLAPACK `PDGELS` with
/// TRANS = 'N').
///
/// * `a` (local input/output): M×N. On exit, for M ≥ N its QR
///   factorization (as [`super::pdgeqrf`]); for M < N its LQ
///   factorization in PDGELQF's form (L on and below the diagonal, the
///   reflectors' vectors row-wise above it), computed as the QR of Aᵀ.
/// * `b` (local input/output): max(M, N)×NRHS with A's row distribution
///   (MB, RSRC). For M ≥ N: B on entry; on exit rows 0..N hold the
///   least-squares solution X, rows N..M the residual components. For
///   M < N: B in rows 0..M on entry (the rest is not read); on exit the
///   minimum-norm solution X of A·X = B (N rows).
/// * returns `tau` (global): min(M, N) Householder scalars.
///
/// # Errors
/// Agreed argument errors at PDGELS's positions; for M < N, A must also
/// have square blocks starting on process (0, 0) (argument 8), as its
/// transpose is factored.
pub fn pdgels(grid: &Grid, a: &mut DistMatrix, b: &mut DistMatrix) -> Result<Vec<f64>> {
    pdgels_timed(grid, a, b).map(|(tau, _)| tau)
}

/// [`pdgels`], also returning how long its solve part took on this
/// process: after the factorization, Qᵀ·B and R·X (M ≥ N), or Rᵀ·Y and
/// Q·[Y; 0] (M < N) — the part `pdgels_ft`'s protected solve does.
///
/// # Errors
/// Those of [`pdgels`].
pub fn pdgels_timed(grid: &Grid, a: &mut DistMatrix, b: &mut DistMatrix) -> Result<(Vec<f64>, Duration)> {
    let mut tau = Vec::new();
    let (m, n) = (a.m(), a.n());
    if m < n {
        agree_on_arguments(grid, check_minimum_norm("pdgels", a, b))?;
        let mut at = transpose(grid, a)?;
        pdgeqrf(grid, &mut at, &mut tau)?;
        let t = Instant::now();
        transposed_upper_solve(grid, &at, m, b)?;
        zero_rows(b, m..n);
        pdormqr(grid, Trans::No, &at, &tau, m, b)?;
        let solve = t.elapsed();
        *a = transpose(grid, &at)?;
        return Ok((tau, solve));
    }
    pdgeqrf(grid, a, &mut tau)?;
    let t = Instant::now();
    pdormqr(grid, Trans::Yes, a, &tau, n, b)?;
    upper_solve(grid, a, n, b)?;
    Ok((tau, t.elapsed()))
}

/// Local: the arguments of a minimum-norm problem (M < N) that ftla
/// solves through the QR of Aᵀ: A in square blocks from process (0, 0)
/// (what the transpose needs), and B with N rows (PDGELS's max(M, N)).
pub(crate) fn check_minimum_norm(routine: &str, a: &DistMatrix, b: &DistMatrix) -> Result<()> {
    check_square_blocks(routine, DESCA, "A", a.desc())?;
    check_first_block_at_origin(routine, DESCA, "A", a.desc())?;
    if b.m() != a.n() {
        return Err(arg_error(
            routine,
            DESCB,
            entry::M,
            "M_B",
            format!("must be max(M, N) = {} for the minimum-norm solution (M < N), got {}", a.n(), b.m()),
        ));
    }
    Ok(())
}

/// Solves R·X = B(0..n, :) in place, R the n×n upper triangle of `a`
/// (distributed back substitution by blocks, ScaLAPACK PDTRSM's job).
/// The per-block pieces (`r_blocks_in_order`, `RBlockColumn::share`,
/// `RBlockColumn::solve_diagonal`, `RBlockColumn::apply`) are shared
/// with the fault-tolerant `upper_solve_ft`, which runs them as the phases
/// and the commit of its steps.
///
/// # Errors
/// [`crate::Error::InputLost`] on every process when `a` holds factors a
/// replacement's process lost (see [`DistMatrix::is_lost`]): nothing is
/// computed.
pub fn upper_solve(grid: &Grid, a: &DistMatrix, n: usize, b: &mut DistMatrix) -> Result<()> {
    agree_on_arguments(grid, check_not_lost(grid, "upper_solve", crate::args::upper_solve::A, "A", a))?;
    let whole = 0..b.local_cols();
    let all = std::slice::from_ref(&whole);
    for (k0, kb) in r_blocks_in_order(n, a.nb()) {
        let r = RBlockColumn::share(grid, a, k0, kb)?;
        let xk = r.solve_diagonal(grid, b, all)?;
        r.apply(&xk, b, all);
    }
    Ok(())
}

/// The diagonal blocks `(k0, kb)` of an n×n R (block size `nb`) in the
/// order back substitution takes them: last to first.
pub(crate) fn r_blocks_in_order(n: usize, nb: usize) -> Vec<(usize, usize)> {
    let mut blocks: Vec<(usize, usize)> = (0..n).step_by(nb).map(|k0| (k0, nb.min(n - k0))).collect();
    blocks.reverse();
    blocks
}

/// Block column `k0..k0+kb` of R, rows `0..k0+kb`, as one process holds
/// it after [`RBlockColumn::share`]: its local rows of those, on every
/// process of its process row.
pub(crate) struct RBlockColumn {
    k0: usize,
    kb: usize,
    /// Local rows × kb, column-major, leading dimension `ld`.
    col: Vec<f64>,
    ld: usize,
}

impl RBlockColumn {
    /// Collective over the process row: the block column, from the process
    /// column that holds it. `a` is only read.
    pub fn share(grid: &Grid, a: &DistMatrix, k0: usize, kb: usize) -> Result<RBlockColumn> {
        let pc = a.col_owner(k0);
        let ld = a.local_rows_before(k0 + kb);
        let mut col = vec![0.0; ld * kb];
        if a.coords().1 == pc {
            let (lc0, lda) = (a.local_cols_before(k0), a.lld());
            for c in 0..kb {
                col[c * ld..(c + 1) * ld].copy_from_slice(&a.local()[(lc0 + c) * lda..(lc0 + c) * lda + ld]);
            }
        }
        if grid.npcol() > 1 {
            grid.broadcast(Scope::Row, &mut col, pc as i32)?;
        }
        Ok(RBlockColumn { k0, kb, col, ld })
    }

    /// Collective over the process column: `X_k = R_kk⁻¹·B_k` (B's block
    /// row k, its local columns `cols`: ascending ranges, the same on
    /// every process of a process column), solved on the process row
    /// holding block row k and shared down the process column; `kb ×`
    /// those columns, packed. `b` (A's row distribution) is only read.
    pub fn solve_diagonal(&self, grid: &Grid, b: &DistMatrix, cols: &[Range<usize>]) -> Result<Vec<f64>> {
        let (k0, kb) = (self.k0, self.kb);
        let pr = b.row_owner(k0);
        let mut xk = block_row(b, k0, kb, cols);
        if b.coords().0 == pr && !xk.is_empty() {
            let rkk = &self.col[b.local_rows_before(k0)..];
            let ncols = xk.len() / kb;
            blas::dtrsm(Side::Left, Uplo::Upper, Trans::No, Diag::NonUnit, kb, ncols, 1.0, rkk, self.ld, &mut xk, kb);
        }
        if grid.nprow() > 1 {
            grid.broadcast(Scope::Column, &mut xk, pr as i32)?;
        }
        Ok(xk)
    }

    /// Local: `B_k = X_k` and `B(0..k0, :) −= R(0..k0, k)·X_k` on this
    /// process's rows and the local columns `cols` of `b` (those
    /// [`RBlockColumn::solve_diagonal`] solved).
    pub fn apply(&self, xk: &[f64], b: &mut DistMatrix, cols: &[Range<usize>]) {
        let (k0, kb, ldb) = (self.k0, self.kb, b.lld());
        let above = b.local_rows_before(k0);
        let diagonal = b.coords().0 == b.row_owner(k0);
        // (Each range's part of X_k starts at `at`.)
        let mut at = 0;
        for c in cols.iter().filter(|c| !c.is_empty()) {
            let (n, xc) = (c.len(), &xk[at * kb..(at + c.len()) * kb]);
            if diagonal {
                unpack(xc, b.local_mut(), ldb, above..above + kb, c.clone());
            }
            if above > 0 {
                let dst = &mut b.local_mut()[c.start * ldb..];
                blas::dgemm(Trans::No, Trans::No, above, n, kb, -1.0, &self.col, self.ld, xc, kb, 1.0, dst, ldb);
            }
            at += n;
        }
    }
}

/// Block row `k0..k0+kb` of `b`, its local columns `cols`, packed
/// (`kb ×` those columns) on the process row holding it; zeros elsewhere.
pub(crate) fn block_row(b: &DistMatrix, k0: usize, kb: usize, cols: &[Range<usize>]) -> Vec<f64> {
    let ncols: usize = cols.iter().map(ExactSizeIterator::len).sum();
    if b.coords().0 != b.row_owner(k0) {
        return vec![0.0; kb * ncols];
    }
    let (lk0, ldb) = (b.local_rows_before(k0), b.lld());
    let mut x = Vec::with_capacity(kb * ncols);
    for c in cols {
        x.extend(c.clone().flat_map(|j| &b.local()[j * ldb + lk0..j * ldb + lk0 + kb]));
    }
    x
}
