//! Caller-owned scratch of the fault-tolerant factorizations (`pdgeqrf_ft`,
//! `pdgetrf_ft`): ScaLAPACK's WORK array, typed.

use super::Relations;
use crate::descriptor::{largest_storage_lld, storage_lld};
use crate::error::Result;
use crate::matrix::{touched, DistMatrix};
use crate::storage::LocalStorage;
use blacs_ft::Grid;
use checksum::{ChecksumLayout, LayoutKind};

/// The storage a fault-tolerant factorization (`pdgeqrf_ft`, `pdgetrf_ft`)
/// works in: the local part of the extended matrix
/// [A | padding | checksum pairs] (unless A's own storage has room for it,
/// see [`FtWorkspace::in_place`]) and the left-factor sums D_g this process
/// keeps. [`crate::qr_ft::pdgeqrf_ft`] allocates one per call;
/// [`crate::qr_ft::pdgeqrf_ft_in`] takes one from the caller, so that repeated
/// factorizations (or a timed one) do not pay for allocating and first
/// touching about (1 + 2/Q)·|A| + |A|/Q of memory each time — page faults
/// that cost as much as several panel steps.
///
/// The content between calls is meaningless: every call overwrites what it
/// reads.
#[derive(Debug, Default)]
pub struct FtWorkspace {
    pub(crate) ext: LocalStorage,
    pub(crate) d: Vec<Vec<f64>>,
}

impl FtWorkspace {
    /// An empty workspace: the first call sizes it.
    pub fn new() -> FtWorkspace {
        FtWorkspace::default()
    }

    /// A workspace sized for factoring `a` (local) on `grid` (global) with
    /// the checksum layout `kind` (global: the call's
    /// [`super::FtOptions::layout`]), its memory touched now rather than
    /// during the call. A matrix that cannot
    /// carry checksums (Q = 1, MB ≠ NB) gets an empty one; the call reports
    /// the error. Local: more memory than this process can get is an
    /// [`crate::Error::Memory`].
    pub fn for_matrix(grid: &Grid, a: &DistMatrix, kind: LayoutKind) -> Result<FtWorkspace> {
        FtWorkspace::for_matrix_of(grid, a, kind, Relations::Whole)
    }

    /// [`FtWorkspace::for_matrix`] for checksums covering `relations` (a
    /// driver's, from the catalogue: [`crate::drivers::Driver::relations`]).
    pub fn for_matrix_of(grid: &Grid, a: &DistMatrix, kind: LayoutKind, relations: Relations) -> Result<FtWorkspace> {
        let Ok(layout) = ChecksumLayout::new(kind, a.m(), a.n(), a.nb(), grid.nprow() as usize, grid.npcol() as usize)
        else {
            return Ok(FtWorkspace::default());
        };
        let (ext_len, d_len, held) = sizes(grid, a, &layout);
        let d = sums(held, d_len, relations)?;
        Ok(FtWorkspace { ext: touched(ext_len, ROUTINE, EXTENDED)?.into(), d })
    }

    /// A workspace for factoring `a` (local) on `grid` (global) in place,
    /// with the checksum layout `kind` (global: the call's
    /// [`super::FtOptions::layout`]; its columns are the room added):
    /// `a`'s storage grows to hold the padding and checksum columns after
    /// its local array (its content kept, the new pages touched now), so
    /// that the call copies A neither in nor out; the workspace then holds
    /// only the D_g sums. Like the extended matrices of the FT-ScaLAPACK
    /// codes, which their callers allocate. A matrix whose leading
    /// dimension is not its extended matrix's (`storage_lld` of its local
    /// rows, for storage ftla owns) cannot grow that way: it gets
    /// [`FtWorkspace::for_matrix`]'s workspace instead.
    ///
    /// Local: more memory than this process can get is an
    /// [`crate::Error::Memory`] (`a` is then unchanged but for room that
    /// may have been added).
    pub fn in_place(grid: &Grid, a: &mut DistMatrix, kind: LayoutKind) -> Result<FtWorkspace> {
        FtWorkspace::in_place_of(grid, a, kind, Relations::Whole)
    }

    /// [`FtWorkspace::in_place`] for checksums covering `relations` (a
    /// driver's, from the catalogue: [`crate::drivers::Driver::relations`]).
    pub fn in_place_of(grid: &Grid, a: &mut DistMatrix, kind: LayoutKind, relations: Relations) -> Result<FtWorkspace> {
        let Ok(layout) = ChecksumLayout::new(kind, a.m(), a.n(), a.nb(), grid.nprow() as usize, grid.npcol() as usize)
        else {
            return Ok(FtWorkspace::default());
        };
        if a.lld() != extended_lld(a) {
            return FtWorkspace::for_matrix_of(grid, a, kind, relations);
        }
        let (ext_len, d_len, held) = sizes(grid, a, &layout);
        a.reserve_room(ext_len, ROUTINE, EXTENDED)?;
        Ok(FtWorkspace { ext: LocalStorage::default(), d: sums(held, d_len, relations)? })
    }

