//! The local storage of a [`crate::DistMatrix`]: ftla's own vector, or an
//! array the program lent (a C caller's local array, worked in place).

use crate::error::{Error, Result};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// This process's storage of a distributed matrix: the local array, and
/// any room past it. Either owned (a `Vec<f64>` the matrix frees) or the
/// program's (an array it lent for as long as the matrix lives; never
/// freed nor reallocated here). Reads and writes go through `[f64]`
/// (`Deref`). A clone is an owned copy.
pub struct LocalStorage {
    kind: Kind,
}

enum Kind {
    Owned(Vec<f64>),
    /// `len` elements at `ptr`, the program's.
    Lent {
        ptr: NonNull<f64>,
        len: usize,
    },
}

// SAFETY: a lent array is, by `LocalStorage::lent`'s contract, accessed
// only through this value while it lives (like a `&mut [f64]`, which is
// Send and Sync).
unsafe impl Send for LocalStorage {}
// SAFETY: as above: shared access only reads.
unsafe impl Sync for LocalStorage {}

impl LocalStorage {
    /// The program's array of `len` doubles at `ptr`, worked in place (no
    /// copy). A null `ptr` is taken as an empty array.
    ///
    /// # Safety
    /// `ptr` is valid for reads and writes of `len` f64 for as long as the
    /// returned value — or any matrix or storage it moves into — lives,
    /// and nothing else reads or writes those elements meanwhile (the
    /// program leaves them alone while ftla works in them). Protected
    /// factors made in lent storage live on in their region's registry
    /// after the program drops them, until the region's next call (a
    /// re-run of its body takes them back), and a repair meanwhile writes
    /// into them: release such factors with `Factors::forget`, which gives
    /// the storage back at once, before refilling or freeing the array.
    pub unsafe fn lent(ptr: *mut f64, len: usize) -> LocalStorage {
        match NonNull::new(ptr) {
            Some(ptr) => LocalStorage { kind: Kind::Lent { ptr, len } },
            None => LocalStorage::default(),
        }
    }

    /// Whether the storage is ftla's own (else the program lent it).
    pub fn is_owned(&self) -> bool {
        matches!(self.kind, Kind::Owned(_))
    }

    /// Grows the storage to at least `len` elements, its content kept and
    /// the new tail zeroed (its pages touched now), under the rules of
    /// [`crate::memory::zeroed`]. Lent storage cannot grow: asking it to is
    /// [`Error::Storage`] (nothing changes), never a reallocation.
    pub fn grow_zeroed(&mut self, len: usize, routine: &str, what: &str) -> Result<()> {
        match &mut self.kind {
            Kind::Owned(v) => crate::memory::grow_zeroed(v, len, routine, what),
            Kind::Lent { len: have, .. } if *have >= len => Ok(()),
            Kind::Lent { len: have, .. } => {
                Err(Error::Storage { routine: routine.into(), what: what.into(), len: *have, need: len })
            }
        }
    }
}

impl Default for LocalStorage {
    /// Empty owned storage.
    fn default() -> LocalStorage {
        LocalStorage { kind: Kind::Owned(Vec::new()) }
    }
}

impl From<Vec<f64>> for LocalStorage {
    fn from(v: Vec<f64>) -> LocalStorage {
        LocalStorage { kind: Kind::Owned(v) }
    }
}

impl Clone for LocalStorage {
    /// An owned copy of the elements.
    fn clone(&self) -> LocalStorage {
        self.to_vec().into()
    }
}

impl Deref for LocalStorage {
    type Target = [f64];
    fn deref(&self) -> &[f64] {
        match &self.kind {
            Kind::Owned(v) => v,
            // SAFETY: valid for `len` elements while `self` lives (`lent`).
            Kind::Lent { ptr, len } => unsafe { std::slice::from_raw_parts(ptr.as_ptr(), *len) },
        }
    }
}

impl DerefMut for LocalStorage {
    fn deref_mut(&mut self) -> &mut [f64] {
        match &mut self.kind {
            Kind::Owned(v) => v,
            // SAFETY: as in `deref`, and accessed only through `self`.
            Kind::Lent { ptr, len } => unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), *len) },
        }
    }
}

impl std::fmt::Debug for LocalStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let whose = if self.is_owned() { "owned" } else { "lent" };
        write!(f, "LocalStorage({whose}, {} elements)", self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lent_storage_is_the_programs_array_and_never_grows() {
        let mut array = vec![1.0, 2.0, 3.0];
        // SAFETY: `array` outlives `s` and is not touched while `s` lives.
        let mut s = unsafe { LocalStorage::lent(array.as_mut_ptr(), 3) };
        assert!(!s.is_owned());
        s[1] = 5.0;
        s.grow_zeroed(3, "test", "x").unwrap();
        match s.grow_zeroed(4, "test", "x") {
            Err(Error::Storage { len: 3, need: 4, .. }) => {}
            other => panic!("{other:?}"),
        }
        let copy = s.clone();
        assert!(copy.is_owned());
        assert_eq!(&copy[..], &[1.0, 5.0, 3.0]);
        drop(s);
        assert_eq!(array, [1.0, 5.0, 3.0]);
    }

    #[test]
    fn owned_storage_grows() {
        let mut s = LocalStorage::from(vec![1.0]);
        s.grow_zeroed(3, "test", "x").unwrap();
        assert_eq!(&s[..], &[1.0, 0.0, 0.0]);
        // SAFETY: a null pointer is an empty array.
        assert!(unsafe { LocalStorage::lent(std::ptr::null_mut(), 0) }.is_owned());
    }
}
