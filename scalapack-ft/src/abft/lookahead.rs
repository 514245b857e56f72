//! The look-ahead of the factorizations: the owner of the next panel
//! factors it early (on a backed-up copy) and starts its broadcast; the
//! next step takes it from there.

use super::extended::Extended;
use crate::error::Result;
use crate::row_panel::{start_row_send, RowPanel};
use blacs_ft::{Grid, PendingBcast};

/// The next panel as its owner carries it into the next step.
pub(crate) struct LookAhead<P> {
    /// The factored panel, or the error that stopped it (reported at the
    /// next step's phase 1).
    pub panel: Result<P>,
    /// The panel's columns as the last commit left them, from local
    /// column `lc0`: an abort of the next step puts them back (and a
    /// periodic checkpoint saves them, not the panel factored ahead).
    pub lc0: usize,
    pub backup: Vec<f64>,
    /// Its broadcast along the process row, in flight.
    pub sending: Option<PendingBcast<f64>>,
}

impl<P> LookAhead<P> {
    /// Progresses the panel's broadcast (between chunks of the rest of
    /// the update: MPI moves a large message only while its sender is
    /// inside MPI); a failure is kept for the next step's phase 1 to
    /// report.
    pub fn progress(&mut self, grid: &Grid) {
        if let (Ok(_), Some(sending)) = (&self.panel, &mut self.sending) {
            if let Err(e) = grid.test_broadcast(sending) {
                self.panel = Err(e.into());
            }
        }
    }

    /// After the rest of the commit's update: a send that failed while it
    /// progressed puts the panel's columns back as the commit left them
    /// (the error is reported at the next step's phase 1).
    pub fn put_back_if_failed(&self, ext: &mut Extended) {
        if self.panel.is_err() {
            ext.restore_panel(self.lc0, &self.backup);
        }
    }
}

/// The look-ahead on the next panel's owner: the panel `early`, factored
/// ahead in place over its columns (backed up in `backup` from local
/// column `lc0`), starts its broadcast along the process row at once. An
/// error, the factorization's or the send's, puts the backup back and is
/// kept for the next step's phase 1 to report.
pub(crate) fn send_ahead<P: RowPanel>(
    grid: &Grid,
    ext: &mut Extended,
    (lc0, backup): (usize, Vec<f64>),
    early: Result<P>,
) -> LookAhead<P> {
    let started = match &early {
        Ok(p) => start_row_send(grid, p),
        Err(_) => Ok(None),
    };
    let (early, sending) = match started {
        Ok(sending) => (early, sending),
        Err(e) => (Err(e), None),
    };
    if early.is_err() {
        ext.restore_panel(lc0, &backup);
    }
    LookAhead { panel: early, lc0, backup, sending }
}
