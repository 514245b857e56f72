//! Cholesky factorization of a symmetric positive definite matrix on a 2D
//! block-cyclic grid (ScaLAPACK `PDPOTRF`), not fault tolerant.
//!
//! * [`pdpotrf`]: `A = L·Lᵀ` (UPLO = L) or `A = Uᵀ·U` (UPLO = U), in place,
//!   in the triangle ScaLAPACK uses; the other triangle is not referenced.
//! * [`pdpotrs`]: solves `A·X = B` with the factor; [`pdposv`] factors
//!   and solves.
//! * [`cholesky_residual`]: ScaLAPACK's tester residual
//!   ‖A − L·Lᵀ‖₁ / (‖A‖₁·N·eps).
//!
//! # Arguments
//! As in ScaLAPACK's documentation, arguments are marked *(global)* when
//! they must be the same on every process and *(local)* when each process
//! passes its own piece. Argument errors carry ScaLAPACK's argument
//! positions ([`crate::args::pdpotrf`]; [`crate::Error::info`] gives its
//! `INFO`) and are agreed: every process returns the same error.
//!
//! # Performance
//! Right-looking, one block column per step with a look-ahead of one: the
//! diagonal block factored by LAPACK's `DPOTRF` on its owner, the column
//! below it solved against it on its process column (`DTRSM`), the column
//! sent along the process rows and, transposed, gathered down the process
//! columns, then each process updates its blocks of the trailing lower
//! triangle (`DSYRK` on the diagonal blocks, `DGEMM` below them, in chunks
//! of whole block columns), while the next block column, updated first by
//! its process column, is factored and sent: N³/3 flops, half of LU's.
//! Measured against the distribution's ScaLAPACK in docs/benchmarks.md.

mod check;
pub(crate) mod factor;
mod solve;

pub use check::{cholesky_residual, symmetrized};
pub use factor::pdpotrf;
pub use solve::{pdposv, pdpotrs};
