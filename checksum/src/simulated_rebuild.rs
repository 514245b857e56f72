//! The simulated fault-tolerant QR of the checksum tests, for either layout, in plain
//! Rust (no MPI), and the rebuild of lost processes driven by [`GroupRebuild`].
//!
//! A dense extended matrix `[A | pad | C]` is factored by unblocked Householder QR
//! panel by panel, every reflector applied to the data and to the checksums of the
//! unfinished groups only; the left-factor sums `D_g^(i)` (one per checksum replica)
//! are accumulated as panels finish. A loss overwrites with NaN everything the lost
//! processes held — their rows of every extended block column on their process
//! columns and of the `D` replicas there — independently of any plan. The rebuild then
//! follows the plan of each group, reading only the lost process row's rows: the
//! finished erased members from the `D` relations of the plan's first equations, the
//! unfinished ones from the `C` relations (finished members entering with their R part),
//! each a small solve ([`crate::ErasurePlan`]), then the replica copies and the
//! re-encoded checksums. Everything is compared with the state before the loss, so a
//! plan that reads a lost replica, misses a block or names the wrong relation fails.
//!
//! Tolerance: [`verify_relation`] with `tol_factor = 8·(m + n)·β`, `β` the weights'
//! [`crate::weights::CodeWeights::rebuild_amplification`] (1 for `f = 1`), scaled by
//! `‖A‖_F` and the group size.

use crate::checksum_layout::ChecksumLayout;
use crate::encode::{axpy_block, r_only, r_only_rows};
use crate::erasure::{check_recoverable_up_to, encode_weighted, ErasureError};
use crate::rebuild_plan::GroupRebuild;
use crate::verify::verify_relation;
use rand::rngs::StdRng as Rng;
use rand::Rng as _;

/// The global state of one simulated fault-tolerant QR.
#[derive(Clone)]
pub(crate) struct Sim {
    pub(crate) layout: ChecksumLayout,
    /// Extended matrix, column-major, `m × n_ext`, `ld = m`.
    pub(crate) e: Vec<f64>,
    /// `d[g][k]`: the `D` kept with the `k`-th of [`ChecksumLayout::checksum_block_cols`]`(g)`,
    /// compact `m × nb`.
    d: Vec<Vec<Vec<f64>>>,
    /// Block columns finished at the last committed step.
    pub(crate) finished: usize,
    /// The original data `A`, `m × n`, `ld = m`.
    a: Vec<f64>,
    /// `‖A‖_F`.
    norm: f64,
    tol_factor: f64,
    /// Largest `max_abs_diff / tolerance` seen by any check.
    worst_ratio: f64,
}

impl Sim {
    /// A random `A` with its checksums encoded into every replica.
    pub(crate) fn new(layout: ChecksumLayout, rng: &mut Rng) -> Self {
        let (m, nb) = (layout.m(), layout.nb());
        let weights = layout.code_weights().unwrap();
        let mut e = vec![0.0; m * layout.n_extended()];
        for v in &mut e[..m * layout.n()] {
            *v = rng.random_range(-1.0..1.0);
        }
        let a = e[..m * layout.n()].to_vec();
        let norm = a.iter().map(|v| v * v).sum::<f64>().sqrt();
        let mut d = Vec::with_capacity(layout.groups());
        for g in 0..layout.groups() {
            let blocks: Vec<&[f64]> = layout.group_members(g).unwrap().map(|j| &e[j * nb * m..]).collect();
            let sums = encode_weighted(&weights, &blocks, m, nb, m).unwrap();
            for (i, c) in sums.iter().enumerate() {
                for bc in layout.replica_block_cols(g, i).unwrap() {
                    e[bc * nb * m..(bc + 1) * nb * m].copy_from_slice(c);
                }
            }
            d.push(vec![vec![0.0; m * nb]; layout.checksum_block_cols(g).unwrap().len()]);
        }
        let tol_factor = 8.0 * (m + layout.n()) as f64 * weights.rebuild_amplification();
        Sim { layout, e, d, finished: 0, a, norm, tol_factor, worst_ratio: 0.0 }
    }

    fn m(&self) -> usize {
        self.layout.m()
    }

    /// Extended block column `b` as a strided `m × nb` block (`ld = m`).
    pub(crate) fn block(&self, b: usize) -> &[f64] {
        let (m, nb) = (self.m(), self.layout.nb());
        &self.e[b * nb * m..(b + 1) * nb * m]
    }

