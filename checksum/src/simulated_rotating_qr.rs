//! End-to-end simulation of the fault-tolerant QR on the rotating layout, in
//! plain Rust (no MPI), as `simulated_qr` does for the reverse-neighboring one: a
//! dense extended matrix `[A | pad | C]` is factored by unblocked Householder QR
//! panel by panel, every reflector applied to the data and to the checksums of the
//! unfinished groups only; `D_g^(i)` is accumulated as panels finish. After every
//! committed step both invariants are verified, then sets of up to `f` processes
//! of one process row are "lost" (their rows of their block columns, checksums and
//! `D` copies overwritten with NaN) and rebuilt by following
//! [`RotatingLayout::lost_blocks`] with [`ErasurePlan`], reading only the lost
//! process row's surviving local rows; `f + 1` losses are refused.
//!
//! Tolerance: [`verify_relation`] with `tol_factor = 8·(m + n)·β`, `β` the weights'
//! [`crate::weights::CodeWeights::rebuild_amplification`] (1 for `f = 1`), scaled by
//! `‖A‖_F` and the group size.

use crate::encode::{axpy_block, encode_group, r_only, r_only_rows};
use crate::erasure::{check_recoverable_up_to, encode_weighted, ErasureError, ErasurePlan};
use crate::rotating::RotatingLayout;
use crate::rotating_lost::{LostGroup, WeightedSurvivor};
use crate::simulated_qr::{assert_no_nan, factor_panel, gather, scatter};
use crate::verify::verify_relation;
use crate::weights::combinations;
use rand::rngs::StdRng as Rng;
use rand::seq::SliceRandom;
use rand::{Rng as _, SeedableRng};

/// The global state of one simulated fault-tolerant QR on the rotating layout.
#[derive(Clone)]
struct Sim {
    layout: RotatingLayout,
    /// Extended matrix, column-major, `m × n_ext`, `ld = m`.
    e: Vec<f64>,
    /// `d[g][i]`: `D_g^(i)`, compact `m × nb`.
    d: Vec<Vec<Vec<f64>>>,
    finished: usize,
    a: Vec<f64>,
    norm: f64,
    tol_factor: f64,
    worst_ratio: f64,
}

impl Sim {
    fn new(layout: RotatingLayout, rng: &mut Rng) -> Self {
        let (m, nb, f) = (layout.m(), layout.nb(), layout.checksums());
        let mut e = vec![0.0; m * layout.n_extended()];
        for v in &mut e[..m * layout.n()] {
            *v = rng.random_range(-1.0..1.0);
        }
        let a = e[..m * layout.n()].to_vec();
        let norm = a.iter().map(|v| v * v).sum::<f64>().sqrt();
        for g in 0..layout.groups() {
            let blocks: Vec<&[f64]> = layout.group_members(g).unwrap().map(|j| &e[j * nb * m..]).collect();
            let sums = encode_weighted(layout.weights(), &blocks, m, nb, m).unwrap();
            for (i, c) in sums.iter().enumerate() {
                let col0 = layout.checksum_global_col(g, i).unwrap();
                e[col0 * m..(col0 + nb) * m].copy_from_slice(c);
            }
        }
        let d = vec![vec![vec![0.0; m * nb]; f]; layout.groups()];
        let beta = layout.weights().rebuild_amplification();
        let tol_factor = 8.0 * (m + layout.n()) as f64 * beta;
        Sim { layout, e, d, finished: 0, a, norm, tol_factor, worst_ratio: 0.0 }
    }

    fn m(&self) -> usize {
        self.layout.m()
    }

    fn block(&self, b: usize) -> &[f64] {
        let (m, nb) = (self.m(), self.layout.nb());
        &self.e[b * nb * m..(b + 1) * nb * m]
    }

