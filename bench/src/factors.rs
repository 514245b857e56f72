//! What an operation leaves next to its matrix (QR's tau, LU's pivots,
//! a least-squares solution, CG's solution and its report), and the one
//! path that checks it, solves with it and writes it out, for the plain
//! and the fault-tolerant runs alike.

use crate::problem::{make_matrix, FactorJob, SolveJob};
use crate::solve;
use blacs_ft::Grid;
use ftla_bench::report::Op;
use recovery::Region;
use scalapack_ft::abft::{Factors, FactorsKind, FtOptions, FtReport, FtWorkspace};
use scalapack_ft::cg::{cg_flops, pdcg, CgOptions, CgReport};
use scalapack_ft::dist_io::{write_matrix, write_vector, VectorData};
use scalapack_ft::generate::{Generator, MatrixKind};
use scalapack_ft::{blas, cg_ft, chol, chol_ft, lu, lu_ft, qr, qr_ft, DistMatrix, Error};

/// What a run makes besides the factored matrix: tau or the pivots, and
/// the solve with them (CG: its solution).
pub enum Outputs {
    /// QR's Householder scalars, and how the panels are factored.
    Tau(Vec<f64>, qr::QrOptions),
    /// LU's pivots (0-based, global).
    Pivots(Vec<i64>),
    /// CG's solve of A·x = b.
    Solution(Box<CgSolve>),
    /// QR with `--lstsq`: the least-squares solve through the factors.
    LeastSquares(Box<LstsqSolve>),
    /// LU with `--solve`: the pivots and the solve with the factors.
    LuSolve(Box<LuSolve>),
    /// Cholesky: L in the lower triangle of the factored matrix, and with
    /// `--solve` the solve with it.
    Cholesky(Box<CholSolve>),
}

/// A Cholesky factorization (`chol`), and with `--solve` the system, B's
/// seed, and once solved B and X.
pub struct CholSolve {
    /// The factorization stopped at a minor that is not positive
    /// definite: no factor to check, no solve.
    failed: bool,
    pub system: Option<SolveJob>,
    seed: u64,
    pub b: Option<DistMatrix>,
    pub x: Option<DistMatrix>,
    /// Seconds of the solve alone (`pdpotrs`), on this process.
    pub solve_s: Option<f64>,
    /// With `--ft`: the factorization's report, kept for the call made
    /// again after a loss before the solve's checksums existed.
    factored: Option<FtReport>,
}

/// A solve with LU factors (`lu --solve`): the system, B's seed, and once
/// solved the pivots, B and X (`None` when the matrix was singular: no
/// solve).
pub struct LuSolve {
    pub system: SolveJob,
    seed: u64,
    pub ipiv: Vec<i64>,
    pub b: Option<DistMatrix>,
    pub x: Option<DistMatrix>,
    /// The fault-tolerant factorization found the matrix singular and
    /// returned no factors (the factored matrix is not there to check).
    no_factors: bool,
    /// Seconds of the last solve alone (`pdgetrs` or `pdgetrs_ft`), on
    /// this process.
    pub solve_s: Option<f64>,
    /// The fault-tolerant factorization's report, kept for a run made
    /// again after a loss before the solve's checksums existed (the
    /// factorization then returns its factors again with an empty one).
    factored: Option<FtReport>,
}

