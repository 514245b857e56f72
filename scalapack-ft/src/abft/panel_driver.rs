//! What the panel factorizations (QR, LU) share of the protocol's
//! `Algorithm`: the extended matrix, the current panel's backup, the
//! look-ahead, and the abort, rebuild, verification and checkpoint arrays
//! made of them.

use super::extended::{Extended, MatrixShape};
use super::lookahead::LookAhead;
use super::{rebuild_lost_blocks, verify_checksums, ChecksumCheck};
use crate::error::Result;
use blacs_ft::{Grid, PendingBcast};
use checksum::ReverseNeighborLayout;

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
    pub layout: ReverseNeighborLayout,
    /// The current panel's backup, on its owner.
    pub backup: Option<PanelBackup>,
    /// The next panel, factored ahead by its owner.
    pub ahead: Option<LookAhead<P>>,
}

impl<P> PanelDriver<P> {
    /// A driver at its start: no backup, nothing factored ahead.
    pub fn new(ext: Extended, layout: ReverseNeighborLayout) -> PanelDriver<P> {
        PanelDriver { ext, layout, backup: None, ahead: None }
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
            Some(LookAhead { panel, backup, sending }) => (Some(panel), Some(backup), sending),
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
        self.ahead = None;
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
}
