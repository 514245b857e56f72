//! The solve with Rᵀ of the minimum-norm least squares (M < N, R from
//! the QR of Aᵀ): forward substitution by blocks (ScaLAPACK PDTRSM with
//! SIDE = 'L', UPLO = 'U', TRANS = 'T'). The per-block pieces
//! ([`rt_blocks_in_order`], [`RBlockRow::share`],
//! [`RBlockRow::solve_diagonal`], [`RBlockRow::apply`]) serve the plain
//! [`transposed_upper_solve`] and the fault-tolerant `pdgels_ft`, which
//! runs them as the phases and the commit of its steps.

use super::gels::block_row;
use crate::blas::{self, Diag, Side, Trans, Uplo};
use crate::error::Result;
use crate::matrix::{unpack, DistMatrix};
use blacs_ft::{Grid, Scope};
use std::ops::Range;

/// Solves Rᵀ·Y = B(0..n, :) in place, R the n×n upper triangle of `a`
/// (local to the crate: `pdgels`'s minimum-norm path; `a` is only read).
pub(crate) fn transposed_upper_solve(grid: &Grid, a: &DistMatrix, n: usize, b: &mut DistMatrix) -> Result<()> {
    let whole = 0..b.local_cols();
    let all = std::slice::from_ref(&whole);
    for (k0, kb) in rt_blocks_in_order(n, a.nb()) {
        let r = RBlockRow::share(grid, a, n, k0, kb)?;
        let yk = r.solve_diagonal(grid, b, all)?;
        r.apply(&yk, b, all);
    }
    Ok(())
}

/// Local: rows `rows` (global) of `b` set to zero on all its local
/// columns (the minimum-norm solution's `[Y; 0]` before Q is applied).
pub(crate) fn zero_rows(b: &mut DistMatrix, rows: std::ops::Range<usize>) {
    let local = b.local_rows_before(rows.start)..b.local_rows_before(rows.end);
    let (ldb, lc) = (b.lld(), b.local_cols());
    for c in 0..lc {
        b.local_mut()[c * ldb + local.start..c * ldb + local.end].fill(0.0);
    }
}

/// The diagonal blocks `(k0, kb)` of an n×n R (block size `nb`) in the
/// order forward substitution with Rᵀ takes them: first to last.
pub(crate) fn rt_blocks_in_order(n: usize, nb: usize) -> Vec<(usize, usize)> {
    (0..n).step_by(nb).map(|k0| (k0, nb.min(n - k0))).collect()
}

/// Block row `k0..k0+kb` of R, columns `k0..n`, whole on every process
/// after [`RBlockRow::share`] (`kb × (n − k0)`, column-major).
pub(crate) struct RBlockRow {
    k0: usize,
    kb: usize,
    n: usize,
    row: Vec<f64>,
}

impl RBlockRow {
    /// Collective over the grid: the block row, summed along the process
    /// row that holds it and broadcast down the process columns. `a` is
    /// only read.
    pub fn share(grid: &Grid, a: &DistMatrix, n: usize, k0: usize, kb: usize) -> Result<RBlockRow> {
        let pr = a.row_owner(k0);
        let mut row = vec![0.0; kb * (n - k0)];
        if a.coords().0 == pr {
            let (lr0, lda) = (a.local_rows_before(k0), a.lld());
            for lj in a.local_cols_before(k0)..a.local_cols_before(n) {
                let g = a.global_col(lj);
                row[(g - k0) * kb..(g - k0 + 1) * kb].copy_from_slice(&a.local()[lr0 + lj * lda..lr0 + lj * lda + kb]);
            }
            if grid.npcol() > 1 {
                grid.sum(Scope::Row, &mut row, None)?;
            }
        }
        if grid.nprow() > 1 {
            grid.broadcast(Scope::Column, &mut row, pr as i32)?;
        }
        Ok(RBlockRow { k0, kb, n, row })
    }

    /// Collective over the process column: `Y_k = R_kk⁻ᵀ·B_k` (B's block
    /// row k, its local columns `cols`: ascending ranges, the same on
    /// every process of a process column), solved on the process row
    /// holding block row k and shared down the process column; `kb ×`
    /// those columns, packed. `b` (A's row distribution) is only read.
    pub fn solve_diagonal(&self, grid: &Grid, b: &DistMatrix, cols: &[Range<usize>]) -> Result<Vec<f64>> {
        let (k0, kb) = (self.k0, self.kb);
        let pr = b.row_owner(k0);
        let mut yk = block_row(b, k0, kb, cols);
        if b.coords().0 == pr && !yk.is_empty() {
            let ncols = yk.len() / kb;
            blas::dtrsm(Side::Left, Uplo::Upper, Trans::Yes, Diag::NonUnit, kb, ncols, 1.0, &self.row, kb, &mut yk, kb);
        }
        if grid.nprow() > 1 {
            grid.broadcast(Scope::Column, &mut yk, pr as i32)?;
        }
        Ok(yk)
    }

    /// Local: `B_k = Y_k` and `B(k0+kb..n, :) −= R(k, k0+kb..n)ᵀ·Y_k` on
    /// this process's rows and the local columns `cols` of `b` (those
    /// [`RBlockRow::solve_diagonal`] solved).
    pub fn apply(&self, yk: &[f64], b: &mut DistMatrix, cols: &[Range<usize>]) {
        let (k0, kb, ldb) = (self.k0, self.kb, b.lld());
        if b.coords().0 == b.row_owner(k0) {
            let lk0 = b.local_rows_before(k0);
            let mut at = 0;
            for c in cols {
                unpack(&yk[at * kb..(at + c.len()) * kb], b.local_mut(), ldb, lk0..lk0 + kb, c.clone());
                at += c.len();
            }
        }
        let below = b.local_rows_before(k0 + kb)..b.local_rows_before(self.n);
        let nr = below.len();
        if nr == 0 || yk.is_empty() {
            return;
        }
        // R(k, g)ᵀ for this process's rows g below block k.
        let mut rt = vec![0.0; nr * kb];
        for (r, li) in below.clone().enumerate() {
            let g = b.global_row(li) - k0;
            for c in 0..kb {
                rt[r + c * nr] = self.row[c + g * kb];
            }
        }
        let mut at = 0;
        for c in cols.iter().filter(|c| !c.is_empty()) {
            let (n, yc) = (c.len(), &yk[at * kb..(at + c.len()) * kb]);
            let dst = &mut b.local_mut()[below.start + c.start * ldb..];
            blas::dgemm(Trans::No, Trans::No, nr, n, kb, -1.0, &rt, nr, yc, kb, 1.0, dst, ldb);
            at += n;
        }
    }
}
