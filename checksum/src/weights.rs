//! The weights of the rotating layout's weighted checksums.
//!
//! A group of `s` data blocks `A_0 … A_{s−1}` gets `f ≤ 3` checksums
//! `C^(i) = Σ_t w_{i,t}·A_t`. The generator of the code is the `f × (s + f)`
//! matrix `[W | I]`; `k ≤ f` erased blocks are rebuilt from `k` surviving
//! checksums by a solve with a `k × k` submatrix of `W` (erased checksums are
//! re-encoded, never solved for), so the code tolerates `f` erasures exactly when
//! every square submatrix of `W` is nonsingular, and a rebuild is accurate when
//! their inverses are small.
//!
//! ## The choice: points of the parabola `y = x²` over `F_p`
//!
//! Let `p` be the smallest prime `> 2s`, `t₀ = ⌊s/2⌋`, and for the `s + 1`
//! integers `t = 0..=s` the lattice points `P_t = (t, t² mod p)`. Column `t'` of
//! `W` (position `t'` in the group, `t' = 0..s`, skipping `t₀`) is
//!
//! ```text
//! w_{0,t'} = 1,   w_{1,t'} = (t − t₀) / α,   w_{2,t'} = ((t² mod p) − (t₀² mod p)) / β
//! ```
//!
//! (`t` the `t'`-th element of `0..=s` without `t₀`; `α`, `β` the largest
//! magnitudes of the two rows, so `|w| ≤ 1`). Row 0 is all ones: `f = 1` is the
//! plain sum (with `Q = 2`, `s = 1`, a replica). The code for `f < 3` is the
//! first `f` rows.
//!
//! **Every square submatrix of `W` is nonsingular.** Before the scaling by `α`,
//! `β`, every minor is a nonzero integer:
//! * `1 × 1`: `t − t₀ ≠ 0`; `t² − t₀² ≢ 0 (mod p)` because `p > 2s ≥ t + t₀` and
//!   `0 < |t − t₀| < p`;
//! * `2 × 2` on rows `{0, 1}` / `{0, 2}`: differences of distinct `t` / of distinct
//!   `t² mod p` (distinct by the same argument);
//! * `2 × 2` on rows `{1, 2}`: twice the signed area of the triangle
//!   `(P_{t₀}, P_a, P_b)`; `3 × 3`: twice the signed area of `(P_a, P_b, P_c)`.
//!   No three points of `{P_t}` are collinear (Erdős): a real line through two of
//!   them has the integer equation `(x − a)(v_b − v_a) − (y − v_a)(b − a) = 0`
//!   with `b − a ≢ 0 (mod p)`, which over `F_p` is a non-vertical line, and it meets
//!   the parabola `y = x²` in at most two points. A nonzero lattice area is at
//!   least ½.
//!
//! So `|det| ≥ 1` in integer units, and `M⁻¹ = adj(M)/det(M)` is bounded by the
//! adjugate of an integer matrix with entries below `p ≤ 4s`.
//!
//! ## Accuracy of a rebuilt block
//!
//! A rebuild solves `M·x = c_S − Σ_{t ∉ E} w_{S,t}·a_t` entry by entry, `M = W[S, E]`.
//! With unit roundoff `u`, a checksum error `ε_c` (what the checksums carried
//! before the loss) and `|w| ≤ 1`, to first order
//!
//! ```text
//! ‖x̂ − x‖_∞ ≤ β_{f,s} · (ε_c + (s + f + 1) · u · max_t ‖a_t‖_∞),   β_{f,s} = max_M ‖M⁻¹‖_∞
//! ```
//!
//! ([`CodeWeights::rebuild_amplification`] computes `β`; `f = 1` gives
//! `β = 1`, the plain sum's bound.) Worst values over every square submatrix
//! (test `weights_are_well_conditioned_up_to_three_checksums_and_64_blocks`),
//! as `β` / `κ_∞`:
//!
//! | s | f = 2 | f = 3 |
//! |---|---|---|
//! | 4 | 4 / 8 | 36 / 108 |
//! | 8 | 8 / 16 | 256 / 768 |
//! | 16 | 16 / 32 | 756 / 2268 |
//! | 32 | 32 / 64 | 3300 / 9900 |
//! | 64 | 64 / 128 | 11984 / 35952 |
//!
//! For `f = 2`, `β ≈ s` (rows `{0, 1}` with the two closest points); for `f = 3`
//! the nearly collinear triples dominate, `β = O(s²)`; no real code does much
//! better for three erasures among many blocks (Heilbronn's triangle problem
//! bounds the smallest triangle of `s` points by `O(s^{−8/7})`).

