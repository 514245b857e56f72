//! The owner of protected factors, one for each kind ([`crate::lu_ft::LuFactors`],
//! [`crate::qr_ft::QrFactors`]): the shared state the region rebuilds, the
//! shape, and what every kind offers (where the copy stands, the plain
//! matrix, the whole-everywhere check, the local storage).

use super::extended::Extended;
use super::protected::{Holding, ProtectedFactors};
use crate::error::Result;
use crate::matrix::DistMatrix;
use checksum::{ChecksumLayout, LayoutKind};
use recovery::Region;
use std::cell::RefCell;
use std::rc::Rc;

/// One kind of protected factors: the state kept with them and how errors
/// name them.
pub trait FactorsKind {
    /// The state (global) kept with the factors: LU's pivots, QR's tau.
    type State: 'static;
    /// The routine name of [`Factors::to_matrix`] in its errors.
    const TO_MATRIX: &'static str;
    /// The factors as an argument in errors ("the LU factors").
    const ARGUMENT: &'static str;
}

/// Factors of kind `K` that stay protected after the factorization
/// returns (see [`crate::lu_ft::LuFactors`] and [`crate::qr_ft::QrFactors`],
/// the kinds' names and constructors). Dropping the value releases them.
///
/// # Fault tolerance
/// A later fault-tolerant call that shrinks the grid (recovery policy
/// `shrink`, or `auto` once a spawn is refused) moves the factors onto
/// the new grid with its own state, before it goes on: they are then
/// distributed there ([`Factors::to_matrix`] gives them on
/// `region.grid()`), their checksums encoded for it. Factors not whole
/// on every process at that moment are lost on every one.
pub struct Factors<K: FactorsKind> {
    shared: Rc<RefCell<ProtectedFactors<K::State>>>,
    m: usize,
    n: usize,
    nb: usize,
}

/// The number of steps (global) of a factorization of an `m`×`n` matrix in
/// blocks of `nb`.
fn steps(m: usize, n: usize, nb: usize) -> u64 {
    n.min(m).div_ceil(nb) as u64
}

impl<K: FactorsKind> Factors<K> {
    /// The factors a fault-tolerant call just made of `a` (its shape,
    /// global; its storage may be the factors' now), registered with the
    /// region under that call.
    pub(crate) fn register(
        region: &mut Region,
        a: &DistMatrix,
        ext: Extended,
        layout: ChecksumLayout,
        state: K::State,
    ) -> Self {
        let (m, n, nb) = (a.m(), a.n(), a.nb());
        let shared = ProtectedFactors::register(region, ext, layout, state, steps(m, n, nb));
        Factors { shared, m, n, nb }
    }

    /// For a call that completed before, with its replicated `state` and
    /// its checksum `layout`: the factors as [`ProtectedFactors::again`] finds or makes them over `a`.
    ///
    /// # Errors
    /// As [`ProtectedFactors::again`].
    pub(crate) fn again(
        region: &mut Region,
        a: &mut DistMatrix,
        state: K::State,
        (layout, relations): (LayoutKind, super::Relations),
        routine: &str,
    ) -> Result<Self> {
        let (m, n, nb) = (a.m(), a.n(), a.nb());
        let shared = ProtectedFactors::again(region, a, state, steps(m, n, nb), (layout, relations), routine)?;
        Ok(Factors { shared, m, n, nb })
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

    /// Local: where this process's copy stands.
    pub fn holding(&self) -> Holding {
        self.shared.borrow().holding
    }

    /// Collective over the grid: a copy of the factors (as the plain
    /// factorization leaves them in A) as a plain matrix, for output or a
    /// plain routine. Local memory: one more A.
    ///
    /// # Errors
    /// [`crate::Error::InputLost`] on every process when the factors are
    /// not whole on some process; a process failure (repair, and call
    /// again).
    ///
    /// # Fault tolerance
    /// A meeting point: after a repair, the region first rebuilds the
    /// replacements' copies of its protected results
    /// ([`Region::mend_protected`]).
    pub fn to_matrix(&self, region: &mut Region) -> Result<DistMatrix> {
        region.mend_protected()?;
        self.shared.borrow().to_matrix(region.grid(), self.n, K::TO_MATRIX, K::ARGUMENT)
    }

    /// Collective over the grid: [`crate::Error::InputLost`] of `routine`
    /// (argument `position`), the same on every process, when the factors
    /// are not whole on some process. Mends the region's protected results
    /// first, as [`Factors::to_matrix`].
    pub fn check_whole(&self, region: &mut Region, routine: &str, position: u32) -> Result<()> {
        region.mend_protected()?;
        self.shared.borrow().check_whole(region.grid(), routine, position, K::ARGUMENT)
    }

    /// Local: `f` on this process's stored copy, the extended matrix whose
    /// first N global columns are the factors in A's layout (its local
    /// rows and leading local columns are A's local array), the checksum
    /// columns after them. For copying the factors out, or comparing an
    /// array with them, without communicating; see [`Factors::holding`]
    /// for whether the copy is whole.
    pub fn with_local_storage<R>(&self, f: impl FnOnce(&DistMatrix) -> R) -> R {
        f(&self.shared.borrow().ext.matrix)
    }

    /// Local: the bytes this value holds on this process, besides storage
    /// the program lent (see [`crate::storage::LocalStorage::lent`]): the
    /// extended matrix when its storage is ftla's (room included), and
    /// the left-factor sums (the replicated state aside).
    pub fn held_bytes(&self) -> u64 {
        let p = self.shared.borrow();
        let matrix = p.ext.matrix.storage();
        let owned = if matrix.is_owned() { matrix.len() } else { 0 };
        let sums: usize = p.ext.left_sums.iter().flatten().map(Vec::len).sum();
        ((owned + sums) * std::mem::size_of::<f64>()) as u64
    }

    /// Drops the factors for good: the region's later mends no longer
    /// rebuild them (it forgets them at its next call), so their storage
    /// is free for other use at once — for factors in storage the program
    /// lent, which it may refill or free after this. Call it at the same
    /// point of the program on every process of the grid: the mends
    /// agree on it, and skip them when every process forgot them, or mark
    /// them lost on every process when some did not. Storage the program
    /// lent goes back to it here: nothing of ftla's writes into it after
    /// this, and a re-run of the region's body that makes the call again
    /// does not take these factors back (it gets lost ones, refused).
    pub fn forget(self) {
        self.shared.borrow_mut().forget();
    }

    /// The shared state, for the routines that take the factors (they
    /// borrow it only inside each step: the region's mend borrows it after
    /// a repair).
    pub(crate) fn shared(&self) -> &Rc<RefCell<ProtectedFactors<K::State>>> {
        &self.shared
    }

    /// The state kept with the factors (global).
    pub(crate) fn state(&self) -> std::cell::Ref<'_, K::State> {
        std::cell::Ref::map(self.shared.borrow(), |p| &p.state)
    }
}
