//! A factored panel's trip along its process row, one implementation for
//! QR (plain and fault-tolerant) and the fault-tolerant LU (plain LU passes
//! its panels around a ring): the owner's process column sends it as one
//! message, the others rebuild it from that message. Every process of a
//! row starts its panel broadcasts in panel order.

use crate::error::Result;
use blacs_ft::{Grid, PendingBcast, Scope};
use recovery::profile::{self, Part};

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

/// The owner's side of a non-blocking row broadcast (look-ahead): starts
/// sending `panel` from this process's column and returns at once; `None`
/// with one process column. The others receive it with [`broadcast_panel`]
/// or [`receive_panel_working`].
pub(crate) fn start_row_send<P: RowPanel>(grid: &Grid, panel: &P) -> Result<Option<PendingBcast<f64>>> {
    let _p = profile::part(Part::BCAST, None);
    if grid.npcol() == 1 {
        return Ok(None);
    }
    Ok(Some(grid.ibroadcast(Scope::Row, panel.row_message(), grid.mycol())?))
}

/// Collective over the process row: the panel `j0..j0+jb` from process
/// column `owner`. The owner passes its panel in `mine` and, if it already
/// started sending it ([`start_row_send`]), that broadcast in `sending`,
/// which is then only completed; the others receive it, with `lrows` local
/// rows. Non-blocking on every process, as the owner's look-ahead send is
/// (blocking and non-blocking broadcasts do not match); the wait sleeps
/// once it runs long (see `Grid::wait_broadcast`).
pub(crate) fn broadcast_panel<P: RowPanel>(
    grid: &Grid,
    (mine, sending): (Option<P>, Option<PendingBcast<f64>>),
    owner: usize,
    (j0, jb, lrows): (usize, usize, usize),
) -> Result<P> {
    let _p = profile::part(Part::BCAST, None);
    match (mine, sending) {
        (Some(p), sending) => {
            let sending = match sending {
                Some(pending) => Some(pending),
                None => start_row_send(grid, &p)?,
            };
            if let Some(pending) = sending {
                grid.wait_broadcast(pending)?;
            }
            Ok(p)
        }
        (None, _) => {
            let pending = grid.ibroadcast(Scope::Row, vec![0.0; P::row_message_len(jb, lrows)], owner as i32)?;
            Ok(P::from_row_message(j0, jb, lrows, grid.wait_broadcast(pending)?))
        }
    }
}

/// [`broadcast_panel`] on a process that does not own the panel, with
/// other work meanwhile: `work` (local work, a small piece per call, `false`
/// once it has none) runs for as long as the panel has not arrived, then
/// the broadcast is waited for as usual.
pub(crate) fn receive_panel_working<P: RowPanel>(
    grid: &Grid,
    owner: usize,
    (j0, jb, lrows): (usize, usize, usize),
    mut work: impl FnMut() -> bool,
) -> Result<P> {
    let _p = profile::part(Part::BCAST, None);
    let mut pending = grid.ibroadcast(Scope::Row, vec![0.0; P::row_message_len(jb, lrows)], owner as i32)?;
    while !grid.test_broadcast(&mut pending)? && work() {}
    Ok(P::from_row_message(j0, jb, lrows, grid.wait_broadcast(pending)?))
}
