//! The ABFT of the fault-tolerant factorizations (`pdgeqrf_ft`,
//! `pdgetrf_ft`), one implementation on the checksum crate's kernels.
//!
//! The matrix is extended with the checksums of a `checksum::ChecksumLayout`
//! (`FtOptions::layout`): the reverse-neighboring pairs (the default:
//! C_g = Σ_{J∈g} A_J for each group g of Q block columns, stored twice on
//! two process columns) or the rotating layout (f weighted checksums
//! C_g^(i) = Σ w_{i,J}·A_J per group of Q − f, one copy each on the process
//! columns the group skips). Either is updated by the same trailing updates
//! as the data (QR's block reflectors; LU's row interchanges, TRSM and
//! DGEMM); finished groups' checksums drop out. The left factor of finished
//! block columns (QR's V, LU's L: the entries strictly below the diagonal)
//! is protected by D_g^(i), their weighted row sums per group, kept with
//! each copy of C_g^(i); on and above the diagonal (R, U) C_g protects them.
//! Every kernel here is written once over the layout's answers (members,
//! weights, replicas, holders).
//!
//! * `Extended`: this process's share — the extended matrix (in A's own
//!   storage when it has room) and its D_g;
//! * `encode_checksums`: the initial encoding (collective); for
//!   Cholesky's lower triangle, `encode_lower_checksums` splits its sums
//!   along the groups' diagonals;
//! * `rebuild_lost_blocks`: a lost process's blocks from its process
//!   row's survivors and the checksums (collective);
//! * `verify_checksums`: the checksum relations, recomputed (collective);
//! * `set_up_call`: the start of every call (the extended matrix, the
//!   agreed verdict on the arguments);
//! * [`FtWorkspace`]: caller-owned storage for all of it;
//! * `PanelDriver`: what the panel factorizations (QR, LU) share of the
//!   protocol's `Algorithm` (the extended matrix, the panel's backup, the
//!   look-ahead; abort, rebuild, verification, checkpoint arrays);
//! * `ProtectedFactors`: a factorization's extended matrix kept after it
//!   returns, rebuilt by the region after a repair;
//! * `run_solve`: the one runner of the solves on protected factors
//!   (LU's and QR's), B protected by checksum columns of its own
//!   (`ProtectedRhs`), each solve's steps supplied as `SolveSteps`.

mod encode;
mod encode_lower;
mod encode_plan;
mod extended;
mod factors;
mod lookahead;
mod options;
mod panel_driver;
mod protected;
mod rebuild;
pub(crate) mod regrid;
mod relations;
mod rhs;
mod set_up;
mod shrink;
mod solve_call;
mod solve_driver;
mod verify;
mod workspace;

pub use checksum::LayoutKind;
pub(crate) use encode::encode_checksums;
pub use extended::{in_place_len, MatrixShape};
pub(crate) use extended::{layout_err, Extended};
pub use factors::{Factors, FactorsKind};
pub(crate) use lookahead::{send_ahead, LookAhead};
pub use options::{FtOptions, FtReport};
pub(crate) use panel_driver::{Factored, PanelDriver, PanelFactorization, PanelSteps};
pub use protected::Holding;
pub(crate) use protected::ProtectedFactors;
pub(crate) use rebuild::rebuild_lost_blocks;
pub use relations::Relations;
pub(crate) use rhs::ProtectedRhs;
pub(crate) use set_up::{check_layout, set_up_call};
pub(crate) use shrink::{extended_on, move_blocks, After, Before, RowVectors};
pub(crate) use solve_call::{run_solve, SolveArgs};
pub use solve_driver::SolveCall;
pub(crate) use solve_driver::SolveSteps;
pub use verify::ChecksumCheck;
pub(crate) use verify::{reencode_checksums, verify_checksums};
pub use workspace::FtWorkspace;
