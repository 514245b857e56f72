//! Test checks shared by the panels that rebuild Householder reflectors
//! from an explicit Q (TSQR, CholeskyQR2): the factors they leave are a QR
//! factorization of the panel in ScaLAPACK's representation, with LAPACK's
//! R.

use crate::blas::{self, Diag, Side, Trans, Uplo};

/// `rows × cols` values uniform in [−0.5, 0.5), from `seed`.
pub fn data(rows: usize, cols: usize, seed: u64) -> Vec<f64> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..rows * cols).map(|_| rng.random_range(-0.5..0.5)).collect()
}

/// `(I − V·T·Vᵀ)` applied to the m×k matrix `x`.
pub fn apply_q(v: &[f64], t: &[f64], m: usize, jb: usize, x: &mut [f64], k: usize) {
    let mut w = vec![0.0; jb * k];
    blas::dgemm(Trans::Yes, Trans::No, jb, k, m, 1.0, v, m, x, m, 0.0, &mut w, jb);
    blas::dtrmm(Side::Left, Uplo::Upper, Trans::No, Diag::NonUnit, jb, k, 1.0, t, jb, &mut w, jb);
    blas::dgemm(Trans::No, Trans::No, m, k, jb, -1.0, v, m, &w, jb, 1.0, x, m);
}

/// The m×jb panel `a0` factored into V (unit lower trapezoidal, held below
/// the diagonal of `stored`), T and R (on and above it): `Q·[R; 0] = A`
/// and Q orthogonal.
pub fn assert_factors(a0: &[f64], m: usize, jb: usize, v: &[f64], t: &[f64], stored: &[f64]) {
    for c in 0..jb {
        assert_eq!(v[c * m + c], 1.0);
        assert!(v[c * m..c * m + c].iter().all(|&x| x == 0.0));
        assert_eq!(&stored[c * m + c + 1..(c + 1) * m], &v[c * m + c + 1..(c + 1) * m]);
    }
    let mut qr = vec![0.0; m * jb];
    for c in 0..jb {
        qr[c * m..c * m + c + 1].copy_from_slice(&stored[c * m..c * m + c + 1]);
    }
    apply_q(v, t, m, jb, &mut qr, jb);
    let anorm = max_abs(a0);
    let err = qr.iter().zip(a0).fold(0.0f64, |x, (p, q)| x.max((p - q).abs()));
    assert!(err <= 50.0 * f64::EPSILON * anorm * m as f64, "‖QR − A‖ = {err:e}");
    // QᵀQ = I on the first columns.
    let mut q = vec![0.0; m * jb];
    for c in 0..jb {
        q[c * m + c] = 1.0;
    }
    apply_q(v, t, m, jb, &mut q, jb);
    let mut g = vec![0.0; jb * jb];
    blas::dgemm(Trans::Yes, Trans::No, jb, jb, m, 1.0, &q, m, &q, m, 0.0, &mut g, jb);
    for c in 0..jb {
        for r in 0..jb {
            let want = if r == c { 1.0 } else { 0.0 };
            assert!((g[r + c * jb] - want).abs() < 50.0 * f64::EPSILON * m as f64);
        }
    }
}

/// R (on and above the diagonal of `stored`) is LAPACK's for `a0`: equal,
/// or equal up to the signs of its rows.
pub fn assert_r_is_lapacks(a0: &[f64], m: usize, jb: usize, stored: &[f64], up_to_signs: bool) {
    let anorm = max_abs(a0);
    let mut lap = a0.to_vec();
    let mut tl = vec![0.0; jb * jb];
    blas::dgeqrt3(m, jb, &mut lap, m, &mut tl, jb);
    for c in 0..jb {
        for r in 0..=c {
            let (ours, theirs) = match up_to_signs {
                false => (stored[r + c * m], lap[r + c * m]),
                true => (stored[r + c * m].abs(), lap[r + c * m].abs()),
            };
            assert!((ours - theirs).abs() <= 1e-10 * anorm * (m as f64).sqrt(), "R({r},{c}): {ours} vs {theirs}");
        }
    }
}

fn max_abs(a: &[f64]) -> f64 {
    a.iter().fold(0.0f64, |x, y| x.max(y.abs()))
}
