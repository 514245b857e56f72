//! # checksum — ABFT encodings for ftla
//!
//! The algorithm-based fault tolerance of the QR (and LU) drivers: where the
//! reverse-neighboring checksum pairs (or the rotating layout's weighted
//! checksums) live, how they are encoded (row-wise sums along process rows),
//! verified, and how a lost process's blocks are rebuilt from the survivors and
//! the checksums. The math here touches no MPI (only
//! `blacs_ft::index` for the block-cyclic index arithmetic), so it is tested
//! without `mpiexec`.
//!
//! ## The scheme (reverse-neighboring, the default)
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
//! row `pr`: the left factor of a finished `J` from `D_g − Σ stored(A_J')` over
//! the other finished `J'` of its group, the rest from `C_g − Σ Ã_J'` over the
//! other members (finished ones contributing their `R` part). Its checksum
//! copies are copied from their duplicates. [`GroupRebuild`] plans all of this,
//! group by group, for either layout; two losses in one process row are
//! unrecoverable ([`check_recoverable_up_to`] with one loss tolerated).
//!
//! **Cost.** `2·G·nb ≈ 2N/Q` extra columns of memory; extra trailing-update flops
//! ≈ `2/Q` of the plain QR's ([`ReverseNeighborLayout::overhead_model`]).
//!
//! ## The rotating scheme (opt-in): `f` weighted checksums per group
//!
//! The reverse-neighboring layout above is the default. [`RotatingLayout`] is the
//! alternative for `Q ≥ f + 1`, `1 ≤ f ≤ 3`: it costs `f/(Q − f)` of the
//! trailing-update flops (`f = 1`: `1/(Q − 1)` instead of `2/Q`) and tolerates `f`
//! lost processes per process row.
//!
//! **Groups and checksums.** `s = Q − f`; the `nbc` data block columns are cut
//! into `G = ⌈nbc/s⌉` runs of `s` consecutive block columns counted from the right
//! (only group 0 may be short), so a group's data lie on `s` distinct process
//! columns and skip `f`. Group `g` has `f` checksums
//! `C_g^(i) = Σ_t w_{i,t}·Ã_t`, `i < f`, with the weights of [`CodeWeights`]
//! (row 0 all ones: `f = 1` is the plain sum, and `Q = 2, f = 1` a replica of
//! every block column). The extended matrix is
//! `[A | pad | C_{G−1}^(0..f) | … | C_0^(0..f)]`: checksum `i` of group `g` is
//! extended block column `nbc + (G−1−g)·f + i`, which is on one of the process
//! columns group `g` skips, and a finished group's checksums fall off the right
//! end of the active trailing update as in the reverse-neighboring layout
//! ([`rotating`] proves both). The trailing updates run over the checksums of the
//! unfinished groups; any left transformation keeps `C = Ã·W`.
//!
//! **Left checksums.** `D_g^(i) = Σ_{t finished} w_{i,t}·stored(A_t)`, one local
//! array per checksum, on the process column of `C_g^(i)`.
//!
//! **Rebuild.** Up to `f` lost processes of one process row erase at most `f`
//! blocks of any group (data and checksums together: a group has one block per
//! process column it touches). [`GroupRebuild`] names, group by group, the erased
//! members, the first surviving checksums whose relations rebuild them (the left
//! factor of finished blocks from the `D` relations, the rest from the `C`
//! relations, finished members entering with their R part), each an `e × e`
//! system `e ≤ f` per entry ([`ErasurePlan`], partial pivoting), and the lost
//! checksums encoded again. `f + 1` losses in a row are
//! [`ErasureError::TooManyLossesInProcessRow`].
//!
//! **Accuracy.** Every square submatrix of the weights is nonsingular (integer
//! minors of a no-three-collinear lattice set, see [`weights`]); a rebuilt block's
//! error is at most `β·(ε_c + (s + f + 1)·u·max‖a_t‖)` with `β = max ‖W[S,E]⁻¹‖_∞`:
//! `β = 1` for `f = 1`, `β ≤ s + 2` for `f = 2` (64 at `s = 64`), `β = O(s²)` for
//! `f = 3` (36 at `s = 4`, 756 at `s = 16`, 11984 at `s = 64`).
//!
//! ## Modules
//!
//! * [`checksum_layout`]: [`ChecksumLayout`], either layout asked the same questions
//!   (groups, checksums, replicas, weights) by the drivers;
//! * [`layout`]: [`ReverseNeighborLayout`], the index arithmetic of the scheme;
//! * [`rotating`]: [`RotatingLayout`], the index arithmetic of the rotating scheme;
//! * [`rebuild_plan`]: [`GroupRebuild`], what a group lost and how it is rebuilt, for
//!   either layout (the distributed rebuild and the simulations follow it);
//! * [`weights`]: the checksum weights and their conditioning;
//! * [`erasure`]: weighted encoding and the small solves for up to `f` erased blocks;
//! * [`overhead`]: the flop model of checksum maintenance;
//! * [`encode`]: local sums, R-only forms and accumulation kernels;
//! * [`verify`]: checking a checksum relation within a rounding tolerance;
//! * [`shape`]: buffer shape checks and their error type.

#![warn(missing_docs)]

pub mod checksum_layout;
pub mod encode;
pub mod erasure;
pub mod layout;
pub mod overhead;
pub mod rebuild_plan;
pub mod rotating;
pub mod shape;
pub mod verify;
pub mod weights;

pub use checksum_layout::{ChecksumLayout, HeldChecksum, LayoutKind};
pub use encode::{
    add_block, axpy_block, encode_group, r_only, r_only_rows, sub_block, sum_blocks, zero_below_diagonal,
};
pub use erasure::{check_recoverable_up_to, encode_weighted, ErasureError, ErasurePlan, GroupBlock};
pub use layout::{LayoutError, ReverseNeighborLayout};
pub use overhead::OverheadFlops;
pub use rebuild_plan::{Equation, GroupRebuild, Reencoded, ReplicaCopy};
pub use rotating::RotatingLayout;
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
mod simulated_rebuild;
#[cfg(test)]
mod simulated_rotating_qr;