    /// What a hot spare prepares while it is parked (see
    /// `blacs_ft::Grid::parks_as_spare`), large enough for any position of
    /// a `p`×`q` grid factoring an `m`×`n` matrix in `nb`×`nb` blocks (all
    /// global) with the checksum layout `kind`, its memory touched now: storage for the matrix (for
    /// `DistMatrix::in_storage`) with room for the checksum columns, and a
    /// workspace for the D_g sums. A spare learns its grid position only
    /// when it replaces a lost process — and the survivors would otherwise
    /// wait for these page faults during the recovery. Empty for shapes
    /// that cannot carry checksums.
    pub fn for_spare(
        m: usize,
        n: usize,
        nb: usize,
        p: usize,
        q: usize,
        kind: LayoutKind,
    ) -> Result<(Vec<f64>, FtWorkspace)> {
        FtWorkspace::for_spare_of((m, n, nb), (p, q), kind, Relations::Whole)
    }

    /// [`FtWorkspace::for_spare`] for checksums covering `relations` (a
    /// driver's, from the catalogue: [`crate::drivers::Driver::relations`]).
    pub fn for_spare_of(
        (m, n, nb): (usize, usize, usize),
        (p, q): (usize, usize),
        kind: LayoutKind,
        relations: Relations,
    ) -> Result<(Vec<f64>, FtWorkspace)> {
        let Ok(layout) = ChecksumLayout::new(kind, m, n, nb, p, q) else {
            return Ok((Vec::new(), FtWorkspace::default()));
        };
        let (ext_len, d_len, held) = largest_sizes(&layout, nb, p, q);
        let d = sums(held, d_len, relations)?;
        Ok((touched(ext_len, ROUTINE, EXTENDED)?, FtWorkspace { ext: LocalStorage::default(), d }))
    }

    /// The most memory, in bytes, that any process of a `p`×`q` grid needs
    /// to factor an `m`×`n` matrix in `nb`×`nb` blocks with `pdgeqrf_ft` in
    /// place with the checksum layout `kind` (all global): its extended local matrix (A's local array
    /// included) and its left-factor sums. What a caller checks before
    /// allocating anything; `None` for shapes that cannot carry checksums.
    pub fn bytes_per_process(m: usize, n: usize, nb: usize, p: usize, q: usize, kind: LayoutKind) -> Option<u64> {
        let layout = ChecksumLayout::new(kind, m, n, nb, p, q).ok()?;
        Some(largest_bytes(&layout, nb, p, q, Relations::Whole))
    }

    /// [`FtWorkspace::bytes_per_process`] for a factorization whose
    /// checksums cover `relations` (Cholesky's lower triangle keeps a
    /// second sum beside each D_g: the upper triangle's).
    pub fn bytes_per_process_of(
        (m, n, nb): (usize, usize, usize),
        (p, q): (usize, usize),
        kind: LayoutKind,
        relations: Relations,
    ) -> Option<u64> {
        let layout = ChecksumLayout::new(kind, m, n, nb, p, q).ok()?;
        Some(largest_bytes(&layout, nb, p, q, relations))
    }
}

/// The most memory, in bytes, that any process of a `p`×`q` grid needs
/// for the extended matrix of `layout` (its columns in the layout's
/// blocks) with rows in blocks of `mb`, and the sums beside its checksums
/// (D, and U for `relations` of one triangle).
pub(crate) fn largest_bytes(layout: &ChecksumLayout, mb: usize, p: usize, q: usize, relations: Relations) -> u64 {
    let (ext_len, d_len, held) = largest_sizes(layout, mb, p, q);
    let sums = (d_len * relations.side_sums()) as u64;
    let elements = (ext_len as u64).saturating_add(sums.saturating_mul(held as u64));
    elements.saturating_mul(std::mem::size_of::<f64>() as u64)
}

/// Names in the memory errors of the workspace.
const ROUTINE: &str = "FtWorkspace";
const EXTENDED: &str = "the checksum-extended matrix";

/// The sums beside `held` checksums, each D of `len` elements (and U for
/// `relations` of one triangle), touched.
fn sums(held: usize, len: usize, relations: Relations) -> Result<Vec<Vec<f64>>> {
    (0..held).map(|_| touched(len * relations.side_sums(), ROUTINE, "the left-factor checksums")).collect()
}

/// The largest [`sizes_at`] over every position of a `p`×`q` grid, rows
/// in blocks of `mb`.
fn largest_sizes(layout: &ChecksumLayout, mb: usize, p: usize, q: usize) -> (usize, usize, usize) {
    // Process row 0 holds the most rows and process column 0 the most
    // columns; the number of pairs held varies with the column.
    let (rows, nb) = (blacs_ft::index::numroc(layout.m(), mb, 0, 0, p), layout.nb());
    let lld = largest_storage_lld(layout.m(), mb, p);
    let (ext_len, d_len, _) = sizes_at(layout, nb, (rows, lld), q, 0);
    let held = (0..q).map(|c| sizes_at(layout, nb, (rows, lld), q, c).2).max().unwrap_or(0);
    (ext_len, d_len, held)
}

