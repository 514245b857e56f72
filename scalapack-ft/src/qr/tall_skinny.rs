//! The local arithmetic of a TSQR panel with Householder reconstruction
//! (Demmel, Grigori, Hoemmen, Langou 2012; Ballard, Demmel, Grigori,
//! Jacquelin, Nguyen, Solomonik 2014), free of communication so that it can
//! be tested and benchmarked on one process:
//!
//! 1. [`factor_local`]: each process's rows of the panel get their own
//!    tall-skinny QR (LAPACK's recursive DGEQRT3: level-3 work over the
//!    whole height at every level of the recursion, not DGEQR2's one pass
//!    per column).
//! 2. [`factor_stack`]: the small R factors, stacked, are factored once more
//!    (the reduction tree, flat: every process of the column holds all of
//!    them); its Q says how each process's local Q combines.
//! 3. [`reconstruct`]: with Q₁ the panel's top jb×jb block of the explicit
//!    TSQR Q, the LU factorization `Q − [S; 0] = V·U` without pivoting,
//!    where `S = diag(±1)` is chosen at each step opposite to the pivot's
//!    sign, gives the Householder vectors V (unit lower trapezoidal), the
//!    block-reflector factor `T = −U·S·V₁⁻ᵀ` and `R = S·R_tsqr`, so that
//!    `(I − V·T·Vᵀ)·[R; 0]` is the panel.
//! 4. [`local_v`]: each process forms its rows of V from its local factors
//!    with one DGEMM of its height, and stores R and V in the panel.
//!
//! # Signs
//! `R = S·R_tsqr` has the signs the reconstruction picks, which need not be
//! LAPACK's: DLARFG makes `R(j, j)` opposite in sign to the column's
//! (updated) diagonal entry, the reconstruction makes `S(j)` opposite to the
//! Q's. The rows of R (and the columns of Q) may therefore differ from
//! ScaLAPACK's by a factor −1. In exact arithmetic the reconstruction is
//! Householder QR with LAPACK's signs, so R, V and tau are LAPACK's; they
//! differ where LAPACK's reflector is the identity (`tau = 0`, a column
//! already exactly zero below the diagonal): this panel then stores a
//! reflector with `tau ≈ 2` that flips the row's sign instead, and a
//! rounding-level difference can decide the sign of a pivot near zero. The
//! matrix's last row (a square or wide matrix's last column has nothing
//! below the diagonal) gets LAPACK's `tau = 0` and sign. Both are valid QR
//! factorizations in ScaLAPACK's representation.

use crate::blas::{self, Diag, Side, Trans, Uplo};

/// Bytes of one piece of a process's rows: the local QR factors its rows in
/// pieces of about this size (L2-resident while DGEQRT3 recurses over
/// them), then the pieces' R factors once more. Measured on 65536×64
/// (benches/tsqr.rs, one thread): one DGEQRT3 over the whole height ≈ 55–60
/// ms, pieces of 512–1024 rows ≈ 33 ms, 4096 rows ≈ 37 ms.
const PIECE_BYTES: usize = 512 * 1024;

/// How one process's rows of a panel were factored locally.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalFactor {
    rows: usize,
    jb: usize,
    kind: LocalKind,
}

#[derive(Clone, Debug, PartialEq)]
enum LocalKind {
    /// Fewer rows than columns (or none): the rows themselves are this
    /// process's R (its local Q is the identity).
    Rows,
    /// Each piece factored by DGEQRT3 in place (Y below the diagonal, R on
    /// and above it); with several pieces, their stacked R factors factored
    /// again (`tree`: the first jb columns of that QR's Q).
    Pieces {
        pieces: Vec<Piece>,
        tree: Option<Vec<f64>>,
        /// The process's R (jb×jb, zeros below the diagonal).
        r: Vec<f64>,
        /// The first jb rows of the process's explicit local Q (jb×jb).
        head: Vec<f64>,
    },
}

/// One piece of a process's rows: its first local row, its row count and
/// its DGEQRT3 T (jb×jb).
#[derive(Clone, Debug, PartialEq)]
struct Piece {
    start: usize,
    rows: usize,
    t: Vec<f64>,
}

/// Splits `rows` (≥ jb) into pieces of about `target` rows, each at least
/// jb rows (the remainder spread over them).
fn piece_bounds(rows: usize, jb: usize, target: usize) -> Vec<(usize, usize)> {
    let target = target.max(jb);
    let count = (rows / target).max(1);
    let (base, extra) = (rows / count, rows % count);
    let mut start = 0;
    (0..count)
        .map(|p| {
            let len = base + usize::from(p < extra);
            start += len;
            (start - len, len)
        })
        .collect()
}

