//! One CG iteration, split as the step-commit protocol wants it and used
//! as is by both solvers: [`iterate`] communicates and computes into a
//! [`Step`] only (the vectors are untouched), [`apply`] commits it with
//! local work; [`start`] / [`apply_start`] do the same for the initial
//! residual and [`true_residual`] recomputes ‖b − A·x‖ at the end.
//!
//! Preconditioned CG (M = diag(A) with Jacobi, else the identity):
//! q = A·p, α = ρ/(pᵀq), x += α·p, r −= α·q, z = M⁻¹·r, ρ' = rᵀz,
//! p = z + (ρ'/ρ)·p.

use super::vectors::{row_dot, row_sum, Vectors};
use super::Detection;
use crate::blas::{self, Trans};
use crate::error::{Error, Result};
use crate::matrix::DistMatrix;
use blacs_ft::{Grid, Scope};
use recovery::protocol::Phase;

/// Times a matrix-vector product is recomputed after a checksum mismatch
/// before the solve gives up.
const RECOMPUTES: usize = 3;

/// The replicated scalars of a solve.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Scalars {
    /// ρ = rᵀz.
    pub rho: f64,
    /// rᵀr (by the recurrence).
    pub rr: f64,
    /// bᵀb.
    pub bb: f64,
}

impl Scalars {
    /// ‖r‖/‖b‖ (‖r‖ when b = 0).
    pub fn relative(&self) -> f64 {
        relative(self.rr, self.bb)
    }
}

/// sqrt(rr/bb), or sqrt(rr) when b = 0.
pub(crate) fn relative(rr: f64, bb: f64) -> f64 {
    if bb > 0.0 {
        (rr / bb).sqrt()
    } else {
        rr.sqrt()
    }
}

/// The column sums of A, for the checksum test of the products: eᵀA and
/// eᵀ|A| at this process's local columns (the same on every process of
/// its process column).
#[derive(Clone, Debug, Default)]
pub(crate) struct ColumnSums {
    sum: Vec<f64>,
    abs: Vec<f64>,
}

impl ColumnSums {
    /// Collective: the sums of `a`'s first `lc` local columns (A's), down
    /// the process columns.
    pub fn of(grid: &Grid, a: &DistMatrix, lc: usize) -> Result<ColumnSums> {
        let (lr, ld) = (a.local_rows(), a.lld().max(1));
        let mut both = vec![0.0; 2 * lc];
        for j in 0..lc {
            let col = &a.local()[j * ld..j * ld + lr];
            both[j] = col.iter().sum();
            both[lc + j] = col.iter().map(|v| v.abs()).sum();
        }
        if grid.nprow() > 1 {
            grid.sum(Scope::Column, &mut both, None)?;
        }
        let abs = both.split_off(lc);
        Ok(ColumnSums { sum: both, abs })
    }
}

/// How a solve computes: A's data and the hooks of the fault-tolerant one.
pub(crate) struct Operator<'a> {
    /// A's local blocks are the first `lc` local columns of `a` (the
    /// extended matrix's data part, or A itself).
    pub a: &'a DistMatrix,
    pub lc: usize,
    /// The checksum test of every product (fault-tolerant solver).
    pub sums: Option<&'a ColumnSums>,
    /// Test hook: adds this to one entry of this process's first product
    /// of the step (a silent error).
    pub tamper: Option<f64>,
    /// Called when the step enters a phase (the kill points).
    pub enter: &'a mut dyn FnMut(Phase),
    pub routine: &'a str,
}

