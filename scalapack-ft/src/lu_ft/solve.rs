//! The `pdgetrs_ft` driver: [`crate::lu::pdgetrs`]'s steps (the same
//! per-block functions) on the step-commit protocol, over protected LU
//! factors and a protected B ([`crate::abft::SolveOnFactors`]).

use super::protected::{LuFactors, ProtectedLu};
use crate::abft::{run_solve, FtOptions, FtReport, FtWorkspace, ProtectedRhs, SolveArgs, SolveSteps};
use crate::args::pdgetrs::{A, DESCB};
use crate::error::Result;
use crate::lu::solve::{check_args, factor_panel, pivot_swaps, BlockStep, Sweep};
use crate::lu::swap::{exchange_rows, RowExchange};
use crate::lu::Transpose;
use crate::matrix::DistMatrix;
use blacs_ft::Grid;
use recovery::protocol::{Phase, PhaseClock};
use recovery::Region;
use std::cell::RefCell;
use std::ops::Range;
use std::rc::Rc;

const ROUTINE: &str = crate::drivers::PDGETRS_FT.routine;

/// Where its arguments are (the errors call the factors "the LU factors").
const ARGS: SolveArgs = SolveArgs {
    routine: ROUTINE,
    factors_position: A,
    factors_name: "the LU factors",
    b_desc_position: DESCB,
    b_name: "B",
};

/// The phases of a step before its commit, in the order a step meets
/// them: `swap` (the step of the row interchanges: the rows they move
/// between process rows, received into scratch), and for every block step
/// of the triangular solves `bcast` (the factors' panel: a block column of
/// L or U along the process rows, or for `Trans` a block row of U or L to
/// every process) then `update` (the diagonal process row solves B's block
/// row on a copy, sent down the process columns).
pub const GETRS_STEP_PHASES: &[Phase] = crate::drivers::PDGETRS_FT.step_phases;