/// Factors the `rows`×`jb` panel `a` (leading dimension `lda`) in place, in
/// pieces of about 512 KiB (at least 2·jb rows each).
pub fn factor_local(rows: usize, jb: usize, a: &mut [f64], lda: usize) -> LocalFactor {
    factor_local_in_pieces(rows, jb, a, lda, (PIECE_BYTES / (8 * jb.max(1))).max(2 * jb))
}

/// [`factor_local`] in pieces of about `piece_rows` rows.
pub fn factor_local_in_pieces(rows: usize, jb: usize, a: &mut [f64], lda: usize, piece_rows: usize) -> LocalFactor {
    if rows < jb || jb == 0 {
        return LocalFactor { rows, jb, kind: LocalKind::Rows };
    }
    let pieces: Vec<Piece> = piece_bounds(rows, jb, piece_rows)
        .into_iter()
        .map(|(start, len)| {
            let mut t = vec![0.0; jb * jb];
            blas::dgeqrt3(len, jb, &mut a[start..], lda, &mut t, jb);
            Piece { start, rows: len, t }
        })
        .collect();
    let upper = |p: &Piece| -> Vec<f64> {
        let mut r = vec![0.0; jb * jb];
        for c in 0..jb {
            r[c * jb..c * jb + c + 1].copy_from_slice(&a[p.start + c * lda..p.start + c * lda + c + 1]);
        }
        r
    };
    // The first piece's Q on its first jb rows: I − Y₁·T·Y₁ᵀ.
    let first = &pieces[0];
    let identity: Vec<f64> = (0..jb * jb).map(|i| if i % (jb + 1) == 0 { 1.0 } else { 0.0 }).collect();
    let mut head = identity.clone();
    let k = local_k(jb, &a[first.start..], lda, &first.t, &identity);
    let mut y1k = k;
    blas::dtrmm(Side::Left, Uplo::Lower, Trans::No, Diag::Unit, jb, jb, 1.0, &a[first.start..], lda, &mut y1k, jb);
    for (h, d) in head.iter_mut().zip(&y1k) {
        *h -= d;
    }
    let (r, tree) = if pieces.len() == 1 {
        (upper(first), None)
    } else {
        let slots = pieces.len();
        let mut stack = vec![0.0; slots * jb * jb];
        for (slot, p) in pieces.iter().enumerate() {
            stack_block(&mut stack, slots, jb, slot, &upper(p));
        }
        let (r, q) = factor_stack(&mut stack, slots * jb, jb);
        let mut h = vec![0.0; jb * jb];
        blas::dgemm(Trans::No, Trans::No, jb, jb, jb, 1.0, &head, jb, &q, slots * jb, 0.0, &mut h, jb);
        head = h;
        (r, Some(q))
    };
    LocalFactor { rows, jb, kind: LocalKind::Pieces { pieces, tree, r, head } }
}

/// This process's share of the reduction, `2·jb²` values: its R (jb×jb; its
/// rows padded with zeros when it has fewer than jb), then the first jb
/// rows of its explicit local Q (what the top process's C must be
/// multiplied by to give the panel's Q₁).
pub fn tree_message(a: &[f64], lda: usize, f: &LocalFactor) -> Vec<f64> {
    let jb = f.jb;
    let mut msg = vec![0.0; 2 * jb * jb];
    match &f.kind {
        LocalKind::Rows => {
            for c in (0..jb).filter(|_| f.rows > 0) {
                msg[c * jb..c * jb + f.rows].copy_from_slice(&a[c * lda..c * lda + f.rows]);
            }
            for c in 0..jb {
                msg[jb * jb + c * (jb + 1)] = 1.0;
            }
        }
        LocalKind::Pieces { r, head, .. } => {
            msg[..jb * jb].copy_from_slice(r);
            msg[jb * jb..].copy_from_slice(head);
        }
    }
    msg
}

/// Places an R (jb×jb, the first half of a tree message) into slot `slot`
/// of the stack (`slots·jb` rows, `jb` columns).
pub fn stack_block(stack: &mut [f64], slots: usize, jb: usize, slot: usize, r: &[f64]) {
    let ld = slots * jb;
    for c in 0..jb {
        stack[c * ld + slot * jb..c * ld + slot * jb + jb].copy_from_slice(&r[c * jb..(c + 1) * jb]);
    }
}

