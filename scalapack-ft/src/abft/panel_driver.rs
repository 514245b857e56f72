//! What the panel factorizations (QR, LU, Cholesky) share of the protocol's
//! `Algorithm`: the extended matrix, the current panel's backup, the
//! look-ahead, and the encoding, abort, rebuild, verification and
//! checkpoint arrays made of them ([`PanelDriver`]); each factorization
//! supplies its steps ([`PanelSteps`]) and [`PanelFactorization`] is the
//! `Algorithm` of each.

use super::extended::{layout_err, Extended, MatrixShape};
use super::lookahead::LookAhead;
use super::{
    encode_checksums, extended_on, move_blocks, rebuild_lost_blocks, verify_checksums, After, Before, ChecksumCheck,
    FtOptions, FtReport, FtWorkspace, RowVectors,
};
use crate::error::{Error, Result};
use crate::matrix::DistMatrix;
use blacs_ft::{Grid, PendingBcast, ShrunkFrom};
use checksum::ChecksumLayout;
use recovery::cof::incremental::Frozen;
use recovery::cof::SavedGrid;
use recovery::protocol::{self, Algorithm, Phase, PhaseClock};
use recovery::Region;
use recovery::Replicated;

/// A test switch: set, every fresh call checks its checksums right after
/// encoding them (collective; inconsistent ones end the call with an
/// unrecoverable error naming the defects).
pub(crate) const CHECK_ENCODING_VAR: &str = "FTLA_TEST_CHECK_ENCODING";

/// The current panel's columns as the last commit left them, on the
/// panel's owner: an abort puts them back.
pub(crate) struct PanelBackup {
    /// The panel's first local column.
    pub local_col: usize,
    /// Its columns' local rows, column after column.
    pub data: Vec<f64>,
}

/// A panel factorization's state on the extended matrix.
pub(crate) struct PanelDriver<P> {
    /// This process's share of the ABFT state.
    pub ext: Extended,
    /// Where the checksums of each group live.
    pub layout: ChecksumLayout,
    /// The current panel's backup, on its owner.
    pub backup: Option<PanelBackup>,
    /// The next panel, factored ahead by its owner.
    pub ahead: Option<LookAhead<P>>,
    /// After a shrink: the call's matrix on the new grid, which the
    /// caller's takes the place of when the call ends (its blocks are
    /// copied there from the extended matrix, as into A otherwise).
    pub moved: Option<DistMatrix>,
    /// The state of the grid before a shrink, until the new grid agreed
    /// that every block moved (see `Algorithm::settle_move`).
    /// (With the call's matrix after an earlier shrink, if any.)
    before_shrink: Option<(Extended, ChecksumLayout, Option<DistMatrix>)>,
}

impl<P> PanelDriver<P> {
    /// A driver at its start: no backup, nothing factored ahead.
    pub fn new(ext: Extended, layout: ChecksumLayout) -> PanelDriver<P> {
        PanelDriver { ext, layout, backup: None, ahead: None, moved: None, before_shrink: None }
    }

    /// The `panel` phase of a step on the panel's owner (`is_owner`;
    /// others get `None`): the panel factored ahead during the last
    /// commit, or factored now by `factor` on a backed-up panel (`jb` local
    /// columns from `lc0`). The backup is kept for an abort to restore; the
    /// broadcast the owner already started comes back with the panel.
    pub fn owners_panel(
        &mut self,
        is_owner: bool,
        (lc0, jb): (usize, usize),
        factor: impl FnOnce(&mut Extended) -> Result<P>,
    ) -> Result<(Option<P>, Option<PendingBcast<f64>>)> {
        let (early, saved, sending) = match self.ahead.take() {
            Some(LookAhead { panel, backup, sending, .. }) => (Some(panel), Some(backup), sending),
            None => (None, is_owner.then(|| self.ext.panel_backup(lc0, jb)), None),
        };
        self.backup = saved.map(|data| PanelBackup { local_col: lc0, data });
        let mine = match (is_owner, early) {
            (false, _) => None,
            (true, Some(done)) => Some(done?),
            (true, None) => Some(factor(&mut self.ext)?),
        };
        Ok((mine, sending))
    }

