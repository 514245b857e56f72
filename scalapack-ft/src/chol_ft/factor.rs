//! The `pdpotrf_ft` driver: Cholesky's steps on the step-commit protocol
//! of `recovery::protocol` and the ABFT of [`crate::abft`] (see the module
//! documentation of [`super`]).

use super::ahead::{self, CholPanel};
use super::checksums;
use crate::abft::{
    check_layout, send_ahead, set_up_call, Factored, FtOptions, FtReport, FtWorkspace, PanelDriver, PanelFactorization,
    PanelSteps, Relations,
};
use crate::args::check_two_process_columns;
use crate::args::pdpotrf::{A, DESCA, N};
use crate::blas::Uplo;
use crate::chol::factor::{check_args, factor_block_column, picked, update, Column, FactorPositions};
use crate::error::{Error, Result};
use crate::matrix::{pack, DistMatrix};
use crate::row_panel::broadcast_panel;
use blacs_ft::index::numroc;
use blacs_ft::{Grid, Scope};
use checksum::ChecksumLayout;
use recovery::protocol::{self, Phase, PhaseClock};
use recovery::Region;
use serde::{Deserialize, Serialize};

pub(crate) const ROUTINE: &str = crate::drivers::PDPOTRF_FT.routine;

/// The phases of a step before its commit, in order: the column factored
/// (`panel`), sent along the process rows (`bcast`), and gathered down
/// the process columns for the update (`update`).
pub const STEP_PHASES: &[Phase] = crate::drivers::PDPOTRF_FT.step_phases;

/// What the checksums cover: the lower triangle (the U sums keep the
/// strictly upper one), from the catalogue.
pub(crate) const RELATIONS: Relations = crate::drivers::PDPOTRF_FT.relations;

/// Fault-tolerant Cholesky factorization, lower: the same result as
/// [`crate::chol::pdpotrf`] with [`Uplo::Lower`] — L in the lower
/// triangle of `a`, its strictly upper triangle not referenced —
/// computed with checksums of the lower triangle (`opts.layout`), so that
/// any one lost process per process row (any f with the rotating layout)
/// is rebuilt mid-factorization.
///
/// * `region` (global): the resilient region holding the grid and the
///   status log.
/// * `a` (local input/output): N×N, square blocks (MB = NB), first block
///   on process (0, 0), Q ≥ 2 (Q ≥ f + 1 for f rotating checksums).
///
/// # Errors
/// As [`crate::chol::pdpotrf`], agreed on every process: argument errors
/// with PDPOTRF's positions, and [`Error::MinorNotPositiveDefinite`] with
/// the order of the first leading minor that is not positive definite
/// (ScaLAPACK's INFO), found at the step of its diagonal block: the
/// columns before it hold L, that block column its updated input (it is
/// not factored), the rest the partly updated input. A run that ends so
/// returns that error instead of its [`FtReport`].
///
/// # Fault tolerance
/// The checksums cover the lower triangle and follow each step's
/// symmetric update (see [`super`]); L's finished columns are protected
/// by the sums D_g. A process failure in any phase is repaired in place:
/// every survivor is at the last committed step, the lost blocks of the
/// lower triangle (L, the trailing matrix, the checksum copies, the sums)
/// are rebuilt and the loop resumes with the same result as a
/// failure-free run. The strictly upper triangle is not referenced by
/// the factorization; the checksums keep it apart (in the sums U_g), so a
/// replacement gets it back, and whatever it holds (NaN included) spoils
/// no rebuild of L. A replacement calls
/// `pdpotrf_ft` with a matrix of the same shape (its content is rebuilt).
/// More losses in one process row than the layout tolerates are
/// [`blacs_ft::Error::Unrecoverable`] on every survivor; a loss before the
/// checksums exist returns a process failure with `a` holding its input.
/// On a replacement, a call that had completed before it joined marks `a`
/// lost ([`DistMatrix::is_lost`]).
///
/// Under the recovery policy `shrink` (or `auto`, once a spawn is
/// refused) a loss that no hot spare takes is recovered on a smaller
/// grid of the survivors, as for [`crate::qr_ft::pdgeqrf_ft`]: `a` comes
/// back distributed on that grid.
pub fn pdpotrf_ft(region: &mut Region, a: &mut DistMatrix, opts: &FtOptions) -> Result<FtReport> {
    pdpotrf_ft_in(region, a, opts, &mut FtWorkspace::new())
}

