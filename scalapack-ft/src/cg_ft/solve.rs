//! The `pdcg_ft` driver: CG's iterations (the ones of [`crate::cg`]) as
//! steps of the step-commit protocol.
//!
//! Step 0 is the initial residual, step k ≥ 1 is iteration k, and one last
//! step recomputes the true residual; each step's phase 1 (the product,
//! checked, and the inner products) writes scratch only, its commit
//! updates the vectors and the replicated scalars locally.

use crate::abft::{
    check_layout, encode_checksums, extended_on, move_blocks, rebuild_lost_blocks, reencode_checksums, regrid,
    set_up_call, verify_checksums, After, Before, ChecksumCheck, Extended, FtOptions, FtWorkspace, MatrixShape,
    RowVectors,
};
use crate::args::{check_two_process_columns, pdcg};
use crate::cg::iteration::{self, ColumnSums, Operator, Scalars};
use crate::cg::vectors::Vectors;
use crate::cg::{solve as cg_solve, CgOptions, CgReport, Detection};
use crate::error::{Error, Result};
use crate::matrix::DistMatrix;
use blacs_ft::index::numroc;
use blacs_ft::{Grid, Scope, ShrunkFrom};
use checksum::ChecksumLayout;
use recovery::cof::incremental::Frozen;
use recovery::cof::SavedGrid;
use recovery::protocol::{self, Algorithm, Phase, PhaseClock};
use recovery::Region;
use serde::{Deserialize, Serialize};

const ROUTINE: &str = crate::drivers::PDCG_FT.routine;

/// The phases of a step before its commit: the matrix-vector product
/// (with its checksum test) and the inner products.
pub const STEP_PHASES: &[Phase] = crate::drivers::PDCG_FT.step_phases;

/// Fault-tolerant [`crate::cg::pdcg`]: the same solve, the same report,
/// plus the recoveries and the silent errors caught.
///
/// * `region` (global): the resilient region holding the grid and the
///   status log.
/// * `a` (local input): as for `pdcg`; Q ≥ 2 process columns. Its storage
///   holds the checksums during the call (see [`pdcg_ft_in`]); its values
///   are unchanged.
/// * `b` (local input), `x` (local input/output), `opts` (global): as for
///   `pdcg`.
/// * `ft` (global): `verify` checks A's checksum relations at the end.
///   (A silent error the grid's injector plants,
///   [`blacs_ft::inject::SilentError`] `{ rank: r, step: k }`, corrupts
///   grid rank r's first matrix-vector product of iteration k: a test
///   hook.)
///
/// # Errors
/// As `pdcg`, agreed on every process, and a grid with one process
/// column (nothing to copy a lost process's vectors from) is an argument
/// error at the call. A solve that ends in an error returns it instead of
/// the report (its recoveries are not returned).
///
/// # Fault tolerance
/// A process failure in any phase of an iteration is repaired in place:
/// every survivor is at the last committed iteration; A's lost blocks are
/// rebuilt from its checksums, the lost vector pieces copied from another
/// process of the same process row, the scalars handed over; the solve
/// goes on from that iteration — no rollback, no lost iteration, the
/// iterates of a failure-free run (up to the rounding of the rebuilt A).
/// A replacement calls `pdcg_ft` with matrices of the same shapes (their
/// content is rebuilt); a call that had completed before it joined returns
/// the survivors' outcome and marks `x` lost ([`DistMatrix::is_lost`]).
/// A or b lost on some process is refused on every process
/// ([`Error::InputLost`]). More losses in one process row than the
/// checksum layout of `ft` tolerates (two for the reverse-neighboring
/// pairs, f + 1 for f rotating checksums) are
/// [`blacs_ft::Error::Unrecoverable`] on every survivor; a loss before the
/// checksums exist returns a process failure (see
/// [`crate::qr_ft::pdgeqrf_ft`]). Each product is checked against eᵀA: a
/// silent error in it is recomputed and reported in
/// [`CgReport::detections`].
///
/// Under the recovery policy `shrink` (or `auto`, once a spawn is
/// refused) a loss that no hot spare takes is recovered on a smaller
/// grid of the survivors: A's lost blocks are rebuilt onto a survivor of
/// their row, every block and the vectors (b, x, r, p, diag(A)⁻¹: any
/// survivor of a process row holds the row's entries) move to their
/// owners on the new grid, and the iterations go on from the committed
/// one. `a` and `x` come back distributed on that grid; the caller's `b`
/// stays as given, on the grid before (see docs/fault-tolerance.md,
/// "Shrink").
pub fn pdcg_ft(
    region: &mut Region,
    a: &mut DistMatrix,
    b: &DistMatrix,
    x: &mut DistMatrix,
    opts: &CgOptions,
    ft: &FtOptions,
) -> Result<CgReport> {
    pdcg_ft_in(region, a, b, x, opts, ft, &mut FtWorkspace::new())
}

