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