/// Fault-tolerant solve with protected LU factors: `A·X = B` or
/// `Aᵀ·X = B` with the factorization `P·A = L·U` of
/// [`LuFactors::factor`] (ScaLAPACK `PDGETRS` with `IA = JA = IB = JB = 1`,
/// `N = N_A`, `NRHS = N_B`), the same X as [`crate::lu::pdgetrs`] with the
/// same factors.
///
/// * `region` (global): the resilient region holding the grid and the
///   status log (the solve records its committed steps there);
/// * `trans` (global): which system;
/// * `factors` (local input): the protected factors of an N×N matrix;
///   read only (their checksums stay valid);
/// * `b` (local input/output): on entry the N×NRHS right-hand sides, on
///   exit the solution X. Its rows are distributed like A's (`MB_B =
///   NB_A`, `RSRC_B = RSRC_A`, as `PDGETRS`); its columns in any blocks
///   (any `NB_B`), and, the one restriction beyond `PDGETRS`, the first
///   on process column 0 (`CSRC_B = 0`): B is protected by checksum
///   columns of its own (see below);
/// * `opts` (global): `verify` checks B's checksum relations at the end.
///
/// # Errors
/// Agreed on every process: the argument errors of
/// [`crate::lu::pdgetrs`] (ScaLAPACK's positions: `MB_B ≠ NB_A` is 12,
/// `NB_`, INFO = -1206), plus `CSRC_B ≠ 0` (12, `CSRC_`; INFO = -1208);
/// [`crate::Error::InputLost`] (A, position 4) when the factors are not
/// whole on some process (they could not be rebuilt after a repair, see
/// [`LuFactors`]), and nothing is computed;
/// [`crate::Error::Memory`] for the protected B.
///
/// # Fault tolerance
/// The solve runs on the step-commit protocol (operation `getrs` in kill
/// points `R@getrs:STEP:PHASE`). For `TRANS = N`, step 0 applies the row
/// interchanges (phase `swap`), steps 1…NBLK are the block steps of
/// L⁻¹ and steps NBLK+1…2·NBLK those of U⁻¹, last block first (phases
/// `bcast`, `update`); for `TRANS = T`, steps 0…2·NBLK−1 are the block
/// steps of U⁻ᵀ then L⁻ᵀ and step 2·NBLK the interchanges, backwards
/// (NBLK = ⌈N/NB⌉). Every step's phase 1 writes scratch only and its
/// commit is local (the block row written, the DGEMM on the rows still
/// to solve), so a process lost in any phase leaves every survivor at the
/// last committed step. Also `args` (the verdicts) and `encode` at step 0,
/// and `commit` at any step.
///
/// During the call B lives in an extended matrix [B | padding |
/// checksums] with checksums in the factors' layout (reverse-neighboring:
/// C_g, the sum of each group of Q block columns of B, twice, on two
/// process columns; rotating: f weighted sums per group of Q − f; B's
/// columns in blocks of min(NB_B, NRHS)), set up and
/// run by the solves' one runner ([`crate::abft`]). The steps are
/// left-side operations on B's columns and on the checksum columns over
/// them; the padding is zero and stays zero, so they skip it, and the
/// checksums stay valid at every commit. Memory per process, held for
/// the call: its rows of the extended matrix, 3·NRHS columns over the
/// grid for NRHS ≤ NB_B on the reverse-neighboring layout (B and its
/// checksum pair; (1 + f)·NRHS on the rotating one), plus unused
/// left-factor sums (local rows × the block) per group whose pair it
/// holds ([`crate::abft`]'s `ProtectedRhs`); B's own storage is used
/// when it has room ([`FtWorkspace::in_place`]). Work: the steps update
/// about 3·NRHS columns over the grid where `pdgetrs` updates NRHS (the
/// report's `overhead_model` is the checksum columns / NRHS). The
/// factors' checksums are the ones [`LuFactors`] keeps.
///
/// After a repair the region first rebuilds the replacement's part of the
/// factors from their checksums, then the solve rebuilds its part of B
/// at the committed step and goes on; the replacement calls `pdgetrs_ft`
/// with a B of the same shape (its content is rebuilt) and ends with its
/// part of X. A loss before B's checksums exist (the verdicts, the
/// encoding) returns a process failure on every survivor, B holding its
/// input: repair and call again (see [`Region::run`]). A loss between the
/// factorization and the solve is met at the solve's verdict, the same
/// way; the call made again finds the factors mended. More losses in one
/// process row than the factors' checksums rebuild (one; F on the
/// rotating layout) are [`blacs_ft::Error::Unrecoverable`] during the solve,
/// and between calls make the factors lost ([`crate::Error::InputLost`]
/// at the next solve). Under checkpoint-on-failure the survivors save B
/// at the committed step; the job started again makes its calls again,
/// the factorization included, and the interrupted solve resumes from the
/// checkpoints with those factors. On a replacement, a solve that
/// completed before it joined returns at once and marks `b` lost
/// ([`DistMatrix::is_lost`]): its part of X went with the process it
/// replaces.
///
/// Under the recovery policy `shrink` (or `auto`, once a spawn is
/// refused) a loss during the solve that no hot spare takes is recovered
/// on a smaller grid: the factors move first, then B, each rebuilt from
/// its checksums onto a survivor of the lost process's row and sent to
/// its owners on the new grid; `b` comes back on that grid with X
/// (docs/fault-tolerance.md, "Shrink"). A loss between the factorization
/// and the solve needs a spare (B, given at the call, is not protected
/// yet).
pub fn pdgetrs_ft(
    region: &mut Region,
    trans: Transpose,
    factors: &LuFactors,
    b: &mut DistMatrix,
    opts: &FtOptions,
) -> Result<FtReport> {
    pdgetrs_ft_in(region, trans, factors, b, opts, &mut FtWorkspace::new())
}

