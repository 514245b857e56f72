//! Protected QR factors: the result of [`QrFactors::factor`], kept with
//! its checksums after the factorization returns, so that a process lost
//! later — in another call, between calls, in a solve — is rebuilt from
//! them (docs/architecture.md, "Protected results").

use super::factor::{run_on_extended, ROUTINE};
use crate::abft::{Factors, FactorsKind, FtOptions, FtReport, FtWorkspace, ProtectedFactors, Relations};
use crate::error::{Error, Result};
use crate::matrix::DistMatrix;
use crate::qr::QrOptions;
use recovery::protocol;
use recovery::Region;

/// This process's part of protected QR factors (the state is tau).
pub(crate) type ProtectedQr = ProtectedFactors<Vec<f64>>;

/// QR factors `A = Q·R` that stay protected after the factorization
/// returns: the value owns R and the reflectors V (as
/// [`crate::qr::pdgeqrf`] leaves them in A), their checksums in the layout
/// of [`crate::abft::FtOptions::layout`] (C_g for R and the right side, D_g for V) and tau, and the
/// region rebuilds a lost process's part of them after a repair. The
/// fault-tolerant solves take them ([`super::pdormqr_ft`],
/// [`super::upper_solve_ft`], and [`super::pdgels_ft`] inside). Dropping
/// the value releases all of it (the region forgets it once the program
/// is past the call that made it).
///
/// Memory per process: A's local part plus the checksum columns (about
/// 2/Q of it with the default reverse-neighboring layout, F/(Q − F) with
/// the rotating one) and as much again for the left-factor sums (the
/// extended matrix and D_g of [`crate::abft::FtWorkspace`]), held as long
/// as the value lives.
///
/// # Fault tolerance
/// A process lost at any time while the value lives — in an ftla call,
/// between calls, in a solve — is rebuilt from the checksums at the first
/// point the survivors and its replacement meet after the repair (the
/// next fault-tolerant call's start, or the recovery of the interrupted
/// one). A replacement gets its copy when its program makes the
/// factorization call again: the call completed before it joined, so it
/// returns at once a hollow copy ([`Holding::Hollow`](crate::abft::Holding::Hollow)) that the region
/// fills. As many losses per process row between two such meetings as
/// the layout tolerates (one with the reverse-neighboring layout, F with
/// the rotating one) are rebuilt; more mark the factors lost ([`Holding::Lost`](crate::abft::Holding::Lost)), and every
/// routine given them refuses them on every process
/// ([`Error::InputLost`]), never computing with them.
///
/// In a body run by [`Region::run`], keep the value outside the body, or
/// make the call again in the body: a re-run of the body gets the same
/// factors back from the region.
///
/// [`Factors::to_matrix`] gives R on and above the diagonal and V below.
pub type QrFactors = Factors<QrKind>;

/// The kind of [`QrFactors`]: tau kept with them.
pub enum QrKind {}

impl FactorsKind for QrKind {
    type State = Vec<f64>;
    const TO_MATRIX: &'static str = "QrFactors::to_matrix";
    const ARGUMENT: &'static str = "the QR factors";
}

impl Factors<QrKind> {
    /// Collective: factors `a` with [`super::pdgeqrf_ft`] and keeps the
    /// result protected. Arguments, errors and the recovery during the
    /// factorization are `pdgeqrf_ft`'s; `a` (local input) is taken: its
    /// storage becomes the factors' when it has room for the checksum
    /// columns ([`FtWorkspace::in_place`]), else it is copied once and
    /// dropped.
    ///
    /// # Errors
    /// As [`super::pdgeqrf_ft`].
    ///
    /// # Fault tolerance
    /// See [`QrFactors`]. On a replacement, a call that completed before it
    /// joined returns at once (no communication) with a hollow copy and an
    /// empty report.
    pub fn factor(region: &mut Region, mut a: DistMatrix, opts: &FtOptions) -> Result<(QrFactors, FtReport)> {
        let start = protocol::enter::<Vec<f64>, Error>(region, ROUTINE)?;
        if let protocol::Start::Done(tau) = start {
            return Ok((
                QrFactors::again(region, &mut a, tau, (opts.layout, Relations::Whole), ROUTINE)?,
                FtReport::default(),
            ));
        }
        let run = run_on_extended(region, &mut a, opts, &mut FtWorkspace::new(), start, &QrOptions::default())?;
        Ok((QrFactors::register(region, &a, run.ext, run.layout, run.state), run.report))
    }

    /// The min(M, N) Householder scalars (global, as
    /// [`crate::qr::pdgeqrf`]'s).
    pub fn tau(&self) -> Vec<f64> {
        self.state().clone()
    }
}