/// The local leading dimension of `a`'s checksum-extended matrix: the
/// one ftla gives its own arrays ([`storage_lld`]), or, for an array the
/// program lent (worked in place, see [`LocalStorage::lent`]), the local
/// row count, which is what the C ABI's in-place calls ask of their LLD.
pub(crate) fn extended_lld(a: &DistMatrix) -> usize {
    if a.storage().is_owned() {
        storage_lld(a.local_rows())
    } else {
        a.local_rows().max(1)
    }
}

/// Local lengths of the extended matrix (leading dimension
/// [`extended_lld`]: the storage an in-place call needs) and of one D_g,
/// and how many D_g this process keeps.
pub(crate) fn sizes(grid: &Grid, a: &DistMatrix, layout: &ChecksumLayout) -> (usize, usize, usize) {
    let (lld, mycol) = (extended_lld(a), grid.mycol() as usize);
    sizes_at(layout, layout.nb(), (a.local_rows(), lld), grid.npcol() as usize, mycol)
}

/// [`sizes`] for a process of column `mycol` (of `npcol`) holding
/// `local_rows` rows, its extended matrix with leading dimension `lld`.
fn sizes_at(
    layout: &ChecksumLayout,
    nb: usize,
    (local_rows, lld): (usize, usize),
    npcol: usize,
    mycol: usize,
) -> (usize, usize, usize) {
    let ext_cols = blacs_ft::index::numroc(layout.n_extended(), nb, mycol, 0, npcol);
    let held = (0..layout.groups()).filter(|&g| layout.holds_checksum(g, mycol)).count();
    (lld * ext_cols, local_rows * nb, held)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spare_workspace_fits_every_grid_position() {
        for (m, n, nb) in [(4096, 4096, 64), (260, 200, 16), (100, 300, 7), (33, 33, 32)] {
            for (p, q) in [(1, 2), (2, 2), (2, 3), (3, 4), (1, 5)] {
                let layout = ChecksumLayout::new(LayoutKind::ReverseNeighbor, m, n, nb, p, q).unwrap();
                let (ext, d, held) = largest_sizes(&layout, nb, p, q);
                let mut reached = (0, 0, 0);
                for myrow in 0..p {
                    let rows = blacs_ft::index::numroc(m, nb, myrow, 0, p);
                    for mycol in 0..q {
                        let (e, dl, h) = sizes_at(&layout, nb, (rows, storage_lld(rows)), q, mycol);
                        assert!(e <= ext && dl <= d && h <= held, "{m}x{n}/{nb} on {p}x{q} at ({myrow},{mycol})");
                        reached = (reached.0.max(e), reached.1.max(dl), reached.2.max(h));
                    }
                }
                // And no larger than the largest position needs.
                assert_eq!(reached, (ext, d, held), "{m}x{n}/{nb} on {p}x{q}");
            }
        }
    }

    #[test]
    fn the_memory_asked_follows_the_layout_in_use() {
        // 4 process columns: reverse-neighboring pairs take 2/4 of A's
        // columns, the rotating layout with 2 checksums 2/2: more room.
        let (m, n, nb, p, q) = (1024, 1024, 32, 2, 4);
        let rn = FtWorkspace::bytes_per_process(m, n, nb, p, q, LayoutKind::ReverseNeighbor).unwrap();
        let rot = FtWorkspace::bytes_per_process(m, n, nb, p, q, LayoutKind::Rotating { checksums: 2 }).unwrap();
        let layout = |kind| ChecksumLayout::new(kind, m, n, nb, p, q).unwrap();
        assert_eq!(rn, largest_bytes(&layout(LayoutKind::ReverseNeighbor), nb, p, q, Relations::Whole));
        assert_eq!(rot, largest_bytes(&layout(LayoutKind::Rotating { checksums: 2 }), nb, p, q, Relations::Whole));
        assert_ne!(rn, rot);
        // Cholesky's checksum holders keep the upper triangle's sums beside D.
        let (_, d_len, held) = largest_sizes(&layout(LayoutKind::ReverseNeighbor), nb, p, q);
        let chol = FtWorkspace::bytes_per_process_of(
            (m, n, nb),
            (p, q),
            LayoutKind::ReverseNeighbor,
            Relations::LowerTriangle,
        );
        assert_eq!(chol, Some(rn + 8 * (d_len * held) as u64));
        let (_, work) =
            FtWorkspace::for_spare_of((m, n, nb), (p, q), LayoutKind::ReverseNeighbor, Relations::LowerTriangle)
                .unwrap();
        assert!(work.d.len() == held && work.d.iter().all(|d| d.len() == 2 * d_len));
        let (spare, _) = FtWorkspace::for_spare(m, n, nb, p, q, LayoutKind::Rotating { checksums: 2 }).unwrap();
        assert_eq!(spare.len(), largest_sizes(&layout(LayoutKind::Rotating { checksums: 2 }), nb, p, q).0);
    }
}
