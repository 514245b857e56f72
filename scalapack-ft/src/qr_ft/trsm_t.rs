//! The steps of the solve with Rᵀ on protected factors (the minimum-norm
//! part of `pdgels_ft`, R from the QR of Aᵀ).

use super::protected::{ProtectedQr, QrFactors};
use crate::abft::{ProtectedRhs, SolveSteps};
use crate::error::Result;
use crate::matrix::DistMatrix;
use crate::qr::{rt_blocks_in_order, RBlockRow};
use blacs_ft::Grid;
use recovery::protocol::{Phase, PhaseClock};
use std::cell::RefCell;
use std::ops::Range;
use std::rc::Rc;

/// Rᵀ·Y = B(0..n) by forward substitution: R's diagonal blocks, first to
/// last, one per step. Phase 1: R's block row to every process
/// (`bcast`), the diagonal block's Y_k down the process columns
/// (`update`); the commit writes Y_k and updates the rows below it.
pub(crate) struct TransposedTrsmSteps {
    /// Borrowed only inside a step: the region's mend borrows them after
    /// a repair.
    factors: Rc<RefCell<ProtectedQr>>,
    /// R's order (the factors' N).
    n: usize,
    blocks: Vec<(usize, usize)>,
    /// The local columns of B's extended matrix the steps work on
    /// ([`ProtectedRhs::live_columns`]).
    cols: Vec<Range<usize>>,
}

impl TransposedTrsmSteps {
    /// The forward substitution with the N×N R of `factors` (M ≥ N) on
    /// `rhs`.
    pub fn new(factors: &QrFactors, rhs: &ProtectedRhs) -> TransposedTrsmSteps {
        let n = factors.n().min(factors.m());
        TransposedTrsmSteps {
            factors: factors.shared().clone(),
            n,
            blocks: rt_blocks_in_order(n, factors.nb()),
            cols: rhs.live_columns().local,
        }
    }
}

impl SolveSteps for TransposedTrsmSteps {
    /// R's block row and the diagonal block's solution.
    type Scratch = (RBlockRow, Vec<f64>);
    const OP: &'static str = crate::drivers::UPPER_SOLVE_FT.kill_op;
    const STEP_PHASES: &'static [Phase] = super::TRSM_PHASES;

    fn steps(&self) -> u64 {
        self.blocks.len() as u64
    }

    fn exchange(&mut self, b: &DistMatrix, grid: &Grid, k: u64, clock: &mut PhaseClock) -> Result<Self::Scratch> {
        let (k0, kb) = self.blocks[k as usize];
        clock.enter(grid, Phase::Bcast);
        let f = self.factors.borrow();
        let r = RBlockRow::share(grid, &f.ext.matrix, self.n, k0, kb)?;
        clock.enter(grid, Phase::Update);
        let yk = r.solve_diagonal(grid, b, &self.cols)?;
        Ok((r, yk))
    }

    fn commit(&mut self, b: &mut DistMatrix, _grid: &Grid, _k: u64, (r, yk): Self::Scratch) {
        r.apply(&yk, b, &self.cols);
    }
}
