//! QR factorization (ScaLAPACK PDGEQRF and friends), layered as
//! ScaLAPACK does: panel reflectors (PDGEQR2, PDLARFT, PDLARFB) →
//! blocked factorization → applying Q → least squares; plus the tester's
//! residual checks. With more than one process row the panels may be
//! factored by CholeskyQR2 or TSQR with Householder reconstruction instead
//! of PDGEQR2 ([`PanelMethod`]), with the same output.

mod apply;
pub mod check;
pub mod cholesky_qr;
pub(crate) mod factor;
mod gels;
mod lower_solve;
#[cfg(test)]
mod panel_checks;
mod panel_choice;
mod panel_group;
pub(crate) mod reflectors;
pub mod tall_skinny;
mod transpose;
mod tsqr;

pub use apply::pdormqr;
pub(crate) use apply::{apply_reduced_w, check_rows_of_a, panels_in_order, reduced_w, share_panel};
pub use factor::{pdgeqrf, pdgeqrf_with};
pub(crate) use gels::{check_minimum_norm, r_blocks_in_order, RBlockColumn};
pub use gels::{pdgels, pdgels_timed, upper_solve};
pub(crate) use lower_solve::{rt_blocks_in_order, transposed_upper_solve, zero_rows, RBlockRow};
pub use panel_choice::{PanelAlgorithm, PanelMethod, QrOptions};
pub(crate) use transpose::transpose;
