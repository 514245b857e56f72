//! A checkpoint resumed on another grid (docs/cof.md, "Resume on another
//! grid"): each process reads the blocks it owns on this grid (and a CG's
//! vector entries of its rows) from the saving grid's files, then the
//! checksums and the left-factor sums are encoded anew for this grid's
//! layout at the saved step ([`super::verify::reencode_checksums`]).
//!
//! A block's owner and local place on either grid follow from the grid's
//! shape and the block size alone, so nothing but the files is needed: a
//! process reads each file that holds one of its blocks once (the file's
//! CRCs checked) and keeps only its blocks.

use super::extended::Extended;
use blacs_ft::index::{indxg2l, indxg2p, indxl2g, numroc};
use blacs_ft::GridShape;
use checksum::ChecksumLayout;
use recovery::cof::{file, SavedGrid};

/// A run of values copied from a saved file's payload into one of this
/// process's arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    /// Index in the saved payload.
    pub from: u64,
    /// Which of the destination arrays (see [`fetch`]), and the index there.
    pub dest: usize,
    pub to: usize,
    pub len: usize,
}

/// Local indices on a 1-D block-cyclic distribution (block `b`, `procs`
/// processes, source 0): the owner of global index `g` and its local index
/// there.
fn owner_and_local(g: usize, b: usize, procs: usize) -> (usize, usize) {
    (indxg2p(g, b, 0, procs), indxg2l(g, b, procs))
}

/// Runs of consecutive local indices (`locals`, global index of each)
/// whose place on the saving grid is one owner `old` and consecutive
/// there: (this process's first local index, the saving process's, length).
pub(crate) fn runs_on(globals: &[usize], b: usize, procs: usize, old: usize) -> Vec<(usize, usize, usize)> {
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    for (l, &g) in globals.iter().enumerate() {
        let (owner, ol) = owner_and_local(g, b, procs);
        if owner != old {
            continue;
        }
        match runs.last_mut() {
            Some((l0, o0, n)) if *l0 + *n == l && *o0 + *n == ol => *n += 1,
            _ => runs.push((l, ol, 1)),
        }
    }
    runs
}

/// A position on a grid (its rank there): where its local array's entries
/// come from follows from the grid's shape and the blocks alone (first
/// block on process (0, 0)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    pub grid: GridShape,
    pub rank: i32,
}

impl Place {
    pub fn coords(self) -> (usize, usize) {
        ((self.rank / self.grid.q) as usize, (self.rank % self.grid.q) as usize)
    }

    /// The global indices of its local rows (or columns before `count`) in
    /// blocks of `nb` over `procs` processes, at coordinate `me`.
    pub fn globals(count: usize, nb: usize, me: usize, procs: usize) -> Vec<usize> {
        (0..numroc(count, nb, me, 0, procs)).map(|l| indxl2g(l, nb, me, 0, procs)).collect()
    }
}

