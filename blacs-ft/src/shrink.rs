//! SHRINK (FT-MPI's fourth mode): when a lost grid rank can be given
//! neither a parked spare nor a spawned process, the survivors go on as a
//! smaller grid. Here the pure rules every survivor applies alike to the
//! agreed list of survivors: which grid they form, which survivor takes
//! which place, and which survivor holds a lost grid rank's data until it
//! has been moved onto the new grid.

use serde::{Deserialize, Serialize};

/// A grid shape, written `PxQ` in reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridShape {
    /// Process rows.
    pub p: i32,
    /// Process columns.
    pub q: i32,
}

impl std::fmt::Display for GridShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.p, self.q)
    }
}

impl Serialize for GridShape {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.collect_str(self)
        } else {
            (self.p, self.q).serialize(s)
        }
    }
}

impl<'de> Deserialize<'de> for GridShape {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        if d.is_human_readable() {
            let text = String::deserialize(d)?;
            let parsed = text.split_once('x').and_then(|(p, q)| Some((p.parse().ok()?, q.parse().ok()?)));
            match parsed {
                Some((p, q)) if p > 0 && q > 0 => Ok(GridShape { p, q }),
                _ => Err(D::Error::custom(format!("a grid shape is written PxQ, not {text:?}"))),
            }
        } else {
            let (p, q) = <(i32, i32)>::deserialize(d)?;
            Ok(GridShape { p, q })
        }
    }
}

/// The grid that `alive` processes of a `p`×`q` grid go on with, each row
/// keeping at least `min_cols` process columns (a checksum layout that
/// tolerates F losses per row needs F + 1):
/// * the `p` process rows are kept when the survivors fill `p`×`q'` with
///   `q' ≥ min_cols` (`q'` as large as they fill, at most `q`);
/// * otherwise the largest grid they fill with at least `min_cols`
///   columns; among grids of the same size the squarest, with no more rows
///   than columns (ScaLAPACK's preference for QR and LU).
///
/// `None` when fewer than `min_cols` processes are left: no grid keeps the
/// layout's tolerance, and the loss is unrecoverable.
pub fn shrunk_shape(p: i32, q: i32, alive: usize, min_cols: usize) -> Option<GridShape> {
    let (p, q, min_cols) = (p.max(1) as usize, q.max(1) as usize, min_cols.max(1));
    let kept = (alive / p).min(q);
    if kept >= min_cols {
        return Some(GridShape { p: p as i32, q: kept as i32 });
    }
    (1..=alive)
        .filter_map(|rows| {
            let cols = alive / rows;
            (cols >= min_cols).then_some((rows, cols))
        })
        .max_by_key(|&(rows, cols)| (rows * cols, std::cmp::Reverse(rows.abs_diff(cols)), cols >= rows))
        .map(|(rows, cols)| GridShape { p: rows as i32, q: cols as i32 })
}

/// Which survivor plays which grid rank of the shrunk grid `to`: `roles[u]`
/// is the grid rank (of the `from` grid) or `spare` (a hot spare) of
/// survivor `u`, in universe order; the result is the same for the new
/// grid. When the process rows are kept, a survivor stays in its process
/// row (in the order of its old column) while its row has room; the
/// others, and the old spares after them, fill the places left in
/// row-major order. On a grid of another number of rows, survivors take
/// the places in the order of their old grid ranks, spares last. Whoever
/// gets no place is a hot spare of the new grid.
pub(crate) fn shrunk_roles(roles: &[i64], from: GridShape, to: GridShape, spare: i64) -> Vec<i64> {
    let (q_old, q_new) = (from.q as i64, to.q as i64);
    let places = (to.p * to.q) as usize;
    let mut new = vec![spare; roles.len()];
    // Survivors by old grid rank, then the spares by universe rank.
    let mut order: Vec<usize> = (0..roles.len()).filter(|&u| roles[u] >= 0).collect();
    order.sort_by_key(|&u| roles[u]);
    order.extend((0..roles.len()).filter(|&u| roles[u] < 0));
    let mut taken = vec![false; places];
    let mut waiting = Vec::new();
    if to.p == from.p {
        let mut next_col = vec![0i64; to.p as usize];
        for &u in &order {
            let row = (roles[u] >= 0).then(|| roles[u] / q_old);
            match row {
                Some(r) if next_col[r as usize] < q_new => {
                    let place = r * q_new + next_col[r as usize];
                    next_col[r as usize] += 1;
                    new[u] = place;
                    taken[place as usize] = true;
                }
                _ => waiting.push(u),
            }
        }
    } else {
        waiting = order;
    }
    let mut free = (0..places).filter(|&g| !taken[g]);
    for u in waiting {
        match free.next() {
            Some(g) => new[u] = g as i64,
            None => break,
        }
    }
    new
}

