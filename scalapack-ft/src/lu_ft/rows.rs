//! The row interchanges of one step of the fault-tolerant LU, split in
//! two as the step-commit protocol wants: the rows that move between
//! process rows are exchanged in phase 1 (into scratch, nothing written),
//! and every move is written at the commit.
//!
//! The interchanges apply to every local column of the extended matrix
//! but the panel's own (factoring the panel swapped those): the finished
//! columns on the left (their L, so the interchanges are applied eagerly),
//! the trailing columns, the checksum columns — and to the rows of the
//! left-factor sums D_g, which must move with the L rows they sum (a row
//! sum stays a row sum only if it moves with its row). The D_g of a process
//! column are the same groups on every process row, so their rows travel
//! in the same messages.

use crate::abft::Extended;
use crate::error::Result;
use crate::lu::swap::compose;
use blacs_ft::Grid;
use std::ops::Range;

/// Tag of the exchanged rows (on the grid's all-process communicator).
const TAG_ROWS: i32 = 0x4C58;

/// The columns a step's interchanges apply to on this process: the local
/// columns of the extended matrix outside the panel's, then the columns of
/// each D_g this process holds.
#[derive(Clone, Debug)]
pub(super) struct Columns {
    /// Local columns of the extended matrix, increasing.
    ext: Vec<usize>,
    /// The panel's local columns (empty off its process column).
    panel: Range<usize>,
}

impl Columns {
    /// Every local column of `ext` but `panel`.
    pub fn new(ext: &Extended, panel: Range<usize>) -> Columns {
        let cols = (0..ext.matrix.local_cols()).filter(|c| !panel.contains(c)).collect();
        Columns { ext: cols, panel }
    }

    /// Position of local column `c` (outside the panel) in the order the
    /// buffers hold the extended matrix's columns.
    pub fn position(&self, c: usize) -> usize {
        if c >= self.panel.end {
            c - self.panel.len()
        } else {
            c
        }
    }

    /// Columns per row in a buffer: the extended matrix's and the D_g's.
    fn width(&self, ext: &Extended) -> usize {
        self.ext.len() + ext.left_sums.iter().flatten().count() * ext.matrix.nb()
    }
}

/// The rows a step moves onto this process, read in phase 1: for each
/// source, the local rows they go to and their values (row-major per
/// moved row: one row of [`Columns`] after the other).
pub(super) struct Moves {
    /// (local destination rows, values: `rows × width`, row-major).
    writes: Vec<(Vec<usize>, Vec<f64>)>,
    width: usize,
}

impl Moves {
    /// The buffer row that local row `li` will hold after the
    /// interchanges (its columns in [`Columns`]' order), if this step
    /// moves something into it.
    pub fn row(&self, li: usize) -> Option<&[f64]> {
        self.writes.iter().find_map(|(rows, vals)| {
            rows.iter().position(|&r| r == li).map(|i| &vals[i * self.width..(i + 1) * self.width])
        })
    }
}

/// Phase 1 on a grid with more than one process row (collective over the
/// process column): reads the rows this process sends, exchanges them with
/// the other process rows, and returns what arrives (this process's own
/// moves included, read now: cycles of moves stay right).
pub(super) fn exchange(grid: &Grid, ext: &Extended, swaps: &[(usize, usize)], cols: &Columns) -> Result<Moves> {
    let width = cols.width(ext);
    let moves = compose(swaps);
    let nprow = grid.nprow() as usize;
    let (me, mycol) = (grid.myrow() as usize, grid.mycol());
    let e = &ext.matrix;
    let mut rows_to: Vec<Vec<usize>> = vec![Vec::new(); nprow];
    let mut rows_from: Vec<Vec<usize>> = vec![Vec::new(); nprow];
    for &(pos, src) in &moves {
        let (po, so) = (e.row_owner(pos), e.row_owner(src));
        if so == me {
            rows_to[po].push(e.local_rows_before(src));
        }
        if po == me {
            rows_from[so].push(e.local_rows_before(pos));
        }
    }
    let outgoing: Vec<Vec<f64>> = rows_to.iter().map(|rows| read_rows(ext, cols, rows, width)).collect();
    let mut writes = Vec::with_capacity(nprow);
    for d in 0..nprow {
        // Pairwise, the same order on every process row: at distance d,
        // send to me + d and receive from me − d.
        let (to, from) = ((me + d) % nprow, (me + nprow - d) % nprow);
        let send = &outgoing[to];
        let mut recv = vec![0.0; rows_from[from].len() * width];
        if d == 0 {
            recv.copy_from_slice(send);
        } else {
            match (send.is_empty(), recv.is_empty()) {
                (false, false) => grid.exchange(send, (to as i32, mycol), &mut recv, (from as i32, mycol), TAG_ROWS)?,
                (false, true) => grid.send(send, to as i32, mycol, TAG_ROWS)?,
                (true, false) => {
                    grid.recv_exact(&mut recv, from as i32, mycol, TAG_ROWS)?;
                }
                (true, true) => {}
            }
        }
        writes.push((std::mem::take(&mut rows_from[from]), recv));
    }
    Ok(Moves { writes, width })
}

/// The commit of [`exchange`]'s moves: writes every moved row.
pub(super) fn apply(ext: &mut Extended, cols: &Columns, moves: &Moves) {
    let (lld, lr, nb) = (ext.matrix.lld(), ext.matrix.local_rows(), ext.matrix.nb());
    for (rows, vals) in &moves.writes {
        for (i, &li) in rows.iter().enumerate() {
            let row = &vals[i * moves.width..(i + 1) * moves.width];
            let data = ext.matrix.local_mut();
            for (&c, &x) in cols.ext.iter().zip(row) {
                data[c * lld + li] = x;
            }
            let mut at = cols.ext.len();
            for d in ext.left_sums.iter_mut().flatten() {
                for c in 0..nb {
                    d[c * lr + li] = row[at + c];
                }
                at += nb;
            }
        }
    }
}

/// The commit on a grid with one process row: every row is local (local
/// index = global index), so the interchanges are done in place, in order,
/// column by column.
pub(super) fn swap_in_place(ext: &mut Extended, cols: &Columns, swaps: &[(usize, usize)]) {
    let swaps: Vec<(usize, usize)> = swaps.iter().copied().filter(|&(r, p)| r != p).collect();
    if swaps.is_empty() {
        return;
    }
    let (lld, lr, nb) = (ext.matrix.lld(), ext.matrix.local_rows(), ext.matrix.nb());
    let data = ext.matrix.local_mut();
    for &c in &cols.ext {
        let col = &mut data[c * lld..c * lld + lr];
        for &(r, p) in &swaps {
            col.swap(r, p);
        }
    }
    for d in ext.left_sums.iter_mut().flatten() {
        for c in 0..nb {
            let col = &mut d[c * lr..(c + 1) * lr];
            for &(r, p) in &swaps {
                col.swap(r, p);
            }
        }
    }
}

/// Rows `rows` (local) of the buffer columns, row after row.
fn read_rows(ext: &Extended, cols: &Columns, rows: &[usize], width: usize) -> Vec<f64> {
    let (lld, lr, nb) = (ext.matrix.lld(), ext.matrix.local_rows(), ext.matrix.nb());
    let data = ext.matrix.local();
    let mut out = Vec::with_capacity(rows.len() * width);
    for &li in rows {
        out.extend(cols.ext.iter().map(|&c| data[c * lld + li]));
        for d in ext.left_sums.iter().flatten() {
            out.extend((0..nb).map(|c| d[c * lr + li]));
        }
    }
    out
}