/// The runs of the data entries (rows `m` in blocks of `mb`, data columns
/// `n` in blocks of `nb`) that position `from` of one grid holds and
/// position `to` of another owns: (index in `from`'s local array, index in
/// `to`'s, length), in the order both sides pack and unpack them. The
/// local arrays have leading dimensions `from_ld` and `to_ld` (each side
/// uses its own indices only: the runs' order and lengths do not depend
/// on them).
pub(crate) fn runs_between(
    m: usize,
    n: usize,
    (mb, nb): (usize, usize),
    (from, from_ld): (Place, usize),
    (to, to_ld): (Place, usize),
) -> Vec<(usize, usize, usize)> {
    let ((fr, fc), (tr, tc)) = (from.coords(), to.coords());
    let (fp, fq) = (from.grid.p as usize, from.grid.q as usize);
    let (tp, tq) = (to.grid.p as usize, to.grid.q as usize);
    let rows = runs_on(&Place::globals(m, mb, tr, tp), mb, fp, fr);
    let cols = runs_on(&Place::globals(n, nb, tc, tq), nb, fq, fc);
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

/// Local: where this process's data blocks of `ext` (columns before
/// `layout.n()`) are in `saved`, the checkpoint of the same call on a
/// `saved.p`×`saved.q` grid: runs into destination 0 (the extended
/// matrix's local array), by saving rank. The checksum columns and the
/// D_g are left to the re-encoding; padding stays zero.
///
/// `grid_bound` says whether a state saved on a grid of the given layout
/// at the given committed steps resumes on that grid only (see
/// `PanelSteps::grid_bound_at`): such a save is refused.
///
/// # Errors
/// The file and the reason: a save that resumes on its own grid only, or
/// a file whose arrays are not those of its rank on the saving grid.
pub(crate) fn matrix_runs(
    ext: &Extended,
    layout: &ChecksumLayout,
    saved: &SavedGrid,
    grid_bound: impl Fn(&ChecksumLayout, u64) -> bool,
) -> Result<Vec<Vec<Run>>, (String, String)> {
    let (m, n, mb, nb) = (ext.matrix.m(), layout.n(), ext.matrix.mb(), ext.matrix.nb());
    let (p, q) = (saved.p as usize, saved.q as usize);
    let first = &saved.files[0].0;
    let old_layout = ChecksumLayout::new(layout.kind(), m, n, nb, p, q)
        .map_err(|e| named(first, format!("its checksum layout on the {} grid: {e}", saved.shape())))?;
    let committed = saved.files[0].1.call.as_ref().map_or(0, |c| c.committed);
    if grid_bound(&old_layout, committed) {
        return Err(named(
            first,
            format!(
                "saved at step {committed} with an update still to complete on the {} grid of the save (a failure \
                 between two steps of one process row): it resumes on that grid only",
                saved.shape()
            ),
        ));
    }
    let (np, nq) = ext.matrix.grid_shape();
    let (myrow, mycol) = ext.matrix.coords();
    let here = Place { grid: GridShape { p: np as i32, q: nq as i32 }, rank: (myrow * nq + mycol) as i32 };
    let mut by_file = Vec::with_capacity(saved.files.len());
    for (r, (path, header, _)) in saved.files.iter().enumerate() {
        let (pr, pc) = (r / q, r % q);
        let there = Place { grid: GridShape { p: saved.p, q: saved.q }, rank: r as i32 };
        // (The extended matrix whole, or its data columns only, with the
        // leading dimension it had there: its local rows, or more.)
        let arrays = header.call.as_ref().map(|c| c.arrays.clone()).unwrap_or_default();
        let data_only = header.call.as_ref().is_some_and(|c| c.data_only);
        let old_cols = if data_only { old_layout.checksum_col0() } else { old_layout.n_extended() };
        let old_cols = numroc(old_cols, nb, pc, 0, q);
        let old_rows = numroc(m, mb, pr, 0, p).max(1);
        let first = arrays.first().map_or(0, |&len| len as usize);
        let old_ld = first.checked_div(old_cols).unwrap_or(old_rows);
        let runs = runs_between(m, n, (mb, nb), (there, old_ld), (here, ext.matrix.lld()));
        if !runs.is_empty() && (old_ld < old_rows || old_ld * old_cols != first) {
            return Err(named(
                path,
                format!(
                    "holds local arrays of {arrays:?} values; grid rank {r} of a {} grid holds {old_cols} columns \
                     of {old_rows} or more values of the extended matrix first",
                    saved.shape()
                ),
            ));
        }
        let wanted = runs.into_iter().map(|(from, to, len)| Run { from: from as u64, dest: 0, to, len }).collect();
        by_file.push(wanted);
    }
    Ok(by_file)
}

fn named(path: &std::path::Path, why: String) -> (String, String) {
    (path.display().to_string(), why)
}

/// Local: copies every run (`runs`, by saving rank; `from` indexes the
/// saved arrays one after the other) from the saved files into `dests`.
/// Each file that holds one is read once, whole (an incremental
/// checkpoint's base file too), its CRCs checked: nothing of a corrupt
/// file is kept. One saved file's arrays are in memory at a time.
///
/// # Errors
/// The file and the reason: one that cannot be read, is corrupt, or does
/// not fit in memory.
pub(crate) fn fetch(saved: &SavedGrid, runs: Vec<Vec<Run>>, dests: &mut [&mut [f64]]) -> Result<(), (String, String)> {
    for ((path, header, offset), wanted) in saved.files.iter().zip(runs) {
        if wanted.is_empty() {
            continue;
        }
        let lengths = header.call.as_ref().map(|c| c.arrays.clone()).unwrap_or_default();
        let mut arrays = Vec::with_capacity(lengths.len());
        for &len in &lengths {
            let mut a: Vec<f64> = Vec::new();
            a.try_reserve_exact(len as usize)
                .map_err(|_| named(path, format!("cannot get {} MiB of memory to read it", (len * 8) >> 20)))?;
            a.resize(len as usize, 0.0);
            arrays.push(a);
        }
        let mut slices: Vec<&mut [f64]> = arrays.iter_mut().map(|a| a.as_mut_slice()).collect();
        file::read_payload(path, header, *offset, &mut slices).map_err(|why| named(path, why))?;
        let starts: Vec<u64> = lengths.iter().scan(0, |at, &n| Some(std::mem::replace(at, *at + n))).collect();
        for w in wanted {
            let a = starts.partition_point(|&s| s <= w.from) - 1;
            let from = (w.from - starts[a]) as usize;
            let source = arrays[a].get(from..from + w.len).ok_or_else(|| {
                named(path, format!("holds local arrays of {lengths:?} values, too short for its blocks"))
            })?;
            dests[w.dest][w.to..w.to + w.len].copy_from_slice(source);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_join_consecutive_indices_of_one_owner() {
        // Blocks of 2 over 3 processes: globals 0..12 -> owners 0 0 1 1 2 2 0 0 1 1 2 2.
        let globals: Vec<usize> = (0..12).collect();
        assert_eq!(runs_on(&globals, 2, 3, 0), vec![(0, 0, 2), (6, 2, 2)]);
        assert_eq!(runs_on(&globals, 2, 3, 2), vec![(4, 0, 2), (10, 2, 2)]);
        // This process's locals are globals 2, 3, 8, 9 (owner 1 of 3); on
        // a grid of 2 they are owner 1's locals 0, 1 and 2, 3 then owner 0's ...
        let mine = [2, 3, 8, 9];
        assert_eq!(runs_on(&mine, 2, 2, 1), vec![(0, 0, 2)]);
        assert_eq!(runs_on(&mine, 2, 2, 0), vec![(2, 4, 2)]);
        assert_eq!(owner_and_local(9, 2, 2), (0, 5));
    }

    /// A global M×N matrix with entry (i, j) = i + 1000 j, in the local
    /// arrays of every position of a grid.
    /// (Leading dimension: the local rows plus `pad`; the padding −1.)
    fn locals(m: usize, n: usize, nb: usize, grid: GridShape, pad: usize) -> Vec<Vec<f64>> {
        (0..grid.p * grid.q)
            .map(|r| {
                let place = Place { grid, rank: r };
                let (pr, pc) = place.coords();
                let rows = Place::globals(m, nb, pr, grid.p as usize);
                let cols = Place::globals(n, nb, pc, grid.q as usize);
                let ld = rows.len().max(1) + pad;
                let mut a = vec![-1.0; ld * cols.len()];
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
        let grids = [((2, 3), (2, 2)), ((2, 2), (1, 3)), ((3, 2), (1, 5)), ((1, 4), (1, 3))];
        // (Each side's leading dimension its own: minimal or padded.)
        for (before, after) in grids {
            for (from_pad, to_pad) in [(0, 0), (3, 0), (0, 8), (5, 2)] {
                let (before, after) = (GridShape { p: before.0, q: before.1 }, GridShape { p: after.0, q: after.1 });
                let old = locals(m, n, nb, before, from_pad);
                let want = locals(m, n, nb, after, to_pad);
                let ld = |place: Place| numroc(m, nb, place.coords().0, 0, place.grid.p as usize).max(1);
                for d in 0..after.p * after.q {
                    let mut got = vec![-1.0; want[d as usize].len()];
                    for g in 0..before.p * before.q {
                        let (from, to) = (Place { grid: before, rank: g }, Place { grid: after, rank: d });
                        let runs = runs_between(m, n, (nb, nb), (from, ld(from) + from_pad), (to, ld(to) + to_pad));
                        for (at, to, len) in runs {
                            got[to..to + len].copy_from_slice(&old[g as usize][at..at + len]);
                        }
                    }
                    assert_eq!(got, want[d as usize], "{before} -> {after}, new rank {d}, pads {from_pad} {to_pad}");
                }
            }
        }
    }
}
