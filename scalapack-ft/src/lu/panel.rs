//! Panel factorization: the `jb` columns `j0..j0+jb` of A, rows `j0..M`,
//! on the process column that owns them.
//!
//! * One process row (P = 1): LAPACK `DGETRF` on the local panel (all
//!   rows are local).
//! * P > 1: column by column, with one all-gather along the process column
//!   per column: each process offers its local pivot candidate *with its
//!   whole panel row*, and the owner of the diagonal row adds that row, so
//!   every process learns the pivot row and the row it replaces from the
//!   same message and the interchange needs no further communication. The
//!   rank-1 updates stay inside inner blocks of [`INNER`] columns; the rest
//!   of the panel gets one TRSM (on the diagonal process row) + broadcast +
//!   GEMM per inner block.

use crate::blas::{self, Diag, Side, Trans, Uplo};
use crate::error::{Error, Result};
use crate::matrix::DistMatrix;
use crate::row_panel::RowPanel;
use blacs_ft::{Grid, Scope};
use recovery::profile::{self, Part};
use std::os::raw::c_int;

/// Inner block width of the distributed panel factorization.
const INNER: usize = 16;

/// A factored panel in the form it travels along a process row:
/// `[jb, zero + 1 (0: none), ipiv[0..jb], L]`, where L is this process
/// row's local rows `j0..M` of the panel (`lw × jb`, column-major,
/// leading dimension `lw`): L21 below the diagonal block, and on the
/// diagonal process row the unit-lower L11 (with U11 above it).
#[derive(Clone, Debug)]
pub(crate) struct Panel {
    /// Global index of the panel's first column (= first row).
    pub j0: usize,
    /// Panel width.
    pub jb: usize,
    /// Local rows of this process row from global row `j0` on.
    pub lw: usize,
    buf: Vec<f64>,
}

/// The panel's own buffer is its message (received panels: see
/// [`Panel::validate`]).
impl RowPanel for Panel {
    fn row_message(&self) -> Vec<f64> {
        self.buf.clone()
    }

    fn row_message_len(jb: usize, lw: usize) -> usize {
        2 + jb + lw * jb
    }

    fn from_row_message(j0: usize, jb: usize, lw: usize, buf: Vec<f64>) -> Panel {
        Panel { j0, jb, lw, buf }
    }
}

impl Panel {
    /// An empty panel of the right size (to factor into or receive into).
    pub fn new(j0: usize, jb: usize, lw: usize) -> Panel {
        let mut buf = vec![0.0; Panel::row_message_len(jb, lw)];
        buf[0] = jb as f64;
        Panel { j0, jb, lw, buf }
    }

    /// The whole message.
    pub fn message(&self) -> &[f64] {
        &self.buf
    }

    /// The whole message, to receive into.
    pub fn message_mut(&mut self) -> &mut [f64] {
        &mut self.buf
    }

    /// The local panel rows (`lw × jb`, leading dimension `lw`).
    pub fn l(&self) -> &[f64] {
        &self.buf[2 + self.jb..]
    }

    /// U's block row from the interchanged rows: `b := L11⁻¹·b` for the
    /// `jb × ncols` block `b` (leading dimension `ldb`), L11 the panel's
    /// unit lower triangle (on the diagonal process row).
    pub fn solve_block_row(&self, ncols: usize, b: &mut [f64], ldb: usize) {
        blas::dtrsm(Side::Left, Uplo::Lower, Trans::No, Diag::Unit, self.jb, ncols, 1.0, self.l(), self.lw, b, ldb);
    }

    /// The local panel rows, to fill in.
    pub fn l_mut(&mut self) -> &mut [f64] {
        let off = 2 + self.jb;
        &mut self.buf[off..]
    }

