//! Protected LU factors: the result of [`LuFactors::factor`], kept with
//! its checksums after the factorization returns, so that a process lost
//! later — in another call, between calls, in a solve — is rebuilt from
//! them (docs/architecture.md, "Protected results").

use super::factor::{run_on_extended, LuState, ROUTINE};
use crate::abft::{FtOptions, FtReport, FtWorkspace, Holding, ProtectedFactors};
use crate::error::{Error, Result};
use crate::matrix::DistMatrix;
use recovery::protocol;
use recovery::Region;
use std::cell::RefCell;
use std::rc::Rc;

/// This process's part of protected LU factors (the state is the pivots).
pub(crate) type ProtectedLu = ProtectedFactors<Vec<i64>>;

/// LU factors `P·A = L·U` that stay protected after the factorization
/// returns: the value owns the factors, their reverse-neighboring checksums
/// (C_g for U and the right side, D_g for L) and the pivots, and the
/// region rebuilds a lost process's part of them after a repair. The
/// fault-tolerant solves take them. Dropping the value releases all of it
/// (the region forgets it once the program is past the call that made it).
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
pub struct LuFactors {
    shared: Rc<RefCell<ProtectedLu>>,
    n: usize,
    nb: usize,
}

impl LuFactors {
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
        let (n, nb) = (a.n(), a.nb());
        let steps = n.min(a.m()).div_ceil(nb) as u64;
        let start = protocol::enter::<LuState, Error>(region, ROUTINE)?;
        if let protocol::Start::Done(state) = start {
            let zero = state.zero_pivot();
            let shared = ProtectedLu::again(region, &mut a, state.ipiv, steps, ROUTINE)?;
            return Ok((LuFactors { shared, n, nb }, FtReport::default(), zero));
        }
        let run = run_on_extended(region, &mut a, opts, &mut FtWorkspace::new(), start)?;
        let zero = run.state.zero_pivot();
        let shared = ProtectedLu::register(region, run.ext, run.layout, run.state.ipiv, steps);
        Ok((LuFactors { shared, n, nb }, run.report, zero))
    }

    /// The order N (global).
    pub fn n(&self) -> usize {
        self.n
    }

    /// The block size (global).
    pub fn nb(&self) -> usize {
        self.nb
    }

    /// The pivots (global, 0-based, as [`crate::lu::pdgetrf`]'s).
    pub fn ipiv(&self) -> Vec<i64> {
        self.shared.borrow().state.clone()
    }

    /// Local: where this process's copy stands.
    pub fn holding(&self) -> Holding {
        self.shared.borrow().holding
    }

    /// Collective over the grid: a copy of the factors (L below the
    /// diagonal, U on and above) as a plain matrix, for output or a plain
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
        self.shared.borrow().to_matrix(region.grid(), self.n, "LuFactors::to_matrix", "the LU factors")
    }

    /// Collective over the grid: [`Error::InputLost`] of `routine`
    /// (argument `position`), the same on every process, when the factors
    /// are not whole on some process. Mends the region's protected results
    /// first, as [`LuFactors::to_matrix`].
    pub fn check_whole(&self, region: &mut Region, routine: &str, position: u32) -> Result<()> {
        region.mend_protected()?;
        self.shared.borrow().check_whole(region.grid(), routine, position, "the LU factors")
    }

    /// The shared state, for the routines that take the factors (they
    /// borrow it only inside each step: the region's mend borrows it after
    /// a repair).
    pub(crate) fn shared(&self) -> &Rc<RefCell<ProtectedLu>> {
        &self.shared
    }
}

impl LuFactors {
    /// Local: `f` on this process's stored copy, the extended matrix whose
    /// first N global columns are the factors in A's layout (its local
    /// rows and leading local columns are A's local array), the checksum
    /// columns after them. For copying the factors out, or comparing an
    /// array with them, without communicating; see
    /// [`LuFactors::holding`] for whether the copy is whole.
    pub fn with_local_storage<R>(&self, f: impl FnOnce(&DistMatrix) -> R) -> R {
        f(&self.shared.borrow().ext.matrix)
    }
}