/// A least-squares solve (`qr --lstsq`): the system, B's seed, and once
/// solved tau and B overwritten as pdgels leaves it (X in rows 0..N).
pub struct LstsqSolve {
    pub system: SolveJob,
    seed: u64,
    pub tau: Vec<f64>,
    pub b: Option<DistMatrix>,
    /// Seconds of the last solve alone (`pdgels`'s part after its
    /// factorization, or `pdgels_ft`'s protected solve), on this process.
    pub solve_s: Option<f64>,
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

impl LstsqSolve {
    /// B as pdgels takes it: the M×NRHS right-hand sides (see
    /// [`solve::right_hand_sides`]) in max(M, N) rows, zero below M for
    /// the minimum-norm problem (M < N).
    fn rhs(&self, grid: &Grid, a: &DistMatrix, collective: bool) -> Result<DistMatrix, Error> {
        let b = solve::right_hand_sides(grid, &self.system, self.seed, a.m(), a.nb(), collective)?;
        if a.m() < a.n() {
            solve::with_rows(grid, &b, a.n())
        } else {
            Ok(b)
        }
    }
}

impl Outputs {
    /// Empty factors of the job's operation, to be filled by it.
    pub fn of(a: &FactorJob) -> Outputs {
        match (a.op, &a.solve) {
            (Op::Qr, Some(system)) => Outputs::LeastSquares(Box::new(LstsqSolve {
                system: system.clone(),
                seed: a.seed,
                tau: Vec::new(),
                b: None,
                solve_s: None,
            })),
            (Op::Qr, None) => Outputs::Tau(Vec::new(), a.qr),
            (Op::Lu, Some(system)) => Outputs::LuSolve(Box::new(LuSolve {
                system: system.clone(),
                seed: a.seed,
                ipiv: Vec::new(),
                b: None,
                x: None,
                no_factors: false,
                solve_s: None,
                factored: None,
            })),
            (Op::Lu, None) => Outputs::Pivots(Vec::new()),
            (Op::Chol, system) => Outputs::Cholesky(Box::new(CholSolve {
                failed: false,
                system: system.clone(),
                seed: a.seed,
                b: None,
                x: None,
                solve_s: None,
                factored: None,
            })),
            (Op::Cg, _) => {
                Outputs::Solution(Box::new(CgSolve { opts: a.cg.clone(), seed: a.seed, x: None, report: None }))
            }
        }
    }

    /// Floating-point operations of the run on an `m`×`n` matrix (CG's
    /// count from its iterations).
    pub fn flops(&self, op: Op, m: usize, n: usize) -> f64 {
        match self {
            Outputs::Solution(s) => cg_flops(n, s.report.as_ref().map_or(0, |r| r.iterations)),
            // Qᵀ·B (LAPACK's count for DORMQR, 2·K·N·(2M−N)), then R·X (N²·K).
            // (M < N: the same counts for Aᵀ, N×M: its QR, Q·[Y; 0] and
            // Rᵀ·Y = B.)
            Outputs::LeastSquares(s) => {
                let (m, n) = (m.max(n), m.min(n));
                let (m, n, k) = (m as f64, n as f64, s.system.nrhs as f64);
                op.flops(m as usize, n as usize) + 2.0 * k * n * (2.0 * m - n) + n * n * k
            }
            // L⁻¹·B and U⁻¹·B: 2·N²·K.
            Outputs::LuSolve(s) => op.flops(m, n) + 2.0 * (n * n * s.system.nrhs) as f64,
            Outputs::Cholesky(s) => op.flops(m, n) + s.system.as_ref().map_or(0.0, |y| 2.0 * (n * n * y.nrhs) as f64),
            _ => op.flops(m, n),
        }
    }

    /// [`Outputs::flops`] of a run that ended with `outcome` (a singular
    /// LU is complete; a Cholesky that stopped at a minor did not do its
    /// flops: NaN, no rate).
    pub fn done_flops(&self, op: Op, m: usize, n: usize, outcome: Option<&Error>) -> f64 {
        if matches!(outcome, Some(Error::MinorNotPositiveDefinite { .. })) {
            f64::NAN
        } else {
            self.flops(op, m, n)
        }
    }

    /// QR's Householder scalars, with or without a least-squares solve.
    fn tau(&self) -> Option<&[f64]> {
        match self {
            Outputs::Tau(tau, _) => Some(tau),
            Outputs::LeastSquares(s) => Some(&s.tau),
            _ => None,
        }
    }