    /// Factors panel `k` (columns `k·nb ..`) and commits the step: reflectors go to every
    /// column up to `active_end_col(k)`; every `D` of the panel's group takes the finished
    /// block, weighted.
    pub(crate) fn step(&mut self, k: usize) {
        let (m, nb) = (self.m(), self.layout.nb());
        let kmax = m.min(self.layout.n());
        let j0 = k * nb;
        let end = self.layout.active_end_col(k);
        factor_panel(&mut self.e, m, j0..(j0 + nb).min(kmax), end);
        self.finished = k + 1;
        let g = self.layout.group_of(k).unwrap();
        let t = self.layout.position_in_group(k).unwrap();
        let block = self.block(k).to_vec();
        let replicas = self.layout.replicas();
        for (slot, d) in self.d[g].iter_mut().enumerate() {
            axpy_block(d, &block, m, nb, m, self.layout.weight(slot / replicas, t)).unwrap();
        }
    }

    fn check(&mut self, what: &str, a: &[f64], b: &[f64], rows: usize, blocks: usize) {
        let v = verify_relation(a, b, rows, blocks, self.norm, self.tol_factor).unwrap();
        assert!(v.ok, "{what}: {v:?} layout {:?} finished {}", self.layout, self.finished);
        if v.tolerance > 0.0 {
            self.worst_ratio = self.worst_ratio.max(v.max_abs_diff / v.tolerance);
        }
    }

    /// Both invariants at the committed step, for every replica:
    /// `C_g^(i) = Σ_t w_{i,t}·Ã_t` and `D_g^(i) = Σ_{t finished} w_{i,t}·stored(A_t)`.
    pub(crate) fn verify_invariants(&mut self) {
        let (m, nb, fin) = (self.m(), self.layout.nb(), self.finished);
        for g in 0..self.layout.groups() {
            let members = self.layout.group_members(g).unwrap();
            let count = members.len();
            let slots = self.layout.checksum_block_cols(g).unwrap();
            for (slot, &bc) in slots.iter().enumerate() {
                let i = slot / self.layout.replicas();
                let mut c_sum = vec![0.0; m * nb];
                let mut d_sum = vec![0.0; m * nb];
                for (t, j) in members.clone().enumerate() {
                    let w = self.layout.weight(i, t);
                    if j < fin {
                        let r = r_only(self.block(j), m, nb, m, 0, j * nb).unwrap();
                        axpy_block(&mut c_sum, &r, m, nb, m, w).unwrap();
                        axpy_block(&mut d_sum, self.block(j), m, nb, m, w).unwrap();
                    } else {
                        axpy_block(&mut c_sum, self.block(j), m, nb, m, w).unwrap();
                    }
                }
                let c = self.block(bc).to_vec();
                self.check(&format!("C_{g}^({i}) at block column {bc}"), &c, &c_sum, m, count);
                let d = self.d[g][slot].clone();
                self.check(&format!("D_{g}^({i}) with block column {bc}"), &d, &d_sum, m, count);
            }
        }
    }

    /// Checks that the factored data are a QR of `A` (`Rᵀ·R = Aᵀ·A`) and returns the
    /// largest error / tolerance ratio seen by any check.
    pub(crate) fn finish(self) -> f64 {
        let (m, n) = (self.m(), self.layout.n());
        let r = r_only(&self.e[..m * n], m, n, m, 0, 0).unwrap();
        let gram = |x: &[f64]| -> Vec<f64> {
            let col = |j: usize| &x[j * m..(j + 1) * m];
            (0..n * n).map(|ij| col(ij % n).iter().zip(col(ij / n)).map(|(a, b)| a * b).sum()).collect()
        };
        let (rtr, ata) = (gram(&r), gram(&self.a));
        let v = verify_relation(&rtr, &ata, n, m, self.norm * self.norm, self.tol_factor).unwrap();
        assert!(v.ok, "not a QR factorization: {v:?}");
        self.worst_ratio
    }
}

/// Householder QR of the columns `cols` of the column-major `e` (`ld = m`),
/// each reflector applied at once to every later column up to `end`
/// (exclusive): one panel step of the factorization, checksum columns
/// included.
fn factor_panel(e: &mut [f64], m: usize, cols: std::ops::Range<usize>, end: usize) {
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
fn gather(mat: &[f64], ld: usize, rows: &[usize], col0: usize, ncols: usize) -> Vec<f64> {
    (col0..col0 + ncols).flat_map(|c| rows.iter().map(move |&r| mat[c * ld + r])).collect()
}

/// Writes a compact `rows.len() × ncols` block back to rows `rows` of columns `col0 ..`.
fn scatter(mat: &mut [f64], ld: usize, rows: &[usize], col0: usize, ncols: usize, vals: &[f64]) {
    let mut it = vals.iter();
    for c in col0..col0 + ncols {
        for &r in rows {
            mat[c * ld + r] = *it.next().unwrap();
        }
    }
}

fn assert_no_nan(what: &str, v: &[f64]) {
    assert!(v.iter().all(|x| !x.is_nan()), "{what}: a rebuild read lost data");
}

/// One process row's view of the simulated state during a rebuild.
struct RowRebuild<'s> {
    layout: &'s ChecksumLayout,
    e: &'s mut [f64],
    d: &'s mut [Vec<Vec<f64>>],
    rows: Vec<usize>,
    finished: usize,
}

