//! One process row: the look-ahead, computed in scratch while the step's
//! agreement runs. The owner of the next panel brings that panel's
//! columns through the step's interchanges, TRSM and DGEMM on a copy (all
//! rows are local with one process row) and factors it; the commit writes
//! the copy back and sends the panel at once, so the other process columns
//! find it at the next step instead of idling through its factorization.
//!
//! (Only the next panel: a process that computes while its agreement is in
//! flight slows the agreement down for everybody, since it takes part in
//! it only between its pieces of work.)

use crate::abft::Extended;
use crate::blas::{self, Trans};
use crate::lu::panel::{factor_packed, Panel};
use std::ops::Range;

/// Flops of one tile of the commit's update on the next panel's owner,
/// between two looks at that panel's broadcast (a few milliseconds of
/// DGEMM: tiles near 1000 × 1000 at NB 64). This owner is the last to
/// finish each commit, so every process waits for it at the next
/// agreement: smaller tiles cost it DGEMM speed (4 % at 560 × 560 with
/// inner dimension 128, 1–2 % at 1000 × 1000, AMD EPYC, Zen kernel), and
/// the others' time with it. Measured with checksums on 1×2 and 1×4,
/// N = 4096: the fault-tolerant LU ran 2–4 % faster than with tiles of
/// 4·10⁷ flops.
const CHUNK_FLOPS: f64 = 1.3e8;

/// The next panel, computed early (see the module documentation).
pub(super) struct Early {
    /// Its local columns (the first trailing ones on its owner).
    pub cols: Range<usize>,
    /// Their rows `j0..M` (leading dimension `M − j0`) as the step leaves
    /// them: the panel's backup.
    pub updated: Vec<f64>,
    /// The panel, factored from them.
    pub next: Panel,
}

/// The tiles (rows, columns) of an update of `rows`×`cols` by a `jb`-wide
/// panel, in chunks of about [`CHUNK_FLOPS`], column block by column
/// block. Square: a DGEMM packs both its operands' share of a tile, so a
/// chunk of a few columns and every row would pack the whole panel again
/// for little work (with a fast kernel, the packing then costs more than
/// the flops, and more the wider the panel).
pub(super) fn tiles(
    rows: Range<usize>,
    cols: Range<usize>,
    jb: usize,
) -> impl Iterator<Item = (Range<usize>, Range<usize>)> {
    let side = ((CHUNK_FLOPS / (2.0 * jb.max(1) as f64)).sqrt() as usize).max(64);
    let starts = move |r: Range<usize>| (r.start..r.end).step_by(side).map(move |a| a..(a + side).min(r.end));
    starts(cols).flat_map(move |c| starts(rows.clone()).map(move |r| (r, c.clone())))
}

/// On the owner of the next panel (`nw` columns, the first of `trail`):
/// that panel through step `panel` (interchanges `swaps`) in scratch, and
/// factored; `agreed` advances the agreement between the pieces.
pub(super) fn compute(
    ext: &Extended,
    panel: &Panel,
    swaps: &[(usize, usize)],
    trail: Range<usize>,
    nw: usize,
    agreed: &mut dyn FnMut() -> bool,
) -> Early {
    let (j0, jb, lw) = (panel.j0, panel.jb, panel.lw);
    let mut updated = Vec::new();
    let cols = trail.start..trail.start + nw;
    update(ext, panel, swaps, cols.clone(), &mut updated);
    agreed();
    let mut next = Panel::new(j0 + jb, nw, lw - jb);
    let mut rows = Vec::new();
    crate::matrix::pack(&updated, lw, jb..lw, 0..nw, &mut rows);
    next.l_mut().copy_from_slice(&rows);
    factor_packed(&mut next, &mut || {
        agreed();
    });
    Early { cols, updated, next }
}

/// Local columns `cols` (rows `j0..M`) through step `panel` into `out`.
fn update(ext: &Extended, panel: &Panel, swaps: &[(usize, usize)], cols: Range<usize>, out: &mut Vec<f64>) {
    let (j0, jb, lw) = (panel.j0, panel.jb, panel.lw);
    let n = cols.len();
    crate::matrix::pack(ext.matrix.local(), ext.matrix.lld(), j0..j0 + lw, cols, out);
    for &(r, p) in swaps.iter().filter(|(r, p)| r != p) {
        for t in 0..n {
            out.swap(t * lw + r - j0, t * lw + p - j0);
        }
    }
    panel.solve_block_row(n, out, lw);
    if lw > jb {
        let mut u12 = Vec::new();
        crate::matrix::pack(out, lw, 0..jb, 0..n, &mut u12);
        let l21 = &panel.l()[jb..];
        blas::dgemm(Trans::No, Trans::No, lw - jb, n, jb, -1.0, l21, lw, &u12, jb, 1.0, &mut out[jb..], lw);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tiles_cover_the_update_once_in_square_chunks() {
        for (rows, cols, jb) in [(100..4096, 7..2000, 256), (0..50, 0..10, 64), (3..3, 0..100, 32)] {
            let mut hit = vec![0u8; rows.end * cols.end];
            let tiles: Vec<_> = tiles(rows.clone(), cols.clone(), jb).collect();
            for (r, c) in &tiles {
                for j in c.clone() {
                    for i in r.clone() {
                        hit[i + j * rows.end] += 1;
                    }
                }
            }
            for j in 0..cols.end {
                for i in 0..rows.end {
                    assert_eq!(hit[i + j * rows.end], (rows.contains(&i) && cols.contains(&j)) as u8, "{i} {j}");
                }
            }
            // About CHUNK_FLOPS each, square where the update allows.
            if let Some((r, c)) = tiles.first().filter(|_| rows.len() > 1000) {
                assert_eq!(r.len(), c.len());
                let flops = 2.0 * (r.len() * c.len() * jb) as f64;
                assert!(flops > 0.5 * CHUNK_FLOPS && flops < 1.5 * CHUNK_FLOPS, "{flops}");
            }
        }
    }
}