    /// Global 0-based pivots of the panel's rows.
    pub fn pivots(&self) -> impl Iterator<Item = usize> + '_ {
        self.buf[2..2 + self.jb].iter().map(|&p| p as usize)
    }

    /// The interchanges `(row, pivot)` of the panel, in order.
    pub fn swaps(&self) -> Vec<(usize, usize)> {
        self.pivots().enumerate().map(|(i, p)| (self.j0 + i, p)).collect()
    }

    /// First exactly-zero pivot of the panel (global index).
    pub fn zero(&self) -> Option<usize> {
        let z = self.buf[1];
        (z > 0.0).then(|| z as usize - 1)
    }

    /// Records the pivots and the first zero pivot.
    pub fn set_header(&mut self, piv: &[usize], zero: Option<usize>) {
        self.buf[1] = zero.map_or(0.0, |z| (z + 1) as f64);
        for (d, &p) in self.buf[2..2 + self.jb].iter_mut().zip(piv) {
            *d = p as f64;
        }
    }

    /// Checks a received message against what this process expected
    /// (`m`: the matrix's global row count).
    pub fn validate(&self, m: usize) -> Result<()> {
        let bad = self.buf[0] != self.jb as f64
            || self.pivots().any(|p| p < self.j0 || p >= m)
            || self.buf[2..2 + self.jb].iter().any(|p| !p.is_finite() || p.fract() != 0.0);
        if bad {
            return Err(Error::Grid(blacs_ft::Error::invalid(
                "panel",
                format!("malformed LU panel message for columns {}..{}", self.j0, self.j0 + self.jb),
            )));
        }
        Ok(())
    }
}

/// Collective over the process column owning global column `j0`
/// (only those processes call it): factors the panel of columns
/// `j0..j0+jb`, rows `j0..M` of `a` in place (interchanges applied inside
/// the panel only) and returns it packed for sending.
pub(crate) fn factor_panel(grid: &Grid, a: &mut DistMatrix, j0: usize, jb: usize) -> Result<Panel> {
    let _p = profile::part(Part::PANEL, None);
    let lr0 = a.local_rows_before(j0);
    let lw = a.local_rows() - lr0;
    let lc0 = a.local_cols_before(j0);
    let lld = a.lld();
    let mut panel = Panel::new(j0, jb, lw);
    let (piv, zero) = if a.grid_shape().0 == 1 {
        let mut ip: Vec<c_int> = vec![0; jb];
        let info = blas::dgetrf(lw, jb, &mut a.local_mut()[lr0 + lc0 * lld..], lld, &mut ip);
        let piv: Vec<usize> = ip.iter().map(|&p| j0 + (p.max(1) as usize) - 1).collect();
        let zero = (info > 0).then(|| j0 + info as usize - 1);
        let mut l = Vec::new();
        crate::matrix::pack(a.local(), lld, lr0..lr0 + lw, lc0..lc0 + jb, &mut l);
        panel.l_mut().copy_from_slice(&l);
        (piv, zero)
    } else {
        let mut l = Vec::new();
        crate::matrix::pack(a.local(), lld, lr0..lr0 + lw, lc0..lc0 + jb, &mut l);
        panel.l_mut().copy_from_slice(&l);
        let rows = RowMap::new(a, j0, lr0, lw);
        let out = factor_distributed(grid, &rows, j0, jb, panel.l_mut())?;
        crate::matrix::unpack(panel.l(), a.local_mut(), lld, lr0..lr0 + lw, lc0..lc0 + jb);
        out
    };
    panel.set_header(&piv, zero);
    Ok(panel)
}