impl RowRebuild<'_> {
    /// Slot of checksum replica `bc` of group `g` in `d[g]`.
    fn slot(&self, g: usize, bc: usize) -> usize {
        self.layout.checksum_block_cols(g).unwrap().iter().position(|&e| e == bc).unwrap()
    }

    /// This row's rows of extended block column `bc`, R part only when `r_only`.
    fn read(&self, what: &str, bc: usize, r_only: bool) -> Vec<f64> {
        let (m, nb, nr) = (self.layout.m(), self.layout.nb(), self.rows.len());
        let x = gather(self.e, m, &self.rows, bc * nb, nb);
        assert_no_nan(what, &x);
        if r_only {
            r_only_rows(&x, nr, nb, nr, &self.rows, bc * nb).unwrap()
        } else {
            x
        }
    }

    /// This row's rows of the `D` kept with replica `bc` of group `g`.
    fn read_d(&self, g: usize, bc: usize) -> Vec<f64> {
        let x = gather(&self.d[g][self.slot(g, bc)], self.layout.m(), &self.rows, 0, self.layout.nb());
        assert_no_nan("left checksum", &x);
        x
    }

    fn write(&mut self, bc: usize, vals: &[f64]) {
        let (m, nb) = (self.layout.m(), self.layout.nb());
        scatter(self.e, m, &self.rows, bc * nb, nb, vals);
    }

    fn write_d(&mut self, g: usize, bc: usize, vals: &[f64]) {
        let slot = self.slot(g, bc);
        let (m, nb) = (self.layout.m(), self.layout.nb());
        scatter(&mut self.d[g][slot], m, &self.rows, 0, nb, vals);
    }

    /// Solves for `plan.erased[part]` from the first `part.len()` equations: the `D`
    /// relations (`left`: finished members, full stored content) or the `C` relations
    /// (every member, finished ones as their R part). The members outside `part` must be
    /// whole; a survivor read must be one of the plan's contributors.
    fn solve(&mut self, plan: &GroupRebuild, part: std::ops::Range<usize>, left: bool) {
        if part.is_empty() {
            return;
        }
        let (q, nr, nb) = (self.layout.q(), self.rows.len(), self.layout.nb());
        let system = plan.erasure_plan(self.layout, part.clone()).unwrap();
        let unknown = &plan.erased[part.clone()];
        let mut rhs = Vec::with_capacity(part.len());
        for eq in &plan.equations[..part.len()] {
            assert!(plan.contributors.contains(&eq.holder), "{plan:?}: equation holder not a contributor");
            let mut acc =
                if left { self.read_d(plan.group, eq.block_col) } else { self.read("checksum", eq.block_col, false) };
            for (t, j) in plan.members.clone().enumerate() {
                let finished = j < self.finished;
                if unknown.contains(&j) || (left && !finished) {
                    continue;
                }
                if !plan.erased.contains(&j) {
                    assert!(plan.contributors.contains(&(j % q)), "{plan:?}: member {j} not a contributor");
                }
                let x = self.read("survivor", j, !left && finished);
                axpy_block(&mut acc, &x, nr, nb, nr, -self.layout.weight(eq.index, t)).unwrap();
            }
            rhs.push(acc);
        }
        let refs: Vec<&[f64]> = rhs.iter().map(Vec::as_slice).collect();
        for (&j, block) in unknown.iter().zip(system.solve(&refs, nr * nb).unwrap()) {
            self.write(j, &block);
        }
    }

    /// Rebuilds one group on this row by its plan.
    fn rebuild(&mut self, plan: &GroupRebuild) {
        // The finished erased members (a prefix) from the D relations, then the others
        // from the C relations, the just rebuilt ones entering with their R part.
        let split = plan.erased.partition_point(|&j| j < self.finished);
        self.solve(plan, 0..split, true);
        self.solve(plan, split..plan.erased.len(), false);
        let g = plan.group;
        for copy in &plan.copies {
            let kept = self.read("kept replica", copy.kept_block_col, false);
            self.write(copy.lost_block_col, &kept);
            let kept_d = self.read_d(g, copy.kept_block_col);
            self.write_d(g, copy.lost_block_col, &kept_d);
        }
        let (nr, nb) = (self.rows.len(), self.layout.nb());
        for lost in &plan.reencoded {
            let (mut c, mut d) = (vec![0.0; nr * nb], vec![0.0; nr * nb]);
            for (t, j) in plan.members.clone().enumerate() {
                let w = self.layout.weight(lost.index, t);
                let finished = j < self.finished;
                axpy_block(&mut c, &self.read("member", j, finished), nr, nb, nr, w).unwrap();
                if finished {
                    axpy_block(&mut d, &self.read("member", j, false), nr, nb, nr, w).unwrap();
                }
            }
            self.write(lost.block_col, &c);
            self.write_d(g, lost.block_col, &d);
        }
    }
}

