//! What the fault-tolerant solves share of the protocol's `Algorithm`:
//! the protected right-hand sides, and the encoding, rebuild, verification
//! and checkpoint arrays made of them, and the check at every step that
//! the factors are whole ([`SolveOnFactors`]); each solve supplies its
//! steps ([`SolveSteps`]), which read the protected factors and apply
//! left-side operations to B.

use super::extended::{Extended, Start};
use super::rhs::ProtectedRhs;
use super::shrink::{move_blocks, After, Before, RowVectors};
use super::solve_call::SolveArgs;
use super::{ChecksumCheck, FtWorkspace, MatrixShape, ProtectedFactors, Relations};
use crate::error::{Error, Result};
use crate::matrix::DistMatrix;
use blacs_ft::{Grid, ShrunkFrom};
use recovery::protocol::{Algorithm, Phase, PhaseClock};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::rc::Rc;

/// A solve's own part of a step.
///
/// Phase 1 ([`SolveSteps::exchange`]) reads B and the factors and writes
/// scratch only; the commit applies the scratch to B (B's live columns,
/// [`ProtectedRhs::live_columns`], checksums included) and runs no
/// collective. [`SolveOnFactors`] checks that the factors are whole
/// before each phase 1. The factors are read-only: their checksums stay
/// valid, and the region rebuilds them after a repair before the solve's
/// own rebuild of B.
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

/// A solve on the step-commit protocol: its steps, the protected B they
/// run on, and the protected factors they read (with state `F`).
pub(crate) struct SolveOnFactors<'a, S: SolveSteps, F> {
    pub rhs: ProtectedRhs,
    pub steps: S,
    /// The steps over a protected B (made again for B on the grid a
    /// shrink left: they hold its local columns).
    pub make_steps: &'a dyn Fn(&ProtectedRhs) -> S,
    /// After a shrink: B on the new grid, which the caller's takes the
    /// place of when the solve ends (the result copied there).
    pub moved: Option<DistMatrix>,
    /// The column block of the caller's B (global), which B on the new
    /// grid keeps.
    pub b_nb: usize,
    /// B and the steps on the grid before a shrink, until the new grid
    /// agreed that everything moved (see `Algorithm::settle_move`).
    /// (With B after an earlier shrink, if any.)
    pub before_shrink: Option<(ProtectedRhs, S, Option<DistMatrix>)>,
    /// Borrowed only inside a step: the region's mend borrows them after
    /// a repair.
    pub factors: Rc<RefCell<ProtectedFactors<F>>>,
    /// The factors' shape (for [`SolveCall`]).
    pub shape: MatrixShape,
    /// Where the factors are in the routine's arguments (for their
    /// refusal).
    pub args: SolveArgs,
}

impl<S: SolveSteps, F: 'static> Algorithm for SolveOnFactors<'_, S, F> {
    type Error = Error;
    type Scratch = S::Scratch;
    /// Nothing is replicated besides the committed step count.
    type State = ();
    type Check = ChecksumCheck;
    type Call = SolveCall;
    const OP: &'static str = S::OP;
    const STEP_PHASES: &'static [Phase] = S::STEP_PHASES;
    const MOVES: bool = true;

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

    /// Every step starts with [`ProtectedFactors::check_still_whole`]:
    /// factors the region could not rebuild after a repair during the
    /// solve are refused on every process, never read.
    fn exchange(&mut self, grid: &Grid, k: u64, clock: &mut PhaseClock) -> Result<S::Scratch> {
        let a = &self.args;
        self.factors.borrow().check_still_whole(grid, a.routine, a.factors_position, a.factors_name)?;
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

    /// B's checksums are in the factors' layout: both rebuild its `f`.
    fn tolerated_losses(&self) -> usize {
        self.rhs.layout.tolerated_losses()
    }

    fn call(&self) -> SolveCall {
        SolveCall { factors: self.shape, rhs: self.rhs.shape() }
    }

    fn saved_arrays(&mut self) -> Vec<&mut [f64]> {
        self.rhs.saved_arrays()
    }

    /// The factors moved first (the region's protected results); then B
    /// as a factorization's matrix at step 0 (every column of it rebuilt
    /// from its checksums), its checksums encoded on the new grid, the
    /// steps made again over it.
    fn move_to_shrunk_grid(
        &mut self,
        grid: &Grid,
        from: &ShrunkFrom,
        _committed: u64,
        holds_state: bool,
    ) -> Result<()> {
        let steps = (0, self.rhs.layout.tolerated_losses(), RowVectors::default());
        let routine = self.args.routine;
        if !grid.is_member() {
            let before = holds_state.then_some(Before { ext: &mut self.rhs.ext, layout: &self.rhs.layout, rows: &[] });
            return move_blocks(grid, from, before, None, steps, routine);
        }
        let (m, mb) = (self.rhs.ext.matrix.m(), self.rhs.ext.matrix.mb());
        let mut moved = DistMatrix::zeros(grid, m, self.rhs.layout.n(), mb, self.b_nb)?;
        let kind = self.rhs.layout.kind();
        let layout = ProtectedRhs::layout(grid, &moved, kind).map_err(super::layout_err)?;
        let mut ext =
            Extended::new(grid, &mut moved, &layout, &mut FtWorkspace::new(), Start::Join, Relations::Whole, routine)?;
        let before = holds_state.then_some(Before { ext: &mut self.rhs.ext, layout: &self.rhs.layout, rows: &[] });
        move_blocks(grid, from, before, Some(After { ext: &mut ext, rows: &mut [] }), steps, routine)?;
        let mut rhs = ProtectedRhs { ext, layout };
        rhs.encode(grid)?;
        let steps = (self.make_steps)(&rhs);
        // (Kept until the new grid agrees, see `settle_move`.)
        let earlier = self.moved.replace(moved);
        let before = (std::mem::replace(&mut self.rhs, rhs), std::mem::replace(&mut self.steps, steps), earlier);
        self.before_shrink = Some(before);
        Ok(())
    }

    fn settle_move(&mut self, kept: bool) {
        let Some((rhs, steps, earlier)) = self.before_shrink.take() else { return };
        if !kept {
            (self.rhs, self.steps, self.moved) = (rhs, steps, earlier);
        }
    }
}
