//! Which algorithm factors the QR panels: the options of `pdgeqrf` and
//! `pdgeqrf_ft`, and the crossover `auto` uses.

use std::fmt;
use std::str::FromStr;

/// How the QR panels are factored. With one process row the whole panel
/// is local: `householder` runs LAPACK's recursive DGEQRT3 over it, `tsqr`
/// its cache-sized pieces and their tree, `cholqr2` its Gram matrices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PanelMethod {
    /// Pick by grid and shape (see [`PanelMethod::resolve`]: CholeskyQR2
    /// with several process rows or on a tall matrix, where it won or tied
    /// at every shape measured; LAPACK's DGEQRT3 otherwise).
    #[default]
    Auto,
    /// Householder reflectors as ScaLAPACK's PDGEQR2 forms them: the panel
    /// gathered down the process column and factored redundantly (up to 8
    /// process rows), or column by column with two reductions per column.
    Householder,
    /// TSQR with Householder reconstruction: one local tall-skinny QR per
    /// process, one all-gather of the small R factors, and V, T, tau rebuilt
    /// from the TSQR Q (see [`super::tall_skinny`]).
    Tsqr,
    /// CholeskyQR2 with Householder reconstruction: two Gram matrices (two
    /// all-gathers, of jb² and 2·jb² + 1 values per process), the panel's
    /// Q by triangular solves,
    /// and V, T, tau rebuilt from it as TSQR does (see
    /// [`super::cholesky_qr`]); a panel too ill-conditioned for it (its
    /// Gram matrix not positive definite, or the first pass's Q not
    /// orthonormal to 10⁻⁶) is factored by TSQR instead.
    CholQr2,
}

/// The panel algorithm a factorization runs, once `auto` is resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PanelAlgorithm {
    /// ScaLAPACK's Householder panel.
    Householder,
    /// TSQR with Householder reconstruction.
    Tsqr,
    /// CholeskyQR2 with Householder reconstruction, TSQR where refused.
    CholQr2,
}

/// How many times as tall as wide a matrix is for `auto` to pick
/// CholeskyQR2 on one process row.
const TALL: usize = 8;

impl PanelMethod {
    /// The algorithm for the panels of an `m`×`n` matrix (global) on a
    /// grid with `nprow` process rows.
    ///
    /// `auto`: with one process row the whole panel is local and LAPACK's
    /// recursive DGEQRT3 runs as fast as CholeskyQR2 on a square matrix
    /// (4096², NB 64, same machine as below: 1x1 15.7, 15.9, 16.0 vs 15.8,
    /// 15.8, 16.0 Gflop/s; 1x2 28.0, 28.6, 28.7 vs 28.1, 28.0, 27.4), so it
    /// stays there; a matrix at least 8 times as tall as it is wide
    /// is mostly panel, and CholeskyQR2 factors it faster (131072×256 on 1x1:
    /// 9.8, 9.9, 9.7 vs 8.9, 8.7, 9.0). With several process rows,
    /// CholeskyQR2 at every shape (TSQR for the panels it refuses): all its work is DSYRK
    /// and DTRSM over the panel's height, where TSQR's local DGEQRT3 runs
    /// its narrow recursion far below the DGEMM rate. Measured alternating
    /// with `--panel` (NB 64, 2-core AMD EPYC, OpenBLAS Zen, Gflop/s,
    /// CholeskyQR2 vs TSQR): 2x1 131072×256 18.8, 18.3 vs 14.4, 14.6; 2x1
    /// 4096² 29.2, 29.7 vs 28.9, 28.9; 2x2 4096² 26.8, 26.5 vs 26.1, 26.0;
    /// one thread, both processes' panels of 65536×64 (`cargo bench -p
    /// scalapack-ft --features kernel-benches --bench tsqr`): 209 vs 336 ms.
    /// TSQR itself had replaced the Householder panel (NB 64, AMD EPYC Zen
    /// 4, OpenBLAS Cooperlake, TSQR vs Householder): 2x1 65536×1024 68.1,
    /// 64.0, 67.8 vs 52.7, 52.1, 51.2; 2x1 4096² 74.0, 76.6, 74.9 vs 72.1,
    /// 74.6, 72.5; 2x2 4096² even: across processes TSQR sends 2·NB² values
    /// per process (CholeskyQR2 3·NB² + 1, in two all-gathers) instead of
    /// the panel's rows.
    pub fn resolve(self, nprow: usize, m: usize, n: usize) -> PanelAlgorithm {
        match self {
            PanelMethod::Householder => PanelAlgorithm::Householder,
            PanelMethod::Tsqr => PanelAlgorithm::Tsqr,
            PanelMethod::CholQr2 => PanelAlgorithm::CholQr2,
            PanelMethod::Auto if nprow > 1 || m >= TALL * n => PanelAlgorithm::CholQr2,
            PanelMethod::Auto => PanelAlgorithm::Householder,
        }
    }

    /// The name `--panel` takes.
    pub fn name(self) -> &'static str {
        match self {
            PanelMethod::Auto => "auto",
            PanelMethod::Householder => "householder",
            PanelMethod::Tsqr => "tsqr",
            PanelMethod::CholQr2 => "cholqr2",
        }
    }
}

impl fmt::Display for PanelMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PanelMethod {
    type Err = String;

    fn from_str(s: &str) -> Result<PanelMethod, String> {
        match s {
            "auto" => Ok(PanelMethod::Auto),
            "householder" => Ok(PanelMethod::Householder),
            "tsqr" => Ok(PanelMethod::Tsqr),
            "cholqr2" => Ok(PanelMethod::CholQr2),
            other => Err(format!("unknown panel method `{other}` (auto, householder, tsqr or cholqr2)")),
        }
    }
}

/// Options of the QR factorizations (`pdgeqrf`, `pdgeqrf_ft`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QrOptions {
    /// How the panels are factored.
    pub panel: PanelMethod,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_auto_picks_cholqr2_across_process_rows_or_on_tall_matrices() {
        for m in [PanelMethod::Auto, PanelMethod::Householder, PanelMethod::Tsqr, PanelMethod::CholQr2] {
            assert_eq!(m.name().parse::<PanelMethod>(), Ok(m));
        }
        assert!("cholesky".parse::<PanelMethod>().unwrap_err().contains("auto, householder, tsqr or cholqr2"));
        assert_eq!(PanelMethod::Auto.resolve(1, 100, 100), PanelAlgorithm::Householder);
        assert_eq!(PanelMethod::Auto.resolve(1, 800, 100), PanelAlgorithm::CholQr2);
        assert_eq!(PanelMethod::Auto.resolve(2, 100, 100), PanelAlgorithm::CholQr2);
        assert_eq!(PanelMethod::Householder.resolve(2, 800, 100), PanelAlgorithm::Householder);
        assert_eq!(PanelMethod::Tsqr.resolve(1, 100, 100), PanelAlgorithm::Tsqr);
    }
}