/// [`pdpotrf_ft`] in caller-owned scratch (see
/// [`crate::qr_ft::pdgeqrf_ft_in`]).
pub fn pdpotrf_ft_in(
    region: &mut Region,
    a: &mut DistMatrix,
    opts: &FtOptions,
    work: &mut FtWorkspace,
) -> Result<FtReport> {
    let start = protocol::enter::<CholState, Error>(region, ROUTINE)?;
    if let protocol::Start::Done(done) = start {
        // Completed before a later failure: the result is already in `a`,
        // but not on a replacement that joined after it.
        if region.current_call_completed_before_joining() {
            a.set_lost(true);
        }
        return done.outcome().map(|()| FtReport::default());
    }
    let run = run_on_extended(region, a, opts, work, start, Ok(()))?;
    run.ext.release(a, work, true);
    // (Its result is here now, a joining replacement's too.)
    a.set_lost(false);
    run.state.outcome()?;
    Ok(run.report)
}

/// Runs a started call (not one completed before) on the extended matrix
/// over `a`: what [`pdpotrf_ft`] and the protected factors
/// ([`super::CholFactors`]) share. `also` (local): the caller's checks of
/// its other arguments (B's, for [`super::pdposv_ft`]), agreed in the
/// same verdict. On an error `a` and `work` have their
/// storage back (`a`'s content undefined past the first commit point).
pub(crate) fn run_on_extended(
    region: &mut Region,
    a: &mut DistMatrix,
    opts: &FtOptions,
    work: &mut FtWorkspace,
    start: protocol::Start<CholState>,
    also: Result<()>,
) -> Result<Factored<CholState>> {
    let grid = region.grid();
    let layout = ChecksumLayout::new(opts.layout, a.m(), a.n(), a.nb(), grid.nprow() as usize, grid.npcol() as usize);
    let at = FactorPositions { n: N, a: A, desca: DESCA };
    let mut check = if start.joining() {
        // (A replacement's A is meaningless until it is rebuilt.)
        crate::args::check_grid(grid, a, ROUTINE, DESCA, "A")
    } else {
        check_args(ROUTINE, at, grid, Uplo::Lower, a)
    };
    check = check
        .and_then(|()| check_two_process_columns(ROUTINE, DESCA, "A", grid))
        .and_then(|()| check_layout(ROUTINE, DESCA, opts.layout, &layout))
        .and_then(|()| if start.joining() { Ok(()) } else { also });
    let (ext, layout) = set_up_call(region, CholSteps::OP, ROUTINE, &start, a, work, (layout.ok(), RELATIONS), check)?;
    let model = overhead_model(&layout);
    let n = a.n();
    let chol = PanelFactorization {
        driver: PanelDriver::new(ext, layout),
        steps: CholSteps {
            nsteps: n.div_ceil(a.nb()) as u64,
            n,
            nb: a.nb(),
            state: CholState { info: None },
            corrupt: region.grid().injector().silent_error(),
        },
    };
    chol.run(region, start, opts, model, a, work)
}

/// The most memory, in bytes, that any process of a `p`×`q` grid needs
/// to factor an `n`×`n` matrix in `nb`×`nb` blocks with [`pdpotrf_ft`] in
/// place with the checksum layout `kind` (all global): its extended local
/// matrix (A's local array included) and the sums it keeps beside its
/// checksums (D and the upper triangle's, see the module docs). What a
/// caller checks before allocating anything; `None` for shapes that
/// cannot carry checksums.
pub fn bytes_per_process(n: usize, nb: usize, p: usize, q: usize, kind: checksum::LayoutKind) -> Option<u64> {
    FtWorkspace::bytes_per_process_of((n, n, nb), (p, q), kind, RELATIONS)
}