/// [`pdcg_ft`] in caller-owned scratch: with [`FtWorkspace::in_place`] the
/// checksums live in A's own storage and nothing is copied (see
/// [`crate::qr_ft::pdgeqrf_ft_in`]).
pub fn pdcg_ft_in(
    region: &mut Region,
    a: &mut DistMatrix,
    b: &DistMatrix,
    x: &mut DistMatrix,
    opts: &CgOptions,
    ft: &FtOptions,
    work: &mut FtWorkspace,
) -> Result<CgReport> {
    let start = protocol::enter::<CgState, Error>(region, ROUTINE)?;
    if let protocol::Start::Done(done) = start {
        // Completed before a later failure: x is in place, but on a
        // replacement, which joined after it. (A solve that ended in an
        // error left x as it was: nothing of it is lost.)
        let outcome = done.outcome(opts)?;
        if region.current_call_completed_before_joining() {
            x.set_lost(true);
        }
        return Ok(CgReport { recoveries: Vec::new(), ..outcome });
    }
    let grid = region.grid();
    let layout = ChecksumLayout::new(ft.layout, a.m(), a.n(), a.nb(), grid.nprow() as usize, grid.npcol() as usize);
    let mut check = cg_solve::check_args(ROUTINE, grid, a, b, x, opts)
        .and_then(|()| check_two_process_columns(ROUTINE, pdcg::DESCA, "A", grid))
        .and_then(|()| check_layout(ROUTINE, pdcg::DESCA, ft.layout, &layout));
    if !start.joining() {
        check = check.and_then(|()| cg_solve::check_inputs(ROUTINE, grid, a, b, x));
    }
    let (ext, layout) = set_up_call(
        region,
        CgSteps::OP,
        ROUTINE,
        &start,
        a,
        work,
        (layout.ok(), crate::abft::Relations::Whole),
        check,
    )?;
    let lc = a.local_cols();
    let mut cg = CgSteps {
        ext,
        layout,
        lc,
        inputs: Some((b, &*x)),
        v: Vectors::default(),
        sums: ColumnSums::default(),
        state: CgState::default(),
        opts: opts.clone(),
        corrupt: region.grid().injector().silent_error(),
        rebuilt_here: false,
        moved: None,
        before_shrink: None,
    };
    let outcome = protocol::run(region, &mut cg, start, ft.verify);
    let CgSteps { ext, v, state, rebuilt_here, moved, .. } = cg;
    // A's storage back (a replacement's A gets its rebuilt blocks; after
    // a shrink, A is the matrix on the new grid, every block copied).
    let shrunk = moved.is_some();
    if let Some(moved) = moved {
        *a = moved;
    }
    ext.release(a, work, rebuilt_here || shrunk);
    let outcome = outcome?;
    // (x is left as it was when the solve ends in an error, as pdcg does.)
    let report = state.outcome(opts)?;
    if shrunk {
        *x = DistMatrix::zeros(region.grid(), x.m(), x.n(), x.mb(), x.nb())?;
    }
    v.write_x(region.grid(), x);
    x.set_lost(false);
    Ok(CgReport { recoveries: outcome.recoveries, check: outcome.check, earlier_s: outcome.earlier_s, ..report })
}

/// What the next step of a solve is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
enum Next {
    /// The initial residual.
    #[default]
    Start,
    /// An iteration.
    Iterate,
    /// The true residual at the end.
    Residual,
    /// Nothing: the solve is over.
    Done,
}

/// CG's replicated state: the scalars, where the solve stands, how it
/// ended, and the silent errors caught so far.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct CgState {
    /// Committed steps.
    steps: u64,
    next: Next,
    scalars: Scalars,
    iterations: u64,
    /// ‖b − A·x‖₂², once recomputed.
    true_rr: f64,
    /// Why the solve could not go on, when it could not (the same on every
    /// process).
    failure: Option<CgFailure>,
    detections: Vec<Detection>,
}

