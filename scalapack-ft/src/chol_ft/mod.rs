//! `pdpotrf_ft`: the Cholesky factorization (lower, `A = L·Lᵀ`) that
//! survives SIGKILLed ranks, its protected factors ([`CholFactors`]) and
//! the solves with them ([`pdpotrs_ft`], [`pdposv_ft`]), on the step-commit protocol of
//! [`recovery::protocol`] and the checksums of [`crate::abft`] — the same
//! layer as [`crate::qr_ft::pdgeqrf_ft`] and [`crate::lu_ft::pdgetrf_ft`].
//!
//! # The checksums of a symmetric update
//!
//! The trailing update of a right-looking Cholesky touches one triangle
//! (`A22 −= L21·L21ᵀ`, lower), so checksums of whole rows would need the
//! whole trailing matrix updated, twice the flops. The checksums here
//! cover the lower triangle only (`abft::Relations`): for block row i and
//! group g,
//!
//! C_g(i) = Σ_{J∈g, J≤i, J unfinished} w_J·Ã(i, J),
//!
//! where Ã(i, J) is the block for J < i and, for the diagonal block
//! (J = i), its lower triangle with the diagonal (its upper half as
//! zeros: the half `DSYRK` leaves stale is in no relation). Step k
//! subtracts
//!
//! L(i,k)·(Σ_{J∈g, k≤J<i} w_J·L(J,k))ᵀ + [i∈g]·w_i·lower(L(i,k)·L(i,k)ᵀ)
//!
//! from each: one `DGEMM` for the rows below the group (the full group
//! sum), and a small one with a partial sum plus the diagonal's `DSYRK`
//! for the at most Q block rows inside it; the rows above the group hold
//! zeros and are not touched. The J = k term removes the panel's column
//! from C_g as it finishes (L(i,k)·L(k,k)ᵀ is A(i,k) before the step), so
//! finished columns leave the C relations exactly as QR's and LU's do,
//! and their L (the diagonal block's lower triangle included) joins D_g.
//! The extra flops stay the layout's share of the update: 2/Q of the
//! data's on the reverse-neighboring pairs, f/(Q − f) on the rotating
//! layout ([`overhead_model`]).
//!
//! A lost process's blocks are rebuilt from these relations; its entries
//! in the strictly upper triangle (not referenced, as in ScaLAPACK, and
//! never changed) come back from U_g, a third sum kept beside D_g and
//! encoded once, apart from C and D so that whatever the program keeps
//! there (NaN included) spoils no rebuild of L or of the trailing matrix.
//!
//! # Steps
//! Phase 1 of step k: the diagonal block factored on its owner (`DPOTRF`,
//! on a backed-up panel) and sent down its process column, the column
//! below solved against it (`DTRSM`) — the phase `panel`; the column and
//! the INFO sent along the process rows (`bcast`); the whole column
//! gathered down every process column (`update`: each process then holds
//! the transposed column and the rows every checksum needs). While the
//! step's agreement runs, each process prepares its commit in scratch
//! (its columns of the column, the checksums' sums, and on one process
//! row the owner of the next block column updates and factors that
//! column), so that the wait for a slower process is work. The commit:
//! the next block column updated, factored and sent first (the
//! look-ahead, as plain `pdpotrf`'s; with several process rows its
//! process column factors it there, a collective whose failure the next
//! step's phase 1 reports, as QR's look-ahead does), then the rest of the
//! trailing lower triangle's update, the checksums', and the panel into
//! D_g. A leading minor that is not positive definite
//! stops every process at that step with the same INFO; the panel's
//! column keeps its updated input and the checksums stay consistent.

mod ahead;
mod checksums;
mod factor;
mod protected;
mod solve;

pub use factor::{
    bytes_per_process, overhead_model, pdpotrf_ft, pdpotrf_ft_in, spare_workspace, workspace_in_place, STEP_PHASES,
};
pub use protected::{CholFactors, CholKind};
pub use solve::{check_rhs, pdposv_ft, pdpotrs_ft, pdpotrs_ft_in, PosvReport, POTRS_STEP_PHASES};
