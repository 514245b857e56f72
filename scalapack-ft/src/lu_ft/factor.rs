//! The `pdgetrf_ft` driver: the LU's steps on the step-commit protocol of
//! `recovery::protocol` and the ABFT of [`crate::abft`].
//!
//! Phase 1 of step k (scratch only): the panel factorization with its
//! pivot search (on a backed-up panel), the panel's broadcast along the
//! process rows, the exchange of the rows its interchanges move between
//! process rows, and the block row of U (the TRSM on the diagonal process
//! row, from the moved rows) broadcast down the process columns. The
//! commit: the interchanges (finished L, trailing and checksum columns,
//! and the rows of D_g), U's block row, the DGEMM update of the trailing
//! and checksum columns, and the panel's L into D_g — with a look-ahead:
//! the owner of the next panel updates its columns first, factors it (on a
//! backed-up copy that a failure restores) and starts sending it before
//! the rest of its update, so that the other process columns find it
//! waiting at the next step instead of idling through its factorization.
//! On one process row an even step also leaves the update of its far
//! groups (and their checksum pairs) to the next step, which applies both
//! panels' updates in one DGEMM of inner dimension 2·NB (see
//! [`super::deferred`]).

use super::deferred::{self, Deferred};
use super::early::{self, Early};
use super::rows::{self, Columns, Moves};
use crate::abft::{
    self, check_layout, send_ahead, set_up_call, Extended, Factored, FtOptions, FtReport, FtWorkspace, PanelDriver,
    PanelFactorization, PanelSteps,
};
use crate::args::pdgetrf::{A, DESCA};
use crate::args::{check_first_block_at_origin, check_grid, check_square_blocks, check_two_process_columns};
use crate::blas::{self, Trans};
use crate::error::{check_finite, Error, Result};
use crate::lu::panel::{factor_panel, Panel};
use crate::matrix::DistMatrix;
use crate::row_panel::broadcast_panel;
use blacs_ft::{Grid, Scope};
use checksum::ChecksumLayout;
use recovery::protocol::{self, Phase, PhaseClock};
use recovery::Region;
use serde::{Deserialize, Serialize};
use std::ops::Range;

pub(crate) const ROUTINE: &str = crate::drivers::PDGETRF_FT.routine;

/// The phases of a step before its commit, in order: the panel with its
/// pivot search, its broadcast along the process rows, the row exchange,
/// and U's block row (solved, and broadcast down the process columns).
pub const STEP_PHASES: &[Phase] = crate::drivers::PDGETRF_FT.step_phases;

/// Fault-tolerant LU factorization with partial pivoting: the same result
/// as [`crate::lu::pdgetrf`] — L (unit lower, below the diagonal) and U in
/// `a`, and the same pivots in `ipiv` — computed with checksums
/// (`opts.layout`: reverse-neighboring pairs, or f rotating weighted
/// checksums) so that any one lost process per process row (any f with the
/// rotating layout) can be rebuilt mid-factorization.
///
/// * `region` (global): the resilient region holding the grid and the status
///   log (the call records its committed steps and pivots there).
/// * `a` (local input/output): M×N, square blocks (MB = NB), first block on
///   process (0, 0), Q ≥ 2.
/// * `ipiv` (global output): resized to min(M, N), the same on every
///   process: `ipiv[i]` is the 0-based global row interchanged with row
///   `i` at step `i` (as [`crate::lu::pdgetrf`]).
///
/// # Errors
/// As [`crate::lu::pdgetrf`], agreed on every process: argument errors
/// (with ScaLAPACK's positions), a NaN or an infinity in A (position 3),
/// and [`Error::Singular`] for the first exactly-zero pivot once the
/// factorization has completed (the same index on every process, a
/// replacement's included). A run that ends singular returns that error
/// instead of its [`FtReport`]: its recoveries are not returned (the grid's
/// epoch still counts its repairs).
///
/// # Fault tolerance
/// The right checksums ride through the row interchanges, the TRSM and
/// the DGEMM of every step, so they stay row sums of the transformed
/// matrix; the left factor L of the finished columns is protected by the
/// sums D_g, to which every later interchange is applied too. A process
/// failure in any phase is repaired in place: every survivor is at the last
/// committed step, the lost blocks (L, U, the checksum copies, the sums)
/// are rebuilt and the pivots handed over, and the loop resumes, with the
/// same pivots as a failure-free run. A replacement calls `pdgetrf_ft`
/// with a matrix of the same shape (its content is rebuilt). More losses
/// in one process row than the layout tolerates (two for the
/// reverse-neighboring pairs, f + 1 for f rotating checksums) are
/// [`blacs_ft::Error::Unrecoverable`] on every survivor. A loss before the checksums exist returns a process failure,
/// `a` holding its input (see [`crate::qr_ft::pdgeqrf_ft`]). On a
/// replacement, a call that had completed before it joined returns the
/// survivors' pivots and marks `a` lost ([`DistMatrix::is_lost`]):
/// [`crate::lu::pdgetrs`] then refuses these factors on every process
/// ([`Error::InputLost`]); factor again.
///
/// Under the recovery policy `shrink` (or `auto`, once a spawn is
/// refused) a loss that no hot spare takes is recovered on a smaller
/// grid of the survivors, as for [`crate::qr_ft::pdgeqrf_ft`]: `a` comes
/// back distributed on that grid.
pub fn pdgetrf_ft(region: &mut Region, a: &mut DistMatrix, ipiv: &mut Vec<i64>, opts: &FtOptions) -> Result<FtReport> {
    pdgetrf_ft_in(region, a, ipiv, opts, &mut FtWorkspace::new())
}

