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
//! 3. **Row-form vectors** (CG's b, x, r, p and diag(A)⁻¹: each process
//!    holds the entries of its local rows, the same on every process of a
//!    process row) go with the blocks: for each process row of the grid
//!    before, the survivor playing its lowest surviving position sends
//!    every new process the entries of its new rows that the row held.
//!
//! The checksums and left-factor sums are not moved: the caller encodes
//! them for the new grid and its layout at the committed step, as a
//! resumed call does. Until the move is complete nothing of the grid
//! before is changed, so a failure during it is recovered from that grid.

use super::extended::{layout_err, Extended, MatrixShape, Start};
use super::regrid::{runs_between, runs_on, Place};
use super::Relations;
use super::{rebuild_lost_blocks, FtWorkspace};
use crate::error::{Error, Result};
use crate::matrix::DistMatrix;
use blacs_ft::index::numroc;
use blacs_ft::{Grid, GridShape, Mailbox, ShrunkFrom};
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
    /// The row-form vectors of this process's rows there, end to end
    /// ([`RowVectors::count`] of them; empty when there are none).
    pub rows: &'a [f64],
}

/// This process's state on the new grid, which the move fills: its
/// extended matrix (data blocks only) and its row-form vectors end to end
/// (`count` × its local rows there).
pub(crate) struct After<'a> {
    pub ext: &'a mut Extended,
    pub rows: &'a mut [f64],
}

/// How many row-form vectors move with the blocks (none for a
/// factorization), each of the matrix's local rows long on either grid.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RowVectors {
    pub count: usize,
}

/// Collective over [`Grid::survivors`]: rebuilds the lost positions'
/// blocks of the grid before the shrink at `finished` steps onto their
/// holders (at most `tolerated` per process row, what the checksums
/// rebuild), then moves every data block and the `vectors` into `after`
/// (this process's state on the new grid, checksums and sums left to the
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
    after: Option<After<'_>>,
    (finished, tolerated, vectors): (usize, usize, RowVectors),
    routine: &str,
) -> Result<()> {
    let survivors = grid.survivors();
    let me = survivors.rank();
    from.check_movable(tolerated)?;
    let holders: Vec<i32> = from.holders.iter().map(|h| h.unwrap_or(-1)).collect();
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
    let Some(Before { ext, layout, rows }) = before else {
        return exchange_into(grid, from, after, vectors).map_err(failed);
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
            let (m, n, mb, nb) = (ext.matrix.m(), ext.shape().n as usize, ext.matrix.mb(), ext.matrix.nb());
            let mut shape = DistMatrix::zeros(&view, m, n, mb, nb)?;
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
    exchange(grid, from, (own, &*ext, rows), rebuilt.as_ref().zip(ghost), after, vectors).map_err(failed)
}

/// The state a member of the new grid receives the moved blocks into: an
/// extended matrix of the call's `shape` on `grid` (checksums and sums
/// left to the caller), its checksum layout there, and the data matrix
/// whose storage it holds (the caller's takes its place when the call
/// ends, its blocks copied there).
pub(crate) fn extended_on(
    grid: &Grid,
    shape: MatrixShape,
    relations: Relations,
    routine: &str,
) -> Result<(DistMatrix, Extended, ChecksumLayout)> {
    let (m, n, nb) = (shape.m as usize, shape.n as usize, shape.nb as usize);
    let (np, nq) = (grid.nprow() as usize, grid.npcol() as usize);
    let layout = ChecksumLayout::new(shape.layout, m, n, nb, np, nq).map_err(layout_err)?;
    let mut a = DistMatrix::zeros(grid, m, n, nb, nb)?;
    let ext = Extended::new(grid, &mut a, &layout, &mut FtWorkspace::new(), Start::Join, relations, routine)?;
    Ok((a, ext, layout))
}

/// A process that holds nothing of the grid before (it joined after the
/// shrink): receives only.
fn exchange_into(grid: &Grid, from: &ShrunkFrom, after: Option<After<'_>>, vectors: RowVectors) -> Result<()> {
    let Some(after) = after else { return Ok(()) };
    let e = &after.ext.matrix;
    let shape = (e.m(), after.ext.shape().n as usize, (e.mb(), e.nb()));
    swap_blocks(grid, from, shape, (&[], &[]), Some(after), vectors)
}

/// A position's blocks that a survivor sends: its grid rank on the old
/// grid, its local array and that array's leading dimension.
type Held<'a> = (i32, &'a [f64], usize);

