//! What an operation leaves next to its matrix (QR's tau, LU's pivots,
//! CG's solution and its report), and the one path that checks it and
//! writes it out, for the plain and the fault-tolerant runs alike.

use crate::problem::{make_matrix, FactorJob};
use blacs_ft::Grid;
use recovery::Region;
use scalapack_ft::abft::{FtOptions, FtReport, FtWorkspace};
use scalapack_ft::cg::{cg_flops, pdcg, CgOptions, CgReport};
use scalapack_ft::dist_io::{write_matrix, write_vector, VectorData};
use scalapack_ft::generate::{Generator, MatrixKind};
use scalapack_ft::report::Op;
use scalapack_ft::{cg_ft, lu, lu_ft, qr, qr_ft, DistMatrix, Error};

/// The factors besides the matrix.
pub enum Factors {
    /// QR's Householder scalars, and how the panels are factored.
    Tau(Vec<f64>, qr::QrOptions),
    /// LU's pivots (0-based, global).
    Pivots(Vec<i64>),
    /// CG's solve of A·x = b.
    Solution(Box<CgSolve>),
}

/// A CG solve: its options, the right-hand side's seed, and once solved
/// the solution and the report.
pub struct CgSolve {
    pub opts: CgOptions,
    seed: u64,
    pub x: Option<DistMatrix>,
    /// The solver's report; `None` before the solve and when it stopped on
    /// a finding (not positive definite, breakdown), which returns no
    /// iterations and no residual: none was computed.
    pub report: Option<CgReport>,
}

impl CgSolve {
    /// Collective (allocation only): b, generated from the seed (entries in
    /// [0.5, 1.5)), and x₀ = 0, with A's row blocks.
    fn vectors(&self, grid: &Grid, a: &DistMatrix) -> Result<(DistMatrix, DistMatrix), Error> {
        let n = a.m();
        let gen = Generator::new(MatrixKind::Uniform, self.seed ^ 0xB0B, n, 1).map_err(|e| Error::Argument {
            routine: "ftla".into(),
            position: 0,
            entry: 0,
            name: "b".into(),
            reason: e.to_string(),
        })?;
        let b = DistMatrix::from_fn(grid, n, 1, a.mb(), a.mb(), |i, _| gen.element(i, 0) + 1.0)?;
        let x = DistMatrix::zeros(grid, n, 1, a.mb(), a.mb())?;
        Ok((b, x))
    }
}

impl Factors {
    /// Empty factors of the job's operation, to be filled by it.
    pub fn of(a: &FactorJob) -> Factors {
        match a.op {
            Op::Qr => Factors::Tau(Vec::new(), a.qr),
            Op::Lu => Factors::Pivots(Vec::new()),
            Op::Cg => Factors::Solution(Box::new(CgSolve { opts: a.cg.clone(), seed: a.seed, x: None, report: None })),
        }
    }

    /// Floating-point operations of the run on an `m`×`n` matrix (CG's
    /// count from its iterations).
    pub fn flops(&self, op: Op, m: usize, n: usize) -> f64 {
        match self {
            Factors::Solution(s) => cg_flops(n, s.report.as_ref().map_or(0, |r| r.iterations)),
            _ => op.flops(m, n),
        }
    }

    /// CG's solve, if this is one.
    pub fn solve(&self) -> Option<&CgSolve> {
        match self {
            Factors::Solution(s) => Some(s),
            _ => None,
        }
    }

    /// Collective: the plain factorization (`pdgeqrf`, `pdgetrf`) of
    /// `mat`, in place, or the plain solve (`pdcg`). A singular LU is a
    /// result, not a failure: it is returned (the factors are complete)
    /// for the caller to report; so is a matrix CG finds not positive
    /// definite.
    pub fn factor(&mut self, grid: &Grid, mat: &mut DistMatrix) -> Result<Option<Error>, Error> {
        match self {
            Factors::Tau(tau, o) => qr::pdgeqrf_with(grid, mat, tau, o).map(|()| None),
            Factors::Pivots(ipiv) => singular_is_a_result(lu::pdgetrf(grid, mat, ipiv)).map(|(_, s)| s),
            Factors::Solution(s) => {
                let (b, mut x) = s.vectors(grid, mat)?;
                let done = singular_is_a_result(pdcg(grid, mat, &b, &mut x, &s.opts));
                s.x = Some(x);
                done.map(|(r, e)| {
                    s.report = r;
                    e
                })
            }
        }
    }

    /// Collective: the fault-tolerant factorization (`pdgeqrf_ft_in`,
    /// `pdgetrf_ft_in`) of `mat`, as [`Factors::factor`]. A singular LU's
    /// report is the default one (its recoveries are not returned with the
    /// singularity).
    pub fn factor_ft(
        &mut self,
        region: &mut Region,
        mat: &mut DistMatrix,
        opts: &FtOptions,
        work: &mut FtWorkspace,
    ) -> Result<(FtReport, Option<Error>), Error> {
        match self {
            Factors::Tau(tau, o) => qr_ft::pdgeqrf_ft_with(region, mat, tau, opts, work, o).map(|r| (r, None)),
            Factors::Pivots(ipiv) => singular_is_a_result(lu_ft::pdgetrf_ft_in(region, mat, ipiv, opts, work))
                .map(|(r, s)| (r.unwrap_or_default(), s)),
            Factors::Solution(s) => {
                let (b, mut x) = s.vectors(region.grid(), mat)?;
                let done = singular_is_a_result(cg_ft::pdcg_ft_in(region, mat, &b, &mut x, &s.opts, opts, work));
                s.x = Some(x);
                done.map(|(r, e)| {
                    let ft = r
                        .as_ref()
                        .map(|r| FtReport {
                            recoveries: r.recoveries.clone(),
                            overhead_model: 0.0,
                            check: r.check.clone(),
                            earlier_s: r.earlier_s,
                        })
                        .unwrap_or_default();
                    s.report = r;
                    (ft, e)
                })
            }
        }
    }
}

