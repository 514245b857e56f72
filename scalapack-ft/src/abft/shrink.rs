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
use super::regrid::runs_on;
use super::{rebuild_lost_blocks, FtWorkspace};
use crate::error::{Error, Result};
use crate::matrix::DistMatrix;
use blacs_ft::index::numroc;
use blacs_ft::{Grid, GridShape, Mailbox, ShrunkFrom};
use checksum::ChecksumLayout;
use std::rc::Rc;

/// Tag of the exchange of blocks.
const TAG_MOVE: i32 = 0x5B1;

/// A position's local array layout on a grid: its place and the matrix's
/// global shape (M rows, N data columns, square blocks of NB).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Place {
    grid: GridShape,
    rank: i32,
}

impl Place {
    fn coords(self) -> (usize, usize) {
        ((self.rank / self.grid.q) as usize, (self.rank % self.grid.q) as usize)
    }

    /// The global indices of its local rows (or columns before `n`) in
    /// blocks of `nb` over `procs` processes, at coordinate `me`.
    fn globals(count: usize, nb: usize, me: usize, procs: usize) -> Vec<usize> {
        (0..numroc(count, nb, me, 0, procs)).map(|l| ((l / nb) * procs + me) * nb + l % nb).collect()
    }
}

/// The runs of the data entries (rows `m`, data columns `n`, blocks `nb`)
/// that position `from` of one grid holds and position `to` of another
/// owns: (index in `from`'s local array, index in `to`'s, length), in the
/// order both sides pack and unpack them. Local arrays have the leading
/// dimension max(1, local rows), as extended matrices do.
fn runs_between(m: usize, n: usize, nb: usize, from: Place, to: Place) -> Vec<(usize, usize, usize)> {
    let ((fr, fc), (tr, tc)) = (from.coords(), to.coords());
    let (fp, fq) = (from.grid.p as usize, from.grid.q as usize);
    let (tp, tq) = (to.grid.p as usize, to.grid.q as usize);
    let rows = runs_on(&Place::globals(m, nb, tr, tp), nb, fp, fr);
    let cols = runs_on(&Place::globals(n, nb, tc, tq), nb, fq, fc);
    let (from_ld, to_ld) = (numroc(m, nb, fr, 0, fp).max(1), numroc(m, nb, tr, 0, tp).max(1));
    let mut runs = Vec::new();
    for &(to_col, from_col, ncols) in &cols {
        for c in 0..ncols {
            for &(to_row, from_row, len) in &rows {
                runs.push(((from_col + c) * from_ld + from_row, (to_col + c) * to_ld + to_row, len));
            }
        }
    }
    runs
}

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
                let runs =
                    runs_between(m, n, nb, Place { grid: from.shape, rank: g }, Place { grid: new_grid, rank: dest });
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
                    nb,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A global M×N matrix with entry (i, j) = i + 1000 j, in the local
    /// arrays of every position of a grid.
    fn locals(m: usize, n: usize, nb: usize, grid: GridShape) -> Vec<Vec<f64>> {
        (0..grid.p * grid.q)
            .map(|r| {
                let place = Place { grid, rank: r };
                let (pr, pc) = place.coords();
                let rows = Place::globals(m, nb, pr, grid.p as usize);
                let cols = Place::globals(n, nb, pc, grid.q as usize);
                let ld = rows.len().max(1);
                let mut a = vec![0.0; ld * cols.len()];
                for (lj, &j) in cols.iter().enumerate() {
                    for (li, &i) in rows.iter().enumerate() {
                        a[lj * ld + li] = (i + 1000 * j) as f64;
                    }
                }
                a
            })
            .collect()
    }

    #[test]
    fn the_runs_move_every_entry_to_its_owner_on_the_new_grid() {
        let (m, n, nb) = (37, 29, 4);
        for (before, after) in [((2, 3), (2, 2)), ((2, 2), (1, 3)), ((3, 2), (1, 5)), ((1, 4), (1, 3))] {
            let (before, after) = (GridShape { p: before.0, q: before.1 }, GridShape { p: after.0, q: after.1 });
            let old = locals(m, n, nb, before);
            let want = locals(m, n, nb, after);
            for d in 0..after.p * after.q {
                let mut got = vec![f64::NAN; want[d as usize].len()];
                for g in 0..before.p * before.q {
                    let runs = runs_between(m, n, nb, Place { grid: before, rank: g }, Place { grid: after, rank: d });
                    for (at, to, len) in runs {
                        got[to..to + len].copy_from_slice(&old[g as usize][at..at + len]);
                    }
                }
                assert_eq!(got, want[d as usize], "{before} -> {after}, new rank {d}");
            }
        }
    }
}
