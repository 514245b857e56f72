//! The `pdpotrs_ft` driver: the two triangular solves with the protected
//! Cholesky factor (`L·Y = B`, then `Lᵀ·X = Y`) on the step-commit
//! protocol, by the block steps of [`crate::lu::pdgetrs`]'s sweeps with
//! L's diagonal stored, over a protected B; and `pdposv_ft`.

use super::protected::CholFactors;
use crate::abft::{run_solve, FtOptions, FtReport, FtWorkspace, ProtectedFactors, ProtectedRhs, SolveArgs, SolveSteps};
use crate::args::pdpotrs::{A, DESCA, DESCB};
use crate::args::{check_grid, check_rhs_rows};
use crate::blas::Diag;
use crate::error::{check_not_lost, Result};
use crate::lu::solve::{factor_panel_of, BlockStep, Sweep};
use crate::matrix::DistMatrix;
use blacs_ft::Grid;
use recovery::protocol::{Phase, PhaseClock};
use recovery::Region;
use std::cell::RefCell;
use std::ops::Range;
use std::rc::Rc;

const ROUTINE: &str = crate::drivers::PDPOTRS_FT.routine;

/// Where its arguments are (PDPOTRS's positions).
const ARGS: SolveArgs = SolveArgs {
    routine: ROUTINE,
    factors_position: A,
    factors_name: "the Cholesky factor",
    b_desc_position: DESCB,
    b_name: "B",
};

/// The phases of a step before its commit: `bcast` (a block column of L
/// along the process rows, or a block row of it to every process for the
/// Lᵀ sweep), then `update` (the diagonal process row solves B's block row
/// on a copy, sent down the process columns).
pub const POTRS_STEP_PHASES: &[Phase] = crate::drivers::PDPOTRS_FT.step_phases;

/// Fault-tolerant solve with protected Cholesky factors: `A·X = B` with
/// `A = L·Lᵀ` from [`CholFactors::factor`] (ScaLAPACK `PDPOTRS` with
/// UPLO = L, `IA = JA = IB = JB = 1`, `N = N_A`, `NRHS = N_B`), the same X
/// as [`crate::chol::pdpotrs`] with the same factor.
///
/// * `region` (global): the resilient region holding the grid and the
///   status log;
/// * `factors` (local input): the protected factor of an N×N matrix; read
///   only (its checksums stay valid);
/// * `b` (local input/output): on entry the N×NRHS right-hand sides, on
///   exit X; rows distributed like A's (`MB_B = NB_A`, `RSRC_B =
///   RSRC_A`), columns in any blocks, the first on process column 0
///   (`CSRC_B = 0`: B is protected by checksum columns of its own);
/// * `opts` (global): `verify` checks B's checksum relations at the end.
///
/// # Errors
/// Agreed on every process: PDPOTRS's argument errors at its positions,
/// `CSRC_B ≠ 0` (11, `CSRC_`), [`crate::Error::InputLost`] (A, position 4)
/// when the factor is not whole on some process, nothing computed;
/// [`crate::Error::Memory`] for the protected B.
///
/// # Fault tolerance
/// As [`crate::lu_ft::pdgetrs_ft`], on the same runner: steps 0…NBLK−1
/// are the block steps of L⁻¹ (first block first) and NBLK…2·NBLK−1
/// those of L⁻ᵀ (last block first), NBLK = ⌈N/NB⌉, each with the phases
/// `bcast` and `update` (operation `potrs` in kill points
/// `R@potrs:STEP:PHASE`; also `args`, `encode` at step 0 and `commit` at
/// any step). B lives in an extended matrix with checksums in the
/// factor's layout; a process lost in any phase is rebuilt at the last
/// committed step (the factor by the region, then B by the solve), and
/// the result is the failure-free X.
pub fn pdpotrs_ft(
    region: &mut Region,
    factors: &CholFactors,
    b: &mut DistMatrix,
    opts: &FtOptions,
) -> Result<FtReport> {
    pdpotrs_ft_in(region, factors, b, opts, &mut FtWorkspace::new())
}

/// [`pdpotrs_ft`] in caller-owned scratch (see [`crate::lu_ft::pdgetrs_ft_in`]).
pub fn pdpotrs_ft_in(
    region: &mut Region,
    factors: &CholFactors,
    b: &mut DistMatrix,
    opts: &FtOptions,
    work: &mut FtWorkspace,
) -> Result<FtReport> {
    let (n, nb, nrhs) = (factors.n(), factors.nb(), b.n());
    let check = {
        let f = factors.shared().borrow();
        check_args(region.grid(), &f.ext.matrix, n, b)
    };
    let make_steps = |rhs: &ProtectedRhs| PotrsSteps {
        factors: factors.shared().clone(),
        n,
        nb,
        nsteps: if n == 0 || nrhs == 0 { 0 } else { 2 * n.div_ceil(nb) as u64 },
        cols: rhs.live_columns().local,
    };
    run_solve(region, ARGS, factors.shared(), b, check, make_steps, opts, work)
}

