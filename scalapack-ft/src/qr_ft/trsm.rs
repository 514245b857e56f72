//! `upper_solve_ft`: the triangular solve with protected R on protected
//! right-hand sides, on the step-commit protocol.

use super::protected::{ProtectedQr, QrFactors};
use super::solve_args::check_rhs;
use crate::abft::{run_solve, FtOptions, FtReport, FtWorkspace, ProtectedRhs, SolveArgs, SolveSteps};
use crate::args::arg_error;
use crate::args::upper_solve::{A, B};
use crate::error::Result;
use crate::matrix::DistMatrix;
use crate::qr::{r_blocks_in_order, RBlockColumn};
use blacs_ft::Grid;
use recovery::protocol::{Phase, PhaseClock};
use recovery::Region;
use std::cell::RefCell;
use std::ops::Range;
use std::rc::Rc;

/// The phases of a step before its commit, in order: R's block column
/// broadcast along the process rows, and the diagonal block's solution
/// X_k broadcast down the process columns.
pub const TRSM_PHASES: &[Phase] = crate::drivers::UPPER_SOLVE_FT.step_phases;

const ARGS: SolveArgs = SolveArgs {
    routine: crate::drivers::UPPER_SOLVE_FT.routine,
    factors_position: A,
    factors_name: "A",
    b_desc_position: B,
    b_name: "B",
};

/// Fault-tolerant `R·X = B(0..N, :)` in place, R the N×N upper triangle
/// of protected QR factors (ScaLAPACK `PDTRSM` with SIDE = 'L',
/// UPLO = 'U', TRANS = 'N', DIAG = 'N', ALPHA = 1; the fault-tolerant
/// [`crate::qr::upper_solve`], whose argument positions it takes).
///
/// * `region` (global): the resilient region of the factors.
/// * `factors` (global): from [`QrFactors::factor`] with M ≥ N; read only.
/// * `b` (local input/output): M×NRHS with the factors' row distribution
///   (M, MB_B = MB_A, RSRC), its columns in any blocks (any NB_B), the
///   first on process column 0 (CSRC_B = 0: the one restriction beyond
///   PDTRSM, since B gets checksum columns of its own). On exit rows 0..N
///   hold X; rows N..M are unchanged.
///
/// # Errors
/// Agreed on every process: argument errors (B is argument 4; M < N is
/// argument 2); [`crate::Error::InputLost`] (argument 2) when the factors
/// are not whole on some process; [`crate::Error::Memory`] for the
/// protected B; a process failure before B's checksums exist (repair,
/// and call again).
///
/// # Fault tolerance
/// As [`super::pdormqr_ft`]: B carries checksum columns, every step runs
/// over B's columns and the checksum columns over them (a left triangular
/// solve keeps a right-side encoding valid), phase 1 writes scratch only. Step s solves block row
/// `nblocks − 1 − s` (back substitution); its kill points are
/// `R@trsm:s:bcast` (R's block column along the process rows),
/// `R@trsm:s:update` (X_k down the process columns) and `R@trsm:s:commit`,
/// with `R@trsm:0:args` and `R@trsm:0:encode` before the steps.
pub fn upper_solve_ft(
    region: &mut Region,
    factors: &QrFactors,
    b: &mut DistMatrix,
    opts: &FtOptions,
) -> Result<FtReport> {
    let check =
        check_overdetermined(ARGS.routine, A, factors).and_then(|()| check_rhs(region.grid(), ARGS, factors, b));
    let make_steps = |rhs: &ProtectedRhs| TrsmSteps::new(factors, rhs);
    run_solve(region, ARGS, factors.shared(), b, check, make_steps, opts, &mut FtWorkspace::new())
}

/// Local: R is the N×N upper triangle of the factors only for M ≥ N.
fn check_overdetermined(routine: &str, position: u32, factors: &QrFactors) -> Result<()> {
    let (m, n) = (factors.m(), factors.n());
    if m < n {
        return Err(arg_error(
            routine,
            position,
            0,
            "A",
            format!("must have M ≥ N (R is the N×N upper triangle of the factors), got M = {m}, N = {n}"),
        ));
    }
    Ok(())
}

/// R's diagonal blocks, last to first, one per step.
pub(crate) struct TrsmSteps {
    /// Borrowed only inside a step: the region's mend borrows them after
    /// a repair.
    factors: Rc<RefCell<ProtectedQr>>,
    blocks: Vec<(usize, usize)>,
    /// The local columns of B's extended matrix the steps work on
    /// ([`ProtectedRhs::live_columns`]).
    cols: Vec<Range<usize>>,
}

impl TrsmSteps {
    /// The back substitution with the N×N R of `factors` on `rhs`.
    pub fn new(factors: &QrFactors, rhs: &ProtectedRhs) -> TrsmSteps {
        TrsmSteps {
            factors: factors.shared().clone(),
            blocks: r_blocks_in_order(factors.n().min(factors.m()), factors.nb()),
            cols: rhs.live_columns().local,
        }
    }
}

impl SolveSteps for TrsmSteps {
    /// R's block column and the diagonal block's solution.
    type Scratch = (RBlockColumn, Vec<f64>);
    const OP: &'static str = crate::drivers::UPPER_SOLVE_FT.kill_op;
    const STEP_PHASES: &'static [Phase] = TRSM_PHASES;

    fn steps(&self) -> u64 {
        self.blocks.len() as u64
    }

    fn exchange(&mut self, b: &DistMatrix, grid: &Grid, k: u64, clock: &mut PhaseClock) -> Result<Self::Scratch> {
        let (k0, kb) = self.blocks[k as usize];
        clock.enter(grid, Phase::Bcast);
        let f = self.factors.borrow();
        let r = RBlockColumn::share(grid, &f.ext.matrix, k0, kb)?;
        clock.enter(grid, Phase::Update);
        let xk = r.solve_diagonal(grid, b, &self.cols)?;
        Ok((r, xk))
    }

    fn commit(&mut self, b: &mut DistMatrix, _grid: &Grid, _k: u64, (r, xk): Self::Scratch) {
        r.apply(&xk, b, &self.cols);
    }
}
