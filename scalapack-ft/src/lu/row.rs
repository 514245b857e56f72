//! `pdgetrf` on one process row (P = 1), where every process holds whole
//! columns: the algorithmic panel is `W = d·NB` columns wide (about
//! [`super::LuOptions::row_panel_width`]) although the layout keeps its
//! `NB`-wide blocks.
//!
//! Step `k` (panel `k` = columns `j0..j0+W`, factored and known to all):
//! interchanges on the trailing columns, U12 = L11⁻¹·A12 (every process has
//! its own part of the block row), then A22 -= L21·U12 with an inner
//! dimension of `W` instead of `NB` (a faster DGEMM).
//!
//! Look-ahead: every process updates its columns of panel `k+1` first and
//! sends them to the panel's leader (rotating over the process columns).
//! The leader collects the parts between the chunks of its own trailing
//! update (so a process that is behind does not make it wait), factors the
//! panel with LAPACK as soon as it is complete and sends it round the
//! process row; the others pick it up between the chunks of their update.
//! With `W = NB` (a panel in one process column) this is the 2D driver's
//! scheme with the panel's owner as leader and no parts to collect.
//!
//! Pivoting is partial pivoting whatever the panel width: the pivots and
//! the stored L and U are those of [`super::pdgetrf`]'s contract.

use super::panel::{Panel, StepLoop};
use super::ring::{self, Incoming, Poll};
use super::swap::interchange;
use super::tags;
use crate::blas;
use crate::error::Result;
use crate::matrix::{pack, DistMatrix};
use blacs_ft::index::{indxl2g, numroc};
use blacs_ft::Grid;
use recovery::profile::{self, Part};
use std::ops::Range;
use std::os::raw::c_int;

/// Factors `a` (on a 1×Q grid, Q > 1) in place with panels of about
/// `width` columns; fills `ipiv`, returns the first zero pivot. Collective
/// over the process row.
pub(super) fn factor(grid: &Grid, a: &mut DistMatrix, ipiv: &mut [i64], width: usize) -> Result<Option<usize>> {
    RowDriver::new(grid, a, width).run(ipiv)
}

/// The algorithmic panel width: `target` rounded down to a multiple of
/// `nb`, at least `nb`.
fn panel_width(target: usize, nb: usize) -> usize {
    (target / nb).max(1) * nb
}

struct RowDriver<'g, 'm> {
    grid: &'g Grid,
    a: &'m mut DistMatrix,
    nb: usize,
    mn: usize,
    /// Algorithmic panel width.
    w: usize,
    nsteps: usize,
    q: usize,
    mycol: usize,
    /// U12 block row of the current step, for the trailing local columns.
    ubuf: Vec<f64>,
}

impl<'g, 'm> RowDriver<'g, 'm> {
    fn new(grid: &'g Grid, a: &'m mut DistMatrix, width: usize) -> Self {
        let nb = a.nb();
        let mn = a.m().min(a.n());
        let w = panel_width(width, nb);
        let q = a.grid_shape().1;
        let mycol = a.coords().1;
        RowDriver { grid, a, nb, mn, w, nsteps: mn.div_ceil(w), q, mycol, ubuf: Vec::new() }
    }

    /// First column and width of panel `k`.
    fn block(&self, k: usize) -> (usize, usize) {
        let j0 = k * self.w;
        (j0, self.w.min(self.mn - j0))
    }

    /// The process column that factors panel `k`.
    fn leader(&self, k: usize) -> usize {
        if self.w == self.nb {
            self.a.col_owner(k * self.w)
        } else {
            k % self.q
        }
    }

    /// This process's local columns of global columns `j0..j0+w`.
    fn local_cols(&self, j0: usize, w: usize) -> Range<usize> {
        self.a.local_cols_before(j0)..self.a.local_cols_before(j0 + w)
    }

    /// Panel 0: gathered, factored and sent round by its leader.
    fn first_panel(&mut self) -> Result<Panel> {
        let (j0, w0) = self.block(0);
        let leader = self.leader(0);
        if self.mycol == leader {
            let p = self.gather(j0, w0).finish(self.grid)?;
            self.write_back(&p);
            Ok(p)
        } else {
            self.send_piece(j0, w0, leader)?;
            let lw = self.a.m() - j0;
            let p = Incoming::new(self.grid, j0, w0, lw, self.a.m(), leader).finish(self.grid)?;
            self.write_back(&p);
            Ok(p)
        }
    }