/// One process row: factors a panel whose rows `j0..M` are already packed
/// in `panel`, recording its pivots and first zero pivot. Local: no
/// communication, so it can run while a collective is in flight; it calls
/// `progress` between its inner blocks of [`INNER`] columns (LAPACK's
/// right-looking blocked DGETRF: `DGETRF` on the inner panel, its
/// interchanges on the other columns, TRSM, GEMM).
pub(crate) fn factor_packed(panel: &mut Panel, progress: &mut dyn FnMut()) {
    let (j0, jb, lw) = (panel.j0, panel.jb, panel.lw);
    let ld = lw.max(1);
    let mut piv = Vec::with_capacity(jb);
    let mut zero = None;
    let l = panel.l_mut();
    // (One process row: the panel has at least as many rows as columns.)
    debug_assert!(lw >= jb);
    let mut c0 = 0;
    while c0 < jb {
        let w = INNER.min(jb - c0);
        let mut ip: Vec<c_int> = vec![0; w];
        let info = blas::dgetrf(lw - c0, w, &mut l[c0 + c0 * ld..], ld, &mut ip);
        if info > 0 && zero.is_none() {
            zero = Some(j0 + c0 + info as usize - 1);
        }
        // The inner panel's interchanges on the columns left and right of it.
        for (i, &p) in ip.iter().enumerate() {
            let (r, p) = (c0 + i, c0 + (p.max(1) as usize) - 1);
            piv.push(j0 + p);
            if r != p {
                for c in (0..c0).chain(c0 + w..jb) {
                    l.swap(r + c * ld, p + c * ld);
                }
            }
        }
        let right = jb - c0 - w;
        if right > 0 {
            let (head, tail) = l.split_at_mut((c0 + w) * ld);
            let l11 = &head[c0 + c0 * ld..];
            blas::dtrsm(Side::Left, Uplo::Lower, Trans::No, Diag::Unit, w, right, 1.0, l11, ld, &mut tail[c0..], ld);
            if lw > c0 + w {
                // U12's rows, packed: they share columns with A22 below them.
                let mut u12 = Vec::new();
                crate::matrix::pack(tail, ld, c0..c0 + w, 0..right, &mut u12);
                let l21 = &head[c0 + w + c0 * ld..];
                let a22 = &mut tail[c0 + w..];
                blas::dgemm(Trans::No, Trans::No, lw - c0 - w, right, w, -1.0, l21, ld, &u12, w, 1.0, a22, ld);
            }
        }
        progress();
        c0 += w;
    }
    panel.set_header(&piv, zero);
}

/// Which global rows the local panel rows are.
struct RowMap {
    /// Global row of each local panel row (increasing).
    global: Vec<usize>,
    /// This process row.
    me: usize,
    /// Process row owning the diagonal block (global rows `j0..j0+jb`).
    pr: usize,
}

impl RowMap {
    fn new(a: &DistMatrix, j0: usize, lr0: usize, lw: usize) -> RowMap {
        let global = (0..lw).map(|i| a.global_row(lr0 + i)).collect();
        RowMap { global, me: a.coords().0, pr: a.row_owner(j0) }
    }

    /// First local panel row whose global index is ≥ `g`.
    fn first_at_or_after(&self, g: usize) -> usize {
        self.global.partition_point(|&x| x < g)
    }

    /// Local panel row of global row `g`, if this process holds it.
    fn local(&self, g: usize) -> Option<usize> {
        let i = self.first_at_or_after(g);
        (i < self.global.len() && self.global[i] == g).then_some(i)
    }
}

/// First index of the largest |x| (NaN counts as the largest).
pub(crate) fn local_amax(x: &[f64]) -> Option<(usize, f64)> {
    let key = |v: f64| if v.is_nan() { f64::INFINITY } else { v.abs() };
    let mut best: Option<(usize, f64)> = None;
    for (i, &v) in x.iter().enumerate() {
        match best {
            Some((_, b)) if key(v) <= key(b) => {}
            _ => best = Some((i, v)),
        }
    }
    best
}

/// The winning offer among all-gathered `(value, global index, …)`
/// records of `stride` values: largest |value| (NaN largest), lowest
/// index on ties; records with a negative index are empty offers.
pub(crate) fn pick_pivot(all: &[f64], stride: usize) -> Option<usize> {
    let key = |v: f64| if v.is_nan() { f64::INFINITY } else { v.abs() };
    let mut best: Option<usize> = None;
    for (r, rec) in all.chunks_exact(stride).enumerate() {
        if rec[1] < 0.0 {
            continue;
        }
        best = match best {
            None => Some(r),
            Some(b) => {
                let cur = &all[b * stride..];
                let (kv, kb) = (key(rec[0]), key(cur[0]));
                if kv > kb || (kv == kb && rec[1] < cur[1]) {
                    Some(r)
                } else {
                    Some(b)
                }
            }
        };
    }
    best
}

