//! Which algorithm factors the QR panels: the options of `pdgeqrf` and
//! `pdgeqrf_ft`, and the crossover `auto` uses.

use std::fmt;
use std::str::FromStr;

/// How a QR panel is factored when the grid has more than one process row
/// (with one process row the whole panel is local and LAPACK's recursive
/// DGEQRT3 factors it either way).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PanelMethod {
    /// Pick by shape and grid (see [`PanelMethod::resolve`]).
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
}

/// The panel algorithm a factorization runs, once `auto` is resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PanelAlgorithm {
    /// ScaLAPACK's Householder panel.
    Householder,
    /// TSQR with Householder reconstruction.
    Tsqr,
}

/// `auto` takes TSQR for a panel whose rows give each process of the column
/// at least this many (and always beyond 8 process rows, where the
/// Householder panel goes column by column).
///
/// Measured with `cargo bench -p scalapack-ft --bench tsqr -- crossover` (one
/// thread, NB 64, two processes' rows on one core, AMD EPYC Zen 4,
/// OpenBLAS Cooperlake): TSQR's share per process against the DGEQRT3
/// that every process of the gathered panel runs over both processes' rows
/// took 1.0 vs 0.5 ms at 512 local rows, 0.9 vs 1.1 ms at 1024, 4.1 vs 2.6
/// at 2048, 4.6 vs 5.4 at 4096, 11.9 vs 13.5 at 8192, 19.6 vs 29.8 at
/// 16384 and ≈ 73 vs ≈ 130 at 65536. Below about 4096 rows the
/// reconstruction's small products cost as much as the gathered panel's
/// redundant flops, and the gathered panel's extra message (the panel's
/// rows rather than 2·NB² values) is short. With CholeskyQR2 (Gram matrix,
/// Cholesky, triangular solve, twice) instead of the local QR the flops
/// would be about the same and the panel would lose orthogonality on the
/// graded, Kahan and rank-deficient panels the checks use, so TSQR it is.
pub const TSQR_MIN_LOCAL_ROWS: usize = 4096;

impl PanelMethod {
    /// The algorithm for a panel with `panel_rows` rows (global rows j0..M)
    /// on `nprow` process rows; every process computes the same.
    ///
    /// `auto`: with one process row the whole panel is local and LAPACK's
    /// recursive DGEQRT3 runs as fast as the local TSQR (131072×256 on
    /// 1x1: 19.1 vs 18.0 Gflop/s, same run), so it stays; with several,
    /// TSQR where each process holds at least [`TSQR_MIN_LOCAL_ROWS`] of
    /// the panel's rows or there are more than 8 process rows.
    pub fn resolve(self, panel_rows: usize, nprow: usize) -> PanelAlgorithm {
        match self {
            PanelMethod::Householder => PanelAlgorithm::Householder,
            PanelMethod::Tsqr => PanelAlgorithm::Tsqr,
            PanelMethod::Auto if nprow > 8 => PanelAlgorithm::Tsqr,
            PanelMethod::Auto if nprow > 1 && panel_rows / nprow >= TSQR_MIN_LOCAL_ROWS => PanelAlgorithm::Tsqr,
            PanelMethod::Auto => PanelAlgorithm::Householder,
        }
    }

    /// The name `--panel` takes.
    pub fn name(self) -> &'static str {
        match self {
            PanelMethod::Auto => "auto",
            PanelMethod::Householder => "householder",
            PanelMethod::Tsqr => "tsqr",
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
            other => Err(format!("unknown panel method `{other}` (auto, householder or tsqr)")),
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
    fn names_round_trip_and_auto_picks_tsqr_for_tall_panels_across_process_rows() {
        for m in [PanelMethod::Auto, PanelMethod::Householder, PanelMethod::Tsqr] {
            assert_eq!(m.name().parse::<PanelMethod>(), Ok(m));
        }
        assert!("cholesky".parse::<PanelMethod>().unwrap_err().contains("auto, householder or tsqr"));
        assert_eq!(PanelMethod::Auto.resolve(131072, 1), PanelAlgorithm::Householder);
        assert_eq!(PanelMethod::Auto.resolve(131072, 2), PanelAlgorithm::Tsqr);
        assert_eq!(PanelMethod::Auto.resolve(8192, 2), PanelAlgorithm::Tsqr);
        assert_eq!(PanelMethod::Auto.resolve(8191, 2), PanelAlgorithm::Householder);
        assert_eq!(PanelMethod::Auto.resolve(100, 9), PanelAlgorithm::Tsqr);
        assert_eq!(PanelMethod::Householder.resolve(131072, 2), PanelAlgorithm::Householder);
        assert_eq!(PanelMethod::Tsqr.resolve(100, 1), PanelAlgorithm::Tsqr);
    }
}
