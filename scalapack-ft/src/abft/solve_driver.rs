//! What the fault-tolerant solves share of the protocol's `Algorithm`:
//! the protected right-hand sides, and the encoding, rebuild, verification
//! and checkpoint arrays made of them ([`SolveOnFactors`]); each solve
//! supplies its steps ([`SolveSteps`]), which read the protected factors
//! and apply left-side operations to B.

use super::rhs::ProtectedRhs;
use super::{ChecksumCheck, MatrixShape};
use crate::error::{Error, Result};
use crate::matrix::DistMatrix;
use blacs_ft::Grid;
use recovery::protocol::{Algorithm, Phase, PhaseClock};
use serde::{Deserialize, Serialize};

/// A solve's own part of a step.
///
/// Phase 1 ([`SolveSteps::exchange`]) reads B and the factors and writes
/// scratch only; the commit applies the scratch to B (every local column
/// of the extended B, checksums included) and runs no collective. The
/// factors are read-only: their checksums stay valid, and the region
/// rebuilds them after a repair before the solve's own rebuild of B.
pub(crate) trait SolveSteps {
    /// What phase 1 of a step hands to its commit.
    type Scratch;
    /// The operation's name in kill points (`getrs`, `ormqr`, `trsm`).
    const OP: &'static str;
    /// The phases of a step's phase 1, in order.
    const STEP_PHASES: &'static [Phase];
    /// Number of steps.
    fn steps(&self) -> u64;
    /// Phase 1 of step `k` (collective): reads `b`, writes scratch only.
    fn exchange(&mut self, b: &DistMatrix, grid: &Grid, k: u64, clock: &mut PhaseClock) -> Result<Self::Scratch>;
    /// The local commit of step `k` into `b`.
    fn commit(&mut self, b: &mut DistMatrix, grid: &Grid, k: u64, scratch: Self::Scratch);
}

/// What a solve's checkpoint must match: the factors' and B's shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SolveCall {
    pub factors: MatrixShape,
    pub rhs: MatrixShape,
}

impl std::fmt::Display for SolveCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "factors {}, right-hand sides {}", self.factors, self.rhs)
    }
}

/// A solve on the step-commit protocol: its steps, and the protected B
/// they run on.
pub(crate) struct SolveOnFactors<S: SolveSteps> {
    pub rhs: ProtectedRhs,
    pub steps: S,
    /// The factors' shape (for [`SolveCall`]).
    pub factors: MatrixShape,
}

impl<S: SolveSteps> Algorithm for SolveOnFactors<S> {
    type Error = Error;
    type Scratch = S::Scratch;
    /// Nothing is replicated besides the committed step count.
    type State = ();
    type Check = ChecksumCheck;
    type Call = SolveCall;
    const OP: &'static str = S::OP;
    const STEP_PHASES: &'static [Phase] = S::STEP_PHASES;

    fn steps(&self) -> u64 {
        self.steps.steps()
    }

    fn state(&self) -> &() {
        &()
    }

    fn set_state(&mut self, _state: ()) {}

    fn encode(&mut self, grid: &Grid) -> Result<()> {
        self.rhs.encode(grid)
    }

    fn exchange(&mut self, grid: &Grid, k: u64, clock: &mut PhaseClock) -> Result<S::Scratch> {
        self.steps.exchange(self.rhs.matrix(), grid, k, clock)
    }

    fn commit(&mut self, grid: &Grid, k: u64, scratch: S::Scratch) {
        self.steps.commit(self.rhs.matrix_mut(), grid, k, scratch)
    }

    /// Phase 1 wrote scratch only: nothing to restore.
    fn abort(&mut self, _k: u64) {}

    fn rebuild(&mut self, grid: &Grid, _committed: u64, lost: &[i32]) -> Result<()> {
        self.rhs.rebuild(grid, lost)
    }

    fn verify(&self, grid: &Grid, _committed: u64) -> Result<ChecksumCheck> {
        self.rhs.verify(grid)
    }

    fn call(&self) -> SolveCall {
        SolveCall { factors: self.factors, rhs: self.rhs.shape() }
    }

    fn saved_arrays(&mut self) -> Vec<&mut [f64]> {
        self.rhs.saved_arrays()
    }
}
