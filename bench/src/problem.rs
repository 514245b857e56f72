//! What `ftla qr|lu|cg|demo` runs: the validated job (grid, shape, matrix
//! source, fault-tolerance options), the one path that makes its matrix,
//! the memory it needs, the checks of its kill points, and the one path
//! that writes its report.

use crate::cli::{CgArgs, CholArgs, GridShape, LuArgs, QrArgs};
use blacs_ft::inject::{KillSpec, SilentError};
use blacs_ft::Injector;
use ftla_bench::report::Op;
use recovery::protocol::Phase;
use scalapack_ft::dist_io::read_matrix;
use scalapack_ft::generate::{Generator, MatrixKind};
use scalapack_ft::DistMatrix;
use std::path::PathBuf;

/// A validated factorization job.
#[derive(Clone, Debug)]
pub struct FactorJob {
    pub op: Op,
    pub grid: GridShape,
    /// The generated shape (0×0 with `--input`, whose header tells).
    pub m: usize,
    pub n: usize,
    pub nb: usize,
    pub kind: MatrixKind,
    pub seed: u64,
    pub input: Option<PathBuf>,
    pub output: Option<PathBuf>,
    pub check: bool,
    pub json: Option<PathBuf>,
    /// `--trace FILE`: every rank's timeline.
    pub trace: Option<PathBuf>,
    /// The fault-tolerant run, if asked for.
    pub ft: Option<FtJob>,
    /// LU `--solve`, QR `--lstsq`: the system solved with the factors.
    pub solve: Option<SolveJob>,
    /// CG: tolerance, iteration limit, preconditioning.
    pub cg: scalapack_ft::cg::CgOptions,
    /// QR: how the panels are factored.
    pub qr: scalapack_ft::qr::QrOptions,
}

/// The system of `lu --solve` (A·X = B) or `qr --lstsq` (min ‖A·X − B‖₂).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SolveJob {
    /// Columns of B and X.
    pub nrhs: usize,
    /// B from this file; `None`: generated from the job's seed.
    pub rhs: Option<PathBuf>,
    /// Where X goes.
    pub solution: Option<PathBuf>,
}

/// The fault-tolerance options of a job.
#[derive(Clone, Debug, Default)]
pub struct FtJob {
    pub spares: u32,
    /// Kills, from `--kill` and `FTLA_KILL` (`R@STEP:PHASE` completed to
    /// `R@qr:STEP:PHASE`); empty: none.
    pub kill: Injector,
    /// The points of `kill` that `FTLA_KILL` gave (completed as `kill`'s).
    pub kill_from_env: Injector,
    pub compare: bool,
    /// Repetitions of the comparison.
    pub reps: usize,
    pub verify: bool,
    pub corrupt: Option<SilentError>,
    /// The recovery policy, and checkpoint-on-failure's settings.
    pub recovery: recovery::Policy,
    pub checkpoint_dir: Option<std::path::PathBuf>,
    pub max_restarts: u32,
    pub resume: Option<std::path::PathBuf>,
    /// Periodic checkpoints (`--checkpoint-every`, `--mtbf`), kept after a
    /// successful finish with `--keep-checkpoints`.
    pub checkpoint_every: Option<blacs_ft::launch::CheckpointInterval>,
    pub keep_checkpoints: bool,
    pub checkpoint_parity: bool,
    /// The checksum layout (`--layout`, `--checksums`).
    pub layout: scalapack_ft::abft::LayoutKind,
}

/// The phases where a kill can fire in the fault-tolerant factorization
/// of `op`: those before step 0, then a step's (its commit last).
pub fn op_phases(op: Op) -> Vec<Phase> {
    op.ft_driver().phases()
}
/// The repair protocol's points (`repair:ATTEMPT:…`, `repair:BUILD:split`)
/// and the region's (`region:REPAIR:share`); their counters start at 1.
const REPAIR_PHASES: [&str; 6] = blacs_ft::REPAIR_POINTS;
/// Attempts of one repair before it gives up (blacs-ft's limit).
const REPAIR_ATTEMPTS: u64 = blacs_ft::REPAIR_ATTEMPTS as u64;