/// `x /= pivot` as LAPACK's DGETF2 does it (multiply by the reciprocal
/// unless that would overflow).
fn scale_by_pivot(x: &mut [f64], pivot: f64) {
    if pivot.abs() >= f64::MIN_POSITIVE {
        let r = 1.0 / pivot;
        x.iter_mut().for_each(|v| *v *= r);
    } else {
        x.iter_mut().for_each(|v| *v /= pivot);
    }
}

/// The P > 1 panel factorization on the local panel rows `w`
/// (`lw × jb`, leading dimension `lw`). Returns the pivots and the first
/// zero pivot.
fn factor_distributed(
    grid: &Grid,
    rows: &RowMap,
    j0: usize,
    jb: usize,
    w: &mut [f64],
) -> Result<(Vec<usize>, Option<usize>)> {
    let lw = rows.global.len();
    // The diagonal block (global rows j0..j0+jb) is one row block (MB =
    // NB): on its owner it is local panel rows 0..jb.
    let pr = rows.pr;
    let owns_diag = rows.me == pr;
    let stride = 2 + 2 * jb;
    let mut piv = Vec::with_capacity(jb);
    let mut zero = None;
    let mut offer = vec![0.0; stride];
    let mut jj = 0;
    while jj < jb {
        let je = (jj + INNER).min(jb);
        for j in jj..je {
            let g = j0 + j;
            let s = rows.first_at_or_after(g);
            offer.iter_mut().for_each(|v| *v = 0.0);
            offer[1] = -1.0;
            if let Some((i, v)) = local_amax(&w[j * lw + s..(j + 1) * lw]) {
                offer[0] = v;
                offer[1] = rows.global[s + i] as f64;
                for c in 0..jb {
                    offer[2 + c] = w[s + i + c * lw];
                }
            }
            if owns_diag {
                for c in 0..jb {
                    offer[2 + jb + c] = w[j + c * lw];
                }
            }
            let all = grid.allgather(Scope::Column, &offer)?;
            let win = pick_pivot(&all, stride).ok_or_else(|| {
                Error::Grid(blacs_ft::Error::invalid("panel", format!("no pivot candidate for column {g}")))
            })?;
            let rec = &all[win * stride..(win + 1) * stride];
            let (pv, pg) = (rec[0], rec[1] as usize);
            let prow = &rec[2..2 + jb];
            piv.push(pg);
            if pv != 0.0 {
                if pg != g {
                    let drow = &all[pr * stride + 2 + jb..(pr + 1) * stride];
                    if owns_diag {
                        for c in 0..jb {
                            w[j + c * lw] = prow[c];
                        }
                    }
                    if let Some(li) = rows.local(pg) {
                        for c in 0..jb {
                            w[li + c * lw] = drow[c];
                        }
                    }
                }
                let s1 = rows.first_at_or_after(g + 1);
                scale_by_pivot(&mut w[j * lw + s1..(j + 1) * lw], pv);
            } else if zero.is_none() {
                zero = Some(g);
            }
            // Rank-1 update of the rest of the inner block.
            let s1 = rows.first_at_or_after(g + 1);
            if j + 1 < je && s1 < lw {
                let (left, right) = w.split_at_mut((j + 1) * lw);
                blas::dger(lw - s1, je - j - 1, -1.0, &left[j * lw + s1..], &prow[j + 1..je], &mut right[s1..], lw);
            }
        }
        if je < jb {
            // U12 of the inner block on the diagonal process row, then the
            // GEMM update of the panel's remaining columns.
            let (h, wd) = (je - jj, jb - je);
            let mut u = vec![0.0; h * wd];
            if owns_diag {
                let (left, right) = w.split_at_mut(je * lw);
                blas::dtrsm(
                    Side::Left,
                    Uplo::Lower,
                    Trans::No,
                    Diag::Unit,
                    h,
                    wd,
                    1.0,
                    &left[jj + jj * lw..],
                    lw,
                    &mut right[jj..],
                    lw,
                );
                for c in 0..wd {
                    u[c * h..(c + 1) * h].copy_from_slice(&right[jj + c * lw..je + c * lw]);
                }
            }
            grid.broadcast(Scope::Column, &mut u, pr as i32)?;
            let s2 = rows.first_at_or_after(j0 + je);
            if s2 < lw {
                let (left, right) = w.split_at_mut(je * lw);
                blas::dgemm(
                    Trans::No,
                    Trans::No,
                    lw - s2,
                    wd,
                    h,
                    -1.0,
                    &left[s2 + jj * lw..],
                    lw,
                    &u,
                    h,
                    1.0,
                    &mut right[s2..],
                    lw,
                );
            }
        }
        jj = je;
    }
    Ok((piv, zero))
}

