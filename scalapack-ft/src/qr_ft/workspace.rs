//! Caller-owned scratch of `pdgeqrf_ft` (ScaLAPACK's WORK array, typed).

use crate::matrix::DistMatrix;
use blacs_ft::Grid;
use checksum::ReverseNeighborLayout;

/// The storage `pdgeqrf_ft` works in: the local part of the extended matrix
/// [A | padding | checksum pairs] and the left-factor sums D_g this process
/// keeps. [`super::pdgeqrf_ft`] allocates one per call;
/// [`super::pdgeqrf_ft_in`] takes one from the caller, so that repeated
/// factorizations (or a timed one) do not pay for allocating and first
/// touching about (1 + 2/Q)·|A| + |A|/Q of memory each time — page faults
/// that cost as much as several panel steps.
///
/// The content between calls is meaningless: every call overwrites what it
/// reads.
#[derive(Debug, Default)]
pub struct FtWorkspace {
    pub(super) ext: Vec<f64>,
    pub(super) d: Vec<Vec<f64>>,
}

impl FtWorkspace {
    /// An empty workspace: the first call sizes it.
    pub fn new() -> FtWorkspace {
        FtWorkspace::default()
    }

    /// A workspace sized for factoring `a` (local) on `grid` (global), its
    /// memory touched now rather than during the call. A matrix that cannot
    /// carry checksums (Q = 1, MB ≠ NB) gets an empty one; the call reports
    /// the error.
    pub fn for_matrix(grid: &Grid, a: &DistMatrix) -> FtWorkspace {
        let Ok(layout) = ReverseNeighborLayout::new(a.m(), a.n(), a.nb(), grid.nprow() as usize, grid.npcol() as usize)
        else {
            return FtWorkspace::default();
        };
        let (ext_len, d_len, held) = sizes(grid, a, &layout);
        FtWorkspace { ext: touched(ext_len), d: (0..held).map(|_| touched(d_len)).collect() }
    }
}

/// Local lengths of the extended matrix and of one D_g, and how many D_g
/// this process keeps.
pub(super) fn sizes(grid: &Grid, a: &DistMatrix, layout: &ReverseNeighborLayout) -> (usize, usize, usize) {
    let (npcol, mycol) = (grid.npcol() as usize, grid.mycol() as usize);
    let ext_cols = blacs_ft::index::numroc(layout.n_extended(), a.nb(), mycol, 0, npcol);
    let lld = a.local_rows().max(1);
    let held = (0..layout.groups()).filter(|&g| layout.holds_pair(g, mycol)).count();
    (lld * ext_cols, a.local_rows() * a.nb(), held)
}

/// A zeroed vector whose pages are all touched (a plain zeroed allocation
/// is mapped lazily and faults on first use).
fn touched(len: usize) -> Vec<f64> {
    let mut v = vec![0.0; len];
    for i in (0..len).step_by(512) {
        // SAFETY: i < len; a volatile store cannot be elided, so the page is
        // really written.
        unsafe { std::ptr::write_volatile(v.as_mut_ptr().add(i), 0.0) };
    }
    v
}
