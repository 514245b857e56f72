//! Protected Cholesky factors: the result of [`CholFactors::factor`],
//! kept with their checksums after the factorization returns, so that a
//! process lost later — in another call, between calls, in a solve — is
//! rebuilt from them (docs/architecture.md, "Protected results").

use super::factor::{run_on_extended, CholState, ROUTINE};
use crate::abft::{Factors, FactorsKind, FtOptions, FtReport, FtWorkspace};
use crate::error::{Error, Result};
use crate::matrix::DistMatrix;
use recovery::protocol;
use recovery::Region;

/// Cholesky factors `A = L·Lᵀ` that stay protected after the
/// factorization returns: the value owns L (in the lower triangle, the
/// strictly upper one as the program gave it) with its checksums in the
/// layout of [`crate::abft::FtOptions::layout`] (C_g, D_g for L and U_g
/// for the upper triangle), and the region rebuilds a lost process's part of
/// them after a repair. [`super::pdpotrs_ft`] takes them. Dropping the
/// value releases all of it.
///
/// Memory per process: as [`crate::lu_ft::LuFactors`] (A's local part,
/// the checksum columns and the left-factor sums), held as long as the
/// value lives.
///
/// # Fault tolerance
/// As [`crate::lu_ft::LuFactors`]: a process lost at any time while the
/// value lives is rebuilt at the first point the survivors and its
/// replacement meet after the repair; a replacement gets its copy when
/// its program makes the factorization call again (a hollow copy that the
/// region fills); more losses per process row than the layout tolerates
/// mark the factors lost, and every routine given them refuses them on
/// every process ([`Error::InputLost`]).
///
/// [`Factors::to_matrix`] gives L in the lower triangle.
pub type CholFactors = Factors<CholKind>;

/// The kind of [`CholFactors`] (nothing is kept with them).
pub enum CholKind {}

impl FactorsKind for CholKind {
    type State = ();
    const TO_MATRIX: &'static str = "CholFactors::to_matrix";
    const ARGUMENT: &'static str = "the Cholesky factor";
}

impl Factors<CholKind> {
    /// Collective: factors `a` with [`super::pdpotrf_ft`] and keeps the
    /// result protected. Arguments, errors and the recovery during the
    /// factorization are `pdpotrf_ft`'s; `a` (local input) is taken: its
    /// storage becomes the factors' when it has room for the checksum
    /// columns ([`FtWorkspace::in_place`]), else it is copied once and
    /// dropped.
    ///
    /// # Errors
    /// As [`super::pdpotrf_ft`]: a matrix that is not positive definite
    /// gives [`Error::MinorNotPositiveDefinite`] and no factors.
    ///
    /// # Fault tolerance
    /// See [`CholFactors`]. On a replacement, a call that completed before
    /// it joined returns at once (no communication) with a hollow copy and
    /// an empty report.
    pub fn factor(region: &mut Region, a: DistMatrix, opts: &FtOptions) -> Result<(CholFactors, FtReport)> {
        CholFactors::factor_checking(region, a, opts, Ok(()))
    }

    /// [`CholFactors::factor`] with `also` (local), the caller's checks of
    /// its other arguments, agreed in the factorization's verdict.
    pub(crate) fn factor_checking(
        region: &mut Region,
        mut a: DistMatrix,
        opts: &FtOptions,
        also: Result<()>,
    ) -> Result<(CholFactors, FtReport)> {
        let start = protocol::enter::<CholState, Error>(region, ROUTINE)?;
        if let protocol::Start::Done(state) = start {
            state.outcome()?;
            let factors = CholFactors::again(region, &mut a, (), (opts.layout, super::factor::RELATIONS), ROUTINE)?;
            return Ok((factors, FtReport::default()));
        }
        let run = run_on_extended(region, &mut a, opts, &mut FtWorkspace::new(), start, also)?;
        run.state.outcome()?;
        Ok((CholFactors::register(region, &a, run.ext, run.layout, ()), run.report))
    }
}
