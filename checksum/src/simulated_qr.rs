//! End-to-end simulation in plain Rust (no MPI): a dense extended matrix
//! `[A | pad | C]` is factored by unblocked Householder QR panel by panel, with
//! every reflector applied to the data and to the active checksum pairs only;
//! `D` is accumulated as panels finish. After every committed step both
//! invariants are verified, then each process of the grid in turn (and sets of
//! one process per process row) is "lost" — its rows of its block columns,
//! checksum copies and `D` copies overwritten with NaN — and rebuilt by following
//! [`ReverseNeighborLayout::lost_blocks`] with the rebuild kernels, using only the
//! lost process row's surviving local rows, as a distributed driver would.

use crate::encode::{add_block, encode_group, r_only, r_only_rows};
use crate::layout::ReverseNeighborLayout;
use crate::lost::ChecksumSource;
use crate::rebuild::{check_recoverable, rebuild_lost_block, restore_from_duplicate, RebuildError};
use crate::verify::verify_relation;
use rand::rngs::StdRng as Rng;
use rand::{Rng as _, SeedableRng};

/// The global state of one simulated fault-tolerant QR.
#[derive(Clone)]
struct Sim {
    layout: ReverseNeighborLayout,
    /// Extended matrix, column-major, `m × n_ext`, `ld = m`.
    e: Vec<f64>,
    /// `d[g][copy]`: the two copies of `D_g`, compact `m × nb`.
    d: Vec<[Vec<f64>; 2]>,
    /// Block columns finished at the last committed step.
    finished: usize,
    /// The original data `A`, `m × n`, `ld = m`.
    a: Vec<f64>,
    /// `‖A‖_F`.
    norm: f64,
    tol_factor: f64,
    /// Largest `max_abs_diff / tolerance` seen by any check.
    worst_ratio: f64,
}

impl Sim {
    fn new(layout: ReverseNeighborLayout, rng: &mut Rng) -> Self {
        let (m, nb) = (layout.m(), layout.nb());
        let mut e = vec![0.0; m * layout.n_extended()];
        for v in &mut e[..m * layout.n()] {
            *v = rng.random_range(-1.0..1.0);
        }
        let a = e[..m * layout.n()].to_vec();
        let norm = a.iter().map(|v| v * v).sum::<f64>().sqrt();
        for g in 0..layout.groups() {
            let blocks: Vec<&[f64]> = layout.group_members(g).unwrap().map(|j| &e[j * nb * m..]).collect();
            let c = encode_group(&blocks, m, nb, m).unwrap();
            for col0 in layout.pair_global_cols(g).unwrap() {
                e[col0 * m..(col0 + nb) * m].copy_from_slice(&c);
            }
        }
        let d = vec![[vec![0.0; m * nb], vec![0.0; m * nb]]; layout.groups()];
        let tol_factor = 8.0 * (m + layout.n()) as f64;
        Sim { layout, e, d, finished: 0, a, norm, tol_factor, worst_ratio: 0.0 }
    }

    fn m(&self) -> usize {
        self.layout.m()
    }

    /// Extended block column `b` as a strided `m × nb` block (`ld = m`).
    fn block(&self, b: usize) -> &[f64] {
        let (m, nb) = (self.m(), self.layout.nb());
        &self.e[b * nb * m..(b + 1) * nb * m]
    }

    /// Factors panel `k` (columns `k·nb ..`) and commits the step: reflectors go to every
    /// column up to `active_end_col(k)`; `D` of the panel's group takes the finished block.
    fn step(&mut self, k: usize) {
        let (m, nb) = (self.m(), self.layout.nb());
        let kmax = m.min(self.layout.n());
        let j0 = k * nb;
        let end = self.layout.active_end_col(k);
        factor_panel(&mut self.e, m, j0..(j0 + nb).min(kmax), end);
        self.finished = k + 1;
        let g = self.layout.group_of(k).unwrap();
        let block = self.block(k).to_vec();
        for copy in 0..2 {
            add_block(&mut self.d[g][copy], &block, m, nb, m).unwrap();
        }
    }

