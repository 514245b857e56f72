//! `pdgeqrf_ft`: ABFT QR that survives SIGKILLed ranks.
//!
//! The QR's steps — panel factorization (on a backed-up panel), its
//! broadcast, the reduction of the update's W into scratch; then the local
//! commit, with the owner of the next panel factoring it ahead — run on the
//! step-commit protocol of [`recovery::protocol`], which owns the
//! agreements, the repairs and the recovery records. The checksums are
//! those of [`crate::abft`]: reverse-neighboring pairs C_g updated by the
//! same block reflectors as the data, and the left-factor sums D_g of the
//! finished V.

mod factor;

pub use crate::abft::{ChecksumCheck, FtOptions, FtReport, FtWorkspace};
pub use factor::{pdgeqrf_ft, pdgeqrf_ft_in, pdgeqrf_ft_with, STEP_PHASES};
pub use recovery::protocol::RecoveryRecord;
