//! `pdgels_ft`: fault-tolerant least squares through protected QR
//! factors: the factorization (of A, or of Aᵀ for the minimum-norm
//! problem), then its two solve parts as one protected solve.

use super::factor::ROUTINE as FACTOR_ROUTINE;
use super::ormqr::OrmqrSteps;
use super::protected::QrFactors;
use super::solve_args::check_rhs;
use super::trsm::TrsmSteps;
use super::trsm_t::TransposedTrsmSteps;
use crate::abft::{run_solve, FtOptions, FtReport, FtWorkspace, LayoutKind, ProtectedRhs, SolveArgs, SolveSteps};
use crate::args::pdgels::{A, DESCB};
use crate::blas::Trans;
use crate::error::Result;
use crate::matrix::DistMatrix;
use crate::qr::reflectors::Panel;
use crate::qr::{check_minimum_norm, transpose, zero_rows, RBlockColumn, RBlockRow};
use blacs_ft::Grid;
use recovery::protocol::{Phase, PhaseClock};
use recovery::Region;
use std::time::{Duration, Instant};

/// The phases of a step before its commit (the same in both parts: see
/// [`pdgels_ft`]).
pub const GELS_PHASES: &[Phase] = crate::drivers::PDGELS_FT.step_phases;

const ARGS: SolveArgs = SolveArgs {
    routine: crate::drivers::PDGELS_FT.routine,
    factors_position: A,
    factors_name: "A",
    b_desc_position: DESCB,
    b_name: "B",
};

/// What [`pdgels_ft`] did besides solving: its two calls' reports.
#[derive(Clone, Debug, Default)]
pub struct GelsReport {
    /// The factorization's ([`QrFactors::factor`]).
    pub factor: FtReport,
    /// The solve's (Qᵀ·B and R·X, or Rᵀ·Y and Q·[Y; 0], as one protected
    /// call).
    pub solve: FtReport,
    /// How long the solve took on this process, from its start to its
    /// end (its verdict, B's protected copy and checksums, its steps and
    /// any recovery in them), against the same part of plain `pdgels`
    /// ([`crate::qr::pdgels_timed`]).
    pub solve_time: Duration,
}