impl FactorJob {
    /// `ftla qr`.
    pub fn from_qr(a: QrArgs) -> Result<FactorJob, String> {
        let mut job = FactorJob::common(Op::Qr, &a.matrix)?;
        if let Some((m, n)) = job.shape().filter(|(m, n)| a.lstsq && job.check && m < n) {
            return Err(format!(
                "--check with --lstsq needs M ≥ N, got {m}x{n}: the minimum-norm solve factors Aᵀ (the LQ of A), \
                 which the QR residual check does not read; drop --check (lstsq_residual checks the solution)"
            ));
        }
        job.solve = job.system("--lstsq", a.lstsq, &a.system)?;
        job.qr.panel = a.panel;
        job.with_ft(&a.ft)
    }

    /// `ftla lu`.
    pub fn from_lu(a: LuArgs) -> Result<FactorJob, String> {
        let mut job = FactorJob::common(Op::Lu, &a.matrix)?;
        // (An --input matrix's shape is known once it is read: pdgetrs
        // reports a non-square one then.)
        if a.solve && job.input.is_none() && job.m != job.n {
            return Err(format!("--solve needs a square matrix, got {}x{} (drop --m or set it to --n)", job.m, job.n));
        }
        job.solve = job.system("--solve", a.solve, &a.system)?;
        job.with_ft(&a.ft)
    }

    /// The system to solve with the factors when `asked` (by `flag`), its
    /// options checked: they need the flag, and a `--rhs` file must exist
    /// and hold M rows (and `--nrhs` columns, when given).
    fn system(&self, flag: &str, asked: bool, s: &crate::cli::SolveArgs) -> Result<Option<SolveJob>, String> {
        if !asked {
            let given =
                [(s.nrhs.is_some(), "--nrhs"), (s.rhs.is_some(), "--rhs"), (s.solution.is_some(), "--solution")];
            return match given.iter().find(|(g, _)| *g) {
                Some((_, name)) => Err(format!("{name} needs {flag} (it belongs to the solve with the factors)")),
                None => Ok(None),
            };
        }
        let nrhs = match &s.rhs {
            None => s.nrhs.unwrap_or(1) as usize,
            Some(path) => {
                if !path.exists() {
                    return Err(format!("--rhs: {} does not exist", path.display()));
                }
                // (A file whose header cannot be read here is reported
                // by every rank of the job.)
                match (input_shape(path), self.shape()) {
                    (Ok((rows, cols)), Some((m, _))) => {
                        if rows != m {
                            return Err(format!(
                                "--rhs: {} holds a {rows}x{cols} matrix, but B needs M = {m} rows (one per row of A)",
                                path.display()
                            ));
                        }
                        if let Some(k) = s.nrhs.filter(|&k| k as usize != cols) {
                            return Err(format!(
                                "--nrhs {k} disagrees with --rhs: {} holds {cols} column(s)",
                                path.display()
                            ));
                        }
                        cols
                    }
                    (Ok((_, cols)), None) => cols,
                    (Err(e), _) => return Err(format!("--rhs: {e}")),
                }
            }
        };
        Ok(Some(SolveJob { nrhs, rhs: s.rhs.clone(), solution: s.solution.clone() }))
    }

    /// `ftla chol`.
    pub fn from_chol(a: CholArgs) -> Result<FactorJob, String> {
        let mut job = FactorJob::common(Op::Chol, &a.matrix)?;
        // (An --input matrix's shape is known once it is read: pdpotrf
        // refuses a non-square one then.)
        if job.input.is_none() && job.m != job.n {
            return Err(format!("chol factors a square matrix, got {}x{} (drop --m or set it to --n)", job.m, job.n));
        }
        job.solve = job.system("--solve", a.solve, &a.system)?;
        job.with_ft(&a.ft)
    }

    /// `ftla cg`.
    pub fn from_cg(a: CgArgs) -> Result<FactorJob, String> {
        let mut job = FactorJob::common(Op::Cg, &a.matrix)?;
        if job.input.is_none() && job.m != job.n {
            return Err(format!("cg needs a square matrix, got {}x{} (drop --m or set it to --n)", job.m, job.n));
        }
        if !(a.tol.is_finite() && a.tol >= 0.0) {
            return Err(format!("--tol must be finite and ≥ 0, got {}", a.tol));
        }
        let maxit = a.maxit.unwrap_or(job.n.max(1) as u64);
        if maxit == 0 {
            return Err("--maxit must be at least 1".into());
        }
        job.cg = scalapack_ft::cg::CgOptions { tol: a.tol, maxit, jacobi: a.jacobi };
        job.with_ft(&a.ft)
    }

