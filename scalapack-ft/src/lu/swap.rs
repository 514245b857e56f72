//! Row interchanges of a distributed matrix (ScaLAPACK `PDLASWP`), batched:
//! a whole sequence of interchanges moves each row at most once, with one
//! message per pair of process rows instead of one per interchange.

use super::tags;
use crate::args::pdlaswp::{A, IPIV};
use crate::args::{arg_error, check_grid};
use crate::error::{agree_on_arguments, Result};
use crate::matrix::DistMatrix;
use blacs_ft::Grid;
use recovery::profile::{self, Part};
use std::collections::HashMap;
use std::ops::Range;

/// Order in which [`pdlaswp`] applies the interchanges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// `i = 0, 1, …` (gives `P·A` from the pivots of [`super::pdgetrf`]).
    Forward,
    /// `i = …, 1, 0` (undoes `Forward`: gives `Pᵀ·A`).
    Backward,
}

/// Collective: applies the row interchanges `swap(i, ipiv[i])`,
/// `i < ipiv.len()`, to every column of `a` (ScaLAPACK `PDLASWP` with
/// 0-based, replicated pivots as [`super::pdgetrf`] returns them).
///
/// * `grid`: the process grid `a` lives on;
/// * `a` (local): the distributed matrix, changed in place;
/// * `ipiv` (global): 0-based pivots, `i ≤ ipiv[i] < M_A`;
/// * `dir` (global): order of the interchanges.
///
/// Errors (agreed on every rank): `ipiv` longer than `M_A` or an entry out
/// of range (argument 3), `a` from another grid (argument 2).
pub fn pdlaswp(grid: &Grid, a: &mut DistMatrix, ipiv: &[i64], dir: Direction) -> Result<()> {
    const ROUTINE: &str = "pdlaswp";
    let local = (|| {
        check_grid(grid, a, ROUTINE, A, "A")?;
        if ipiv.len() > a.m() {
            return Err(arg_error(
                ROUTINE,
                IPIV,
                0,
                "IPIV",
                format!("has {} entries but A has {} rows", ipiv.len(), a.m()),
            ));
        }
        if let Some((i, &p)) = ipiv.iter().enumerate().find(|&(i, &p)| p < i as i64 || p >= a.m() as i64) {
            return Err(arg_error(ROUTINE, IPIV, 0, "IPIV", format!("IPIV[{i}] = {p} is outside {i}..{}", a.m())));
        }
        Ok(())
    })();
    agree_on_arguments(grid, local)?;
    let mut swaps: Vec<(usize, usize)> = ipiv.iter().enumerate().map(|(i, &p)| (i, p as usize)).collect();
    if dir == Direction::Backward {
        swaps.reverse();
    }
    let lc = a.local_cols();
    interchange(grid, a, &swaps, 0..lc)
}

/// The net effect of applying `swaps` in order, as `(position, source)`
/// pairs sorted by position, without fixed points: afterwards, row
/// `position` holds what row `source` held before.
pub(crate) fn compose(swaps: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut src: HashMap<usize, usize> = HashMap::with_capacity(2 * swaps.len());
    for &(r, p) in swaps {
        if r == p {
            continue;
        }
        let sr = *src.get(&r).unwrap_or(&r);
        let sp = *src.get(&p).unwrap_or(&p);
        src.insert(r, sp);
        src.insert(p, sr);
    }
    let mut moves: Vec<(usize, usize)> = src.into_iter().filter(|&(pos, s)| pos != s).collect();
    moves.sort_unstable();
    moves
}

/// Collective over the process column (every process of this process
/// column calls it with the same `swaps`): applies the global row
/// interchanges `swaps`, in order, to the local columns `cols` of `a`.
/// The column range may differ between process columns.
pub(crate) fn interchange(grid: &Grid, a: &mut DistMatrix, swaps: &[(usize, usize)], cols: Range<usize>) -> Result<()> {
    let _p = profile::part(Part::SWAP, None);
    exchange_rows(grid, a, swaps, vec![cols])?.apply(a);
    Ok(())
}