    /// `lu --solve`, `qr --lstsq`: seconds of the last solve alone, on
    /// this process.
    pub fn solve_seconds(&self) -> Option<f64> {
        match self {
            Outputs::LuSolve(s) => s.solve_s,
            Outputs::LeastSquares(s) => s.solve_s,
            Outputs::Cholesky(s) => s.solve_s,
            _ => None,
        }
    }

    /// The routine whose solve [`Outputs::solve_seconds`] times, plain
    /// (`pdgetrs`, `pdgels`) or fault-tolerant (`ft`: `pdgetrs_ft`,
    /// `pdgels_ft`); `None` without a solve with the factors.
    pub fn solve_routine(&self, ft: bool) -> Option<&'static str> {
        match (self, ft) {
            (Outputs::LuSolve(_), false) => Some("pdgetrs"),
            (Outputs::LuSolve(_), true) => Some("pdgetrs_ft"),
            (Outputs::LeastSquares(_), false) => Some("pdgels"),
            (Outputs::LeastSquares(_), true) => Some("pdgels_ft"),
            (Outputs::Cholesky(s), false) if s.system.is_some() => Some("pdpotrs"),
            (Outputs::Cholesky(s), true) if s.system.is_some() => Some("pdpotrs_ft"),
            _ => None,
        }
    }

