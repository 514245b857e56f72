//! The argument positions of each routine (1-based, the `i` of
//! `INFO = -i` or `-(i·100 + j)`): ScaLAPACK's argument list of the
//! routine of the same name, or, for ftla's own routines, the one each
//! module shows. The fault-tolerant `_ft` routines take their plain
//! sibling's positions. `MATRIX_A`, `MATRIX_B`, … gather a matrix's
//! `(A, M, N, IA, JA, DESCA)` for [`super::chk1mat`].

use super::MatrixPositions;

/// `PDGEQRF(M, N, A, IA, JA, DESCA, TAU, WORK, LWORK, INFO)`.
pub mod pdgeqrf {
    use super::MatrixPositions;

    pub const M: u32 = 1;
    pub const N: u32 = 2;
    pub const A: u32 = 3;
    pub const IA: u32 = 4;
    pub const JA: u32 = 5;
    pub const DESCA: u32 = 6;
    pub const TAU: u32 = 7;
    pub const WORK: u32 = 8;
    pub const LWORK: u32 = 9;
    /// A's arguments.
    pub const MATRIX_A: MatrixPositions = MatrixPositions { data: A, m: M, n: N, ia: IA, ja: JA, desc: DESCA };
}

/// `PDPOTRF(UPLO, N, A, IA, JA, DESCA, INFO)`.
pub mod pdpotrf {
    use super::MatrixPositions;

    pub const UPLO: u32 = 1;
    pub const N: u32 = 2;
    pub const A: u32 = 3;
    pub const IA: u32 = 4;
    pub const JA: u32 = 5;
    pub const DESCA: u32 = 6;
    /// A's arguments (N×N).
    pub const MATRIX_A: MatrixPositions = MatrixPositions { data: A, m: N, n: N, ia: IA, ja: JA, desc: DESCA };
}

/// `PDPOTRS(UPLO, N, NRHS, A, IA, JA, DESCA, B, IB, JB, DESCB, INFO)`,
/// and `PDPOSV` with the same arguments.
pub mod pdpotrs {
    use super::MatrixPositions;

    pub const UPLO: u32 = 1;
    pub const N: u32 = 2;
    pub const NRHS: u32 = 3;
    pub const A: u32 = 4;
    pub const IA: u32 = 5;
    pub const JA: u32 = 6;
    pub const DESCA: u32 = 7;
    pub const B: u32 = 8;
    pub const IB: u32 = 9;
    pub const JB: u32 = 10;
    pub const DESCB: u32 = 11;
    /// A's arguments (N×N).
    pub const MATRIX_A: MatrixPositions = MatrixPositions { data: A, m: N, n: N, ia: IA, ja: JA, desc: DESCA };
    /// B's arguments (N×NRHS).
    pub const MATRIX_B: MatrixPositions = MatrixPositions { data: B, m: N, n: NRHS, ia: IB, ja: JB, desc: DESCB };
}

/// `PDGETRF(M, N, A, IA, JA, DESCA, IPIV, INFO)`.
pub mod pdgetrf {
    use super::MatrixPositions;

    pub const M: u32 = 1;
    pub const N: u32 = 2;
    pub const A: u32 = 3;
    pub const IA: u32 = 4;
    pub const JA: u32 = 5;
    pub const DESCA: u32 = 6;
    pub const IPIV: u32 = 7;
    /// A's arguments.
    pub const MATRIX_A: MatrixPositions = MatrixPositions { data: A, m: M, n: N, ia: IA, ja: JA, desc: DESCA };
}

/// `PDGETRS(TRANS, N, NRHS, A, IA, JA, DESCA, IPIV, B, IB, JB, DESCB,
/// INFO)`.
pub mod pdgetrs {
    use super::MatrixPositions;

    pub const TRANS: u32 = 1;
    pub const N: u32 = 2;
    pub const NRHS: u32 = 3;
    pub const A: u32 = 4;
    pub const IA: u32 = 5;
    pub const JA: u32 = 6;
    pub const DESCA: u32 = 7;
    pub const IPIV: u32 = 8;
    pub const B: u32 = 9;
    pub const IB: u32 = 10;
    pub const JB: u32 = 11;
    pub const DESCB: u32 = 12;
    /// A's arguments (N×N).
    pub const MATRIX_A: MatrixPositions = MatrixPositions { data: A, m: N, n: N, ia: IA, ja: JA, desc: DESCA };
    /// B's arguments (N×NRHS).
    pub const MATRIX_B: MatrixPositions = MatrixPositions { data: B, m: N, n: NRHS, ia: IB, ja: JB, desc: DESCB };
}

/// ftla's `pdlaswp(grid, a, ipiv, dir)` (ScaLAPACK `PDLASWP` with
/// replicated 0-based pivots): A's descriptor is A's position.
pub mod pdlaswp {
    pub const A: u32 = 2;
    pub const IPIV: u32 = 3;
}