impl Operator<'_> {
    /// Collective: q = A·v, both in row form, and the step's inner
    /// products `extra(q)` reduced over the grid with it. With checksums,
    /// eᵀq is compared with (eᵀA)·v and a mismatch beyond rounding
    /// recomputes the product (recorded in `detections`).
    fn product(
        &mut self,
        grid: &Grid,
        v: &[f64],
        iteration: u64,
        detections: &mut Vec<Detection>,
        extra: &dyn Fn(&[f64]) -> Vec<f64>,
    ) -> Result<(Vec<f64>, Vec<f64>)> {
        let a = self.a;
        let (lr, n) = (a.local_rows(), a.m());
        for attempt in 0..=RECOMPUTES {
            (self.enter)(Phase::Matvec);
            // v at this process's columns: the row pieces summed down the
            // process column (every process row holds its own rows).
            let mut full = vec![0.0; n];
            for (li, &vi) in v.iter().enumerate() {
                full[a.global_row(li)] = vi;
            }
            if grid.nprow() > 1 {
                grid.sum(Scope::Column, &mut full, None)?;
            }
            let at_cols: Vec<f64> = (0..self.lc).map(|lj| full[a.global_col(lj)]).collect();
            let mut q = vec![0.0; lr];
            if lr > 0 && self.lc > 0 {
                blas::dgemv(Trans::No, lr, self.lc, 1.0, a.local(), a.lld().max(1), &at_cols, 0.0, &mut q);
            }
            if let (Some(t), 0, true) = (self.tamper, attempt, lr > 0) {
                // Well above the checksum test's rounding bound, whatever
                // the scale of A and v.
                let scale = self.sums.map_or(0.0, |s| s.abs.iter().zip(&at_cols).map(|(c, v)| c * v.abs()).sum());
                q[0] += t * (1.0 + 1e3 * (n as f64 + 2.0) * f64::EPSILON * scale * grid.npcol() as f64);
            }
            if grid.npcol() > 1 {
                grid.sum(Scope::Row, &mut q, None)?;
            }
            (self.enter)(Phase::Dot);
            let mut dots = extra(&q);
            let k = dots.len();
            if let Some(s) = self.sums {
                // (eᵀA)·v over this process's columns, on process row 0 (the
                // other rows hold the same columns).
                let (cv, cabs) = if grid.myrow() == 0 {
                    (
                        s.sum.iter().zip(&at_cols).map(|(c, v)| c * v).sum(),
                        s.abs.iter().zip(&at_cols).map(|(c, v)| c * v.abs()).sum(),
                    )
                } else {
                    (0.0, 0.0)
                };
                dots.extend([row_sum(grid, &q), cv, cabs]);
            }
            grid.sum(Scope::All, &mut dots, None)?;
            let Some(_) = self.sums else {
                return Ok((q, dots));
            };
            // Rounding: each of eᵀ(A·v) and (eᵀA)·v is within about
            // n·eps·Σ|A||v| of the exact value.
            let (eq, cv, cabs) = (dots[k], dots[k + 1], dots[k + 2]);
            finite(self.routine, iteration, &[eq, cv, cabs])?;
            let defect = (eq - cv).abs();
            let tolerance = 8.0 * (n as f64 + 2.0) * f64::EPSILON * cabs;
            if defect <= tolerance {
                dots.truncate(k);
                return Ok((q, dots));
            }
            detections.push(Detection { iteration, defect, tolerance });
        }
        Err(Error::Breakdown {
            routine: self.routine.into(),
            iteration,
            reason: format!("the matrix-vector product failed its checksum test {} times in a row", RECOMPUTES + 1),
        })
    }
}

/// What the initial residual's step hands to [`apply_start`].
pub(crate) struct Start {
    r: Vec<f64>,
    z: Vec<f64>,
    scalars: Scalars,
    pub detections: Vec<Detection>,
}

/// Collective, step 0: r₀ = b − A·x₀, z₀ = M⁻¹·r₀, ρ₀, and bᵀb. A
/// non-positive diagonal with Jacobi preconditioning is an error.
pub(crate) fn start(op: &mut Operator, grid: &Grid, v: &Vectors) -> Result<Start> {
    let mut detections = Vec::new();
    let bad_diagonal = v.dinv.iter().filter(|d| !(d.is_finite() && **d > 0.0)).count() as f64;
    let (q, _) = op.product(grid, &v.x, 0, &mut detections, &|_| Vec::new())?;
    let r: Vec<f64> = v.b.iter().zip(&q).map(|(b, q)| b - q).collect();
    let z = v.precondition(&r);
    let mut dots = [row_dot(grid, &r, &z), row_dot(grid, &r, &r), row_dot(grid, &v.b, &v.b), 0.0];
    if grid.mycol() == 0 {
        dots[3] = bad_diagonal;
    }
    grid.sum(Scope::All, &mut dots, None)?;
    if dots[3] > 0.0 {
        return Err(Error::NotPositiveDefinite { routine: op.routine.into(), iteration: 0, curvature: 0.0 });
    }
    finite(op.routine, 0, &dots[..3])?;
    Ok(Start { r, z, scalars: Scalars { rho: dots[0], rr: dots[1], bb: dots[2] }, detections })
}