/// Fault-tolerant least squares of a full-rank M×N A (ScaLAPACK
/// `PDGELS` with TRANS = 'N'), the factors kept protected: for M ≥ N, X
/// minimising ‖A·X − B‖₂ through the QR of A; for M < N, the
/// minimum-norm solution of A·X = B through the QR of Aᵀ
/// (X = Q·[R⁻ᵀ·B; 0], where PDGELS uses the LQ of A: the same X).
///
/// * `region` (global): the resilient region.
/// * `a` (local input): M×N, square blocks (MB = NB), first block on
///   process (0, 0), Q ≥ 2; taken by the factorization
///   ([`QrFactors::factor`]), whose protected factors are returned: of A
///   for M ≥ N (R and V, as PDGELS leaves them in A); of Aᵀ for M < N
///   (the transpose of PDGELS's LQ form, as [`QrFactors::to_matrix`]
///   shows it).
/// * `b` (local input/output): max(M, N)×NRHS with A's row distribution
///   (MB_B = MB_A, RSRC, as PDGELS), its columns in any blocks (any
///   NB_B), the first on process column 0 (CSRC_B = 0: the one
///   restriction beyond PDGELS, since B gets checksum columns of its
///   own). For M ≥ N: on exit rows 0..N hold X and rows N..M the
///   components of the residual (‖B(N..M, j)‖₂ is column j's residual
///   norm). For M < N: B in rows 0..M on entry (rows M..N are not read);
///   on exit X in rows 0..N.
///
/// [`pdgels_ft_memory`] is the workspace query (PDGELS's LWORK = −1).
///
/// # Errors
/// Agreed on every process: argument errors at PDGELS's positions (A's
/// descriptor is 8, B's 12: for M < N, B's M must be N; MB_B ≠ MB_A is
/// INFO = -1205, CSRC_B ≠ 0 -1208), those of [`QrFactors::factor`],
/// [`crate::Error::Memory`] for the protected B, and a process failure
/// before a part's checksums exist (repair, and call again).
///
/// # Fault tolerance
/// Two calls of the region's log: the factorization (kill points
/// `R@qr:…`, see [`super::pdgeqrf_ft`]), then one protected solve on the
/// factors over B with checksum columns (kill points `R@gels:…`). For
/// M ≥ N its steps 0..P−1 apply the P panels of Qᵀ (as
/// [`super::pdormqr_ft`]: phases `bcast` — V and T along the process rows
/// — and `update` — the reduction of Vᵀ·B), steps P..P+T−1 the T block
/// rows of the back substitution with R (as [`super::upper_solve_ft`]:
/// `bcast` — R's block column — and `update` — X_k down the process
/// columns). For M < N its steps 0..T−1 are the forward substitution with
/// Rᵀ (`bcast` — R's block row to every process — and `update` — Y_k down
/// the process columns; the last commit also zeroes rows M..N), steps
/// T..T+P−1 apply Q's panels, last first. Each step ends with `commit`;
/// `args` and `encode` come before step 0. B stays protected from the
/// first part to the second. The transpose of A (M < N) runs before the
/// factorization, unprotected: a process lost in it is a process failure
/// that [`Region::run`] repairs before running the body again. A process
/// lost between the factorization and the solve (or during the solve) is
/// rebuilt from the factors' checksums when the solve starts (or in its
/// recovery); the result is the failure-free one. On a replacement, a
/// call completed before it joined returns at once, its hollow factors
/// filled by the region's next mend and B marked lost
/// ([`DistMatrix::is_lost`]). Under checkpoint-on-failure the job started
/// again runs the program again: the factorization (or the solve, with
/// the factors made again) resumes from the checkpoints of the call that
/// was interrupted. Under the recovery policy `shrink` the factorization
/// keeps its grid (B, given with A, is not protected during it: a loss
/// there needs a spare), and the solve may shrink it, `b` coming back on
/// the new grid with the factors (see [`super::pdormqr_ft`]).
pub fn pdgels_ft(
    region: &mut Region,
    a: DistMatrix,
    b: &mut DistMatrix,
    opts: &FtOptions,
) -> Result<(QrFactors, GelsReport)> {
    let (m, n) = (a.m(), a.n());
    let a = if m < n {
        // (Global values: the same verdict everywhere without
        // communicating.)
        check_minimum_norm(ARGS.routine, &a, b)?;
        transposed_for_the_factorization(region, &a)?
    } else {
        a
    };
    // (B stays on the grid it was given on: the factorization does not
    // shrink it away.)
    let (factors, factor) = region.keeping_the_grid(|region| QrFactors::factor(region, a, opts))?;
    let t = Instant::now();
    let check = check_rhs(region.grid(), ARGS, &factors, b);
    let make_steps = |rhs: &ProtectedRhs| {
        if m < n {
            GelsSteps::MinimumNorm {
                rt: TransposedTrsmSteps::new(&factors, rhs),
                q: OrmqrSteps::new(&factors, Trans::No, rhs),
                zero: m..n,
            }
        } else {
            GelsSteps::LeastSquares { qt: OrmqrSteps::new(&factors, Trans::Yes, rhs), r: TrsmSteps::new(&factors, rhs) }
        }
    };
    let solve = run_solve(region, ARGS, factors.shared(), b, check, make_steps, opts, &mut FtWorkspace::new())?;
    Ok((factors, GelsReport { factor, solve, solve_time: t.elapsed() }))
}

/// The memory one process needs for [`pdgels_ft`] (all global; the
/// largest over the grid's processes), in bytes: PDGELS's LWORK = −1
/// query in Rust's form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GelsMemory {
    /// The protected factors: A's local part extended with its checksum
    /// columns, and the left-factor sums (held while the factors live;
    /// A's own storage is part of it when it has room, see
    /// [`FtWorkspace::in_place`]).
    pub factors: u64,
    /// B's protected copy with its checksum columns, during the solve.
    pub rhs: u64,
    /// A step's scratch: one panel's V and T, and W (or R's block column
    /// and X_k).
    pub scratch: u64,
}