    /// CG's solve, if this is one.
    pub fn solve(&self) -> Option<&CgSolve> {
        match self {
            Outputs::Solution(s) => Some(s),
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
            Outputs::Tau(tau, o) => qr::pdgeqrf_with(grid, mat, tau, o).map(|()| None),
            Outputs::LeastSquares(s) => {
                let mut b = s.rhs(grid, mat, true)?;
                let (tau, solve) = qr::pdgels_timed(grid, mat, &mut b)?;
                (s.tau, s.solve_s, s.b) = (tau, Some(solve.as_secs_f64()), Some(b));
                Ok(None)
            }
            Outputs::Pivots(ipiv) => singular_is_a_result(lu::pdgetrf(grid, mat, ipiv)).map(|(_, s)| s),
            Outputs::LuSolve(s) => {
                let singular = singular_is_a_result(lu::pdgetrf(grid, mat, &mut s.ipiv))?.1;
                if singular.is_none() {
                    let ipiv = &s.ipiv;
                    let (b, x, secs) = timed_solve(grid, &s.system, s.seed, mat, |x| {
                        lu::pdgetrs(grid, lu::Transpose::NoTrans, mat, ipiv, x)
                    })?;
                    (s.b, s.x, s.solve_s) = (Some(b), Some(x), Some(secs));
                }
                Ok(singular)
            }
            Outputs::Cholesky(s) => match chol::pdpotrf(grid, blas::Uplo::Lower, mat) {
                Ok(()) => {
                    if let Some(system) = &s.system {
                        let (b, x, secs) =
                            timed_solve(grid, system, s.seed, mat, |x| chol::pdpotrs(grid, blas::Uplo::Lower, mat, x))?;
                        (s.b, s.x, s.solve_s) = (Some(b), Some(x), Some(secs));
                    }
                    Ok(None)
                }
                Err(e @ Error::MinorNotPositiveDefinite { .. }) => {
                    s.failed = true;
                    Ok(Some(e))
                }
                Err(e) => Err(e),
            },
            Outputs::Solution(s) => {
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
    /// `pdgetrf_ft_in`) of `mat`, as [`Outputs::factor`]. A singular LU's
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
            Outputs::Tau(tau, o) => qr_ft::pdgeqrf_ft_with(region, mat, tau, opts, work, o).map(|r| (r, None)),
            Outputs::Cholesky(s) => {
                let done = match s.system.clone() {
                    None => chol_ft::pdpotrf_ft_in(region, mat, opts, work),
                    Some(system) => kept_factors_and_solve(
                        region,
                        mat,
                        &mut s.factored,
                        |region, a| chol_ft::CholFactors::factor(region, a, opts),
                        |region, f, x| chol_ft::pdpotrs_ft(region, f, x, opts),
                        (&system, s.seed),
                    )
                    .map(|k| {
                        (s.b, s.x, s.solve_s) = (Some(k.b), Some(k.x), Some(k.solve_s));
                        k.report
                    }),
                };
                match done {
                    Ok(report) => Ok((report, None)),
                    Err(e @ Error::MinorNotPositiveDefinite { .. }) => {
                        s.failed = true;
                        Ok((FtReport::default(), Some(e)))
                    }
                    Err(e) => Err(e),
                }
            }
            Outputs::LeastSquares(s) => {
                // (A process joining the call reads its blocks of B alone:
                // the others are already inside the factorization.)
                let collective = !region.is_joining();
                let mut b = s.rhs(region.grid(), mat, collective)?;
                let (report, solve) = solve::gels_ft(region, mat, &mut s.tau, &mut b, opts)?;
                (s.solve_s, s.b) = (Some(solve.as_secs_f64()), Some(b));
                Ok((report, None))
            }
            Outputs::Pivots(ipiv) => singular_is_a_result(lu_ft::pdgetrf_ft_in(region, mat, ipiv, opts, work))
                .map(|(r, s)| (r.unwrap_or_default(), s)),
            Outputs::LuSolve(s) => {
                let kept = kept_factors_and_solve(
                    region,
                    mat,
                    &mut s.factored,
                    |region, a| lu_ft::LuFactors::factor(region, a, opts),
                    |region, f, x| solve::lu_solve_ft(region, f, x, opts),
                    (&s.system, s.seed),
                );
                match kept {
                    Ok(k) => {
                        s.ipiv = k.factors.ipiv();
                        (s.b, s.x, s.solve_s) = (Some(k.b), Some(k.x), Some(k.solve_s));
                        Ok((k.report, None))
                    }
                    Err(e @ Error::Singular { .. }) => {
                        s.no_factors = true;
                        Ok((FtReport::default(), Some(e)))
                    }
                    Err(e) => Err(e),
                }
            }
            Outputs::Solution(s) => {
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

/// A fault-tolerant factorization kept protected and a solve with it:
/// what [`kept_factors_and_solve`] returns.
struct KeptAndSolved<F> {
    factors: F,
    /// The factorization's report and the solve's, as one.
    report: FtReport,
    b: DistMatrix,
    x: DistMatrix,
    /// Seconds of the solve alone, on this process.
    solve_s: f64,
}

/// Collective: `ftla lu|chol --ft --solve`. `factor` takes A into
/// protected factors (with the room for the checksum columns the
/// workspace made in A's storage), whose report is kept in `factored`
/// for the call made again after a loss before the solve's checksums
/// existed (the factorization then returns an empty one); then the
/// program's own work (the application's kill point), B of `system`
/// from `seed`, and the timed `solve` of a copy of it. `mat` gets a
/// plain copy of the factors back, for the checks and `--output`; on an
/// error of the factorization (agreed: no factors anywhere) zeros.
fn kept_factors_and_solve<K: FactorsKind>(
    region: &mut Region,
    mat: &mut DistMatrix,
    factored: &mut Option<FtReport>,
    factor: impl FnOnce(&mut Region, DistMatrix) -> Result<(Factors<K>, FtReport), Error>,
    solve: impl FnOnce(&mut Region, &Factors<K>, &mut DistMatrix) -> Result<FtReport, Error>,
    (system, seed): (&SolveJob, u64),
) -> Result<KeptAndSolved<Factors<K>>, Error> {
    let (m, n, nb) = (mat.m(), mat.n(), mat.nb());
    let a = std::mem::replace(mat, DistMatrix::zeros(region.grid(), 0, 0, nb, nb)?);
    let (factors, report) = match factor(region, a) {
        Ok(f) => f,
        Err(e) => {
            *mat = DistMatrix::zeros(region.grid(), m, n, nb, nb)?;
            return Err(e);
        }
    };
    let report = factored.get_or_insert(report).clone();
    solve::application_point(region);
    // (A process joining the solve reads its blocks of B alone: the
    // others are already inside it.)
    let collective = !region.is_joining();
    let b = solve::right_hand_sides(region.grid(), system, seed, m, nb, collective)?;
    let mut x = b.clone();
    let t = std::time::Instant::now();
    let solved = solve(region, &factors, &mut x)?;
    let solve_s = t.elapsed().as_secs_f64();
    // (A shrink during the solve left X on the new grid: B, for the
    // checks, is made again there, each process its own blocks.)
    let b = if b.grid_shape() == x.grid_shape() {
        b
    } else {
        solve::right_hand_sides(region.grid(), system, seed, m, nb, false)?
    };
    *mat = factors.to_matrix(region)?;
    Ok(KeptAndSolved { factors, report: solve::factor_and_solve(report, solved), b, x, solve_s })
}

/// A result that is a finding, not a failure — LU's `Err(Singular)`, CG's
/// not positive definite or breakdown — as `Ok((None, Some(error)))`.
/// Collective: the right-hand sides of `system` (from `seed`, with
/// `mat`'s rows) and the solution `solve` gives in place of a copy of
/// them, with the seconds the solve took on this process.
fn timed_solve(
    grid: &Grid,
    system: &SolveJob,
    seed: u64,
    mat: &DistMatrix,
    solve: impl FnOnce(&mut DistMatrix) -> Result<(), Error>,
) -> Result<(DistMatrix, DistMatrix, f64), Error> {
    let b = solve::right_hand_sides(grid, system, seed, mat.m(), mat.nb(), true)?;
    let mut x = b.clone();
    let t = std::time::Instant::now();
    solve(&mut x)?;
    Ok((b, x, t.elapsed().as_secs_f64()))
}

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
    /// QR with `--lstsq`: LAPACK's least-squares check.
    pub lstsq: Option<f64>,
    /// CG: whether it converged with a true residual within 10·tol (and
    /// the rounding floor).
    pub cg_pass: Option<bool>,
}

impl Residuals {
    /// Every residual that was computed is below 16 (CG: see `cg_pass`).
    pub fn pass(&self) -> bool {
        [self.residual, self.orthogonality, self.solve, self.lstsq].iter().flatten().all(|&r| r < 16.0)
            && self.cg_pass.unwrap_or(true)
    }

    /// `, residual 0.012, orthogonality 0.3` for the summary line.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        for (name, v) in [
            ("residual", self.residual),
            ("orthogonality", self.orthogonality),
            ("solve residual", self.solve),
            ("least-squares residual", self.lstsq),
        ] {
            if let Some(v) = v {
                s.push_str(&format!(", {name} {v:.3}"));
            }
        }
        s
    }
}

/// Collective: the checks the job asks for (`--check`), against the
/// original matrix, regenerated or re-read (`original`, when the caller
/// kept a copy), and those of the solve with the factors (`lu --solve`,
/// `qr --lstsq`: solved with the factorization), with X written to
/// `--solution`.
pub fn check(
    grid: &Grid,
    a: &FactorJob,
    original: Option<DistMatrix>,
    fact: &DistMatrix,
    factors: &Outputs,
) -> Result<Residuals, scalapack_ft::Error> {
    let mut r = Residuals::default();
    if let Outputs::Solution(s) = factors {
        // The solver recomputed the true residual itself.
        let bound = 10.0 * s.opts.tol + 1e3 * f64::EPSILON;
        r.cg_pass = Some(s.report.as_ref().is_some_and(|s| s.converged && s.relative_residual <= bound));
        return Ok(r);
    }
    if !a.check && a.solve.is_none() {
        return Ok(r);
    }
    let orig = match original {
        Some(o) => o,
        None => make_matrix(grid, a, true)?,
    };
    // (A minimum-norm --lstsq factors Aᵀ: an --input .mtx of M < N gets
    // here with --check; the QR check of A does not apply to Aᵀ's
    // factors, and is not computed.)
    let transposed = orig.m() < orig.n() && matches!(factors, Outputs::LeastSquares(_));
    if let (Some(tau), true, false) = (factors.tau(), a.check, transposed) {
        r.residual = Some(qr::check::qr_residual(grid, &orig, fact, tau)?);
        r.orthogonality = Some(qr::check::orthogonality(grid, fact, tau)?);
    }
    match factors {
        Outputs::Solution(_) | Outputs::Tau(..) => {}
        Outputs::Cholesky(s) => {
            if a.check && !s.failed {
                r.residual = Some(chol::cholesky_residual(grid, blas::Uplo::Lower, &orig, fact)?);
            }
            if let (Some(b), Some(x), Some(system)) = (&s.b, &s.x, &s.system) {
                // (Against the symmetric A of the lower triangle, which is
                // what was factored.)
                let sym = chol::symmetrized(grid, blas::Uplo::Lower, &orig)?;
                r.solve = Some(lu::solve_residual(grid, &sym, x, b)?);
                solve::write_solution(grid, system, x)?;
            }
        }
        Outputs::LeastSquares(s) => {
            let Some(solved) = &s.b else { return Ok(r) };
            let x = solve::with_rows(grid, solved, orig.n())?;
            // B again, as it was given.
            let b = solve::right_hand_sides(grid, &s.system, s.seed, orig.m(), fact.nb(), true)?;
            r.lstsq = Some(solve::lstsq_residual(grid, &orig, &x, &b)?);
            solve::write_solution(grid, &s.system, &x)?;
        }
        Outputs::Pivots(ipiv) => {
            if a.check {
                r.residual = Some(lu::lu_residual(grid, &orig, fact, ipiv)?);
            }
        }
        Outputs::LuSolve(s) => {
            if a.check && !s.no_factors {
                r.residual = Some(lu::lu_residual(grid, &orig, fact, &s.ipiv)?);
            }
            if let (Some(b), Some(x)) = (&s.b, &s.x) {
                r.solve = Some(lu::solve_residual(grid, &orig, x, b)?);
                solve::write_solution(grid, &s.system, x)?;
            }
        }
    }
    Ok(r)
}

/// Collective: `--output`: the factored matrix, and tau or the pivots
/// next to it (`FILE.tau.npy`, `FILE.ipiv.npy`).
pub fn write(grid: &Grid, a: &FactorJob, fact: &DistMatrix, factors: &Outputs) -> Result<(), scalapack_ft::Error> {
    let Some(out) = &a.output else { return Ok(()) };
    match factors {
        Outputs::Tau(..) | Outputs::LeastSquares(_) => {
            write_matrix(grid, fact, out)?;
            let tau = factors.tau().unwrap_or_default();
            write_vector(grid, &out.with_extension("tau.npy"), VectorData::F64(tau))
        }
        Outputs::Pivots(ipiv) => {
            write_matrix(grid, fact, out)?;
            write_vector(grid, &out.with_extension("ipiv.npy"), VectorData::I64(ipiv))
        }
        // (A with L in its lower triangle.)
        Outputs::Cholesky(_) => write_matrix(grid, fact, out),
        Outputs::LuSolve(s) => {
            write_matrix(grid, fact, out)?;
            write_vector(grid, &out.with_extension("ipiv.npy"), VectorData::I64(&s.ipiv))
        }
        // CG: the solution x (N×1).
        Outputs::Solution(s) => match &s.x {
            Some(x) => write_matrix(grid, x, out),
            None => Ok(()),
        },
    }
}