    /// Phase 1 of a step failed: the panel's backup is put back and the
    /// look-ahead dropped (the next attempt factors the panel again).
    pub fn abort(&mut self) {
        if let Some(b) = self.backup.take() {
            self.ext.restore_panel(b.local_col, &b.data);
        }
        self.discard_ahead();
    }

    /// The look-ahead dropped, its panel's columns put back as the last
    /// commit left them (the panel was factored over them in place), and
    /// its broadcast abandoned: a failure before the next step's phase 1
    /// took the look-ahead over (see `Algorithm::discard_ahead`).
    pub fn discard_ahead(&mut self) {
        if let Some(a) = self.ahead.take() {
            if !a.backup.is_empty() {
                self.ext.restore_panel(a.lc0, &a.backup);
            }
        }
    }

    /// Collective: the `lost` ranks' blocks rebuilt at `committed` steps.
    pub fn rebuild(&mut self, grid: &Grid, committed: u64, lost: &[i32]) -> Result<()> {
        rebuild_lost_blocks(grid, &mut self.ext, &self.layout, committed as usize, lost)
    }

    /// Collective: the checksum relations at `committed` steps.
    pub fn verify(&self, grid: &Grid, committed: u64) -> Result<ChecksumCheck> {
        verify_checksums(grid, &self.ext, &self.layout, committed as usize)
    }

    /// The matrix's global shape (what a checkpoint must match).
    pub fn call(&self) -> MatrixShape {
        self.ext.shape()
    }

    /// What a checkpoint saves of this process's state.
    pub fn saved_arrays(&mut self) -> Vec<&mut [f64]> {
        self.ext.saved_arrays()
    }

    /// Runs `save` on the arrays as the last commit left them: the panel
    /// factored ahead (in place, its broadcast in flight from a copy of
    /// its own) is swapped out for its backup during the save and back in
    /// after it.
    pub fn with_committed_arrays(&mut self, save: &mut recovery::protocol::SaveArrays<'_>) {
        let swap = self.ahead.as_ref().filter(|a| !a.backup.is_empty()).map(|a| (a.lc0, a.backup.clone()));
        let ahead = swap.as_ref().map(|(lc0, b)| {
            let current = self.ext.panel_backup(*lc0, b.len() / self.ext.matrix.lld().max(1));
            self.ext.restore_panel(*lc0, b);
            (*lc0, current)
        });
        {
            let data_len = self.ext.data_len(&self.layout);
            let arrays: Vec<&[f64]> = self.ext.saved_arrays().into_iter().map(|a| &*a).collect();
            let data = vec![&arrays[0][..data_len]];
            save(&arrays, Some(data));
        }
        if let Some((lc0, current)) = ahead {
            self.ext.restore_panel(lc0, &current);
        }
    }
}

/// A panel factorization's own part of a step (what [`PanelDriver`] does
/// not share): QR's, LU's and Cholesky's steps. [`PanelFactorization`] makes the
/// protocol's `Algorithm` of it.
pub(crate) trait PanelSteps {
    /// The factored panel, as it is broadcast.
    type Panel;
    /// What phase 1 of a step hands to its commit.
    type Scratch;
    /// The replicated state (QR's tau, LU's pivots).
    type State: Replicated;
    /// The operation's name in kill points.
    const OP: &'static str;
    /// Whether later steps move the rows of the finished columns' left
    /// factor (LU's row interchanges permute L; QR's V never changes):
    /// then only the finished rows are frozen (see
    /// `recovery::protocol::Algorithm::frozen_at`).
    const LEFT_FACTOR_MOVES: bool;
    /// The phases of a step's phase 1, in order.
    const STEP_PHASES: &'static [Phase];

