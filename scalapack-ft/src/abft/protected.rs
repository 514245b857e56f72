//! Protected factors: a factorization's extended matrix kept, with its
//! checksums as at the final commit point, after the call returns
//! (docs/architecture.md, "Protected results"). One implementation for
//! the LU and QR factors ([`crate::lu_ft::LuFactors`],
//! the QR's in the same way): the region's registry rebuilds them after a
//! repair, and the routines that take them check that they are whole.

use super::extended::{Extended, Start};
use super::shrink::{extended_on, move_blocks, After, Before, RowVectors};
use super::workspace::FtWorkspace;
use super::{rebuild_lost_blocks, reencode_checksums};
use crate::error::{Error, Result};
use crate::matrix::DistMatrix;
use blacs_ft::{Grid, ShrunkFrom};
use checksum::{ChecksumLayout, LayoutKind};
use recovery::{ProtectedResult, Region};
use std::cell::RefCell;
use std::rc::Rc;

/// Where this process's copy of protected factors stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holding {
    /// Its blocks are the factors (and their checksums).
    Whole,
    /// A replacement's copy, made when its program called the
    /// factorization again after the survivors had completed it: its
    /// blocks are rebuilt at the first point it meets the survivors.
    Hollow,
    /// The factors could not be rebuilt (more losses in one process row
    /// than the checksums tolerate, processes that disagreed on the live
    /// results, or a job started again from checkpoints, which keep no
    /// finished results): every routine refuses them.
    Lost,
}

/// This process's part of protected factors: the extended matrix as at
/// the factorization's final commit point (the factors, the checksums C_g,
/// the left-factor sums D_g) and the replicated state `S` (LU's pivots,
/// QR's tau).
pub(crate) struct ProtectedFactors<S> {
    pub ext: Extended,
    pub layout: ChecksumLayout,
    pub state: S,
    /// The factorization's steps (all committed).
    pub steps: u64,
    pub holding: Holding,
    /// The owner let them go for good (see `Factors::forget`): the
    /// region's mends skip them (the processes agree on it) until it
    /// forgets them. Factors in storage the program lent hold none after
    /// it ([`ProtectedFactors::forget`]): they are never taken back.
    pub forgotten: bool,
    /// [`ProtectedFactors::forget`] gave the program's lent storage back:
    /// the copy holds no blocks.
    gave_back: bool,
    /// The copy on the grid before a shrink, until the new grid agreed
    /// that everything moved (see `ProtectedResult::settle_move`).
    before_shrink: Option<(Extended, ChecksumLayout, Holding)>,
}