/// [`pdgetrf_ft`] in caller-owned scratch (see
/// [`crate::qr_ft::pdgeqrf_ft_in`]: the same [`FtWorkspace`] serves both).
pub fn pdgetrf_ft_in(
    region: &mut Region,
    a: &mut DistMatrix,
    ipiv: &mut Vec<i64>,
    opts: &FtOptions,
    work: &mut FtWorkspace,
) -> Result<FtReport> {
    let start = protocol::enter::<LuState, Error>(region, ROUTINE)?;
    if let protocol::Start::Done(done) = start {
        // Completed before a later failure: the result is already in `a`,
        // but not on a replacement that joined after it.
        if region.current_call_completed_before_joining() {
            a.set_lost(true);
        }
        ipiv.clone_from(&done.ipiv);
        return done.singular().map(|()| FtReport::default());
    }
    let run = run_on_extended(region, a, opts, work, start)?;
    run.ext.release(a, work, true);
    // (Its result is here now, a joining replacement's too.)
    a.set_lost(false);
    // (As pdgetrf: a singular matrix is factored, and said so.)
    ipiv.clone_from(&run.state.ipiv);
    run.state.singular()?;
    Ok(run.report)
}

/// Runs a started call (not one completed before) on the extended matrix
/// over `a`: what [`pdgetrf_ft`] and the protected factors
/// ([`super::LuFactors`]) share. On an error `a` and `work` have their
/// storage back (`a`'s content undefined past the first commit point).
pub(crate) fn run_on_extended(
    region: &mut Region,
    a: &mut DistMatrix,
    opts: &FtOptions,
    work: &mut FtWorkspace,
    start: protocol::Start<LuState>,
) -> Result<Factored<LuState>> {
    let mn = a.m().min(a.n());
    let grid = region.grid();
    let layout = ChecksumLayout::new(opts.layout, a.m(), a.n(), a.nb(), grid.nprow() as usize, grid.npcol() as usize);
    let mut check = check_args(grid, a).and_then(|()| check_layout(ROUTINE, DESCA, opts.layout, &layout));
    if !start.joining() {
        check = check.and_then(|()| check_finite(ROUTINE, A, a));
    }
    let (ext, layout) = set_up_call(
        region,
        LuSteps::OP,
        ROUTINE,
        &start,
        a,
        work,
        (layout.ok(), crate::abft::Relations::Whole),
        check,
    )?;
    let overhead_model = layout.overhead_model_lu();
    let lu = PanelFactorization {
        driver: PanelDriver::new(ext, layout),
        steps: LuSteps {
            nsteps: mn.div_ceil(a.nb()) as u64,
            nb: a.nb(),
            state: LuState { ipiv: vec![0; mn], zero: None },
            deferred: None,
            corrupt: region.grid().injector().silent_error(),
        },
    };
    lu.run(region, start, opts, overhead_model, a, work)
}

/// The local argument checks (agreed by the caller).
fn check_args(grid: &Grid, a: &DistMatrix) -> Result<()> {
    check_grid(grid, a, ROUTINE, DESCA, "A")?;
    check_square_blocks(ROUTINE, DESCA, "A", a.desc())?;
    check_first_block_at_origin(ROUTINE, DESCA, "A", a.desc())?;
    check_two_process_columns(ROUTINE, DESCA, "A", grid)
}

/// LU's replicated state: the pivots so far (0-based, global) and the
/// first exactly-zero pivot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct LuState {
    pub ipiv: Vec<i64>,
    zero: Option<usize>,
}