use crate::layout::LayoutError;

/// The most checksums per group the weights (and the rebuild's small solves) support.
pub const MAX_CHECKSUMS: usize = 3;

/// The `f × s` weight matrix `W` of a group of `s` blocks with `f` checksums (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct CodeWeights {
    f: usize,
    s: usize,
    /// Row-major `f × s`.
    w: Vec<f64>,
}

impl CodeWeights {
    /// The weights of `f` checksums over groups of `s` blocks.
    ///
    /// Errors: `f = 0` ([`LayoutError::NoChecksums`]), `f > 3`
    /// ([`LayoutError::TooManyChecksums`]), `s = 0` ([`LayoutError::TooFewProcessColumns`]
    /// with `q = f`: a group needs one process column of data besides its `f` checksums).
    pub fn new(f: usize, s: usize) -> Result<Self, LayoutError> {
        if f == 0 {
            return Err(LayoutError::NoChecksums);
        }
        if f > MAX_CHECKSUMS {
            return Err(LayoutError::TooManyChecksums { f, max: MAX_CHECKSUMS });
        }
        if s == 0 {
            return Err(LayoutError::TooFewProcessColumns { q: f, f });
        }
        let p = smallest_prime_above(2 * s);
        let t0 = s / 2;
        let sq = |t: usize| ((t * t) % p) as f64;
        let points: Vec<usize> = (0..=s).filter(|&t| t != t0).collect();
        let row1: Vec<f64> = points.iter().map(|&t| t as f64 - t0 as f64).collect();
        let row2: Vec<f64> = points.iter().map(|&t| sq(t) - sq(t0)).collect();
        let mut w = vec![1.0; s];
        for row in [row1, row2].into_iter().take(f - 1) {
            let scale = row.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            w.extend(row.iter().map(|x| x / scale));
        }
        Ok(Self { f, s, w })
    }

    /// Number of checksums `f`.
    pub fn checksums(&self) -> usize {
        self.f
    }

    /// Group size `s` (columns of `W`).
    pub fn group_size(&self) -> usize {
        self.s
    }

    /// Weight `w_{i,t}` of position `t` of the group in checksum `i`, or `None` when
    /// `i ≥ f` or `t ≥ s`.
    pub fn weight(&self, i: usize, t: usize) -> Option<f64> {
        (i < self.f && t < self.s).then(|| self.w[i * self.s + t])
    }

    /// [`Self::weight`] for indices the caller has checked (`i < f`, `t < s`).
    pub(crate) fn at(&self, i: usize, t: usize) -> f64 {
        self.w[i * self.s + t]
    }

    /// Row `i` of `W` (the weights of checksum `i`), or `None` when `i ≥ f`.
    pub fn row(&self, i: usize) -> Option<&[f64]> {
        (i < self.f).then(|| &self.w[i * self.s..(i + 1) * self.s])
    }

    /// `β = max ‖M⁻¹‖_∞` over every square submatrix `M` of `W`: the factor between
    /// the rounding of a rebuild's right-hand side and the error of the rebuilt block
    /// (module docs). `C(s, 3)` small inverses at most.
    pub fn rebuild_amplification(&self) -> f64 {
        self.worst_submatrix().0
    }

    /// The largest condition number `κ_∞(M) = ‖M‖_∞·‖M⁻¹‖_∞` over every square
    /// submatrix `M` of `W`.
    pub fn worst_condition(&self) -> f64 {
        self.worst_submatrix().1
    }

