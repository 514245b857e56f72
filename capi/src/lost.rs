//! The record of lost outputs: the arrays whose part on this process was
//! lost with a failed process, so that no routine computes with them.
//!
//! A replacement process runs the program from the top; the calls that
//! completed before it joined return `FTLA_INFO_RESULT_LOST` in it, and its
//! part of their outputs is whatever the program had put there. ftla knows
//! those arrays as the program passed them — the local array's address and
//! the descriptor's nine entries (for IPIV and TAU, which have none, A's
//! descriptor) — and every routine refuses such an array among those it
//! reads without overwriting them with the agreed `FTLA_INFO_INPUT_LOST`
//! (see `call::run`). An array a routine overwrites with its results (a
//! factorization's A, a solve's B) is the program's data for that call: a
//! program that reuses its storage fills it again before the call, which
//! ftla cannot tell from a lost output; the call clears its mark.

use scalapack_ft::descriptor::DLEN;
use scalapack_ft::{Error, Grid, Result};
use std::collections::HashSet;
use std::os::raw::c_int;

/// An array as the program passed it: its local array's address and the
/// descriptor it came with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ArrayKey {
    address: usize,
    desc: [c_int; DLEN],
}

impl ArrayKey {
    /// The key of the local array `data` passed with the descriptor `desc`;
    /// `None` for a null pointer (an argument error, or no part here).
    pub fn new<T>(data: *const T, desc: *const c_int) -> Option<ArrayKey> {
        if data.is_null() || desc.is_null() {
            return None;
        }
        let mut raw = [0; DLEN];
        // SAFETY: a descriptor is 9 ints (null checked).
        unsafe { std::ptr::copy_nonoverlapping(desc, raw.as_mut_ptr(), DLEN) };
        Some(ArrayKey { address: data as usize, desc: raw })
    }

    /// The key under which ftla keeps the factors of the array `data`
    /// passed with `desc` (see `crate::kept`): as [`ArrayKey::new`], and
    /// also for a null `data` on a process that holds no part of the array
    /// (ScaLAPACK lets it pass one), so that every process keeps them.
    /// `None` for a null descriptor.
    pub fn of_kept<T>(data: *const T, desc: *const c_int) -> Option<ArrayKey> {
        if data.is_null() && !desc.is_null() {
            let mut raw = [0; DLEN];
            // SAFETY: a descriptor is 9 ints (null checked).
            unsafe { std::ptr::copy_nonoverlapping(desc, raw.as_mut_ptr(), DLEN) };
            return Some(ArrayKey { address: 0, desc: raw });
        }
        ArrayKey::new(data, desc)
    }

    /// The local array's address.
    pub fn address(&self) -> usize {
        self.address
    }
}

/// How a routine uses an array argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Read only (the factors given to a solve, its pivots).
    Read,
    /// Read, then overwritten with this process's part of the results (a
    /// factorization's A, a solve's B, CG's X): the program's data for the
    /// call, not checked.
    Update,
    /// Written only, with results a fault-tolerant routine keeps
    /// replicated (IPIV, TAU): a replacement fills them in from the status
    /// log, while a plain routine leaves them as they were.
    WriteReplicated,
}

/// An array argument of one call.
#[derive(Clone)]
pub(crate) struct ArrayArg {
    /// Its name in messages ("A", "IPIV").
    pub name: &'static str,
    /// Its position in the routine's argument list.
    pub position: u32,
    /// `None`: a null pointer (nothing to record or check).
    pub key: Option<ArrayKey>,
    pub access: Access,
}

impl ArrayArg {
    pub fn new<T>(name: &'static str, position: u32, data: *const T, desc: *const c_int, access: Access) -> ArrayArg {
        ArrayArg { name, position, key: ArrayKey::new(data, desc), access }
    }
}

/// The arrays whose part on this process was lost (empty but on a
/// replacement). Local; it lives as long as the grid.
#[derive(Default)]
pub(crate) struct LostArrays {
    keys: HashSet<ArrayKey>,
}

impl LostArrays {
    /// Local: the error of `routine` when one of the arrays it only reads
    /// is lost here (the first in the argument list).
    pub fn check(&self, routine: &str, grid: &Grid, arrays: &[ArrayArg]) -> Result<()> {
        let lost =
            arrays.iter().filter(|a| a.access == Access::Read).find(|a| a.key.is_some_and(|k| self.keys.contains(&k)));
        match lost {
            None => Ok(()),
            Some(a) => Err(Error::InputLost {
                routine: routine.into(),
                position: a.position,
                argument: a.name.into(),
                rank: grid.rank(),
            }),
        }
    }

    /// A call that returned `FTLA_INFO_RESULT_LOST`: its outputs are lost
    /// here, but for those a fault-tolerant routine (`replicated_filled`)
    /// filled in.
    pub fn lose_outputs(&mut self, arrays: &[ArrayArg], replicated_filled: bool) {
        for a in arrays {
            let lost = match a.access {
                Access::Read => false,
                Access::Update => true,
                Access::WriteReplicated => !replicated_filled,
            };
            if let (true, Some(k)) = (lost, a.key) {
                self.keys.insert(k);
            }
        }
    }

    /// An array whose part here could not be rebuilt (kept factors the
    /// region marked lost).
    pub fn lose(&mut self, key: ArrayKey) {
        self.keys.insert(key);
    }

    /// A call that wrote its outputs here: they hold its results.
    pub fn outputs_written(&mut self, arrays: &[ArrayArg]) {
        for a in arrays.iter().filter(|a| a.access != Access::Read) {
            if let Some(k) = a.key {
                self.keys.remove(&k);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(m: c_int) -> [c_int; DLEN] {
        [1, 0, m, m, 64, 64, 0, 0, m]
    }

    #[test]
    fn lost_outputs_are_remembered_until_written_again() {
        let a = [0.0f64; 4];
        let ipiv: [c_int; 2] = [0; 2];
        let (d, other) = (desc(2), desc(3));
        let args = |access| {
            [
                ArrayArg::new("A", 3, a.as_ptr(), d.as_ptr(), access),
                ArrayArg::new("IPIV", 7, ipiv.as_ptr(), d.as_ptr(), Access::WriteReplicated),
            ]
        };
        let mut lost = LostArrays::default();
        lost.lose_outputs(&args(Access::Update), true);
        // A fault-tolerant routine filled IPIV in: only A is lost.
        assert_eq!(lost.keys.len(), 1);
        assert!(lost.keys.contains(&ArrayKey::new(a.as_ptr(), d.as_ptr()).unwrap()));
        // The same address under another descriptor is another array.
        assert!(!lost.keys.contains(&ArrayKey::new(a.as_ptr(), other.as_ptr()).unwrap()));
        lost.outputs_written(&args(Access::Update));
        assert!(lost.keys.is_empty());
        // A plain routine fills nothing in.
        lost.lose_outputs(&args(Access::Update), false);
        assert_eq!(lost.keys.len(), 2);
        // A solve only reads A and IPIV: they stay lost.
        let solve = [
            ArrayArg::new("A", 4, a.as_ptr(), d.as_ptr(), Access::Read),
            ArrayArg::new("IPIV", 8, ipiv.as_ptr(), d.as_ptr(), Access::Read),
        ];
        lost.outputs_written(&solve);
        assert_eq!(lost.keys.len(), 2);
        lost.outputs_written(&args(Access::Update));
        assert!(lost.keys.is_empty());
        // Null pointers have no key.
        assert!(ArrayKey::new(std::ptr::null::<f64>(), d.as_ptr()).is_none());
    }
}
