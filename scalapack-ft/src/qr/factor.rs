//! `pdgeqrf`: blocked Householder QR of a distributed matrix.

use super::reflectors::{factor_panel, Panel};
use crate::blas::Trans;
use crate::error::{agree_on_arguments, Error, Result};
use crate::matrix::DistMatrix;
use blacs_ft::Grid;

/// Checks the arguments every QR routine shares (local; agree afterwards).
pub(crate) fn check_square_blocks(routine: &str, a: &DistMatrix, position: u32) -> Result<()> {
    if a.mb() != a.nb() {
        return Err(Error::Argument {
            routine: routine.into(),
            position,
            entry: 5,
            name: "MB_A".into(),
            reason: format!("must equal NB_A (square blocks), got MB_A = {} and NB_A = {}", a.mb(), a.nb()),
        });
    }
    Ok(())
}

/// QR factorization `A = Q·R` of the distributed M×N matrix `a`
/// (ScaLAPACK `PDGEQRF` with IA = JA = 1).
///
/// * `grid` (global): the process grid `a` is distributed on.
/// * `a` (local input/output): on exit, R on and above the diagonal and the
///   Householder vectors V below it, exactly ScaLAPACK's layout.
/// * `tau` (global output): the min(M, N) Householder scalars, replicated on
///   every rank (ScaLAPACK keeps the local part only).
///
/// Blocked right-looking algorithm with one panel of look-ahead: the process
/// column that owns the next panel updates and factors it before the rest of
/// its trailing matrix, so the other columns never wait for a panel.
///
/// # Errors
/// Argument errors (MB ≠ NB) are agreed: every rank returns the same one.
/// A process failure returns [`Error::Grid`] with a process-failure error.
pub fn pdgeqrf(grid: &Grid, a: &mut DistMatrix, tau: &mut Vec<f64>) -> Result<()> {
    agree_on_arguments(grid, check_square_blocks("pdgeqrf", a, 2))?;
    let (m, n, nb) = (a.m(), a.n(), a.nb());
    let k = m.min(n);
    tau.clear();
    tau.resize(k, 0.0);
    if k == 0 {
        return Ok(());
    }
    let mycol = a.coords().1;
    let panels: Vec<(usize, usize)> = (0..k).step_by(nb).map(|j0| (j0, nb.min(k - j0))).collect();
    // The first panel is factored before the loop; each step then factors
    // the next one ahead of its own trailing update.
    let mut ahead: Option<Panel> = None;
    if a.col_owner(0) == mycol {
        ahead = Some(factor_panel(grid, a, panels[0].0, panels[0].1)?);
    }
    for (step, &(j0, jb)) in panels.iter().enumerate() {
        let owner = a.col_owner(j0);
        let lrows = a.local_rows() - a.local_rows_before(j0);
        let panel = Panel::broadcast(grid, ahead.take(), owner, j0, jb, lrows)?;
        tau[j0..j0 + jb].copy_from_slice(&panel.tau());
        let first = a.local_cols_before(j0 + jb);
        let all = first..a.local_cols();
        match panels.get(step + 1) {
            // (With one process column every step would take this branch
            // without overlapping anything: one update is cheaper there.)
            Some(&(n0, nw)) if a.col_owner(n0) == mycol && grid.npcol() > 1 => {
                // Look-ahead: update and factor the next panel first.
                let next = a.local_cols_before(n0)..a.local_cols_before(n0 + nw);
                panel.apply(grid, Trans::Yes, a, next.clone())?;
                ahead = Some(factor_panel(grid, a, n0, nw)?);
                panel.apply(grid, Trans::Yes, a, next.end..all.end)?;
                panel.apply(grid, Trans::Yes, a, all.start..next.start)?;
            }
            next => {
                panel.apply(grid, Trans::Yes, a, all)?;
                if let Some(&(n0, nw)) = next.filter(|&&(n0, _)| a.col_owner(n0) == mycol) {
                    ahead = Some(factor_panel(grid, a, n0, nw)?);
                }
            }
        }
    }
    Ok(())
}
