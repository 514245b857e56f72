//! `pdgeqrf_ft`: ABFT QR that survives SIGKILLed ranks, and the
//! fault-tolerant solves on its protected factors ([`QrFactors`]):
//! `pdormqr_ft`, `upper_solve_ft` and `pdgels_ft`.
//!
//! The QR's steps — panel factorization (on a backed-up panel), its
//! broadcast, the reduction of the update's W into scratch; then the local
//! commit, with the owner of the next panel factoring it ahead — run on the
//! step-commit protocol of [`recovery::protocol`], which owns the
//! agreements, the repairs and the recovery records. The checksums are
//! those of [`crate::abft`]: reverse-neighboring pairs C_g updated by the
//! same block reflectors as the data, and the left-factor sums D_g of the
//! finished V. The solves read the protected factors and run on B with
//! checksum columns of its own, on the same protocol.

mod factor;
mod gels;
mod ormqr;
mod protected;
mod solve_args;
mod trsm;
mod trsm_t;

pub use crate::abft::Holding;
pub use crate::abft::{ChecksumCheck, FtOptions, FtReport, FtWorkspace};
pub use factor::{pdgeqrf_ft, pdgeqrf_ft_in, pdgeqrf_ft_with, STEP_PHASES};
pub use gels::{pdgels_ft, pdgels_ft_memory, GelsMemory, GelsReport, GELS_PHASES};
pub use ormqr::{pdormqr_ft, ORMQR_PHASES};
pub use protected::{QrFactors, QrKind};
pub use recovery::protocol::RecoveryRecord;
pub use trsm::{upper_solve_ft, TRSM_PHASES};
