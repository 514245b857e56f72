//! The argument checks the fault-tolerant solves on QR factors share
//! (local; the solve agrees on the verdict).

use super::protected::QrFactors;
use crate::abft::SolveArgs;
use crate::args::check_grid;
use crate::error::Result;
use crate::matrix::DistMatrix;
use crate::qr::check_rows_of_a;
use blacs_ft::Grid;

/// B (`args.b_name`, descriptor at `args.b_desc_position`) can be solved
/// with `factors`: on this grid, with the factors' row distribution (M,
/// MB_B = MB_A, RSRC, as PDORMQR's C and PDGELS's B; MB_B ≠ MB_A is
/// entry MB of the descriptor, INFO = -(position·100 + 5)). Its columns
/// may be in any blocks; the one restriction beyond ScaLAPACK's
/// (CSRC_B = 0) is checked by the solves' runner
/// ([`crate::abft::ProtectedRhs::checked_layout`]).
pub(crate) fn check_rhs(grid: &Grid, args: SolveArgs, factors: &QrFactors, b: &DistMatrix) -> Result<()> {
    let (routine, position, name) = (args.routine, args.b_desc_position, args.b_name);
    check_grid(grid, b, routine, position, name)?;
    let shared = factors.shared().borrow();
    check_rows_of_a(routine, position, name, &shared.ext.matrix, b)
}
