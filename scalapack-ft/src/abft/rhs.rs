//! Right-hand sides protected during a fault-tolerant solve: B in an
//! extended matrix [B | padding | checksums] with checksums in the layout
//! of the factors it is solved with (reverse-neighboring pairs, or the
//! rotating layout's f weighted checksums per group), as a
//! factorization's A (docs/architecture.md, "Protected results"): a solve
//! survives as many losses per process row as its factors.
//!
//! A solve applies only left-side operations to B — row interchanges,
//! triangular solves with L, U or R, the block reflectors of Qᵀ — and any
//! linear right-side encoding survives them: op([B, B·W]) = [op(B), op(B)·W].
//! So a solve that runs every step over the extended matrix's local
//! columns that can be nonzero ([`ProtectedRhs::live_columns`]) keeps C_g
//! equal to the sum of its group's columns at every commit point, and a
//! lost process's blocks of B are rebuilt from its process row's survivors
//! exactly as a factorization's trailing columns are (no finished left
//! factor: every row of every block comes from C_g).
//!
//! B's rows are distributed as the factors' (each solve checks it, as
//! ScaLAPACK does); its columns in any blocks, the first on process
//! column 0 ([`ProtectedRhs::checked_layout`]). The extended matrix puts
//! B's columns in blocks of NB_E = min(NB_B, NRHS) ([`ProtectedRhs::layout`]),
//! with B's rows' blocks.
//!
//! Memory per process, held for the solve (in B's own storage when it
//! has room, see [`super::FtWorkspace::in_place`], else in the
//! workspace; [`ProtectedRhs::bytes_per_process`] says how much): its
//! local rows of B's N_ext extended columns — NRHS rounded up to a block
//! of NB_E, plus a pair of NB_E checksum columns per group of Q blocks
//! (rotating: f per group of Q − f); with NRHS ≤ NB_B one block and one
//! pair, 3·NRHS columns over the grid ((1 + f)·NRHS rotating) — plus
//! local rows × NB_E of (unused) left-factor sums per checksum it holds:
//! a few times B, small next to the factors. The steps work only on B's
//! columns and the checksum columns over them, about 3·NRHS columns over
//! the grid ((1 + f)·NRHS).

use super::extended::Extended;
use super::workspace::{largest_bytes, FtWorkspace};
use super::{encode_checksums, rebuild_lost_blocks, verify_checksums, ChecksumCheck, MatrixShape};
use crate::args::{arg_error, entry};
use crate::error::Result;
use crate::matrix::DistMatrix;
use blacs_ft::Grid;
use checksum::{ChecksumLayout, LayoutError, LayoutKind};
use std::ops::Range;

/// This process's share of protected right-hand sides.
pub(crate) struct ProtectedRhs {
    pub ext: Extended,
    pub layout: ChecksumLayout,
}

impl ProtectedRhs {
    /// Where B's checksums live on `grid`: B's columns in blocks of
    /// min(NB_B, NRHS). The extended matrix holds B's last block and a
    /// pair of checksum blocks per group, so a block wider than NRHS
    /// would only add zero padding to its memory; with
    /// B's first block on process column 0 ([`ProtectedRhs::checked_layout`])
    /// B's local columns are still the extended matrix's first ones — a
    /// block of min(NB_B, NRHS) columns puts the same columns on the same
    /// process column as NB_B does — and B is copied in and out without
    /// communication.
    /// `kind` is the factors' layout: B's checksums tolerate the same
    /// losses per process row.
    pub fn layout(grid: &Grid, b: &DistMatrix, kind: LayoutKind) -> std::result::Result<ChecksumLayout, LayoutError> {
        let nb = column_block(b.nb(), b.n());
        ChecksumLayout::new(kind, b.m(), b.n(), nb, grid.nprow() as usize, grid.npcol() as usize)
    }

    /// The most memory, in bytes, that any process of a `p`×`q` grid
    /// holds for the protected copy of an `m`×`nrhs` B with rows in
    /// blocks of `mb` and columns in blocks of `nb_b` (all global), its
    /// checksums in the layout `kind`: its extended matrix and its (unused)
    /// left-factor sums. `None` for shapes that cannot carry checksums
    /// (Q < 2; Q < f + 1 for the rotating layout).
    pub fn bytes_per_process(
        m: usize,
        nrhs: usize,
        mb: usize,
        nb_b: usize,
        p: usize,
        q: usize,
        kind: LayoutKind,
    ) -> Option<u64> {
        let layout = ChecksumLayout::new(kind, m, nrhs, column_block(nb_b, nrhs), p, q).ok()?;
        Some(largest_bytes(&layout, mb, p, q, super::Relations::Whole))
    }