/// Why a solve could not go on: the errors that end a solve (see
/// `exchange`), as they travel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum CgFailure {
    /// See [`Error::NotPositiveDefinite`].
    NotPositiveDefinite { iteration: u64, curvature: f64 },
    /// See [`Error::Breakdown`]; any other error is carried as one, with
    /// its text.
    Breakdown { iteration: u64, reason: String },
}

impl CgFailure {
    fn of(e: &Error) -> CgFailure {
        match e {
            Error::NotPositiveDefinite { iteration, curvature, .. } => {
                CgFailure::NotPositiveDefinite { iteration: *iteration, curvature: *curvature }
            }
            Error::Breakdown { iteration, reason, .. } => {
                CgFailure::Breakdown { iteration: *iteration, reason: reason.clone() }
            }
            e => CgFailure::Breakdown { iteration: 0, reason: e.to_string() },
        }
    }

    fn error(&self) -> Error {
        match self {
            CgFailure::NotPositiveDefinite { iteration, curvature } => {
                Error::NotPositiveDefinite { routine: ROUTINE.into(), iteration: *iteration, curvature: *curvature }
            }
            CgFailure::Breakdown { iteration, reason } => {
                Error::Breakdown { routine: ROUTINE.into(), iteration: *iteration, reason: reason.clone() }
            }
        }
    }
}

impl CgState {
    /// The solve's report, or the error that ended it.
    fn outcome(&self, opts: &CgOptions) -> Result<CgReport> {
        if let Some(f) = &self.failure {
            return Err(f.error());
        }
        Ok(CgReport {
            iterations: self.iterations,
            converged: cg_solve::converged(&self.scalars, opts),
            relative_residual: iteration::relative(self.true_rr, self.scalars.bb),
            recurrence_residual: self.scalars.relative(),
            detections: self.detections.clone(),
            ..CgReport::default()
        })
    }
}

/// What a checkpoint of a solve must match: A's shape and the options the
/// vectors depend on.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct CgCall {
    matrix: MatrixShape,
    tol: f64,
    maxit: u64,
    jacobi: bool,
}

impl std::fmt::Display for CgCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} tol={:e} maxit={} jacobi={}", self.matrix, self.tol, self.maxit, self.jacobi)
    }
}

/// What phase 1 of a step hands to its commit.
enum CgScratch {
    Start(iteration::Start),
    Iterate(iteration::Step),
    Residual(f64, Vec<Detection>),
    /// The solve cannot go on (the same error on every process): the
    /// commit ends it.
    Failed(Error),
}

/// CG's share of the protocol.
struct CgSteps<'a> {
    ext: Extended,
    layout: ChecksumLayout,
    /// A's local columns (the extended matrix's data part).
    lc: usize,
    /// b and x₀, until the encoding takes them in row form.
    inputs: Option<(&'a DistMatrix, &'a DistMatrix)>,
    v: Vectors,
    sums: ColumnSums,
    state: CgState,
    opts: CgOptions,
    corrupt: Option<blacs_ft::inject::SilentError>,
    /// Whether this process's blocks were rebuilt (a replacement's).
    rebuilt_here: bool,
    /// After a shrink: A on the new grid, which the caller's takes the
    /// place of when the call ends (its blocks copied there from the
    /// extended matrix).
    moved: Option<DistMatrix>,
    /// The state on the grid before a shrink, until the new grid agreed
    /// that everything moved (see `Algorithm::settle_move`).
    before_shrink: Option<Box<Unmoved>>,
}

/// A solve's state on the grid before a shrink (see
/// [`CgSteps::before_shrink`]).
struct Unmoved {
    /// A after an earlier shrink, if any.
    moved: Option<DistMatrix>,
    ext: Extended,
    layout: ChecksumLayout,
    lc: usize,
    v: Vectors,
    sums: ColumnSums,
}

impl CgSteps<'_> {
    /// How many row-form vectors the solve keeps (b, x, r, p, and
    /// diag(A)⁻¹ with Jacobi).
    fn vector_count(&self) -> usize {
        if self.opts.jacobi {
            5
        } else {
            4
        }
    }

    /// After step `k`'s commit: an iteration that converged, or the last
    /// one allowed, is followed by the true residual.
    fn after_commit(&mut self, k: u64) {
        self.state.steps = k + 1;
        if self.state.next == Next::Iterate
            && (cg_solve::converged(&self.state.scalars, &self.opts) || self.state.iterations >= self.opts.maxit)
        {
            self.state.next = Next::Residual;
        }
    }
}

