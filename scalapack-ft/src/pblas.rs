//! Distributed BLAS 3 (PBLAS): `pdgemm` by SUMMA (broadcast a block column
//! of A along the process rows and a block row of B down the process
//! columns, multiply locally, repeat).

use crate::args::pdgemm::{A, B, DESCA, DESCB, DESCC, TRANSA, TRANSB};
use crate::args::{arg_error, check_grid, entry as e};
use crate::blas::{self, Trans};
use crate::error::{agree_on_arguments, check_not_lost, Result};
use crate::matrix::DistMatrix;
use blacs_ft::{Grid, Scope};

const ROUTINE: &str = "pdgemm";

/// Inner-dimension width gathered before each local DGEMM (whole blocks).
const PANEL_WIDTH: usize = 256;

/// Collective: `C := alpha·A·B + beta·C` for distributed matrices
/// (PBLAS `PDGEMM` with `IA = JA = … = 1`, `M = M_C`, `N = N_C`,
/// `K = N_A`).
///
/// * `grid`: the process grid of all three matrices;
/// * `transa`, `transb` (global): only [`Trans::No`] is supported (a
///   transposed operand is an argument error);
/// * `alpha`, `beta` (global): scalars; `beta = 0` overwrites C without
///   reading it (NaNs in C do not propagate), as BLAS does;
/// * `a` (local input): M×K; `b` (local input): K×N; `c` (local
///   input/output): M×N.
///
/// The distributions must be aligned (any block sizes otherwise): A's rows
/// like C's (`MB_A = MB_C`, same first process row), B's columns like
/// C's (`NB_B = NB_C`, same first process column), and A's column blocks
/// like B's row blocks (`NB_A = MB_B`).
///
/// # Errors
/// Agreed [`crate::Error::Argument`]s with PBLAS positions (TRANSA 1, TRANSB 2,
/// DESCA 10, DESCB 14, DESCC 19, the descriptor entry naming what does not
/// conform); [`crate::Error::InputLost`] when A or B is an output a
/// replacement's process lost (see [`DistMatrix::is_lost`]);
/// [`crate::Error::Grid`] for MPI failures.
pub fn pdgemm(
    grid: &Grid,
    transa: Trans,
    transb: Trans,
    alpha: f64,
    a: &DistMatrix,
    b: &DistMatrix,
    beta: f64,
    c: &mut DistMatrix,
) -> Result<()> {
    agree_on_arguments(grid, check_args(grid, transa, transb, a, b, c))?;
    scale(c, beta);
    let k = a.n();
    if alpha == 0.0 || k == 0 || c.m() == 0 || c.n() == 0 {
        return Ok(());
    }
    let (p, q) = c.grid_shape();
    let (myrow, mycol) = c.coords();
    let (lr, lc) = (c.local_rows(), c.local_cols());
    let kb = a.nb();
    let group = (PANEL_WIDTH / kb).max(1);
    let nblocks = k.div_ceil(kb);
    let mut apanel: Vec<f64> = Vec::new();
    let mut bpanel: Vec<f64> = Vec::new();
    let mut brow: Vec<f64> = Vec::new();
    for g0 in (0..nblocks).step_by(group) {
        let g1 = (g0 + group).min(nblocks);
        let width = (g1 * kb).min(k) - g0 * kb;
        apanel.clear();
        apanel.resize(lr * width, 0.0);
        bpanel.clear();
        bpanel.resize(width * lc, 0.0);
        let mut off = 0;
        for kk in g0..g1 {
            let k0 = kk * kb;
            let w = kb.min(k - k0);
            // Block column kk of A, along the process rows.
            let acol = a.col_owner(k0);
            let slice = &mut apanel[off * lr..(off + w) * lr];
            if mycol == acol {
                let (la, lda) = (a.local_cols_before(k0), a.lld());
                for t in 0..w {
                    slice[t * lr..(t + 1) * lr].copy_from_slice(&a.local()[(la + t) * lda..(la + t) * lda + lr]);
                }
            }
            if q > 1 && !slice.is_empty() {
                grid.broadcast(Scope::Row, slice, acol as i32)?;
            }
            // Block row kk of B, down the process columns.
            let brow_owner = b.row_owner(k0);
            if myrow == brow_owner {
                let lb = b.local_rows_before(k0);
                crate::matrix::pack(b.local(), b.lld(), lb..lb + w, 0..lc, &mut brow);
            } else {
                brow.clear();
                brow.resize(w * lc, 0.0);
            }
            if p > 1 && !brow.is_empty() {
                grid.broadcast(Scope::Column, &mut brow, brow_owner as i32)?;
            }
            for j in 0..lc {
                bpanel[off + j * width..off + w + j * width].copy_from_slice(&brow[j * w..(j + 1) * w]);
            }
            off += w;
        }
        let ldc = c.lld();
        blas::dgemm(Trans::No, Trans::No, lr, lc, width, alpha, &apanel, lr, &bpanel, width, 1.0, c.local_mut(), ldc);
    }
    Ok(())
}

