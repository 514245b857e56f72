//! # checksum — ABFT encodings for ftla
//!
//! The algorithm-based fault tolerance of the QR (and LU) drivers: where the
//! reverse-neighboring checksum pairs live, how they are encoded (row-wise sums
//! along process rows), verified, and how a lost process's blocks are rebuilt
//! from the survivors and the checksums. The math here touches no MPI (only
//! `blacs_ft::index` for the block-cyclic index arithmetic), so it is tested
//! without `mpiexec`.
//!
//! ## The scheme
//!
//! `A` is `M × N` with square `nb × nb` blocks on a `P × Q` grid (first block on
//! process `(0, 0)`), `Q ≥ 2`. Its `nbc = ⌈N/nb⌉` data block columns are padded
//! with zero columns to `Npad = nbc·nb`. Group `g` is the data block columns
//! `[g·Q, min((g+1)·Q, nbc))`, so in a full group each process column owns one
//! block column; there are `G = ⌈nbc/Q⌉` groups.
//!
//! **Right checksums.** The extended matrix is `[A | pad | C]` with
//! `N_ext = Npad + 2·G·nb` columns. `C_g = Σ_{J∈g} A_J` (an `M × nb` block
//! column) is stored twice, in the adjacent extended block columns
//! `nbc + 2(G−1−g)` and `nbc + 2(G−1−g) + 1` — in reverse order, group 0's pair
//! rightmost. Adjacent block columns live on different process columns because
//! `Q ≥ 2`. The trailing updates of the factorization run over the checksum
//! columns too, so `C_g` stays equal to `Σ_{J∈g} Ã_J`, where `Ã_J` is the stored
//! block column for an unfinished `J` and, for a finished `J`, its stored
//! content with everything strictly below the diagonal zeroed (the `R` part
//! only). After panel `k` is factored, block columns `≤ k` are finished; a group
//! is finished when all its block columns are, and its pair then drops out of
//! the trailing update: the active range ends at extended block column
//! `nbc + 2(G − g_min)`, `g_min` the lowest unfinished group
//! ([`ReverseNeighborLayout::active_end_col`]).
//!
//! **Left checksums.** The stored content of a finished block column (`R` and
//! the Householder vectors `V`) never changes again. `D_g = Σ_{J∈g finished}
//! stored(A_J)` is accumulated as panels finish and kept twice, on the same two
//! process columns as `C_g`'s pair, as separate local arrays.
//!
//! **Rebuild.** When one process `(pr, pc)` is lost at a committed step, each of
//! its data block columns `J` is rebuilt on `pr`'s rows by a sum along process
//! row `pr`: a finished `J` as `D_g − Σ stored(A_J')` over the other finished
//! `J'` of its group, an unfinished `J` as `C_g − Σ Ã_J'` over the other
//! members (finished ones contributing their `R` part). Its checksum copies are
//! copied from their duplicates. [`ReverseNeighborLayout::lost_blocks`] lists all
//! of this as plain data; two losses in one process row are unrecoverable
//! ([`check_recoverable`] → [`RebuildError::TwoLossesInProcessRow`]).
//!
//! **Cost.** `2·G·nb ≈ 2N/Q` extra columns of memory; extra trailing-update flops
//! ≈ `2/Q` of the plain QR's ([`ReverseNeighborLayout::overhead_model`]).
//!
//! ## Modules
//!
//! * [`layout`]: [`ReverseNeighborLayout`], the index arithmetic of the scheme;
//! * [`lost`]: what a lost process held and where each piece is rebuilt from;
//! * [`overhead`]: the flop model of checksum maintenance;
//! * [`encode`]: local sums, R-only forms and accumulation kernels;
//! * [`verify`]: checking a checksum relation within a rounding tolerance;
//! * [`rebuild`]: rebuilding lost blocks, restoring copies, recoverability;
//! * [`shape`]: buffer shape checks and their error type.

#![warn(missing_docs)]

pub mod encode;
pub mod erasure;
pub mod layout;
pub mod lost;
pub mod overhead;
pub mod rebuild;
pub mod rotating;
pub mod rotating_lost;
pub mod shape;
pub mod verify;
pub mod weights;

pub use encode::{
    add_block, axpy_block, encode_group, r_only, r_only_rows, sub_block, sum_blocks, zero_below_diagonal,
};
pub use erasure::{check_recoverable_up_to, encode_weighted, rebuild_group, ErasureError, ErasurePlan, GroupBlock};
pub use layout::{LayoutError, ReverseNeighborLayout};
pub use lost::{ChecksumSource, LostBlocks, LostDataBlock, LostLeftCopy, LostRightCopy, Survivor};
pub use overhead::OverheadFlops;
pub use rebuild::{check_recoverable, rebuild_lost_block, restore_from_duplicate, RebuildError};
pub use rotating::RotatingLayout;
pub use rotating_lost::{ErasedChecksum, ErasedDataBlock, LostGroup, RotatingLostBlocks, WeightedSurvivor};
pub use shape::ShapeError;
pub use verify::{tolerance, verify_relation, Verification, VerifyError};
pub use weights::{CodeWeights, MAX_CHECKSUMS};

#[cfg(test)]
mod layout_properties;
#[cfg(test)]
mod rotating_properties;
#[cfg(test)]
mod simulated_qr;
#[cfg(test)]
mod simulated_rotating_qr;