    /// Local: B (argument `name`, its descriptor argument `position` of
    /// `routine`) can be protected on `grid` in the factors' layout
    /// `kind`, and where its checksums live ([`ProtectedRhs::layout`]). The one check every fault-tolerant
    /// solve makes beyond ScaLAPACK's, after the routine's own (B's rows
    /// distributed as the factors', which start on process row 0): B's
    /// first block column on process column 0 (`CSRC = 0`, so that B's
    /// local columns are its extended matrix's first ones). Any NB_B.
    ///
    /// # Errors
    /// [`crate::Error::Argument`] against the descriptor's `CSRC` entry,
    /// or its `NB` entry for a shape that cannot carry checksums (Q < 2).
    pub fn checked_layout(
        grid: &Grid,
        b: &DistMatrix,
        routine: &str,
        position: u32,
        name: &str,
        kind: LayoutKind,
    ) -> Result<ChecksumLayout> {
        let csrc = b.desc().csrc();
        if csrc != 0 {
            return Err(arg_error(
                routine,
                position,
                entry::CSRC,
                &format!("CSRC_{name}"),
                format!(
                    "must be 0 (the first block column on process column 0, where its checksum-extended copy \
                     starts), got {csrc}"
                ),
            ));
        }
        ProtectedRhs::layout(grid, b, kind).map_err(|e| {
            arg_error(
                routine,
                position,
                entry::NB,
                &format!("NB_{name}"),
                format!("cannot carry {kind} checksums: {e}"),
            )
        })
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

    /// The local columns of the extended matrix that a solve can make
    /// nonzero ([`LiveColumns`]): B's NRHS columns and, in each copy of a
    /// group's checksums, the columns in which a member of the group has
    /// data. The rest — the padding of B's last block column and of its
    /// last group, and the checksum columns over it — are zero and stay
    /// zero under left-side operations (their checksum relations hold as
    /// they are), so the steps skip them: a step works on about 3·NRHS
    /// columns over the grid, whatever the extended matrix's width. (A
    /// padding block rebuilt after a repair holds C_g minus the other
    /// members, zero up to rounding; left as it is, it keeps the relations
    /// within rounding.) Local; the same on every process of a process
    /// column.
    pub fn live_columns(&self) -> LiveColumns {
        let (b, layout) = (&self.ext.matrix, &self.layout);
        let (nb, nrhs) = (layout.nb(), layout.n());
        let mut global: Vec<Range<usize>> = Vec::with_capacity(1 + 2 * layout.groups());
        global.push(0..nrhs);
        for g in 0..layout.groups() {
            if let (Ok(members), Ok(copies)) = (layout.group_members(g), layout.checksum_block_cols(g)) {
                let width = nb.min(nrhs.saturating_sub(members.start * nb));
                global.extend(copies.into_iter().map(|e| e * nb..e * nb + width));
            }
        }
        let checksum_columns = global.iter().skip(1).map(ExactSizeIterator::len).sum();
        // This process's blocks of them, in local columns.
        let mycol = b.coords().1;
        let mut local: Vec<Range<usize>> = Vec::new();
        for r in global {
            let mut c = r.start;
            while c < r.end {
                let end = r.end.min((c / nb + 1) * nb);
                if b.col_owner(c) == mycol {
                    let l0 = b.local_cols_before(c);
                    local.push(l0..l0 + (end - c));
                }
                c = end;
            }
        }
        local.sort_by_key(|r| r.start);
        local.dedup_by(|next, prev| {
            let adjacent = prev.end == next.start;
            if adjacent {
                prev.end = next.end;
            }
            adjacent
        });
        LiveColumns { local, checksum_columns }
    }

    /// The extended matrix: a solve's steps run over its live columns
    /// ([`ProtectedRhs::live_columns`]).
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

/// The block of B's extended matrix's columns ([`ProtectedRhs::layout`]):
/// min(NB_B, NRHS), at least 1.
fn column_block(nb_b: usize, nrhs: usize) -> usize {
    nb_b.min(nrhs.max(1))
}

/// The columns of B's extended matrix a solve works on
/// ([`ProtectedRhs::live_columns`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LiveColumns {
    /// This process's, as ascending, disjoint local column ranges.
    pub local: Vec<Range<usize>>,
    /// How many of them are checksum columns, over the grid (global): the
    /// protection's extra work next to B's NRHS columns.
    pub checksum_columns: usize,
}
