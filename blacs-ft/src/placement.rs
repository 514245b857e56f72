//! Where the grid's ranks go among the processes: the default order (the
//! first P·Q processes of the communicator are grid ranks 0, 1, … in
//! order), or spread over the nodes so that no node holds two processes of
//! one process row.
//!
//! The checksums rebuild the layout's F losses per process row. A lost node
//! takes every process on it: with the default order and a launcher that
//! fills each node before the next (`--map-by slot`, Open MPI's default) a
//! node holds whole process rows, and its loss is unrecoverable. Spread
//! puts each node's processes in distinct process rows (grid ranks
//! column-major over the processes in node order), so the loss of a node
//! that holds at most F processes of a row is rebuilt in place — and its
//! periodic checkpoints on node-local disks are rebuilt too, when saved with
//! their parity.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// `FTLA_PLACEMENT`: `spread`, or `default` (unset or empty).
pub const PLACEMENT_VAR: &str = "FTLA_PLACEMENT";
/// Test switch: `FTLA_TEST_NODES=a,b,…` names the node of each process of
/// the communicator the grid is built from (by rank), in place of the host
/// names (one machine plays several nodes).
pub const TEST_NODES_VAR: &str = "FTLA_TEST_NODES";

/// How grid ranks are placed on the processes (see the module's
/// documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Placement {
    /// Grid rank r on the r-th process.
    #[default]
    Default,
    /// The processes of each node in distinct process rows.
    Spread,
}

impl Placement {
    /// `default` or `spread`.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Default => "default",
            Placement::Spread => "spread",
        }
    }

    /// The placement called `name`.
    pub fn parse(name: &str) -> Option<Placement> {
        [Placement::Default, Placement::Spread].into_iter().find(|p| p.name() == name)
    }

    /// From `FTLA_PLACEMENT` (unset or empty: the default).
    ///
    /// # Errors
    /// Another value ([`Error::InvalidArgument`], naming the variable).
    pub fn from_env() -> Result<Placement> {
        match std::env::var(PLACEMENT_VAR).ok().filter(|s| !s.is_empty()) {
            None => Ok(Placement::Default),
            Some(s) => Placement::parse(&s)
                .ok_or_else(|| Error::invalid(PLACEMENT_VAR, format!("`{s}`: must be default or spread"))),
        }
    }
}

/// The grid rank of each of the first `p·q` processes (`nodes[u]`: the
/// node of process `u`; the processes past `p·q` stay spares, as with the
/// default placement): the processes in node order (nodes in the order of
/// their first process), then in rank order, take the grid ranks column
/// after column, so the processes of a node that holds at most `p` of them
/// fall in distinct process rows.
pub(crate) fn spread_roles(nodes: &[i64], p: i32, q: i32) -> Vec<i64> {
    let n = (p.max(0) * q.max(0)) as usize;
    let grid = &nodes[..n.min(nodes.len())];
    let first = |node: i64| grid.iter().position(|&x| x == node).unwrap_or(0);
    let mut order: Vec<usize> = (0..grid.len()).collect();
    order.sort_by_key(|&u| (first(grid[u]), u));
    let mut roles = vec![0i64; grid.len()];
    for (t, &u) in order.iter().enumerate() {
        let (row, col) = (t as i32 % p, t as i32 / p);
        roles[u] = (row * q + col) as i64;
    }
    roles
}

/// The most processes of one process row that one node holds, over the
/// rows of a `q`-column grid (`node_of[r]`: the node of grid rank `r`).
pub fn most_per_row<T: PartialEq>(node_of: &[T], q: usize) -> usize {
    let q = q.max(1);
    node_of.chunks(q).flat_map(|row| row.iter().map(move |n| row.iter().filter(|m| *m == n).count())).max().unwrap_or(0)
}

/// Nodes numbered from 0 in the order they first appear (`nodes`: a
/// node's identity per grid rank).
pub(crate) fn numbered<T: PartialEq + Copy>(nodes: &[T]) -> Vec<u32> {
    let mut seen: Vec<T> = Vec::new();
    nodes
        .iter()
        .map(|x| match seen.iter().position(|s| s == x) {
            Some(i) => i as u32,
            None => {
                seen.push(*x);
                (seen.len() - 1) as u32
            }
        })
        .collect()
}

/// The node names of `FTLA_TEST_NODES`, if set: one per process.
pub(crate) fn test_nodes() -> Option<Vec<String>> {
    let s = std::env::var(TEST_NODES_VAR).ok().filter(|s| !s.is_empty())?;
    Some(s.split(',').map(|x| x.trim().to_string()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_puts_each_nodes_processes_in_distinct_rows() {
        // Two nodes of two processes each, filled in turn (--map-by slot):
        // by default node 0 holds row 0 whole.
        let nodes = [7, 7, 9, 9];
        assert_eq!(most_per_row(&nodes, 2), 2);
        assert_eq!(numbered(&nodes), vec![0, 0, 1, 1]);
        let roles = spread_roles(&nodes, 2, 2);
        assert_eq!(roles, vec![0, 2, 1, 3]);
        let mut node_of = vec![0; 4];
        for (u, &r) in roles.iter().enumerate() {
            node_of[r as usize] = nodes[u];
        }
        assert_eq!(most_per_row(&node_of, 2), 1);
        // 2x3 over three nodes of two, and a spare past the grid.
        let nodes = [1, 1, 2, 2, 3, 3, 3];
        let roles = spread_roles(&nodes, 2, 3);
        assert_eq!(roles.len(), 6);
        let mut sorted = roles.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..6).collect::<Vec<i64>>());
        let mut node_of = vec![0; 6];
        for (u, &r) in roles.iter().enumerate() {
            node_of[r as usize] = nodes[u];
        }
        assert_eq!(most_per_row(&node_of, 3), 1);
        assert_eq!(Placement::parse("spread"), Some(Placement::Spread));
        assert_eq!(Placement::parse("rows"), None);
    }
}