impl LuState {
    /// `Err(Singular)` for the first zero pivot, as pdgetrf reports it.
    /// The first exactly-zero pivot (0-based, global), if any.
    pub fn zero_pivot(&self) -> Option<usize> {
        self.zero
    }

    pub fn singular(&self) -> Result<()> {
        match self.zero {
            Some(index) => Err(Error::Singular { routine: ROUTINE.into(), index }),
            None => Ok(()),
        }
    }
}

/// The next panel as its owner carries it into the next step.
type LookAhead = abft::LookAhead<Panel>;

/// What phase 1 of a step hands to its commit.
struct StepScratch {
    panel: Panel,
    /// The panel's interchanges, `(row, pivot)` in order.
    swaps: Vec<(usize, usize)>,
    /// The columns they apply to here.
    cols: Columns,
    /// With more than one process row: the rows moved onto this process.
    moves: Option<Moves>,
    /// With more than one process row: U's block row (`jb × trail`).
    u: Vec<f64>,
    /// The local trailing columns: the data right of the panel and the
    /// active checksum pairs.
    trail: Range<usize>,
    /// One process row, on the next panel's owner: that panel through
    /// this step and factored while the agreement ran (see
    /// [`super::early`]).
    early: Option<Early>,
}

/// The LU's share of the protocol: its steps on the extended matrix.
struct LuSteps {
    state: LuState,
    nsteps: u64,
    /// The block size.
    nb: usize,
    /// One process row: the last step's update of the far columns, left
    /// for this step (see [`super::deferred`]).
    deferred: Option<Deferred>,
    corrupt: Option<blacs_ft::inject::SilentError>,
}

impl LuSteps {
    /// First column and width of panel `k`.
    fn block(&self, k: usize) -> (usize, usize) {
        let nb = self.nb;
        let mn = self.state.ipiv.len();
        (k * nb, nb.min(mn - k * nb))
    }
}

impl PanelSteps for LuSteps {
    type Panel = Panel;
    type Scratch = StepScratch;
    type State = LuState;
    const OP: &'static str = crate::drivers::PDGETRF_FT.kill_op;
    const LEFT_FACTOR_MOVES: bool = true;
    const STEP_PHASES: &'static [Phase] = STEP_PHASES;

    fn steps(&self) -> u64 {
        self.nsteps
    }

    fn state(&self) -> &LuState {
        &self.state
    }

    fn set_state(&mut self, state: LuState) {
        if state.ipiv.len() == self.state.ipiv.len() {
            self.state = state;
        }
        // (After a repair, on every process alike: a step that needs the
        // kept panel has it sent again.)
        self.deferred = None;
    }

    fn into_state(self) -> LuState {
        self.state
    }

    fn grid_bound_at(&self, layout: &ChecksumLayout, committed: u64) -> bool {
        // (One process row defers the far update of an even step to the
        // next one: see `deferred`.)
        layout.p() == 1 && committed > 0 && deferred::defers(layout, committed as usize - 1, self.nsteps as usize)
    }

    fn after_regrid(&mut self, d: &mut PanelDriver<Panel>, grid: &Grid, committed: u64) -> Result<()> {
        // (A state saved on another grid is complete; here the last step
        // would have left its far update to the next one.)
        if self.grid_bound_at(&d.layout, committed) {
            self.deferred = Some(deferred::defer_again(grid, &mut d.ext, &d.layout, committed as usize)?);
        }
        Ok(())
    }

    fn complete_moved_state(
        &mut self,
        d: &mut PanelDriver<Panel>,
        grid: &Grid,
        before: &ChecksumLayout,
        committed: u64,
    ) -> Result<()> {
        // (Moved off one process row right after a step that deferred its
        // far update: applied now, as a save elsewhere would hold it.)
        if self.grid_bound_at(before, committed) {
            deferred::complete_after_move(grid, &mut d.ext, before, committed as usize)?;
        }
        Ok(())
    }

    fn undo_regrid(&mut self) {
        // (The grid before keeps nothing of a kept panel across a repair:
        // its next step sends it again.)
        self.deferred = None;
    }