    /// Step `k` with panel `cur`; returns panel `k+1` if there is one.
    fn step(&mut self, k: usize, cur: &Panel) -> Result<Option<Panel>> {
        profile::at_step(k as u64);
        let (j0, wk) = (cur.j0, cur.jb);
        let ltc = self.a.local_cols_before(j0 + wk);
        let lc = self.a.local_cols();
        interchange(self.grid, self.a, &cur.swaps(), ltc..lc)?;
        self.block_row(cur, ltc..lc);
        if k + 1 >= self.nsteps {
            self.update(cur, ltc, ltc..lc, None)?;
            return Ok(None);
        }
        let (j1, w1) = self.block(k + 1);
        let leader = self.leader(k + 1);
        let la = ltc..self.a.local_cols_before(j1 + w1);
        self.update(cur, ltc, la.clone(), None)?;
        if self.mycol == leader {
            // Collect the other parts while updating (their owners may be
            // behind); factor and send as soon as the panel is complete.
            let mut gather = self.gather(j1, w1);
            self.update(cur, ltc, la.end..lc, Some(&mut gather))?;
            let next = gather.finish(self.grid)?;
            self.write_back(&next);
            Ok(Some(next))
        } else {
            self.send_piece(j1, w1, leader)?;
            let mut inc = Incoming::new(self.grid, j1, w1, self.a.m() - j1, self.a.m(), leader);
            self.update(cur, ltc, la.end..lc, Some(&mut inc))?;
            let next = inc.finish(self.grid)?;
            self.write_back(&next);
            Ok(Some(next))
        }
    }

    /// U12 = L11⁻¹·A12 on the local columns `cols` (all of them trailing),
    /// kept in `ubuf` (`W × cols.len()`).
    fn block_row(&mut self, cur: &Panel, cols: Range<usize>) {
        let _p = profile::part(Part::UPDATE, None);
        let (j0, wk) = (cur.j0, cur.jb);
        let lld = self.a.lld();
        let data = self.a.local_mut();
        if !cols.is_empty() {
            let b = &mut data[j0 + cols.start * lld..];
            cur.solve_block_row(cols.len(), b, lld);
        }
        pack(data, lld, j0..j0 + wk, cols, &mut self.ubuf);
    }

    /// A22 -= L21·U12 on the local columns `cols` (`ubuf` starts at local
    /// column `ltc`).
    fn update(&mut self, cur: &Panel, ltc: usize, cols: Range<usize>, inc: Option<&mut dyn Poll>) -> Result<()> {
        let _p = profile::part(Part::UPDATE, None);
        let (j0, wk) = (cur.j0, cur.jb);
        let r0 = j0 + wk;
        let mrows = self.a.m() - r0;
        let lld = self.a.lld();
        let u = &self.ubuf[(cols.start - ltc) * wk..];
        ring::update(self.grid, self.a.local_mut(), lld, r0, mrows, cols, &cur.l()[wk..], cur.lw, u, wk, inc)
    }

    /// Sends this process's columns of panel (`j0`, `w`), rows `j0..M`, to
    /// the leader.
    fn send_piece(&self, j0: usize, w: usize, leader: usize) -> Result<()> {
        let _p = profile::part(Part::BCAST, None);
        let cols = self.local_cols(j0, w);
        if cols.is_empty() {
            return Ok(());
        }
        let mut buf = Vec::new();
        pack(self.a.local(), self.a.lld(), j0..self.a.m(), cols, &mut buf);
        self.grid.send(&buf, 0, leader as i32, tags::PIECE)?;
        Ok(())
    }

    /// On the leader: starts assembling panel (`j0`, `w`) from its own
    /// columns; the other process columns' parts are received by
    /// [`Gather`].
    fn gather(&self, j0: usize, w: usize) -> Gather {
        let lw = self.a.m() - j0;
        let (nb, csrc, q) = (self.nb, self.a.desc().csrc(), self.q);
        let mut g = Gather { panel: Panel::new(j0, w, lw), pending: Vec::new(), nb, csrc, q, done: false };
        for pc in 0..q {
            let first = numroc(j0, nb, pc, csrc, q);
            let count = numroc(j0 + w, nb, pc, csrc, q) - first;
            if count == 0 {
                continue;
            }
            if pc == self.mycol {
                let mut piece = Vec::new();
                pack(self.a.local(), self.a.lld(), j0..j0 + lw, first..first + count, &mut piece);
                g.place(pc, first, count, &piece);
            } else {
                g.pending.push((pc, first, count));
            }
        }
        g
    }

    /// Stores this process's columns of a factored panel.
    fn write_back(&mut self, p: &Panel) {
        let cols = self.local_cols(p.j0, p.jb);
        let lld = self.a.lld();
        for lj in cols {
            let g = self.a.global_col(lj) - p.j0;
            let src = &p.l()[g * p.lw..(g + 1) * p.lw];
            self.a.local_mut()[p.j0 + lj * lld..p.j0 + p.lw + lj * lld].copy_from_slice(src);
        }
    }