/// [`FtWorkspace::in_place`] for [`pdpotrf_ft_in`]: its sums sized for
/// the Cholesky's (D and the upper triangle's), so that the call
/// allocates nothing.
///
/// # Errors
/// As [`FtWorkspace::in_place`].
pub fn workspace_in_place(grid: &Grid, a: &mut DistMatrix, kind: checksum::LayoutKind) -> Result<FtWorkspace> {
    FtWorkspace::in_place_of(grid, a, kind, RELATIONS)
}

/// [`FtWorkspace::for_spare`] for a hot spare that may join a
/// [`pdpotrf_ft`] of an `n`×`n` matrix (all global): its sums sized for
/// the Cholesky's, so that its recovery allocates nothing.
///
/// # Errors
/// As [`FtWorkspace::for_spare`].
pub fn spare_workspace(
    n: usize,
    nb: usize,
    (p, q): (usize, usize),
    kind: checksum::LayoutKind,
) -> Result<(Vec<f64>, FtWorkspace)> {
    FtWorkspace::for_spare_of((n, n, nb), (p, q), kind, RELATIONS)
}

/// The failure-free cost of the checksums: their share of the trailing
/// updates' flops, counted step by step over `layout`'s groups (the
/// rows of each group's checksums below it, every replica).
pub fn overhead_model(layout: &ChecksumLayout) -> f64 {
    checksums::overhead_model(layout)
}

/// Cholesky's replicated state: the order of the first leading minor
/// that is not positive definite, once a step found it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct CholState {
    info: Option<usize>,
}

impl CholState {
    /// `Err(MinorNotPositiveDefinite)` for a stopped factorization, as
    /// pdpotrf reports it.
    pub(crate) fn outcome(&self) -> Result<()> {
        match self.info {
            Some(order) => Err(Error::MinorNotPositiveDefinite { routine: ROUTINE.into(), order }),
            None => Ok(()),
        }
    }
}

/// What phase 1 of a step hands to its commit.
enum StepScratch {
    /// Nothing to do (a minor was not positive definite at an earlier
    /// step).
    Stopped,
    /// The diagonal block's minor of this order is not positive definite.
    NotPositiveDefinite(usize),
    /// The whole column below and on the diagonal, `(n − k0)`×`kb`
    /// (column-major, leading dimension `n − k0`), the diagonal block's
    /// upper half zeroed; what the commit takes of it, once prepared
    /// ([`prepare`], while the step's agreement runs).
    /// With several process rows, `mine` is this process's rows of it
    /// from the diagonal block down (`lrows`×`kb`, the diagonal block's
    /// upper half zeroed where it holds it); empty on one process row.
    Column { k: usize, kb: usize, whole: Vec<f64>, mine: Vec<f64>, prepared: Option<Box<Prepared>> },
}

/// This process's share of a step's column, made in scratch before the
/// commit point (nothing in the extended matrix changes): the update's
/// view of the column (`column`: its `rows` are this process's rows of
/// the column from the diagonal block down, `column.ld`×`kb`), the transposed column for its trailing columns
/// (`cols`, `ncols`×`kb`), the checksums' work, and on one process row the
/// next block column worked ahead on its owner.
struct Prepared {
    cols: Vec<f64>,
    ncols: usize,
    column: Column,
    sums: checksums::ChecksumStep,
    early: Option<ahead::Early>,
}