/// Local: commits [`start`] (r = r₀, p = z₀).
pub(crate) fn apply_start(v: &mut Vectors, s: &mut Scalars, st: Start) {
    v.r = st.r;
    v.p = st.z;
    *s = st.scalars;
}

/// What an iteration hands to [`apply`].
pub(crate) struct Step {
    alpha: f64,
    r: Vec<f64>,
    z: Vec<f64>,
    rho: f64,
    rr: f64,
    pub detections: Vec<Detection>,
}

/// Collective, iteration `iteration` (1-based): q = A·p, α, and the next
/// r, z, ρ and rᵀr, into the step only.
///
/// # Errors
/// [`Error::NotPositiveDefinite`] for pᵀq ≤ 0, [`Error::Breakdown`] for
/// a non-finite scalar — from replicated values, so the same everywhere.
pub(crate) fn iterate(op: &mut Operator, grid: &Grid, v: &Vectors, s: &Scalars, iteration: u64) -> Result<Step> {
    let mut detections = Vec::new();
    let (q, dots) = op.product(grid, &v.p, iteration, &mut detections, &|q| vec![row_dot(grid, &v.p, q)])?;
    let pq = dots[0];
    finite(op.routine, iteration, &[pq])?;
    if pq <= 0.0 {
        return Err(Error::NotPositiveDefinite { routine: op.routine.into(), iteration, curvature: pq });
    }
    let alpha = s.rho / pq;
    let r: Vec<f64> = v.r.iter().zip(&q).map(|(r, q)| r - alpha * q).collect();
    let z = v.precondition(&r);
    let mut dots = [row_dot(grid, &r, &z), row_dot(grid, &r, &r)];
    grid.sum(Scope::All, &mut dots, None)?;
    finite(op.routine, iteration, &[alpha, dots[0], dots[1]])?;
    Ok(Step { alpha, r, z, rho: dots[0], rr: dots[1], detections })
}

/// Local: commits an iteration: x += α·p, r, p = z + β·p, ρ.
pub(crate) fn apply(v: &mut Vectors, s: &mut Scalars, st: Step) {
    let beta = if s.rho != 0.0 { st.rho / s.rho } else { 0.0 };
    for ((x, p), z) in v.x.iter_mut().zip(v.p.iter_mut()).zip(&st.z) {
        *x += st.alpha * *p;
        *p = z + beta * *p;
    }
    v.r = st.r;
    s.rho = st.rho;
    s.rr = st.rr;
}

/// Collective: ‖b − A·x‖₂² (the product checked like the others).
pub(crate) fn true_residual(
    op: &mut Operator,
    grid: &Grid,
    v: &Vectors,
    iteration: u64,
) -> Result<(f64, Vec<Detection>)> {
    let mut detections = Vec::new();
    let (_, dots) = op.product(grid, &v.x, iteration, &mut detections, &|q| {
        let res: Vec<f64> = v.b.iter().zip(q).map(|(b, q)| b - q).collect();
        vec![row_dot(grid, &res, &res)]
    })?;
    Ok((dots[0], detections))
}

fn finite(routine: &str, iteration: u64, values: &[f64]) -> Result<()> {
    if values.iter().all(|v| v.is_finite()) {
        return Ok(());
    }
    Err(Error::Breakdown { routine: routine.into(), iteration, reason: "a non-finite value appeared".into() })
}
