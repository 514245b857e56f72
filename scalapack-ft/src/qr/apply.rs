//! `pdormqr`: applying Q or Qᵀ from a QR factorization, one panel of
//! reflectors at a time. The per-panel pieces ([`panels_in_order`],
//! [`share_panel`], [`reduced_w`], then [`apply_reduced_w`]) are shared
//! with the fault-tolerant `pdormqr_ft`, which runs them as the phases
//! and the commit of its steps.

use super::reflectors::{stored_panel, Panel};
use crate::args::pdormqr::{A, DESCA, DESCC, K};
use crate::args::{arg_error, check_square_blocks, entry};
use crate::blas::Trans;
use crate::error::{agree_on_arguments, check_not_lost, Result};
use crate::matrix::DistMatrix;
use crate::row_panel::broadcast_panel;
use blacs_ft::Grid;
use std::ops::Range;

/// `C = op(Q)·C` with Q = H(0)·H(1)···H(k−1) from [`super::pdgeqrf`]
/// (ScaLAPACK `PDORMQR` with SIDE = 'L').
///
/// * `trans` (global): [`Trans::No`] applies Q, [`Trans::Yes`] applies Qᵀ.
/// * `a`, `tau` (global): the factorization (V below the diagonal of `a`).
///   Read only: `a` is as it was on exit.
/// * `k` (global): number of reflectors to apply, ≤ min(M, N) of `a`.
/// * `c` (local input/output): M×NRHS with the same row distribution as `a`
///   (same M, MB and RSRC); any column distribution.
///
/// # Errors
/// Agreed argument errors at PDORMQR's positions, and
/// [`crate::Error::InputLost`] on every process when `a` holds factors a
/// replacement's process lost (see [`DistMatrix::is_lost`]): nothing is
/// computed.
pub fn pdormqr(grid: &Grid, trans: Trans, a: &DistMatrix, tau: &[f64], k: usize, c: &mut DistMatrix) -> Result<()> {
    const ROUTINE: &str = "pdormqr";
    let check = check_square_blocks(ROUTINE, DESCA, "A", a.desc()).and_then(|()| {
        // (Reflectors a replacement lost with its process: never applied.)
        check_not_lost(grid, ROUTINE, A, "A", a)?;
        if k > a.m().min(a.n()) || k > tau.len() {
            return Err(arg_error(
                ROUTINE,
                K,
                0,
                "K",
                format!("must be ≤ min(M, N) = {} and ≤ len(tau) = {}", a.m().min(a.n()), tau.len()),
            ));
        }
        check_rows_of_a(ROUTINE, DESCC, "C", a, c)
    });
    agree_on_arguments(grid, check)?;
    let whole = 0..c.local_cols();
    let all = std::slice::from_ref(&whole);
    for (j0, jb) in panels_in_order(k, a.nb(), trans) {
        let panel = share_panel(grid, a, tau, j0, jb)?;
        let mut w = reduced_w(grid, &panel, c, all)?;
        apply_reduced_w(&panel, trans, c, all, &mut w);
    }
    Ok(())
}

/// Local: the argument error (argument `position`, matrix `name`) of a
/// `c` that has not `a`'s row distribution (M, MB and RSRC), which the
/// left-side application of `a`'s reflectors needs.
pub(crate) fn check_rows_of_a(routine: &str, position: u32, name: &str, a: &DistMatrix, c: &DistMatrix) -> Result<()> {
    let differs =
        [(entry::M, c.m() != a.m()), (entry::MB, c.mb() != a.mb()), (entry::RSRC, c.desc().rsrc() != a.desc().rsrc())];
    match differs.iter().find(|(_, d)| *d) {
        None => Ok(()),
        Some(&(what, _)) => Err(arg_error(
            routine,
            position,
            what,
            name,
            format!(
                "must have A's row distribution (M = {}, MB = {}, RSRC = {}), got M = {}, MB = {}, RSRC = {}",
                a.m(),
                a.mb(),
                a.desc().rsrc(),
                c.m(),
                c.mb(),
                c.desc().rsrc()
            ),
        )),
    }
}

/// The panels `(j0, jb)` of the first `k` reflectors (block size `nb`),
/// in the order op(Q) applies them from the left: first to last for Qᵀ,
/// last to first for Q = H(0)(H(1)(···H(k−1))).
pub(crate) fn panels_in_order(k: usize, nb: usize, trans: Trans) -> Vec<(usize, usize)> {
    let mut panels: Vec<(usize, usize)> = (0..k).step_by(nb).map(|j0| (j0, nb.min(k - j0))).collect();
    if trans == Trans::No {
        panels.reverse();
    }
    panels
}

/// Collective over the grid: the reflectors of panel `j0..j0+jb` of the
/// factors in `a` (V below its diagonal, `tau`) on every process — V and
/// T formed by the process column holding the panel and broadcast along
/// the process rows. `a` is only read.
pub(crate) fn share_panel(grid: &Grid, a: &DistMatrix, tau: &[f64], j0: usize, jb: usize) -> Result<Panel> {
    let owner = a.col_owner(j0);
    let mine = if owner == a.coords().1 { Some(stored_panel(grid, a, tau, j0, jb)?) } else { None };
    let lrows = a.local_rows() - a.local_rows_before(j0);
    broadcast_panel(grid, (mine, None), owner, (j0, jb, lrows))
}

/// Collective over the process column: `W = Vᵀ·C(j0.., cols)` of
/// `panel`, summed over the process column, for the local columns `cols`
/// of `c` (ascending ranges, the same on every process of a process
/// column), packed. `c` is only read; the update itself is
/// [`apply_reduced_w`] (local).
pub(crate) fn reduced_w(grid: &Grid, panel: &Panel, c: &DistMatrix, cols: &[Range<usize>]) -> Result<Vec<f64>> {
    let mut w = match cols {
        [one] => panel.local_w(c, one.clone()),
        _ => cols.iter().flat_map(|r| panel.local_w(c, r.clone())).collect(),
    };
    panel.reduce_w(grid, &mut w)?;
    Ok(w)
}

/// Local: `C(j0.., cols) −= V·op(T)·W` with the W of [`reduced_w`] for
/// the same `cols` ([`Panel::apply_w`] on each range; `w` is
/// overwritten).
pub(crate) fn apply_reduced_w(panel: &Panel, trans: Trans, c: &mut DistMatrix, cols: &[Range<usize>], w: &mut [f64]) {
    let mut at = 0;
    for r in cols {
        let n = r.len();
        panel.apply_w(trans, c, r.clone(), &mut w[at * panel.jb..(at + n) * panel.jb]);
        at += n;
    }
}
