//! Protected LU factors: the result of [`LuFactors::factor`], kept with
//! its checksums after the factorization returns, so that a process lost
//! later — in another call, between calls, in a solve — is rebuilt from
//! them (docs/architecture.md, "Protected results").

use super::factor::{run_on_extended, LuState, ROUTINE};
use crate::abft::{rebuild_lost_blocks, Extended, ExtendedStart, FtOptions, FtReport, FtWorkspace};
use crate::error::{Error, Result};
use crate::matrix::DistMatrix;
use blacs_ft::Grid;
use checksum::ReverseNeighborLayout;
use recovery::protocol;
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
    /// than the checksums tolerate, or processes that disagreed on the
    /// live results): every routine refuses them.
    Lost,
}

/// This process's part of protected LU factors: the extended matrix as at
/// the factorization's final commit point (L and U, the checksums C_g and
/// the left-factor sums D_g) and the replicated pivots.
pub(crate) struct ProtectedLu {
    pub ext: Extended,
    pub layout: ReverseNeighborLayout,
    /// The pivots, 0-based and global, the same on every process.
    pub ipiv: Vec<i64>,
    /// The factorization's steps (all committed).
    pub steps: u64,
    pub holding: Holding,
}

impl ProtectedResult for ProtectedLu {
    fn rebuild(&mut self, grid: &Grid, lost: &[i32]) -> std::result::Result<(), blacs_ft::Error> {
        // (Collective: every process takes part, whatever its copy's state.)
        rebuild_lost_blocks(grid, &mut self.ext, &self.layout, self.steps as usize, lost).map_err(|e| match e {
            Error::Grid(g) => g,
            e => blacs_ft::Error::Unrecoverable { reason: format!("rebuilding protected LU factors: {e}") },
        })?;
        if self.holding == Holding::Hollow {
            self.holding = Holding::Whole;
        }
        Ok(())
    }

    fn mark_lost(&mut self) {
        self.holding = Holding::Lost;
    }
}

/// LU factors `P·A = L·U` that stay protected after the factorization
/// returns: the value owns the factors, their reverse-neighboring checksums
/// (C_g for U and the right side, D_g for L) and the pivots, and the
/// region rebuilds a lost process's part of them at its next repair. The
/// solves [`super::pdgetrs_ft`] take them. Dropping the value releases all
/// of it (the region forgets it once the program is past the call that
/// made it).
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
    /// factorization are `pdgetrf_ft`'s, with `a` (local input, taken) an
    /// N×N matrix; A's storage becomes the factors' when it has room for
    /// the checksum columns ([`FtWorkspace::in_place`]), else it is copied
    /// once and dropped.
    ///
    /// # Errors
    /// As [`super::pdgetrf_ft`]; a singular matrix gives
    /// [`Error::Singular`] and no factors.
    ///
    /// # Fault tolerance
    /// See [`LuFactors`]. On a replacement, a call that completed before it
    /// joined returns at once (no communication) with a hollow copy and an
    /// empty report.
    pub fn factor(region: &mut Region, mut a: DistMatrix, opts: &FtOptions) -> Result<(LuFactors, FtReport)> {
        let (n, nb) = (a.n(), a.nb());
        let start = protocol::enter::<LuState, Error>(region, ROUTINE)?;
        let mut work = FtWorkspace::new();
        if let protocol::Start::Done(state) = start {
            state.singular()?;
            if !region.current_call_completed_before_joining() {
                if let Some(shared) = region.protected::<ProtectedLu>() {
                    // A re-run of the region's body: the same factors.
                    return Ok((LuFactors { shared, n, nb }, FtReport::default()));
                }
            }
            // A replacement's copy, rebuilt by the region; or factors that
            // nothing holds here any more (a job started again from
            // checkpoints): lost.
            let holding = if region.current_call_completed_before_joining() { Holding::Hollow } else { Holding::Lost };
            let grid = region.grid();
            let layout = ReverseNeighborLayout::new(a.m(), n, nb, grid.nprow() as usize, grid.npcol() as usize)
                .map_err(|e| blacs_ft::Error::Unrecoverable { reason: format!("{ROUTINE}: {e}") })?;
            let ext = Extended::new(grid, &mut a, &layout, &mut work, ExtendedStart::Join, ROUTINE)?;
            let steps = n.min(a.m()).div_ceil(nb) as u64;
            let lu = ProtectedLu { ext, layout, ipiv: state.ipiv, steps, holding };
            let shared = Rc::new(RefCell::new(lu));
            region.protect(shared.clone());
            return Ok((LuFactors { shared, n, nb }, FtReport::default()));
        }
        let run = run_on_extended(region, &mut a, opts, &mut work, start)?;
        run.state.singular()?;
        let steps = n.min(a.m()).div_ceil(nb) as u64;
        let lu = ProtectedLu { ext: run.ext, layout: run.layout, ipiv: run.state.ipiv, steps, holding: Holding::Whole };
        let shared = Rc::new(RefCell::new(lu));
        region.protect(shared.clone());
        Ok((LuFactors { shared, n, nb }, run.report))
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
        self.shared.borrow().ipiv.clone()
    }

    /// Local: where this process's copy stands.
    pub fn holding(&self) -> Holding {
        self.shared.borrow().holding
    }

    /// Collective over the grid: a copy of the factors (L below the
    /// diagonal, U on and above) as a plain N×N matrix, for output or a
    /// plain routine. Local memory: one more A.
    ///
    /// # Errors
    /// [`Error::InputLost`] on every process when the factors are not whole
    /// on some process.
    pub fn to_matrix(&self, grid: &Grid) -> Result<DistMatrix> {
        self.check_whole(grid, "LuFactors::to_matrix", 1)?;
        let lu = self.shared.borrow();
        let e = &lu.ext.matrix;
        let mut out = DistMatrix::zeros(grid, e.m(), self.n, self.nb, self.nb)?;
        let (lr, lc, lde, ldo) = (out.local_rows(), out.local_cols(), e.lld(), out.lld());
        for j in 0..lc {
            out.local_mut()[j * ldo..j * ldo + lr].copy_from_slice(&e.local()[j * lde..j * lde + lr]);
        }
        Ok(out)
    }

    /// Collective over the grid: [`Error::InputLost`] of `routine`
    /// (argument `position`), the same on every process, when the factors
    /// are not whole on some process (an agreement: safe to call after the
    /// region mended the results, e.g. right after a call's verdict).
    pub fn check_whole(&self, grid: &Grid, routine: &str, position: u32) -> Result<()> {
        let whole = self.holding() == Holding::Whole;
        let lowest = grid.lowest_rank_where(!whole)?;
        match lowest {
            None => Ok(()),
            Some(rank) => {
                Err(Error::InputLost { routine: routine.into(), position, argument: "the LU factors".into(), rank })
            }
        }
    }

    /// The shared state, for the routines that take the factors (they
    /// borrow it only inside each step: the region's mend borrows it after
    /// a repair).
    #[allow(dead_code)] // (the solves on the factors use it)
    pub(crate) fn shared(&self) -> &Rc<RefCell<ProtectedLu>> {
        &self.shared
    }
}
