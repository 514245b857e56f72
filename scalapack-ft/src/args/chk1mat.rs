//! ScaLAPACK's `CHK1MAT`: a submatrix argument `(M, N, IA, JA, DESCA)`
//! checked against its descriptor, for callers that pass a submatrix of a
//! larger matrix (the C ABI).

use super::{arg_error, entry};
use crate::descriptor::Descriptor;
use crate::error::Result;

/// Where a matrix argument's pieces sit in a routine's argument list
/// (1-based, as ScaLAPACK numbers them for `INFO`): the local array, the
/// submatrix's rows and columns `M`, `N`, its first row and column `IA`,
/// `JA`, and the descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixPositions {
    /// The local array (`A`).
    pub data: u32,
    /// The submatrix's rows (`M`).
    pub m: u32,
    /// The submatrix's columns (`N`).
    pub n: u32,
    /// The submatrix's first global row, 1-based (`IA`).
    pub ia: u32,
    /// The submatrix's first global column, 1-based (`JA`).
    pub ja: u32,
    /// The descriptor (`DESCA`).
    pub desc: u32,
}

/// A submatrix as the caller passed it: `M`×`N` from global row `IA`,
/// column `JA` (1-based) of the matrix its descriptor describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Submatrix {
    /// Rows (`M`).
    pub m: i32,
    /// Columns (`N`).
    pub n: i32,
    /// First row (`IA`).
    pub ia: i32,
    /// First column (`JA`).
    pub ja: i32,
}

/// Local: ScaLAPACK's `CHK1MAT` for matrix `name` of `routine`, whose
/// arguments sit at `at`: `M, N ≥ 0`, `IA = JA = 1` (ftla works on a
/// matrix's leading submatrix), `M ≤ M_A`, `N ≤ N_A` of the (validated)
/// descriptor `desc`. Returns the submatrix's size.
///
/// A negative `M` or `N`, or another `IA`/`JA`, is that argument's error
/// (`INFO = -i`); a submatrix larger than the matrix is the descriptor's
/// `M` or `N` entry (`INFO = -(i·100 + 3)` or `-(i·100 + 4)`).
pub fn chk1mat(
    routine: &str,
    name: &str,
    at: &MatrixPositions,
    sub: Submatrix,
    desc: &Descriptor,
) -> Result<(usize, usize)> {
    let Submatrix { m, n, ia, ja } = sub;
    if m < 0 {
        return Err(arg_error(routine, at.m, 0, "M", format!("must be non-negative, got {m}")));
    }
    if n < 0 {
        return Err(arg_error(routine, at.n, 0, "N", format!("must be non-negative, got {n}")));
    }
    for (v, pos, what) in [(ia, at.ia, "IA"), (ja, at.ja, "JA")] {
        if v != 1 {
            return Err(arg_error(
                routine,
                pos,
                0,
                what,
                format!("must be 1 (ftla works on a matrix's leading submatrix), got {v}"),
            ));
        }
    }
    let (m, n) = (m as usize, n as usize);
    let bounds = [(m, desc.m(), entry::M, "M", "rows"), (n, desc.n(), entry::N, "N", "columns")];
    for (want, have, e, entry_name, what) in bounds {
        if want > have {
            return Err(arg_error(
                routine,
                at.desc,
                e,
                &format!("{entry_name}_{name}"),
                format!("is {have}, fewer {what} than the {want} asked for"),
            ));
        }
    }
    Ok((m, n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::pdgeqrf;

    #[test]
    fn each_refusal_is_scalapacks_info() {
        let desc = Descriptor::new(10, 8, 2, 2, 0, 0, 10, 0, 1, 1, 0).expect("valid");
        let at = pdgeqrf::MATRIX_A;
        let info = |m, n, ia, ja| chk1mat("pdgeqrf", "A", &at, Submatrix { m, n, ia, ja }, &desc).map_err(|e| e.info());
        assert_eq!(info(10, 8, 1, 1), Ok((10, 8)));
        assert_eq!(info(-1, 8, 1, 1), Err(-1));
        assert_eq!(info(10, -1, 1, 1), Err(-2));
        assert_eq!(info(10, 8, 2, 1), Err(-4));
        assert_eq!(info(10, 8, 1, 0), Err(-5));
        assert_eq!(info(11, 8, 1, 1), Err(-603));
        assert_eq!(info(10, 9, 1, 1), Err(-604));
    }
}