/// Row interchanges communicated but not yet applied: the rows that
/// [`exchange_rows`] received for this process, which
/// [`RowExchange::apply`] writes into the matrix (no communication).
/// The interchange in two halves, so that a fault-tolerant step can
/// communicate into scratch and commit locally.
pub(crate) struct RowExchange {
    /// The local columns the interchanges apply to (ascending ranges).
    cols: Vec<Range<usize>>,
    moved: Moved,
}

/// What [`RowExchange::apply`] writes.
enum Moved {
    /// One process row: the interchanges themselves (without fixed
    /// points), done in place.
    Local(Vec<(usize, usize)>),
    /// Several process rows: per source process row, the local rows the
    /// received rows go to and the rows (packed column by column).
    Received { rows_from: Vec<Vec<usize>>, incoming: Vec<Vec<f64>> },
}

/// Collective over the process column, as [`interchange`] on the local
/// columns `cols` (ascending ranges), but `a` is only read: the rows the
/// interchanges bring to this process are received into the returned
/// [`RowExchange`] (at most this process's part of those columns).
pub(crate) fn exchange_rows(
    grid: &Grid,
    a: &DistMatrix,
    swaps: &[(usize, usize)],
    cols: Vec<Range<usize>>,
) -> Result<RowExchange> {
    let (nprow, _) = a.grid_shape();
    if nprow == 1 {
        let swaps = swaps.iter().copied().filter(|&(r, p)| r != p).collect();
        return Ok(RowExchange { cols, moved: Moved::Local(swaps) });
    }
    let moves = compose(swaps);
    let me = a.coords().0;
    let lld = a.lld();
    let ncols: usize = cols.iter().map(ExactSizeIterator::len).sum();
    // Rows this process sends to each process row (local indices, ordered
    // by destination position) and the positions it receives from each.
    let mut rows_to: Vec<Vec<usize>> = vec![Vec::new(); nprow];
    let mut rows_from: Vec<Vec<usize>> = vec![Vec::new(); nprow];
    for &(pos, src) in &moves {
        let (po, so) = (a.row_owner(pos), a.row_owner(src));
        if so == me {
            rows_to[po].push(a.local_rows_before(src));
        }
        if po == me {
            rows_from[so].push(a.local_rows_before(pos));
        }
    }
    // (Everything is read before anything is written: cycles of moves stay
    // correct.)
    let data = a.local();
    let mut outgoing: Vec<Vec<f64>> = rows_to.iter().map(|rows| gather_rows(data, lld, rows, &cols)).collect();
    let mycol = grid.mycol();
    let mut incoming: Vec<Vec<f64>> = vec![Vec::new(); nprow];
    incoming[me] = std::mem::take(&mut outgoing[me]);
    for d in 1..nprow {
        let to = (me + d) % nprow;
        let from = (me + nprow - d) % nprow;
        let mut recv = vec![0.0; rows_from[from].len() * ncols];
        let send = &outgoing[to];
        match (send.is_empty(), recv.is_empty()) {
            (false, false) => grid.exchange(send, (to as i32, mycol), &mut recv, (from as i32, mycol), tags::SWAP)?,
            (false, true) => grid.send(send, to as i32, mycol, tags::SWAP)?,
            (true, false) => {
                grid.recv_exact(&mut recv, from as i32, mycol, tags::SWAP)?;
            }
            (true, true) => {}
        }
        incoming[from] = recv;
    }
    Ok(RowExchange { cols, moved: Moved::Received { rows_from, incoming } })
}

impl RowExchange {
    /// Local: writes the interchanged rows into `a` (the matrix that
    /// [`exchange_rows`] read, unchanged since).
    pub(crate) fn apply(self, a: &mut DistMatrix) {
        match self.moved {
            Moved::Local(swaps) => swap_local(a, &swaps, &self.cols),
            Moved::Received { rows_from, incoming } => {
                let lld = a.lld();
                let data = a.local_mut();
                for (rows, buf) in rows_from.iter().zip(&incoming) {
                    scatter_rows(buf, data, lld, rows, &self.cols);
                }
            }
        }
    }
}