/// Factors the stacked R factors (`rows`×`jb`, leading dimension `rows`,
/// overwritten): returns the panel's R (jb×jb, upper triangular) and the
/// first jb columns of the stack's Q (`rows`×`jb`), whose block `slot` is
/// the `C` of the process in that slot.
pub fn factor_stack(stack: &mut [f64], rows: usize, jb: usize) -> (Vec<f64>, Vec<f64>) {
    let mut t = vec![0.0; jb * jb];
    blas::dgeqrt3(rows, jb, stack, rows, &mut t, jb);
    let mut r = vec![0.0; jb * jb];
    for c in 0..jb {
        r[c * jb..c * jb + c + 1].copy_from_slice(&stack[c * rows..c * rows + c + 1]);
    }
    (r, explicit_q(rows, jb, stack, rows, &t))
}

/// The first jb columns of `I − Y·T·Yᵀ`, with Y the unit lower trapezoidal
/// `rows`×`jb` matrix stored below the diagonal of `y`.
fn explicit_q(rows: usize, jb: usize, y: &[f64], ldy: usize, t: &[f64]) -> Vec<f64> {
    // Q = E − Y·(T·Y₁ᵀ): M = T·Y₁ᵀ, then Q −= Y·M with Y made explicit.
    let mut m = vec![0.0; jb * jb];
    for c in 0..jb {
        m[c + c * jb] = 1.0;
        for r in 0..c {
            m[r + c * jb] = y[c + r * ldy]; // (Y₁ᵀ)(r, c) = Y₁(c, r), c > r
        }
    }
    blas::dtrmm(Side::Left, Uplo::Upper, Trans::No, Diag::NonUnit, jb, jb, 1.0, t, jb, &mut m, jb);
    let mut yx = vec![0.0; rows * jb];
    for c in 0..jb {
        yx[c * rows + c] = 1.0;
        yx[c * rows + c + 1..(c + 1) * rows].copy_from_slice(&y[c * ldy + c + 1..c * ldy + rows]);
    }
    let mut q = vec![0.0; rows * jb];
    for c in 0..jb {
        q[c * rows + c] = 1.0;
    }
    blas::dgemm(Trans::No, Trans::No, rows, jb, jb, -1.0, &yx, rows, &m, jb, 1.0, &mut q, rows);
    q
}

/// `K = T·Y₁ᵀ·C` for a locally factored block: the local Q applied to
/// `[C; 0]` is `[C; 0] − Y·K`. `y1` holds Y₁ strictly below its diagonal
/// (leading dimension `ldy`); `t` and `c` are jb×jb.
fn local_k(jb: usize, y1: &[f64], ldy: usize, t: &[f64], c: &[f64]) -> Vec<f64> {
    let mut k = c.to_vec();
    blas::dtrmm(Side::Left, Uplo::Lower, Trans::Yes, Diag::Unit, jb, jb, 1.0, y1, ldy, &mut k, jb);
    blas::dtrmm(Side::Left, Uplo::Upper, Trans::No, Diag::NonUnit, jb, jb, 1.0, t, jb, &mut k, jb);
    k
}

/// Q₁, the top jb×jb block of the panel's explicit Q: the top process's
/// local head (from its tree message) times its `C`. (The top process
/// always factors locally: it holds the jb rows of the diagonal block.)
pub fn top_q_block(jb: usize, top_message: &[f64], c: &[f64]) -> Vec<f64> {
    let mut q1 = vec![0.0; jb * jb];
    blas::dgemm(Trans::No, Trans::No, jb, jb, jb, 1.0, &top_message[jb * jb..], jb, c, jb, 0.0, &mut q1, jb);
    q1
}

/// The Householder form of the panel: V's top block, U, the signs S and T.
#[derive(Clone, Debug)]
pub struct Reconstruction {
    /// V₁: jb×jb unit lower triangular, explicit (ones on the diagonal,
    /// zeros above).
    pub v1: Vec<f64>,
    /// U, jb×jb upper triangular (zeros below).
    pub u: Vec<f64>,
    /// The signs S(j) = ±1: the panel's R is `S·R_tsqr`.
    pub s: Vec<f64>,
    /// The block-reflector factor T (jb×jb upper triangular, `tau = diag(T)`).
    pub t: Vec<f64>,
}

