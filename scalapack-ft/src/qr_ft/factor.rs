//! The `pdgeqrf_ft` driver: the QR's steps (panel, broadcast, update
//! reduction; the local commit with a look-ahead) on the step-commit
//! protocol of `recovery::protocol`, and the ABFT of [`crate::abft`].

use crate::abft::{
    check_layout, send_ahead, set_up_call, Factored, FtOptions, FtReport, FtWorkspace, PanelDriver, PanelFactorization,
    PanelSteps,
};
use crate::args::pdgeqrf::{A, DESCA};
use crate::args::{check_first_block_at_origin, check_square_blocks, check_two_process_columns};
use crate::blas::Trans;
use crate::error::{check_finite, Error, Result};
use crate::matrix::DistMatrix;
use crate::qr::reflectors::{factor_panel, Panel};
use crate::qr::{PanelAlgorithm, QrOptions};
use crate::row_panel::broadcast_panel;
use blacs_ft::Grid;
use checksum::ChecksumLayout;
use recovery::protocol::{self, Phase, PhaseClock};
use recovery::Region;
use std::ops::Range;

pub(crate) const ROUTINE: &str = crate::drivers::PDGEQRF_FT.routine;

/// The phases of a step before its commit, in order: the panel, its
/// broadcast along the process rows (V and T), and the update's reduction.
pub const STEP_PHASES: &[Phase] = crate::drivers::PDGEQRF_FT.step_phases;

/// Fault-tolerant QR factorization: the same result as
/// [`crate::qr::pdgeqrf`] (R and V in `a`, `tau` replicated), computed with
/// checksums (`opts.layout`: reverse-neighboring pairs, or f rotating
/// weighted checksums) so that any one lost process per process row (any
/// f with the rotating layout) can be rebuilt mid-factorization.
///
/// * `region` (global): the resilient region holding the grid and the status
///   log (the call records its committed steps there).
/// * `a` (local input/output): M×N, square blocks (MB = NB), Q ≥ 2.
/// * `tau` (global output): min(M, N) Householder scalars.
/// * `opts` (global): `verify`, and the checksum `layout` (the rotating
///   layout with f checksums needs Q ≥ f + 1, else an argument error
///   against CTXT_A on every process).
///
/// # Fault tolerance
/// A process failure in any phase of a step is repaired in place: the grid
/// is repaired (spawned replacement or hot spare), every survivor is at the
/// last committed step, the lost blocks — data, checksum copies and the
/// left-factor sums — are rebuilt by row-wise reductions, and the loop
/// resumes. A replacement process calls `pdgeqrf_ft` with a matrix of the
/// same shape (its content is rebuilt) and joins through the region's log.
/// More losses in one process row than the layout tolerates (two for the
/// reverse-neighboring pairs, f + 1 for f rotating checksums) are reported
/// as [`blacs_ft::Error::Unrecoverable`] on every survivor.
///
/// Under the recovery policy `shrink` (or `auto`, once a spawn is refused)
/// a loss that no hot spare takes is recovered on a smaller grid of the
/// survivors: the lost blocks are rebuilt onto a survivor of their row,
/// every block moves to its owner on the new grid, and the call goes on
/// there; `a` comes back distributed on that grid (`region.grid().shape()`,
/// and the recovery's `shrink` record). See docs/fault-tolerance.md,
/// "Shrink".
///
/// A process lost before the checksums are encoded (the call's first
/// commit point) took blocks nothing protects yet: every survivor then
/// forgets the call in the region's log and returns a process-failure
/// error, with `a` still holding its input. Repair the grid
/// ([`Region::run`] does) and call again with the input — a replacement,
/// which runs the region's body from the top, re-reads or regenerates its
/// part.
///
/// On a replacement, a call that had completed before it joined (done in
/// the log) returns at once with the survivors' tau and marks `a` lost
/// ([`DistMatrix::is_lost`]): its part of the factors went with the
/// failed process. A routine that reads it refuses it on every process
/// ([`Error::InputLost`]).
pub fn pdgeqrf_ft(region: &mut Region, a: &mut DistMatrix, tau: &mut Vec<f64>, opts: &FtOptions) -> Result<FtReport> {
    pdgeqrf_ft_in(region, a, tau, opts, &mut FtWorkspace::new())
}

/// [`pdgeqrf_ft`] in caller-owned scratch:
///
/// * `a` (local input/output): as in [`pdgeqrf_ft`]. When its storage has
///   room for the padding and checksum columns after its local array
///   ([`FtWorkspace::in_place`] makes it), the factorization runs in that
///   storage and A is copied neither in nor out.
/// * `work` (local workspace): the D_g sums, and the extended matrix when
///   `a` has no room ([`FtWorkspace::for_matrix`] sizes it ahead; an empty
///   one grows). Reusing it across calls avoids allocating and
///   first-touching that memory on every call. Its content is overwritten.
///
/// A is unchanged after an argument error and after a failure before the
/// checksums exist (see [`pdgeqrf_ft`]); after any other error its content
/// is undefined.
///
/// # Fault tolerance
/// As [`pdgeqrf_ft`]; a replacement process may pass any workspace.
pub fn pdgeqrf_ft_in(
    region: &mut Region,
    a: &mut DistMatrix,
    tau: &mut Vec<f64>,
    opts: &FtOptions,
    work: &mut FtWorkspace,
) -> Result<FtReport> {
    pdgeqrf_ft_with(region, a, tau, opts, work, &QrOptions::default())
}