/// Loses, in each process row `pr` of `losses`, the processes on its process columns
/// `cols` (ascending, at most `f`), rebuilds them by the plans, and compares everything
/// with the state before the loss.
pub(crate) fn lose_and_rebuild(sim: &mut Sim, losses: &[(usize, Vec<usize>)]) {
    let l = sim.layout.clone();
    let (m, nb, q) = (l.m(), l.nb(), l.q());
    let coords: Vec<(usize, usize)> = losses.iter().flat_map(|(pr, cols)| cols.iter().map(|&pc| (*pr, pc))).collect();
    check_recoverable_up_to(&coords, l.tolerated_losses()).unwrap();
    let mut e = sim.e.clone();
    let mut d = sim.d.clone();

    // The failure: everything the lost processes held.
    for (pr, cols) in losses {
        let rows = l.global_rows_of(*pr).unwrap();
        let nan = vec![f64::NAN; rows.len() * nb];
        for bc in (0..l.n_extended() / nb).filter(|bc| cols.contains(&(bc % q))) {
            scatter(&mut e, m, &rows, bc * nb, nb, &nan);
        }
        for (g, slots) in d.iter_mut().enumerate() {
            for (slot, bc) in slots.iter_mut().zip(l.checksum_block_cols(g).unwrap()) {
                if cols.contains(&(bc % q)) {
                    scatter(slot, m, &rows, 0, nb, &nan);
                }
            }
        }
    }

    // The rebuild, process row by process row, reading only that row's rows.
    for (pr, cols) in losses {
        let mut row = RowRebuild {
            layout: &l,
            e: &mut e,
            d: &mut d,
            rows: l.global_rows_of(*pr).unwrap(),
            finished: sim.finished,
        };
        for g in 0..l.groups() {
            row.rebuild(&GroupRebuild::new(&l, g, cols).unwrap());
        }
    }

    assert_no_nan(&format!("matrix after losing {losses:?}"), &e);
    let orig = sim.e.clone();
    sim.check(&format!("rebuilt matrix after losing {losses:?}"), &e, &orig, m, q);
    for (g, slots) in d.iter().enumerate() {
        for (slot, rebuilt) in slots.iter().enumerate() {
            assert_no_nan(&format!("D_{g} slot {slot} after losing {losses:?}"), rebuilt);
            let orig = sim.d[g][slot].clone();
            sim.check(&format!("rebuilt D_{g} slot {slot} after losing {losses:?}"), rebuilt, &orig, m, q);
        }
    }
}

/// `f + 1` lost process columns `cols` of row `pr`: refused as a whole, and each group
/// whose erased members outnumber its surviving checksums refuses its plan.
pub(crate) fn assert_refused(layout: &ChecksumLayout, pr: usize, cols: &[usize]) {
    let (q, f) = (layout.q(), layout.tolerated_losses());
    let coords: Vec<(usize, usize)> = cols.iter().map(|&pc| (pr, pc)).collect();
    assert_eq!(
        check_recoverable_up_to(&coords, f),
        Err(ErasureError::TooManyLossesInProcessRow { row: pr, process_cols: cols.to_vec(), tolerated: f })
    );
    for g in 0..layout.groups() {
        let erased = layout.group_members(g).unwrap().filter(|j| cols.contains(&(j % q))).count();
        let surviving = (0..layout.checksums())
            .filter(|&i| layout.replica_block_cols(g, i).unwrap().iter().any(|e| !cols.contains(&(e % q))))
            .count();
        match GroupRebuild::new(layout, g, cols) {
            Ok(plan) => assert!(erased <= surviving && plan.equations.len() == erased, "{layout:?} g={g} {cols:?}"),
            Err(ErasureError::NotEnoughChecksums { group, erased_data, lost_checksums, .. }) => {
                assert!(erased > surviving, "{layout:?} g={g} {cols:?}");
                assert_eq!((group, erased_data, lost_checksums), (g, erased, layout.checksums() - surviving));
            }
            Err(other) => panic!("{layout:?} g={g} {cols:?}: {other}"),
        }
    }
}
