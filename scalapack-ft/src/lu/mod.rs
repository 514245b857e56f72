//! LU factorization with partial pivoting on a 2D block-cyclic grid
//! (ScaLAPACK `PDGETRF` / `PDGETRS` / `PDLASWP`), not fault tolerant.
//!
//! * [`pdgetrf`]: `P·A = L·U` of an M×N matrix, in place, with ScaLAPACK's
//!   result layout (unit lower L below the diagonal, U on and above it);
//!   [`pdgetrf_with`] takes tuning [`LuOptions`].
//! * [`pdgetrs`]: solves `A·X = B` or `Aᵀ·X = B` with the factors.
//! * [`pdlaswp`]: applies the recorded row interchanges to another matrix.
//! * [`lu_residual`], [`solve_residual`]: ScaLAPACK-style scaled residuals.
//!
//! # Pivots
//! ScaLAPACK's `IPIV` is a *local* array of length `LOCr(M_A)+MB_A` holding
//! 1-based global row numbers for the local rows. Here the pivots are a
//! **replicated, global, 0-based** vector of length `min(M, N)`, the same on
//! every process: `ipiv[i]` is the global row that was interchanged with
//! row `i` at step `i` (LAPACK's convention shifted to 0-based, so
//! `ipiv[i] ≥ i`). Applying `swap(i, ipiv[i])` for `i = 0, 1, …` to the
//! rows of A gives `P·A`.
//!
//! # Arguments
//! As in ScaLAPACK's documentation, arguments are marked *(global)* when
//! they must be the same on every process and *(local)* when each process
//! passes its own piece. Argument errors carry ScaLAPACK's argument
//! positions (so [`crate::Error::info`] gives its `INFO`) and are agreed: every
//! process returns the same error, nobody hangs.
//!
//! # Performance
//! Right-looking with a look-ahead of one panel: the next panel is
//! factored while the other process columns run their trailing DGEMM
//! (see the drivers' notes in `factor.rs` and `row.rs`). Interchanges move
//! each row once per step in one message per pair of process rows; the
//! panel on P > 1 process rows costs one all-gather per column. On grids
//! with one process row the trailing DGEMM works on panels of
//! [`LuOptions::row_panel_width`] columns whatever `NB` is. Run with one
//! BLAS thread per process (`OPENBLAS_NUM_THREADS=1`).
//!
//! Not fault tolerant: a process failure surfaces as [`crate::Error::Grid`].

mod check;
mod factor;
pub(crate) mod panel;
mod ring;
mod row;
mod solve;
pub(crate) mod swap;

pub use check::{lu_residual, solve_residual};
pub use factor::{pdgetrf, pdgetrf_with, LuOptions};
pub use solve::{pdgetrs, Transpose};
pub use swap::{pdlaswp, Direction};

use crate::error::Error;
use crate::matrix::DistMatrix;
use blacs_ft::Grid;

/// Tags of the point-to-point messages of this module (on the grid's
/// all-process communicator).
pub(crate) mod tags {
    /// A factored panel travelling along a process row.
    pub const PANEL: i32 = 0x4C55;
    /// Rows exchanged by a row interchange.
    pub const SWAP: i32 = 0x4C56;
    /// A process column's part of a wide panel, on its way to the process
    /// that factors it.
    pub const PIECE: i32 = 0x4C57;
}

/// An argument error of `routine`.
pub(crate) fn arg_error(routine: &str, position: u32, entry: u32, name: &str, reason: impl Into<String>) -> Error {
    Error::Argument { routine: routine.into(), position, entry, name: name.into(), reason: reason.into() }
}

/// Descriptor entry numbers (1-based, ScaLAPACK's `CTXT_`, `M_`, …).
pub(crate) mod entry {
    pub const CTXT: u32 = 2;
    pub const M: u32 = 3;
    pub const N: u32 = 4;
    pub const MB: u32 = 5;
    pub const NB: u32 = 6;
    pub const RSRC: u32 = 7;
    pub const CSRC: u32 = 8;
}