/// [`pdgeqrf_ft_in`] with the QR's options:
///
/// * `qr` (global): how the panels are factored (the same panel code as
///   [`crate::qr::pdgeqrf_with`]; it runs in phase 1 of a step, on the
///   backed-up panel, like the Householder panel).
///
/// # Fault tolerance
/// As [`pdgeqrf_ft`]: the panel method changes neither the kill points nor
/// the checksums nor recovery. Every process of the column computes the
/// TSQR reduction (or CholeskyQR2's sums and its choice to fall back) from
/// the same gathered data, so a re-run panel after a repair gives the same
/// reflectors on every process.
pub fn pdgeqrf_ft_with(
    region: &mut Region,
    a: &mut DistMatrix,
    tau: &mut Vec<f64>,
    opts: &FtOptions,
    work: &mut FtWorkspace,
    qr: &QrOptions,
) -> Result<FtReport> {
    let start = protocol::enter::<Vec<f64>, Error>(region, ROUTINE)?;
    if let protocol::Start::Done(done) = start {
        // Completed before a later failure: the result is already in `a`,
        // but not on a replacement that joined after it.
        if region.current_call_completed_before_joining() {
            a.set_lost(true);
        }
        *tau = done;
        return Ok(FtReport::default());
    }
    let run = run_on_extended(region, a, opts, work, start, qr)?;
    // One exit: A gets its storage (or its blocks) back.
    run.ext.release(a, work, true);
    // (Its result is here now, a joining replacement's too.)
    a.set_lost(false);
    *tau = run.state;
    Ok(run.report)
}

/// Runs a started call (not one completed before) on the extended matrix
/// over `a`: what [`pdgeqrf_ft`] and the protected factors
/// ([`super::QrFactors`]) share. On an error `a` and `work` have their
/// storage back (`a`'s content undefined past the first commit point).
pub(crate) fn run_on_extended(
    region: &mut Region,
    a: &mut DistMatrix,
    opts: &FtOptions,
    work: &mut FtWorkspace,
    start: protocol::Start<Vec<f64>>,
    options: &QrOptions,
) -> Result<Factored<Vec<f64>>> {
    let grid = region.grid();
    let layout = ChecksumLayout::new(opts.layout, a.m(), a.n(), a.nb(), grid.nprow() as usize, grid.npcol() as usize);
    let mut check = check_square_blocks(ROUTINE, DESCA, "A", a.desc())
        .and_then(|()| check_first_block_at_origin(ROUTINE, DESCA, "A", a.desc()))
        .and_then(|()| check_two_process_columns(ROUTINE, DESCA, "A", grid))
        .and_then(|()| check_layout(ROUTINE, DESCA, opts.layout, &layout));
    if !start.joining() {
        // (A replacement's A is meaningless until it is rebuilt.)
        check = check.and_then(|()| check_finite(ROUTINE, A, a));
    }
    let (ext, layout) = set_up_call(
        region,
        QrSteps::OP,
        ROUTINE,
        &start,
        a,
        work,
        (layout.ok(), crate::abft::Relations::Whole),
        check,
    )?;
    let kmax = a.m().min(a.n());
    let overhead_model = layout.overhead_model();
    let qr = PanelFactorization {
        driver: PanelDriver::new(ext, layout),
        steps: QrSteps {
            panels: kmax.div_ceil(a.nb()) as u64,
            nb: a.nb(),
            tau: vec![0.0; kmax],
            corrupt: region.grid().injector().silent_error(),
            // (Resolved on the data's shape, not the extended matrix's.)
            panel: options.panel.resolve(region.grid().nprow() as usize, a.m(), a.n()),
        },
    };
    qr.run(region, start, opts, overhead_model, a, work)
}

/// What phase 1 of a step hands to the commit: the panel's reflectors, the
/// W of the update (reduced over the process column; with one process row
/// it is formed while the agreement runs), and the local columns to update.
struct StepScratch {
    panel: Panel,
    w: Option<Vec<f64>>,
    cols: Range<usize>,
}

/// The QR's share of the protocol: its steps on the extended matrix.
struct QrSteps {
    tau: Vec<f64>,
    panels: u64,
    /// The block size.
    nb: usize,
    corrupt: Option<blacs_ft::inject::SilentError>,
    /// How the panels are factored.
    panel: PanelAlgorithm,
}

impl QrSteps {
    /// First column and width of panel `k`.
    fn block(&self, k: usize) -> (usize, usize) {
        let nb = self.nb;
        (k * nb, nb.min(self.tau.len() - k * nb))
    }
}

