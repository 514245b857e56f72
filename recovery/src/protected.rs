//! Results that outlive the call that made them (docs/architecture.md,
//! "Protected results").
//!
//! A fault-tolerant routine can hand back a *protected result*: a value
//! that keeps the checksums of its final commit point (for a
//! factorization: the factors with C_g, D_g and the replicated pivots or
//! tau) until the application drops it. The region keeps a registry of the
//! live ones, keyed by the place in the status log of the call that made
//! each. After a repair, whatever call or gap between calls it happened
//! in, the first collective that survivors and replacements meet in
//! (`Registry::mend`, run by the step-commit protocol after a repair and
//! before every new call's verdict) rebuilds the replacements' blocks of
//! every live result from its checksums. A replacement's own copy of such
//! a result is created *hollow* when its program makes the call again (the
//! call completed before it joined) and registered under the same key, so
//! that the mend fills it.
//!
//! Keys are the same on every process because every process makes the
//! same calls in the same order (a replacement runs the program from the
//! top). The mend checks that: processes that disagree on the live results
//! mark them all lost rather than rebuild the wrong one, and a result that
//! more losses than its checksums tolerate hit is marked lost — on every
//! process, a later replacement's copy included. A lost result is refused
//! by every routine it is given to, on every process.

use blacs_ft::{Error, Grid, Scope, ShrunkFrom};
use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;

/// A result a region keeps alive and whole across repairs.
pub trait ProtectedResult: 'static {
    /// Collective over the grid: rebuilds the blocks of the `lost` grid
    /// ranks (replacements, whose blocks are hollow) from the survivors'
    /// blocks and the checksums. `lost` is the same on every process and
    /// within what the checksums tolerate
    /// ([`ProtectedResult::tolerated_losses`] per process row).
    fn rebuild(&mut self, grid: &Grid, lost: &[i32]) -> Result<(), Error>;
    /// Lost processes per process row its checksums rebuild (global; one
    /// by default): a repair that loses more in one row marks it lost.
    fn tolerated_losses(&self) -> usize {
        1
    }
    /// Local: the result cannot be rebuilt (more losses than its checksums
    /// tolerate, or processes that disagree on it): every later use must
    /// refuse it.
    fn mark_lost(&mut self);
    /// Local: whether [`ProtectedResult::mark_lost`] was called on this
    /// copy.
    fn is_lost(&self) -> bool;
    /// Local: whether the owner let this copy go for good (its storage
    /// may be the program's again): the mend never writes into it. The
    /// processes agree on it in the mend: forgotten on every process, the
    /// result is skipped everywhere; on some only, it is lost everywhere
    /// (none takes part in a collective rebuild that others skip).
    fn is_forgotten(&self) -> bool {
        false
    }
    /// Whether [`ProtectedResult::move_to_shrunk_grid`] can move it
    /// (global; no by default): a region keeping a result that cannot
    /// move does not shrink.
    fn moves(&self) -> bool {
        false
    }
    /// Collective over the processes that take part in a shrink's move
    /// (as [`crate::protocol::Algorithm::move_to_shrunk_grid`], with the
    /// same `holds_state`), before the call's own state moves: the
    /// result's blocks onto the grid the shrink left, or, where it is not
    /// whole on every such process (lost, forgotten), lost on every one.
    /// The state before is kept until [`ProtectedResult::settle_move`].
    /// By default unrecoverable (see [`ProtectedResult::moves`]).
    fn move_to_shrunk_grid(&mut self, _grid: &Grid, from: &ShrunkFrom, _holds_state: bool) -> Result<(), Error> {
        Err(Error::Unrecoverable { reason: format!("a protected result cannot move off the {} grid", from.shape) })
    }
    /// After the move, the new grid's agreement: `kept` false takes the
    /// result back to the grid before, as if nothing had moved.
    fn settle_move(&mut self, _kept: bool) {}
}

/// What the mend does with one live result, from what the processes
/// agreed on it (the same on every process).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    /// Rebuild the lost ranks' blocks (collective).
    Rebuild,
    /// Forgotten on every process: nothing to do.
    Skip,
    /// Lost somewhere, beyond what the checksums tolerate, or forgotten
    /// on some processes only: lost on every process.
    Lose,
}

impl Fate {
    /// From the agreed flags: lost on some process, forgotten on some
    /// process, kept (not forgotten) on some process.
    fn of(lost_somewhere: bool, forgotten_somewhere: bool, kept_somewhere: bool) -> Fate {
        if forgotten_somewhere && !kept_somewhere {
            Fate::Skip
        } else if lost_somewhere || forgotten_somewhere {
            Fate::Lose
        } else {
            Fate::Rebuild
        }
    }
}

/// One live result: the same value seen as what the mend rebuilds and as
/// what its routine takes back ([`Registry::get`]).
struct Entry {
    /// The place in the status log of the call that made it.
    key: usize,
    result: Rc<RefCell<dyn ProtectedResult>>,
    any: Rc<dyn Any>,
}

