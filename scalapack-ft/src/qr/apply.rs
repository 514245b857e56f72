//! `pdormqr`: applying Q or Qᵀ from a QR factorization.

use super::reflectors::{stored_panel, Panel};
use crate::args::pdormqr::{A, DESCA, DESCC, K};
use crate::args::{arg_error, check_square_blocks, entry};
use crate::blas::Trans;
use crate::error::{agree_on_arguments, check_not_lost, Result};
use crate::matrix::DistMatrix;
use crate::row_panel::broadcast_panel;
use blacs_ft::Grid;

/// `C = op(Q)·C` with Q = H(0)·H(1)···H(k−1) from [`super::pdgeqrf`]
/// (ScaLAPACK `PDORMQR` with SIDE = 'L').
///
/// * `trans` (global): [`Trans::No`] applies Q, [`Trans::Yes`] applies Qᵀ.
/// * `a`, `tau` (global): the factorization (V below the diagonal of `a`).
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
        let differs = [
            (entry::M, c.m() != a.m()),
            (entry::MB, c.mb() != a.mb()),
            (entry::RSRC, c.desc().rsrc() != a.desc().rsrc()),
        ];
        if let Some(&(what, _)) = differs.iter().find(|(_, d)| *d) {
            return Err(arg_error(
                ROUTINE,
                DESCC,
                what,
                "C",
                format!(
                    "must have A's row distribution (M = {}, MB = {}, RSRC = {}), got M = {}, MB = {}, RSRC = {}",
                    a.m(),
                    a.mb(),
                    a.desc().rsrc(),
                    c.m(),
                    c.mb(),
                    c.desc().rsrc()
                ),
            ));
        }
        Ok(())
    });
    agree_on_arguments(grid, check)?;
    let nb = a.nb();
    let mycol = a.coords().1;
    let mut panels: Vec<(usize, usize)> = (0..k).step_by(nb).map(|j0| (j0, nb.min(k - j0))).collect();
    if trans == Trans::No {
        panels.reverse(); // Q·C = H(0)(H(1)(...(H(k−1)·C)))
    }
    for (j0, jb) in panels {
        let owner = a.col_owner(j0);
        let mine = if owner == mycol { Some(stored_panel(grid, a, tau, j0, jb)?) } else { None };
        let lrows = a.local_rows() - a.local_rows_before(j0);
        let panel: Panel = broadcast_panel(grid, (mine, None), owner, (j0, jb, lrows))?;
        let cols = 0..c.local_cols();
        panel.apply(grid, trans, c, cols)?;
    }
    Ok(())
}