    /// The fault-tolerance options, checked against the job.
    fn with_ft(mut self, ft: &crate::cli::FtArgs) -> Result<FactorJob, String> {
        // The kills `ftla launch` hands a job reach ftla's own commands too.
        let from_env = Injector::from_env().map_err(|e| match e {
            blacs_ft::Error::InvalidArgument { reason, .. } => format!("FTLA_KILL: {reason}"),
            e => format!("FTLA_KILL: {e}"),
        })?;
        let mut kills = from_env.clone();
        if !ft.ft {
            if !kills.is_empty() {
                return Err(format!("FTLA_KILL is set ({kills}) but kill points need --ft"));
            }
            return Ok(self);
        }
        two_process_columns("--ft", self.grid)?;
        let reps = ft.reps as usize;
        kills.extend(ft.kill.clone().unwrap_or_default());
        let kill = self.checked_kills(kills, reps > 1)?;
        let kill_from_env = self.checked_kills(from_env, reps > 1)?;
        if let Some((r, _)) = ft.corrupt {
            if r < 0 || r >= self.grid.size() {
                return Err(format!("--corrupt: rank {r} is not in the {} grid", self.grid));
            }
        }
        // `--resume` alone resumes under checkpoint-on-failure.
        let policy = match (ft.recovery, &ft.resume) {
            (recovery::Policy::InPlace, Some(_)) => recovery::Policy::Cof,
            (p, _) => p,
        };
        if policy == recovery::Policy::Cof && ft.spares > 0 {
            return Err("--spares needs --recovery inplace or auto (cof does not repair the grid in place)".into());
        }
        if policy != recovery::Policy::InPlace && !kill.is_empty() && reps > 1 {
            return Err(format!(
                "--reps {reps} with --kill repeats the failure in one job, but under --recovery {} a failure ends \
                 the job and starts it again: use --reps 1",
                policy.name()
            ));
        }
        if let (Some(d), Some(r)) = (&ft.checkpoint_dir, &ft.resume) {
            if d != r {
                return Err("--checkpoint-dir and --resume name different directories (--resume D saves in D)".into());
            }
        }
        let layout = ft.layout.kind(ft.checksums)?;
        let checkpoint_every = match &ft.checkpoint_every {
            None => None,
            Some(every) => Some(
                blacs_ft::launch::CheckpointInterval::parse(every, ft.mtbf.map(|h| h.to_string()).as_deref())
                    .map_err(|e| format!("--checkpoint-every: {e}"))?,
            ),
        };
        self.ft = Some(FtJob {
            layout,
            spares: ft.spares,
            kill,
            kill_from_env,
            compare: ft.compare,
            reps,
            verify: ft.verify,
            corrupt: ft.corrupt.map(|(rank, step)| SilentError { rank, step }),
            recovery: policy,
            checkpoint_dir: ft.resume.clone().or_else(|| ft.checkpoint_dir.clone()),
            max_restarts: ft.max_restarts,
            resume: ft.resume.clone(),
            checkpoint_every,
            keep_checkpoints: ft.keep_checkpoints,
            checkpoint_parity: ft.checkpoint_parity,
        });
        Ok(self)
    }

    /// `ftla demo`: a preset of `ftla qr --ft --check --verify --compare`
    /// with one rank killed halfway through the factorization.
    pub fn demo(a: &crate::cli::DemoArgs) -> Result<FactorJob, String> {
        let grid = a.grid;
        two_process_columns("the demo", grid)?;
        if a.kill < 0 || a.kill >= grid.size() {
            return Err(format!("--kill: rank {} is not in the {grid} grid", a.kill));
        }
        let (n, nb) = (a.n as usize, a.nb as usize);
        let step = n.div_ceil(nb) / 2;
        Ok(FactorJob {
            op: Op::Qr,
            grid,
            m: n,
            n,
            nb,
            kind: MatrixKind::Uniform,
            seed: 2026,
            input: None,
            output: None,
            check: true,
            json: a.json.clone(),
            trace: None,
            solve: None,
            cg: Default::default(),
            qr: Default::default(),
            ft: Some(FtJob {
                spares: a.spares,
                kill: Injector::parse(&format!("{}@qr:{step}:update", a.kill)).map_err(|e| e.to_string())?,
                compare: true,
                reps: 1,
                verify: true,
                corrupt: None,
                ..FtJob::default()
            }),
        })
    }

