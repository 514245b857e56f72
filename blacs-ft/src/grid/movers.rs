//! Who takes part in moving the data of the grid a shrink left onto the
//! new one, and how they agree among themselves: point to point over
//! [`Grid::survivors`], since a hot spare still parked is there too and
//! takes no part.

use super::*;

/// Tag of [`Grid::min_max_among_movers`].
const TAG_MOVERS: i32 = 0x5B3;

impl Grid {
    /// The ranks in [`Grid::survivors`] that take part in moving the data
    /// of the grid a shrink left (`from`): those with a place on this grid
    /// or data of the grid before, ascending.
    pub fn movers(&self, from: &ShrunkFrom) -> Vec<i32> {
        let placed: Vec<i32> = (0..self.size()).filter_map(|r| self.survivor_of(r)).collect();
        (0..self.survivors().size()).filter(|u| placed.contains(u) || from.holders.contains(&Some(*u))).collect()
    }

    /// Whether this process holds data of the grid before the shrink
    /// (`from`): its own position's, or a lost one's it rebuilds.
    pub fn holds_data_of(&self, from: &ShrunkFrom) -> bool {
        from.holders.contains(&Some(self.survivors().rank()))
    }

    /// Whether a process with a place on this grid holds no data of the
    /// grid before the shrink (`from`): a hot spare given a place, or a
    /// replacement whose data were not rebuilt yet. Local; the same on
    /// every mover.
    pub fn has_newcomers(&self, from: &ShrunkFrom) -> bool {
        (0..self.size()).filter_map(|r| self.survivor_of(r)).any(|u| !from.holders.contains(&Some(u)))
    }

    /// Collective over [`Grid::movers`]: the element-wise minimum and
    /// maximum of `mine` among them (a process that is not one of them
    /// gets its own values back).
    ///
    /// # Errors
    /// A process failure; every error revokes the survivors' communicator
    /// and the grid first, so that no mover waits for ever.
    pub fn min_max_among_movers(&self, from: &ShrunkFrom, mine: &[i64]) -> Result<(Vec<i64>, Vec<i64>)> {
        let survivors = self.survivors();
        let me = survivors.rank();
        let movers = self.movers(from);
        let (mut lo, mut hi) = (mine.to_vec(), mine.to_vec());
        let Some(&root) = movers.first().filter(|_| movers.contains(&me)) else { return Ok((lo, hi)) };
        let n = mine.len();
        let agreed = (|| -> Result<()> {
            if me == root {
                let mut theirs = vec![0i64; n];
                for &u in &movers[1..] {
                    survivors.recv(&mut theirs, Some(u), TAG_MOVERS)?;
                    for (k, &v) in theirs.iter().enumerate() {
                        lo[k] = lo[k].min(v);
                        hi[k] = hi[k].max(v);
                    }
                }
                let both = [&lo[..], &hi[..]].concat();
                for &u in &movers[1..] {
                    survivors.send(&both, u, TAG_MOVERS)?;
                }
            } else {
                survivors.send(mine, root, TAG_MOVERS)?;
                let mut both = vec![0i64; 2 * n];
                survivors.recv(&mut both, Some(root), TAG_MOVERS)?;
                (lo, hi) = (both[..n].to_vec(), both[n..].to_vec());
            }
            Ok(())
        })();
        if let Err(e) = agreed {
            self.revoke();
            return Err(e);
        }
        Ok((lo, hi))
    }
}
