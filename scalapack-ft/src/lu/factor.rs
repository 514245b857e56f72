//! `pdgetrf`: right-looking blocked LU with partial pivoting and a
//! look-ahead of one panel.
//!
//! Step `k` (panel `k` = columns `j0..j0+jb`, already factored and known to
//! every process):
//! 1. apply the panel's interchanges to the columns outside the panel;
//! 2. U12 = L11⁻¹·A12 on the process row holding the diagonal block, then
//!    broadcast down each process column;
//! 3. A22 -= L21·U12 (local DGEMM).
//!
//! The process column that owns panel `k+1` does steps 1–3 for that
//! panel's columns first, factors panel `k+1` and sends it along its
//! process row (a ring, point to point), and only then updates the rest
//! of its columns. The other process columns update their columns in
//! chunks and pick the new panel up between chunks, so the panel
//! factorization overlaps with their trailing update instead of idling
//! them.

use super::panel::{factor_panel, Panel};
use super::swap::interchange;
use super::{arg_error, check_grid, entry, pack, tags};
use crate::blas::{self, Diag, Side, Trans, Uplo};
use crate::error::{agree_on_arguments, Error, Result};
use crate::matrix::DistMatrix;
use blacs_ft::{Grid, Scope};
use std::cell::RefCell;
use std::ops::Range;
use std::os::raw::c_int;
thread_local! { pub static PROF: RefCell<[f64;8]> = const { RefCell::new([0.0;8]) }; }
fn tic() -> std::time::Instant {
    std::time::Instant::now()
}
fn toc(i: usize, t: std::time::Instant) {
    PROF.with(|p| p.borrow_mut()[i] += t.elapsed().as_secs_f64());
}

/// Flops of one trailing-update chunk between two looks for the next
/// panel (about a millisecond of DGEMM).
const CHUNK_FLOPS: f64 = 4.0e7;

/// Collective: LU factorization with partial pivoting, `P·A = L·U`, of the
/// whole M×N distributed matrix `a` (ScaLAPACK `PDGETRF` with
/// `IA = JA = 1`).
///
/// * `grid`: the process grid `a` lives on;
/// * `a` (local input/output): on entry the matrix; on exit L (unit lower
///   trapezoidal, M×min(M,N), below the diagonal; its unit diagonal is not
///   stored) and U (upper trapezoidal, min(M,N)×N, on and above the
///   diagonal), exactly where ScaLAPACK puts them. `MB_A` must equal
///   `NB_A`.
/// * `ipiv` (global output): resized to `min(M, N)`; the same on every
///   process: `ipiv[i]` is the 0-based global row interchanged with row
///   `i` at step `i` (see the [module documentation](super)).
///
/// # Errors
/// * [`Error::Argument`], the same on every process (no process
///   communicates before the check is agreed): `MB_A ≠ NB_A` (position 6,
///   entry `NB_`, INFO = -606, as ScaLAPACK), `a` built for another grid
///   (position 6, entry `CTXT_`).
/// * [`Error::Singular`] `{ index }`: `U(index, index)` is exactly zero
///   (the first such pivot, 0-based; ScaLAPACK INFO = index + 1). The
///   factorization has been completed, and `a`/`ipiv` hold it, as in
///   ScaLAPACK. Every process returns the same index.
/// * [`Error::Grid`] for MPI failures.
///
/// Differs from ScaLAPACK in one corner: ScaLAPACK returns at once when
/// `M_A = 1` without looking at the element; here a 1×N matrix whose
/// `A(0,0)` is zero is reported as singular, as LAPACK does.
pub fn pdgetrf(grid: &Grid, a: &mut DistMatrix, ipiv: &mut Vec<i64>) -> Result<()> {
    agree_on_arguments(grid, check_args(grid, a))?;
    let mn = a.m().min(a.n());
    ipiv.clear();
    ipiv.resize(mn, 0);
    if mn == 0 {
        return Ok(());
    }
    let t = tic();
    let zero = if grid.size() == 1 { local_getrf(a, ipiv) } else { Driver::new(grid, a).run(ipiv)? };
    toc(7, t);
    if std::env::var_os("LU_PROF").is_some() {
        PROF.with(|p| { let p = p.borrow(); eprintln!("PROF rank {} swap {:.3} trsm {:.3} gemm(incl poll) {:.3} factor {:.3} send {:.3} finish {:.3} poll {:.3} total {:.3}", grid.rank(), p[0],p[1],p[2],p[3],p[4],p[5],p[6],p[7]); });
        PROF.with(|p| *p.borrow_mut() = [0.0; 8]);
    }
    match zero {
        Some(index) => Err(Error::Singular { routine: "pdgetrf".into(), index }),
        None => Ok(()),
    }
}