/// The modified LU of Ballard et al.: `Q₁ − S = V₁·U` without pivoting,
/// `S(j) = −sign` of the pivot as updated (so that |U(j, j)| ≥ 1), then
/// `T = −U·S·V₁⁻ᵀ`. This is Householder QR of the TSQR Q with LAPACK's
/// choice of signs, so V, T and R are LAPACK's up to rounding — except where
/// LAPACK's reflector is the identity (`tau = 0`).
///
/// `ends_matrix`: the panel's last row is the matrix's last row, so its last
/// column has nothing below the diagonal; LAPACK stores `tau = 0` there and
/// keeps the sign of R's last diagonal entry, and so does this: `S(jb−1)`
/// takes the pivot's own sign and `U(jb−1, jb−1) = 0`.
pub fn reconstruct(q1: &[f64], jb: usize, ends_matrix: bool) -> Reconstruction {
    let mut a = q1.to_vec();
    let mut s = vec![0.0; jb];
    for j in 0..jb {
        let d = a[j + j * jb];
        if ends_matrix && j + 1 == jb {
            // (|d| = 1 up to rounding: nothing is left to reflect.)
            s[j] = if d >= 0.0 { 1.0 } else { -1.0 };
            a[j + j * jb] = 0.0;
            break;
        }
        s[j] = if d >= 0.0 { -1.0 } else { 1.0 };
        let pivot = d - s[j];
        a[j + j * jb] = pivot;
        for i in j + 1..jb {
            a[i + j * jb] /= pivot;
        }
        for c in j + 1..jb {
            let ujc = a[j + c * jb];
            if ujc != 0.0 {
                for i in j + 1..jb {
                    a[i + c * jb] -= a[i + j * jb] * ujc;
                }
            }
        }
    }
    let mut v1 = vec![0.0; jb * jb];
    let mut u = vec![0.0; jb * jb];
    for c in 0..jb {
        u[c * jb..c * jb + c + 1].copy_from_slice(&a[c * jb..c * jb + c + 1]);
        v1[c * jb + c] = 1.0;
        v1[c * jb + c + 1..(c + 1) * jb].copy_from_slice(&a[c * jb + c + 1..(c + 1) * jb]);
    }
    // T = −(U·S)·V₁⁻ᵀ: scale U's columns by −S, then solve from the right.
    let mut t = vec![0.0; jb * jb];
    for c in 0..jb {
        for r in 0..=c {
            t[r + c * jb] = -u[r + c * jb] * s[c];
        }
    }
    blas::dtrsm(Side::Right, Uplo::Lower, Trans::Yes, Diag::Unit, jb, jb, 1.0, &v1, jb, &mut t, jb);
    for c in 0..jb {
        t[c * jb + c + 1..(c + 1) * jb].fill(0.0);
    }
    Reconstruction { v1, u, s, t }
}

