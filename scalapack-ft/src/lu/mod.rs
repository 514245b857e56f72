//! LU factorization with partial pivoting on a 2D block-cyclic grid
//! (ScaLAPACK `PDGETRF` / `PDGETRS` / `PDLASWP`), not fault tolerant.
//!
//! * [`pdgetrf`]: `P·A = L·U` of an M×N matrix, in place, with ScaLAPACK's
//!   result layout (unit lower L below the diagonal, U on and above it);
//!   [`pdgetrf_with`] takes tuning [`LuOptions`].
//! * [`pdgetrs`]: solves `A·X = B` or `Aᵀ·X = B` with the factors.
//! * [`pdlaswp`]: applies the recorded row interchanges to another matrix.
//! * [`lu_residual`], [`solve_residual`]: ScaLAPACK-style scaled residuals.
//!
//! # Pivots
//! ScaLAPACK's `IPIV` is a *local* array of length `LOCr(M_A)+MB_A` holding
//! 1-based global row numbers for the local rows. Here the pivots are a
//! **replicated, global, 0-based** vector of length `min(M, N)`, the same on
//! every process: `ipiv[i]` is the global row that was interchanged with
//! row `i` at step `i` (LAPACK's convention shifted to 0-based, so
//! `ipiv[i] ≥ i`). Applying `swap(i, ipiv[i])` for `i = 0, 1, …` to the
//! rows of A gives `P·A`.
//!
//! # Arguments
//! As in ScaLAPACK's documentation, arguments are marked *(global)* when
//! they must be the same on every process and *(local)* when each process
//! passes its own piece. Argument errors carry ScaLAPACK's argument
//! positions ([`crate::args`]; [`crate::Error::info`] gives its `INFO`) and are agreed: every
//! process returns the same error, nobody hangs.
//!
//! # Performance
//! Right-looking with a look-ahead of one panel: the next panel is
//! factored while the other process columns run their trailing DGEMM
//! (see the drivers' notes in `factor.rs` and `row.rs`). Interchanges move
//! each row once per step in one message per pair of process rows; the
//! panel on P > 1 process rows costs one all-gather per column. On grids
//! with one process row the trailing DGEMM works on panels of
//! [`LuOptions::row_panel_width`] columns whatever `NB` is. Run with one
//! BLAS thread per process (`OPENBLAS_NUM_THREADS=1`).
//!
//! Not fault tolerant: a process failure surfaces as [`crate::Error::Grid`].

mod check;
mod factor;
pub(crate) mod panel;
mod ring;
mod row;
pub(crate) mod solve;
pub(crate) mod swap;

pub use check::{lu_residual, solve_residual};
pub use factor::{pdgetrf, pdgetrf_with, LuOptions};
pub use solve::{pdgetrs, Transpose};
pub use swap::{pdlaswp, Direction};

/// Tags of the point-to-point messages of this module (on the grid's
/// all-process communicator).
pub(crate) mod tags {
    /// A factored panel travelling along a process row.
    pub const PANEL: i32 = 0x4C55;
    /// Rows exchanged by a row interchange.
    pub const SWAP: i32 = 0x4C56;
    /// A process column's part of a wide panel, on its way to the process
    /// that factors it.
    pub const PIECE: i32 = 0x4C57;
}
