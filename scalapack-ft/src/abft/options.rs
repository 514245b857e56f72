//! The options and the report of the fault-tolerant factorizations.

use super::ChecksumCheck;
use checksum::LayoutKind;
use recovery::protocol::RecoveryRecord;

/// Options of the fault-tolerant factorizations (`pdgeqrf_ft`,
/// `pdgetrf_ft`) and of `pdcg_ft`.
#[derive(Clone, Debug, Default)]
pub struct FtOptions {
    /// Check the checksum relations at the end and report them.
    pub verify: bool,
    /// The checksum layout (global: the same on every process): the
    /// reverse-neighboring pairs (the default; one loss per process row)
    /// or `f` rotating weighted checksums (`f` losses per process row,
    /// `Q ≥ f + 1`, else an argument error against CTXT_A on every process).
    pub layout: LayoutKind,
}

/// What a fault-tolerant factorization did besides factoring.
#[derive(Clone, Debug, Default)]
pub struct FtReport {
    /// Its recoveries, the same on every rank.
    pub recoveries: Vec<RecoveryRecord>,
    /// Predicted extra trailing-update work of the checksums, as a fraction.
    pub overhead_model: f64,
    /// The checksum relations at the end (with `verify`).
    pub check: Option<ChecksumCheck>,
    /// Seconds the call ran in earlier jobs and between them, when it was
    /// restored from checkpoints (checkpoint-on-failure; 0 otherwise).
    pub earlier_s: f64,
}