/// A result that is a finding, not a failure — LU's `Err(Singular)`, CG's
/// not positive definite or breakdown — as `Ok((None, Some(error)))`.
fn singular_is_a_result<T>(r: Result<T, Error>) -> Result<(Option<T>, Option<Error>), Error> {
    match r {
        Ok(x) => Ok((Some(x), None)),
        Err(e @ (Error::Singular { .. } | Error::NotPositiveDefinite { .. } | Error::Breakdown { .. })) => {
            Ok((None, Some(e)))
        }
        Err(e) => Err(e),
    }
}

/// The residuals of a factored matrix against the original.
#[derive(Clone, Copy, Debug, Default)]
pub struct Residuals {
    /// ‖A − QR‖ or ‖PA − LU‖, scaled as ScaLAPACK's testers do.
    pub residual: Option<f64>,
    /// QR: ‖I − QᵀQ‖.
    pub orthogonality: Option<f64>,
    /// LU with `--solve`: the solve's residual.
    pub solve: Option<f64>,
    /// CG: whether it converged with a true residual within 10·tol (and
    /// the rounding floor).
    pub cg_pass: Option<bool>,
}

impl Residuals {
    /// Every residual that was computed is below 16 (CG: see `cg_pass`).
    pub fn pass(&self) -> bool {
        [self.residual, self.orthogonality, self.solve].iter().flatten().all(|&r| r < 16.0)
            && self.cg_pass.unwrap_or(true)
    }

    /// `, residual 0.012, orthogonality 0.3` for the summary line.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        for (name, v) in
            [("residual", self.residual), ("orthogonality", self.orthogonality), ("solve residual", self.solve)]
        {
            if let Some(v) = v {
                s.push_str(&format!(", {name} {v:.3}"));
            }
        }
        s
    }
}

/// Collective: the checks the job asks for (`--check`, `--solve`), against
/// the original matrix, regenerated or re-read (`original`, when the
/// caller kept a copy).
pub fn check(
    grid: &Grid,
    a: &FactorJob,
    original: Option<DistMatrix>,
    fact: &DistMatrix,
    factors: &Factors,
) -> Result<Residuals, scalapack_ft::Error> {
    let mut r = Residuals::default();
    if let Factors::Solution(s) = factors {
        // The solver recomputed the true residual itself.
        let bound = 10.0 * s.opts.tol + 1e3 * f64::EPSILON;
        r.cg_pass = Some(s.report.as_ref().is_some_and(|s| s.converged && s.relative_residual <= bound));
        return Ok(r);
    }
    if !a.check && !a.solve {
        return Ok(r);
    }
    let orig = match original {
        Some(o) => o,
        None => make_matrix(grid, a, true)?,
    };
    match factors {
        Factors::Solution(_) => {}
        Factors::Tau(tau, _) => {
            if a.check {
                r.residual = Some(qr::check::qr_residual(grid, &orig, fact, tau)?);
                r.orthogonality = Some(qr::check::orthogonality(grid, fact, tau)?);
            }
        }
        Factors::Pivots(ipiv) => {
            if a.check {
                r.residual = Some(lu::lu_residual(grid, &orig, fact, ipiv)?);
            }
            if a.solve {
                // b = A·(1, …, 1)ᵀ, so that x should be all ones.
                let nb = fact.nb();
                let ones = DistMatrix::from_fn(grid, orig.n(), 1, nb, nb, |_, _| 1.0)?;
                let mut b = DistMatrix::zeros(grid, orig.m(), 1, nb, nb)?;
                scalapack_ft::pblas::pdgemm(
                    grid,
                    scalapack_ft::blas::Trans::No,
                    scalapack_ft::blas::Trans::No,
                    1.0,
                    &orig,
                    &ones,
                    0.0,
                    &mut b,
                )?;
                let mut x = b.clone();
                lu::pdgetrs(grid, lu::Transpose::NoTrans, fact, ipiv, &mut x)?;
                r.solve = Some(lu::solve_residual(grid, &orig, &x, &b)?);
            }
        }
    }
    Ok(r)
}

/// Collective: `--output`: the factored matrix, and tau or the pivots
/// next to it (`FILE.tau.npy`, `FILE.ipiv.npy`).
pub fn write(grid: &Grid, a: &FactorJob, fact: &DistMatrix, factors: &Factors) -> Result<(), scalapack_ft::Error> {
    let Some(out) = &a.output else { return Ok(()) };
    match factors {
        Factors::Tau(tau, _) => {
            write_matrix(grid, fact, out)?;
            write_vector(grid, &out.with_extension("tau.npy"), VectorData::F64(tau))
        }
        Factors::Pivots(ipiv) => {
            write_matrix(grid, fact, out)?;
            write_vector(grid, &out.with_extension("ipiv.npy"), VectorData::I64(ipiv))
        }
        // CG: the solution x (N×1).
        Factors::Solution(s) => match &s.x {
            Some(x) => write_matrix(grid, x, out),
            None => Ok(()),
        },
    }
}