    /// `W[rows, cols]` as a small dense matrix (row-major, `k × k`, `k = rows.len()`).
    pub(crate) fn submatrix(&self, rows: &[usize], cols: &[usize]) -> SmallMatrix {
        let k = rows.len();
        let mut m = SmallMatrix { k, a: [[0.0; MAX_CHECKSUMS]; MAX_CHECKSUMS] };
        for (r, &i) in rows.iter().enumerate() {
            for (c, &t) in cols.iter().enumerate() {
                m.a[r][c] = self.at(i, t);
            }
        }
        m
    }

    fn worst_submatrix(&self) -> (f64, f64) {
        let (mut beta, mut kappa) = (0.0f64, 0.0f64);
        for row_set in 1u32..(1 << self.f) {
            let rows: Vec<usize> = (0..self.f).filter(|i| row_set >> i & 1 == 1).collect();
            for cols in combinations(self.s, rows.len()) {
                let m = self.submatrix(&rows, &cols);
                let inv = m.inverse_norm_inf();
                beta = beta.max(inv);
                kappa = kappa.max(inv * m.norm_inf());
            }
        }
        (beta, kappa)
    }
}

/// A `k × k` matrix, `k ≤ 3`, for the rebuild's small solves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SmallMatrix {
    pub(crate) k: usize,
    pub(crate) a: [[f64; MAX_CHECKSUMS]; MAX_CHECKSUMS],
}

impl SmallMatrix {
    fn norm_inf(&self) -> f64 {
        (0..self.k).map(|r| self.a[r][..self.k].iter().map(|x| x.abs()).sum::<f64>()).fold(0.0, f64::max)
    }

    /// `‖M⁻¹‖_∞` from the LU factors (one solve per unit vector); `+∞` when singular.
    fn inverse_norm_inf(&self) -> f64 {
        let Some(lu) = self.factor() else {
            return f64::INFINITY;
        };
        let mut row_sums = [0.0; MAX_CHECKSUMS];
        for c in 0..self.k {
            let mut e = [0.0; MAX_CHECKSUMS];
            e[c] = 1.0;
            lu.solve(&mut e);
            for r in 0..self.k {
                row_sums[r] += e[r].abs();
            }
        }
        row_sums[..self.k].iter().copied().fold(0.0, f64::max)
    }

    /// Gaussian elimination with partial pivoting; `None` when a pivot is exactly zero.
    pub(crate) fn factor(&self) -> Option<SmallLu> {
        let k = self.k;
        let mut a = self.a;
        let mut perm = [0usize, 1, 2];
        for col in 0..k {
            let piv = (col..k).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))?;
            if a[piv][col] == 0.0 || !a[piv][col].is_finite() {
                return None;
            }
            a.swap(col, piv);
            perm.swap(col, piv);
            let pivot_row = a[col];
            for row in a.iter_mut().take(k).skip(col + 1) {
                let l = row[col] / pivot_row[col];
                row[col] = l;
                for (x, p) in row.iter_mut().zip(pivot_row).take(k).skip(col + 1) {
                    *x -= l * p;
                }
            }
        }
        Some(SmallLu { k, a, perm })
    }
}

/// The factors `P·M = L·U` of a [`SmallMatrix`] (unit `L` below the diagonal, `U` on and above).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SmallLu {
    k: usize,
    a: [[f64; MAX_CHECKSUMS]; MAX_CHECKSUMS],
    perm: [usize; MAX_CHECKSUMS],
}

impl SmallLu {
    /// In place: `x ← M⁻¹·x` (first `k` entries).
    pub(crate) fn solve(&self, x: &mut [f64; MAX_CHECKSUMS]) {
        let k = self.k;
        let mut y = [0.0; MAX_CHECKSUMS];
        for r in 0..k {
            y[r] = x[self.perm[r]] - (0..r).map(|c| self.a[r][c] * y[c]).sum::<f64>();
        }
        for r in (0..k).rev() {
            y[r] = (y[r] - (r + 1..k).map(|c| self.a[r][c] * y[c]).sum::<f64>()) / self.a[r][r];
        }
        x[..k].copy_from_slice(&y[..k]);
    }
}

