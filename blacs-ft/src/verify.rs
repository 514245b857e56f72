//! A collective self-check of a grid: proves that every position holds the
//! right coordinates and that every scope moves the right data.

use crate::error::Result;
use crate::grid::{Grid, Scope};

/// Deterministic test value of element `i` of grid rank `rank`'s block.
pub fn probe_value(rank: i32, i: usize) -> f64 {
    (rank as f64 + 1.0) * 1000.0 + i as f64 * 0.5
}

/// What [`verify_grid`] checked (the same on every rank when it succeeds).
#[derive(Clone, Debug, PartialEq)]
pub struct GridCheck {
    /// Grid-wide sum of all probe blocks (compared with the closed form).
    pub total: f64,
    /// Number of collective operations run.
    pub operations: usize,
}

/// Keeps the first mismatch seen; the check goes on so that every rank runs
/// the same collectives, and the ranks agree on the outcome at the end.
fn note(first: &mut Option<String>, what: String) {
    first.get_or_insert(what);
}

/// Collective over the grid. Each rank holds a probe block of `len` values
/// derived from its grid rank; the check runs an all-gather of coordinates,
/// sums along rows, columns and the whole grid, a blocking and a non-blocking
/// broadcast from every root of every scope, an |max| with location, and a
/// ring exchange, and compares each result with its closed form. A wrong coordinate or misrouted block is an
/// error on every rank that sees it (and, through the sums, on all).
pub fn verify_grid(grid: &Grid, len: usize) -> Result<GridCheck> {
    let (p, q, me) = (grid.nprow(), grid.npcol(), grid.rank());
    let mut ops = 0;
    let mut bad: Option<String> = None;
    // Coordinates: everybody agrees on who sits where.
    let coords = grid.allgather(Scope::All, &[me as i64, grid.myrow() as i64, grid.mycol() as i64])?;
    ops += 1;
    for (r, c) in coords.chunks_exact(3).enumerate() {
        let r = r as i64;
        if c != [r, r / q as i64, r % q as i64] {
            note(&mut bad, format!("position {r} reports rank/row/col {c:?}"));
        }
    }
    let block: Vec<f64> = (0..len).map(|i| probe_value(me, i)).collect();
    let sum_ranks = |ranks: &mut dyn Iterator<Item = i32>, i: usize| ranks.map(|r| probe_value(r, i)).sum::<f64>();
    // Sums along each scope.
    for scope in [Scope::Row, Scope::Column, Scope::All] {
        let mut b = block.clone();
        grid.sum(scope, &mut b, None)?;
        ops += 1;
        for (i, &v) in b.iter().enumerate() {
            let expect = match scope {
                Scope::Row => sum_ranks(&mut (0..q).map(|c| grid.rank_of(grid.myrow(), c)), i),
                Scope::Column => sum_ranks(&mut (0..p).map(|r| grid.rank_of(r, grid.mycol())), i),
                Scope::All => sum_ranks(&mut (0..p * q), i),
            };
            if (v - expect).abs() > 1e-9 * expect.abs().max(1.0) {
                note(&mut bad, format!("{scope:?} sum of element {i} on rank {me}: {v} != {expect}"));
            }
        }
    }
    // Broadcast from every root of every scope.
    for scope in [Scope::Row, Scope::Column, Scope::All] {
        let n = match scope {
            Scope::Row => q,
            Scope::Column => p,
            Scope::All => p * q,
        };
        for root in 0..n {
            let src = match scope {
                Scope::Row => grid.rank_of(grid.myrow(), root),
                Scope::Column => grid.rank_of(root, grid.mycol()),
                Scope::All => root,
            };
            let mut b = if src == me { block.clone() } else { vec![f64::NAN; len] };
            grid.broadcast(scope, &mut b, root)?;
            ops += 1;
            if b.iter().enumerate().any(|(i, &v)| v != probe_value(src, i)) {
                note(&mut bad, format!("{scope:?} broadcast from root {root} reached rank {me} wrong"));
            }
        }
    }
    // Non-blocking broadcasts: every root of a scope starts at once, so
    // several are in flight together; completing them in order must give
    // each root's data.
    for scope in [Scope::Row, Scope::Column, Scope::All] {
        let roots: Vec<i32> = match scope {
            Scope::Row => (0..q).map(|c| grid.rank_of(grid.myrow(), c)).collect(),
            Scope::Column => (0..p).map(|r| grid.rank_of(r, grid.mycol())).collect(),
            Scope::All => (0..p * q).collect(),
        };
        let mut pending = Vec::with_capacity(roots.len());
        for (root, &src) in roots.iter().enumerate() {
            let b = if src == me { block.clone() } else { vec![f64::NAN; len] };
            pending.push(grid.ibroadcast(scope, b, root as i32)?);
        }
        for ((root, &src), started) in roots.iter().enumerate().zip(pending) {
            let b = grid.wait_broadcast(started)?;
            ops += 1;
            if b.iter().enumerate().any(|(i, &v)| v != probe_value(src, i)) {
                note(&mut bad, format!("{scope:?} non-blocking broadcast from root {root} reached rank {me} wrong"));
            }
        }
    }
    // |max| with location: the largest is the last rank's (negated), ties
    // broken by the lowest index.
    let (v, at) = grid.amax(Scope::All, -(me as f64 + 1.0), me as i64)?;
    ops += 1;
    if at != (p * q - 1) as i64 || v != -((p * q) as f64) {
        note(&mut bad, format!("amax gave ({v}, {at}) on rank {me}"));
    }
    // Ring exchange: send to the right neighbour in the row, receive from the left.
    let right = (grid.myrow(), (grid.mycol() + 1) % q);
    let left = (grid.myrow(), (grid.mycol() + q - 1) % q);
    let mut got = vec![0.0; len];
    grid.exchange(&block, right, &mut got, left, 77)?;
    ops += 1;
    let from = grid.rank_of(left.0, left.1);
    if got.iter().enumerate().any(|(i, &v)| v != probe_value(from, i)) {
        note(&mut bad, format!("ring exchange into rank {me} carried the wrong block"));
    }
    let mut total = block.iter().sum::<f64>();
    grid.sum(Scope::All, std::slice::from_mut(&mut total), None)?;
    ops += 1;
    grid.agree_ok(match bad {
        None => Ok(()),
        Some(what) => Err(format!("grid self-check failed: {what}")),
    })?;
    Ok(GridCheck { total, operations: ops })
}
