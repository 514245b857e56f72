//! A call's committed state moved onto the grid a shrink left
//! (docs/fault-tolerance.md, "Shrink"): every survivor, those that the new
//! grid has no place for included, takes part.
//!
//! 1. **Rebuild**: each lost process's blocks are rebuilt at the committed
//!    step exactly as for a replacement ([`super::rebuild_lost_blocks`]),
//!    onto the survivor of its process row that holds its data
//!    ([`ShrunkFrom::holders`]): that survivor plays the lost position of
//!    the grid before the shrink beside its own
//!    ([`Grid::former_position`]), in an extended matrix of that
//!    position's shape.
//! 2. **Move**: every data block goes from the position that held it to
//!    its owner on the new grid — the owners and local places on either
//!    grid follow from the shapes and the block size alone, as when a
//!    checkpoint resumes on another grid ([`super::regrid`]) — in one
//!    exchange between every pair of survivors.
//!
//! The checksums and left-factor sums are not moved: the caller encodes
//! them for the new grid and its layout at the committed step, as a
//! resumed call does. Until the move is complete nothing of the grid
//! before is changed, so a failure during it is recovered from that grid.

use super::extended::{Extended, Start};
use super::regrid::{runs_between, Place};
use super::{rebuild_lost_blocks, FtWorkspace};
use crate::error::{Error, Result};
use crate::matrix::DistMatrix;
use blacs_ft::{Grid, Mailbox, ShrunkFrom};
use checksum::ChecksumLayout;
use std::rc::Rc;

/// Tag of the exchange of blocks.
const TAG_MOVE: i32 = 0x5B1;

/// This process's state of the grid before the shrink: its extended
/// matrix there and that grid's layout (`None` on a process that joined
/// after the shrink, which holds nothing of it).
pub(crate) struct Before<'a> {
    pub ext: &'a mut Extended,
    pub layout: &'a ChecksumLayout,
}

/// Collective over [`Grid::survivors`]: rebuilds the lost positions'
/// blocks of the grid before the shrink at `finished` steps onto their
/// holders (at most `tolerated` per process row, what the checksums
/// rebuild), then moves every data block into `after` (this process's
/// extended matrix on the new grid, checksums and sums left to the
/// caller; `None` on a survivor the new grid has no place for).
///
/// # Errors
/// A process failure (the survivors' communicator is revoked, so that
/// every survivor returns); an unrecoverable error, the same on every
/// survivor, when a survivor would have to play two lost positions (two
/// losses of one process row spread over too few survivors).
pub(crate) fn move_blocks(
    grid: &Grid,
    from: &ShrunkFrom,
    before: Option<Before<'_>>,
    after: Option<&mut Extended>,
    (finished, tolerated): (usize, usize),
    routine: &str,
) -> Result<()> {
    let survivors = grid.survivors();
    let me = survivors.rank();
    // (More losses in a process row than the checksums rebuild: said as
    // a repair says it.)
    let q = from.shape.q as usize;
    let coords: Vec<(usize, usize)> = from.lost.iter().map(|&g| (g as usize / q, g as usize % q)).collect();
    if let Some((row, cols)) = blacs_ft::row_beyond_tolerance(&coords, tolerated) {
        let ranks: Vec<i32> = cols.iter().map(|&c| (row * q + c) as i32).collect();
        return Err(blacs_ft::Error::too_many_losses_in_row(row, &ranks, tolerated).into());
    }
    let holders: Vec<i32> = from.holders.iter().map(|h| h.unwrap_or(-1)).collect();
    if let Some(g) = from.lost.iter().find(|&&g| holders[g as usize] < 0) {
        return Err(blacs_ft::Error::Unrecoverable {
            reason: format!("grid rank {g} of the {} grid was lost with every other process of its row", from.shape),
        }
        .into());
    }
    // (Two lost positions of one row would be played by two survivors
    // that each wait, in their own position's part, for the other's
    // receive: one per row, within every layout's tolerance.)
    if let Some((row, cols)) = blacs_ft::row_beyond_tolerance(&coords, 1) {
        let ranks: Vec<String> = cols.iter().map(|&c| (row * q + c).to_string()).collect();
        return Err(blacs_ft::Error::Unrecoverable {
            reason: format!(
                "ranks {} of process row {row} of the {} grid were lost together: a shrink rebuilds one lost \
                 process per process row",
                ranks.join(" and "),
                from.shape
            ),
        }
        .into());
    }
    // The positions this process plays: its own (not lost), then the lost
    // one it holds, if any.
    let own = (0..holders.len() as i32).find(|g| holders[*g as usize] == me && !from.lost.contains(g));
    let ghost = from.lost.iter().copied().find(|&g| holders[g as usize] == me);
    // (Any error here leaves partners waiting for this process: they
    // are set free, and meet it in the next repair or its error.)
    let failed = |e: Error| {
        let _ = survivors.revoke();
        grid.revoke();
        e
    };
    let Some(Before { ext, layout }) = before else {
        return exchange_into(grid, from, after).map_err(failed);
    };
    let mut rebuilt: Option<Extended> = None;
    let mailbox = Rc::new(Mailbox::default());
    let mut rebuild = || -> Result<()> {
        if let Some(position) = own {
            let view = grid.former_position(from, position, &mailbox)?;
            rebuild_lost_blocks(&view, ext, layout, finished, &from.lost)?;
        }
        if let Some(position) = ghost {
            let view = grid.former_position(from, position, &mailbox)?;
            let (m, n, nb) = (ext.matrix.m(), ext.shape().n as usize, ext.matrix.nb());
            let mut shape = DistMatrix::zeros(&view, m, n, nb, nb)?;
            let mut work = FtWorkspace::new();
            let mut lost = Extended::new(&view, &mut shape, layout, &mut work, Start::Join, ext.relations, routine)?;
            rebuild_lost_blocks(&view, &mut lost, layout, finished, &from.lost)?;
            rebuilt = Some(lost);
        }
        match mailbox.pending() {
            0 => Ok(()),
            pending => Err(blacs_ft::Error::Unrecoverable {
                reason: format!("{pending} message(s) of the rebuild onto a survivor were never taken"),
            }
            .into()),
        }
    };
    rebuild().map_err(failed)?;
    exchange(grid, from, (own, &*ext), rebuilt.as_ref().zip(ghost), after).map_err(failed)
}

