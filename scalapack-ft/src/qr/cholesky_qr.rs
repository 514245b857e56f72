//! The CholeskyQR2 panel with Householder reconstruction (Fukaya,
//! Nakatsukasa, Yanagisawa, Yamamoto 2014; the reconstruction of
//! [`super::tall_skinny`]): the panel's explicit Q from its Gram matrix,
//! twice, then V, T and tau rebuilt from that Q, so that the panel leaves
//! ScaLAPACK's representation.
//!
//! 1. Pass 1: every process of the panel's column forms the Gram matrix of
//!    its rows (`AₚᵀAₚ`, DSYRK); one all-gather down the column, and every
//!    process sums them in process-row order (so all hold the same bits)
//!    and factors `G₁ = R₁ᵀR₁` (DPOTRF); `Q₁ₚ = Aₚ·R₁⁻¹` (DTRSM).
//! 2. Pass 2: the same on Q₁ (`G₂ = R₂ᵀR₂`); the top process also sends its
//!    first jb rows of Q₁, so that every process forms `Q_top`, the top
//!    jb×jb block of `Q = Q₁·R₂⁻¹`, and runs the reconstruction
//!    (`Q_top − S = V₁·U`).
//! 3. Each process's rows of V are `Q₁ₚ·(U·R₂)⁻¹` (one DTRSM), the top
//!    process's first jb rows V₁; R = `S·R₂·R₁`.
//!
//! All of it is level 3 over the panel's height — 4·m·jb² flops (DSYRK,
//! DTRSM, twice) against TSQR's local Householder QR and its V (about the
//! same count, but DGEQRT3's recursion runs far below the DGEMM rate on
//! narrow panels) — and two all-gathers of jb² and 2·jb² + 1 values per
//! process.
//!
//! # When it is not used
//! CholeskyQR squares the panel's condition number (that of its columns
//! scaled to one norm: column scaling alone does not hurt it). A panel is
//! refused — and factored by TSQR instead ([`super::PanelMethod::CholQr2`])
//! — when its Gram matrix is not numerically positive definite (rank
//! deficiency, overflow or underflow of the squares, a condition number
//! near 10⁸ or more), or when Q₁ is not orthonormal to
//! [`FIRST_PASS_TOLERANCE`] (Q₁ᵀQ₁ is formed by pass 2 anyway, so the test
//! is free: a condition number above about 10⁵ is refused). Past that test
//! Q₁ has condition ≈ 1 and the second pass leaves Q orthonormal to
//! rounding (Yamamoto et al. 2015): R, V and tau are a QR factorization as
//! accurate as TSQR's (the two R agree to about κ·u).
//!
//! # The same branch on every process
//! Pass 1's verdict (DPOTRF's INFO on each process) travels in pass 2's
//! all-gather, and the panel is refused if any process refused it, so the
//! processes agree even where their LAPACKs differ (a replacement on
//! another kind of CPU). Pass 2's verdict is the test of G₂ against I — Rust
//! arithmetic on the same gathered bits on every process —; past it G₂ is
//! within 10⁻⁶ of I entrywise and no Cholesky can fail on it.

use super::reflectors::Panel;
use super::tall_skinny::{reconstruct, Reconstruction};
use crate::blas::{self, Diag, Side, Trans, Uplo};
use crate::error::Result;
use crate::matrix::DistMatrix;
use blacs_ft::{Grid, Scope};

/// The largest `|Q₁ᵀQ₁ − I|` entry for which the second pass is trusted.
/// Pass 1 leaves about `u·κ(A)²` there: 10⁻⁶ refuses panels with a
/// condition number above about 10⁵ (generated random panels sit near
/// 10⁻¹⁴), well inside the range where CholeskyQR2 is known to be stable.
pub const FIRST_PASS_TOLERANCE: f64 = 1e-6;

