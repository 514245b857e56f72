//! `pdgetrf_ft`: ABFT LU with partial pivoting that survives SIGKILLed
//! ranks, on the step-commit protocol of [`recovery::protocol`] and the
//! checksums of [`crate::abft`] — the same layer as
//! [`crate::qr_ft::pdgeqrf_ft`].
//!
//! The right checksums C_g ride through each step's row interchanges,
//! TRSM and DGEMM like any trailing column, so they stay row sums of the
//! transformed matrix. The left factor L of the finished columns is
//! protected by D_g, its row sums per group; every later interchange is
//! applied to the finished L rows at once (eagerly, not deferred to the
//! end) and to the rows of D_g with them, so the sums never go stale.
//! The pivots are replicated on every rank and handed to replacements with
//! the committed step. On one process row, the far groups' update of an
//! even step waits for the next step's, so that the two run as one DGEMM
//! with twice the inner dimension (`deferred`); a group and its pair are
//! always in the same state, so the checksum relations hold at every
//! commit.
//!
//! [`LuFactors`] keeps the factors protected after the factorization
//! returns, and [`pdgetrs_ft`] solves with them on the same protocol
//! (`pdgetrs`'s steps, with B protected by checksum columns of its own).

mod deferred;
mod early;
mod factor;
mod protected;
mod rows;
mod solve;

pub use crate::abft::Holding;
pub use crate::abft::{ChecksumCheck, FtOptions, FtReport, FtWorkspace};
pub use factor::{pdgetrf_ft, pdgetrf_ft_in, STEP_PHASES};
pub use protected::{LuFactors, LuKind};
pub use recovery::protocol::RecoveryRecord;
pub use solve::{pdgetrs_ft, pdgetrs_ft_in, GETRS_STEP_PHASES};