    /// The interchanges of later panels, applied to each earlier panel's
    /// columns (L) once at the end, one column at a time.
    fn swap_left_columns(&mut self, ipiv: &[i64]) -> Result<()> {
        for k in 0..self.nsteps.saturating_sub(1) {
            let (j0, wk) = self.block(k);
            let cols = self.local_cols(j0, wk);
            if cols.is_empty() {
                continue;
            }
            let later: Vec<(usize, usize)> = (j0 + wk..self.mn).map(|i| (i, ipiv[i] as usize)).collect();
            interchange(self.grid, self.a, &later, cols)?;
        }
        Ok(())
    }
}

/// A wide panel being assembled on its leader: the parts of the other
/// process columns arrive while the leader computes; once all are in, the
/// panel is factored (LAPACK DGETRF) and sent round the process row.
struct Gather {
    panel: Panel,
    /// Parts still expected: (process column, first local column, count).
    pending: Vec<(usize, usize, usize)>,
    nb: usize,
    csrc: usize,
    q: usize,
    /// Factored and sent.
    done: bool,
}

impl Gather {
    /// Copies process column `pc`'s local columns `first..first+count`
    /// (`lw × count`, leading dimension `lw`) into the panel.
    fn place(&mut self, pc: usize, first: usize, count: usize, piece: &[f64]) {
        let (j0, lw) = (self.panel.j0, self.panel.lw);
        let l = self.panel.l_mut();
        for t in 0..count {
            let g = indxl2g(first + t, self.nb, pc, self.csrc, self.q) - j0;
            l[g * lw..(g + 1) * lw].copy_from_slice(&piece[t * lw..(t + 1) * lw]);
        }
    }

    /// Receives the part of `pending[i]` (blocking).
    fn receive(&mut self, grid: &Grid, i: usize) -> Result<()> {
        let (pc, first, count) = self.pending.swap_remove(i);
        let mut piece = vec![0.0; self.panel.lw * count];
        grid.recv_exact(&mut piece, 0, pc as i32, tags::PIECE)?;
        self.place(pc, first, count, &piece);
        Ok(())
    }

    /// Factors the complete panel and sends it on.
    fn factor_and_send(&mut self, grid: &Grid) -> Result<()> {
        let _p = profile::part(Part::PANEL, None);
        let (j0, w, lw) = (self.panel.j0, self.panel.jb, self.panel.lw);
        let mut ip: Vec<c_int> = vec![0; w];
        let info = blas::dgetrf(lw, w, self.panel.l_mut(), lw, &mut ip);
        let piv: Vec<usize> = ip.iter().map(|&p| j0 + (p.max(1) as usize) - 1).collect();
        self.panel.set_header(&piv, (info > 0).then(|| j0 + info as usize - 1));
        ring::send_on(grid, &self.panel, grid.mycol() as usize)?;
        self.done = true;
        Ok(())
    }

    /// The factored panel (waits for the missing parts).
    fn finish(mut self, grid: &Grid) -> Result<Panel> {
        let _p = profile::part(Part::BCAST, None);
        while !self.pending.is_empty() {
            self.receive(grid, self.pending.len() - 1)?;
        }
        if !self.done {
            self.factor_and_send(grid)?;
        }
        Ok(self.panel)
    }
}

impl Poll for Gather {
    fn poll(&mut self, grid: &Grid) -> Result<()> {
        let mut i = 0;
        while i < self.pending.len() {
            if ring::arrived(grid, grid.rank_of(0, self.pending[i].0 as i32), tags::PIECE)? {
                self.receive(grid, i)?;
            } else {
                i += 1;
            }
        }
        if self.pending.is_empty() && !self.done {
            self.factor_and_send(grid)?;
        }
        Ok(())
    }

    fn done(&self) -> bool {
        self.done
    }
}

impl StepLoop for RowDriver<'_, '_> {
    fn steps(&self) -> usize {
        self.nsteps
    }
    fn first(&mut self) -> Result<Panel> {
        self.first_panel()
    }
    fn advance(&mut self, k: usize, cur: &Panel) -> Result<Option<Panel>> {
        self.step(k, cur)
    }
    fn finish(&mut self, ipiv: &[i64]) -> Result<()> {
        self.swap_left_columns(ipiv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_panel_width_is_a_multiple_of_nb_and_at_least_nb() {
        assert_eq!(panel_width(128, 64), 128);
        assert_eq!(panel_width(128, 32), 128);
        assert_eq!(panel_width(128, 50), 100);
        assert_eq!(panel_width(128, 200), 200);
        assert_eq!(panel_width(0, 7), 7);
        assert_eq!(panel_width(8, 4), 8);
    }
}
