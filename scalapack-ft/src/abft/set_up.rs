//! The start of every fault-tolerant call: its extended matrix set up, then
//! the agreed verdict on its arguments.

use super::extended::{Extended, Start};
use super::workspace::FtWorkspace;
use super::{Holding, Relations};
use crate::error::{agreed_refusal, Error, Result};
use crate::matrix::DistMatrix;
use checksum::{ChecksumLayout, LayoutError, LayoutKind};
use recovery::{protocol, Region};

/// Local: the argument error of a matrix whose shape cannot carry the
/// checksums of layout `kind` on this grid (`layout`'s error), against
/// its descriptor (argument `desc`): entry CTXT when the grid has too few
/// process columns for the layout (`Q < f + 1`), entry NB otherwise.
pub(crate) fn check_layout(
    routine: &str,
    desc: u32,
    kind: LayoutKind,
    layout: &std::result::Result<ChecksumLayout, LayoutError>,
) -> Result<()> {
    layout.as_ref().map(|_| ()).map_err(|e| {
        let (entry, name) = match e {
            LayoutError::TooFewProcessColumns { .. } | LayoutError::NeedTwoProcessColumns { .. } => {
                (crate::args::entry::CTXT, "CTXT_A")
            }
            _ => (crate::args::entry::NB, "A"),
        };
        crate::args::arg_error(routine, desc, entry, name, format!("cannot carry {} checksums: {e}", describe(kind)))
    })
}

/// The layout's name in messages.
fn describe(kind: LayoutKind) -> String {
    match kind {
        LayoutKind::ReverseNeighbor => "reverse-neighboring".into(),
        LayoutKind::Rotating { checksums } => format!("{checksums} rotating weighted"),
    }
}

/// Collective: sets up the call's extended matrix over `a`, its checksums
/// covering `relations` (when this
/// process's own checks, `check`, passed and `layout` exists), then
/// agrees on the verdict with every process (see
/// [`protocol::agree_to_start`]). The extended matrix is set up before the
/// verdict, so that a process that cannot get its memory says so in the
/// agreement (A is untouched until the encoding).
///
/// On any refusal `a` and `work` get their storage back and every process
/// returns the same error.
#[allow(clippy::too_many_arguments)]
pub(crate) fn set_up_call<S>(
    region: &mut Region,
    op: &str,
    routine: &str,
    start: &protocol::Start<S>,
    a: &mut DistMatrix,
    work: &mut FtWorkspace,
    (layout, relations): (Option<ChecksumLayout>, Relations),
    mut check: Result<()>,
) -> Result<(Extended, ChecksumLayout)> {
    let mut ext = None;
    if let (Ok(()), Some(layout)) = (&check, &layout) {
        let how = if start.joining() { Start::Join } else { Start::Fresh };
        match Extended::new(region.grid(), a, layout, work, how, relations, routine) {
            Ok(e) => ext = Some(e),
            Err(e) => check = Err(e),
        }
    }
    let verdict = agree_to_start(region, op, start, check);
    match (verdict, ext, layout) {
        (Ok(()), Some(ext), Some(layout)) => Ok((ext, layout)),
        (verdict, ext, _) => {
            if let Some(ext) = ext {
                ext.release(a, work, false);
            }
            Err(verdict.err().unwrap_or_else(|| {
                blacs_ft::Error::Unrecoverable { reason: format!("{routine}: no extended matrix after the checks") }
                    .into()
            }))
        }
    }
}

/// Collective: the call's verdict on `check`, this process's outcome of a
/// check of its start ([`protocol::agree_to_start`]): every process
/// returns the same typed error (the lowest failing rank's), and a refusal
/// stays in the region's log.
fn agree_to_start<S>(region: &mut Region, op: &str, start: &protocol::Start<S>, check: Result<()>) -> Result<()> {
    protocol::agree_to_start(region, op, start, check, agreed_refusal)
}

/// Collective, after the verdict of a call that takes protected factors
/// (`holding`: this process's copy, as [`super::ProtectedFactors`] holds
/// it): a second verdict, now that the first one's meeting has mended
/// the region's protected results, so that every process refuses factors
/// that are not whole everywhere alike — [`Error::InputLost`] of
/// `routine` (argument `position`, `argument`), naming the lowest
/// process whose copy is not whole — and the log keeps the refusal. A
/// joining replacement makes none (the survivors are inside their
/// recovery, whose mend fills its copy).
#[allow(clippy::too_many_arguments)]
pub(crate) fn agree_on_factors<S>(
    region: &mut Region,
    op: &str,
    start: &protocol::Start<S>,
    holding: Holding,
    routine: &str,
    position: u32,
    argument: &str,
) -> Result<()> {
    if start.joining() {
        return Ok(());
    }
    let held = check_factors_held(holding, region.grid().rank(), routine, position, argument);
    agree_to_start(region, op, start, held)
}

/// Local: [`Error::InputLost`] of `routine` (argument `position`,
/// `argument`, this process being grid rank `rank`) unless this process
/// holds the factors whole (`holding`) — the check that
/// [`agree_on_factors`] agrees on, or that a call's verdict takes with
/// its other checks when its meeting mends nothing.
pub(crate) fn check_factors_held(
    holding: Holding,
    rank: i32,
    routine: &str,
    position: u32,
    argument: &str,
) -> Result<()> {
    match holding {
        Holding::Whole => Ok(()),
        Holding::Hollow | Holding::Lost => {
            Err(Error::InputLost { routine: routine.into(), position, argument: argument.into(), rank })
        }
    }
}
