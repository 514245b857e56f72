//! One process row: the trailing update of the far groups deferred by one
//! step, so that two panels update them in one DGEMM with an inner
//! dimension of 2·NB (about 10 % faster than two of NB on this kind of
//! update, which is most of the factorization's time).
//!
//! An even step k (with a step after it) updates at once only its near
//! columns — the groups of the next few blocks (the next two panels among
//! them) and their checksum pairs — and solves U's block row everywhere.
//! The far groups' data and checksum pairs keep their rows below the
//! panel un-updated; step k+1 applies the two panels' updates to them
//! together. The checksum relation holds at every commit because it holds
//! row by row within each group: a group's members and its pair are always
//! in the same state (all updated, or all waiting for the same panel's
//! update). Step k+1's interchanges only move rows below panel k, which are
//! all waiting in the far columns, so the state stays uniform; they reach
//! panel k's L rows (kept here, as the finished columns' are) too.
//!
//! After a repair every process drops the kept panel; a step that needs it
//! has its owner send it again from A (where its L is committed).

use crate::abft::Extended;
use crate::blas::{self, Trans};
use crate::error::Result;
use crate::lu::panel::Panel;
use blacs_ft::{Grid, Scope};
use checksum::ChecksumLayout;
use std::ops::Range;

/// Blocks past the next panel whose groups an even step updates at once:
/// the next two panels' (so that a look-ahead panel is never waiting) and
/// enough work to cover the next panel's factorization on its owner.
const NEAR_BLOCKS: usize = 4;

/// An even step's update of the far columns (see [`far_columns`]), left
/// for the next step: that step's panel, its L (rows `j0..M`, leading
/// dimension `lw`) with the later interchanges applied.
pub(super) struct Deferred {
    pub panel: Panel,
}

/// The last group step `k` updates at once (the groups after it are far).
fn last_near_group(layout: &ChecksumLayout, k: usize) -> usize {
    let last = (k + 1 + NEAR_BLOCKS).min(layout.data_block_cols().saturating_sub(1));
    layout.group_of(last).unwrap_or(layout.groups())
}

/// Whether step `k` of `nsteps` leaves its far update to the next step
/// (global: every process of the row answers alike): an even step with a
/// step after it and groups past its near ones.
pub(super) fn defers(layout: &ChecksumLayout, k: usize, nsteps: usize) -> bool {
    k.is_multiple_of(2) && k + 1 < nsteps && last_near_group(layout, k) + 1 < layout.groups()
}

/// The far columns of a step `k` that [`defers`], local to `ext`: one
/// contiguous range, since the far groups' checksums come first in the
/// checksum area (groups are stored in reverse order): from the first
/// member of the first far group to the first checksum of the last near one.
pub(super) fn far_columns(ext: &Extended, layout: &ChecksumLayout, k: usize) -> Range<usize> {
    let (nb, nbc) = (layout.nb(), layout.data_block_cols());
    let g_near = last_near_group(layout, k);
    let first = layout.group_members(g_near + 1).map_or(nbc, |m| m.start) * nb;
    let end = layout.checksum_block_cols(g_near).ok().and_then(|c| c.first().copied()).unwrap_or(nbc) * nb;
    ext.matrix.local_cols_before(first)..ext.matrix.local_cols_before(end)
}

impl Deferred {
    /// Step `k`'s interchanges (`swaps`, rows past this panel) on the
    /// kept L rows.
    pub fn swap(&mut self, swaps: &[(usize, usize)]) {
        let (j0, jb, lw) = (self.panel.j0, self.panel.jb, self.panel.lw);
        let l = self.panel.l_mut();
        for &(r, p) in swaps.iter().filter(|(r, p)| r != p) {
            for c in 0..jb {
                l.swap(c * lw + r - j0, c * lw + p - j0);
            }
        }
    }

    /// The next panel's U rows (`rows`, local = global) of the far
    /// columns `cols` get this panel's update, before their triangular
    /// solve.
    pub fn update_block_row(&self, ext: &mut Extended, rows: Range<usize>, cols: Range<usize>) {
        let (dj0, djb, dlw) = (self.panel.j0, self.panel.jb, self.panel.lw);
        let lld = ext.matrix.lld();
        if cols.is_empty() || rows.is_empty() {
            return;
        }
        let mut u = Vec::new();
        crate::matrix::pack(ext.matrix.local(), lld, dj0..dj0 + djb, cols.clone(), &mut u);
        let l = &self.panel.l()[rows.start - dj0..];
        let c = &mut ext.matrix.local_mut()[rows.start + cols.start * lld..];
        blas::dgemm(Trans::No, Trans::No, rows.len(), cols.len(), djb, -1.0, l, dlw, &u, djb, 1.0, c, lld);
    }

    /// This panel's update of local columns `cols`, rows below it, times
    /// `alpha`: −1 applies it, +1 takes it out again. (One process row:
    /// local rows are global rows.)
    fn far_update(&self, ext: &mut Extended, cols: Range<usize>, alpha: f64) {
        let (j0, jb, lw) = (self.panel.j0, self.panel.jb, self.panel.lw);
        let below = j0 + jb;
        let rows = ext.matrix.local_rows().saturating_sub(below);
        if cols.is_empty() || rows == 0 {
            return;
        }
        let lld = ext.matrix.lld();
        let mut u = Vec::new();
        crate::matrix::pack(ext.matrix.local(), lld, j0..below, cols.clone(), &mut u);
        let l = &self.panel.l()[jb..];
        let c = &mut ext.matrix.local_mut()[below + cols.start * lld..];
        blas::dgemm(Trans::No, Trans::No, rows, cols.len(), jb, alpha, l, lw, &u, jb, 1.0, c, lld);
    }