/// `C := beta·C` on the local part (exact zeros for `beta = 0`).
fn scale(c: &mut DistMatrix, beta: f64) {
    if beta == 1.0 {
        return;
    }
    let (lr, lc, lld) = (c.local_rows(), c.local_cols(), c.lld());
    let data = c.local_mut();
    for j in 0..lc {
        let col = &mut data[j * lld..j * lld + lr];
        if beta == 0.0 {
            col.iter_mut().for_each(|x| *x = 0.0);
        } else {
            col.iter_mut().for_each(|x| *x *= beta);
        }
    }
}

/// The local argument checks of [`pdgemm`].
fn check_args(grid: &Grid, transa: Trans, transb: Trans, a: &DistMatrix, b: &DistMatrix, c: &DistMatrix) -> Result<()> {
    if transa != Trans::No {
        return Err(arg_error(ROUTINE, TRANSA, 0, "TRANSA", "only 'N' (no transpose) is supported"));
    }
    if transb != Trans::No {
        return Err(arg_error(ROUTINE, TRANSB, 0, "TRANSB", "only 'N' (no transpose) is supported"));
    }
    check_grid(grid, a, ROUTINE, DESCA, "A")?;
    check_grid(grid, b, ROUTINE, DESCB, "B")?;
    check_grid(grid, c, ROUTINE, DESCC, "C")?;
    check_not_lost(grid, ROUTINE, A, "A", a)?;
    check_not_lost(grid, ROUTINE, B, "B", b)?;
    if a.m() != c.m() {
        return Err(arg_error(ROUTINE, DESCA, e::M, "M_A", format!("A has {} rows, C has {}", a.m(), c.m())));
    }
    if b.m() != a.n() {
        return Err(arg_error(ROUTINE, DESCB, e::M, "M_B", format!("B has {} rows, A has {} columns", b.m(), a.n())));
    }
    if b.n() != c.n() {
        return Err(arg_error(ROUTINE, DESCB, e::N, "N_B", format!("B has {} columns, C has {}", b.n(), c.n())));
    }
    if a.mb() != c.mb() {
        return Err(arg_error(
            ROUTINE,
            DESCA,
            e::MB,
            "MB_A",
            format!("MB_A = {} must equal MB_C = {}", a.mb(), c.mb()),
        ));
    }
    if a.desc().rsrc() != c.desc().rsrc() {
        return Err(arg_error(
            ROUTINE,
            DESCA,
            e::RSRC,
            "RSRC_A",
            format!("RSRC_A = {} must equal RSRC_C = {}", a.desc().rsrc(), c.desc().rsrc()),
        ));
    }
    if b.nb() != c.nb() {
        return Err(arg_error(
            ROUTINE,
            DESCB,
            e::NB,
            "NB_B",
            format!("NB_B = {} must equal NB_C = {}", b.nb(), c.nb()),
        ));
    }
    if b.desc().csrc() != c.desc().csrc() {
        return Err(arg_error(
            ROUTINE,
            DESCB,
            e::CSRC,
            "CSRC_B",
            format!("CSRC_B = {} must equal CSRC_C = {}", b.desc().csrc(), c.desc().csrc()),
        ));
    }
    if a.nb() != b.mb() {
        return Err(arg_error(
            ROUTINE,
            DESCB,
            e::MB,
            "MB_B",
            format!("MB_B = {} must equal NB_A = {}", b.mb(), a.nb()),
        ));
    }
    Ok(())
}