    fn common(op: Op, a: &crate::cli::MatrixArgs) -> Result<FactorJob, String> {
        if let Some(f) = &a.input {
            if !f.exists() {
                return Err(format!("--input: {} does not exist", f.display()));
            }
            if a.m.is_some() || a.n.is_some() {
                let (rows, cols) = input_shape(f).map_err(|e| format!("--input: {e}"))?;
                if a.m.is_some_and(|m| m != rows) || a.n.is_some_and(|n| n != cols) {
                    let given: Vec<String> = [("--m", a.m), ("--n", a.n)]
                        .iter()
                        .filter_map(|(k, v)| v.map(|v| format!("{k} {v}")))
                        .collect();
                    return Err(format!(
                        "{} disagree{} with --input {}, which holds a {rows}x{cols} matrix (drop --m and --n, or \
                         give the file's shape)",
                        given.join(" "),
                        if given.len() == 1 { "s" } else { "" },
                        f.display()
                    ));
                }
            }
        }
        let n = a.n.unwrap_or(0);
        let default_kind = match op {
            Op::Qr => MatrixKind::Uniform,
            Op::Lu => MatrixKind::DiagonallyDominant,
            Op::Cg => MatrixKind::Poisson2d,
            Op::Chol => MatrixKind::Spd,
        };
        Ok(FactorJob {
            op,
            grid: a.grid,
            m: a.m.unwrap_or(n),
            n,
            nb: match a.nb {
                crate::cli::NbArg::Fixed(nb) => nb,
                crate::cli::NbArg::Auto => crate::nb_auto::choose(a.grid, a.m.unwrap_or(n), n)?,
            },
            kind: a.matrix.unwrap_or(default_kind),
            seed: a.seed,
            input: a.input.clone(),
            output: a.output.clone(),
            check: a.check,
            json: a.json.clone(),
            trace: a.trace.clone(),
            ft: None,
            solve: None,
            cg: Default::default(),
            qr: Default::default(),
        })
    }

    /// Number of MPI processes (grid and spares).
    pub fn nprocs(&self) -> u32 {
        self.grid.size() as u32 + self.ft.as_ref().map_or(0, |f| f.spares)
    }

    /// The faults the job injects: its kills and its silent error (none
    /// without `--ft`).
    pub fn injector(&self) -> Injector {
        self.ft.as_ref().map(|f| f.kill.clone().with_silent_error(f.corrupt)).unwrap_or_default()
    }

    /// The matrix shape: the generated one, or the one in `--input`'s
    /// header (`None` if it cannot be read here).
    pub fn shape(&self) -> Option<(usize, usize)> {
        match &self.input {
            None => Some((self.m, self.n)),
            Some(path) if path.extension().is_some_and(|e| e == "mtx") => None,
            Some(path) => scalapack_ft::io::read_npy_header(path).ok().map(|h| (h.rows, h.cols)),
        }
    }

    /// Floating-point operations of a run on an `m`×`n` matrix, before it
    /// ran: the factorization's, CG's at its iteration limit.
    pub fn planned_flops(&self, m: usize, n: usize) -> f64 {
        match self.op {
            Op::Cg => scalapack_ft::cg::cg_flops(n, self.cg.maxit),
            op => op.flops(m, n),
        }
    }

    /// Steps of the factorization (panels of NB columns), when the shape
    /// is known; CG's most (the initial residual, `maxit` iterations, the
    /// final residual).
    pub fn steps(&self) -> Option<u64> {
        if self.op == Op::Cg {
            return Some(self.cg.maxit + 2);
        }
        self.shape().and_then(|(m, n)| self.op.ft_driver().steps.of(m, n, self.nb))
    }

