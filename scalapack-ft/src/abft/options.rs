//! The options and the report of the fault-tolerant factorizations.

use super::ChecksumCheck;
use checksum::LayoutKind;
use recovery::protocol::RecoveryRecord;

/// Options of the fault-tolerant factorizations (`pdgeqrf_ft`,
/// `pdgetrf_ft`) and of `pdcg_ft`.
#[derive(Clone, Debug, Default)]
pub struct FtOptions {
    /// Check the checksum relations at the end and report them.
    pub verify: bool,
    /// The checksum layout (global: the same on every process): the
    /// reverse-neighboring pairs (the default; one loss per process row)
    /// or `f` rotating weighted checksums (`f` losses per process row,
    /// `Q ≥ f + 1`, else an argument error against CTXT_A on every process).
    pub layout: LayoutKind,
}

/// What a fault-tolerant factorization did besides factoring.
#[derive(Clone, Debug, Default)]
pub struct FtReport {
    /// Its recoveries, the same on every rank.
    pub recoveries: Vec<RecoveryRecord>,
    /// Predicted extra trailing-update work of the checksums, as a fraction.
    pub overhead_model: f64,
    /// The checksum relations at the end (with `verify`).
    pub check: Option<ChecksumCheck>,
    /// Seconds the call ran in earlier jobs and between them, when it was
    /// restored from checkpoints (checkpoint-on-failure; 0 otherwise).
    pub earlier_s: f64,
}

/// The variable giving the rotating layout's checksums per group (passed
/// on like `LAYOUT_VAR`).
pub use blacs_ft::launch::CHECKSUMS_VAR;
/// The variable naming the checksum layout of a C program's fault-tolerant
/// calls (`ftla launch` passes it to every process, on every host).
pub use blacs_ft::launch::LAYOUT_VAR;

impl FtOptions {
    /// The options of a C program's fault-tolerant calls, from the
    /// environment (the same on every process: the launcher passes it to
    /// all): `FTLA_LAYOUT` = `reverse-neighbor` (the default when unset or
    /// empty) or `rotating`, and `FTLA_CHECKSUMS` = F (1 to 3; default 1,
    /// more than 1 only with `rotating`).
    ///
    /// # Errors
    /// [`crate::Error::Grid`] with [`blacs_ft::Error::InvalidArgument`]
    /// naming the variable that cannot be read.
    pub fn from_env() -> crate::Result<FtOptions> {
        let var = |name: &str| std::env::var(name).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
        FtOptions::from_values(var(LAYOUT_VAR).as_deref(), var(CHECKSUMS_VAR).as_deref())
    }

    /// [`FtOptions::from_env`] from the variables' values (`None`: unset).
    fn from_values(layout: Option<&str>, checksums: Option<&str>) -> crate::Result<FtOptions> {
        let invalid = |var: &str, reason: String| crate::Error::Grid(blacs_ft::Error::invalid(var, reason));
        let f = match checksums {
            None => None,
            Some(s) => match s.parse::<usize>() {
                Ok(f) if (1..=checksum::MAX_CHECKSUMS).contains(&f) => Some(f),
                _ => {
                    let max = checksum::MAX_CHECKSUMS;
                    return Err(invalid(CHECKSUMS_VAR, format!("`{s}` is not a number of checksums from 1 to {max}")));
                }
            },
        };
        let layout = match (layout, f) {
            (None | Some("reverse-neighbor"), None | Some(1)) => LayoutKind::ReverseNeighbor,
            (None | Some("reverse-neighbor"), Some(f)) => {
                return Err(invalid(CHECKSUMS_VAR, format!("{f} checksums need {LAYOUT_VAR}=rotating")));
            }
            (Some("rotating"), f) => LayoutKind::Rotating { checksums: f.unwrap_or(1) },
            (Some(other), _) => {
                return Err(invalid(LAYOUT_VAR, format!("`{other}` is not a layout (reverse-neighbor or rotating)")));
            }
        };
        Ok(FtOptions { verify: false, layout })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_chooses_the_layout() {
        let rn = LayoutKind::ReverseNeighbor;
        assert_eq!(FtOptions::from_values(None, None).unwrap().layout, rn);
        assert_eq!(FtOptions::from_values(Some("reverse-neighbor"), Some("1")).unwrap().layout, rn);
        let rot = |f| LayoutKind::Rotating { checksums: f };
        assert_eq!(FtOptions::from_values(Some("rotating"), None).unwrap().layout, rot(1));
        assert_eq!(FtOptions::from_values(Some("rotating"), Some("3")).unwrap().layout, rot(3));
        for (l, c, var) in [
            (Some("rotating"), Some("4"), CHECKSUMS_VAR),
            (Some("rotating"), Some("two"), CHECKSUMS_VAR),
            (None, Some("2"), CHECKSUMS_VAR),
            (Some("pairs"), None, LAYOUT_VAR),
        ] {
            let e = FtOptions::from_values(l, c).unwrap_err().to_string();
            assert!(e.contains(var), "{l:?} {c:?}: {e}");
        }
    }
}