/// Every increasing `k`-subset of `0..n`, in lexicographic order (none when `k > n`).
pub(crate) fn combinations(n: usize, k: usize) -> impl Iterator<Item = Vec<usize>> {
    let mut next = (k <= n).then(|| (0..k).collect::<Vec<usize>>());
    std::iter::from_fn(move || {
        let current = next.take()?;
        let mut c = current.clone();
        if let Some(i) = (0..k).rev().find(|&i| c[i] < n - k + i) {
            c[i] += 1;
            for j in i + 1..k {
                c[j] = c[j - 1] + 1;
            }
            next = Some(c);
        }
        Some(current)
    })
}

fn smallest_prime_above(n: usize) -> usize {
    let is_prime = |x: usize| x >= 2 && (2..).take_while(|d| d * d <= x).all(|d| !x.is_multiple_of(d));
    (n + 1..).find(|&x| is_prime(x)).unwrap_or(n + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_checksum_is_the_plain_sum() {
        for s in 1..=64 {
            let w = CodeWeights::new(1, s).unwrap();
            assert_eq!(w.row(0).unwrap(), vec![1.0; s].as_slice());
            assert_eq!(w.rebuild_amplification(), 1.0);
            assert_eq!(w.worst_condition(), 1.0);
        }
    }

    #[test]
    fn fewer_checksums_are_the_first_rows() {
        let w3 = CodeWeights::new(3, 9).unwrap();
        let w2 = CodeWeights::new(2, 9).unwrap();
        assert_eq!(w2.row(1), w3.row(1));
        assert_eq!(w2.row(2), None);
        assert_eq!(w2.weight(1, 8), w3.weight(1, 8));
        assert_eq!((w2.weight(2, 0), w2.weight(0, 9), w2.weight(0, 8)), (None, None, Some(1.0)));
        assert!(w3.row(0).unwrap().iter().chain(w3.row(1).unwrap()).chain(w3.row(2).unwrap()).all(|x| x.abs() <= 1.0));
        assert_eq!((w3.checksums(), w3.group_size()), (3, 9));
    }

    #[test]
    fn bad_parameters_are_typed_errors() {
        assert_eq!(CodeWeights::new(0, 4), Err(LayoutError::NoChecksums));
        assert_eq!(CodeWeights::new(4, 4), Err(LayoutError::TooManyChecksums { f: 4, max: 3 }));
        assert_eq!(CodeWeights::new(2, 0), Err(LayoutError::TooFewProcessColumns { q: 2, f: 2 }));
    }

    #[test]
    fn combinations_are_listed_once() {
        assert_eq!(combinations(4, 2).count(), 6);
        assert_eq!(combinations(3, 3).collect::<Vec<_>>(), vec![vec![0, 1, 2]]);
        assert_eq!(combinations(2, 3).count(), 0);
        assert_eq!(combinations(64, 3).count(), 41664);
    }

    /// The table of the module docs: the worst `β` and `κ_∞` over every square submatrix, for
    /// every `f ≤ 3` and `s ≤ 64`. All finite (every minor is nonsingular); `β ≤ s + 2` for `f = 2`;
    /// for `f = 3` under `4·s²` everywhere.
    #[test]
    fn weights_are_well_conditioned_up_to_three_checksums_and_64_blocks() {
        let mut table = Vec::new();
        for s in 1..=64usize {
            for f in 2..=3usize {
                let w = CodeWeights::new(f, s).unwrap();
                let (beta, kappa) = w.worst_submatrix();
                assert!(beta.is_finite() && kappa.is_finite(), "f={f} s={s}");
                if f == 2 {
                    assert!(beta <= (s + 2) as f64, "f=2 s={s}: beta {beta}");
                } else {
                    assert!(beta <= 4.0 * (s * s).max(4) as f64, "f=3 s={s}: beta {beta}");
                }
                table.push((s, f, beta, kappa));
            }
        }
        for (s, f, beta, kappa) in table.iter().filter(|r| [4, 8, 16, 32, 64].contains(&r.0)) {
            println!("s = {s:2}, f = {f}: beta = {beta:8.1}, kappa_inf = {kappa:8.1}");
        }
        let worst3 = table.iter().filter(|r| r.1 == 3).map(|r| r.2).fold(0.0, f64::max);
        println!("worst beta for f = 3, s <= 64: {worst3:.1}");
    }
}