/// Every column of the ascending ranges `cols`, in order.
fn columns(cols: &[Range<usize>]) -> impl Iterator<Item = usize> + '_ {
    cols.iter().flat_map(Clone::clone)
}

/// Rows `rows` (local indices) of the columns `cols`, packed column by
/// column (leading dimension `rows.len()`).
fn gather_rows(data: &[f64], lld: usize, rows: &[usize], cols: &[Range<usize>]) -> Vec<f64> {
    let mut out = Vec::with_capacity(rows.len() * columns(cols).count());
    if rows.is_empty() {
        return out;
    }
    for c in columns(cols) {
        let col = &data[c * lld..];
        out.extend(rows.iter().map(|&li| col[li]));
    }
    out
}

/// Inverse of [`gather_rows`].
fn scatter_rows(buf: &[f64], data: &mut [f64], lld: usize, rows: &[usize], cols: &[Range<usize>]) {
    if rows.is_empty() {
        return;
    }
    for (c, chunk) in columns(cols).zip(buf.chunks_exact(rows.len())) {
        let col = &mut data[c * lld..];
        for (&li, &x) in rows.iter().zip(chunk) {
            col[li] = x;
        }
    }
}

/// One process row: every row is local (local index = global index), so
/// the interchanges `swaps` (without fixed points) are done in place,
/// column by column (LAPACK `DLASWP` order; each column's pivot rows stay
/// in cache).
fn swap_local(a: &mut DistMatrix, swaps: &[(usize, usize)], cols: &[Range<usize>]) {
    if swaps.is_empty() {
        return;
    }
    let lld = a.lld();
    let data = a.local_mut();
    for c in columns(cols) {
        let col = &mut data[c * lld..(c + 1) * lld];
        for &(r, p) in swaps {
            col.swap(r, p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies swaps one by one to 0..n, the reference for `compose`.
    fn apply(n: usize, swaps: &[(usize, usize)]) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        for &(r, p) in swaps {
            v.swap(r, p);
        }
        v
    }

    #[test]
    fn compose_matches_sequential_swaps() {
        let cases: Vec<Vec<(usize, usize)>> = vec![
            vec![],
            vec![(0, 0), (1, 1)],
            vec![(0, 3), (1, 3), (2, 3)],
            vec![(0, 5), (1, 5), (2, 2), (3, 9), (4, 5)],
            vec![(2, 7), (3, 4), (4, 7), (5, 5), (6, 8)],
        ];
        for swaps in cases {
            let v = apply(10, &swaps);
            let moves = compose(&swaps);
            let mut w: Vec<usize> = (0..10).collect();
            for &(pos, src) in &moves {
                w[pos] = src;
            }
            assert_eq!(v, w, "{swaps:?}");
            assert!(moves.windows(2).all(|p| p[0].0 < p[1].0));
            assert!(moves.iter().all(|&(p, s)| p != s));
        }
    }

    #[test]
    fn gather_and_scatter_rows_round_trip() {
        let lld = 6;
        let data: Vec<f64> = (0..lld * 4).map(|x| x as f64).collect();
        let rows = [4, 1];
        let buf = gather_rows(&data, lld, &rows, &[2..3, 3..4]);
        assert_eq!(buf, vec![16.0, 13.0, 22.0, 19.0]);
        let mut out = vec![0.0; lld * 4];
        scatter_rows(&buf, &mut out, lld, &rows, &[2..3, 3..4]);
        for c in [2, 3] {
            for r in rows {
                assert_eq!(out[r + c * lld], data[r + c * lld]);
            }
        }
        assert_eq!(out[1 + lld], 0.0);
        assert_eq!(out.iter().filter(|&&x| x != 0.0).count(), 4);
    }
}