/// Local: [`Prepared`] for step `k` (`whole` and `mine` as in
/// [`StepScratch::Column`]; `n` the order of A).
/// `agreed` progresses the step's agreement between the parts.
fn prepare(
    d: &PanelDriver<CholPanel>,
    (k, kb, n): (usize, usize, usize),
    (whole, mine): (Vec<f64>, Vec<f64>),
    agreed: &mut dyn FnMut() -> bool,
) -> Prepared {
    let m = &d.ext.matrix;
    let (nb, lr) = (m.nb(), m.local_rows());
    let (k0, next) = (k * nb, k * nb + kb);
    let ld = n - k0;
    let top = m.local_rows_before(k0);
    let lrows = lr - top;
    let (right, data_end) = (m.local_cols_before(next), m.local_cols_before(n));
    let ncols = data_end - right;
    let cols = picked(&whole, (ld, kb), (right..data_end).map(|lj| m.global_col(lj) - k0));
    agreed();
    // One process row, on the owner of the next block column: that
    // column updated and factored in scratch (see [`super::ahead`]).
    let early = (m.grid_shape().0 == 1 && next < n && m.col_owner(next) == m.coords().1).then(|| {
        let _u = recovery::profile::part(recovery::profile::Part::UPDATE, Some(k as u64));
        ahead::compute(m, (&whole, ld, kb, k0), (next, nb.min(n - next)))
    });
    agreed();
    let sums = checksums::plan(&d.ext, &d.layout, k, (&whole, ld, kb));
    // (One process row: its rows are the whole column, in order.)
    let rows = if m.grid_shape().0 == 1 { whole } else { mine };
    debug_assert_eq!(rows.len(), lrows * kb);
    let below = m.local_rows_before(next);
    agreed();
    let column = Column { k, kb, next, below, mrows: lr - below, rows, first: below - top, ld: lrows, info: 0 };
    Prepared { cols, ncols, column, sums, early }
}

/// Cholesky's share of the protocol: its steps on the extended matrix.
struct CholSteps {
    state: CholState,
    nsteps: u64,
    /// The order of A and the block size.
    n: usize,
    nb: usize,
    corrupt: Option<blacs_ft::inject::SilentError>,
}

impl PanelSteps for CholSteps {
    type Panel = CholPanel;
    type Scratch = StepScratch;
    type State = CholState;
    const OP: &'static str = crate::drivers::PDPOTRF_FT.kill_op;
    const LEFT_FACTOR_MOVES: bool = false;
    const STEP_PHASES: &'static [Phase] = STEP_PHASES;

    fn steps(&self) -> u64 {
        self.nsteps
    }

    fn state(&self) -> &CholState {
        &self.state
    }

    fn set_state(&mut self, state: CholState) {
        self.state = state;
    }

    /// After a minor that is not positive definite, the failing block
    /// column and those after it stay as they were (its commit restored
    /// its column, the later steps do nothing): the relations count only
    /// the columns before it as finished.
    fn finished(&self, committed: u64) -> u64 {
        match self.state.info {
            Some(order) => committed.min(((order - 1) / self.nb) as u64),
            None => committed,
        }
    }

    fn into_state(self) -> CholState {
        self.state
    }

    fn exchange(
        &mut self,
        d: &mut PanelDriver<CholPanel>,
        grid: &Grid,
        k: u64,
        clock: &mut PhaseClock,
    ) -> Result<StepScratch> {
        if self.state.info.is_some() {
            return Ok(StepScratch::Stopped);
        }
        let (k, n) = (k as usize, self.n);
        let m = &d.ext.matrix;
        let nb = m.nb();
        let (p, q) = m.grid_shape();
        let (myrow, mycol) = m.coords();
        let (k0, kb) = (k * nb, nb.min(n - k * nb));
        let qk = k % q;
        let top = m.local_rows_before(k0);
        let (lrows, c0) = (m.local_rows() - top, m.local_cols_before(k0));
        // The column factored by its process column on a backed-up copy
        // (or, on one process row, ahead during the last commit).
        clock.enter(grid, Phase::Panel);
        let (mine, sending) = d.owners_panel(mycol == qk, (c0, kb), |ext| factor_column(grid, ext, (k0, kb)))?;
        clock.enter(grid, Phase::Bcast);
        let panel: CholPanel = broadcast_panel(grid, (mine, sending), qk, (k0, kb, lrows))?;
        if panel.info > 0 {
            return Ok(StepScratch::NotPositiveDefinite(panel.info as usize));
        }
        clock.enter(grid, Phase::Update);
        let (whole, mine) = gathered(grid, top, panel.rows, (n, nb, p, myrow), (k0, kb))?;
        Ok(StepScratch::Column { k, kb, whole, mine, prepared: None })
    }