impl GelsMemory {
    /// The peak: everything at once.
    pub fn total(&self) -> u64 {
        self.factors + self.rhs + self.scratch
    }
}

/// The workspace query of [`pdgels_ft`] for an `m`×`n` A in `nb`×`nb`
/// blocks and `nrhs` right-hand sides in B's blocks of `nb` rows and
/// `nb_b` columns on a `p`×`q` grid, the factors' checksums in the layout
/// `kind` (all global); `None` for shapes that
/// cannot carry checksums (Q < 2, NB = 0). For M < N the factors are
/// Aᵀ's, and the scratch counts the transpose's messages (one A's local
/// part).
pub fn pdgels_ft_memory(
    m: usize,
    n: usize,
    nrhs: usize,
    nb: usize,
    nb_b: usize,
    p: usize,
    q: usize,
    kind: LayoutKind,
) -> Option<GelsMemory> {
    let (fm, fn_) = if m < n { (n, m) } else { (m, n) };
    let factors = FtWorkspace::bytes_per_process(fm, fn_, nb, p, q, kind)?;
    let rhs = ProtectedRhs::bytes_per_process(fm, nrhs, nb, nb_b, p, q, kind)?;
    let local = |rows: usize, cols: usize| {
        (blacs_ft::index::numroc(rows, nb, 0, 0, p) * blacs_ft::index::numroc(cols, nb, 0, 0, q)) as u64
    };
    let rows = blacs_ft::index::numroc(fm, nb, 0, 0, p) as u64;
    let rhs_cols = (rhs / 8) / rows.max(1);
    let nb64 = nb as u64;
    let transpose = if m < n { local(m, n) } else { 0 };
    let scratch = (rows * nb64 + nb64 * nb64 + nb64 * rhs_cols + transpose) * std::mem::size_of::<f64>() as u64;
    Some(GelsMemory { factors, rhs, scratch })
}

/// Collective unless the factorization is done or joined: Aᵀ for the
/// factorization of a minimum-norm problem. A replacement joining the
/// survivors' recovery, or a re-run whose factorization completed, makes
/// no collective here (the survivors are elsewhere, and the factorization
/// does not read its input then): it gets a matrix of Aᵀ's shape whose
/// content is never read.
fn transposed_for_the_factorization(region: &Region, a: &DistMatrix) -> Result<DistMatrix> {
    let grid = region.grid();
    if region.is_joining() || region.log().next_is_done(FACTOR_ROUTINE) {
        return DistMatrix::zeros(grid, a.n(), a.m(), a.nb(), a.nb());
    }
    transpose(grid, a)
}

/// The solve's steps: for M ≥ N, Qᵀ's panels then R's block rows (back
/// substitution); for M < N (factors of Aᵀ), Rᵀ's block rows (forward
/// substitution), rows M..N of B zeroed at its last commit, then Q's
/// panels.
enum GelsSteps {
    LeastSquares { qt: OrmqrSteps, r: TrsmSteps },
    MinimumNorm { rt: TransposedTrsmSteps, q: OrmqrSteps, zero: std::ops::Range<usize> },
}

/// A step's scratch: of a part with Q's panels, with R's block columns,
/// or with R's block rows.
enum GelsScratch {
    Reflect((Panel, Vec<f64>)),
    Solve((RBlockColumn, Vec<f64>)),
    SolveTransposed((RBlockRow, Vec<f64>)),
}

impl SolveSteps for GelsSteps {
    type Scratch = GelsScratch;
    const OP: &'static str = crate::drivers::PDGELS_FT.kill_op;
    const STEP_PHASES: &'static [Phase] = GELS_PHASES;

    fn steps(&self) -> u64 {
        match self {
            GelsSteps::LeastSquares { qt, r } => qt.steps() + r.steps(),
            GelsSteps::MinimumNorm { rt, q, .. } => rt.steps() + q.steps(),
        }
    }