/// Checks that `a` was built for this grid and this process (ScaLAPACK
/// reports a foreign matrix against the descriptor's `CTXT` entry).
pub(crate) fn check_grid(
    grid: &Grid,
    a: &DistMatrix,
    routine: &str,
    position: u32,
    name: &str,
) -> crate::error::Result<()> {
    let shape = (grid.nprow() as usize, grid.npcol() as usize);
    let coords = (grid.myrow() as usize, grid.mycol() as usize);
    if a.grid_shape() != shape || a.coords() != coords {
        return Err(arg_error(
            routine,
            position,
            entry::CTXT,
            &format!("CTXT_{name}"),
            format!(
                "{name} belongs to process {:?} of a {}x{} grid, but this is process {:?} of a {}x{} grid",
                a.coords(),
                a.grid_shape().0,
                a.grid_shape().1,
                coords,
                shape.0,
                shape.1
            ),
        ));
    }
    Ok(())
}

/// `a`'s blocks are square (MB_A = NB_A): argument `position`, entry NB.
pub(crate) fn check_square_blocks(routine: &str, position: u32, a: &DistMatrix) -> crate::error::Result<()> {
    if a.mb() != a.nb() {
        return Err(arg_error(
            routine,
            position,
            entry::NB,
            "NB_A",
            format!("MB_A must equal NB_A (square blocks), got MB_A = {}, NB_A = {}", a.mb(), a.nb()),
        ));
    }
    Ok(())
}

/// Matrix `name`'s first block is on process (0, 0) (RSRC = CSRC = 0), as
/// the checksum-extended matrix's is: argument `position`, entry RSRC or
/// CSRC.
pub(crate) fn check_first_block_at_origin(
    routine: &str,
    position: u32,
    name: &str,
    m: &DistMatrix,
) -> crate::error::Result<()> {
    for (entry, what, src) in [(entry::RSRC, "RSRC", m.desc().rsrc()), (entry::CSRC, "CSRC", m.desc().csrc())] {
        if src != 0 {
            return Err(arg_error(
                routine,
                position,
                entry,
                &format!("{what}_{name}"),
                format!("must be 0 (the first block on process (0, 0)), got {src}"),
            ));
        }
    }
    Ok(())
}

/// Copies the local submatrix rows `r0..r1`, columns `c0..c1` of a
/// column-major array with leading dimension `ld` into `out`
/// (column-major, leading dimension `r1 - r0`), replacing its contents.
pub(crate) fn pack(
    src: &[f64],
    ld: usize,
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
    out: &mut Vec<f64>,
) {
    out.clear();
    out.reserve(rows.len() * cols.len());
    for c in cols {
        out.extend_from_slice(&src[rows.start + c * ld..rows.end + c * ld]);
    }
}

/// Inverse of [`pack`]: writes `buf` (leading dimension `rows.len()`) into
/// rows `rows`, columns `cols` of `dst` (leading dimension `ld`).
pub(crate) fn unpack(
    buf: &[f64],
    dst: &mut [f64],
    ld: usize,
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
) {
    let h = rows.len();
    if h == 0 {
        return;
    }
    for (t, c) in cols.enumerate() {
        dst[rows.start + c * ld..rows.end + c * ld].copy_from_slice(&buf[t * h..(t + 1) * h]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_and_unpack_are_inverse() {
        // 4×3 column-major, ld 5 (one padding row).
        let src: Vec<f64> = (0..15).map(|x| x as f64).collect();
        let mut buf = Vec::new();
        pack(&src, 5, 1..3, 1..3, &mut buf);
        assert_eq!(buf, vec![6.0, 7.0, 11.0, 12.0]);
        let mut dst = vec![0.0; 15];
        unpack(&buf, &mut dst, 5, 1..3, 1..3);
        assert_eq!(dst[6], 6.0);
        assert_eq!(dst[12], 12.0);
        assert_eq!(dst.iter().filter(|&&x| x != 0.0).count(), 4);
    }
}
