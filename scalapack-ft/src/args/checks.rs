//! The argument checks every routine shares (local; the routine agrees on
//! the verdict).

use super::{arg_error, entry};
use crate::descriptor::Descriptor;
use crate::error::Result;
use crate::matrix::DistMatrix;
use blacs_ft::Grid;

/// Matrix `name` (argument `position`) was built for this grid and this
/// process. ScaLAPACK reports a foreign matrix against its descriptor's
/// `CTXT` entry.
pub fn check_grid(grid: &Grid, a: &DistMatrix, routine: &str, position: u32, name: &str) -> Result<()> {
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

/// Matrix `name`'s blocks are square (`MB = NB`), as the factorizations
/// need: its descriptor `desc` is argument `position`, reported against
/// entry `NB`.
pub fn check_square_blocks(routine: &str, position: u32, name: &str, desc: &Descriptor) -> Result<()> {
    if desc.mb() != desc.nb() {
        return Err(arg_error(
            routine,
            position,
            entry::NB,
            &format!("NB_{name}"),
            format!(
                "MB_{name} must equal NB_{name} (square blocks), got MB_{name} = {}, NB_{name} = {}",
                desc.mb(),
                desc.nb()
            ),
        ));
    }
    Ok(())
}

/// The right-hand sides `b` of a solve with the N×N factors in `a`
/// (`descb`: B's descriptor's position in `routine`'s argument list): N
/// rows (entry `M_`), rows in A's row blocks (`MB_B = NB_A`, entry `NB_`,
/// as ScaLAPACK's PxGETRS and PxPOTRS report it) starting on A's process
/// row (entry `RSRC_`).
pub fn check_rhs_rows(routine: &str, descb: u32, n: usize, a: &DistMatrix, b: &DistMatrix) -> Result<()> {
    if b.m() != n {
        return Err(arg_error(
            routine,
            descb,
            entry::M,
            "M_B",
            format!("B must have N = {n} rows (the order of A), got M_B = {}", b.m()),
        ));
    }
    if b.mb() != a.nb() {
        return Err(arg_error(
            routine,
            descb,
            entry::NB,
            "MB_B",
            format!("MB_B must equal NB_A, got MB_B = {}, NB_A = {}", b.mb(), a.nb()),
        ));
    }
    if b.desc().rsrc() != a.desc().rsrc() {
        return Err(arg_error(
            routine,
            descb,
            entry::RSRC,
            "RSRC_B",
            format!("B's rows must start on A's process row {}, got {}", a.desc().rsrc(), b.desc().rsrc()),
        ));
    }
    Ok(())
}

/// Matrix `name`'s first block is on process (0, 0) (`RSRC = CSRC = 0`),
/// as a checksum-extended matrix's is and as ftla's leading submatrices
/// need: its descriptor `desc` is argument `position`, reported against
/// entry `RSRC` or `CSRC`.
pub fn check_first_block_at_origin(routine: &str, position: u32, name: &str, desc: &Descriptor) -> Result<()> {
    for (entry, what, src) in [(entry::RSRC, "RSRC", desc.rsrc()), (entry::CSRC, "CSRC", desc.csrc())] {
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

/// The grid has at least two process columns (Q ≥ 2), as every
/// fault-tolerant routine needs: the two copies of each checksum, and the
/// copies CG keeps of its vectors, live on two process columns. A grid
/// with one is reported against the `CTXT` entry of matrix `name`'s
/// descriptor, argument `position`.
pub fn check_two_process_columns(routine: &str, position: u32, name: &str, grid: &Grid) -> Result<()> {
    if grid.npcol() < 2 {
        return Err(arg_error(
            routine,
            position,
            entry::CTXT,
            &format!("CTXT_{name}"),
            format!(
                "names a {}x1 grid; a fault-tolerant routine needs at least two process columns (the second \
                 copy of each checksum, and of CG's vector pieces, lives on another process column)",
                grid.nprow()
            ),
        ));
    }
    Ok(())
}