/// Factors panel `j0..j0+jb` of `a` in place (R on and above the diagonal,
/// V below it) by CholeskyQR2 and returns its reflectors, or `None`, with
/// `a` untouched, where the panel is too ill-conditioned for it (every
/// process of the column returns the same, see the module's notes).
/// Called by every process of the owning process column; two all-gathers
/// down that column.
pub fn cholqr2_panel(grid: &Grid, a: &mut DistMatrix, j0: usize, jb: usize) -> Result<Option<Panel>> {
    let (lr0, lc0, ld) = (a.local_rows_before(j0), a.local_cols_before(j0), a.lld());
    let rows = a.local_rows() - lr0;
    let (base, lda) = (lr0 + lc0 * ld, ld.max(1));
    let nprow = grid.nprow() as usize;
    let top = a.row_owner(j0);
    let is_top = a.coords().0 == top;
    // Pass 1.
    let all = grid.allgather(Scope::Column, &gram(rows, jb, &a.local()[base..], lda))?;
    let r1 = read_pass1(&all, nprow, jb);
    // Pass 2 (every process sends its verdict on pass 1 with it).
    let mut q = vec![0.0; rows * jb];
    if let Some(r1) = &r1 {
        for c in 0..jb {
            q[c * rows..(c + 1) * rows].copy_from_slice(&a.local()[base + c * lda..base + c * lda + rows]);
        }
        solve_r(rows, jb, r1, &mut q);
    }
    let all = grid.allgather(Scope::Column, &pass2_message(rows, jb, r1.is_some().then_some(&q[..]), is_top))?;
    let (Some(r1), Some((g2, q1_top))) = (r1, read_pass2(&all, nprow, top, jb)) else {
        return Ok(None);
    };
    // (The matrix's last row in this panel: its last column has nothing below.)
    let ends_matrix = a.m() - j0 == jb;
    let Some(finish) = finish(g2, q1_top, &r1, jb, ends_matrix) else {
        return Ok(None);
    };
    store(&mut a.local_mut()[base..], lda, rows, jb, &mut q, &finish, is_top);
    Ok(Some(Panel { j0, jb, v: q, lrows: rows, t: finish.rec.t }))
}

/// The `count` gathered Gram matrices of pass 1 ([`gram`], in process-row
/// order): R₁, the Cholesky factor of their sum, or `None` (refused).
pub fn read_pass1(all: &[f64], count: usize, jb: usize) -> Option<Vec<f64>> {
    cholesky_r(sum_blocks(all, count, jb * jb, jb * jb), jb)
}

/// Pass 2's message from one process (`2·jb² + 1` values): the Gram
/// matrix of its `rows` rows of Q₁ (`q`, leading dimension `rows`), the
/// first jb rows of Q₁ on the top process (zeros elsewhere), then its
/// verdict on pass 1 (1: accepted). A process that refused pass 1 (`q`
/// `None`) sends zeros and 0.
pub fn pass2_message(rows: usize, jb: usize, q: Option<&[f64]>, top: bool) -> Vec<f64> {
    let square = jb * jb;
    let mut message = vec![0.0; 2 * square + 1];
    if let Some(q) = q {
        message[..square].copy_from_slice(&gram(rows, jb, q, rows.max(1)));
        if top {
            for c in 0..jb {
                message[square + c * jb..square + (c + 1) * jb].copy_from_slice(&q[c * rows..c * rows + jb]);
            }
        }
        message[2 * square] = 1.0;
    }
    message
}

/// The `count` gathered [`pass2_message`]s: the summed `G₂ = Q₁ᵀQ₁` and the
/// `top` process's first jb rows of Q₁, or `None` where any process
/// refused pass 1.
pub fn read_pass2(all: &[f64], count: usize, top: usize, jb: usize) -> Option<(Vec<f64>, &[f64])> {
    let (square, stride) = (jb * jb, 2 * jb * jb + 1);
    if (0..count).any(|p| all[p * stride + stride - 1] != 1.0) {
        return None;
    }
    let q1_top = &all[top * stride + square..top * stride + 2 * square];
    Some((sum_blocks(all, count, stride, square), q1_top))
}

/// `AᵀA` of the `rows`×`jb` matrix `a` (leading dimension `lda`): its upper
/// triangle, zeros below (jb×jb).
pub fn gram(rows: usize, jb: usize, a: &[f64], lda: usize) -> Vec<f64> {
    let mut g = vec![0.0; jb * jb];
    if rows > 0 {
        blas::dsyrk(Uplo::Upper, Trans::Yes, jb, rows, 1.0, a, lda, 0.0, &mut g, jb);
    }
    g
}

/// The sum of the first `len` values of `count` gathered blocks of
/// `stride` values each, added in block order (so every process that sums
/// the same gathered values holds the same bits).
fn sum_blocks(all: &[f64], count: usize, stride: usize, len: usize) -> Vec<f64> {
    let mut sum = vec![0.0; len];
    for b in 0..count {
        for (s, x) in sum.iter_mut().zip(&all[b * stride..b * stride + len]) {
            *s += x;
        }
    }
    sum
}

