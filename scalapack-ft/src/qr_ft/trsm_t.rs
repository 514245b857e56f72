//! The steps of the solve with Rᵀ on protected factors (the minimum-norm
//! part of `pdgels_ft`, R from the QR of Aᵀ).

use super::protected::{ProtectedQr, QrFactors};
use crate::abft::{FactorsWhole, SolveArgs, SolveSteps};
use crate::error::Result;
use crate::matrix::DistMatrix;
use crate::qr::{rt_blocks_in_order, RBlockRow};
use blacs_ft::Grid;
use recovery::protocol::{Phase, PhaseClock};
use std::cell::RefCell;
use std::rc::Rc;

/// Rᵀ·Y = B(0..n) by forward substitution: R's diagonal blocks, first to
/// last, one per step. Phase 1: R's block row to every process
/// (`bcast`), the diagonal block's Y_k down the process columns
/// (`update`); the commit writes Y_k and updates the rows below it.
pub(crate) struct TransposedTrsmSteps {
    factors: Rc<RefCell<ProtectedQr>>,
    /// R's order (the factors' N).
    n: usize,
    blocks: Vec<(usize, usize)>,
    whole: FactorsWhole,
    args: SolveArgs,
}

impl TransposedTrsmSteps {
    /// The forward substitution with the N×N R of `factors` (M ≥ N).
    pub fn new(factors: &QrFactors, args: SolveArgs) -> TransposedTrsmSteps {
        let n = factors.n().min(factors.m());
        TransposedTrsmSteps {
            factors: factors.shared().clone(),
            n,
            blocks: rt_blocks_in_order(n, factors.nb()),
            whole: FactorsWhole::default(),
            args,
        }
    }
}

impl SolveSteps for TransposedTrsmSteps {
    /// R's block row and the diagonal block's solution.
    type Scratch = (RBlockRow, Vec<f64>);
    const OP: &'static str = "trsm";
    const STEP_PHASES: &'static [Phase] = super::TRSM_PHASES;

    fn steps(&self) -> u64 {
        self.blocks.len() as u64
    }

    fn exchange(&mut self, b: &DistMatrix, grid: &Grid, k: u64, clock: &mut PhaseClock) -> Result<Self::Scratch> {
        let (k0, kb) = self.blocks[k as usize];
        clock.enter(grid, Phase::Bcast);
        let f = self.factors.borrow();
        self.whole.before_step(grid, &f, k, self.args)?;
        let r = RBlockRow::share(grid, &f.ext.matrix, self.n, k0, kb)?;
        clock.enter(grid, Phase::Update);
        let yk = r.solve_diagonal(grid, b)?;
        Ok((r, yk))
    }

    fn commit(&mut self, b: &mut DistMatrix, _grid: &Grid, k: u64, (r, yk): Self::Scratch) {
        r.apply(&yk, b);
        self.whole.committed(k);
    }
}