    /// Factors panel `k` and commits the step: reflectors go to every column up to
    /// `active_end_col(k)`; the `D` of the panel's group takes the finished block, weighted.
    fn step(&mut self, k: usize) {
        let (m, nb) = (self.m(), self.layout.nb());
        let kmax = m.min(self.layout.n());
        let j0 = k * nb;
        let end = self.layout.active_end_col(k);
        factor_panel(&mut self.e, m, j0..(j0 + nb).min(kmax), end);
        self.finished = k + 1;
        let g = self.layout.group_of(k).unwrap();
        let t = self.layout.position_in_group(k).unwrap();
        let block = self.block(k).to_vec();
        for i in 0..self.layout.checksums() {
            let w = self.layout.weights().weight(i, t).unwrap();
            axpy_block(&mut self.d[g][i], &block, m, nb, m, w).unwrap();
        }
    }

    fn check(&mut self, what: &str, a: &[f64], b: &[f64], rows: usize, blocks: usize) {
        let v = verify_relation(a, b, rows, blocks, self.norm, self.tol_factor).unwrap();
        assert!(v.ok, "{what}: {v:?} layout {:?} finished {}", self.layout, self.finished);
        if v.tolerance > 0.0 {
            self.worst_ratio = self.worst_ratio.max(v.max_abs_diff / v.tolerance);
        }
    }

    /// `C_g^(i) = Σ_t w_{i,t}·Ã_t` and `D_g^(i) = Σ_{t finished} w_{i,t}·stored(A_t)`.
    fn verify_invariants(&mut self) {
        let (m, nb, fin) = (self.m(), self.layout.nb(), self.finished);
        for g in 0..self.layout.groups() {
            let members = self.layout.group_members(g).unwrap();
            let count = members.len();
            for i in 0..self.layout.checksums() {
                let mut c_sum = vec![0.0; m * nb];
                let mut d_sum = vec![0.0; m * nb];
                for (t, j) in members.clone().enumerate() {
                    let w = self.layout.weights().weight(i, t).unwrap();
                    if j < fin {
                        let r = r_only(self.block(j), m, nb, m, 0, j * nb).unwrap();
                        axpy_block(&mut c_sum, &r, m, nb, m, w).unwrap();
                        axpy_block(&mut d_sum, self.block(j), m, nb, m, w).unwrap();
                    } else {
                        axpy_block(&mut c_sum, self.block(j), m, nb, m, w).unwrap();
                    }
                }
                let c = self.block(self.layout.checksum_block_col(g, i).unwrap()).to_vec();
                self.check(&format!("C_{g}^({i})"), &c, &c_sum, m, count);
                let d = self.d[g][i].clone();
                self.check(&format!("D_{g}^({i})"), &d, &d_sum, m, count);
            }
        }
    }
}

/// The rows `rows` of a survivor (R-only when the description says so), weighted into `acc`.
fn subtract_survivor(e: &[f64], m: usize, nb: usize, rows: &[usize], s: &WeightedSurvivor, w: f64, acc: &mut [f64]) {
    let nr = rows.len();
    let mut x = gather(e, m, rows, s.block_col * nb, nb);
    assert_no_nan("survivor", &x);
    if s.r_only {
        x = r_only_rows(&x, nr, nb, nr, rows, s.block_col * nb).unwrap();
    }
    axpy_block(acc, &x, nr, nb, nr, -w).unwrap();
}