/// The upper Cholesky factor R of a Gram matrix (upper triangle given),
/// zeros below its diagonal, or `None` where the matrix is not numerically
/// positive definite (or holds an infinity or a NaN).
pub fn cholesky_r(mut g: Vec<f64>, jb: usize) -> Option<Vec<f64>> {
    if g.iter().any(|x| !x.is_finite()) || blas::dpotrf(Uplo::Upper, jb, &mut g, jb) != 0 {
        return None;
    }
    for c in 0..jb {
        g[c * jb + c + 1..(c + 1) * jb].fill(0.0);
    }
    let nonsingular = (0..jb).all(|j| g[j + j * jb] > 0.0 && g[j + j * jb].is_finite());
    nonsingular.then_some(g)
}

/// `Q := Q·R⁻¹` for the `rows`×`jb` matrix `q` (leading dimension `rows`).
pub fn solve_r(rows: usize, jb: usize, r: &[f64], q: &mut [f64]) {
    if rows > 0 {
        blas::dtrsm(Side::Right, Uplo::Upper, Trans::No, Diag::NonUnit, rows, jb, 1.0, r, jb, q, rows);
    }
}

/// What the second pass gives every process of the column.
pub struct Finish {
    /// The Householder form of the panel (V₁, U, S, T).
    pub rec: Reconstruction,
    /// `U·R₂` (upper triangular): the rows of V are `Q₁·(U·R₂)⁻¹`.
    pub w: Vec<f64>,
    /// The panel's R, `S·R₂·R₁` (upper triangular).
    pub r: Vec<f64>,
}

/// The second pass from the summed `G₂ = Q₁ᵀQ₁` and the top jb rows of
/// Q₁: `None` where Q₁ is not orthonormal to [`FIRST_PASS_TOLERANCE`] or
/// G₂ has no Cholesky factor.
pub fn finish(g2: Vec<f64>, q1_top: &[f64], r1: &[f64], jb: usize, ends_matrix: bool) -> Option<Finish> {
    if g2.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let off = (0..jb)
        .flat_map(|c| (0..=c).map(move |r| (r, c)))
        .map(|(r, c)| (g2[r + c * jb] - if r == c { 1.0 } else { 0.0 }).abs())
        .fold(0.0f64, f64::max);
    if off > FIRST_PASS_TOLERANCE {
        return None;
    }
    let r2 = cholesky_r(g2, jb)?;
    let mut q_top = q1_top.to_vec();
    solve_r(jb, jb, &r2, &mut q_top);
    let rec = reconstruct(&q_top, jb, ends_matrix);
    let mut w = r2.clone();
    blas::dtrmm(Side::Left, Uplo::Upper, Trans::No, Diag::NonUnit, jb, jb, 1.0, &rec.u, jb, &mut w, jb);
    let mut r = r1.to_vec();
    blas::dtrmm(Side::Left, Uplo::Upper, Trans::No, Diag::NonUnit, jb, jb, 1.0, &r2, jb, &mut r, jb);
    for c in 0..jb {
        for (row, s) in rec.s.iter().enumerate().take(c + 1) {
            r[row + c * jb] *= s;
        }
    }
    Some(Finish { rec, w, r })
}