/// The local argument checks of [`pdgetrf`] (agreed by the caller).
fn check_args(grid: &Grid, a: &DistMatrix) -> Result<()> {
    check_grid(grid, a, "pdgetrf", 6, "A")?;
    if a.mb() != a.nb() {
        return Err(arg_error(
            "pdgetrf",
            6,
            entry::NB,
            "NB_A",
            format!("MB_A must equal NB_A (square blocks), got MB_A = {}, NB_A = {}", a.mb(), a.nb()),
        ));
    }
    Ok(())
}

/// One process: LAPACK DGETRF on the whole local matrix. Returns the first
/// zero pivot.
fn local_getrf(a: &mut DistMatrix, ipiv: &mut [i64]) -> Option<usize> {
    let (m, n, lld) = (a.m(), a.n(), a.lld());
    let mut ip: Vec<c_int> = vec![0; ipiv.len()];
    let info = blas::dgetrf(m, n, a.local_mut(), lld, &mut ip);
    for (d, &p) in ipiv.iter_mut().zip(&ip) {
        *d = p as i64 - 1;
    }
    (info > 0).then(|| info as usize - 1)
}

/// The distributed factorization's state.
struct Driver<'g, 'm> {
    grid: &'g Grid,
    a: &'m mut DistMatrix,
    nb: usize,
    mn: usize,
    nsteps: usize,
    q: usize,
    myrow: usize,
    mycol: usize,
    /// U12 block row of the current step (reused).
    ubuf: Vec<f64>,
}

impl<'g, 'm> Driver<'g, 'm> {
    fn new(grid: &'g Grid, a: &'m mut DistMatrix) -> Self {
        let nb = a.nb();
        let mn = a.m().min(a.n());
        let (myrow, mycol) = a.coords();
        let q = a.grid_shape().1;
        Driver { grid, a, nb, mn, nsteps: mn.div_ceil(nb), q, myrow, mycol, ubuf: Vec::new() }
    }

    /// First column and width of panel `k`.
    fn block(&self, k: usize) -> (usize, usize) {
        let j0 = k * self.nb;
        (j0, self.nb.min(self.mn - j0))
    }

    /// Runs every step; returns the first zero pivot.
    fn run(mut self, ipiv: &mut [i64]) -> Result<Option<usize>> {
        let mut zero = None;
        let mut cur = self.first_panel()?;
        for k in 0..self.nsteps {
            for (i, p) in cur.pivots().enumerate() {
                ipiv[cur.j0 + i] = p as i64;
            }
            zero = zero.or(cur.zero());
            match self.step(k, &cur)? {
                Some(next) => cur = next,
                None => break,
            }
        }
        Ok(zero)
    }

    /// Panel 0: factored by its process column, passed along the rows.
    fn first_panel(&mut self) -> Result<Panel> {
        let (j0, jb) = self.block(0);
        let owner = self.a.col_owner(j0);
        if self.mycol == owner {
            let p = factor_panel(self.grid, self.a, j0, jb)?;
            self.send_on(&p, owner)?;
            Ok(p)
        } else {
            self.incoming(j0, jb, owner).finish(self.grid)
        }
    }

    /// Step `k` with panel `cur`; returns panel `k+1` if there is one.
    fn step(&mut self, k: usize, cur: &Panel) -> Result<Option<Panel>> {
        let (j0, jb) = (cur.j0, cur.jb);
        let lcp = self.a.local_cols_before(j0);
        let ltc = self.a.local_cols_before(j0 + jb);
        let lc = self.a.local_cols();
        let swaps = cur.swaps();
        if k + 1 >= self.nsteps {
            interchange(self.grid, self.a, &swaps, &[0..lcp, ltc..lc])?;
            self.update(cur, ltc..lc, None)?;
            return Ok(None);
        }
        let (j1, jb1) = self.block(k + 1);
        let owner = self.a.col_owner(j1);
        if owner == self.mycol {
            // Look-ahead: the next panel's columns first, factor, send.
            let la = ltc..ltc + jb1;
            let t = tic();
            interchange(self.grid, self.a, &swaps, std::slice::from_ref(&la))?;
            toc(0, t);
            self.update(cur, la.clone(), None)?;
            let t = tic();
            let next = factor_panel(self.grid, self.a, j1, jb1)?;
            toc(3, t);
            let t = tic();
            self.send_on(&next, owner)?;
            toc(4, t);
            let t = tic();
            interchange(self.grid, self.a, &swaps, &[0..lcp, la.end..lc])?;
            toc(0, t);
            self.update(cur, la.end..lc, None)?;
            Ok(Some(next))
        } else {
            let t = tic();
            interchange(self.grid, self.a, &swaps, &[0..lcp, ltc..lc])?;
            toc(0, t);
            let mut inc = self.incoming(j1, jb1, owner);
            self.update(cur, ltc..lc, Some(&mut inc))?;
            let t = tic();
            let r = inc.finish(self.grid).map(Some);
            toc(5, t);
            r
        }
    }