    /// The two panels' update of the far columns, rows `below..` (local =
    /// global): `[L_k | L_k+1]` (rows `below..`) times U's two block rows
    /// (rows `panel.j0..below` of A, both solved by now).
    pub fn two_panel_update(&self, next: &Panel) -> TwoPanels {
        let below = next.j0 + next.jb;
        let (dj0, djb) = (self.panel.j0, self.panel.jb);
        let rows = self.panel.lw - (below - dj0);
        let mut l = Vec::with_capacity(rows * (djb + next.jb));
        for (p, skip) in [(&self.panel, below - dj0), (next, below - next.j0)] {
            for c in 0..p.jb {
                l.extend_from_slice(&p.l()[c * p.lw + skip..(c + 1) * p.lw]);
            }
        }
        TwoPanels { l, rows, k: djb + next.jb, u0: dj0, below }
    }
}

/// `[L_k | L_k+1]` packed for [`TwoPanels::apply`].
pub(super) struct TwoPanels {
    l: Vec<f64>,
    rows: usize,
    k: usize,
    /// First row of U's two block rows.
    u0: usize,
    /// First row updated.
    below: usize,
}

impl TwoPanels {
    /// The update of local rows `rows` (of those below both panels) of
    /// local columns `cols` (all far).
    pub fn apply(&self, ext: &mut Extended, rows: Range<usize>, cols: Range<usize>) {
        let rows = rows.start.max(self.below)..rows.end.min(self.below + self.rows);
        if cols.is_empty() || rows.is_empty() {
            return;
        }
        let lld = ext.matrix.lld();
        let mut u = Vec::new();
        crate::matrix::pack(ext.matrix.local(), lld, self.u0..self.below, cols.clone(), &mut u);
        let c = &mut ext.matrix.local_mut()[rows.start + cols.start * lld..];
        blas::dgemm(
            Trans::No,
            Trans::No,
            rows.len(),
            cols.len(),
            self.k,
            -1.0,
            &self.l[rows.start - self.below..],
            self.rows,
            &u,
            self.k,
            1.0,
            c,
            lld,
        );
    }
}

/// Collective over the process row, on a call resumed at `k` committed
/// steps from a save on another grid, where this grid's step `k − 1`
/// deferred its far update (see [`defers`]): the saved state is complete,
/// so the update of the far columns' rows below panel `k − 1` is taken out
/// again (added back), and step `k` completes it as on this grid. Returns
/// the kept panel, as [`resend`] does.
pub(super) fn defer_again(grid: &Grid, ext: &mut Extended, layout: &ChecksumLayout, k: usize) -> Result<Deferred> {
    let kept = resend(grid, ext, k)?;
    let far = far_columns(ext, layout, k - 1);
    let start = far.start.max(ext.matrix.local_cols_before(kept.panel.j0 + kept.panel.jb));
    kept.far_update(ext, start..far.end.max(start), 1.0);
    Ok(kept)
}

/// Collective over the process row of a grid a shrink left (one process
/// row, as the grid before), once the data blocks committed at `k` steps
/// on a grid of layout `before` moved there, where that grid's step
/// `k − 1` deferred its far update (see [`defers`]): the update of those
/// far data columns' rows below panel `k − 1` applied, so that the state
/// is complete, as a save would hold it (the checksums are encoded
/// afterwards, and [`defer_again`] takes out what this grid defers).
pub(super) fn complete_after_move(grid: &Grid, ext: &mut Extended, before: &ChecksumLayout, k: usize) -> Result<()> {
    let kept = resend(grid, ext, k)?;
    // (The far data columns of the grid before: its groups after the
    // last near one.)
    let (nb, nbc) = (before.nb(), before.data_block_cols());
    let first = before.group_members(last_near_group(before, k - 1) + 1).map_or(nbc, |m| m.start) * nb;
    let first = ext.matrix.local_cols_before(first.max(kept.panel.j0 + kept.panel.jb));
    kept.far_update(ext, first..ext.matrix.local_cols_before(before.n()).max(first), -1.0);
    Ok(())
}

/// Collective over the process row, in step `k`'s phase 1 after a repair
/// (every process dropped the kept panel): step `k − 1`'s panel L, sent
/// by its owner from A.
pub(super) fn resend(grid: &Grid, ext: &Extended, k: usize) -> Result<Deferred> {
    let nb = ext.matrix.nb();
    let (j0, jb) = ((k - 1) * nb, nb);
    let lw = ext.matrix.m() - j0;
    let owner = ext.matrix.col_owner(j0);
    let mut panel = Panel::new(j0, jb, lw);
    if grid.mycol() as usize == owner {
        let (lc0, lld) = (ext.matrix.local_cols_before(j0), ext.matrix.lld());
        for (c, col) in panel.l_mut().chunks_exact_mut(lw.max(1)).enumerate() {
            let at = (lc0 + c) * lld + j0;
            col.copy_from_slice(&ext.matrix.local()[at..at + lw]);
        }
    }
    grid.broadcast(Scope::Row, panel.l_mut(), owner as i32)?;
    blacs_ft::trace!("rank {}: step {k}: panel {} sent again for its deferred update", grid.rank(), k - 1);
    Ok(Deferred { panel })
}