    fn check(&mut self, what: &str, a: &[f64], b: &[f64], rows: usize, blocks: usize) {
        let v = verify_relation(a, b, rows, blocks, self.norm, self.tol_factor).unwrap();
        assert!(v.ok, "{what}: {v:?} layout {:?} finished {}", self.layout, self.finished);
        if v.tolerance > 0.0 {
            self.worst_ratio = self.worst_ratio.max(v.max_abs_diff / v.tolerance);
        }
    }

    /// Both invariants at the committed step: `C_g = Σ Ã_J` and `D_g = Σ_{finished} stored(A_J)`.
    fn verify_invariants(&mut self) {
        let (m, nb, f) = (self.m(), self.layout.nb(), self.finished);
        for g in 0..self.layout.groups() {
            let members = self.layout.group_members(g).unwrap();
            let count = members.len();
            let mut c_sum = vec![0.0; m * nb];
            let mut d_sum = vec![0.0; m * nb];
            for j in members {
                if j < f {
                    let r = r_only(self.block(j), m, nb, m, 0, j * nb).unwrap();
                    add_block(&mut c_sum, &r, m, nb, m).unwrap();
                    add_block(&mut d_sum, self.block(j), m, nb, m).unwrap();
                } else {
                    add_block(&mut c_sum, self.block(j), m, nb, m).unwrap();
                }
            }
            for (copy, e) in self.layout.pair_block_cols(g).unwrap().into_iter().enumerate() {
                let c = self.block(e).to_vec();
                self.check(&format!("C_{g} copy {copy}"), &c, &c_sum, m, count);
                let d = self.d[g][copy].clone();
                self.check(&format!("D_{g} copy {copy}"), &d, &d_sum, m, count);
            }
        }
    }
}

/// Householder QR of the columns `cols` of the column-major `e` (`ld = m`),
/// each reflector applied at once to every later column up to `end`
/// (exclusive): one panel step of the factorization, checksum columns
/// included.
pub(crate) fn factor_panel(e: &mut [f64], m: usize, cols: std::ops::Range<usize>, end: usize) {
    for j in cols {
        let (tau, v) = householder(&mut e[j * m + j..(j + 1) * m]);
        for c in j + 1..end {
            let col = &mut e[c * m + j..(c + 1) * m];
            let w: f64 = col.iter().zip(&v).map(|(x, vi)| x * vi).sum();
            for (x, vi) in col.iter_mut().zip(&v) {
                *x -= tau * w * vi;
            }
        }
    }
}

/// LAPACK-style Householder reflector of `x` (in place: `beta` on top, `v[1..]` below);
/// returns `tau` and `v` (with `v[0] = 1`) so that `(I − tau·v·vᵀ)·x = beta·e1`.
fn householder(x: &mut [f64]) -> (f64, Vec<f64>) {
    let alpha = x[0];
    let sigma: f64 = x[1..].iter().map(|v| v * v).sum();
    let mut v = x.to_vec();
    v[0] = 1.0;
    if sigma == 0.0 {
        for vi in &mut v[1..] {
            *vi = 0.0;
        }
        return (0.0, v);
    }
    let norm = (alpha * alpha + sigma).sqrt();
    let beta = if alpha > 0.0 { -norm } else { norm };
    let tau = (beta - alpha) / beta;
    let scale = 1.0 / (alpha - beta);
    for (xi, vi) in x[1..].iter_mut().zip(&mut v[1..]) {
        *vi *= scale;
        *xi = *vi;
    }
    x[0] = beta;
    (tau, v)
}

/// Rows `rows` of columns `col0 .. col0 + ncols` of a column-major matrix, compact.
pub(crate) fn gather(mat: &[f64], ld: usize, rows: &[usize], col0: usize, ncols: usize) -> Vec<f64> {
    (col0..col0 + ncols).flat_map(|c| rows.iter().map(move |&r| mat[c * ld + r])).collect()
}