/// The left and right solves and the re-encoding of one group, on process row `rows`.
fn rebuild_group_rows(l: &RotatingLayout, e: &mut [f64], d: &mut [Vec<f64>], rows: &[usize], grp: &LostGroup) {
    let (m, nb) = (l.m(), l.nb());
    let nr = rows.len();
    let w = l.weights();
    // 1. Finished lost blocks from the D relations.
    let left = ErasurePlan::new(w, grp.finished_members, &grp.left_erased).unwrap();
    let mut rhs = Vec::new();
    for &i in left.rows_used() {
        let mut acc = gather(&d[i], m, rows, 0, nb);
        assert_no_nan("left checksum", &acc);
        for s in &grp.left_survivors {
            subtract_survivor(e, m, nb, rows, s, w.weight(i, s.position).unwrap(), &mut acc);
        }
        rhs.push(acc);
    }
    let refs: Vec<&[f64]> = rhs.iter().map(Vec::as_slice).collect();
    for (&t, block) in left.erased_data().iter().zip(left.solve(&refs, nr * nb).unwrap()) {
        scatter(e, m, rows, (grp.members.start + t) * nb, nb, &block);
    }
    // 2. Unfinished lost blocks from the C relations.
    let right = ErasurePlan::new(w, grp.members.len(), &grp.right_erased).unwrap();
    let mut rhs = Vec::new();
    for &i in right.rows_used() {
        let mut acc = gather(e, m, rows, l.checksum_block_col(grp.group, i).unwrap() * nb, nb);
        assert_no_nan("right checksum", &acc);
        for s in &grp.right_survivors {
            subtract_survivor(e, m, nb, rows, s, w.weight(i, s.position).unwrap(), &mut acc);
        }
        rhs.push(acc);
    }
    let refs: Vec<&[f64]> = rhs.iter().map(Vec::as_slice).collect();
    for (&t, block) in right.erased_data().iter().zip(right.solve(&refs, nr * nb).unwrap()) {
        scatter(e, m, rows, (grp.members.start + t) * nb, nb, &block);
    }
    // 3. The lost checksums, encoded again from the rebuilt group.
    let fin = grp.members.start + grp.finished_members;
    for c in &grp.erased_checksums {
        let mut cc = vec![0.0; nr * nb];
        let mut dd = vec![0.0; nr * nb];
        for (t, j) in grp.members.clone().enumerate() {
            let x = gather(e, m, rows, j * nb, nb);
            assert_no_nan("member", &x);
            let wt = w.weight(c.index, t).unwrap();
            if j < fin {
                axpy_block(&mut dd, &x, nr, nb, nr, wt).unwrap();
                let r = r_only_rows(&x, nr, nb, nr, rows, j * nb).unwrap();
                axpy_block(&mut cc, &r, nr, nb, nr, wt).unwrap();
            } else {
                axpy_block(&mut cc, &x, nr, nb, nr, wt).unwrap();
            }
        }
        scatter(e, m, rows, c.block_col * nb, nb, &cc);
        scatter(&mut d[c.index], m, rows, 0, nb, &dd);
    }
}

/// Loses processes `(pr, pc)`, `pc ∈ cols` (at most `f`), rebuilds them from the
/// description and the kernels, and compares everything with the state before the loss.
fn lose_and_rebuild(sim: &mut Sim, pr: usize, cols: &[usize]) {
    let l = sim.layout.clone();
    let (m, nb) = (l.m(), l.nb());
    let desc = l.lost_blocks(pr, cols, sim.finished).unwrap();
    let rows = l.global_rows_of(pr).unwrap();
    let mut e = sim.e.clone();
    let mut d = sim.d.clone();
    let nan = vec![f64::NAN; rows.len() * nb];
    for grp in &desc.groups {
        for b in &grp.erased_data {
            scatter(&mut e, m, &rows, b.block_col * nb, nb, &nan);
        }
        for c in &grp.erased_checksums {
            scatter(&mut e, m, &rows, c.block_col * nb, nb, &nan);
            scatter(&mut d[grp.group][c.index], m, &rows, 0, nb, &nan);
        }
    }
    for grp in &desc.groups {
        rebuild_group_rows(&l, &mut e, &mut d[grp.group], &rows, grp);
    }
    let orig = sim.e.clone();
    sim.check(&format!("rebuilt matrix after losing row {pr} columns {cols:?}"), &e, &orig, m, l.q());
    for (g, sums) in d.iter().enumerate() {
        for (i, rebuilt) in sums.iter().enumerate() {
            let orig = sim.d[g][i].clone();
            sim.check(&format!("rebuilt D_{g}^({i}) after losing {pr}, {cols:?}"), rebuilt, &orig, m, l.q());
        }
    }
}