/// Which survivor holds each grid rank's data of the grid `from` until it
/// has been moved onto the shrunk grid: `roles[u]` as in [`shrunk_roles`]
/// (the survivors' roles on `from`); the answer is a universe rank per
/// grid rank of `from` (see [`fill_holders`]).
pub(crate) fn holders(roles: &[i64], from: GridShape) -> Vec<Option<usize>> {
    let mut holder: Vec<Option<usize>> = vec![None; (from.p * from.q) as usize];
    for (u, &r) in roles.iter().enumerate() {
        if let Some(h) = usize::try_from(r).ok().and_then(|r| holder.get_mut(r)) {
            *h = Some(u);
        }
    }
    fill_holders(holder, from)
}

/// Gives each grid rank of `from` without a holder (its data lost) the
/// holder of a surviving rank of its process row, onto which its data are
/// rebuilt: the nearest surviving column to its right (cyclically) whose
/// holder takes no other lost rank's data yet, else the nearest one, so
/// that losses side by side are spread over the row when it has room.
/// A lost rank whose whole process row is gone keeps `None`.
pub(crate) fn fill_holders(mut holder: Vec<Option<usize>>, from: GridShape) -> Vec<Option<usize>> {
    let (p, q) = (from.p as usize, from.q as usize);
    let alive = holder.clone();
    let mut hosting = vec![false; p * q];
    for g in 0..p * q {
        if alive[g].is_some() {
            continue;
        }
        let (row, col) = (g / q, g % q);
        let right: Vec<usize> = (1..q).map(|d| row * q + (col + d) % q).filter(|&h| alive[h].is_some()).collect();
        if let Some(&h) = right.iter().find(|&&h| !hosting[h]).or(right.first()) {
            hosting[h] = true;
            holder[g] = alive[h];
        }
    }
    holder
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(p: i32, q: i32) -> GridShape {
        GridShape { p, q }
    }

    #[test]
    fn the_rows_are_kept_while_the_survivors_fill_them() {
        // 2x3 losing one: 2x2 and a spare left over.
        assert_eq!(shrunk_shape(2, 3, 5, 2), Some(shape(2, 2)));
        // 2x4 losing one or two: 2x3.
        assert_eq!(shrunk_shape(2, 4, 7, 2), Some(shape(2, 3)));
        assert_eq!(shrunk_shape(2, 4, 6, 2), Some(shape(2, 3)));
        // Never wider than before.
        assert_eq!(shrunk_shape(1, 3, 8, 2), Some(shape(1, 3)));
        // 1xQ stays one row.
        assert_eq!(shrunk_shape(1, 4, 3, 2), Some(shape(1, 3)));
        // Two losses per row tolerated: at least three columns.
        assert_eq!(shrunk_shape(2, 4, 6, 3), Some(shape(2, 3)));
    }

    #[test]
    fn otherwise_the_largest_grid_with_enough_columns() {
        // 2x2 losing one: three survivors go on as 1x3.
        assert_eq!(shrunk_shape(2, 2, 3, 2), Some(shape(1, 3)));
        // 3x2 losing one: 3 rows of 2 no longer fit; 1x5 uses all five.
        assert_eq!(shrunk_shape(3, 2, 5, 2), Some(shape(1, 5)));
        // Six survivors of 4x2: 2x3 (the squarest of 1x6, 2x3, 3x2).
        assert_eq!(shrunk_shape(4, 2, 6, 2), Some(shape(2, 3)));
        // Four survivors of 3x2: 2x2 rather than 1x4.
        assert_eq!(shrunk_shape(3, 2, 4, 2), Some(shape(2, 2)));
    }

    #[test]
    fn below_the_layouts_columns_there_is_no_grid() {
        assert_eq!(shrunk_shape(1, 2, 1, 2), None);
        assert_eq!(shrunk_shape(2, 2, 2, 3), None);
        assert_eq!(shrunk_shape(2, 2, 0, 1), None);
        assert_eq!(shrunk_shape(1, 2, 1, 1), Some(shape(1, 1)));
    }

    #[test]
    fn survivors_keep_their_rows_and_the_rest_become_spares() {
        // 2x3, grid rank 4 lost (row 1, column 1); universe order mixed.
        let roles = [0, 1, 2, 3, 5];
        let new = shrunk_roles(&roles, shape(2, 3), shape(2, 2), -1);
        // Row 0 keeps ranks 0 and 1 in columns 0, 1; rank 2 is left over;
        // row 1 holds 3 and 5.
        assert_eq!(new, [0, 1, -1, 2, 3]);
        // A spare of the old grid fills a row with a hole.
        let roles = [0, 2, 3, -1];
        let new = shrunk_roles(&roles, shape(2, 2), shape(2, 2), -1);
        assert_eq!(new, [0, 2, 3, 1]);
    }

    #[test]
    fn on_fewer_rows_places_follow_the_old_ranks() {
        let roles = [3, 0, 1];
        let new = shrunk_roles(&roles, shape(2, 2), shape(1, 3), -1);
        assert_eq!(new, [2, 0, 1]);
        // Every place taken once.
        let roles = [5, 4, 0, 2, 1];
        let mut new = shrunk_roles(&roles, shape(3, 2), shape(1, 5), -1);
        new.sort_unstable();
        assert_eq!(new, [0, 1, 2, 3, 4]);
    }

    #[test]
    fn a_lost_rank_is_held_by_the_next_survivor_of_its_row() {
        // 2x3; grid rank 4 lost: held by rank 5 (universe 4).
        let roles = [0, 1, 2, 3, 5];
        assert_eq!(holders(&roles, shape(2, 3)), [Some(0), Some(1), Some(2), Some(3), Some(4), Some(4)]);
        // The last column's loss wraps around to column 0.
        let roles = [0, 1, 3, 4];
        assert_eq!(holders(&roles, shape(2, 3))[2], Some(0));
        assert_eq!(holders(&roles, shape(2, 3))[5], Some(2));
        // Two side by side in a row of four: two hosts.
        let roles = [0, 3, 4, 5, 6, 7];
        let h = holders(&roles, shape(2, 4));
        assert_eq!((h[1], h[2]), (Some(1), Some(0)));
        // A whole row gone: nobody.
        let roles = [0, 1];
        assert_eq!(holders(&roles, shape(2, 2))[2..], [None, None]);
    }

    #[test]
    fn shapes_are_written_pxq() {
        let s = shape(2, 3);
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"2x3\"");
        assert_eq!(serde_json::from_str::<GridShape>("\"2x3\"").unwrap(), s);
        assert!(serde_json::from_str::<GridShape>("\"2by3\"").is_err());
        assert_eq!(postcard::from_bytes::<GridShape>(&postcard::to_allocvec(&s).unwrap()).unwrap(), s);
    }
}