/// `PDORMQR(SIDE, TRANS, M, N, K, A, IA, JA, DESCA, TAU, C, IC, JC,
/// DESCC, WORK, LWORK, INFO)`; `pdormqr_ft`'s too (its protected factors
/// are A, its right-hand sides C).
pub mod pdormqr {
    use super::MatrixPositions;
    pub const SIDE: u32 = 1;
    pub const TRANS: u32 = 2;
    pub const M: u32 = 3;
    pub const N: u32 = 4;
    pub const K: u32 = 5;
    pub const A: u32 = 6;
    pub const IA: u32 = 7;
    pub const JA: u32 = 8;
    pub const DESCA: u32 = 9;
    pub const TAU: u32 = 10;
    pub const C: u32 = 11;
    pub const IC: u32 = 12;
    pub const JC: u32 = 13;
    pub const DESCC: u32 = 14;
    /// A's arguments (the M×K reflectors).
    pub const MATRIX_A: MatrixPositions = MatrixPositions { data: A, m: M, n: K, ia: IA, ja: JA, desc: DESCA };
    /// C's arguments (M×N).
    pub const MATRIX_C: MatrixPositions = MatrixPositions { data: C, m: M, n: N, ia: IC, ja: JC, desc: DESCC };
}

/// `PDGELS(TRANS, M, N, NRHS, A, IA, JA, DESCA, B, IB, JB, DESCB, WORK,
/// LWORK, INFO)`; `pdgels_ft`'s too.
pub mod pdgels {
    use super::MatrixPositions;
    pub const TRANS: u32 = 1;
    pub const M: u32 = 2;
    pub const N: u32 = 3;
    pub const NRHS: u32 = 4;
    pub const A: u32 = 5;
    pub const IA: u32 = 6;
    pub const JA: u32 = 7;
    pub const DESCA: u32 = 8;
    pub const B: u32 = 9;
    pub const IB: u32 = 10;
    pub const JB: u32 = 11;
    pub const DESCB: u32 = 12;
    pub const WORK: u32 = 13;
    pub const LWORK: u32 = 14;
    /// A's arguments (M×N).
    pub const MATRIX_A: MatrixPositions = MatrixPositions { data: A, m: M, n: N, ia: IA, ja: JA, desc: DESCA };
    /// B's arguments (M×NRHS, TRANS = 'N').
    pub const MATRIX_B: MatrixPositions = MatrixPositions { data: B, m: M, n: NRHS, ia: IB, ja: JB, desc: DESCB };
}

/// `PDGEMM(TRANSA, TRANSB, M, N, K, ALPHA, A, IA, JA, DESCA, B, IB, JB,
/// DESCB, BETA, C, IC, JC, DESCC)`.
pub mod pdgemm {
    pub const TRANSA: u32 = 1;
    pub const TRANSB: u32 = 2;
    pub const M: u32 = 3;
    pub const N: u32 = 4;
    pub const K: u32 = 5;
    pub const ALPHA: u32 = 6;
    pub const A: u32 = 7;
    pub const DESCA: u32 = 10;
    pub const B: u32 = 11;
    pub const DESCB: u32 = 14;
    pub const BETA: u32 = 15;
    pub const C: u32 = 16;
    pub const DESCC: u32 = 19;
}

/// ftla's own `PDCG(N, A, IA, JA, DESCA, B, IB, JB, DESCB, X, IX, JX,
/// DESCX, TOL, MAXIT)` (`pdcg`, `pdcg_ft` and the C ABI's `pdcg_ft_`).
pub mod pdcg {
    use super::MatrixPositions;

    pub const N: u32 = 1;
    pub const A: u32 = 2;
    pub const IA: u32 = 3;
    pub const JA: u32 = 4;
    pub const DESCA: u32 = 5;
    pub const B: u32 = 6;
    pub const IB: u32 = 7;
    pub const JB: u32 = 8;
    pub const DESCB: u32 = 9;
    pub const X: u32 = 10;
    pub const IX: u32 = 11;
    pub const JX: u32 = 12;
    pub const DESCX: u32 = 13;
    pub const TOL: u32 = 14;
    pub const MAXIT: u32 = 15;
    /// A's arguments (N×N).
    pub const MATRIX_A: MatrixPositions = MatrixPositions { data: A, m: N, n: N, ia: IA, ja: JA, desc: DESCA };
    /// B's arguments (N×1).
    pub const MATRIX_B: MatrixPositions = MatrixPositions { data: B, m: N, n: N, ia: IB, ja: JB, desc: DESCB };
    /// X's arguments (N×1).
    pub const MATRIX_X: MatrixPositions = MatrixPositions { data: X, m: N, n: N, ia: IX, ja: JX, desc: DESCX };
}

/// ftla's `upper_solve(grid, a, n, b)` (R·X = B, R the upper triangle of
/// a QR factorization): a matrix's descriptor is the matrix's position.
/// `upper_solve_ft(region, factors, b, opts)` takes these (its protected
/// factors are A).
pub mod upper_solve {
    pub const A: u32 = 2;
    pub const N: u32 = 3;
    pub const B: u32 = 4;
}

/// ftla's `lu_residual(grid, a, lu, ipiv)`: a matrix's descriptor is the
/// matrix's position.
pub mod lu_residual {
    pub const A: u32 = 2;
    pub const LU: u32 = 3;
    pub const IPIV: u32 = 4;
}

/// `cholesky_residual(grid, uplo, a, factor)`: ftla's own.
pub mod cholesky_residual {
    pub const A: u32 = 3;
    pub const FACTOR: u32 = 4;
}
