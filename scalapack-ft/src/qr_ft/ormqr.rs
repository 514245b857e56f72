//! `pdormqr_ft`: Q or Qᵀ from protected QR factors applied to protected
//! right-hand sides, on the step-commit protocol.

use super::protected::{ProtectedQr, QrFactors};
use super::solve_args::check_rhs;
use crate::abft::{run_solve, FtOptions, FtReport, FtWorkspace, ProtectedRhs, SolveArgs, SolveSteps};
use crate::args::pdormqr::{A, DESCC};
use crate::blas::Trans;
use crate::error::Result;
use crate::matrix::DistMatrix;
use crate::qr::reflectors::Panel;
use crate::qr::{apply_reduced_w, panels_in_order, reduced_w, share_panel};
use blacs_ft::Grid;
use recovery::protocol::{Phase, PhaseClock};
use recovery::Region;
use std::cell::RefCell;
use std::ops::Range;
use std::rc::Rc;

/// The phases of a step before its commit, in order: the panel's
/// reflectors (V and T, formed from the stored factors) broadcast along
/// the process rows, and the reduction of the update's W = Vᵀ·B down the
/// process columns.
pub const ORMQR_PHASES: &[Phase] = crate::drivers::PDORMQR_FT.step_phases;

const ARGS: SolveArgs = SolveArgs {
    routine: crate::drivers::PDORMQR_FT.routine,
    factors_position: A,
    factors_name: "A",
    b_desc_position: DESCC,
    b_name: "C",
};

/// Fault-tolerant `C = op(Q)·C`, Q = H(0)·H(1)···H(k−1) with
/// K = min(M, N) reflectors of protected QR factors (ScaLAPACK `PDORMQR`
/// with SIDE = 'L' and K = min(M, N)).
///
/// * `region` (global): the resilient region of the factors.
/// * `trans` (global): [`Trans::No`] applies Q, [`Trans::Yes`] applies Qᵀ.
/// * `factors` (global): from [`QrFactors::factor`]; read only.
/// * `c` (local input/output): M×NRHS with the factors' row distribution
///   (M, MB_C = MB_A, RSRC, as PDORMQR), its columns in any blocks (any
///   NB_C), the first on process column 0 (CSRC_C = 0: the one
///   restriction beyond PDORMQR, since C gets checksum columns of its
///   own). On exit op(Q)·C.
///
/// # Errors
/// Agreed on every process: argument errors at PDORMQR's positions (C's
/// descriptor is argument 14: MB_C ≠ MB_A is INFO = -1405, CSRC_C ≠ 0
/// -1408); [`crate::Error::InputLost`] (argument 6) when the factors are
/// not whole on some process; [`crate::Error::Memory`] for the protected
/// C; a process failure before C's checksums exist (repair, and call
/// again, as [`super::pdgeqrf_ft`]).
///
/// # Fault tolerance
/// C is copied into an extended matrix with checksum columns C·W in the
/// factors' layout (the solves' one runner, [`crate::abft`]; its memory is
/// [`super::pdgels_ft_memory`]'s `rhs`); every step applies one panel's
/// block reflector `I − V·op(T)·Vᵀ` to C's columns and the checksum
/// columns over them (the zero padding stays zero and is skipped), so the
/// checksums stay those of the transformed C. Phase 1 of
/// step s (kill points `R@ormqr:s:bcast`, `R@ormqr:s:update`; and
/// `R@ormqr:0:args`, `R@ormqr:0:encode` before the steps) writes scratch
/// only; the commit (`R@ormqr:s:commit`) applies it. A process lost in any
/// phase is replaced (spawn or spare), the factors' blocks are rebuilt by
/// the region and C's from its checksums at the last commit, and the
/// steps go on: the result is the failure-free one. The factors are never
/// written. A call completed before a replacement joined returns at once
/// with C marked lost on it ([`DistMatrix::is_lost`]). Under
/// checkpoint-on-failure the survivors save C at the committed step; the
/// job started again makes its calls again, the factorization included,
/// and the interrupted call resumes from the checkpoints with those
/// factors. Under the recovery policy `shrink` a loss that no spare takes
/// moves the factors and C onto the survivors' smaller grid, C coming
/// back distributed there (see [`crate::lu_ft::pdgetrs_ft`]).
pub fn pdormqr_ft(
    region: &mut Region,
    trans: Trans,
    factors: &QrFactors,
    c: &mut DistMatrix,
    opts: &FtOptions,
) -> Result<FtReport> {
    let check = check_rhs(region.grid(), ARGS, factors, c);
    let make_steps = |rhs: &ProtectedRhs| OrmqrSteps::new(factors, trans, rhs);
    run_solve(region, ARGS, factors.shared(), c, check, make_steps, opts, &mut FtWorkspace::new())
}

/// Q's or Qᵀ's panels, one per step.
pub(crate) struct OrmqrSteps {
    /// Borrowed only inside a step: the region's mend borrows them after
    /// a repair.
    factors: Rc<RefCell<ProtectedQr>>,
    trans: Trans,
    panels: Vec<(usize, usize)>,
    /// The local columns of B's extended matrix the steps work on
    /// ([`ProtectedRhs::live_columns`]).
    cols: Vec<Range<usize>>,
}

impl OrmqrSteps {
    /// The steps of op(Q) with min(M, N) reflectors of `factors` on `rhs`.
    pub fn new(factors: &QrFactors, trans: Trans, rhs: &ProtectedRhs) -> OrmqrSteps {
        let k = factors.m().min(factors.n());
        OrmqrSteps {
            factors: factors.shared().clone(),
            trans,
            panels: panels_in_order(k, factors.nb(), trans),
            cols: rhs.live_columns().local,
        }
    }
}

impl SolveSteps for OrmqrSteps {
    /// The panel's reflectors and its W (reduced).
    type Scratch = (Panel, Vec<f64>);
    const OP: &'static str = crate::drivers::PDORMQR_FT.kill_op;
    const STEP_PHASES: &'static [Phase] = ORMQR_PHASES;

    fn steps(&self) -> u64 {
        self.panels.len() as u64
    }

    fn exchange(&mut self, b: &DistMatrix, grid: &Grid, k: u64, clock: &mut PhaseClock) -> Result<Self::Scratch> {
        let (j0, jb) = self.panels[k as usize];
        clock.enter(grid, Phase::Bcast);
        let f = self.factors.borrow();
        let panel = share_panel(grid, &f.ext.matrix, &f.state, j0, jb)?;
        clock.enter(grid, Phase::Update);
        let w = reduced_w(grid, &panel, b, &self.cols)?;
        Ok((panel, w))
    }

    fn commit(&mut self, b: &mut DistMatrix, _grid: &Grid, _k: u64, (panel, mut w): Self::Scratch) {
        apply_reduced_w(&panel, self.trans, b, &self.cols, &mut w);
    }
}