    /// Number of steps.
    fn steps(&self) -> u64;
    /// The replicated state.
    fn state(&self) -> &Self::State;
    /// Replaces the replicated state (a replacement's, from the survivors).
    fn set_state(&mut self, state: Self::State);
    /// The replicated state, once the steps are over.
    fn into_state(self) -> Self::State;
    /// Phase 1 of step `k` on `driver` (collective; scratch only).
    fn exchange(
        &mut self,
        driver: &mut PanelDriver<Self::Panel>,
        grid: &Grid,
        k: u64,
        clock: &mut PhaseClock,
    ) -> Result<Self::Scratch>;
    /// Local work into scratch while the step's agreement runs (see
    /// `recovery::protocol::Algorithm::while_agreeing`).
    fn while_agreeing(
        &mut self,
        _driver: &PanelDriver<Self::Panel>,
        _scratch: &mut Self::Scratch,
        _agreed: &mut dyn FnMut() -> bool,
    ) {
    }
    /// The local commit of step `k`.
    fn commit(&mut self, driver: &mut PanelDriver<Self::Panel>, grid: &Grid, k: u64, scratch: Self::Scratch);
    /// How many steps' columns are finished at `committed` commits: what
    /// the checksum relations count as finished (all of them, unless the
    /// factorization stopped early and its later steps did nothing:
    /// Cholesky at a minor that is not positive definite).
    fn finished(&self, committed: u64) -> u64 {
        committed
    }
    /// Whether the committed state at `committed` steps on a grid of
    /// `layout` holds an update that this grid's next step completes (LU's
    /// deferred far update on one process row): a checkpoint of it resumes
    /// on that grid only. No by default.
    fn grid_bound_at(&self, _layout: &ChecksumLayout, _committed: u64) -> bool {
        false
    }
    /// Collective, on a call resumed at `committed` steps from a save on
    /// another grid, once every process read its blocks (before the
    /// checksums are encoded): puts the state in the form this grid's
    /// steps expect at that commit (LU on one process row takes a deferred
    /// update out again). Nothing by default.
    fn after_regrid(&mut self, _driver: &mut PanelDriver<Self::Panel>, _grid: &Grid, _committed: u64) -> Result<()> {
        Ok(())
    }
    /// Collective over the new grid after a shrink moved the data blocks
    /// committed at `committed` steps on a grid of layout `before`, before
    /// the re-encoding: completes what that grid's next step would have
    /// completed ([`PanelSteps::grid_bound_at`]), so that the state is
    /// the one every grid has at that commit (LU on one process row
    /// applies a deferred far update). Nothing by default.
    fn complete_moved_state(
        &mut self,
        _driver: &mut PanelDriver<Self::Panel>,
        _grid: &Grid,
        _before: &ChecksumLayout,
        _committed: u64,
    ) -> Result<()> {
        Ok(())
    }
    /// A move onto a smaller grid was taken back (see
    /// `recovery::protocol::Algorithm::settle_move`): undoes what
    /// [`PanelSteps::after_regrid`] did for the new grid (the state it
    /// moved from was not bound to its grid). Nothing by default.
    fn undo_regrid(&mut self) {}
}

/// A panel factorization on the step-commit protocol: its steps, and the
/// extended matrix they run on.
pub(crate) struct PanelFactorization<S: PanelSteps> {
    pub driver: PanelDriver<S::Panel>,
    pub steps: S,
}

/// A panel factorization that ran to its end on the extended matrix: the
/// factors with their checksums as at the final commit point, and the
/// replicated state `T` (LU's pivots, QR's tau).
pub(crate) struct Factored<T> {
    pub ext: Extended,
    pub layout: ChecksumLayout,
    pub state: T,
    pub report: FtReport,
}

impl<S: PanelSteps> PanelFactorization<S> {
    /// Collective: runs the started call (`start`, not one completed
    /// before) to its end on the step-commit protocol; `overhead_model`
    /// (global) goes into the report. On an error `a` and `work` have their
    /// storage back (`a`'s content undefined past the first commit point).
    pub fn run(
        mut self,
        region: &mut Region,
        start: protocol::Start<S::State>,
        opts: &FtOptions,
        overhead_model: f64,
        a: &mut DistMatrix,
        work: &mut FtWorkspace,
    ) -> Result<Factored<S::State>> {
        let outcome = protocol::run(region, &mut self, start, opts.verify);
        // (After a shrink, A is the matrix on the grid the call ended on.)
        if let Some(moved) = self.driver.moved.take() {
            *a = moved;
        }
        match outcome {
            Ok(outcome) => Ok(Factored {
                ext: self.driver.ext,
                layout: self.driver.layout,
                state: self.steps.into_state(),
                report: FtReport {
                    recoveries: outcome.recoveries,
                    overhead_model,
                    check: outcome.check,
                    earlier_s: outcome.earlier_s,
                },
            }),
            Err(e) => {
                self.driver.ext.release(a, work, false);
                Err(e)
            }
        }
    }
}