    /// The kills completed and checked: every rank is in the grid, every
    /// point exists for the factorization and can fire (its step inside
    /// the factorization, its phase one of the op's), and the `--reps`
    /// rules hold. The error names what is wrong.
    fn checked_kills(&self, given: Injector, repeated: bool) -> Result<Injector, String> {
        let mut kills = Injector::none();
        // (The factorization's name in kill points: the catalogue's.)
        let factor_op = self.op.ft_driver().kill_op;
        for spec in given.specs() {
            // R@STEP[:PHASE] targets the factorization; a point that names
            // its operation (R@OP:STEP:PHASE, e.g. a repair point) is kept.
            let op = spec.op.clone().or_else(|| Some(factor_op.to_string()));
            kills.add(KillSpec { op, ..spec.clone() });
        }
        let grid = self.grid;
        let steps = self.steps();
        for spec in kills.specs() {
            if spec.rank >= grid.size() {
                return Err(format!("--kill: rank {} is not in the {grid} grid", spec.rank));
            }
            let phase = spec.phase.as_deref();
            let op = spec.op.as_deref().unwrap_or(factor_op);
            let step = spec.step;
            match op {
                o if o == factor_op => {
                    let known: Vec<&str> = op_phases(self.op).iter().map(|p| p.name()).collect();
                    if let Some(p) = phase.filter(|p| !known.contains(p)) {
                        return Err(format!("--kill: `{p}` is not a phase of {o} (phases: {})", known.join(", ")));
                    }
                    let once = phase.and_then(Phase::parse).is_some_and(Phase::before_steps);
                    if once && step != Some(0) {
                        let p = phase.unwrap_or_default();
                        return Err(format!("--kill: the {p} phase comes once, before step 0: write R@0:{p}"));
                    }
                    if let (Some(s), Some(total)) = (step, steps) {
                        if s >= total {
                            return Err(format!(
                                "--kill: step {s} never comes: the {} has {}{total} step(s), the last is {}",
                                if self.op == Op::Cg { "solve" } else { "factorization" },
                                if self.op == Op::Cg { "at most " } else { "" },
                                total.saturating_sub(1)
                            ));
                        }
                    }
                    // A restarted call (a kill before the checksums exist)
                    // runs from the top on its replacement.
                    if once && repeated {
                        return Err("--kill with --reps: a kill in the args or encode phase restarts the call, \
                                    which is not repeated; drop --reps or kill in a later phase"
                            .into());
                    }
                }
                o if self.op.ft_solve_driver().is_some_and(|d| d.kill_op == o) && self.solve.is_some() => {
                    self.check_solve_kill(o, phase, step, repeated)?;
                }
                o if o == crate::solve::APP_POINTS && matches!(self.op, Op::Lu | Op::Chol) && self.solve.is_some() => {
                    check_application_kill(phase, step, repeated)?;
                }
                "repair" | "region" => {
                    let known: &[&str] = if op == "repair" { &REPAIR_PHASES } else { &["share"] };
                    match phase {
                        Some(p) if known.contains(&p) => {}
                        Some(p) => {
                            return Err(format!("--kill: `{p}` is not a point of {op} (points: {})", known.join(", ")))
                        }
                        None => {}
                    }
                    if step == Some(0) {
                        return Err(format!("--kill: {op} points count from 1 (R@{op}:1:…), so step 0 never comes"));
                    }
                    if let Some(s) = step.filter(|&s| op == "repair" && s > REPAIR_ATTEMPTS) {
                        return Err(format!(
                            "--kill: a repair gives up after {REPAIR_ATTEMPTS} attempts, so attempt {s} never comes"
                        ));
                    }
                }
                o if o == recovery::cof::periodic::POINTS => {
                    // (Checked with the other options: --checkpoint-every.)
                    match phase {
                        Some("write" | "manifest") | None => {}
                        Some(p) => {
                            return Err(format!(
                                "--kill: `{p}` is not a point of {o} (points: write, manifest; STEP the generation, \
                                 from 1)"
                            ))
                        }
                    }
                    if step == Some(0) {
                        return Err(format!("--kill: {o} generations count from 1 (R@{o}:1:write)"));
                    }
                }
                other => {
                    let solve = match self.op {
                        Op::Lu => ", getrs or app with --solve",
                        Op::Qr => ", gels with --lstsq",
                        Op::Chol => ", potrs or app with --solve",
                        Op::Cg => "",
                    };
                    return Err(format!(
                        "--kill: `{other}` names no kill point of ftla {} (use {factor_op}{solve}, repair, region or \
                         checkpoint)",
                        self.op.name(),
                    ));
                }
            }
            // A replacement joining a repetition arms only the kills of the
            // scenario's first epoch.
            if spec.epoch.is_some_and(|e| e > 0) && repeated {
                return Err("--kill with --reps: kills in later repair epochs (/EPOCH) are not repeated; drop \
                            --reps or the /EPOCH kills"
                    .into());
            }
            // Grid rank 0 keeps the samples of every repetition.
            if spec.rank == 0 && repeated {
                return Err("--kill with --reps: grid rank 0 collects the repetitions' times and must survive; kill \
                            another rank"
                    .into());
            }
        }
        Ok(kills)
    }

