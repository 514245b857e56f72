//! QR factorization (ScaLAPACK PDGEQRF and friends), layered as
//! ScaLAPACK does: panel reflectors (PDGEQR2, PDLARFT, PDLARFB) →
//! blocked factorization → applying Q → least squares; plus the tester's
//! residual checks. With more than one process row the panels may be
//! factored by TSQR with Householder reconstruction instead of PDGEQR2
//! ([`PanelMethod`]), with the same output.

mod apply;
pub mod check;
pub(crate) mod factor;
mod gels;
mod panel_choice;
pub(crate) mod reflectors;
pub mod tall_skinny;
mod tsqr;

pub use apply::pdormqr;
pub use factor::{pdgeqrf, pdgeqrf_with};
pub use gels::{pdgels, upper_solve};
pub use panel_choice::{PanelAlgorithm, PanelMethod, QrOptions};