/// Writes a compact `rows.len() × ncols` block back to rows `rows` of columns `col0 ..`.
pub(crate) fn scatter(mat: &mut [f64], ld: usize, rows: &[usize], col0: usize, ncols: usize, vals: &[f64]) {
    let mut it = vals.iter();
    for c in col0..col0 + ncols {
        for &r in rows {
            mat[c * ld + r] = *it.next().unwrap();
        }
    }
}

pub(crate) fn assert_no_nan(what: &str, v: &[f64]) {
    assert!(v.iter().all(|x| !x.is_nan()), "{what}: a rebuild read lost data");
}

/// Loses the processes `lost` (at most one per process row), rebuilds them from the
/// description and the kernels, and compares everything with the state before the loss.
fn lose_and_rebuild(sim: &mut Sim, lost: &[(usize, usize)]) {
    check_recoverable(lost).unwrap();
    let l = sim.layout.clone();
    let (m, nb, f) = (l.m(), l.nb(), sim.finished);
    let mut e = sim.e.clone();
    let mut d = sim.d.clone();
    let descs: Vec<_> = lost.iter().map(|&(pr, pc)| l.lost_blocks(pr, pc, f).unwrap()).collect();

    // The failure: wipe everything the lost processes held.
    for desc in &descs {
        let rows = l.global_rows_of(desc.pr).unwrap();
        let nan = vec![f64::NAN; rows.len() * nb];
        for blk in &desc.data {
            scatter(&mut e, m, &rows, blk.block_col * nb, nb, &nan);
        }
        for c in &desc.right_copies {
            scatter(&mut e, m, &rows, c.block_col * nb, nb, &nan);
        }
        for c in &desc.left_copies {
            scatter(&mut d[c.group][c.copy], m, &rows, 0, nb, &nan);
        }
    }

    // The rebuild, process row by process row, reading only that row's local rows.
    for desc in &descs {
        let rows = l.global_rows_of(desc.pr).unwrap();
        let nr = rows.len();
        for blk in &desc.data {
            let checksum = match blk.source {
                ChecksumSource::Right { block_col, .. } => gather(&e, m, &rows, block_col * nb, nb),
                ChecksumSource::Left { copy, .. } => gather(&d[blk.group][copy], m, &rows, 0, nb),
            };
            assert_no_nan("checksum", &checksum);
            let mut survivors = vec![0.0; nr * nb];
            for s in &blk.survivors {
                let mut x = gather(&e, m, &rows, s.block_col * nb, nb);
                assert_no_nan("survivor", &x);
                if s.r_only {
                    x = r_only_rows(&x, nr, nb, nr, &rows, s.block_col * nb).unwrap();
                }
                add_block(&mut survivors, &x, nr, nb, nr).unwrap();
            }
            let rebuilt = rebuild_lost_block(&checksum, &survivors).unwrap();
            scatter(&mut e, m, &rows, blk.block_col * nb, nb, &rebuilt);
        }
        for c in &desc.right_copies {
            let dup = gather(&e, m, &rows, c.duplicate_block_col * nb, nb);
            assert_no_nan("duplicate", &dup);
            let mut restored = vec![0.0; nr * nb];
            restore_from_duplicate(&mut restored, &dup).unwrap();
            scatter(&mut e, m, &rows, c.block_col * nb, nb, &restored);
        }
        for c in &desc.left_copies {
            let dup = gather(&d[c.group][1 - c.copy], m, &rows, 0, nb);
            assert_no_nan("left duplicate", &dup);
            let mut restored = vec![0.0; nr * nb];
            restore_from_duplicate(&mut restored, &dup).unwrap();
            scatter(&mut d[c.group][c.copy], m, &rows, 0, nb, &restored);
        }
    }

    let orig = sim.e.clone();
    sim.check(&format!("rebuilt matrix after losing {lost:?}"), &e, &orig, m, l.q());
    for (g, copies) in d.iter().enumerate() {
        for (copy, rebuilt) in copies.iter().enumerate() {
            let orig = sim.d[g][copy].clone();
            sim.check(&format!("rebuilt D_{g} copy {copy} after losing {lost:?}"), rebuilt, &orig, m, l.q());
        }
    }
}

