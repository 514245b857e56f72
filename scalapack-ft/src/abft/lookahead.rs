//! The look-ahead of the factorizations: the owner of the next panel
//! factors it early (on a backed-up copy) and starts its broadcast; the
//! next step takes it from there. With it, the `panel` and `bcast` phases
//! of a step, which QR and LU share.

use super::extended::Extended;
use crate::error::Result;
use blacs_ft::{Grid, PendingBcast, Scope};

/// A factored panel in the form it travels along its process row: one
/// message of f64 (QR: V and T; LU: the pivots and L).
pub(crate) trait RowPanel: Sized {
    /// The message its owner sends.
    fn row_message(&self) -> Vec<f64>;
    /// The message's length for a panel of `jb` columns with `lrows`
    /// local rows.
    fn row_message_len(jb: usize, lrows: usize) -> usize;
    /// A receiver's panel `j0..j0+jb` (`lrows` local rows) from the message.
    fn from_row_message(j0: usize, jb: usize, lrows: usize, message: Vec<f64>) -> Self;
}

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

/// The `bcast` phase of a step: the panel `j0..j0+jb` along the process
/// row from process column `owner`, which completes the broadcast it
/// started during the last commit or starts it now (`mine` and `sending`
/// as [`owners_panel`] returns them); the others receive it, with `lrows`
/// local rows. Non-blocking on every process, as the owner's look-ahead
/// send is (blocking and non-blocking broadcasts do not match); the wait
/// sleeps once it runs long.
pub(crate) fn broadcast_panel<P: RowPanel>(
    grid: &Grid,
    (mine, sending): (Option<P>, Option<PendingBcast<f64>>),
    owner: usize,
    (j0, jb, lrows): (usize, usize, usize),
) -> Result<P> {
    let pending = match (&mine, sending) {
        (Some(_), Some(pending)) => pending,
        (Some(p), None) => grid.ibroadcast(Scope::Row, p.row_message(), owner as i32)?,
        (None, _) => grid.ibroadcast(Scope::Row, vec![0.0; P::row_message_len(jb, lrows)], owner as i32)?,
    };
    let message = grid.wait_broadcast(pending)?;
    Ok(mine.unwrap_or_else(|| P::from_row_message(j0, jb, lrows, message)))
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
        Ok(p) => grid.ibroadcast(Scope::Row, p.row_message(), grid.mycol()).map(Some),
        Err(_) => Ok(None),
    };
    let (early, sending) = match started {
        Ok(sending) => (early, sending),
        Err(e) => (Err(e.into()), None),
    };
    if early.is_err() {
        ext.restore_panel(lc0, &backup);
    }
    (early, backup, sending)
}