    fn exchange(
        &mut self,
        d: &mut PanelDriver<Panel>,
        grid: &Grid,
        k: u64,
        clock: &mut PhaseClock,
    ) -> Result<StepScratch> {
        let k = k as usize;
        let (j0, jb) = self.block(k);
        let ext = &mut d.ext;
        let (myrow, mycol) = (grid.myrow() as usize, grid.mycol() as usize);
        let owner = ext.matrix.col_owner(j0);
        let lr0 = ext.matrix.local_rows_before(j0);
        let lw = ext.matrix.local_rows() - lr0;
        let lc0 = ext.matrix.local_cols_before(j0);
        // The panel, with its pivot search, on a backed-up panel (or the
        // one its owner factored ahead, during the last commit).
        clock.enter(grid, Phase::Panel);
        if grid.nprow() == 1
            && k > 0
            && deferred::defers(&d.layout, k - 1, self.nsteps as usize)
            && self.deferred.is_none()
        {
            self.deferred = Some(deferred::resend(grid, &d.ext, k)?);
        }
        let (mine, sending) =
            d.owners_panel(mycol == owner, (lc0, jb), |ext| factor_panel(grid, &mut ext.matrix, j0, jb))?;
        let ext = &mut d.ext;
        // Along the process rows: L (with U11 on the diagonal process row)
        // and the pivots.
        clock.enter(grid, Phase::Bcast);
        let panel: Panel = broadcast_panel(grid, (mine, sending), owner, (j0, jb, lw))?;
        panel.validate(ext.matrix.m())?;
        let swaps = panel.swaps();
        let panel_cols = if mycol == owner { lc0..lc0 + jb } else { lc0..lc0 };
        let cols = Columns::new(ext, panel_cols);
        let trail = ext.matrix.local_cols_before(j0 + jb)..ext.matrix.local_cols_before(d.layout.active_end_col(k));
        // The rows the interchanges move between process rows.
        clock.enter(grid, Phase::Swap);
        let moves = if grid.nprow() > 1 { Some(rows::exchange(grid, ext, &swaps, &cols)?) } else { None };
        // U's block row: solved on the diagonal process row from the moved
        // rows, then down the process column.
        clock.enter(grid, Phase::Update);
        let mut u = Vec::new();
        if let Some(moves) = &moves {
            let pr = ext.matrix.row_owner(j0);
            u = vec![0.0; jb * trail.len()];
            if myrow == pr {
                let (lld, data) = (ext.matrix.lld(), ext.matrix.local());
                for i in 0..jb {
                    let li = lr0 + i;
                    let moved = moves.row(li);
                    for (t, c) in trail.clone().enumerate() {
                        u[i + t * jb] = moved.map_or(data[c * lld + li], |row| row[cols.position(c)]);
                    }
                }
                if !trail.is_empty() {
                    panel.solve_block_row(trail.len(), &mut u, jb);
                }
            }
            grid.broadcast(Scope::Column, &mut u, pr as i32)?;
        }
        Ok(StepScratch { panel, swaps, cols, moves, u, trail, early: None })
    }

    /// One process row, on the owner of the next panel: that panel
    /// through this step in scratch, and factored (look-ahead, see
    /// [`super::early`]).
    fn while_agreeing(&mut self, d: &PanelDriver<Panel>, s: &mut StepScratch, agreed: &mut dyn FnMut() -> bool) {
        // (Update work overlapping the agreement: not a wait.)
        let _u = recovery::profile::part(recovery::profile::Part::UPDATE, None);
        let (n0, mn) = (s.panel.j0 + s.panel.jb, self.state.ipiv.len());
        if s.moves.is_some() || s.trail.is_empty() || n0 >= mn || d.ext.matrix.col_owner(n0) != d.ext.matrix.coords().1
        {
            return;
        }
        let nw = d.ext.matrix.nb().min(mn - n0);
        s.early = Some(early::compute(&d.ext, &s.panel, &s.swaps, s.trail.clone(), nw, agreed));
    }

