//! Panels travelling along a process row, point to point, while the
//! receivers keep computing: a ring from the panel's owner, and a trailing
//! update that looks for the panel between chunks.

use super::panel::Panel;
use super::tags;
use crate::blas::{self, Trans};
use crate::error::Result;
use blacs_ft::{Grid, Scope};
use recovery::profile::{self, Part};
use std::ops::Range;

/// Flops of one trailing-update chunk between two looks for an expected
/// panel (about a millisecond of DGEMM).
const CHUNK_FLOPS: f64 = 4.0e7;

/// Something a process waits for while it computes: checked between the
/// chunks of [`update`].
pub(super) trait Poll {
    /// Makes progress without blocking (receives what has arrived).
    fn poll(&mut self, grid: &Grid) -> Result<()>;
    /// Whether nothing is left to wait for.
    fn done(&self) -> bool;
}

/// Whether a message from grid rank `src` with `tag` is waiting.
pub(super) fn arrived(grid: &Grid, src: i32, tag: i32) -> Result<bool> {
    // Open MPI's iprobe looks first and progresses afterwards: a message
    // that this progress brings in is only seen by the next call.
    let comm = grid.comm(Scope::All);
    Ok(comm.iprobe::<f64>(Some(src), tag)?.is_some() || comm.iprobe::<f64>(Some(src), tag)?.is_some())
}

/// A panel on its way to this process: received between update chunks
/// (or at the end), then forwarded along the ring.
pub(super) struct Incoming {
    panel: Panel,
    /// Global rows of the matrix (to check the pivots).
    m: usize,
    from: (i32, i32),
    forward: Option<(i32, i32)>,
    done: bool,
}

impl Incoming {
    /// The panel of global columns `j0..j0+jb` (`lw` local rows, of a
    /// matrix with `m` global rows) that the process column `owner` of this
    /// process row sends round the ring `owner → owner+1 → …`.
    pub fn new(grid: &Grid, j0: usize, jb: usize, lw: usize, m: usize, owner: usize) -> Incoming {
        let q = grid.npcol() as usize;
        let (myrow, mycol) = (grid.myrow(), grid.mycol() as usize);
        let from = (mycol + q - 1) % q;
        let to = (mycol + 1) % q;
        Incoming {
            panel: Panel::new(j0, jb, lw),
            m,
            from: (myrow, from as i32),
            forward: (to != owner).then_some((myrow, to as i32)),
            done: false,
        }
    }

    fn receive(&mut self, grid: &Grid) -> Result<()> {
        grid.recv_exact(self.panel.message_mut(), self.from.0, self.from.1, tags::PANEL)?;
        self.panel.validate(self.m)?;
        if let Some((r, c)) = self.forward {
            grid.send(self.panel.message(), r, c, tags::PANEL)?;
        }
        self.done = true;
        Ok(())
    }

    /// The panel (waits for it if it has not arrived yet).
    pub fn finish(mut self, grid: &Grid) -> Result<Panel> {
        let _p = profile::part(Part::BCAST, None);
        if !self.done {
            self.receive(grid)?;
        }
        Ok(self.panel)
    }
}

impl Poll for Incoming {
    /// Receives the panel if it has arrived.
    fn poll(&mut self, grid: &Grid) -> Result<()> {
        if !self.done && arrived(grid, grid.rank_of(self.from.0, self.from.1), tags::PANEL)? {
            self.receive(grid)?;
        }
        Ok(())
    }

    fn done(&self) -> bool {
        self.done
    }
}

/// Sends a panel that this process column (`owner`) produced to the next
/// process column of the ring.
pub(super) fn send_on(grid: &Grid, p: &Panel, owner: usize) -> Result<()> {
    let _p = profile::part(Part::BCAST, None);
    let q = grid.npcol() as usize;
    let to = (grid.mycol() as usize + 1) % q;
    if to != owner {
        grid.send(p.message(), grid.myrow(), to as i32, tags::PANEL)?;
    }
    Ok(())
}

/// The trailing update `C -= L21·U12` of the local columns `cols`:
/// `C` is rows `r0..r0+mrows` of `data` (leading dimension `lld`), `L21`
/// is `mrows × k` (leading dimension `ldl`), `U12` is `k × cols.len()`
/// (leading dimension `k`). While `inc` is not done the GEMM runs in small
/// chunks with a poll after each; the rest is one call.
pub(super) fn update(
    grid: &Grid,
    data: &mut [f64],
    lld: usize,
    r0: usize,
    mrows: usize,
    cols: Range<usize>,
    l21: &[f64],
    ldl: usize,
    u: &[f64],
    k: usize,
    mut inc: Option<&mut dyn Poll>,
) -> Result<()> {
    let ncols = cols.len();
    if mrows == 0 || ncols == 0 || k == 0 {
        if let Some(inc) = inc {
            inc.poll(grid)?;
        }
        return Ok(());
    }
    let small = ((CHUNK_FLOPS / (2.0 * (mrows * k) as f64)) as usize).max(32);
    let mut c = 0;
    while c < ncols {
        let waiting = inc.as_ref().is_some_and(|i| !i.done());
        let w = if waiting { small.min(ncols - c) } else { ncols - c };
        let cc = &mut data[r0 + (cols.start + c) * lld..];
        blas::dgemm(Trans::No, Trans::No, mrows, w, k, -1.0, l21, ldl, &u[c * k..], k, 1.0, cc, lld);
        c += w;
        if let Some(inc) = inc.as_deref_mut() {
            inc.poll(grid)?;
        }
    }
    Ok(())
}
