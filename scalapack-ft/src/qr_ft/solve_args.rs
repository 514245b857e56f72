//! The argument checks the fault-tolerant solves on QR factors share
//! (local; the solve agrees on the verdict).

use super::protected::QrFactors;
use crate::abft::SolveArgs;
use crate::args::{arg_error, check_first_block_at_origin, check_grid, check_square_blocks, entry};
use crate::error::Result;
use crate::matrix::DistMatrix;
use crate::qr::check_rows_of_a;
use blacs_ft::Grid;

/// B (`args.b_name`, descriptor at `args.b_desc_position`) can be solved
/// with `factors` under protection: on this grid, with the factors' row
/// distribution (M, MB, RSRC, as PDORMQR's C), and — the one restriction
/// beyond PDORMQR and PDGELS — square blocks of the factors' size
/// (MB_B = NB_B = NB_A) with the first on process (0, 0), since B gets
/// checksum columns laid out as the factors' are.
pub(crate) fn check_rhs(grid: &Grid, args: SolveArgs, factors: &QrFactors, b: &DistMatrix) -> Result<()> {
    let (routine, position, name) = (args.routine, args.b_desc_position, args.b_name);
    check_grid(grid, b, routine, position, name)?;
    let shared = factors.shared().borrow();
    check_rows_of_a(routine, position, name, &shared.ext.matrix, b)?;
    check_square_blocks(routine, position, name, b.desc())?;
    if b.nb() != factors.nb() {
        return Err(arg_error(
            routine,
            position,
            entry::NB,
            &format!("NB_{name}"),
            format!(
                "must equal the factors' NB_A = {} (B carries checksums laid out as A's), got {}",
                factors.nb(),
                b.nb()
            ),
        ));
    }
    check_first_block_at_origin(routine, position, name, b.desc())
}