    /// The commit's scratch work, overlapping the agreement (the wait for
    /// the slower process becomes work).
    fn while_agreeing(&mut self, d: &PanelDriver<CholPanel>, s: &mut StepScratch, agreed: &mut dyn FnMut() -> bool) {
        if let StepScratch::Column { k, kb, whole, mine, prepared: prepared @ None } = s {
            let column = (std::mem::take(whole), std::mem::take(mine));
            *prepared = Some(Box::new(prepare(d, (*k, *kb, self.n), column, agreed)));
        }
    }

    fn commit(&mut self, d: &mut PanelDriver<CholPanel>, grid: &Grid, _k: u64, s: StepScratch) {
        let backup = d.backup.take();
        let (k, kb, column, prepared) = match s {
            StepScratch::Stopped => return,
            StepScratch::NotPositiveDefinite(order) => {
                // The column keeps its input (as updated so far): the
                // checksums still hold for it.
                if let Some(b) = backup {
                    d.ext.restore_panel(b.local_col, &b.data);
                }
                self.state.info = Some(order);
                return;
            }
            StepScratch::Column { k, kb, whole, mine, prepared } => (k, kb, (whole, mine), prepared),
        };
        let Prepared { cols, ncols, column, sums, early } =
            prepared.map_or_else(|| prepare(d, (k, kb, self.n), column, &mut || true), |p| *p);
        let (rows, lrows) = (&column.rows, column.ld);
        let n = self.n;
        let ext = &mut d.ext;
        let (nb, lr) = (ext.matrix.nb(), ext.matrix.local_rows());
        let (k0, next) = (k * nb, k * nb + kb);
        let (right, data_end) = (ext.matrix.local_cols_before(next), ext.matrix.local_cols_before(n));
        // The look-ahead: the next block column, factored and sent first
        // on its process column; the rest of the update progresses the
        // send.
        let started = match early {
            Some(e) => {
                // (One process row: worked ahead in scratch.) The column
                // as this step leaves it is its backup (an abort of the
                // next step puts it back, a save takes it); then it goes
                // in factored.
                let lld = ext.matrix.lld();
                crate::matrix::unpack(&e.updated, ext.matrix.local_mut(), lld, e.top..lr, e.cols.clone());
                let backup = ext.panel_backup(e.cols.start, e.cols.len());
                crate::matrix::unpack(&e.panel.rows, ext.matrix.local_mut(), lld, e.top..lr, e.cols.clone());
                Some((send_ahead(grid, ext, (e.cols.start, backup), Ok(e.panel)), e.cols.end))
            }
            None if next < n && ext.matrix.col_owner(next) == grid.mycol() as usize => {
                // Several process rows: the column updated first, then
                // factored on a backed-up copy by its process column (a
                // collective: an error is kept for the next step's phase
                // 1, as QR's look-ahead does).
                let nb1 = nb.min(n - next);
                let own = right..ext.matrix.local_cols_before(next + nb1);
                let done = update(&mut ext.matrix, &column, (&cols, ncols), own.clone(), &mut || Ok(()), k);
                debug_assert!(done.is_ok());
                let backup = ext.panel_backup(own.start, own.len());
                let early = factor_column(grid, ext, (next, nb1));
                Some((send_ahead(grid, ext, (own.start, backup), early), own.end))
            }
            None => None,
        };
        match started {
            Some((mut ahead, rest)) => {
                let mut between = || {
                    ahead.progress(grid);
                    Ok(())
                };
                let done = update(&mut ext.matrix, &column, (&cols, ncols), rest..data_end, &mut between, k);
                debug_assert!(done.is_ok());
                ahead.put_back_if_failed(ext);
                d.ahead = Some(ahead);
            }
            None if next < n => {
                // (Local only: the update's pauses have nothing to progress.)
                let done = update(&mut ext.matrix, &column, (&cols, ncols), right..data_end, &mut || Ok(()), k);
                debug_assert!(done.is_ok());
            }
            None => {}
        }
        checksums::apply(ext, &sums, (rows, lrows));
        ext.accumulate_finished(&d.layout, k, k0, kb, rows, lrows);
        if self.corrupt.is_some_and(|e| e.strikes(grid.rank(), k as u64)) {
            ext.corrupt_trailing(next);
        }
    }
}

