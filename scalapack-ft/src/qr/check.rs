//! The residual checks of ScaLAPACK's QR tester.

use super::apply::pdormqr;
use crate::blas::{self, Trans};
use crate::error::Result;
use crate::matrix::DistMatrix;
use crate::norms::{one_norm, EPS};
use blacs_ft::{Grid, Scope};

/// ‖A − Q·R‖₁ / (‖A‖₁ · max(M, N) · eps), computed by applying Q to R (the
/// upper triangle of `qr`) and subtracting the original `a`.
pub fn qr_residual(grid: &Grid, a: &DistMatrix, qr: &DistMatrix, tau: &[f64]) -> Result<f64> {
    let (m, n) = (a.m(), a.n());
    let mut r = qr.clone();
    {
        let ld = r.lld();
        let (lr, lc) = (r.local_rows(), r.local_cols());
        let rows: Vec<usize> = (0..lr).map(|li| r.global_row(li)).collect();
        for lj in 0..lc {
            let j = r.global_col(lj);
            for (li, &i) in rows.iter().enumerate() {
                if i > j {
                    r.local_mut()[li + lj * ld] = 0.0;
                }
            }
        }
    }
    pdormqr(grid, Trans::No, qr, tau, m.min(n), &mut r)?;
    for (x, y) in r.local_mut().iter_mut().zip(a.local()) {
        *x -= y;
    }
    let anorm = one_norm(grid, a)?;
    let rnorm = one_norm(grid, &r)?;
    Ok(scaled(rnorm, anorm, m.max(n)))
}

fn scaled(num: f64, norm: f64, dim: usize) -> f64 {
    if dim == 0 {
        return 0.0;
    }
    if norm == 0.0 {
        return if num == 0.0 { 0.0 } else { f64::INFINITY };
    }
    num / (norm * dim as f64 * EPS)
}

/// ‖I − QᵀQ‖₁ / (M · eps) for the M×min(M, N) Q of the factorization, Q
/// formed explicitly by applying it to the first columns of the identity.
pub fn orthogonality(grid: &Grid, qr: &DistMatrix, tau: &[f64]) -> Result<f64> {
    let (m, k) = (qr.m(), qr.m().min(qr.n()));
    if k == 0 {
        return Ok(0.0);
    }
    let mut q = DistMatrix::from_fn(grid, m, k, qr.mb(), qr.nb(), |i, j| if i == j { 1.0 } else { 0.0 })?;
    pdormqr(grid, Trans::No, qr, tau, k, &mut q)?;
    Ok(gram_defect(grid, &q)? / (m as f64 * EPS))
}

/// ‖I − QᵀQ‖₁ for a distributed Q: each column block of Q travels along the
/// process rows, every process multiplies its local rows, and the partial
/// Gram blocks are summed down the process columns.
fn gram_defect(grid: &Grid, q: &DistMatrix) -> Result<f64> {
    let (k, nb, ld) = (q.n(), q.nb(), q.lld());
    let (lr, lc) = (q.local_rows(), q.local_cols());
    let mycol = q.coords().1;
    let my_cols: Vec<usize> = (0..lc).map(|lj| q.global_col(lj)).collect();
    let mut worst = 0.0f64;
    for b0 in (0..k).step_by(nb) {
        let w = nb.min(k - b0);
        let owner = q.col_owner(b0);
        let mut blk = vec![0.0; lr * w];
        if owner == mycol {
            let lc0 = q.local_cols_before(b0);
            for c in 0..w {
                blk[c * lr..(c + 1) * lr].copy_from_slice(&q.local()[(lc0 + c) * ld..(lc0 + c) * ld + lr]);
            }
        }
        if grid.npcol() > 1 {
            grid.broadcast(Scope::Row, &mut blk, owner as i32)?;
        }
        let mut g = vec![0.0; lc * w];
        if lr > 0 && lc > 0 {
            blas::dgemm(Trans::Yes, Trans::No, lc, w, lr, 1.0, q.local(), ld, &blk, lr, 0.0, &mut g, lc);
        }
        grid.sum(Scope::Column, &mut g, None)?;
        let mut colsum: Vec<f64> = (0..w)
            .map(|c| (0..lc).map(|r| (g[r + c * lc] - if my_cols[r] == b0 + c { 1.0 } else { 0.0 }).abs()).sum())
            .collect();
        grid.sum(Scope::Row, &mut colsum, None)?;
        worst = colsum.iter().fold(worst, |a, &b| if b.is_nan() || b > a { b } else { a });
    }
    Ok(worst)
}