/// A survivor's exchange: its own position's blocks (`own`, when it had
/// one) and the rebuilt lost position's (`ghost`) out, this process's new
/// blocks in.
fn exchange(
    grid: &Grid,
    from: &ShrunkFrom,
    own: (Option<i32>, &Extended, &[f64]),
    ghost: Option<(&Extended, i32)>,
    after: Option<After<'_>>,
    vectors: RowVectors,
) -> Result<()> {
    let (position, ext, rows) = own;
    let shape = (ext.matrix.m(), ext.shape().n as usize, (ext.matrix.mb(), ext.matrix.nb()));
    let mut held: Vec<Held<'_>> = Vec::new();
    if let Some(p) = position {
        held.push((p, ext.matrix.local(), ext.matrix.lld()));
    }
    if let Some((lost, p)) = ghost {
        held.push((p, lost.matrix.local(), lost.matrix.lld()));
    }
    held.sort_by_key(|h| h.0);
    swap_blocks(grid, from, shape, (&held, rows), after, vectors)
}

/// The positions of the grid before that survivor `u` holds.
fn held_by(from: &ShrunkFrom, u: i32) -> Vec<i32> {
    (0..from.holders.len() as i32).filter(|&g| from.holders[g as usize] == Some(u)).collect()
}

/// Who takes part in a move, by rank in [`Grid::survivors`].
struct Participants {
    /// The new grid rank of each survivor (none for those left over).
    place_of: Vec<Option<i32>>,
    /// [`Grid::movers`].
    part: Vec<i32>,
}

impl Participants {
    fn of(grid: &Grid, from: &ShrunkFrom) -> Participants {
        let mut place_of = vec![None; grid.survivors().size() as usize];
        for r in 0..grid.size() {
            if let Some(u) = grid.survivor_of(r) {
                place_of[u as usize] = Some(r);
            }
        }
        Participants { place_of, part: grid.movers(from) }
    }
}

/// The survivor that sends the row-form vectors of each process row of
/// the grid before: the one playing the row's lowest surviving position
/// (`None` for a row lost whole, which no shrink gets past).
fn vector_sources(from: &ShrunkFrom) -> Vec<Option<i32>> {
    let (p, q) = (from.shape.p as usize, from.shape.q as usize);
    (0..p)
        .map(|row| (row * q..(row + 1) * q).find(|&g| !from.lost.contains(&(g as i32))).and_then(|g| from.holders[g]))
        .collect()
}

/// The runs of the row-form vectors' entries that process row `old_row`
/// of `before` holds and process row `new_row` of `after` owns: (index on
/// the new row, index on the old row, length).
fn row_runs(
    m: usize,
    mb: usize,
    (before, old_row): (GridShape, usize),
    (after, new_row): (GridShape, usize),
) -> Vec<(usize, usize, usize)> {
    runs_on(&Place::globals(m, mb, new_row, after.p as usize), mb, before.p as usize, old_row)
}

