//! Local BLAS / LAPACK kernels (OpenBLAS), column-major, with the checks a
//! caller inside this crate needs. Dimensions are `usize`; leading
//! dimensions must be ≥ max(1, rows). The wrappers check slice lengths in
//! debug builds; callers inside the crate pass consistent shapes.

#![allow(clippy::missing_safety_doc)]

use std::os::raw::{c_char, c_int};

type Len = usize; // hidden Fortran string-length arguments

extern "C" {
    fn dgemm_(
        ta: *const c_char,
        tb: *const c_char,
        m: *const c_int,
        n: *const c_int,
        k: *const c_int,
        alpha: *const f64,
        a: *const f64,
        lda: *const c_int,
        b: *const f64,
        ldb: *const c_int,
        beta: *const f64,
        c: *mut f64,
        ldc: *const c_int,
        la: Len,
        lb: Len,
    );
    fn dtrmm_(
        side: *const c_char,
        uplo: *const c_char,
        ta: *const c_char,
        diag: *const c_char,
        m: *const c_int,
        n: *const c_int,
        alpha: *const f64,
        a: *const f64,
        lda: *const c_int,
        b: *mut f64,
        ldb: *const c_int,
        l1: Len,
        l2: Len,
        l3: Len,
        l4: Len,
    );
    fn dtrsm_(
        side: *const c_char,
        uplo: *const c_char,
        ta: *const c_char,
        diag: *const c_char,
        m: *const c_int,
        n: *const c_int,
        alpha: *const f64,
        a: *const f64,
        lda: *const c_int,
        b: *mut f64,
        ldb: *const c_int,
        l1: Len,
        l2: Len,
        l3: Len,
        l4: Len,
    );
    fn dgemv_(
        t: *const c_char,
        m: *const c_int,
        n: *const c_int,
        alpha: *const f64,
        a: *const f64,
        lda: *const c_int,
        x: *const f64,
        incx: *const c_int,
        beta: *const f64,
        y: *mut f64,
        incy: *const c_int,
        l: Len,
    );
    fn dger_(
        m: *const c_int,
        n: *const c_int,
        alpha: *const f64,
        x: *const f64,
        incx: *const c_int,
        y: *const f64,
        incy: *const c_int,
        a: *mut f64,
        lda: *const c_int,
    );
    fn dgeqrt3_(
        m: *const c_int,
        n: *const c_int,
        a: *mut f64,
        lda: *const c_int,
        t: *mut f64,
        ldt: *const c_int,
        info: *mut c_int,
    );
    fn dgetrf_(m: *const c_int, n: *const c_int, a: *mut f64, lda: *const c_int, ipiv: *mut c_int, info: *mut c_int);
    fn openblas_set_num_threads(n: c_int);
    fn openblas_get_corename() -> *const c_char;
}

fn i(x: usize) -> c_int {
    debug_assert!(x <= c_int::MAX as usize);
    x as c_int
}

/// Transposition of an operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trans {
    No,
    Yes,
}

impl Trans {
    fn ch(self) -> c_char {
        match self {
            Trans::No => b'N' as c_char,
            Trans::Yes => b'T' as c_char,
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
        dgemm_(
            &ta.ch(),
            &tb.ch(),
            &i(m),
            &i(n),
            &i(k),
            &alpha,
            a.as_ptr(),
            &i(lda),
            b.as_ptr(),
            &i(ldb),
            &beta,
            c.as_mut_ptr(),
            &i(ldc),
            1,
            1,
        )
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

fn tri_chars(side: Side, uplo: Uplo, diag: Diag) -> (c_char, c_char, c_char) {
    (
        if side == Side::Left { b'L' } else { b'R' } as c_char,
        if uplo == Uplo::Upper { b'U' } else { b'L' } as c_char,
        if diag == Diag::Unit { b'U' } else { b'N' } as c_char,
    )
}

/// The shared calling sequence of DTRMM and DTRSM.
type TriangularKernel = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_char,
    *const c_char,
    *const c_int,
    *const c_int,
    *const f64,
    *const f64,
    *const c_int,
    *mut f64,
    *const c_int,
    Len,
    Len,
    Len,
    Len,
);

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
    unsafe { kernel(&s, &u, &ta.ch(), &d, &m, &n, &alpha, a.as_ptr(), &lda, b.as_mut_ptr(), &ldb, 1, 1, 1, 1) }
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
    triangular(dtrmm_, (side, uplo, ta, diag), m, n, alpha, a, lda, b, ldb)
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
    triangular(dtrsm_, (side, uplo, ta, diag), m, n, alpha, a, lda, b, ldb)
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
    unsafe {
        dgemv_(&t.ch(), &i(m), &i(n), &alpha, a.as_ptr(), &i(lda.max(1)), x.as_ptr(), &1, &beta, y.as_mut_ptr(), &1, 1)
    }
}

/// `A += alpha·x·yᵀ`, A m×n, unit strides.
pub fn dger(m: usize, n: usize, alpha: f64, x: &[f64], y: &[f64], a: &mut [f64], lda: usize) {
    if m == 0 || n == 0 {
        return;
    }
    // SAFETY: shapes are consistent by the caller's contract.
    unsafe { dger_(&i(m), &i(n), &alpha, x.as_ptr(), &1, y.as_ptr(), &1, a.as_mut_ptr(), &i(lda.max(1))) }
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
    unsafe { dgeqrt3_(&i(m), &i(n), a.as_mut_ptr(), &i(lda.max(1)), t.as_mut_ptr(), &i(ldt.max(1)), &mut info) };
    info
}

/// LU with partial pivoting of an m×n matrix (LAPACK `DGETRF`); `ipiv`
/// receives 1-based row interchanges (LAPACK's convention). Returns INFO.
pub fn dgetrf(m: usize, n: usize, a: &mut [f64], lda: usize, ipiv: &mut [c_int]) -> i32 {
    if m == 0 || n == 0 {
        return 0;
    }
    let mut info = 0;
    // SAFETY: shapes are consistent by the caller's contract.
    unsafe { dgetrf_(&i(m), &i(n), a.as_mut_ptr(), &i(lda.max(1)), ipiv.as_mut_ptr(), &mut info) };
    info
}

/// One BLAS thread per rank: the ranks are the parallelism.
pub fn use_single_thread() {
    // SAFETY: plain setter.
    unsafe { openblas_set_num_threads(1) }
}

/// The OpenBLAS kernel in use (e.g. "Haswell", "SkylakeX").
pub fn kernel_name() -> String {
    // SAFETY: OpenBLAS returns a static NUL-terminated string.
    unsafe {
        let p = openblas_get_corename();
        if p.is_null() {
            return "unknown".into();
        }
        std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
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
            assert!((x - y).abs() < 1e-12, "{x} vs {y}");
        }
    }

    #[test]
    fn the_kernel_has_a_name() {
        assert!(!kernel_name().is_empty());
    }
}
