//! Local BLAS / LAPACK kernels, column-major, through the `blas` and
//! `lapack` crates (linked to the system OpenBLAS by `blas-src` /
//! `openblas-src`), with the checks a caller inside this crate needs.
//! Dimensions are `usize`; leading dimensions must be ≥ max(1, rows). The
//! wrappers check slice lengths in debug builds; callers inside the crate
//! pass consistent shapes.

// Links the BLAS/LAPACK provider (the system OpenBLAS).
use blas_src as _;
use openblas_src as _;

fn i(x: usize) -> i32 {
    debug_assert!(x <= i32::MAX as usize);
    x as i32
}

/// Transposition of an operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trans {
    No,
    Yes,
}

impl Trans {
    fn ch(self) -> u8 {
        match self {
            Trans::No => b'N',
            Trans::Yes => b'T',
        }
    }
}

/// `C = alpha·op(A)·op(B) + beta·C`, `C` m×n, inner dimension k.
pub fn dgemm(
    ta: Trans,
    tb: Trans,
    m: usize,
    n: usize,
    k: usize,
    alpha: f64,
    a: &[f64],
    lda: usize,
    b: &[f64],
    ldb: usize,
    beta: f64,
    c: &mut [f64],
    ldc: usize,
) {
    if m == 0 || n == 0 {
        return;
    }
    debug_assert!(c.len() >= ldc * (n - 1) + m);
    let (lda, ldb, ldc) = (lda.max(1), ldb.max(1), ldc.max(1));
    // SAFETY: shapes are consistent by the caller's contract (checked in debug builds).
    unsafe {
        blas::dgemm(ta.ch(), tb.ch(), i(m), i(n), i(k), alpha, a, i(lda), b, i(ldb), beta, c, i(ldc));
    }
}

/// Which side a triangular matrix multiplies from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Left,
    Right,
}

/// Upper or lower triangle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Uplo {
    Upper,
    Lower,
}

/// Unit or non-unit diagonal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Diag {
    Unit,
    NonUnit,
}

fn tri_chars(side: Side, uplo: Uplo, diag: Diag) -> (u8, u8, u8) {
    (
        if side == Side::Left { b'L' } else { b'R' },
        if uplo == Uplo::Upper { b'U' } else { b'L' },
        if diag == Diag::Unit { b'U' } else { b'N' },
    )
}

/// The shared calling sequence of DTRMM and DTRSM.
type TriangularKernel = unsafe fn(u8, u8, u8, u8, i32, i32, f64, &[f64], i32, &mut [f64], i32);

fn triangular(
    kernel: TriangularKernel,
    (side, uplo, ta, diag): (Side, Uplo, Trans, Diag),
    m: usize,
    n: usize,
    alpha: f64,
    a: &[f64],
    lda: usize,
    b: &mut [f64],
    ldb: usize,
) {
    if m == 0 || n == 0 {
        return;
    }
    let (s, u, d) = tri_chars(side, uplo, diag);
    let (m, n, lda, ldb) = (i(m), i(n), i(lda.max(1)), i(ldb.max(1)));
    // SAFETY: shapes are consistent by the caller's contract.
    unsafe { kernel(s, u, ta.ch(), d, m, n, alpha, a, lda, b, ldb) }
}

/// `B = alpha·op(A)·B` (left) or `B = alpha·B·op(A)` (right), A triangular.
pub fn dtrmm(
    side: Side,
    uplo: Uplo,
    ta: Trans,
    diag: Diag,
    m: usize,
    n: usize,
    alpha: f64,
    a: &[f64],
    lda: usize,
    b: &mut [f64],
    ldb: usize,
) {
    triangular(blas::dtrmm, (side, uplo, ta, diag), m, n, alpha, a, lda, b, ldb)
}

/// Solves `op(A)·X = alpha·B` (left) or `X·op(A) = alpha·B` (right) in place.
pub fn dtrsm(
    side: Side,
    uplo: Uplo,
    ta: Trans,
    diag: Diag,
    m: usize,
    n: usize,
    alpha: f64,
    a: &[f64],
    lda: usize,
    b: &mut [f64],
    ldb: usize,
) {
    triangular(blas::dtrsm, (side, uplo, ta, diag), m, n, alpha, a, lda, b, ldb)
}

/// `y = alpha·op(A)·x + beta·y`, A m×n, unit strides.
pub fn dgemv(t: Trans, m: usize, n: usize, alpha: f64, a: &[f64], lda: usize, x: &[f64], beta: f64, y: &mut [f64]) {
    let (rows, _cols) = if t == Trans::No { (m, n) } else { (n, m) };
    if rows == 0 {
        return;
    }
    if m == 0 || n == 0 {
        for v in y.iter_mut().take(rows) {
            *v *= beta;
        }
        return;
    }
    // SAFETY: shapes are consistent by the caller's contract.
    unsafe { blas::dgemv(t.ch(), i(m), i(n), alpha, a, i(lda.max(1)), x, 1, beta, y, 1) }
}