impl<S: 'static> ProtectedResult for ProtectedFactors<S> {
    fn tolerated_losses(&self) -> usize {
        self.layout.tolerated_losses()
    }

    fn rebuild(&mut self, grid: &Grid, lost: &[i32]) -> std::result::Result<(), blacs_ft::Error> {
        // (Never forgotten here: the mend agrees on that first, and skips
        // or loses forgotten results on every process.)
        // (Collective: every process takes part, whatever its copy's state.)
        rebuild_lost_blocks(grid, &mut self.ext, &self.layout, self.steps as usize, lost).map_err(|e| match e {
            Error::Grid(g) => g,
            e => blacs_ft::Error::Unrecoverable { reason: format!("rebuilding protected factors: {e}") },
        })?;
        // Only the blocks of the `lost` ranks were rebuilt: a hollow copy
        // elsewhere (made after this process's first mend) stays hollow and
        // is refused.
        if self.holding == Holding::Hollow && lost.contains(&grid.rank()) {
            self.holding = Holding::Whole;
        }
        Ok(())
    }

    fn mark_lost(&mut self) {
        self.holding = Holding::Lost;
    }

    fn is_lost(&self) -> bool {
        self.holding == Holding::Lost
    }

    fn is_forgotten(&self) -> bool {
        self.forgotten
    }

    fn moves(&self) -> bool {
        true
    }

    /// As a factorization's state moves at its last commit point: the
    /// lost blocks rebuilt onto survivors of their rows, every block moved
    /// to its owner on the new grid, the checksums and left-factor sums
    /// encoded for it. Factors not whole on some process (lost, or a
    /// program's storage given back) are lost on every one.
    fn move_to_shrunk_grid(&mut self, grid: &Grid, from: &ShrunkFrom, holds_state: bool) -> blacs_ft::Result<()> {
        let to_grid_error = |e: Error| match e {
            Error::Grid(g) => g,
            e => blacs_ft::Error::Unrecoverable { reason: format!("moving protected factors: {e}") },
        };
        // (A process holding nothing of the grid before receives only: its
        // copy may be hollow.)
        let whole =
            !self.gave_back && (self.holding == Holding::Whole || !holds_state && self.holding == Holding::Hollow);
        let shape = self.ext.shape();
        let (m, n, nb) = (shape.m as usize, shape.n as usize, shape.nb as usize);
        let (np, nq) = (grid.nprow() as usize, grid.npcol() as usize);
        // (And their checksums fit the new grid.)
        let layout = ChecksumLayout::new(shape.layout, m, n, nb, np, nq);
        let movable = whole && (!grid.is_member() || layout.is_ok());
        let (agreed, _) = grid.min_max_among_movers(from, &[i64::from(movable)])?;
        if agreed[0] == 0 {
            self.holding = Holding::Lost;
            return Ok(());
        }
        let steps = (self.steps as usize, self.layout.tolerated_losses(), RowVectors::default());
        let routine = "protected factors";
        fn before<S>(p: &mut ProtectedFactors<S>, holds_state: bool) -> Option<Before<'_>> {
            holds_state.then_some(Before { ext: &mut p.ext, layout: &p.layout, rows: &[] })
        }
        if !grid.is_member() {
            return move_blocks(grid, from, before(self, holds_state), None, steps, routine).map_err(to_grid_error);
        }
        let moved = (|| -> Result<(Extended, ChecksumLayout)> {
            let (_, mut ext, layout) = extended_on(grid, shape, self.ext.relations, routine)?;
            move_blocks(
                grid,
                from,
                before(self, holds_state),
                Some(After { ext: &mut ext, rows: &mut [] }),
                steps,
                routine,
            )?;
            reencode_checksums(grid, &mut ext, &layout, self.steps as usize)?;
            Ok((ext, layout))
        })();
        let moved = moved.map_err(to_grid_error)?;
        let (ext, layout) = moved;
        // (Kept until the new grid agrees, see `settle_move`.)
        let old_ext = std::mem::replace(&mut self.ext, ext);
        let old_layout = std::mem::replace(&mut self.layout, layout);
        self.before_shrink = Some((old_ext, old_layout, self.holding));
        self.holding = Holding::Whole;
        Ok(())
    }

    fn settle_move(&mut self, kept: bool) {
        let Some((ext, layout, holding)) = self.before_shrink.take() else { return };
        if !kept {
            (self.ext, self.layout, self.holding) = (ext, layout, holding);
        }
    }
}

