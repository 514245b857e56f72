//! QR factorization (ScaLAPACK PDGEQRF and friends), layered as
//! ScaLAPACK does: panel reflectors (PDGEQR2, PDLARFT, PDLARFB) →
//! blocked factorization → applying Q → least squares; plus the tester's
//! residual checks.

mod apply;
pub mod check;
pub(crate) mod factor;
mod gels;
pub(crate) mod reflectors;

pub use apply::pdormqr;
pub use factor::pdgeqrf;
pub use gels::{pdgels, upper_solve};

/// Flops of a QR factorization of an M×N matrix (LAPACK's count).
pub fn qr_flops(m: usize, n: usize) -> f64 {
    let (m, n) = (m as f64, n as f64);
    if m >= n {
        2.0 * m * n * n - 2.0 * n * n * n / 3.0
    } else {
        2.0 * n * m * m - 2.0 * m * m * m / 3.0
    }
}
