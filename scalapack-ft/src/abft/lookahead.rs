//! The look-ahead of the factorizations: the owner of the next panel
//! factors it early (on a backed-up copy) and starts its broadcast; the
//! next step takes it from there.

use super::extended::Extended;
use crate::error::Result;
use crate::row_panel::{start_row_send, RowPanel};
use blacs_ft::{Grid, PendingBcast};

/// The next panel as its owner carries it into the next step: the
/// factored panel (or the error that stopped it), its backup, and its
/// broadcast in flight.
pub(crate) type LookAhead<P> = (Result<P>, Vec<f64>, Option<PendingBcast<f64>>);

/// The `panel` phase of a step on the panel's owner (`is_owner`; others
/// get `None`): the panel factored ahead during the last commit, or
/// factored now by `factor` on a backed-up panel (`jb` local columns from
/// `lc0`). The backup goes to `backup` (local column, data), for an abort
/// to restore; the broadcast the owner already started comes back with
/// the panel.
pub(crate) fn owners_panel<P>(
    ext: &mut Extended,
    ahead: Option<LookAhead<P>>,
    is_owner: bool,
    (lc0, jb): (usize, usize),
    backup: &mut Option<(usize, Vec<f64>)>,
    factor: impl FnOnce(&mut Extended) -> Result<P>,
) -> Result<(Option<P>, Option<PendingBcast<f64>>)> {
    let (early, saved, sending) = match ahead {
        Some((panel, saved, sending)) => (Some(panel), Some(saved), sending),
        None => (None, is_owner.then(|| ext.panel_backup(lc0, jb)), None),
    };
    *backup = saved.map(|b| (lc0, b));
    let mine = match (is_owner, early) {
        (false, _) => None,
        (true, Some(done)) => Some(done?),
        (true, None) => Some(factor(ext)?),
    };
    Ok((mine, sending))
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
    (early, backup, sending)
}