impl<S: 'static> ProtectedFactors<S> {
    /// The factors a fault-tolerant call just made, registered with the
    /// region under that call.
    pub fn register(
        region: &mut Region,
        ext: Extended,
        layout: ChecksumLayout,
        state: S,
        steps: u64,
    ) -> Rc<RefCell<Self>> {
        let shared = Rc::new(RefCell::new(ProtectedFactors {
            ext,
            layout,
            state,
            steps,
            holding: Holding::Whole,
            forgotten: false,
            gave_back: false,
            before_shrink: None,
        }));
        region.protect(shared.clone());
        shared
    }

    /// For a call that completed before (the log says done), with its
    /// replicated `state` and checksum layout `kind`: the copy this process registered under the call
    /// when a re-run of the region's body makes it again (a survivor's
    /// factors, or a replacement's own copy, mended or not); else, on a
    /// replacement that joined after the call, a hollow copy over `a`'s
    /// storage that the region fills at its next mend; otherwise (nothing
    /// holds them here any more) a lost copy. Local.
    ///
    /// # Errors
    /// No memory for the copy (local: the region's mend then finds the
    /// processes disagreeing and marks the factors lost everywhere).
    pub fn again(
        region: &mut Region,
        a: &mut DistMatrix,
        state: S,
        steps: u64,
        (kind, relations): (LayoutKind, super::Relations),
        routine: &str,
    ) -> Result<Rc<RefCell<Self>>> {
        // The copy registered under this call, whoever made it: a survivor's
        // factors, or a replacement's own copy from an earlier run of the
        // body (hollow, or mended since, or lost) — never a second hollow
        // one that the mend would not fill.
        // A forgotten copy in storage the program lent holds nothing any
        // more (its storage went back to the program): made afresh, as for
        // a call this process does not know.
        if let Some(shared) = region.protected::<Self>().filter(|s| !s.borrow().gave_back) {
            // (Taken back: the mends rebuild it again.)
            shared.borrow_mut().forgotten = false;
            return Ok(shared);
        }
        let replacement = region.current_call_completed_before_joining();
        let grid = region.grid();
        let layout = ChecksumLayout::new(kind, a.m(), a.n(), a.nb(), grid.nprow() as usize, grid.npcol() as usize)
            .map_err(|e| blacs_ft::Error::Unrecoverable { reason: format!("{routine}: {e}") })?;
        // (Its blocks are rebuilt by the same relations as the others'.)
        let ext = Extended::new(grid, a, &layout, &mut FtWorkspace::new(), Start::Join, relations, routine)?;
        let holding = if replacement { Holding::Hollow } else { Holding::Lost };
        let shared = Rc::new(RefCell::new(ProtectedFactors {
            ext,
            layout,
            state,
            steps,
            holding,
            forgotten: false,
            gave_back: false,
            before_shrink: None,
        }));
        region.protect(shared.clone());
        Ok(shared)
    }

    /// Local: lets the factors go for good. Storage the program lent goes
    /// back to it at once: the copy keeps an empty array of ftla's, the
    /// mends never write into it, and [`ProtectedFactors::again`] never
    /// takes it back.
    pub fn forget(&mut self) {
        self.forgotten = true;
        if !self.ext.matrix.storage().is_owned() {
            drop(std::mem::take(self.ext.matrix.storage_mut()));
            self.gave_back = true;
        }
    }

    /// Collective over the grid: a copy of the first `n` columns (the
    /// factors) as a plain matrix.
    ///
    /// # Errors
    /// As [`ProtectedFactors::check_whole`].
    pub fn to_matrix(&self, grid: &Grid, n: usize, routine: &str, argument: &str) -> Result<DistMatrix> {
        self.check_whole(grid, routine, 1, argument)?;
        let e = &self.ext.matrix;
        let mut out = DistMatrix::zeros(grid, e.m(), n, e.mb(), e.nb())?;
        let (lr, lc, lde, ldo) = (out.local_rows(), out.local_cols(), e.lld(), out.lld());
        for j in 0..lc {
            out.local_mut()[j * ldo..j * ldo + lr].copy_from_slice(&e.local()[j * lde..j * lde + lr]);
        }
        Ok(out)
    }

    /// Inside a call that has agreed that the factors are whole (see
    /// [`super::agree_on_factors`]): [`Error::InputLost`] of `routine`
    /// (`argument` at `position`) when the factors are no longer whole,
    /// the same on every process. After the agreement the holding changes
    /// only by the region's mend of a repair, which rebuilds every
    /// process's copy or marks every copy lost: it is the same on every
    /// process, so the collective [`ProtectedFactors::check_whole`] runs
    /// on all of them or on none, and a whole copy costs no communication.
    /// The check a solve makes at the start of each step.
    pub fn check_still_whole(&self, grid: &Grid, routine: &str, position: u32, argument: &str) -> Result<()> {
        if self.holding == Holding::Whole {
            return Ok(());
        }
        self.check_whole(grid, routine, position, argument)
    }

    /// Collective over the grid: [`Error::InputLost`] of `routine`
    /// (`argument` at `position`), the same on every process, when the
    /// factors are not whole on some process. Call it where the processes
    /// meet after the region's mend (a call's verdict has run it).
    pub fn check_whole(&self, grid: &Grid, routine: &str, position: u32, argument: &str) -> Result<()> {
        match grid.lowest_rank_where(self.holding != Holding::Whole)? {
            None => Ok(()),
            Some(rank) => Err(Error::InputLost { routine: routine.into(), position, argument: argument.into(), rank }),
        }
    }
}