    /// A kill point in the solve with the factors: `lu --solve`'s
    /// `pdgetrs_ft` (`R@getrs:STEP:PHASE`: step 0 the row interchanges,
    /// then ⌈N/NB⌉ block steps of L and as many of U), `chol --solve`'s
    /// `pdpotrs_ft` (`R@potrs:…`: those of L, then of Lᵀ) or `qr --lstsq`'s
    /// `pdgels_ft` (`R@gels:STEP:PHASE`: ⌈N/NB⌉ panels of Qᵀ, then as many
    /// block rows of R). Its phase is one of a solve step's, its step
    /// comes, and it is not repeated (a replacement joins a solve only in
    /// the main run, whose factorization is the log's call just before
    /// it).
    fn check_solve_kill(&self, op: &str, phase: Option<&str>, step: Option<u64>, repeated: bool) -> Result<(), String> {
        let Some(driver) = self.op.ft_solve_driver() else { return Ok(()) };
        let once = [Phase::Args, Phase::Encode];
        let known: Vec<&str> = driver.phases().iter().map(|p| p.name()).collect();
        match phase {
            Some(p) if !known.contains(&p) => {
                return Err(format!("--kill: `{p}` is not a phase of {op} (phases: {})", known.join(", ")))
            }
            Some(p) if once.iter().any(|o| o.name() == p) && step != Some(0) => {
                return Err(format!("--kill: the {p} phase comes once, before step 0: write R@{op}:0:{p}"));
            }
            _ => {}
        }
        // (M < N: the factors are Aᵀ's, min(M, N) columns either way.)
        let total = self.shape().and_then(|(m, n)| driver.steps.of(m, n, self.nb));
        if let (Some(s), Some(total)) = (step, total) {
            if s >= total {
                let what = match self.op {
                    Op::Lu => "0 the row interchanges, then the block steps of L and of U",
                    Op::Chol => "the block steps of L, then of Lᵀ",
                    _ => "the panels of Qᵀ, then the block rows of R",
                };
                return Err(format!(
                    "--kill: step {s} never comes: the solve has {total} step(s) ({what}), the last is {}",
                    total - 1
                ));
            }
        }
        if repeated {
            return Err(format!(
                "--kill with --reps: kills in the solve ({op}) are not repeated; drop --reps or the {op} kills"
            ));
        }
        Ok(())
    }

    /// The most memory one process of the job holds at once, in bytes:
    /// the matrix (with its checksum columns and sums for `--ft`, which a
    /// parked spare prepares as well), with `--solve` or `--lstsq` B and X
    /// (and with `--ft` a plain copy of the protected factors), and with
    /// `--check` a copy of the input. `None` when the shape is not known before the launch.
    pub fn bytes_per_process(&self) -> Option<u64> {
        let (m, n) = self.shape()?;
        let (p, q) = (self.grid.p as usize, self.grid.q as usize);
        let matrix = 8 * DistMatrix::local_len_bound(m, n, self.nb, self.nb, p, q) as u64;
        let factored = match &self.ft {
            Some(ft) => scalapack_ft::qr_ft::FtWorkspace::bytes_per_process_of(
                (m, n, self.nb),
                (p, q),
                ft.layout,
                self.op.ft_driver().relations,
            )
            .unwrap_or(matrix),
            None => matrix,
        };
        // B and X (or B and its copy), with A's rows; with --ft also a
        // plain copy of the protected factors (for the checks).
        let system = self.solve.as_ref().map_or(0, |s| {
            let copy = if self.ft.is_some() { matrix } else { 0 };
            // (M < N: B and X in N rows.)
            2 * 8 * DistMatrix::local_len_bound(m.max(n), s.nrhs, self.nb, self.nb, p, q) as u64 + copy
        });
        Some(factored + system + if self.check { matrix } else { 0 })
    }

    /// Before the launch: refuses a job whose processes on this machine
    /// would need more memory than it has left, in one line (`N` named).
    /// Jobs spread over other hosts are left to the library's own check.
    pub fn check_memory(&self) -> Result<(), String> {
        if blacs_ft::launch::runs_on_other_hosts() {
            return Ok(());
        }
        let (Some(need), Some(avail)) = (self.bytes_per_process(), scalapack_ft::memory::available_bytes()) else {
            return Ok(());
        };
        let procs = self.nprocs() as u64;
        if need.saturating_mul(procs) <= avail {
            return Ok(());
        }
        let gib = scalapack_ft::memory::gib;
        let (m, n) = self.shape().unwrap_or((self.m, self.n));
        let size = if m == n { format!("N = {n}") } else { format!("M = {m}, N = {n}") };
        Err(format!(
            "{size} needs {:.1} GiB per process ({procs} process{}: {:.1} GiB); {:.1} GiB available on this machine",
            gib(need),
            if procs == 1 { "" } else { "es" },
            gib(need.saturating_mul(procs)),
            gib(avail)
        ))
    }
}