impl Algorithm for CgSteps<'_> {
    type Error = Error;
    type Scratch = CgScratch;
    type State = CgState;
    type Call = CgCall;
    type Check = ChecksumCheck;
    const OP: &'static str = crate::drivers::PDCG_FT.kill_op;
    const STEP_PHASES: &'static [Phase] = STEP_PHASES;
    const MOVES: bool = true;

    fn steps(&self) -> u64 {
        match self.state.next {
            Next::Done => self.state.steps,
            _ => self.state.steps + 1,
        }
    }

    fn state(&self) -> &CgState {
        &self.state
    }

    fn set_state(&mut self, state: CgState) {
        self.state = state;
    }

    fn encode(&mut self, grid: &Grid) -> Result<()> {
        encode_checksums(grid, &mut self.ext, &self.layout)?;
        if let Some((b, x)) = self.inputs.take() {
            self.v = Vectors::from_inputs(grid, &self.ext.matrix, b, x, self.opts.jacobi)?;
        }
        self.sums = ColumnSums::of(grid, &self.ext.matrix, self.lc)?;
        Ok(())
    }

    fn exchange(&mut self, grid: &Grid, k: u64, clock: &mut PhaseClock) -> Result<CgScratch> {
        let tamper = self.corrupt.filter(|e| e.strikes(grid.rank(), k)).map(|_| 1.0);
        let mut enter = |phase| clock.enter(grid, phase);
        let mut op = Operator {
            a: &self.ext.matrix,
            lc: self.lc,
            sums: Some(&self.sums),
            tamper,
            enter: &mut enter,
            routine: ROUTINE,
        };
        let done = match self.state.next {
            Next::Start => iteration::start(&mut op, grid, &self.v).map(CgScratch::Start),
            Next::Iterate => iteration::iterate(&mut op, grid, &self.v, &self.state.scalars, k).map(CgScratch::Iterate),
            Next::Residual | Next::Done => {
                iteration::true_residual(&mut op, grid, &self.v, k).map(|(rr, d)| CgScratch::Residual(rr, d))
            }
        };
        match done {
            // Findings from replicated values, the same on every process:
            // the solve ends with them. Anything else (a local error) goes
            // to the protocol as any driver's does.
            Err(e @ (Error::NotPositiveDefinite { .. } | Error::Breakdown { .. })) => Ok(CgScratch::Failed(e)),
            other => other,
        }
    }

    fn commit(&mut self, _grid: &Grid, k: u64, scratch: CgScratch) {
        match scratch {
            CgScratch::Start(st) => {
                self.state.detections.extend(st.detections.iter().cloned());
                iteration::apply_start(&mut self.v, &mut self.state.scalars, st);
                self.state.next = Next::Iterate;
            }
            CgScratch::Iterate(st) => {
                self.state.detections.extend(st.detections.iter().cloned());
                iteration::apply(&mut self.v, &mut self.state.scalars, st);
                self.state.iterations += 1;
            }
            CgScratch::Residual(rr, d) => {
                self.state.detections.extend(d);
                self.state.true_rr = rr;
                self.state.next = Next::Done;
            }
            CgScratch::Failed(e) => {
                self.state.failure = Some(CgFailure::of(&e));
                self.state.next = Next::Done;
            }
        }
        self.after_commit(k);
    }

    fn abort(&mut self, _k: u64) {
        // Phase 1 wrote scratch only.
    }

    fn rebuild(&mut self, grid: &Grid, _committed: u64, lost: &[i32]) -> Result<()> {
        // A never changes: its blocks are rebuilt as a factorization's at
        // step 0.
        rebuild_lost_blocks(grid, &mut self.ext, &self.layout, 0, lost)?;
        let q = grid.npcol();
        if let Some(&victim) = lost.iter().find(|&&r| r / q == grid.myrow()) {
            // The row's vector pieces, from its lowest surviving process.
            let root = (0..q).find(|&c| c != victim % q).unwrap_or(0);
            let lr = self.ext.matrix.local_rows();
            let len = if self.opts.jacobi { 5 * lr } else { 4 * lr };
            let mut buf = if grid.mycol() == root { self.v.pack() } else { vec![0.0; len] };
            grid.broadcast(Scope::Row, &mut buf, root)?;
            if grid.mycol() != root {
                self.v.unpack(&buf, lr);
            }
            if grid.rank() == victim {
                self.rebuilt_here = true;
                self.inputs = None;
            }
        }
        // The column sums cover the rebuilt blocks.
        self.sums = ColumnSums::of(grid, &self.ext.matrix, self.lc)?;
        Ok(())
    }

    fn verify(&self, grid: &Grid, _committed: u64) -> Result<ChecksumCheck> {
        verify_checksums(grid, &self.ext, &self.layout, 0)
    }

    /// A's checksums rebuild the layout's `f` per process row (the vectors
    /// are copied from a process of the same row).
    fn tolerated_losses(&self) -> usize {
        self.layout.tolerated_losses()
    }

    /// The matrix's shape and the options the vectors depend on.
    fn call(&self) -> CgCall {
        let o = &self.opts;
        CgCall { matrix: self.ext.shape(), tol: o.tol, maxit: o.maxit, jacobi: o.jacobi }
    }

    /// A with its checksums, then the vectors (restored processes take no
    /// inputs). (The left-factor sums of a factorization stay zero here:
    /// nothing is finished.)
    fn saved_arrays(&mut self) -> Vec<&mut [f64]> {
        self.inputs = None;
        let lr = self.ext.matrix.local_rows();
        let mut v = vec![self.ext.matrix.local_mut()];
        v.extend(self.v.arrays_mut(lr, self.opts.jacobi));
        v
    }

    /// The data: A without its checksum columns, and the vectors.
    fn with_committed_arrays(&mut self, save: &mut recovery::protocol::SaveArrays<'_>) {
        let data_len = self.ext.data_len(&self.layout);
        let arrays: Vec<&[f64]> = self.saved_arrays().into_iter().map(|a| &*a).collect();
        let mut data = vec![&arrays[0][..data_len]];
        data.extend(arrays[1..].iter().copied());
        save(&arrays, Some(data));
    }

    /// A with its checksums never changes: written once.
    fn frozen_at(&self, _committed: u64) -> Option<Vec<Frozen>> {
        let m = &self.ext.matrix;
        Some(vec![Frozen { ld: m.lld() as u64, rows: m.lld() as u64, cols: m.local_cols() as u64 }])
    }

    /// A's blocks as a factorization's at step 0; the vectors' entries of
    /// this process's rows from the file of process column 0 of the row
    /// that held them (every process of a row holds the same).
    fn read_saved_elsewhere(&mut self, saved: &SavedGrid) -> std::result::Result<(), (String, String)> {
        self.inputs = None;
        let mut runs = regrid::matrix_runs(&self.ext, &self.layout, saved, |_, _| false)?;
        let (p, q) = (saved.p as usize, saved.q as usize);
        let (m, mb) = (self.ext.matrix.m(), self.ext.matrix.mb());
        let lr = self.ext.matrix.local_rows();
        let rows: Vec<usize> = (0..lr).map(|l| self.ext.matrix.global_row(l)).collect();
        let vectors = if self.opts.jacobi { 5 } else { 4 };
        for pr in 0..p {
            let row_runs = regrid::runs_on(&rows, mb, p, pr);
            if row_runs.is_empty() {
                continue;
            }
            let (path, header, _) = &saved.files[pr * q];
            let old_lr = numroc(m, mb, pr, 0, p) as u64;
            let arrays = header.call.as_ref().map(|c| c.arrays.clone()).unwrap_or_default();
            let first =
                arrays.len().checked_sub(vectors).filter(|&f| f >= 1 && arrays[f..].iter().all(|&l| l == old_lr));
            let Some(first) = first else {
                let why = format!(
                    "holds local arrays of {arrays:?} values, not the {vectors} vectors of {old_lr} of its rows last"
                );
                return Err((path.display().to_string(), why));
            };
            let start: u64 = arrays[..first].iter().sum();
            for v in 0..vectors {
                for &(to, from, len) in &row_runs {
                    runs[pr * q].push(regrid::Run {
                        from: start + v as u64 * old_lr + from as u64,
                        dest: 1 + v,
                        to,
                        len,
                    });
                }
            }
        }
        let mut dests = vec![self.ext.matrix.local_mut()];
        dests.extend(self.v.arrays_mut(lr, self.opts.jacobi));
        regrid::fetch(saved, runs, &mut dests)
    }

    /// A's checksums as at its encoding (A never changes), and its column
    /// sums.
    fn reencode(&mut self, grid: &Grid, _committed: u64) -> Result<()> {
        reencode_checksums(grid, &mut self.ext, &self.layout, 0)?;
        self.sums = ColumnSums::of(grid, &self.ext.matrix, self.lc)?;
        Ok(())
    }

    /// A's lost blocks rebuilt onto survivors of their rows and every
    /// block moved to its owner on the new grid, the vectors with them
    /// (any survivor of a process row holds the row's entries), then A's
    /// checksums and column sums encoded for the new grid.
    fn move_to_shrunk_grid(&mut self, grid: &Grid, from: &ShrunkFrom, committed: u64, holds_state: bool) -> Result<()> {
        self.inputs = None;
        let vectors = RowVectors { count: self.vector_count() };
        let steps = (0, self.layout.tolerated_losses(), vectors);
        let packed = if holds_state { self.v.pack() } else { Vec::new() };
        if !grid.is_member() {
            let before = Before { ext: &mut self.ext, layout: &self.layout, rows: &packed };
            return move_blocks(grid, from, Some(before), None, steps, ROUTINE);
        }
        if !holds_state {
            // (Joined the new grid after the shrink: its A is on that grid
            // already, and receives every block and its rows' entries.)
            let lr = self.ext.matrix.local_rows();
            let mut rows = vec![0.0; vectors.count * lr];
            move_blocks(grid, from, None, Some(After { ext: &mut self.ext, rows: &mut rows }), steps, ROUTINE)?;
            self.v.unpack(&rows, lr);
            self.rebuilt_here = true;
            return self.reencode(grid, committed);
        }
        let (a, mut ext, layout) = extended_on(grid, self.ext.shape(), self.ext.relations, ROUTINE)?;
        let lr = ext.matrix.local_rows();
        let mut rows = vec![0.0; vectors.count * lr];
        let before = Before { ext: &mut self.ext, layout: &self.layout, rows: &packed };
        move_blocks(grid, from, Some(before), Some(After { ext: &mut ext, rows: &mut rows }), steps, ROUTINE)?;
        let mut v = Vectors::default();
        v.unpack(&rows, lr);
        let lc = a.local_cols();
        // (Kept until the new grid agrees, see `settle_move`.)
        self.before_shrink = Some(Box::new(Unmoved {
            moved: self.moved.replace(a),
            ext: std::mem::replace(&mut self.ext, ext),
            layout: std::mem::replace(&mut self.layout, layout),
            lc: std::mem::replace(&mut self.lc, lc),
            v: std::mem::replace(&mut self.v, v),
            sums: std::mem::take(&mut self.sums),
        }));
        self.reencode(grid, committed)
    }

    fn settle_move(&mut self, kept: bool) {
        let Some(before) = self.before_shrink.take() else { return };
        if !kept {
            // (Still whole on the grid before: recovered from there.)
            let Unmoved { moved, ext, layout, lc, v, sums } = *before;
            (self.moved, self.ext, self.layout, self.lc, self.v, self.sums) = (moved, ext, layout, lc, v, sums);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_replicated_state_survives_its_round_trip() {
        use recovery::Replicated;
        let base = CgState {
            steps: 12,
            next: Next::Iterate,
            scalars: Scalars { rho: 0.5, rr: 1e-9, bb: 4.0 },
            iterations: 11,
            true_rr: 0.0,
            failure: None,
            detections: vec![Detection { iteration: 7, defect: 1.0, tolerance: 2e-7 }],
        };
        let npd_error = Error::NotPositiveDefinite { routine: ROUTINE.into(), iteration: 3, curvature: -0.25 };
        let npd = CgState { failure: Some(CgFailure::of(&npd_error)), next: Next::Done, ..base.clone() };
        let breakdown = CgState {
            failure: Some(CgFailure::Breakdown { iteration: 9, reason: "pᵀq ≤ 0 — non-finite".into() }),
            next: Next::Residual,
            ..base.clone()
        };
        assert_eq!(npd.outcome(&CgOptions::default()).unwrap_err(), npd_error);
        for s in [base, npd, breakdown] {
            assert_eq!(CgState::from_bytes(&s.to_bytes()), Some(s));
        }
        // Corrupt bytes are refused, not misread.
        assert_eq!(CgState::from_bytes(&[1, 2, 3]), None);
        assert_eq!(CgState::from_bytes(&[]), None);
    }
}