/// [`pdgetrs_ft`] in caller-owned scratch: the protected B's extended
/// matrix lives in the workspace, or in B's own storage when it has room
/// for the checksum columns ([`FtWorkspace::in_place`] with B's shape).
pub fn pdgetrs_ft_in(
    region: &mut Region,
    trans: Transpose,
    factors: &LuFactors,
    b: &mut DistMatrix,
    opts: &FtOptions,
    work: &mut FtWorkspace,
) -> Result<FtReport> {
    let (n, nb, nrhs) = (factors.n(), factors.nb(), b.n());
    let check = {
        let f = factors.shared().borrow();
        check_args(ROUTINE, region.grid(), &f.ext.matrix, n, &f.state, b)
    };
    let make_steps = |rhs: &ProtectedRhs| GetrsSteps {
        factors: factors.shared().clone(),
        trans,
        n,
        nb,
        nsteps: if n == 0 || nrhs == 0 { 0 } else { 2 * n.div_ceil(nb) as u64 + 1 },
        cols: rhs.live_columns().local,
    };
    run_solve(region, ARGS, factors.shared(), b, check, make_steps, opts, work)
}

/// What step `k` of a solve is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GetrsStep {
    /// The row interchanges of the pivots.
    Interchange,
    /// Block step `i` of a sweep.
    Block(Sweep, usize),
}

/// The solve's own part of the protocol: its steps on B.
struct GetrsSteps {
    /// Borrowed only inside a step: the region's mend borrows them after
    /// a repair.
    factors: Rc<RefCell<ProtectedLu>>,
    trans: Transpose,
    /// The order and block size of the factors.
    n: usize,
    nb: usize,
    nsteps: u64,
    /// The local columns of B's extended matrix the steps work on
    /// ([`ProtectedRhs::live_columns`]).
    cols: Vec<Range<usize>>,
}

impl GetrsSteps {
    fn step(&self, k: u64) -> GetrsStep {
        let blocks = self.n.div_ceil(self.nb) as u64;
        let k = match self.trans {
            Transpose::NoTrans if k == 0 => return GetrsStep::Interchange,
            Transpose::NoTrans => k - 1,
            Transpose::Trans if k == 2 * blocks => return GetrsStep::Interchange,
            Transpose::Trans => k,
        };
        let [first, second] = Sweep::of(self.trans);
        if k < blocks {
            GetrsStep::Block(first, k as usize)
        } else {
            GetrsStep::Block(second, (k - blocks) as usize)
        }
    }
}

/// What phase 1 of a step hands to its commit.
enum GetrsScratch {
    Rows(RowExchange),
    Block(BlockStep),
}

impl SolveSteps for GetrsSteps {
    type Scratch = GetrsScratch;
    const OP: &'static str = crate::drivers::PDGETRS_FT.kill_op;
    const STEP_PHASES: &'static [Phase] = GETRS_STEP_PHASES;

    fn steps(&self) -> u64 {
        self.nsteps
    }

    fn exchange(&mut self, b: &DistMatrix, grid: &Grid, k: u64, clock: &mut PhaseClock) -> Result<GetrsScratch> {
        let f = self.factors.borrow();
        match self.step(k) {
            GetrsStep::Interchange => {
                clock.enter(grid, Phase::Swap);
                let swaps = pivot_swaps(&f.state, self.trans);
                drop(f);
                Ok(GetrsScratch::Rows(exchange_rows(grid, b, &swaps, self.cols.clone())?))
            }
            GetrsStep::Block(sweep, i) => {
                clock.enter(grid, Phase::Bcast);
                let panel = factor_panel(grid, sweep, &f.ext.matrix, self.n, sweep.block(self.n, self.nb, i))?;
                clock.enter(grid, Phase::Update);
                Ok(GetrsScratch::Block(panel.solve(grid, &f.ext.matrix, b, &self.cols)?))
            }
        }
    }

    fn commit(&mut self, b: &mut DistMatrix, _grid: &Grid, _k: u64, scratch: GetrsScratch) {
        match scratch {
            GetrsScratch::Rows(rows) => rows.apply(b),
            GetrsScratch::Block(step) => step.commit(b),
        }
    }
}