/// The step loop shared by the LU drivers: factor the first panel, then
/// each step records the panel's pivots and produces the next panel, and
/// the row swaps of later steps reach the left columns at the end.
pub(super) trait StepLoop: Sized {
    /// Number of panels.
    fn steps(&self) -> usize;
    /// Panel 0, factored and handed to every process that needs it.
    fn first(&mut self) -> Result<Panel>;
    /// Step `k` with panel `cur`; returns panel `k + 1` (if any).
    fn advance(&mut self, k: usize, cur: &Panel) -> Result<Option<Panel>>;
    /// Applies the later steps' swaps to the finished left columns.
    fn finish(&mut self, ipiv: &[i64]) -> Result<()>;

    /// Runs every step; returns the first zero pivot.
    fn run(mut self, ipiv: &mut [i64]) -> Result<Option<usize>> {
        let mut zero = None;
        let mut cur = self.first()?;
        for k in 0..self.steps() {
            for (i, p) in cur.pivots().enumerate() {
                ipiv[cur.j0 + i] = p as i64;
            }
            zero = zero.or(cur.zero());
            match self.advance(k, &cur)? {
                Some(next) => cur = next,
                None => break,
            }
        }
        self.finish(ipiv)?;
        Ok(zero)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_amax_takes_the_first_largest_magnitude() {
        assert_eq!(local_amax(&[]), None);
        assert_eq!(local_amax(&[1.0, -3.0, 3.0, 2.0]), Some((1, -3.0)));
        assert_eq!(local_amax(&[0.0, 0.0]), Some((0, 0.0)));
        let (i, v) = local_amax(&[1.0, f64::NAN, 5.0]).unwrap();
        assert_eq!(i, 1);
        assert!(v.is_nan());
    }

    #[test]
    fn pick_pivot_prefers_magnitude_then_lowest_index_and_skips_empty_offers() {
        // records of stride 3: value, index, payload
        let all = [2.0, 7.0, 0.0, -2.0, 5.0, 0.0, 0.0, -1.0, 0.0, 1.0, 1.0, 0.0];
        assert_eq!(pick_pivot(&all, 3), Some(1));
        let all = [0.0, -1.0, 9.0, 0.0, 4.0, 9.0];
        assert_eq!(pick_pivot(&all, 3), Some(1));
        assert_eq!(pick_pivot(&[0.0, -1.0, 0.0], 3), None);
        let all = [1e300, 3.0, 0.0, f64::NAN, 8.0, 0.0];
        assert_eq!(pick_pivot(&all, 3), Some(1));
    }

    #[test]
    fn panel_header_round_trips() {
        let mut p = Panel::new(8, 3, 5);
        p.set_header(&[9, 8, 12], Some(9));
        assert_eq!(p.pivots().collect::<Vec<_>>(), vec![9, 8, 12]);
        assert_eq!(p.swaps(), vec![(8, 9), (9, 8), (10, 12)]);
        assert_eq!(p.zero(), Some(9));
        assert_eq!(p.l().len(), 15);
        assert!(p.validate(13).is_ok());
        assert!(p.validate(12).is_err());
        p.set_header(&[9, 7, 12], None);
        assert_eq!(p.zero(), None);
        assert!(p.validate(13).is_err());
    }

    #[test]
    fn scaling_uses_the_reciprocal_unless_it_overflows() {
        let mut x = [2.0, 4.0];
        scale_by_pivot(&mut x, 2.0);
        assert_eq!(x, [1.0, 2.0]);
        let tiny = f64::MIN_POSITIVE / 4.0;
        let mut y = [tiny];
        scale_by_pivot(&mut y, tiny);
        assert_eq!(y, [1.0]);
    }
}
