//! Protected LU factors: the result of [`LuFactors::factor`], kept with
//! its checksums after the factorization returns, so that a process lost
//! later — in another call, between calls, in a solve — is rebuilt from
//! them (docs/architecture.md, "Protected results").

use super::factor::{run_on_extended, LuState, ROUTINE};
use crate::abft::{Factors, FactorsKind, FtOptions, FtReport, FtWorkspace, ProtectedFactors, Relations};
use crate::error::{Error, Result};
use crate::matrix::DistMatrix;
use recovery::protocol;
use recovery::Region;

/// This process's part of protected LU factors (the state is the pivots).
pub(crate) type ProtectedLu = ProtectedFactors<Vec<i64>>;

/// LU factors `P·A = L·U` that stay protected after the factorization
/// returns: the value owns the factors, their checksums in the layout of
/// [`crate::abft::FtOptions::layout`] (C_g for U and the right side, D_g for L) and the pivots, and the
/// region rebuilds a lost process's part of them after a repair. The
/// fault-tolerant solves take them. Dropping the value releases all of it
/// (the region forgets it once the program is past the call that made it).
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
/// [`Factors::to_matrix`] gives L below the diagonal and U on and above.
pub type LuFactors = Factors<LuKind>;

/// The kind of [`LuFactors`]: the pivots kept with them.
pub enum LuKind {}

impl FactorsKind for LuKind {
    type State = Vec<i64>;
    const TO_MATRIX: &'static str = "LuFactors::to_matrix";
    const ARGUMENT: &'static str = "the LU factors";
}

impl Factors<LuKind> {
    /// Collective: factors `a` with [`super::pdgetrf_ft`] and keeps the
    /// result protected. Arguments, errors and the recovery during the
    /// factorization are `pdgetrf_ft`'s; `a` (local input) is taken: its
    /// storage becomes the factors' when it has room for the checksum
    /// columns ([`FtWorkspace::in_place`]), else it is copied once and
    /// dropped.
    ///
    /// # Errors
    /// As [`super::pdgetrf_ft`]; a singular matrix gives
    /// [`Error::Singular`] and no factors.
    ///
    /// # Fault tolerance
    /// See [`LuFactors`]. On a replacement, a call that completed before it
    /// joined returns at once (no communication) with a hollow copy and an
    /// empty report.
    pub fn factor(region: &mut Region, a: DistMatrix, opts: &FtOptions) -> Result<(LuFactors, FtReport)> {
        let (factors, report, zero) = LuFactors::factor_even_if_singular(region, a, opts)?;
        match zero {
            Some(index) => Err(Error::Singular { routine: ROUTINE.into(), index }),
            None => Ok((factors, report)),
        }
    }

    /// [`LuFactors::factor`] that returns the factors of a singular matrix
    /// too, as PDGETRF does (its INFO > 0): the factors, the report, and
    /// the first exactly-zero pivot U(i,i) (0-based, global; `None` when
    /// U is nonsingular). The solves do not look at it (as PDGETRS, a zero
    /// pivot gives infinities): check it first.
    ///
    /// # Errors
    /// As [`LuFactors::factor`], singular matrices aside.
    pub fn factor_even_if_singular(
        region: &mut Region,
        mut a: DistMatrix,
        opts: &FtOptions,
    ) -> Result<(LuFactors, FtReport, Option<usize>)> {
        let start = protocol::enter::<LuState, Error>(region, ROUTINE)?;
        if let protocol::Start::Done(state) = start {
            let zero = state.zero_pivot();
            let factors = LuFactors::again(region, &mut a, state.ipiv, (opts.layout, Relations::Whole), ROUTINE)?;
            return Ok((factors, FtReport::default(), zero));
        }
        let run = run_on_extended(region, &mut a, opts, &mut FtWorkspace::new(), start)?;
        let zero = run.state.zero_pivot();
        Ok((LuFactors::register(region, &a, run.ext, run.layout, run.state.ipiv), run.report, zero))
    }

    /// The pivots (global, 0-based, as [`crate::lu::pdgetrf`]'s).
    pub fn ipiv(&self) -> Vec<i64> {
        self.state().clone()
    }
}