/// What [`pdposv_ft`] reports: the factorization's and the solve's
/// reports.
#[derive(Clone, Debug, Default)]
pub struct PosvReport {
    pub factor: FtReport,
    pub solve: FtReport,
}

/// Fault-tolerant `PDPOSV` (UPLO = L): factors `a` ([`CholFactors::factor`],
/// which takes it) and solves `A·X = B` with the protected factor
/// ([`pdpotrs_ft`]); returns the factors (still protected, for more
/// solves) and both reports.
///
/// # Errors
/// Those of both; B's argument errors ([`check_rhs`]) are agreed in the
/// factorization's verdict, before A is touched, as PDPOSV checks every
/// argument first. A matrix that is not positive definite is
/// [`crate::Error::MinorNotPositiveDefinite`], B then unchanged.
///
/// # Fault tolerance
/// Each call's own (see [`CholFactors`] and [`pdpotrs_ft`]), but the
/// factorization keeps its grid under the recovery policy `shrink` (B,
/// given with A, is not protected during it: a loss there needs a spare);
/// the solve may shrink it, `b` coming back on the new grid.
pub fn pdposv_ft(
    region: &mut Region,
    a: DistMatrix,
    b: &mut DistMatrix,
    opts: &FtOptions,
) -> Result<(CholFactors, PosvReport)> {
    // (PDPOSV's B is where PDPOTRS's is.)
    let rhs = check_rhs("pdposv_ft", DESCB, region.grid(), &a, b, opts.layout);
    // (B stays on the grid it was given on: the factorization does not
    // shrink it away.)
    let (factors, factor) = region.keeping_the_grid(|region| CholFactors::factor_checking(region, a, opts, rhs))?;
    let solve = pdpotrs_ft(region, &factors, b, opts)?;
    Ok((factors, PosvReport { factor, solve }))
}

/// Local: the checks [`pdpotrs_ft`] makes of B (`descb` its descriptor's
/// position in `routine`'s arguments) against the N×N `a` it will be
/// solved with, in checksum layout `kind`: B on the grid, N rows in A's
/// row blocks, a first block column on process column 0 and a shape that
/// carries the checksums. For a factorization followed by a solve
/// (PDPOSV), so that a bad B is refused before A is factored.
///
/// # Errors
/// [`crate::Error::Argument`] at B's descriptor entries, as `pdpotrs_ft`
/// gives them.
pub fn check_rhs(
    routine: &str,
    descb: u32,
    grid: &Grid,
    a: &DistMatrix,
    b: &DistMatrix,
    kind: crate::abft::LayoutKind,
) -> Result<()> {
    check_grid(grid, b, routine, descb, "B")?;
    check_rhs_rows(routine, descb, a.n(), a, b)?;
    ProtectedRhs::checked_layout(grid, b, routine, descb, "B", kind).map(drop)
}

/// The local argument checks of [`pdpotrs_ft`] (the factor's extended
/// matrix `a`, its order `n`).
fn check_args(grid: &Grid, a: &DistMatrix, n: usize, b: &DistMatrix) -> Result<()> {
    check_grid(grid, a, ROUTINE, DESCA, "A")?;
    check_grid(grid, b, ROUTINE, DESCB, "B")?;
    check_rhs_rows(ROUTINE, DESCB, n, a, b)?;
    check_not_lost(grid, ROUTINE, A, "A", a)
}

/// The solve's own part of the protocol: its steps on B.
struct PotrsSteps {
    /// Borrowed only inside a step: the region's mend borrows them after
    /// a repair.
    factors: Rc<RefCell<ProtectedFactors<()>>>,
    /// The order and block size of the factor.
    n: usize,
    nb: usize,
    nsteps: u64,
    /// The local columns of B's extended matrix the steps work on.
    cols: Vec<Range<usize>>,
}

impl SolveSteps for PotrsSteps {
    type Scratch = BlockStep;
    const OP: &'static str = crate::drivers::PDPOTRS_FT.kill_op;
    const STEP_PHASES: &'static [Phase] = POTRS_STEP_PHASES;

    fn steps(&self) -> u64 {
        self.nsteps
    }

    fn exchange(&mut self, b: &DistMatrix, grid: &Grid, k: u64, clock: &mut PhaseClock) -> Result<BlockStep> {
        let f = self.factors.borrow();
        let blocks = self.n.div_ceil(self.nb);
        let (sweep, i) = match k as usize {
            k if k < blocks => (Sweep::ForwardL, k),
            k => (Sweep::BackwardLt, k - blocks),
        };
        clock.enter(grid, Phase::Bcast);
        let block = sweep.block(self.n, self.nb, i);
        let panel = factor_panel_of(grid, (sweep, Diag::NonUnit), &f.ext.matrix, self.n, block)?;
        clock.enter(grid, Phase::Update);
        panel.solve(grid, &f.ext.matrix, b, &self.cols)
    }

    fn commit(&mut self, b: &mut DistMatrix, _grid: &Grid, _k: u64, step: BlockStep) {
        step.commit(b)
    }
}
