//! The factors ftla keeps protected across C calls: what `pdgetrf_ft_`,
//! `pdgeqrf_ft_` and `pdpotrf_ft_` made, keyed by the array A and its descriptor as the
//! program passed them, until `ftla_release_`, a new factorization into the
//! same array, or the grid's exit.
//!
//! Each entry owns the Rust library's protected value ([`LuFactors`],
//! [`QrFactors`]): ftla's own copy of the factors with their checksums
//! and the replicated pivots or tau, which the region rebuilds on a
//! replacement after a repair (docs/architecture.md, "Protected results").
//! The caller's A is a copy of them: the solves read the kept copy, and
//! refuse an A (or IPIV, TAU) that no longer equals it. On a replacement,
//! a factorization that completed before it joined keeps a *hollow* copy;
//! once the region's mend has filled it, [`KeptFactors::settle`] copies the
//! factors into the caller's A again.
//!
//! An array the program declared in place (`ftla_in_place_`, see
//! [`Declared`]) is the factors' storage itself: nothing is copied, the
//! solves compute on A, and an A changed since is found by a fingerprint
//! of its local array taken when the factorization, or the mend of a
//! replacement's hollow copy, left it ([`Place::InPlace`]).

use crate::call::set_info;
use crate::fingerprint::fingerprint;
use crate::lost::{Access, ArrayArg, ArrayKey, LostArrays};
use crate::matrix::CheckedMatrix;
use crate::process;
use scalapack_ft::chol_ft::CholFactors;
use scalapack_ft::lu_ft::{Holding, LuFactors};
use scalapack_ft::qr_ft::QrFactors;
use scalapack_ft::{DistMatrix, Grid};
use std::os::raw::c_int;

/// Kept factors of one of the kinds.
pub(crate) enum Factors {
    /// From `pdgetrf_ft_`.
    Lu(LuFactors),
    /// From `pdgeqrf_ft_`.
    Qr(QrFactors),
    /// From `pdpotrf_ft_`.
    Chol(CholFactors),
}

impl Factors {
    /// Local: where this process's copy stands.
    pub fn holding(&self) -> Holding {
        match self {
            Factors::Lu(f) => f.holding(),
            Factors::Qr(f) => f.holding(),
            Factors::Chol(f) => f.holding(),
        }
    }

    /// Local: `f` on this process's stored copy (the extended matrix whose
    /// leading local columns are the factors).
    pub fn with_local_storage<R>(&self, f: impl FnOnce(&DistMatrix) -> R) -> R {
        match self {
            Factors::Lu(l) => l.with_local_storage(f),
            Factors::Qr(q) => q.with_local_storage(f),
            Factors::Chol(c) => c.with_local_storage(f),
        }
    }

    /// Local: the bytes ftla holds for them on this process (the storage
    /// the program lent aside): the extended matrix when ftla's, the
    /// left-factor sums, the replicated pivots or tau.
    pub fn held_bytes(&self) -> u64 {
        let state = match self {
            Factors::Lu(f) => f.n().min(f.m()) * std::mem::size_of::<i64>(),
            Factors::Qr(f) => f.n().min(f.m()) * std::mem::size_of::<f64>(),
            Factors::Chol(_) => 0,
        };
        let held = match self {
            Factors::Lu(f) => f.held_bytes(),
            Factors::Qr(f) => f.held_bytes(),
            Factors::Chol(f) => f.held_bytes(),
        };
        held + state as u64
    }

    /// Drops them for good (in place: their storage is the program's
    /// again; see `Factors::forget`).
    fn forget(self) {
        match self {
            Factors::Lu(f) => f.forget(),
            Factors::Qr(f) => f.forget(),
            Factors::Chol(f) => f.forget(),
        }
    }

    /// The C routine that made them, for messages.
    pub fn maker(&self) -> &'static str {
        match self {
            Factors::Lu(_) => "pdgetrf_ft_",
            Factors::Qr(_) => "pdgeqrf_ft_",
            Factors::Chol(_) => "pdpotrf_ft_",
        }
    }
}