impl<S: PanelSteps> Algorithm for PanelFactorization<S> {
    type Error = Error;
    type Scratch = S::Scratch;
    type State = S::State;
    type Check = ChecksumCheck;
    type Call = MatrixShape;
    const OP: &'static str = S::OP;
    const STEP_PHASES: &'static [Phase] = S::STEP_PHASES;
    const MOVES: bool = true;

    fn steps(&self) -> u64 {
        self.steps.steps()
    }

    fn state(&self) -> &S::State {
        self.steps.state()
    }

    fn set_state(&mut self, state: S::State) {
        self.steps.set_state(state)
    }

    fn encode(&mut self, grid: &Grid) -> Result<()> {
        let (ext, layout) = (&mut self.driver.ext, &self.driver.layout);
        match ext.relations {
            super::Relations::Whole => encode_checksums(grid, ext, layout)?,
            // (One triangle: the whole blocks' sums, split along the
            // groups' diagonals.)
            super::Relations::LowerTriangle => super::encode_lower::encode_lower_checksums(grid, ext, layout)?,
        }
        if std::env::var_os(CHECK_ENCODING_VAR).is_some() {
            // (A test switch: the encoding against the relations'
            // definition, recomputed.)
            let check = verify_checksums(grid, ext, layout, 0)?;
            if !check.ok {
                return Err(blacs_ft::Error::Unrecoverable {
                    reason: format!("the checksums as encoded do not hold: {check:?}"),
                }
                .into());
            }
        }
        Ok(())
    }

    fn exchange(&mut self, grid: &Grid, k: u64, clock: &mut PhaseClock) -> Result<S::Scratch> {
        self.steps.exchange(&mut self.driver, grid, k, clock)
    }

    fn while_agreeing(&mut self, scratch: &mut S::Scratch, agreed: &mut dyn FnMut() -> bool) {
        self.steps.while_agreeing(&self.driver, scratch, agreed)
    }

    fn commit(&mut self, grid: &Grid, k: u64, scratch: S::Scratch) {
        self.steps.commit(&mut self.driver, grid, k, scratch)
    }

    fn abort(&mut self, _k: u64) {
        self.driver.abort();
    }

    fn discard_ahead(&mut self) {
        self.driver.discard_ahead();
    }

    fn rebuild(&mut self, grid: &Grid, committed: u64, lost: &[i32]) -> Result<()> {
        self.driver.rebuild(grid, self.steps.finished(committed), lost)
    }

    fn verify(&self, grid: &Grid, committed: u64) -> Result<ChecksumCheck> {
        self.driver.verify(grid, self.steps.finished(committed))
    }

    fn tolerated_losses(&self) -> usize {
        self.driver.layout.tolerated_losses()
    }

    fn call(&self) -> MatrixShape {
        self.driver.call()
    }

    fn saved_arrays(&mut self) -> Vec<&mut [f64]> {
        self.driver.saved_arrays()
    }

    fn with_committed_arrays(&mut self, save: &mut recovery::protocol::SaveArrays<'_>) {
        self.driver.with_committed_arrays(save)
    }

    /// No later step changes the finished rows (of R or U, and the rows
    /// of D_g beside them) nor QR's finished columns (V and R) and the
    /// D_g of its finished groups.
    fn frozen_at(&self, committed: u64) -> Option<Vec<Frozen>> {
        let committed = self.steps.finished(committed);
        let (ext, layout) = (&self.driver.ext, &self.driver.layout);
        let m = &ext.matrix;
        let done = (committed as usize * m.nb()).min(layout.m().min(layout.n()));
        let rows = m.local_rows_before(done) as u64;
        let cols = if S::LEFT_FACTOR_MOVES { 0 } else { m.local_cols_before(done) as u64 };
        let mut frozen = vec![Frozen { ld: m.lld() as u64, rows, cols }];
        // (The D_g this process holds, in the order of `saved_arrays`.)
        // (D, and U after it for Cholesky: whole when frozen.)
        let (lr, nb) = (m.local_rows() as u64, (m.nb() * ext.relations.side_sums()) as u64);
        let finished_groups = layout.finished_groups(committed as usize);
        for (g, _) in ext.left_sums.iter().enumerate().filter(|(_, d)| d.is_some()) {
            let whole = !S::LEFT_FACTOR_MOVES && g < finished_groups;
            frozen.push(Frozen { ld: lr, rows: if whole { lr } else { rows }, cols: if whole { nb } else { 0 } });
        }
        Some(frozen)
    }