/// Runs the whole factorization for one layout, checking and losing processes at every step.
fn run(m: usize, n: usize, nb: usize, p: usize, q: usize, rng: &mut Rng) -> f64 {
    let layout = ReverseNeighborLayout::new(m, n, nb, p, q).unwrap();
    let mut sim = Sim::new(layout.clone(), rng);
    let panels = m.min(n).div_ceil(nb);
    for k in 0..=panels {
        if k > 0 {
            sim.step(k - 1);
        }
        sim.verify_invariants();
        for pr in 0..p {
            for pc in 0..q {
                lose_and_rebuild(&mut sim, &[(pr, pc)]);
            }
        }
        // Simultaneous losses, one in each process row.
        let lost: Vec<_> = (0..p).map(|pr| (pr, rng.random_range(0..q))).collect();
        lose_and_rebuild(&mut sim, &lost);
    }
    // The factorization itself is a QR: Rᵀ·R = Aᵀ·A (R = upper triangle of the factored data).
    let r = r_only(&sim.e[..m * n], m, n, m, 0, 0).unwrap();
    let gram = |x: &[f64]| -> Vec<f64> {
        let col = |j: usize| &x[j * m..(j + 1) * m];
        (0..n * n).map(|ij| col(ij % n).iter().zip(col(ij / n)).map(|(a, b)| a * b).sum()).collect()
    };
    let (rtr, ata) = (gram(&r), gram(&sim.a));
    let v = verify_relation(&rtr, &ata, n, m, sim.norm * sim.norm, sim.tol_factor).unwrap();
    assert!(v.ok, "not a QR factorization: {v:?}");
    sim.worst_ratio
}

#[test]
fn simulated_ft_qr_keeps_both_invariants_and_rebuilds_any_lost_process() {
    let mut rng = Rng::seed_from_u64(0x5EED);
    let mut worst: f64 = 0.0;
    let mut runs = 0;
    for m in [1usize, 4, 7, 12] {
        for n in [1usize, 5, 9, 16] {
            for nb in [1usize, 2, 3, 5] {
                for p in [1usize, 2, 3] {
                    for q in [2usize, 3, 4] {
                        worst = worst.max(run(m, n, nb, p, q, &mut rng));
                        runs += 1;
                    }
                }
            }
        }
    }
    assert_eq!(runs, 576);
    // Rounding errors stay well below the tolerance (about 5% of it at worst), not just under it.
    assert!(worst < 0.25, "worst error / tolerance = {worst}");
}

#[test]
fn a_larger_matrix_on_a_wide_grid() {
    let mut rng = Rng::seed_from_u64(42);
    let worst = run(40, 37, 4, 3, 4, &mut rng);
    assert!(worst < 0.25, "worst error / tolerance = {worst}");
}

#[test]
fn a_corrupted_checksum_is_detected() {
    let mut rng = Rng::seed_from_u64(9);
    let layout = ReverseNeighborLayout::new(6, 8, 2, 2, 2).unwrap();
    let mut sim = Sim::new(layout, &mut rng);
    sim.step(0);
    sim.verify_invariants();
    let col = sim.layout.pair_global_cols(1).unwrap()[0];
    sim.e[col * 6 + 3] += 1e-6;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sim.verify_invariants()));
    assert!(result.is_err(), "a perturbed checksum must fail verification");
}

#[test]
fn two_losses_in_one_process_row_are_refused() {
    let e = check_recoverable(&[(0, 0), (1, 0), (1, 1)]).unwrap_err();
    assert_eq!(e, RebuildError::TwoLossesInProcessRow { row: 1, process_cols: vec![0, 1] });
}