/// Runs the whole factorization for one layout, losing up to `f` processes of a row at every step.
fn run(m: usize, n: usize, nb: usize, p: usize, q: usize, f: usize, rng: &mut Rng) -> f64 {
    let layout = RotatingLayout::new(m, n, nb, p, q, f).unwrap();
    let mut sim = Sim::new(layout.clone(), rng);
    let panels = m.min(n).div_ceil(nb);
    for k in 0..=panels {
        if k > 0 {
            sim.step(k - 1);
        }
        sim.verify_invariants();
        for pr in 0..p {
            // Every set of exactly f process columns (a sample of 12 when there are more),
            // then one set of f + 1, which must be refused.
            let mut sets: Vec<Vec<usize>> = combinations(q, f).collect();
            sets.shuffle(rng);
            for cols in sets.iter().take(12) {
                lose_and_rebuild(&mut sim, pr, cols);
            }
            let mut too_many: Vec<usize> = (0..q).collect();
            too_many.shuffle(rng);
            too_many.truncate(f + 1);
            if f < q {
                too_many.sort_unstable();
                let e = layout.lost_blocks(pr, &too_many, sim.finished).unwrap_err();
                let expected =
                    ErasureError::TooManyLossesInProcessRow { row: pr, process_cols: too_many.clone(), tolerated: f };
                assert_eq!(e, expected);
                let coords: Vec<(usize, usize)> = too_many.iter().map(|&pc| (pr, pc)).collect();
                assert_eq!(check_recoverable_up_to(&coords, f), Err(expected));
            }
        }
        // A single loss in a random column.
        let pc = rng.random_range(0..q);
        lose_and_rebuild(&mut sim, rng.random_range(0..p), &[pc]);
    }
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
fn simulated_ft_qr_on_the_rotating_layout_rebuilds_any_f_lost_processes_of_a_row() {
    let mut rng = Rng::seed_from_u64(0xF00D);
    let mut worst: f64 = 0.0;
    let mut runs = 0;
    for q in 2..=8usize {
        for f in 1..=(q - 1).min(3) {
            for m in [1usize, 6, 11] {
                for n in [1usize, 7, 12] {
                    for nb in [1usize, 2, 3] {
                        for p in [1usize, 2] {
                            worst = worst.max(run(m, n, nb, p, q, f, &mut rng));
                            runs += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(runs, 18 * 54);
    // Rounding errors stay well below the tolerance, not just under it.
    assert!(worst < 0.25, "worst error / tolerance = {worst}");
}

#[test]
fn random_shapes_on_grids_up_to_eight_columns() {
    let mut rng = Rng::seed_from_u64(28);
    let mut worst: f64 = 0.0;
    for _ in 0..24 {
        let q = rng.random_range(2..=8usize);
        let f = rng.random_range(1..=(q - 1).min(3));
        let nb = rng.random_range(1..=4usize);
        let (m, n) = (rng.random_range(1..=30usize), rng.random_range(1..=30usize));
        let p = rng.random_range(1..=3usize);
        worst = worst.max(run(m, n, nb, p, q, f, &mut rng));
    }
    assert!(worst < 0.25, "worst error / tolerance = {worst}");
}

#[test]
fn a_larger_matrix_with_three_checksums() {
    let mut rng = Rng::seed_from_u64(7);
    let worst = run(40, 37, 4, 3, 7, 3, &mut rng);
    assert!(worst < 0.25, "worst error / tolerance = {worst}");
}

#[test]
fn a_corrupted_weighted_checksum_is_detected() {
    let mut rng = Rng::seed_from_u64(5);
    let layout = RotatingLayout::new(6, 8, 2, 2, 4, 2).unwrap();
    let mut sim = Sim::new(layout, &mut rng);
    sim.step(0);
    sim.verify_invariants();
    let col = sim.layout.checksum_global_col(1, 1).unwrap();
    sim.e[col * 6 + 3] += 1e-6;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sim.verify_invariants()));
    assert!(result.is_err(), "a perturbed checksum must fail verification");
}

#[test]
fn with_one_checksum_the_encoding_is_the_plain_sum() {
    let mut rng = Rng::seed_from_u64(6);
    let layout = RotatingLayout::new(5, 9, 2, 1, 4, 1).unwrap();
    let sim = Sim::new(layout.clone(), &mut rng);
    for g in 0..layout.groups() {
        let blocks: Vec<&[f64]> = layout.group_members(g).unwrap().map(|j| sim.block(j)).collect();
        let sum = encode_group(&blocks, 5, 2, 5).unwrap();
        assert_eq!(sim.block(layout.checksum_block_col(g, 0).unwrap()), sum.as_slice());
    }
}