impl PanelSteps for QrSteps {
    type Panel = Panel;
    type Scratch = StepScratch;
    type State = Vec<f64>;
    const OP: &'static str = crate::drivers::PDGEQRF_FT.kill_op;
    const LEFT_FACTOR_MOVES: bool = false;
    const STEP_PHASES: &'static [Phase] = STEP_PHASES;

    fn steps(&self) -> u64 {
        self.panels
    }

    fn state(&self) -> &Vec<f64> {
        &self.tau
    }

    fn set_state(&mut self, tau: Vec<f64>) {
        let n = tau.len().min(self.tau.len());
        self.tau[..n].copy_from_slice(&tau[..n]);
    }

    fn into_state(self) -> Vec<f64> {
        self.tau
    }

    /// Panel (on a backed-up panel, or the one factored ahead), its
    /// broadcast (V and T: the D_g holders take the left factor from V),
    /// and with more than one process row the reduction of W.
    fn exchange(
        &mut self,
        d: &mut PanelDriver<Panel>,
        grid: &Grid,
        k: u64,
        clock: &mut PhaseClock,
    ) -> Result<StepScratch> {
        let k = k as usize;
        let (j0, jb) = self.block(k);
        let mycol = grid.mycol() as usize;
        let m = &d.ext.matrix;
        let owner = m.col_owner(j0);
        let lrows = m.local_rows() - m.local_rows_before(j0);
        let lc0 = m.local_cols_before(j0);
        clock.enter(grid, Phase::Panel);
        let (mine, sending) =
            d.owners_panel(mycol == owner, (lc0, jb), |ext| factor_panel(grid, &mut ext.matrix, j0, jb, self.panel))?;
        let (ext, layout) = (&d.ext, &d.layout);
        clock.enter(grid, Phase::Bcast);
        let panel = broadcast_panel(grid, (mine, sending), owner, (j0, jb, lrows))?;
        clock.enter(grid, Phase::Update);
        let cols = ext.matrix.local_cols_before(j0 + jb)..ext.matrix.local_cols_before(layout.active_end_col(k));
        let w = if grid.nprow() > 1 {
            let mut w = panel.local_w(&ext.matrix, cols.clone());
            panel.reduce_w(grid, &mut w)?;
            Some(w)
        } else {
            None
        };
        Ok(StepScratch { panel, w, cols })
    }

    /// With one process row W needs no communication: it is formed while
    /// the agreement runs.
    fn while_agreeing(&mut self, d: &PanelDriver<Panel>, s: &mut StepScratch, _agreed: &mut dyn FnMut() -> bool) {
        // (Update work overlapping the agreement: not a wait.)
        let _u = recovery::profile::part(recovery::profile::Part::UPDATE, None);
        if s.w.is_none() {
            s.w = Some(s.panel.local_w(&d.ext.matrix, s.cols.clone()));
        }
    }

    /// The local commit — except that the owner of the next panel updates
    /// and factors it first (look-ahead, on a backed-up copy) and starts
    /// sending it, so that the other process columns find it waiting at the
    /// next step.
    fn commit(&mut self, d: &mut PanelDriver<Panel>, grid: &Grid, k: u64, s: StepScratch) {
        // (The step's trailing update is applied here, from the scratch.)
        recovery::profile::enter(recovery::profile::Part::UPDATE, k);
        let k = k as usize;
        let StepScratch { panel, w, cols } = s;
        let mut w = w.unwrap_or_else(|| panel.local_w(&d.ext.matrix, cols.clone()));
        d.backup = None;
        let mycol = grid.mycol() as usize;
        panel.scale_w(Trans::Yes, &mut w, cols.len());
        let next = (k as u64 + 1 < self.panels).then(|| self.block(k + 1));
        let ext = &mut d.ext;
        match next {
            Some((n0, nw)) if ext.matrix.col_owner(n0) == mycol => {
                let ncols = ext.matrix.local_cols_before(n0)..ext.matrix.local_cols_before(n0 + nw);
                panel.update_cols(&mut ext.matrix, cols.start, ncols.clone(), &w);
                let nbackup = ext.panel_backup(ncols.start, nw);
                let early = factor_panel(grid, &mut ext.matrix, n0, nw, self.panel);
                d.ahead = Some(send_ahead(grid, ext, (ncols.start, nbackup), early));
                panel.update_cols(&mut ext.matrix, cols.start, ncols.end..cols.end, &w);
            }
            _ => panel.update_cols(&mut ext.matrix, cols.start, cols.clone(), &w),
        }
        ext.accumulate_finished(&d.layout, k, panel.j0, panel.jb, &panel.v, panel.lrows);
        self.tau[panel.j0..panel.j0 + panel.jb].copy_from_slice(&panel.tau());
        if self.corrupt.is_some_and(|e| e.strikes(grid.rank(), k as u64)) {
            ext.corrupt_trailing(panel.j0 + panel.jb);
        }
    }
}