/// The application's kill point (`R@app:0`, `lu --solve` with `--ft`):
/// between the factorization and the solve, once (step 0), at its one
/// phase, and not repeated (as the solve's).
fn check_application_kill(phase: Option<&str>, step: Option<u64>, repeated: bool) -> Result<(), String> {
    use crate::solve::{APP_PHASE, APP_POINTS};
    if let Some(p) = phase.filter(|&p| p != APP_PHASE) {
        return Err(format!("--kill: `{p}` is not a point of {APP_POINTS} (its one phase: {APP_PHASE})"));
    }
    if let Some(s) = step.filter(|&s| s != 0) {
        return Err(format!(
            "--kill: step {s} never comes: the application's work between the factorization and the solve is \
             one point, R@{APP_POINTS}:0"
        ));
    }
    if repeated {
        return Err(format!(
            "--kill with --reps: the {APP_POINTS} kill is not repeated; drop --reps or the {APP_POINTS} kill"
        ));
    }
    Ok(())
}

/// A usage error when `what` runs on a grid with one process column: the
/// checksum pairs live on two. (The library refuses it too, with its
/// argument error, on every rank; this says it before anything launches.)
fn two_process_columns(what: &str, grid: GridShape) -> Result<(), String> {
    if grid.q < 2 {
        return Err(format!(
            "{what} needs at least 2 process columns (the checksum pairs live on two), got a {grid} grid"
        ));
    }
    Ok(())
}

/// The matrix to factor: generated in place from (seed, i, j), or read
/// from `--input` (collective: an error, such as no memory for it, is the
/// same on every rank). With `collective = false` (a replacement joining a
/// factorization in progress, whose content is rebuilt anyway) the matrix
/// is only allocated, zero, with the right shape (read locally from the
/// file's header for `--input`), so the survivors do not wait for it.
pub fn make_matrix(grid: &blacs_ft::Grid, a: &FactorJob, collective: bool) -> Result<DistMatrix, scalapack_ft::Error> {
    let made = make_local_matrix(grid, a, collective);
    if !collective || a.input.is_some() {
        return made; // read_matrix agrees on its own errors
    }
    match made {
        Ok(m) => scalapack_ft::error::agree_on_arguments(grid, Ok(())).map(|()| m),
        Err(e) => Err(scalapack_ft::error::agree_on_arguments(grid, Err(e)).err().unwrap_or_else(|| {
            scalapack_ft::Error::Grid(blacs_ft::Error::Unrecoverable { reason: "matrix set-up disagreement".into() })
        })),
    }
}

fn make_local_matrix(
    grid: &blacs_ft::Grid,
    a: &FactorJob,
    collective: bool,
) -> Result<DistMatrix, scalapack_ft::Error> {
    match &a.input {
        Some(path) if collective => read_matrix(grid, path, a.nb),
        Some(path) => {
            let (m, n) = input_shape(path).map_err(|e| blacs_ft::Error::Unrecoverable { reason: e.to_string() })?;
            DistMatrix::zeros(grid, m, n, a.nb, a.nb)
        }
        None if !collective => DistMatrix::zeros(grid, a.m, a.n, a.nb, a.nb),
        None => {
            let gen = Generator::new(a.kind, a.seed, a.m, a.n).map_err(|e| scalapack_ft::Error::Argument {
                routine: "ftla".into(),
                position: 0,
                entry: 0,
                name: "--matrix".into(),
                reason: e.to_string(),
            })?;
            DistMatrix::from_fn(grid, a.m, a.n, a.nb, a.nb, |i, j| gen.element(i, j))
        }
    }
}

/// The rows and columns of the matrix in an `--input` file: from a
/// `.npy` header, or by reading a `.mtx` file whole (its text has no
/// header that gives the shape alone).
fn input_shape(path: &std::path::Path) -> Result<(usize, usize), scalapack_ft::io::IoError> {
    if path.extension().is_some_and(|e| e == "mtx") {
        scalapack_ft::io::read_mtx(path).map(|d| (d.rows, d.cols))
    } else {
        scalapack_ft::io::read_npy_header(path).map(|h| (h.rows, h.cols))
    }
}