/// Where kept factors live on this process.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Place {
    /// In ftla's own storage; the caller's A receives a copy.
    Copy,
    /// In the caller's A itself (declared with `ftla_in_place_`).
    /// `fingerprint`: of the extended local array (the factors and their
    /// checksum columns) as the factorization or the mend of a hollow copy
    /// left it; `None` while this process's copy is hollow.
    InPlace { fingerprint: Option<u64> },
}

/// One kept factorization.
pub(crate) struct Kept {
    pub key: ArrayKey,
    /// A as the factorization checked it (its descriptor and the factored
    /// submatrix's size), for copying the factors into the caller's array.
    pub a: CheckedMatrix,
    pub factors: Factors,
    pub place: Place,
    /// This process's copy was hollow when kept (a replacement's re-run of
    /// a factorization that completed before it joined): the caller's A
    /// does not hold the factors until [`KeptFactors::settle`] copies them
    /// (in place: until the mend has written them, when it takes their
    /// fingerprint).
    awaiting_copy: bool,
}

impl Kept {
    /// Local: whether the caller's A (`data`) holds the factors kept here:
    /// compared bit for bit with ftla's copy, or (in place) by the
    /// fingerprint of its local array; one pass over it. `true` where this
    /// process's copy is not whole (nothing to compare with: the solve
    /// refuses such factors on every process by itself).
    pub fn matches(&self, grid: &Grid, data: *const f64) -> bool {
        if self.factors.holding() != Holding::Whole {
            return true;
        }
        match self.place {
            Place::Copy => self.factors.with_local_storage(|stored| self.a.holds_leading(grid, stored, data)),
            Place::InPlace { fingerprint: Some(f) } => {
                self.factors.with_local_storage(|stored| fingerprint(stored.local()) == f)
            }
            // (Whole and not yet settled: every check follows a settle.)
            Place::InPlace { fingerprint: None } => true,
        }
    }
}

/// An array the program declared as storage for factors kept in place
/// (`ftla_in_place_`): its key and the doubles its local array holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Declared {
    pub key: ArrayKey,
    pub len: usize,
}

/// The factorizations kept in this process (local; the same entries on
/// every process of the grid, as every process makes the same calls), and
/// the arrays declared in place.
#[derive(Default)]
pub(crate) struct KeptFactors {
    entries: Vec<Kept>,
    declared: Vec<Declared>,
}

impl KeptFactors {
    /// Keeps `factors`, made from the caller's A (`key`, checked as `a`)
    /// in `place`, replacing what was kept for that array. In place, a
    /// whole copy's fingerprint is taken now.
    pub fn keep(&mut self, key: ArrayKey, a: CheckedMatrix, factors: Factors, place: Place) {
        self.release(&key);
        let awaiting_copy = factors.holding() == Holding::Hollow;
        let place = match place {
            Place::Copy => Place::Copy,
            Place::InPlace { .. } => Place::InPlace {
                fingerprint: (factors.holding() == Holding::Whole)
                    .then(|| factors.with_local_storage(|stored| fingerprint(stored.local()))),
            },
        };
        self.entries.push(Kept { key, a, factors, place, awaiting_copy });
    }

    /// Drops what is kept for the array `key`; whether there was something.
    /// Factors in the program's storage are forgotten for good (the
    /// region's mends no longer write there).
    pub fn release(&mut self, key: &ArrayKey) -> bool {
        let Some(at) = self.entries.iter().position(|e| e.key == *key) else {
            return false;
        };
        let e = self.entries.remove(at);
        if matches!(e.place, Place::InPlace { .. }) {
            e.factors.forget();
        }
        true
    }

    /// Drops what is kept for the arrays a call overwrites (a new
    /// factorization of A, a solve's B): their content is the call's.
    pub fn release_overwritten(&mut self, arrays: &[ArrayArg]) {
        for a in arrays.iter().filter(|a| a.access == Access::Update) {
            if let Some(k) = &a.key {
                self.release(k);
            }
        }
    }

