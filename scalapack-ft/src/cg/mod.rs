//! Conjugate gradients on a dense symmetric positive definite matrix
//! distributed 2D block-cyclic (`pdcg`), not fault tolerant; the iteration
//! itself (`iteration`) is shared with the fault-tolerant
//! [`crate::cg_ft::pdcg_ft`].
//!
//! # Layout
//! A is M×M with square blocks (MB = NB), its first block on process
//! (0, 0). `b` and `x` are M×1 distributed matrices with A's row blocks
//! (MB_B = MB_X = MB_A, first block on process (0, 0)): ScaLAPACK's
//! vector descriptors, so their entries live on process column 0.
//! Inside, every vector is kept in *row form*: each process holds the
//! entries of its own local rows of A, the same on every process of its
//! process row. The matrix-vector product A·p then needs p at the local
//! columns (a sum of the row pieces down each process column) and gives
//! A·p in row form again (a sum along each process row); inner products
//! are one reduction over the grid; the scalars are replicated.
//!
//! # Arguments
//! As in ScaLAPACK, *(global)* arguments are the same on every process and
//! *(local)* ones are each process's piece. Argument errors carry the
//! positions of a ScaLAPACK-style calling sequence `PDCG(N, A, IA, JA,
//! DESCA, B, IB, JB, DESCB, X, IX, JX, DESCX, TOL, MAXIT)` and are agreed:
//! every process returns the same error.

pub(crate) mod iteration;
pub(crate) mod solve;
pub(crate) mod vectors;

pub use solve::pdcg;

use recovery::protocol::RecoveryRecord;
use serde::{Deserialize, Serialize};

/// Options of the conjugate-gradient solvers (global).
#[derive(Clone, Debug)]
pub struct CgOptions {
    /// Stop when the recurrence residual satisfies ‖r‖ ≤ `tol`·‖b‖.
    pub tol: f64,
    /// At most this many iterations.
    pub maxit: u64,
    /// Jacobi preconditioning: z = diag(A)⁻¹·r.
    pub jacobi: bool,
}

impl Default for CgOptions {
    fn default() -> CgOptions {
        CgOptions { tol: 1e-8, maxit: 10_000, jacobi: false }
    }
}

/// A silent error caught by the checksum test of a matrix-vector product:
/// eᵀ(A·p) against (eᵀA)·p. The product was recomputed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Detection {
    /// The iteration (1-based; 0 is the initial residual b − A·x₀).
    pub iteration: u64,
    /// |eᵀ(A·p) − (eᵀA)·p|.
    pub defect: f64,
    /// The rounding bound it exceeded.
    pub tolerance: f64,
}

/// What a conjugate-gradient solve did, the same on every process.
#[derive(Clone, Debug, Default)]
pub struct CgReport {
    /// Iterations run.
    pub iterations: u64,
    /// Whether ‖r‖ ≤ tol·‖b‖ was reached within `maxit`.
    pub converged: bool,
    /// The true relative residual ‖b − A·x‖₂/‖b‖₂ of the returned x,
    /// recomputed at the end (‖b − A·x‖₂ when b = 0).
    pub relative_residual: f64,
    /// The recurrence's own ‖r‖₂/‖b‖₂ at the end.
    pub recurrence_residual: f64,
    /// Silent errors caught in matrix-vector products (fault-tolerant
    /// solver only), oldest first.
    pub detections: Vec<Detection>,
    /// Recoveries from lost processes (fault-tolerant solver only).
    pub recoveries: Vec<RecoveryRecord>,
    /// The checksum relations of A at the end (fault-tolerant solver,
    /// when asked for).
    pub check: Option<crate::abft::ChecksumCheck>,
    /// Seconds the solve ran in earlier jobs and between them, when it was
    /// restored from checkpoints (checkpoint-on-failure; 0 otherwise).
    pub earlier_s: f64,
}

/// Flops of `iterations` CG iterations on an N×N dense matrix (the
/// matrix-vector product, 2N², and the vector work, ≈ 10N), plus the
/// initial and final residuals (2N² each).
pub fn cg_flops(n: usize, iterations: u64) -> f64 {
    let n = n as f64;
    (iterations as f64) * (2.0 * n * n + 10.0 * n) + 4.0 * n * n
}
