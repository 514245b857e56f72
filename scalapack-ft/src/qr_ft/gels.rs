//! `pdgels_ft`: fault-tolerant least squares through protected QR
//! factors: the factorization, then Qᵀ·B and the solve with R as one
//! protected solve.

use super::ormqr::{OrmqrSteps, ORMQR_PHASES};
use super::protected::QrFactors;
use super::solve_args::check_rhs;
use super::trsm::TrsmSteps;
use crate::abft::{run_solve, FtOptions, FtReport, FtWorkspace, SolveArgs, SolveSteps};
use crate::args::pdgels::{A, DESCB, M};
use crate::blas::Trans;
use crate::error::Result;
use crate::matrix::DistMatrix;
use crate::qr::reflectors::Panel;
use crate::qr::{check_overdetermined, RBlockColumn};
use blacs_ft::Grid;
use recovery::protocol::{Phase, PhaseClock};
use recovery::Region;

/// The phases of a step before its commit (the same in both parts: see
/// [`pdgels_ft`]).
pub const GELS_PHASES: &[Phase] = ORMQR_PHASES;

const ARGS: SolveArgs =
    SolveArgs { routine: "pdgels_ft", factors_position: A, factors_name: "A", b_desc_position: DESCB, b_name: "B" };

/// What [`pdgels_ft`] did besides solving: its two calls' reports.
#[derive(Clone, Debug, Default)]
pub struct GelsReport {
    /// The factorization's ([`QrFactors::factor`]).
    pub factor: FtReport,
    /// The solve's (Qᵀ·B and R·X as one protected call).
    pub solve: FtReport,
}

/// Fault-tolerant least squares: X minimising ‖A·X − B‖₂ for a full-rank
/// M×N A with M ≥ N (ScaLAPACK `PDGELS` with TRANS = 'N'), the factors
/// kept protected.
///
/// * `region` (global): the resilient region.
/// * `a` (local input): M×N, square blocks (MB = NB), first block on
///   process (0, 0), Q ≥ 2; taken by the factorization
///   ([`QrFactors::factor`]), whose protected factors are returned (R and
///   V, as PDGELS leaves them in A: [`QrFactors::to_matrix`]).
/// * `b` (local input/output): M×NRHS with A's row distribution, MB_B =
///   NB_B = NB_A (the one restriction beyond PDGELS: B gets checksum
///   columns laid out as A's), first block on process (0, 0). On exit rows
///   0..N hold X and rows N..M the components of the residual
///   (‖B(N..M, j)‖₂ is column j's residual norm), as PDGELS.
///
/// M < N (PDGELS's minimum-norm solution) is not provided: an argument
/// error at M's position (2), on every process, before anything is done.
/// [`pdgels_ft_memory`] is the workspace query (PDGELS's LWORK = −1).
///
/// # Errors
/// Agreed on every process: argument errors at PDGELS's positions (A's
/// descriptor is 8, B's 12), those of [`QrFactors::factor`], and a process
/// failure before a part's checksums exist (repair, and call again).
///
/// # Fault tolerance
/// Two calls of the region's log: the factorization (kill points
/// `R@qr:…`, see [`super::pdgeqrf_ft`]), then one protected solve on the
/// factors over B with checksum columns (kill points `R@gels:…`). Its
/// steps 0..P−1 apply the P panels of Qᵀ (as [`super::pdormqr_ft`]:
/// phases `bcast` — V and T along the process rows — and `update` — the
/// reduction of Vᵀ·B), steps P..P+T−1 the T block rows of the back
/// substitution with R (as [`super::upper_solve_ft`]: `bcast` — R's block
/// column — and `update` — X_k down the process columns), each followed
/// by `commit`; `args` and `encode` come before step 0. B stays protected
/// from the first part to the second. A process lost between the
/// factorization and the solve (or during the solve) is rebuilt from the
/// factors' checksums when the solve starts (or in its recovery); the
/// result is the failure-free one. On a replacement, a call completed
/// before it joined returns at once, its hollow factors filled by the
/// region's next mend and B marked lost ([`DistMatrix::is_lost`]).
pub fn pdgels_ft(
    region: &mut Region,
    a: DistMatrix,
    b: &mut DistMatrix,
    opts: &FtOptions,
) -> Result<(QrFactors, GelsReport)> {
    // (Global values: the same verdict everywhere without communicating.)
    check_overdetermined(ARGS.routine, M, a.m(), a.n())?;
    let (factors, factor) = QrFactors::factor(region, a, opts)?;
    let check = check_rhs(region.grid(), ARGS, &factors, b);
    let steps = GelsSteps { qt: OrmqrSteps::new(&factors, Trans::Yes, ARGS), r: TrsmSteps::new(&factors, ARGS) };
    let solve = run_solve(region, ARGS, factors.shared(), b, check, steps, opts)?;
    Ok((factors, GelsReport { factor, solve }))
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

/// The workspace query of [`pdgels_ft`] for an `m`×`n` A and `nrhs`
/// right-hand sides in `nb`×`nb` blocks on a `p`×`q` grid (all global);
/// `None` for shapes that cannot carry checksums (Q < 2, NB = 0).
pub fn pdgels_ft_memory(m: usize, n: usize, nrhs: usize, nb: usize, p: usize, q: usize) -> Option<GelsMemory> {
    let factors = FtWorkspace::bytes_per_process(m, n, nb, p, q)?;
    let rhs = FtWorkspace::bytes_per_process(m, nrhs, nb, p, q)?;
    let rows = blacs_ft::index::numroc(m, nb, 0, 0, p) as u64;
    let rhs_cols = (rhs / 8) / rows.max(1);
    let (nb, f64_bytes) = (nb as u64, std::mem::size_of::<f64>() as u64);
    let scratch = (rows * nb + nb * nb + nb * rhs_cols) * f64_bytes;
    Some(GelsMemory { factors, rhs, scratch })
}

/// Qᵀ's panels, then R's block rows.
struct GelsSteps {
    qt: OrmqrSteps,
    r: TrsmSteps,
}

/// A step's scratch: of Qᵀ's part or of R's.
enum GelsScratch {
    Reflect((Panel, Vec<f64>)),
    Solve((RBlockColumn, Vec<f64>)),
}

impl SolveSteps for GelsSteps {
    type Scratch = GelsScratch;
    const OP: &'static str = "gels";
    const STEP_PHASES: &'static [Phase] = GELS_PHASES;

    fn steps(&self) -> u64 {
        self.qt.steps() + self.r.steps()
    }

    fn exchange(&mut self, b: &DistMatrix, grid: &Grid, k: u64, clock: &mut PhaseClock) -> Result<GelsScratch> {
        let p = self.qt.steps();
        if k < p {
            self.qt.exchange(b, grid, k, clock).map(GelsScratch::Reflect)
        } else {
            self.r.exchange(b, grid, k - p, clock).map(GelsScratch::Solve)
        }
    }

    fn commit(&mut self, b: &mut DistMatrix, grid: &Grid, k: u64, scratch: GelsScratch) {
        let p = self.qt.steps();
        match scratch {
            GelsScratch::Reflect(s) => self.qt.commit(b, grid, k, s),
            GelsScratch::Solve(s) => self.r.commit(b, grid, k - p, s),
        }
    }
}
