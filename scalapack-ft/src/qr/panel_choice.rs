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

impl PanelMethod {
    /// The algorithm for an `m`-row matrix on `nprow` process rows.
    ///
    /// `auto` picks TSQR whenever the panel spans more than one process row:
    /// measured against the gathered Householder panel (2x1, 2x2, NB 64, see
    /// docs/benchmarks.md), TSQR moves 2·NB² values per process per panel
    /// instead of the whole panel, and divides the panel's flops among the
    /// process rows instead of repeating them on each, so it wins at every
    /// height measured (4096 rows and up); the column-by-column panel used
    /// beyond 8 process rows costs two latency-bound reductions per column.
    pub fn resolve(self, _m: usize, nprow: usize) -> PanelAlgorithm {
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
    fn names_round_trip_and_auto_picks_tsqr_only_across_process_rows() {
        for m in [PanelMethod::Auto, PanelMethod::Householder, PanelMethod::Tsqr] {
            assert_eq!(m.name().parse::<PanelMethod>(), Ok(m));
        }
        assert!("cholesky".parse::<PanelMethod>().unwrap_err().contains("auto, householder or tsqr"));
        assert_eq!(PanelMethod::Auto.resolve(4096, 1), PanelAlgorithm::Householder);
        assert_eq!(PanelMethod::Auto.resolve(4096, 2), PanelAlgorithm::Tsqr);
        assert_eq!(PanelMethod::Householder.resolve(4096, 2), PanelAlgorithm::Householder);
    }
}