/// Forms this process's rows of V (`rows`×`jb`, leading dimension `rows`,
/// into `v`) and writes the factored panel back into `a` in ScaLAPACK's
/// layout: V below the diagonal and, on the top process (`top =
/// Some((R_tsqr, S))`), the panel's R = S·R_tsqr on and above it.
///
/// `V = Q_local·C·U⁻¹` with Q_local from [`factor_local`] (`a`, `f`), except
/// that the top process's first jb rows are V₁. A piece whose Q is
/// `[D; 0] − Y·K` (D its block of the local tree's Q times C) has rows below
/// its first jb equal to `−Y₂·(K·U⁻¹)`: one DGEMM over the piece, reading Y
/// where DGEQRT3 left it; the piece's rows of V go to `a` while they are in
/// cache.
pub fn local_v(
    a: &mut [f64],
    lda: usize,
    f: &LocalFactor,
    c: &[f64],
    rec: &Reconstruction,
    top: Option<(&[f64], &[f64])>,
    v: &mut [f64],
) {
    let (rows, jb) = (f.rows, f.jb);
    if rows == 0 {
        return;
    }
    let solve_u = |x: &mut [f64], m: usize, ld: usize| {
        blas::dtrsm(Side::Right, Uplo::Upper, Trans::No, Diag::NonUnit, m, jb, 1.0, &rec.u, jb, x, ld);
    };
    // Rows `from..to` of V into `a`.
    let copy_back = |a: &mut [f64], v: &[f64], from: usize, to: usize| {
        for col in 0..jb {
            a[col * lda + from..col * lda + to].copy_from_slice(&v[col * rows + from..col * rows + to]);
        }
    };
    let (pieces, tree) = match &f.kind {
        LocalKind::Rows => {
            for col in 0..jb {
                v[col * rows..(col + 1) * rows].copy_from_slice(&c[col * jb..col * jb + rows]);
            }
            solve_u(v, rows, rows);
            copy_back(a, v, 0, rows);
            return;
        }
        LocalKind::Pieces { pieces, tree, .. } => (pieces, tree),
    };
    // D·U⁻¹ for every piece at once: (tree's Q)·(C·U⁻¹).
    let mut cu = c.to_vec();
    solve_u(&mut cu, jb, jb);
    let du_all = match tree {
        None => cu,
        Some(q) => {
            let srows = pieces.len() * jb;
            let mut d = vec![0.0; srows * jb];
            blas::dgemm(Trans::No, Trans::No, srows, jb, jb, 1.0, q, srows, &cu, jb, 0.0, &mut d, srows);
            d
        }
    };
    let ldd = du_all.len() / jb;
    for (p, piece) in pieces.iter().enumerate() {
        let du: Vec<f64> =
            (0..jb).flat_map(|col| du_all[col * ldd + p * jb..col * ldd + p * jb + jb].to_vec()).collect();
        let first_of_top = top.is_some() && p == 0;
        {
            let y = &a[piece.start..];
            let g = local_k(jb, y, lda, &piece.t, &du);
            let vp = &mut v[piece.start..];
            if first_of_top {
                for col in 0..jb {
                    vp[col * rows..col * rows + jb].copy_from_slice(&rec.v1[col * jb..(col + 1) * jb]);
                }
            } else {
                // D·U⁻¹ − Y₁·G.
                let mut y1g = g.clone();
                blas::dtrmm(Side::Left, Uplo::Lower, Trans::No, Diag::Unit, jb, jb, 1.0, y, lda, &mut y1g, jb);
                for col in 0..jb {
                    for r in 0..jb {
                        vp[col * rows + r] = du[col * jb + r] - y1g[col * jb + r];
                    }
                }
            }
            if piece.rows > jb {
                let below = piece.rows - jb;
                blas::dgemm(Trans::No, Trans::No, below, jb, jb, -1.0, &y[jb..], lda, &g, jb, 0.0, &mut vp[jb..], rows);
            }
        }
        let skip = if first_of_top { jb } else { 0 };
        copy_back(a, v, piece.start + skip, piece.start + piece.rows);
    }
    if let Some((r, s)) = top {
        for col in 0..jb {
            for row in 0..jb {
                a[col * lda + row] = if row <= col { s[row] * r[row + col * jb] } else { v[col * rows + row] };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qr::panel_checks::{assert_factors, assert_r_is_lapacks, data};

    /// The whole pipeline on one process, the panel's rows split into
    /// `counts` pieces as if held by that many processes (the first is the
    /// top one): returns V (m×jb, in the pieces' order), T and the stored
    /// panel (R and V as ScaLAPACK keeps them).
    fn tsqr(a0: &[f64], m: usize, jb: usize, counts: &[usize], piece: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        assert_eq!(counts.iter().sum::<usize>(), m);
        let slots = counts.len();
        let mut pieces: Vec<Vec<f64>> = Vec::new();
        let mut start = 0;
        for &rows in counts {
            let mut p = vec![0.0; rows * jb];
            for c in 0..jb {
                p[c * rows..(c + 1) * rows].copy_from_slice(&a0[c * m + start..c * m + start + rows]);
            }
            pieces.push(p);
            start += rows;
        }
        let factors: Vec<LocalFactor> = pieces
            .iter_mut()
            .zip(counts)
            .map(|(p, &rows)| factor_local_in_pieces(rows, jb, p, rows.max(1), piece))
            .collect();
        let msgs: Vec<Vec<f64>> =
            pieces.iter().zip(counts).zip(&factors).map(|((p, &rows), f)| tree_message(p, rows.max(1), f)).collect();
        let mut stack = vec![0.0; slots * jb * jb];
        for (slot, (msg, &rows)) in msgs.iter().zip(counts).enumerate() {
            assert_eq!(rows >= jb, matches!(factors[slot].kind, LocalKind::Pieces { .. }));
            stack_block(&mut stack, slots, jb, slot, msg);
        }
        let (r, q) = factor_stack(&mut stack, slots * jb, jb);
        let c_of = |slot: usize| -> Vec<f64> {
            let mut c = vec![0.0; jb * jb];
            for col in 0..jb {
                c[col * jb..(col + 1) * jb]
                    .copy_from_slice(&q[col * slots * jb + slot * jb..col * slots * jb + slot * jb + jb]);
            }
            c
        };
        let rec = reconstruct(&top_q_block(jb, &msgs[0], &c_of(0)), jb, m == jb);
        let mut v = vec![0.0; m * jb];
        let mut stored = vec![0.0; m * jb];
        let mut start = 0;
        for (slot, ((p, &rows), f)) in pieces.iter_mut().zip(counts).zip(&factors).enumerate() {
            let mut vl = vec![0.0; rows * jb];
            local_v(p, rows.max(1), f, &c_of(slot), &rec, (slot == 0).then_some((&r[..], &rec.s[..])), &mut vl);
            for c in 0..jb {
                v[c * m + start..c * m + start + rows].copy_from_slice(&vl[c * rows..(c + 1) * rows]);
                stored[c * m + start..c * m + start + rows].copy_from_slice(&p[c * rows..(c + 1) * rows]);
            }
            start += rows;
        }
        (v, rec.t, stored)
    }

    /// How R is compared with LAPACK's.
    #[derive(Clone, Copy, PartialEq)]
    enum SameR {
        /// Equal, signs included (the reconstruction is Householder QR with
        /// LAPACK's signs).
        Exactly,
        /// Equal up to the signs of its rows (LAPACK's tau = 0 columns).
        UpToSigns,
        /// Not unique (rank deficient): not compared.
        NotCompared,
    }

    /// Checks the factorization, whole local heights and pieces of 2·jb.
    fn check(a0: &[f64], m: usize, jb: usize, counts: &[usize], same_r: SameR) {
        for piece in [m, 2 * jb] {
            check_in_pieces(a0, m, jb, counts, same_r, piece);
        }
    }

    fn check_in_pieces(a0: &[f64], m: usize, jb: usize, counts: &[usize], same_r: SameR, piece: usize) {
        let (v, t, stored) = tsqr(a0, m, jb, counts, piece);
        assert_factors(a0, m, jb, &v, &t, &stored);
        // tau = diag(T) is a valid reflector scalar.
        for c in 0..jb {
            let vnorm2: f64 = v[c * m..(c + 1) * m].iter().map(|x| x * x).sum();
            // (tau = 0, H = I, only where the matrix ends: nothing below.)
            let tau = t[c + c * jb];
            let identity = m == jb && c + 1 == jb;
            assert!(if identity { tau == 0.0 } else { (tau * vnorm2 - 2.0).abs() < 1e-12 }, "tau = {tau}");
        }
        // R agrees with LAPACK's (up to the signs of its rows).
        if same_r != SameR::NotCompared {
            assert_r_is_lapacks(a0, m, jb, &stored, same_r == SameR::UpToSigns);
        }
    }

    #[test]
    fn local_qr_and_reconstruction_reproduce_the_panel() {
        let (m, jb) = (300, 16);
        let a0 = data(m, jb, 1);
        check(&a0, m, jb, &[m], SameR::Exactly);
        check(&a0, m, jb, &[100, 200], SameR::Exactly);
        // A piece with fewer rows than columns, an empty one, and a top
        // piece with exactly jb rows.
        check(&a0, m, jb, &[16, 5, 0, 279], SameR::Exactly);
        check(&a0, m, jb, &[40, 60, 100, 100], SameR::Exactly);
        // A square panel ending the matrix: its last column has nothing
        // below the diagonal, so tau = 0 there, as LAPACK has it.
        let sq = data(jb, jb, 4);
        check(&sq, jb, jb, &[jb], SameR::Exactly);
    }

    #[test]
    fn reconstruction_handles_rank_deficient_and_badly_scaled_panels() {
        let (m, jb) = (120, 8);
        // Columns 3 and 5 repeat column 1; column 6 is zero.
        let mut a0 = data(m, jb, 2);
        for r in 0..m {
            a0[3 * m + r] = a0[m + r];
            a0[5 * m + r] = a0[m + r];
            a0[6 * m + r] = 0.0;
        }
        check(&a0, m, jb, &[30, 50, 40], SameR::NotCompared);
        // Already upper triangular: ScaLAPACK would store tau = 0 here.
        let mut tri = vec![0.0; m * jb];
        for c in 0..jb {
            for r in 0..=c {
                tri[r + c * m] = 1.0 + r as f64;
            }
        }
        check(&tri, m, jb, &[20, 100], SameR::UpToSigns);
        for scale in [1e300, 1e-300] {
            let big: Vec<f64> = data(m, jb, 3).iter().map(|x| x * scale).collect();
            check(&big, m, jb, &[60, 60], SameR::Exactly);
        }
    }
}
