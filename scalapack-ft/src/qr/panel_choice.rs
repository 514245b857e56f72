//! Which algorithm factors the QR panels: the options of `pdgeqrf` and
//! `pdgeqrf_ft`, and the crossover `auto` uses.

use std::fmt;
use std::str::FromStr;

/// How the QR panels are factored. With one process row the whole panel
/// is local: `householder` (and `auto`) run LAPACK's recursive DGEQRT3 over
/// it, `tsqr` its cache-sized pieces and their tree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PanelMethod {
    /// Pick by grid (see [`PanelMethod::resolve`]: TSQR won or tied at every
    /// shape measured with several process rows).
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

impl PanelMethod {
    /// The algorithm for the panels of a grid with `nprow` process rows.
    ///
    /// `auto`: with one process row the whole panel is local and LAPACK's
    /// recursive DGEQRT3 runs as fast as the local TSQR (131072×256 on 1x1:
    /// 19.1 vs 18.0 Gflop/s), so it stays. With several process rows, TSQR,
    /// at every panel height: measured alternating with `--panel`
    /// (NB 64, 2-core AMD EPYC Zen 4, OpenBLAS Cooperlake, Gflop/s, TSQR vs
    /// Householder): 2x1 65536×1024 68.1, 64.0, 67.8 vs 52.7, 52.1, 51.2;
    /// 2x1 4096×4096 74.0, 76.6, 74.9 vs 72.1, 74.6, 72.5 (local panels of
    /// 2048 rows down to 64); 2x2 4096×4096 65.8, 72.3, 67.9 vs 71.0, 67.6,
    /// 68.4 (even); 2x2 16384×1024 53.0, 30.5, 28.3 vs 51.1, 20.8, 23.4.
    /// On one core the Householder panel's DGEQRT3 over the gathered rows
    /// is as fast as TSQR's share below about 4096 local rows
    /// (`cargo bench -p scalapack-ft --bench tsqr -- crossover`), but across
    /// processes TSQR sends 2·NB² values per process instead of the panel's
    /// rows. CholeskyQR2 (Gram matrix, Cholesky, triangular solve, twice)
    /// would cost about the same flops and loses orthogonality on the
    /// graded, Kahan and rank-deficient panels the checks use, so TSQR it is.
    pub fn resolve(self, nprow: usize) -> PanelAlgorithm {
        match self {
            PanelMethod::Householder => PanelAlgorithm::Householder,
            PanelMethod::Tsqr => PanelAlgorithm::Tsqr,
            PanelMethod::Auto if nprow > 1 => PanelAlgorithm::Tsqr,
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
    fn names_round_trip_and_auto_picks_tsqr_across_process_rows() {
        for m in [PanelMethod::Auto, PanelMethod::Householder, PanelMethod::Tsqr] {
            assert_eq!(m.name().parse::<PanelMethod>(), Ok(m));
        }
        assert!("cholesky".parse::<PanelMethod>().unwrap_err().contains("auto, householder or tsqr"));
        assert_eq!(PanelMethod::Auto.resolve(1), PanelAlgorithm::Householder);
        assert_eq!(PanelMethod::Auto.resolve(2), PanelAlgorithm::Tsqr);
        assert_eq!(PanelMethod::Householder.resolve(2), PanelAlgorithm::Householder);
        assert_eq!(PanelMethod::Tsqr.resolve(1), PanelAlgorithm::Tsqr);
    }
}