    /// Records that the array `key` holds `len` doubles for factors kept
    /// in place (replacing an earlier declaration of it).
    pub fn declare(&mut self, key: ArrayKey, len: usize) {
        self.declared.retain(|d| d.key != key);
        self.declared.push(Declared { key, len });
    }

    /// The declaration of the array `key`, if any.
    pub fn declared(&self, key: &ArrayKey) -> Option<Declared> {
        self.declared.iter().find(|d| d.key == *key).copied()
    }

    /// Drops the declaration of the array `key`; whether there was one.
    pub fn undeclare(&mut self, key: &ArrayKey) -> bool {
        let before = self.declared.len();
        self.declared.retain(|d| d.key != *key);
        self.declared.len() < before
    }

    /// Local: the bytes ftla holds on this process for every kept
    /// factorization (see [`Factors::held_bytes`]).
    pub fn held_bytes(&self) -> u64 {
        self.entries.iter().map(|e| e.factors.held_bytes()).sum()
    }

    /// What is kept for the array `key`.
    pub fn find(&self, key: &ArrayKey) -> Option<&Kept> {
        self.entries.iter().find(|e| e.key == *key)
    }

    /// Local, after the region's mend (see `call::meet`): a copy that was
    /// hollow and is now whole has its factors copied into the caller's A
    /// (the replacement's A holds them again; in place, the mend wrote
    /// them there, and their fingerprint is taken now); one the region
    /// could not rebuild marks A lost in `lost`, so that every routine
    /// refuses it. Returns how many arrays were written.
    pub fn settle(&mut self, grid: &Grid, lost: &mut LostArrays) -> usize {
        let mut written = 0;
        for e in self.entries.iter_mut().filter(|e| e.awaiting_copy) {
            match e.factors.holding() {
                Holding::Hollow => {}
                Holding::Whole => {
                    match &mut e.place {
                        Place::Copy => {
                            let out = e.key.address() as *mut f64;
                            e.factors.with_local_storage(|stored| e.a.export_leading(grid, stored, out));
                        }
                        Place::InPlace { fingerprint: print } => {
                            *print = Some(e.factors.with_local_storage(|stored| fingerprint(stored.local())));
                        }
                    }
                    e.awaiting_copy = false;
                    written += 1;
                }
                Holding::Lost => {
                    lost.lose(e.key);
                    e.awaiting_copy = false;
                }
            }
        }
        written
    }
}

/// Releases the factors ftla keeps for the array A (local; no
/// communication): those of the last `pdgetrf_ft_` or `pdgeqrf_ft_` given
/// this `a` with this descriptor, and A's declaration in place
/// (`ftla_in_place_`). ftla's copy of the factors and their checksums is
/// freed (in place: A is the program's again, its leading part holding
/// the factors, the rest the checksums); the caller's A keeps its
/// content, but the fault-tolerant solves no longer take it
/// (`pdgetrs_ft_`, `pdormqr_ft_` refuse it: factor A again first).
///
/// * `a` (local input): the local array passed to the factorization.
/// * `desca` (global input): the descriptor passed with it.
/// * `info` (local output): 0 when factors were kept for A, or A was
///   declared in place, and are released now; 1 when neither (nothing
///   done); may be NULL.
///
/// Call it before freeing A or reusing its storage for other data (on a
/// replacement, ftla writes the factors into A when it meets the
/// survivors), on every process of the grid at the same point of the
/// program (between the same two ftla calls), as the factorization was: the
/// processes compare their kept results when a replacement joins, and
/// results kept on some processes only are refused everywhere. Kept
/// factors are also released by a new factorization into the same array
/// (any routine that overwrites A, plain or fault tolerant; a declaration
/// in place stays until this call) and by `Cftla_gridexit`/`Cftla_exit`.
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn ftla_release_(a: *const f64, desca: *const c_int, info: *mut c_int) {
    let released = ArrayKey::of_kept(a, desca).is_some_and(|key| {
        let mut guard = process::lock();
        guard.as_mut().and_then(|p| p.context.as_mut()).is_some_and(|c| {
            let factors = c.kept.release(&key);
            c.kept.undeclare(&key) || factors
        })
    });
    set_info(info, if released { 0 } else { 1 });
}