/// The exchange itself, in rounds over the survivors: in round k each
/// sends to the survivor k places after it what it holds of that one's new
/// blocks (its positions in ascending order, each position's runs in
/// [`runs_between`]'s order) and receives from the one k places before.
fn swap_blocks(
    grid: &Grid,
    from: &ShrunkFrom,
    (m, n, (mb, nb)): (usize, usize, (usize, usize)),
    (held, rows): (&[Held<'_>], &[f64]),
    mut after: Option<After<'_>>,
    vectors: RowVectors,
) -> Result<()> {
    let survivors = grid.survivors();
    let me = survivors.rank();
    let new_grid = grid.shape();
    let Participants { place_of, part } = Participants::of(grid, from);
    let held_by = |u: i32| held_by(from, u);
    let Some(at) = part.iter().position(|&u| u == me) else { return Ok(()) };
    let count = part.len();
    let mine = place_of[me as usize];
    // (The row-form vectors: which old process row each survivor sends,
    // and the local rows of that row and of this process's new one.)
    let sources = vector_sources(from);
    let sends_row = |u: i32| if vectors.count == 0 { None } else { sources.iter().position(|&s| s == Some(u)) };
    let old_lr = |row: usize| numroc(m, mb, row, 0, from.shape.p as usize);
    let new_row = |place: i32| (place / new_grid.q) as usize;
    let new_lr = mine.map_or(0, |place| numroc(m, mb, new_row(place), 0, new_grid.p as usize));
    // (Each side indexes its own local arrays only: the sender by the
    // held arrays' leading dimensions, the receiver by its new matrix's.)
    let new_ld = after.as_ref().map_or(1, |a| a.ext.matrix.lld());
    let mut incoming = Vec::new();
    for k in 0..count {
        let (to, source) = (part[(at + k) % count], part[(at + count - k) % count]);
        let mut out = Vec::new();
        if let Some(dest) = place_of[to as usize] {
            for &(g, local, ld) in held {
                let runs = runs_between(
                    m,
                    n,
                    (mb, nb),
                    (Place { grid: from.shape, rank: g }, ld),
                    (Place { grid: new_grid, rank: dest }, 0),
                );
                for (at, _, len) in runs {
                    out.extend_from_slice(&local[at..at + len]);
                }
            }
            if let Some(row) = sends_row(me) {
                let runs = row_runs(m, mb, (from.shape, row), (new_grid, new_row(dest)));
                for v in 0..vectors.count {
                    let base = v * old_lr(row);
                    for &(_, at, len) in &runs {
                        out.extend_from_slice(&rows[base + at..base + at + len]);
                    }
                }
            }
        }
        let mut plan = Vec::new();
        if let Some(place) = mine {
            for g in held_by(source) {
                plan.push(runs_between(
                    m,
                    n,
                    (mb, nb),
                    (Place { grid: from.shape, rank: g }, 0),
                    (Place { grid: new_grid, rank: place }, new_ld),
                ));
            }
        }
        let vector_runs = match (mine, sends_row(source)) {
            (Some(place), Some(row)) => row_runs(m, mb, (from.shape, row), (new_grid, new_row(place))),
            _ => Vec::new(),
        };
        let expected: usize = plan.iter().flatten().map(|r| r.2).sum::<usize>()
            + vectors.count * vector_runs.iter().map(|r| r.2).sum::<usize>();
        incoming.clear();
        incoming.resize(expected, 0.0);
        let got = survivors.sendrecv(&out, to, &mut incoming, source, TAG_MOVE)?;
        if got != expected {
            return Err(blacs_ft::Error::Unrecoverable {
                reason: format!("moving the blocks onto the shrunk grid: {got} values came where {expected} belong"),
            }
            .into());
        }
        if let Some(after) = after.as_mut() {
            let local = after.ext.matrix.local_mut();
            let mut at = 0;
            for (_, to_at, len) in plan.into_iter().flatten() {
                local[to_at..to_at + len].copy_from_slice(&incoming[at..at + len]);
                at += len;
            }
            for v in 0..vectors.count {
                for &(to_at, _, len) in &vector_runs {
                    let to_at = v * new_lr + to_at;
                    after.rows[to_at..to_at + len].copy_from_slice(&incoming[at..at + len]);
                    at += len;
                }
            }
        }
    }
    Ok(())
}
