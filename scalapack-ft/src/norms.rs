//! Distributed matrix norms (ScaLAPACK `PDLANGE`).

use crate::error::Result;
use crate::matrix::DistMatrix;
use blacs_ft::{Grid, Scope};

/// Collective: the 1-norm ‖A‖₁ (largest column sum of absolute values),
/// the same on every rank.
pub fn one_norm(grid: &Grid, a: &DistMatrix) -> Result<f64> {
    let (lr, lc, lld) = (a.local_rows(), a.local_cols(), a.lld());
    let mut sums: Vec<f64> =
        (0..lc).map(|lj| a.local()[lj * lld..lj * lld + lr].iter().map(|x| x.abs()).sum()).collect();
    grid.sum(Scope::Column, &mut sums, None)?;
    let mut best = [sums.iter().copied().fold(0.0f64, |m, x| if x.is_nan() || x > m { x } else { m })];
    grid.max(Scope::Row, &mut best)?;
    Ok(best[0])
}

/// Collective: the largest absolute element, the same on every rank.
pub fn max_abs(grid: &Grid, a: &DistMatrix) -> Result<f64> {
    let (lr, lc, lld) = (a.local_rows(), a.local_cols(), a.lld());
    let mut m = [0.0f64];
    for lj in 0..lc {
        for &x in &a.local()[lj * lld..lj * lld + lr] {
            if x.is_nan() || x.abs() > m[0] {
                m[0] = x.abs();
            }
        }
    }
    grid.max(Scope::All, &mut m)?;
    Ok(m[0])
}

/// Machine epsilon as ScaLAPACK's testers use it (`PDLAMCH('Epsilon')`,
/// the relative machine precision 2⁻⁵³ with rounding).
pub const EPS: f64 = f64::EPSILON * 0.5;