/// Writes a report as pretty JSON to `path` (the one way every command
/// writes its JSON). The error is the message to print.
pub fn write_json<T: serde::Serialize>(path: &std::path::Path, report: &T) -> Result<(), String> {
    let text = serde_json::to_string_pretty(report).map_err(|e| format!("cannot encode the report: {e}"))?;
    std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn qr(words: &str) -> Result<FactorJob, String> {
        let cli = Cli::try_parse_from(std::iter::once("ftla").chain(words.split_whitespace())).unwrap();
        match cli.command {
            Command::Qr(a) => FactorJob::from_qr(a),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn kills_are_completed_and_checked() {
        // 100/16 → 7 steps, the last is 6.
        let job =
            qr("qr --ft --grid 2x2 --n 100 --nb 16 --kill 1@6:panel,2@repair:*:merge,3@0:encode,1@qr:2/1").unwrap();
        assert_eq!(job.ft.unwrap().kill.to_string(), "1@qr:6:panel,2@repair:*:merge,3@qr:0:encode,1@qr:2/1");
        for (bad, says) in [
            ("1@7:panel", "the last is 6"),
            ("1@99:panel", "step 99 never comes"),
            ("1@2:pivot", "`pivot` is not a phase of qr"),
            ("1@3:encode", "comes once, before step 0"),
            ("4@2:panel", "rank 4 is not in the 2x2 grid"),
            ("1@repair:0:shrink", "count from 1"),
            ("1@repair:9:shrink", "gives up after 8 attempts"),
            ("1@repair:1:teleport", "is not a point of repair"),
            ("1@region:1:merge", "is not a point of region"),
            ("1@lu:2:panel", "names no kill point"),
        ] {
            let e = qr(&format!("qr --ft --grid 2x2 --n 100 --nb 16 --kill {bad}")).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let e = qr("qr --ft --grid 2x2 --n 100 --nb 16 --compare --reps 2 --kill 0@3:panel").unwrap_err();
        assert!(e.contains("rank 0 collects"), "{e}");
        // LU has a swap phase, QR none.
        let e = qr("qr --ft --grid 2x2 --n 100 --nb 16 --kill 1@2:swap").unwrap_err();
        assert!(e.contains("`swap` is not a phase of qr"), "{e}");
        let cli = Cli::try_parse_from("ftla lu --ft --grid 2x2 --n 100 --nb 16 --kill 1@2:swap".split(' ')).unwrap();
        let Command::Lu(a) = cli.command else { panic!() };
        assert_eq!(FactorJob::from_lu(a).unwrap().ft.unwrap().kill.to_string(), "1@lu:2:swap");
    }

    #[test]
    fn a_shape_that_disagrees_with_the_input_file_is_refused() {
        let dir = std::env::temp_dir().join(format!("ftla-input-shape-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let npy = dir.join("a.npy");
        scalapack_ft::io::npy::write_npy(&npy, 120, 80, &vec![1.0; 120 * 80]).unwrap();
        let mtx = dir.join("a.mtx");
        scalapack_ft::io::write_mtx(&mtx, 120, 80, &vec![1.0; 120 * 80]).unwrap();
        for file in [&npy, &mtx] {
            let f = file.display();
            for (given, says) in [
                ("--m 100 --n 80", "--m 100 --n 80 disagree with --input"),
                ("--m 100", "--m 100 disagrees with --input"),
                ("--n 120", "--n 120 disagrees with --input"),
                ("--m 80 --n 120", "--m 80 --n 120 disagree with --input"),
            ] {
                let e = qr(&format!("qr --grid 1x2 {given} --input {f}")).unwrap_err();
                assert!(e.contains(says) && e.contains("holds a 120x80 matrix"), "{given} {f}: {e}");
            }
            // The file's own shape, whole or in part, or none at all.
            for given in ["--m 120 --n 80", "--m 120", "--n 80", ""] {
                let job = qr(&format!("qr --grid 1x2 {given} --input {f}"));
                assert!(job.is_ok(), "{given} {f}: {job:?}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn memory_is_counted_per_process() {
        let job = qr("qr --grid 1x2 --n 1000 --nb 100 --check").unwrap();
        // A 1000×500 local array per process, twice (the copy for --check).
        assert_eq!(job.bytes_per_process(), Some(2 * 8 * 1000 * 500));
        let e = qr("qr --grid 2x2 --n 100000000").unwrap().check_memory().unwrap_err();
        assert!(e.starts_with("N = 100000000 needs") && e.contains("GiB available"), "{e}");
    }
}
