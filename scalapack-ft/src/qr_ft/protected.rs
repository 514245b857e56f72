//! Protected QR factors: the result of [`QrFactors::factor`], kept with
//! its checksums after the factorization returns, so that a process lost
//! later — in another call, between calls, in a solve — is rebuilt from
//! them (docs/architecture.md, "Protected results").

use super::factor::{run_on_extended, ROUTINE};
use crate::abft::{FtOptions, FtReport, FtWorkspace, Holding, ProtectedFactors};
use crate::error::{Error, Result};
use crate::matrix::DistMatrix;
use crate::qr::QrOptions;
use recovery::protocol;
use recovery::Region;
use std::cell::RefCell;
use std::rc::Rc;

/// This process's part of protected QR factors (the state is tau).
pub(crate) type ProtectedQr = ProtectedFactors<Vec<f64>>;

/// QR factors `A = Q·R` that stay protected after the factorization
/// returns: the value owns R and the reflectors V (as
/// [`crate::qr::pdgeqrf`] leaves them in A), their reverse-neighboring
/// checksums (C_g for R and the right side, D_g for V) and tau, and the
/// region rebuilds a lost process's part of them after a repair. The
/// fault-tolerant solves take them ([`super::pdormqr_ft`],
/// [`super::upper_solve_ft`], and [`super::pdgels_ft`] inside). Dropping
/// the value releases all of it (the region forgets it once the program
/// is past the call that made it).
///
/// Memory per process: A's local part plus about 2/Q of it for the
/// checksums and 1/Q for the left-factor sums (the extended matrix and
/// D_g of [`crate::abft::FtWorkspace`]), held as long as the value lives.
///
/// # Fault tolerance
/// A process lost at any time while the value lives — in an ftla call,
/// between calls, in a solve — is rebuilt from the checksums at the first
/// point the survivors and its replacement meet after the repair (the
/// next fault-tolerant call's start, or the recovery of the interrupted
/// one). A replacement gets its copy when its program makes the
/// factorization call again: the call completed before it joined, so it
/// returns at once a hollow copy ([`Holding::Hollow`]) that the region
/// fills. One loss per process row between two such meetings is
/// rebuilt; more mark the factors lost ([`Holding::Lost`]), and every
/// routine given them refuses them on every process
/// ([`Error::InputLost`]), never computing with them.
///
/// In a body run by [`Region::run`], keep the value outside the body, or
/// make the call again in the body: a re-run of the body gets the same
/// factors back from the region.
pub struct QrFactors {
    shared: Rc<RefCell<ProtectedQr>>,
    m: usize,
    n: usize,
    nb: usize,
}

impl QrFactors {
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
        let (m, n, nb) = (a.m(), a.n(), a.nb());
        let steps = n.min(m).div_ceil(nb) as u64;
        let start = protocol::enter::<Vec<f64>, Error>(region, ROUTINE)?;
        if let protocol::Start::Done(tau) = start {
            let shared = ProtectedQr::again(region, &mut a, tau, steps, ROUTINE)?;
            return Ok((QrFactors { shared, m, n, nb }, FtReport::default()));
        }
        let run = run_on_extended(region, &mut a, opts, &mut FtWorkspace::new(), start, &QrOptions::default())?;
        let shared = ProtectedQr::register(region, run.ext, run.layout, run.tau, steps);
        Ok((QrFactors { shared, m, n, nb }, run.report))
    }

    /// The rows M (global).
    pub fn m(&self) -> usize {
        self.m
    }

    /// The columns N (global).
    pub fn n(&self) -> usize {
        self.n
    }

    /// The block size (global).
    pub fn nb(&self) -> usize {
        self.nb
    }

    /// The min(M, N) Householder scalars (global, as
    /// [`crate::qr::pdgeqrf`]'s).
    pub fn tau(&self) -> Vec<f64> {
        self.shared.borrow().state.clone()
    }

    /// Local: where this process's copy stands.
    pub fn holding(&self) -> Holding {
        self.shared.borrow().holding
    }

    /// Collective over the grid: a copy of the factors (R on and above the
    /// diagonal, V below) as a plain matrix, for output or a plain
    /// routine. Local memory: one more A.
    ///
    /// # Errors
    /// [`Error::InputLost`] on every process when the factors are not whole
    /// on some process; a process failure (repair, and call again).
    ///
    /// # Fault tolerance
    /// A meeting point: after a repair, the region first rebuilds the
    /// replacements' copies of its protected results
    /// ([`Region::mend_protected`]).
    pub fn to_matrix(&self, region: &mut Region) -> Result<DistMatrix> {
        region.mend_protected()?;
        self.shared.borrow().to_matrix(region.grid(), self.n, "QrFactors::to_matrix", "the QR factors")
    }

    /// Collective over the grid: [`Error::InputLost`] of `routine`
    /// (argument `position`), the same on every process, when the factors
    /// are not whole on some process. Mends the region's protected results
    /// first, as [`QrFactors::to_matrix`].
    pub fn check_whole(&self, region: &mut Region, routine: &str, position: u32) -> Result<()> {
        region.mend_protected()?;
        self.shared.borrow().check_whole(region.grid(), routine, position, "the QR factors")
    }

    /// The shared state, for the routines that take the factors (they
    /// borrow it only inside each step: the region's mend borrows it after
    /// a repair).
    pub(crate) fn shared(&self) -> &Rc<RefCell<ProtectedQr>> {
        &self.shared
    }
}

impl QrFactors {
    /// Local: `f` on this process's stored copy, the extended matrix whose
    /// first N global columns are the factors in A's layout (its local
    /// rows and leading local columns are A's local array), the checksum
    /// columns after them. For copying the factors out, or comparing an
    /// array with them, without communicating; see
    /// [`QrFactors::holding`] for whether the copy is whole.
    pub fn with_local_storage<R>(&self, f: impl FnOnce(&DistMatrix) -> R) -> R {
        f(&self.shared.borrow().ext.matrix)
    }
}
