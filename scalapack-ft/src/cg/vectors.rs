//! The vectors of a CG solve in row form: each process holds the entries
//! of its local rows of A, the same on every process of its process row
//! (so a lost process's pieces are a copy from any other process of its
//! row).

use crate::error::Result;
use crate::matrix::DistMatrix;
use blacs_ft::{Grid, Scope};

/// The row-form vectors of a solve (`lr` entries each, this process's
/// local rows of A).
#[derive(Clone, Debug, Default)]
pub(crate) struct Vectors {
    /// The right-hand side.
    pub b: Vec<f64>,
    /// The iterate.
    pub x: Vec<f64>,
    /// The residual b − A·x (by the recurrence).
    pub r: Vec<f64>,
    /// The search direction.
    pub p: Vec<f64>,
    /// diag(A)⁻¹ with Jacobi preconditioning, else empty.
    pub dinv: Vec<f64>,
}

impl Vectors {
    /// Collective: b and x₀ from the M×1 matrices `b` and `x` (held on
    /// process column 0) in row form, broadcast along the process rows;
    /// with `jacobi`, diag(A)⁻¹ from `a`'s first `lc` local columns.
    pub fn from_inputs(grid: &Grid, a: &DistMatrix, b: &DistMatrix, x: &DistMatrix, jacobi: bool) -> Result<Vectors> {
        let lr = a.local_rows();
        let mut both = vec![0.0; 2 * lr];
        if grid.mycol() == 0 {
            both[..lr].copy_from_slice(&b.local()[..lr]);
            both[lr..].copy_from_slice(&x.local()[..lr]);
        }
        if grid.npcol() > 1 {
            grid.broadcast(Scope::Row, &mut both, 0)?;
        }
        let x0 = both.split_off(lr);
        let dinv = if jacobi { inverse_diagonal(grid, a)? } else { Vec::new() };
        Ok(Vectors { b: both, r: vec![0.0; lr], p: vec![0.0; lr], x: x0, dinv })
    }

    /// Writes x into the M×1 matrix `x` (on process column 0).
    pub fn write_x(&self, grid: &Grid, x: &mut DistMatrix) {
        if grid.mycol() == 0 {
            let lr = self.x.len();
            x.local_mut()[..lr].copy_from_slice(&self.x);
        }
    }

    /// The preconditioned residual z = M⁻¹·r.
    pub fn precondition(&self, r: &[f64]) -> Vec<f64> {
        if self.dinv.is_empty() {
            r.to_vec()
        } else {
            r.iter().zip(&self.dinv).map(|(r, d)| r * d).collect()
        }
    }

    /// Every vector end to end (a copy for a process of the same row).
    pub fn pack(&self) -> Vec<f64> {
        [&self.b[..], &self.x, &self.r, &self.p, &self.dinv].concat()
    }

    /// Every vector, mutable, each `lr` long (`dinv` too with `jacobi`):
    /// sized first where they are not yet (a process restored from a
    /// checkpoint reads them in).
    pub fn arrays_mut(&mut self, lr: usize, jacobi: bool) -> Vec<&mut [f64]> {
        let mut all = vec![&mut self.b, &mut self.x, &mut self.r, &mut self.p];
        if jacobi {
            all.push(&mut self.dinv);
        }
        all.into_iter()
            .map(|v| {
                v.resize(lr, 0.0);
                v.as_mut_slice()
            })
            .collect()
    }

    /// The inverse of [`Vectors::pack`] (`lr` entries per vector).
    pub fn unpack(&mut self, data: &[f64], lr: usize) {
        let mut parts = data.chunks(lr.max(1));
        for v in [&mut self.b, &mut self.x, &mut self.r, &mut self.p] {
            v.clear();
            v.extend_from_slice(if lr == 0 { &[] } else { parts.next().unwrap_or(&[]) });
        }
        self.dinv.clear();
        if lr > 0 && data.len() == 5 * lr {
            self.dinv.extend_from_slice(parts.next().unwrap_or(&[]));
        }
    }
}

/// Collective: diag(A)⁻¹ in row form, from the diagonal entries held
/// here (the first `lc` local columns of `a` are A's), summed along the
/// process rows.
fn inverse_diagonal(grid: &Grid, a: &DistMatrix) -> Result<Vec<f64>> {
    let (lr, ld) = (a.local_rows(), a.lld().max(1));
    let mut d = vec![0.0; lr];
    for (li, di) in d.iter_mut().enumerate() {
        let i = a.global_row(li);
        if a.col_owner(i) == grid.mycol() as usize {
            *di = a.local()[li + a.local_cols_before(i) * ld];
        }
    }
    if grid.npcol() > 1 {
        grid.sum(Scope::Row, &mut d, None)?;
    }
    Ok(d.into_iter().map(|x| 1.0 / x).collect())
}

/// This process's share of the grid-wide inner product xᵀy of two row-form
/// vectors: its local rows on process column 0, nothing elsewhere (the
/// other columns hold the same rows).
pub(crate) fn row_dot(grid: &Grid, x: &[f64], y: &[f64]) -> f64 {
    if grid.mycol() != 0 {
        return 0.0;
    }
    x.iter().zip(y).map(|(a, b)| a * b).sum()
}

/// This process's share of Σ xᵢ over a row-form vector (see [`row_dot`]).
pub(crate) fn row_sum(grid: &Grid, x: &[f64]) -> f64 {
    if grid.mycol() != 0 {
        return 0.0;
    }
    x.iter().sum()
}