    fn exchange(&mut self, b: &DistMatrix, grid: &Grid, k: u64, clock: &mut PhaseClock) -> Result<GelsScratch> {
        match self {
            GelsSteps::LeastSquares { qt, .. } if k < qt.steps() => {
                qt.exchange(b, grid, k, clock).map(GelsScratch::Reflect)
            }
            GelsSteps::LeastSquares { qt, r } => r.exchange(b, grid, k - qt.steps(), clock).map(GelsScratch::Solve),
            GelsSteps::MinimumNorm { rt, .. } if k < rt.steps() => {
                rt.exchange(b, grid, k, clock).map(GelsScratch::SolveTransposed)
            }
            GelsSteps::MinimumNorm { rt, q, .. } => {
                q.exchange(b, grid, k - rt.steps(), clock).map(GelsScratch::Reflect)
            }
        }
    }

    fn commit(&mut self, b: &mut DistMatrix, grid: &Grid, k: u64, scratch: GelsScratch) {
        // (Each part's exchange makes its own kind of scratch.)
        match scratch {
            GelsScratch::Reflect(s) => match self {
                GelsSteps::LeastSquares { qt, .. } => qt.commit(b, grid, k, s),
                GelsSteps::MinimumNorm { rt, q, .. } => q.commit(b, grid, k - rt.steps(), s),
            },
            GelsScratch::Solve(s) => {
                if let GelsSteps::LeastSquares { qt, r } = self {
                    r.commit(b, grid, k - qt.steps(), s);
                }
            }
            GelsScratch::SolveTransposed(s) => {
                if let GelsSteps::MinimumNorm { rt, zero, .. } = self {
                    rt.commit(b, grid, k, s);
                    if k + 1 == rt.steps() {
                        // [Y; 0]: a left-side projection, which the
                        // checksums survive.
                        zero_rows(b, zero.clone());
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RN: LayoutKind = LayoutKind::ReverseNeighbor;

    #[test]
    fn the_workspace_query_counts_the_factors_b_and_the_scratch() {
        let tall = pdgels_ft_memory(4096, 1024, 1, 64, 64, 2, 2, RN).unwrap();
        assert_eq!(Some(tall.factors), FtWorkspace::bytes_per_process(4096, 1024, 64, 2, 2, RN));
        // (B's one column and its checksum pair, three columns over the
        // grid, two on process column 0; 2048 rows on process row 0, in
        // columns of 2056 (`storage_lld`), and one column of left sums.)
        assert_eq!(tall.rhs, (2056 * 2 + 2048) * 8);
        assert!(tall.rhs < tall.factors && tall.scratch > 0);
        assert_eq!(tall.total(), tall.factors + tall.rhs + tall.scratch);
        // B's columns in blocks of min(NB_B, NRHS): any NB_B ≥ NRHS is the
        // same B; blocks of one column make four groups of two, each with
        // its pair of one-column checksums on both process columns: 7 + 8
        // columns, 8 on process column 0, and four columns of left sums.
        assert_eq!(
            pdgels_ft_memory(4096, 1024, 7, 64, 200, 2, 2, RN),
            pdgels_ft_memory(4096, 1024, 7, 64, 7, 2, 2, RN)
        );
        let narrow = pdgels_ft_memory(4096, 1024, 7, 64, 1, 2, 2, RN).unwrap();
        assert_eq!(narrow.rhs, (2056 * 8 + 2048 * 4) * 8);
        // M < N: Aᵀ's factors, and the transpose's messages on top.
        let wide = pdgels_ft_memory(1024, 4096, 1, 64, 64, 2, 2, RN).unwrap();
        assert_eq!(wide.factors, tall.factors);
        assert!(wide.scratch > tall.scratch + 1024 * 4096 / 4 * 8 - 1);
        assert_eq!(pdgels_ft_memory(100, 50, 1, 16, 16, 2, 1, RN), None);
    }
}