/// `A += alpha·x·yᵀ`, A m×n, unit strides.
pub fn dger(m: usize, n: usize, alpha: f64, x: &[f64], y: &[f64], a: &mut [f64], lda: usize) {
    if m == 0 || n == 0 {
        return;
    }
    // SAFETY: shapes are consistent by the caller's contract.
    unsafe { blas::dger(i(m), i(n), alpha, x, 1, y, 1, a, i(lda.max(1))) }
}

/// Recursive QR of an m×n panel (m ≥ n): V below the diagonal of `a`, R on
/// and above it, the n×n upper-triangular block-reflector factor in `t`
/// (whose diagonal holds tau). LAPACK `DGEQRT3`.
pub fn dgeqrt3(m: usize, n: usize, a: &mut [f64], lda: usize, t: &mut [f64], ldt: usize) -> i32 {
    if n == 0 {
        return 0;
    }
    let mut info = 0;
    // SAFETY: shapes are consistent by the caller's contract.
    unsafe { lapack::dgeqrt3(i(m), i(n), a, i(lda.max(1)), t, i(ldt.max(1)), &mut info) };
    info
}

/// Cholesky factorization of the n×n symmetric positive definite matrix
/// whose `uplo` triangle `a` holds (LAPACK `DPOTRF`): the factor overwrites
/// that triangle, the other is not referenced. Returns INFO (`j > 0`: the
/// leading minor of order `j` is not positive definite).
pub fn dpotrf(uplo: Uplo, n: usize, a: &mut [f64], lda: usize) -> i32 {
    if n == 0 {
        return 0;
    }
    let u = if uplo == Uplo::Upper { b'U' } else { b'L' };
    let mut info = 0;
    // SAFETY: shapes are consistent by the caller's contract.
    unsafe { lapack::dpotrf(u, i(n), a, i(lda.max(1)), &mut info) };
    info
}

/// `C = alpha·A·Aᵀ + beta·C` (`t` = No, A n×k) or `alpha·Aᵀ·A + beta·C`
/// (`t` = Yes, A k×n) on the `uplo` triangle of the n×n `c` (BLAS
/// `DSYRK`); the other triangle is not referenced.
#[allow(clippy::too_many_arguments)]
pub fn dsyrk(
    uplo: Uplo,
    t: Trans,
    n: usize,
    k: usize,
    alpha: f64,
    a: &[f64],
    lda: usize,
    beta: f64,
    c: &mut [f64],
    ldc: usize,
) {
    if n == 0 {
        return;
    }
    let u = if uplo == Uplo::Upper { b'U' } else { b'L' };
    // SAFETY: shapes are consistent by the caller's contract.
    unsafe { blas::dsyrk(u, t.ch(), i(n), i(k), alpha, a, i(lda.max(1)), beta, c, i(ldc.max(1))) }
}

/// LU with partial pivoting of an m×n matrix (LAPACK `DGETRF`); `ipiv`
/// receives 1-based row interchanges (LAPACK's convention). Returns INFO.
pub fn dgetrf(m: usize, n: usize, a: &mut [f64], lda: usize, ipiv: &mut [i32]) -> i32 {
    if m == 0 || n == 0 {
        return 0;
    }
    let mut info = 0;
    // SAFETY: shapes are consistent by the caller's contract.
    unsafe { lapack::dgetrf(i(m), i(n), a, i(lda.max(1)), ipiv, &mut info) };
    info
}

/// Least squares of a full-rank m×n `a` (m ≥ n) for the `nrhs` columns
/// of `b` (ldb ≥ m): on exit rows 0..n of `b` hold X, `a` its QR
/// factorization (LAPACK `DGELS` with TRANS = 'N'; the reference a
/// distributed least-squares solve is checked against). Returns INFO.
pub fn dgels(m: usize, n: usize, nrhs: usize, a: &mut [f64], lda: usize, b: &mut [f64], ldb: usize) -> i32 {
    let mut info = 0;
    let mut query = [0.0];
    // SAFETY: shapes are consistent by the caller's contract; the first
    // call only asks for the workspace's length.
    unsafe {
        lapack::dgels(b'N', i(m), i(n), i(nrhs), a, i(lda.max(1)), b, i(ldb.max(1)), &mut query, -1, &mut info, 1)
    };
    let mut work = vec![0.0; (query[0] as usize).max(1)];
    let lwork = i(work.len());
    // SAFETY: as above, with the workspace it asked for.
    unsafe {
        lapack::dgels(b'N', i(m), i(n), i(nrhs), a, i(lda.max(1)), b, i(ldb.max(1)), &mut work, lwork, &mut info, 1)
    };
    info
}