/// A process that holds nothing of the grid before (it joined after the
/// shrink): receives only.
fn exchange_into(grid: &Grid, from: &ShrunkFrom, after: Option<&mut Extended>) -> Result<()> {
    let Some(after) = after else { return Ok(()) };
    let (m, n, nb) = (after.matrix.m(), after.shape().n as usize, after.matrix.nb());
    swap_blocks(grid, from, (m, n, nb), &[], Some(after))
}

/// A survivor's exchange: its own position's blocks (`own`, when it had
/// one) and the rebuilt lost position's (`ghost`) out, this process's new
/// blocks in.
fn exchange(
    grid: &Grid,
    from: &ShrunkFrom,
    own: (Option<i32>, &Extended),
    ghost: Option<(&Extended, i32)>,
    after: Option<&mut Extended>,
) -> Result<()> {
    let (position, ext) = own;
    let shape = (ext.matrix.m(), ext.shape().n as usize, ext.matrix.nb());
    let mut held: Vec<(i32, &[f64])> = Vec::new();
    if let Some(p) = position {
        held.push((p, ext.matrix.local()));
    }
    if let Some((lost, p)) = ghost {
        held.push((p, lost.matrix.local()));
    }
    held.sort_by_key(|h| h.0);
    swap_blocks(grid, from, shape, &held, after)
}

/// The exchange itself, in rounds over the survivors: in round k each
/// sends to the survivor k places after it what it holds of that one's new
/// blocks (its positions in ascending order, each position's runs in
/// [`runs_between`]'s order) and receives from the one k places before.
fn swap_blocks(
    grid: &Grid,
    from: &ShrunkFrom,
    (m, n, nb): (usize, usize, usize),
    held: &[(i32, &[f64])],
    mut after: Option<&mut Extended>,
) -> Result<()> {
    let survivors = grid.survivors();
    let me = survivors.rank();
    let new_grid = grid.shape();
    // The new grid rank of each survivor (none for those left over).
    let mut place_of = vec![None; survivors.size() as usize];
    for r in 0..grid.size() {
        if let Some(u) = grid.survivor_of(r) {
            place_of[u as usize] = Some(r);
        }
    }
    // The positions of the grid before that each survivor holds.
    let held_by = |u: i32| -> Vec<i32> {
        (0..from.holders.len() as i32).filter(|&g| from.holders[g as usize] == Some(u)).collect()
    };
    // Those that take part: a place on the new grid or blocks of the old
    // one (a hot spare still parked has neither, and is elsewhere).
    let part: Vec<i32> =
        (0..survivors.size()).filter(|&u| place_of[u as usize].is_some() || !held_by(u).is_empty()).collect();
    let Some(at) = part.iter().position(|&u| u == me) else { return Ok(()) };
    let count = part.len();
    let mine = place_of[me as usize];
    let mut incoming = Vec::new();
    for k in 0..count {
        let (to, source) = (part[(at + k) % count], part[(at + count - k) % count]);
        let mut out = Vec::new();
        if let Some(dest) = place_of[to as usize] {
            for &(g, local) in held {
                let runs = runs_between(
                    m,
                    n,
                    (nb, nb),
                    Place { grid: from.shape, rank: g },
                    Place { grid: new_grid, rank: dest },
                );
                for (at, _, len) in runs {
                    out.extend_from_slice(&local[at..at + len]);
                }
            }
        }
        let mut plan = Vec::new();
        if let Some(place) = mine {
            for g in held_by(source) {
                plan.push(runs_between(
                    m,
                    n,
                    (nb, nb),
                    Place { grid: from.shape, rank: g },
                    Place { grid: new_grid, rank: place },
                ));
            }
        }
        let expected: usize = plan.iter().flatten().map(|r| r.2).sum();
        incoming.clear();
        incoming.resize(expected, 0.0);
        let got = survivors.sendrecv(&out, to, &mut incoming, source, TAG_MOVE)?;
        if got != expected {
            return Err(blacs_ft::Error::Unrecoverable {
                reason: format!("moving the blocks onto the shrunk grid: {got} values came where {expected} belong"),
            }
            .into());
        }
        if let Some(after) = after.as_deref_mut() {
            let local = after.matrix.local_mut();
            let mut at = 0;
            for (_, to_at, len) in plan.into_iter().flatten() {
                local[to_at..to_at + len].copy_from_slice(&incoming[at..at + len]);
                at += len;
            }
        }
    }
    Ok(())
}