    /// Where panel (`j0`, `jb`) owned by process column `owner` comes from
    /// and goes to on this process (a ring along the process row, starting
    /// at `owner`).
    fn incoming(&self, j0: usize, jb: usize, owner: usize) -> Incoming {
        let lw = self.a.local_rows() - self.a.local_rows_before(j0);
        let from = (self.mycol + self.q - 1) % self.q;
        let to = (self.mycol + 1) % self.q;
        Incoming {
            panel: Panel::new(j0, jb, lw),
            from: (self.myrow as i32, from as i32),
            forward: (to != owner).then_some((self.myrow as i32, to as i32)),
            done: false,
        }
    }

    /// Sends a panel this process column factored to the next process
    /// column of the ring.
    fn send_on(&self, p: &Panel, owner: usize) -> Result<()> {
        let to = (self.mycol + 1) % self.q;
        if to != owner {
            self.grid.send(p.message(), self.myrow as i32, to as i32, tags::PANEL)?;
        }
        Ok(())
    }

    /// Steps 2–3 for the local columns `cols` (the same range on every
    /// process of this process column): TRSM for the block row of U on the
    /// diagonal process row, broadcast it down the column, GEMM. With
    /// `inc`, the GEMM runs in chunks and looks for the next panel in
    /// between.
    fn update(&mut self, cur: &Panel, cols: Range<usize>, mut inc: Option<&mut Incoming>) -> Result<()> {
        if cols.is_empty() {
            return Ok(());
        }
        let (j0, jb, lw) = (cur.j0, cur.jb, cur.lw);
        let a = &mut *self.a;
        let pr = a.row_owner(j0);
        let lr0 = a.local_rows_before(j0);
        let lrb = a.local_rows_before(j0 + jb);
        let (lr, lld) = (a.local_rows(), a.lld());
        let ncols = cols.len();
        let u = &mut self.ubuf;
        let t = tic();
        if self.myrow == pr {
            let data = a.local_mut();
            let l11 = cur.l();
            blas::dtrsm(
                Side::Left,
                Uplo::Lower,
                Trans::No,
                Diag::Unit,
                jb,
                ncols,
                1.0,
                l11,
                lw,
                &mut data[lr0 + cols.start * lld..],
                lld,
            );
            pack(data, lld, lr0..lr0 + jb, cols.clone(), u);
        } else {
            u.clear();
            u.resize(jb * ncols, 0.0);
        }
        if a.grid_shape().0 > 1 {
            self.grid.broadcast(Scope::Column, u, pr as i32)?;
        }
        toc(1, t);
        let t = tic();
        let mrows = lr - lrb;
        if mrows == 0 {
            return Ok(());
        }
        let l21 = &cur.l()[lrb - lr0..];
        let width = match inc {
            Some(_) => ((CHUNK_FLOPS / (2.0 * (mrows * jb) as f64)) as usize).max(self.nb.max(32)).min(ncols),
            None => ncols,
        };
        let data = a.local_mut();
        let mut c = 0;
        while c < ncols {
            let w = width.min(ncols - c);
            blas::dgemm(
                Trans::No,
                Trans::No,
                mrows,
                w,
                jb,
                -1.0,
                l21,
                lw,
                &u[c * jb..],
                jb,
                1.0,
                &mut data[lrb + (cols.start + c) * lld..],
                lld,
            );
            c += w;
            if let Some(inc) = inc.as_deref_mut() {
                let t = tic();
                inc.poll(self.grid)?;
                toc(6, t);
            }
        }
        toc(2, t);
        Ok(())
    }
}

/// A panel on its way to this process: received between update chunks
/// (or at the end), then forwarded along the ring.
struct Incoming {
    panel: Panel,
    from: (i32, i32),
    forward: Option<(i32, i32)>,
    done: bool,
}

impl Incoming {
    /// Receives the panel if it has arrived.
    fn poll(&mut self, grid: &Grid) -> Result<()> {
        if self.done {
            return Ok(());
        }
        let src = grid.rank_of(self.from.0, self.from.1);
        if grid.comm(Scope::All).iprobe::<f64>(Some(src), tags::PANEL)?.is_some() {
            self.receive(grid)?;
        }
        Ok(())
    }

    fn receive(&mut self, grid: &Grid) -> Result<()> {
        let want = self.panel.message().len();
        let got = grid.recv(self.panel.message_mut(), self.from.0, self.from.1, tags::PANEL)?;
        if got != want {
            return Err(Error::Grid(blacs_ft::Error::invalid(
                "panel",
                format!("LU panel message has {got} values, expected {want}"),
            )));
        }
        self.panel.validate()?;
        if let Some((r, c)) = self.forward {
            grid.send(self.panel.message(), r, c, tags::PANEL)?;
        }
        self.done = true;
        Ok(())
    }

    /// The panel (waits for it if it has not arrived yet).
    fn finish(mut self, grid: &Grid) -> Result<Panel> {
        if !self.done {
            self.receive(grid)?;
        }
        Ok(self.panel)
    }
}
