//! Right-hand sides protected during a fault-tolerant solve: B in an
//! extended matrix [B | padding | checksum pairs] with the same
//! reverse-neighboring checksums as a factorization's A (docs/architecture.md,
//! "Protected results").
//!
//! A solve applies only left-side operations to B — row interchanges,
//! triangular solves with L, U or R, the block reflectors of Qᵀ — and any
//! linear right-side encoding survives them: op([B, B·W]) = [op(B), op(B)·W].
//! So a solve that runs every step over all the extended matrix's local
//! columns keeps C_g equal to the sum of its group's columns at every
//! commit point, and a lost process's blocks of B are rebuilt from its
//! process row's survivors exactly as a factorization's trailing columns
//! are (no finished left factor: every row of every block comes from C_g).
//!
//! Memory: B's columns are grouped in blocks of min(NB_B, NRHS) columns
//! ([`ProtectedRhs::layout`]); with NRHS ≤ NB_B the extended matrix holds
//! B, its zero padding to a group of Q blocks and the checksum pair,
//! (Q + 2)·NRHS columns over the grid, plus one block of unused
//! left-factor sums per holder: a few times B, small next to the factors.

use super::extended::{Extended, Start};
use super::workspace::FtWorkspace;
use super::{encode_checksums, rebuild_lost_blocks, verify_checksums, ChecksumCheck, MatrixShape};
use crate::error::Result;
use crate::matrix::DistMatrix;
use blacs_ft::Grid;
use checksum::{LayoutError, ReverseNeighborLayout};

/// This process's share of protected right-hand sides.
pub(crate) struct ProtectedRhs {
    pub ext: Extended,
    pub layout: ReverseNeighborLayout,
}

impl ProtectedRhs {
    /// Where B's checksums live on `grid`: B's columns in blocks of
    /// min(NB_B, NRHS). A solve's work on B is proportional to the
    /// extended matrix's columns, (Q + 2) blocks per group, so a block
    /// wider than NRHS would only add zero padding to every update; with
    /// B's first block on process column 0 (the solves check it) B's local
    /// columns are still the extended matrix's first ones, and B is
    /// copied in and out without communication.
    pub fn layout(grid: &Grid, b: &DistMatrix) -> std::result::Result<ReverseNeighborLayout, LayoutError> {
        let nb = b.nb().min(b.n().max(1));
        ReverseNeighborLayout::new(b.m(), b.n(), nb, grid.nprow() as usize, grid.npcol() as usize)
    }

    /// B's extended matrix, B copied in (or, on a replacement joining a
    /// solve, not copied: the survivors rebuild every block). Local; a
    /// memory error names `routine`.
    pub fn new(
        grid: &Grid,
        b: &mut DistMatrix,
        layout: ReverseNeighborLayout,
        work: &mut FtWorkspace,
        joining: bool,
        routine: &str,
    ) -> Result<ProtectedRhs> {
        let start = if joining { Start::Join } else { Start::Fresh };
        let ext = Extended::new(grid, b, &layout, work, start, routine)?;
        Ok(ProtectedRhs { ext, layout })
    }

    /// Collective: encodes B's checksums.
    pub fn encode(&mut self, grid: &Grid) -> Result<()> {
        encode_checksums(grid, &mut self.ext, &self.layout)
    }

    /// Collective after a repair: the `lost` ranks' blocks of B (data,
    /// padding and checksum copies) rebuilt.
    pub fn rebuild(&mut self, grid: &Grid, lost: &[i32]) -> Result<()> {
        rebuild_lost_blocks(grid, &mut self.ext, &self.layout, 0, lost)
    }

    /// Collective: the checksum relations of B now.
    pub fn verify(&self, grid: &Grid) -> Result<ChecksumCheck> {
        verify_checksums(grid, &self.ext, &self.layout, 0)
    }

    /// The extended matrix: a solve's steps run over all its local columns.
    pub fn matrix(&self) -> &DistMatrix {
        &self.ext.matrix
    }

    /// [`ProtectedRhs::matrix`], mutable.
    pub fn matrix_mut(&mut self) -> &mut DistMatrix {
        &mut self.ext.matrix
    }

    /// B's global shape (what a checkpoint of the solve must match).
    pub fn shape(&self) -> MatrixShape {
        self.ext.shape()
    }

    /// What a checkpoint saves of this process's B.
    pub fn saved_arrays(&mut self) -> Vec<&mut [f64]> {
        self.ext.saved_arrays()
    }

    /// Ends the solve on this process: B gets its columns back (the
    /// solution when `copy_back`), the workspace its storage.
    pub fn release(self, b: &mut DistMatrix, work: &mut FtWorkspace, copy_back: bool) {
        self.ext.release(b, work, copy_back);
    }
}