/// An OpenBLAS extension of the linked BLAS, looked up when called: where
/// the BLAS is another one, it is simply not there.
fn openblas_symbol(name: &std::ffi::CStr) -> Option<*mut libc::c_void> {
    // SAFETY: dlsym on the global namespace with a NUL-terminated name.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}

/// One BLAS thread per rank: the ranks are the parallelism (OpenBLAS's
/// `openblas_set_num_threads`; other BLAS libraries are left as they are).
pub fn use_single_thread() {
    if let Some(p) = openblas_symbol(c"openblas_set_num_threads") {
        // SAFETY: OpenBLAS's `void openblas_set_num_threads(int)`.
        let set: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(p) };
        set(1);
    }
}

/// The OpenBLAS kernel in use (e.g. "Haswell", "SkylakeX"; "unknown" for
/// another BLAS).
pub fn kernel_name() -> String {
    let Some(p) = openblas_symbol(c"openblas_get_corename") else {
        return "unknown".into();
    };
    // SAFETY: OpenBLAS's `char *openblas_get_corename(void)`, a static
    // NUL-terminated string.
    unsafe {
        let get: extern "C" fn() -> *const libc::c_char = std::mem::transmute(p);
        let name = get();
        if name.is_null() {
            return "unknown".into();
        }
        std::ffi::CStr::from_ptr(name).to_string_lossy().into_owned()
    }
}

/// Local DGEMM rate in Gflop/s for n×n×n (after one warm-up call).
pub fn measure_dgemm_gflops(n: usize) -> f64 {
    let a: Vec<f64> = (0..n * n).map(|k| ((k * 7919) % 1000) as f64 * 1e-3 - 0.5).collect();
    let b = a.clone();
    let mut c = vec![0.0; n * n];
    dgemm(Trans::No, Trans::No, n, n, n, 1.0, &a, n, &b, n, 0.0, &mut c, n);
    let reps = 3;
    let t = std::time::Instant::now();
    for _ in 0..reps {
        dgemm(Trans::No, Trans::No, n, n, n, 1.0, &a, n, &b, n, 0.0, &mut c, n);
    }
    let s = t.elapsed().as_secs_f64();
    2.0 * (n as f64).powi(3) * reps as f64 / s / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dgemm_matches_a_hand_product() {
        // A = [1 2; 3 4], B = [5 6; 7 8] (column-major)
        let a = [1.0, 3.0, 2.0, 4.0];
        let b = [5.0, 7.0, 6.0, 8.0];
        let mut c = [0.0; 4];
        dgemm(Trans::No, Trans::No, 2, 2, 2, 1.0, &a, 2, &b, 2, 0.0, &mut c, 2);
        assert_eq!(c, [19.0, 43.0, 22.0, 50.0]);
        dgemm(Trans::Yes, Trans::No, 2, 2, 2, 1.0, &a, 2, &b, 2, 0.0, &mut c, 2);
        assert_eq!(c, [26.0, 38.0, 30.0, 44.0]);
    }

    #[test]
    fn dgeqrt3_gives_an_orthogonal_factorization() {
        let (m, n) = (6, 3);
        let a0: Vec<f64> = (0..m * n).map(|k| ((k * 37 % 11) as f64) - 5.0).collect();
        let mut a = a0.clone();
        let mut t = vec![0.0; n * n];
        assert_eq!(dgeqrt3(m, n, &mut a, m, &mut t, n), 0);
        // Q·R via (I - V T Vᵀ)·[R; 0]
        let mut v = vec![0.0; m * n];
        let mut r = vec![0.0; m * n];
        for j in 0..n {
            for i in 0..m {
                v[i + j * m] = if i == j {
                    1.0
                } else if i > j {
                    a[i + j * m]
                } else {
                    0.0
                };
                r[i + j * m] = if i <= j { a[i + j * m] } else { 0.0 };
            }
        }
        let mut w = vec![0.0; n * n];
        dgemm(Trans::Yes, Trans::No, n, n, m, 1.0, &v, m, &r, m, 0.0, &mut w, n);
        dtrmm(Side::Left, Uplo::Upper, Trans::No, Diag::NonUnit, n, n, 1.0, &t, n, &mut w, n);
        dgemm(Trans::No, Trans::No, m, n, n, -1.0, &v, m, &w, n, 1.0, &mut r, m);
        for (x, y) in r.iter().zip(&a0) {
            approx::assert_abs_diff_eq!(x, y, epsilon = 1e-12);
        }
    }

    #[test]
    fn the_kernel_has_a_name() {
        assert!(!kernel_name().is_empty());
    }
}