/// The live protected results of a region, and whether some process's
/// copies may be hollow.
#[derive(Default)]
pub(crate) struct Registry {
    entries: Vec<Entry>,
    /// A repair happened (on a survivor) or this process is a replacement,
    /// and the results were not mended since: the same on every process,
    /// since every process of the grid takes part in every repair.
    pending: bool,
    /// This process joined as a replacement and its copies were not
    /// rebuilt yet.
    hollow: bool,
}

impl Registry {
    /// A replacement's registry: its copies, when its program creates them,
    /// are hollow until the first mend.
    pub fn joining() -> Registry {
        Registry { entries: Vec::new(), pending: true, hollow: true }
    }

    /// A repair happened: mend at the next meeting point.
    pub fn repaired(&mut self) {
        self.pending = true;
    }

    /// Whether [`Registry::mend`] has work (the same on every process).
    pub fn is_pending(&self) -> bool {
        self.pending
    }

    /// Registers `result` under `key` (replacing what was there).
    pub fn insert<T: ProtectedResult>(&mut self, key: usize, result: Rc<RefCell<T>>) {
        self.entries.retain(|e| e.key != key);
        let any: Rc<dyn Any> = result.clone();
        let at = self.entries.partition_point(|e| e.key < key);
        self.entries.insert(at, Entry { key, result, any });
    }

    /// The result registered under `key`, if it is a `T`.
    pub fn get<T: ProtectedResult>(&self, key: usize) -> Option<Rc<RefCell<T>>> {
        let e = self.entries.iter().find(|e| e.key == key)?;
        e.any.clone().downcast::<RefCell<T>>().ok()
    }

    /// Forgets the results made by calls before `position` that nothing
    /// outside the registry holds any more: the program dropped them and
    /// has gone past the call that made them (a re-run of the region's body
    /// from the top takes them back before it gets there, so they stay
    /// until then).
    pub fn prune_before(&mut self, position: usize) {
        // (Two references are the registry's own.)
        self.entries.retain(|e| e.key >= position || Rc::strong_count(&e.result) > 2);
    }

    /// How many results are live.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Local: every live result lost (see [`ProtectedResult::mark_lost`]).
    pub fn lose_all(&mut self) {
        for e in &self.entries {
            e.result.borrow_mut().mark_lost();
        }
    }

    /// Whether every live result can move onto a smaller grid.
    pub fn all_move(&self) -> bool {
        self.entries.iter().all(|e| e.result.borrow().moves())
    }

    /// The most losses per process row any live result's checksums
    /// rebuild (0 with none).
    pub fn most_tolerated(&self) -> usize {
        self.entries.iter().map(|e| e.result.borrow().tolerated_losses()).max().unwrap_or(0)
    }

    /// Whether this process's copies may be hollow (a replacement not
    /// mended since it joined).
    pub fn is_hollow(&self) -> bool {
        self.hollow
    }

    /// Collective over the processes of a shrink's move: every live result
    /// moved onto the new grid, in the order of their keys (the same
    /// everywhere; see [`ProtectedResult::move_to_shrunk_grid`]).
    pub fn move_all(&mut self, grid: &Grid, from: &ShrunkFrom, holds_state: bool) -> Result<(), Error> {
        // (A replacement's copies not yet mended hold nothing: they
        // receive only.)
        let holds_state = holds_state && !self.hollow;
        // Every mover must hold the same results (as for the mend): else
        // they are lost on every one, nothing moved.
        let print = fingerprint(self.entries.iter().map(|e| e.key));
        let (lo, hi) = grid.min_max_among_movers(from, &print)?;
        if lo != hi {
            for e in &self.entries {
                e.result.borrow_mut().mark_lost();
            }
            return Ok(());
        }
        for e in &self.entries {
            e.result.borrow_mut().move_to_shrunk_grid(grid, from, holds_state)?;
        }
        Ok(())
    }

    /// Local: [`ProtectedResult::settle_move`] of every live result.
    pub fn settle_move(&mut self, kept: bool) {
        for e in &self.entries {
            e.result.borrow_mut().settle_move(kept);
        }
    }

