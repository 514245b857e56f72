//! `pdgeqrf_ft`: ABFT QR that survives SIGKILLed ranks.
//!
//! The matrix is extended with reverse-neighboring checksum pairs (see the
//! `checksum` crate): C_g = Σ_{J∈g} A_J for each group g of Q block columns,
//! stored twice on two process columns, updated by the same trailing-update
//! DGEMMs as the data; finished groups' pairs drop out of the update. The
//! stored content of finished block columns (R and V) is protected by
//! D_g = Σ of the finished stored blocks, kept next to C_g's pair.
//!
//! Every step follows the step-commit protocol: panel factorization (on a
//! backed-up panel), broadcasts and reductions into scratch; one agreement
//! over the grid; then a local commit with no communication. A failure
//! leaves every survivor at the last committed step; the grid is repaired,
//! the lost processes' blocks are rebuilt from the checksums, and the loop
//! resumes.

mod encode;
mod factor;
mod rebuild;
mod verify;
mod workspace;

pub use factor::{pdgeqrf_ft, pdgeqrf_ft_in, FtOptions, FtReport, RecoveryRecord};
pub use verify::ChecksumCheck;
pub use workspace::FtWorkspace;
