//! QR factorization (ScaLAPACK PDGEQRF and friends), layered as
//! ScaLAPACK does: panel reflectors (PDGEQR2, PDLARFT, PDLARFB) →
//! blocked factorization → applying Q → least squares; plus the tester's
//! residual checks.

mod apply;
pub mod check;
pub(crate) mod factor;
mod gels;
mod lower_solve;
pub(crate) mod reflectors;
mod transpose;

pub use apply::pdormqr;
pub(crate) use apply::{apply_reduced_w, check_rows_of_a, panels_in_order, reduced_w, share_panel};
pub use factor::pdgeqrf;
pub(crate) use gels::{check_minimum_norm, r_blocks_in_order, RBlockColumn};
pub use gels::{pdgels, upper_solve};
pub(crate) use lower_solve::{rt_blocks_in_order, zero_rows, RBlockRow};
pub(crate) use transpose::transpose;