/// Turns this process's rows of Q₁ (`q`, `rows`×`jb`, leading dimension
/// `rows`) into its rows of V and writes the factored panel into `a`
/// (leading dimension `lda`) in ScaLAPACK's layout: V below the diagonal
/// and, on the top process, R on and above it (its first jb rows of V are
/// V₁).
pub fn store(a: &mut [f64], lda: usize, rows: usize, jb: usize, q: &mut [f64], f: &Finish, top: bool) {
    // (Ending the matrix, U and so W are singular in their last column, but
    // then the top process's jb rows are all there is.)
    if rows == 0 {
        return;
    }
    let skip = if top { jb } else { 0 };
    if rows > skip {
        blas::dtrsm(
            Side::Right,
            Uplo::Upper,
            Trans::No,
            Diag::NonUnit,
            rows - skip,
            jb,
            1.0,
            &f.w,
            jb,
            &mut q[skip..],
            rows,
        );
    }
    if top {
        for c in 0..jb {
            q[c * rows..c * rows + jb].copy_from_slice(&f.rec.v1[c * jb..(c + 1) * jb]);
        }
    }
    for c in 0..jb {
        let col = &mut a[c * lda..c * lda + rows];
        col[skip..].copy_from_slice(&q[c * rows + skip..(c + 1) * rows]);
        if top {
            for row in 0..jb {
                col[row] = if row <= c { f.r[row + c * jb] } else { q[c * rows + row] };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qr::panel_checks::{assert_factors, assert_r_is_lapacks, data};

    /// The panel's rows split into `counts` pieces as if held by that many
    /// processes (the first is the top one), run through both passes:
    /// V (m×jb), T and the stored panel, or `None` where refused.
    fn cholqr2(a0: &[f64], m: usize, jb: usize, counts: &[usize]) -> Option<(Vec<f64>, Vec<f64>, Vec<f64>)> {
        let mut pieces: Vec<Vec<f64>> = Vec::new();
        let mut start = 0;
        for &rows in counts {
            pieces.push((0..jb).flat_map(|c| a0[c * m + start..c * m + start + rows].to_vec()).collect());
            start += rows;
        }
        let all: Vec<f64> = pieces.iter().zip(counts).flat_map(|(p, &rows)| gram(rows, jb, p, rows.max(1))).collect();
        let r1 = read_pass1(&all, counts.len(), jb)?;
        let mut qs = pieces.clone();
        let mut all = Vec::new();
        for (slot, (q, &rows)) in qs.iter_mut().zip(counts).enumerate() {
            solve_r(rows, jb, &r1, q);
            all.extend(pass2_message(rows, jb, Some(q), slot == 0));
        }
        let (g2, q1_top) = read_pass2(&all, counts.len(), 0, jb)?;
        let f = finish(g2, q1_top, &r1, jb, m == jb)?;
        let (mut v, mut stored) = (vec![0.0; m * jb], vec![0.0; m * jb]);
        let mut start = 0;
        for (slot, ((p, q), &rows)) in pieces.iter_mut().zip(&mut qs).zip(counts).enumerate() {
            store(p, rows.max(1), rows, jb, q, &f, slot == 0);
            for c in 0..jb {
                v[c * m + start..c * m + start + rows].copy_from_slice(&q[c * rows..(c + 1) * rows]);
                stored[c * m + start..c * m + start + rows].copy_from_slice(&p[c * rows..(c + 1) * rows]);
            }
            start += rows;
        }
        Some((v, f.rec.t, stored))
    }

    /// The factorization reproduces the panel, Q is orthogonal, and R is
    /// LAPACK's (signs included).
    fn check(a0: &[f64], m: usize, jb: usize, counts: &[usize]) {
        let (v, t, stored) = cholqr2(a0, m, jb, counts).expect("a well-conditioned panel is accepted");
        assert_factors(a0, m, jb, &v, &t, &stored);
        assert_r_is_lapacks(a0, m, jb, &stored, false);
    }

    #[test]
    fn both_passes_and_reconstruction_reproduce_the_panel() {
        let (m, jb) = (300, 16);
        let a0 = data(m, jb, 1);
        check(&a0, m, jb, &[m]);
        check(&a0, m, jb, &[100, 200]);
        check(&a0, m, jb, &[16, 5, 0, 279]);
        // A square panel ending the matrix (tau = 0 in its last column).
        check(&data(jb, jb, 4), jb, jb, &[jb]);
        // Scaled far from 1 (the squares stay in range).
        let scaled: Vec<f64> = a0.iter().map(|x| x * 1e100).collect();
        check(&scaled, m, jb, &[150, 150]);
    }

    #[test]
    fn ill_conditioned_rank_deficient_and_out_of_range_panels_are_refused() {
        let (m, jb) = (120, 8);
        let a0 = data(m, jb, 2);
        // A repeated column (rank deficient) and a zero column.
        let mut dup = a0.clone();
        dup.copy_within(m..2 * m, 3 * m);
        assert!(cholqr2(&dup, m, jb, &[60, 60]).is_none());
        let mut zero = a0.clone();
        zero[5 * m..6 * m].fill(0.0);
        assert!(cholqr2(&zero, m, jb, &[60, 60]).is_none());
        // Two nearly equal columns (condition ~1e8): refused; ~1e3, and
        // columns graded over 8 decades (CholeskyQR is blind to column
        // scaling): accepted and exact.
        let near = |gap: f64| -> Vec<f64> {
            let mut b = a0.clone();
            for r in 0..m {
                b[4 * m + r] = a0[2 * m + r] + gap * a0[4 * m + r];
            }
            b
        };
        assert!(cholqr2(&near(1e-8), m, jb, &[60, 60]).is_none());
        check(&near(1e-3), m, jb, &[60, 60]);
        let graded: Vec<f64> =
            (0..m * jb).map(|i| a0[i] * 10f64.powf(-8.0 * (i / m) as f64 / (jb - 1) as f64)).collect();
        check(&graded, m, jb, &[60, 60]);
        // Squares out of range (overflow; underflow to zero).
        for scale in [1e300, 1e-300] {
            let s: Vec<f64> = a0.iter().map(|x| x * scale).collect();
            assert!(cholqr2(&s, m, jb, &[60, 60]).is_none(), "scale {scale:e}");
        }
    }
}