    /// Collective over the grid when [`Registry::is_pending`]: rebuilds the
    /// replacements' blocks of every live result (see the module
    /// documentation). Returns how many results were rebuilt.
    ///
    /// # Errors
    /// A process failure during the mend (it stays pending: the caller
    /// repairs and mends again, the earlier replacements included).
    pub fn mend(&mut self, grid: &Grid) -> Result<usize, Error> {
        if !self.pending {
            return Ok(0);
        }
        let flags = grid.allgather(Scope::All, &[i64::from(self.hollow)])?;
        let lost: Vec<i32> = flags.iter().enumerate().filter(|(_, &f)| f != 0).map(|(r, _)| r as i32).collect();
        // Every process must hold the same results: compare the keys.
        let print = fingerprint(self.entries.iter().map(|e| e.key));
        let (mut lo, mut hi) = (print, print);
        grid.min(Scope::All, &mut lo)?;
        grid.max(Scope::All, &mut hi)?;
        let q = grid.npcol();
        let coords: Vec<(usize, usize)> = lost.iter().map(|&r| ((r / q) as usize, (r % q) as usize)).collect();
        let mut rebuilt = 0;
        if lo != hi {
            for e in &self.entries {
                e.result.borrow_mut().mark_lost();
            }
        } else {
            // A result lost on some process (a replacement's hollow copy of
            // it cannot be rebuilt from the others' lost copies) is lost on
            // every process.
            // So is one that more losses hit than its checksums tolerate.
            let gone = |r: &dyn ProtectedResult| {
                r.is_lost() || checksum::check_recoverable_up_to(&coords, r.tolerated_losses()).is_err()
            };
            // Per result, agreed with a maximum: lost here, forgotten
            // here, kept here.
            let n = self.entries.len();
            let mut flags = vec![0i64; 3 * n];
            for (i, e) in self.entries.iter().enumerate() {
                let r = e.result.borrow();
                let forgotten = r.is_forgotten();
                flags[i] = i64::from(!forgotten && gone(&*r));
                flags[n + i] = i64::from(forgotten);
                flags[2 * n + i] = i64::from(!forgotten);
            }
            if n > 0 {
                grid.max(Scope::All, &mut flags)?;
            }
            for (i, e) in self.entries.iter().enumerate() {
                match Fate::of(flags[i] != 0, flags[n + i] != 0, flags[2 * n + i] != 0) {
                    Fate::Skip => {}
                    Fate::Lose => e.result.borrow_mut().mark_lost(),
                    Fate::Rebuild if lost.is_empty() => {}
                    Fate::Rebuild => {
                        e.result.borrow_mut().rebuild(grid, &lost)?;
                        rebuilt += 1;
                    }
                }
            }
        }
        self.pending = false;
        self.hollow = false;
        Ok(rebuilt)
    }
}

/// The live keys in a form two processes can compare with a minimum and a
/// maximum: their count and two sums.
fn fingerprint(keys: impl Iterator<Item = usize>) -> [i64; 3] {
    let mut f = [0i64; 3];
    for k in keys {
        let k = k as i64;
        f[0] += 1;
        f[1] = f[1].wrapping_add(k);
        f[2] = f[2].wrapping_add(k.wrapping_mul(k).wrapping_add(7 * k + 1));
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counted(u32);
    impl ProtectedResult for Counted {
        fn rebuild(&mut self, _grid: &Grid, _lost: &[i32]) -> Result<(), Error> {
            Ok(())
        }
        fn mark_lost(&mut self) {
            self.0 = u32::MAX;
        }
        fn is_lost(&self) -> bool {
            self.0 == u32::MAX
        }
    }

    #[test]
    fn results_are_found_by_key_and_type() {
        let mut r = Registry::default();
        let a = Rc::new(RefCell::new(Counted(1)));
        r.insert(3, a.clone());
        assert!(r.get::<Counted>(3).is_some_and(|x| Rc::ptr_eq(&x, &a)));
        assert!(r.get::<Counted>(2).is_none());
        r.insert(3, Rc::new(RefCell::new(Counted(2))));
        assert_eq!(r.len(), 1);
        assert_eq!(r.get::<Counted>(3).map(|x| x.borrow().0), Some(2));
    }

    #[test]
    fn dropped_results_go_once_the_program_is_past_their_call() {
        let mut r = Registry::default();
        let kept = Rc::new(RefCell::new(Counted(0)));
        r.insert(0, kept.clone());
        r.insert(2, Rc::new(RefCell::new(Counted(0))));
        r.insert(5, Rc::new(RefCell::new(Counted(0))));
        r.prune_before(4);
        // 0 is held outside, 2 is not and its call is past, 5 is ahead.
        assert!(r.get::<Counted>(0).is_some());
        assert!(r.get::<Counted>(2).is_none());
        assert!(r.get::<Counted>(5).is_some());
        drop(kept);
        r.prune_before(1);
        assert!(r.get::<Counted>(0).is_none());
    }

    #[test]
    fn a_result_forgotten_on_some_processes_only_is_lost_everywhere() {
        // Forgotten everywhere: no process rebuilds it (nor marks it).
        assert_eq!(Fate::of(false, true, false), Fate::Skip);
        // Forgotten on some, kept on others: every process refuses it,
        // none enters the rebuild alone.
        assert_eq!(Fate::of(false, true, true), Fate::Lose);
        assert_eq!(Fate::of(true, true, true), Fate::Lose);
        assert_eq!(Fate::of(true, false, true), Fate::Lose);
        assert_eq!(Fate::of(false, false, true), Fate::Rebuild);
    }

    #[test]
    fn fingerprints_tell_different_key_sets_apart() {
        let f = |k: &[usize]| fingerprint(k.iter().copied());
        assert_eq!(f(&[1, 4]), f(&[1, 4]));
        assert_ne!(f(&[1, 4]), f(&[2, 3]));
        assert_ne!(f(&[1, 4]), f(&[1, 4, 0]));
        assert_ne!(f(&[]), f(&[0]));
    }
}