    fn portable_at(&self, committed: u64) -> bool {
        !self.steps.grid_bound_at(&self.driver.layout, committed)
    }

    fn read_saved_elsewhere(&mut self, saved: &SavedGrid) -> std::result::Result<(), (String, String)> {
        let grid_bound = |layout: &ChecksumLayout, committed: u64| self.steps.grid_bound_at(layout, committed);
        let runs = super::regrid::matrix_runs(&self.driver.ext, &self.driver.layout, saved, grid_bound)?;
        super::regrid::fetch(saved, runs, &mut [self.driver.ext.matrix.local_mut()])
    }

    fn reencode(&mut self, grid: &Grid, committed: u64) -> Result<()> {
        self.steps.after_regrid(&mut self.driver, grid, committed)?;
        let finished = self.steps.finished(committed) as usize;
        super::verify::reencode_checksums(grid, &mut self.driver.ext, &self.driver.layout, finished)
    }

    /// The lost blocks rebuilt onto survivors of their rows, every data
    /// block moved to its owner on the new grid ([`super::move_blocks`]),
    /// then the state put in the form the new grid's steps expect and the
    /// checksums encoded for it, as for a call resumed on another grid.
    fn move_to_shrunk_grid(&mut self, grid: &Grid, from: &ShrunkFrom, committed: u64, holds_state: bool) -> Result<()> {
        let shape = self.driver.ext.shape();
        let (m, n, nb) = (shape.m as usize, shape.n as usize, shape.nb as usize);
        let (p, q) = (from.shape.p as usize, from.shape.q as usize);
        let before_layout = ChecksumLayout::new(shape.layout, m, n, nb, p, q).map_err(layout_err)?;
        let steps = (self.steps.finished(committed) as usize, before_layout.tolerated_losses(), RowVectors::default());
        let routine = S::OP;
        if !grid.is_member() {
            let before = Before { ext: &mut self.driver.ext, layout: &self.driver.layout, rows: &[] };
            return move_blocks(grid, from, Some(before), None, steps, routine);
        }
        if !holds_state {
            // (Joined the new grid after the shrink: its extended matrix is
            // on that grid already, and receives every block.)
            let after = After { ext: &mut self.driver.ext, rows: &mut [] };
            move_blocks(grid, from, None, Some(after), steps, routine)?;
            self.steps.complete_moved_state(&mut self.driver, grid, &before_layout, committed)?;
            return self.reencode(grid, committed);
        }
        let (a, mut after, after_layout) = extended_on(grid, shape, self.driver.ext.relations, routine)?;
        let before = Before { ext: &mut self.driver.ext, layout: &self.driver.layout, rows: &[] };
        move_blocks(grid, from, Some(before), Some(After { ext: &mut after, rows: &mut [] }), steps, routine)?;
        let old_ext = std::mem::replace(&mut self.driver.ext, after);
        let old_layout = std::mem::replace(&mut self.driver.layout, after_layout);
        // (Kept until the new grid agrees, see `settle_move`.)
        let earlier = self.driver.moved.replace(a);
        self.driver.before_shrink = Some((old_ext, old_layout, earlier));
        self.steps.complete_moved_state(&mut self.driver, grid, &before_layout, committed)?;
        self.reencode(grid, committed)
    }

    fn settle_move(&mut self, kept: bool) {
        let Some((ext, layout, earlier)) = self.driver.before_shrink.take() else { return };
        if !kept {
            // (Still whole on the grid before: recovered from there.)
            self.driver.ext = ext;
            self.driver.layout = layout;
            self.driver.moved = earlier;
            self.steps.undo_regrid();
        }
    }
}