/// Collective down the process column of block column `k0..k0+kb` (its
/// processes only): the column factored in place
/// ([`crate::chol::factor::factor_block_column`]) and this process's rows
/// of it from the diagonal block down, with the INFO.
fn factor_column(grid: &Grid, ext: &mut crate::abft::Extended, (k0, kb): (usize, usize)) -> Result<CholPanel> {
    let m = &mut ext.matrix;
    let info = factor_block_column(grid, m, (k0, kb))?;
    let (top, c0) = (m.local_rows_before(k0), m.local_cols_before(k0));
    let mut rows = Vec::new();
    pack(m.local(), m.lld(), top..m.local_rows(), c0..c0 + kb, &mut rows);
    Ok(CholPanel { info, rows })
}

/// Collective down each process column: the whole column `k0..n` of the
/// step (`(n − k0)`×`kb`, leading dimension `n − k0`) from each process
/// row's rows of it (`mine`: its local rows from `top`, the first at or
/// below `k0`), the diagonal block's upper half zeroed (what the
/// checksums and the sums take of it); with several process rows also
/// `mine` with that block's upper half zeroed where it holds it (on one,
/// `mine` is the whole column and the second part is empty).
fn gathered(
    grid: &Grid,
    top: usize,
    mut mine: Vec<f64>,
    (n, nb, p, myrow): (usize, usize, usize, usize),
    (k0, kb): (usize, usize),
) -> Result<(Vec<f64>, Vec<f64>)> {
    let rows_on = |r: usize| numroc(n, nb, r, 0, p) - numroc(k0, nb, r, 0, p);
    let ld = n - k0;
    debug_assert_eq!(numroc(k0, nb, myrow, 0, p), top);
    let zero_upper = |column: &mut [f64], ld: usize| {
        for t in 0..kb {
            column[t * ld..t * ld + t].fill(0.0);
        }
    };
    if p == 1 {
        // (One process row: its rows are the whole column, in order.)
        mine.truncate(ld * kb);
        zero_upper(&mut mine, ld);
        return Ok((mine, Vec::new()));
    }
    let tall = (0..p).map(rows_on).max().unwrap_or(0);
    let lrows = rows_on(myrow);
    // Every process row's part padded to `tall` rows (sent as it is when
    // it has that many).
    let padded;
    let part: &[f64] = if lrows == tall {
        &mine[..tall * kb]
    } else {
        let mut v = Vec::with_capacity(tall * kb);
        for t in 0..kb {
            v.extend_from_slice(&mine[t * lrows..(t + 1) * lrows]);
            v.resize((t + 1) * tall, 0.0);
        }
        padded = v;
        &padded
    };
    let all = grid.allgather(Scope::Column, part)?;
    // Where each row of the column is in `all` (global row k0 + i is local
    // row `first + l` of process row r), then the column read through it:
    // written once, never zeroed first.
    let mut from = vec![0; ld];
    for r in 0..p {
        let first = numroc(k0, nb, r, 0, p);
        for l in 0..rows_on(r) {
            let lg = first + l;
            from[(lg / nb * p + r) * nb + lg % nb - k0] = r * tall * kb + l;
        }
    }
    let mut whole = Vec::with_capacity(ld * kb);
    for t in 0..kb {
        whole.extend(from.iter().map(|&at| all[at + t * tall]));
    }
    zero_upper(&mut whole, ld);
    if myrow == (k0 / nb) % p {
        // (The diagonal block is this process's first rows.)
        zero_upper(&mut mine, lrows);
    }
    Ok((whole, mine))
}