    fn commit(&mut self, d: &mut PanelDriver<Panel>, grid: &Grid, k: u64, s: StepScratch) {
        let StepScratch { panel, swaps, cols, moves, mut u, trail, early } = s;
        d.backup = None;
        let (j0, jb) = (panel.j0, panel.jb);
        let ext = &mut d.ext;
        recovery::profile::enter(recovery::profile::Part::SWAP, k);
        match &moves {
            Some(m) => rows::apply(ext, &cols, m),
            None => rows::swap_in_place(ext, &cols, &swaps),
        }
        // (The step's block row of U and trailing update are applied here.)
        recovery::profile::enter(recovery::profile::Part::UPDATE, k);
        let (lr, lld) = (ext.matrix.local_rows(), ext.matrix.lld());
        let lr0 = ext.matrix.local_rows_before(j0);
        let lrb = ext.matrix.local_rows_before(j0 + jb);
        let lw = panel.lw;
        let myrow = grid.myrow() as usize;
        let diagonal_row = ext.matrix.row_owner(j0) == myrow;
        // One process row: the far columns this step leaves to the next
        // one, or the last step's that it completes (see `deferred`).
        let within_trail = |r: Range<usize>| {
            let start = r.start.max(trail.start);
            start..r.end.min(trail.end).max(start)
        };
        let mut pending = if moves.is_none() { self.deferred.take() } else { None };
        let defers = moves.is_none() && deferred::defers(&d.layout, k as usize, self.nsteps as usize);
        // (The far columns of the step that deferred, or of this one.)
        let far = match (&pending, defers) {
            (Some(_), _) => within_trail(deferred::far_columns(ext, &d.layout, k as usize - 1)),
            (None, true) => within_trail(deferred::far_columns(ext, &d.layout, k as usize)),
            (None, false) => 0..0,
        };
        if let Some(d) = &mut pending {
            d.swap(&swaps);
            d.update_block_row(ext, lr0..lr0 + jb, far.clone());
        }
        let two = pending.as_ref().map(|d| d.two_panel_update(&panel));
        if !trail.is_empty() {
            // The next panel's columns computed early are written back;
            // the rest are updated here.
            let rest = early.as_ref().map_or(trail.start, |e| e.cols.end)..trail.end;
            if moves.is_none() {
                // One process row: the block row is local; solve it in place.
                if !rest.is_empty() {
                    let data = ext.matrix.local_mut();
                    let b = &mut data[lr0 + rest.start * lld..];
                    panel.solve_block_row(rest.len(), b, lld);
                    crate::matrix::pack(data, lld, lr0..lr0 + jb, rest.clone(), &mut u);
                }
                if let Some(e) = &early {
                    crate::matrix::unpack(&e.updated, ext.matrix.local_mut(), lld, lr0..lr, e.cols.clone());
                }
            } else if diagonal_row {
                crate::matrix::unpack(&u, ext.matrix.local_mut(), lld, lr0..lr0 + jb, trail.clone());
            }
            // `u` holds U's block row from column `u0` on.
            let u0 = if moves.is_none() { rest.start } else { trail.start };
            // Local rows `rows` (of `lrb..lr`) of columns `cols`.
            let update = |ext: &mut Extended, rows: Range<usize>, cols: Range<usize>| {
                if !rows.is_empty() && !cols.is_empty() {
                    let l21 = &panel.l()[rows.start - lr0..];
                    let b = &u[(cols.start - u0) * jb..];
                    let c = &mut ext.matrix.local_mut()[rows.start + cols.start * lld..];
                    let m = rows.len();
                    blas::dgemm(Trans::No, Trans::No, m, cols.len(), jb, -1.0, l21, lw, b, jb, 1.0, c, lld);
                }
            };
            // The near columns get this panel's update; the far ones this
            // and the last panel's together, or nothing (left to the next
            // step).
            let update = |ext: &mut Extended, rows: Range<usize>, cols: Range<usize>| {
                let (a, b) = (cols.start.max(far.start), cols.end.min(far.end));
                if a >= b {
                    return update(ext, rows, cols);
                }
                update(ext, rows.clone(), cols.start..a);
                if let Some(two) = &two {
                    two.apply(ext, rows.clone(), a..b);
                }
                update(ext, rows, b..cols.end);
            };
            match early {
                Some(Early { next, .. }) => {
                    // The next panel's columns as this step left them are
                    // its backup (a failure restores them); then the panel
                    // factored early goes in, and its broadcast starts and
                    // progresses between the chunks of the rest of the
                    // update (MPI moves a large message only while its
                    // sender is inside MPI).
                    let ncols = trail.start..trail.start + next.jb;
                    let nbackup = ext.panel_backup(ncols.start, next.jb);
                    crate::matrix::unpack(next.l(), ext.matrix.local_mut(), lld, lrb..lr, ncols.clone());
                    let mut ahead: LookAhead = send_ahead(grid, ext, (ncols.start, nbackup), Ok(next));
                    for (rows, cols) in early::tiles(lrb..lr, rest.clone(), jb) {
                        update(ext, rows, cols);
                        ahead.progress(grid);
                    }
                    ahead.put_back_if_failed(ext);
                    d.ahead = Some(ahead);
                }
                None => update(ext, lrb..lr, rest),
            }
        }
        ext.accumulate_finished(&d.layout, k as usize, j0, jb, panel.l(), lw);
        for (i, p) in panel.pivots().enumerate() {
            self.state.ipiv[j0 + i] = p as i64;
        }
        if self.state.zero.is_none() {
            self.state.zero = panel.zero();
        }
        if self.corrupt.is_some_and(|e| e.strikes(grid.rank(), k)) {
            ext.corrupt_trailing(j0 + jb);
        }
        if defers {
            self.deferred = Some(Deferred { panel });
        }
    }
}
