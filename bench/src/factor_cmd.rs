//! `ftla qr` and `ftla lu`: factor a generated or user-supplied matrix on a
//! grid, time it, check it as ScaLAPACK's testers do, and report Gflop/s
//! next to the local DGEMM rate measured in the same run.

use crate::cli::{Opts, UsageError};
use crate::json::Json;
use crate::session::{start, start_preparing, Session};
use blacs_ft::{Injector, Scope};
use scalapack_ft::blas;
use scalapack_ft::dist_io::{read_matrix, write_matrix, write_vector, VectorData};
use scalapack_ft::generate::{Generator, MatrixKind};
use scalapack_ft::{qr, DistMatrix};
use std::path::PathBuf;
use std::time::Instant;

/// Which factorization.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Factorization {
    Qr,
    Lu,
}

impl Factorization {
    fn name(self) -> &'static str {
        match self {
            Factorization::Qr => "qr",
            Factorization::Lu => "lu",
        }
    }
}

/// Parsed `ftla qr|lu` options.
pub struct FactorArgs {
    pub which: Factorization,
    pub p: i32,
    pub q: i32,
    pub m: usize,
    pub n: usize,
    pub nb: usize,
    pub kind: MatrixKind,
    pub seed: u64,
    pub input: Option<PathBuf>,
    pub output: Option<PathBuf>,
    pub check: bool,
    pub json: Option<String>,
    /// Fault-tolerant run (`--ft`, QR only).
    pub ft: bool,
    pub spares: i32,
    /// Kill specifications (`--kill`), in the injector's syntax.
    pub kill: Option<String>,
    pub compare: bool,
    /// Repetitions of the comparison pair (`--reps`, with `--compare`).
    pub reps: usize,
    pub verify: bool,
    pub corrupt: Option<(i32, u64)>,
}

fn parse_kind(s: &str) -> Result<MatrixKind, UsageError> {
    Ok(match s {
        "uniform" => MatrixKind::Uniform,
        "dd" | "diagonally-dominant" => MatrixKind::DiagonallyDominant,
        "spd" => MatrixKind::Spd,
        other => match other.strip_prefix("cond:").and_then(|c| c.parse::<f64>().ok()) {
            Some(c) if c >= 1.0 => MatrixKind::Conditioned { cond: c },
            _ => return Err(UsageError(format!("--matrix: `{other}` is not one of uniform, dd, spd, cond:C (C ≥ 1)"))),
        },
    })
}

impl FactorArgs {
    /// Validates the options (before anything is launched).
    pub fn from_opts(which: Factorization, o: &Opts) -> Result<FactorArgs, UsageError> {
        let (p, q) = o.grid((1, 2))?;
        let input = o.get("input").map(PathBuf::from);
        let n = o.num("n", 0usize)?;
        if input.is_none() && o.get("n").is_none() {
            return Err(UsageError("--n N is required (or --input FILE)".into()));
        }
        let m = o.num("m", n)?;
        let nb = o.num("nb", 64usize)?;
        if nb == 0 {
            return Err(UsageError("--nb must be ≥ 1".into()));
        }
        let default_kind = if which == Factorization::Lu { "dd" } else { "uniform" };
        let kind = parse_kind(o.get("matrix").unwrap_or(default_kind))?;
        if let Some(f) = &input {
            if !f.exists() {
                return Err(UsageError(format!("--input: {} does not exist", f.display())));
            }
        }
        let ft = o.flag("ft");
        if ft && which == Factorization::Lu {
            return Err(UsageError("--ft is available for qr only".into()));
        }
        for f in ["kill", "spares", "verify", "corrupt", "compare", "reps"] {
            if !ft && (o.get(f).is_some() || o.flag(f)) {
                return Err(UsageError(format!("--{f} needs --ft")));
            }
        }
        if o.get("reps").is_some() && !o.flag("compare") {
            return Err(UsageError("--reps needs --compare".into()));
        }
        if o.num("reps", 1usize)? == 0 {
            return Err(UsageError("--reps must be at least 1".into()));
        }
        if ft && q < 2 {
            return Err(UsageError(format!(
                "--ft needs at least 2 process columns (the checksum pairs live on two), got a {p}x{q} grid"
            )));
        }
        let kill = match o.get("kill") {
            None => None,
            Some(list) => {
                let specs: Vec<String> = list
                    .split(',')
                    .map(|k| {
                        let k = k.trim();
                        // R@STEP:PHASE targets the factorization; a full
                        // R@OP:STEP:PHASE (e.g. repair points) is kept.
                        match k.split_once('@') {
                            Some((r, point)) if point.split(':').count() <= 2 => format!("{r}@qr:{point}"),
                            _ => k.to_string(),
                        }
                    })
                    .collect();
                let joined = specs.join(",");
                let kills = blacs_ft::Injector::parse(&joined).map_err(|e| UsageError(e.to_string()))?;
                let repeated = o.num("reps", 1usize)? > 1;
                for spec in kills.specs() {
                    let before_checksums = matches!(spec.phase.as_deref(), Some("args" | "encode"));
                    if spec.rank >= p * q {
                        return Err(UsageError(format!("--kill: rank {} is not in the {p}x{q} grid", spec.rank)));
                    }
                    // A replacement joining a repetition arms only the kills
                    // of the scenario's first epoch.
                    if spec.epoch > 0 && repeated {
                        return Err(UsageError(
                            "--kill with --reps: kills in later repair epochs (/EPOCH) are not repeated; drop \
                             --reps or the /EPOCH kills"
                                .into(),
                        ));
                    }
                    if before_checksums && spec.step != Some(0) {
                        return Err(UsageError(format!(
                            "--kill: the {} phase comes once, before step 0: write R@0:{}",
                            spec.phase.as_deref().unwrap_or_default(),
                            spec.phase.as_deref().unwrap_or_default()
                        )));
                    }
                    // A restarted call (a kill before the checksums exist)
                    // runs from the top on its replacement.
                    if before_checksums && repeated {
                        return Err(UsageError(
                            "--kill with --reps: a kill in the args or encode phase restarts the call, which is not \
                             repeated; drop --reps or kill in a later phase"
                                .into(),
                        ));
                    }
                    // Grid rank 0 keeps the samples of every repetition.
                    if spec.rank == 0 && repeated {
                        return Err(UsageError(
                            "--kill with --reps: grid rank 0 collects the repetitions' times and must survive; kill \
                             another rank"
                                .into(),
                        ));
                    }
                }
                Some(joined)
            }
        };
        let corrupt = match o.get("corrupt") {
            None => None,
            Some(c) => {
                let (r, st) = c.split_once('@').ok_or_else(|| UsageError("--corrupt wants R@STEP".into()))?;
                Some((
                    r.parse().map_err(|_| UsageError("--corrupt: bad rank".into()))?,
                    st.parse().map_err(|_| UsageError("--corrupt: bad step".into()))?,
                ))
            }
        };
        Ok(FactorArgs {
            ft,
            spares: o.num("spares", 0i32)?,
            kill,
            compare: o.flag("compare"),
            reps: o.num("reps", 1usize)?,
            verify: o.flag("verify"),
            corrupt,
            which,
            p,
            q,
            m,
            n,
            nb,
            kind,
            seed: o.num("seed", 2026u64)?,
            input,
            output: o.get("output").map(PathBuf::from),
            check: o.flag("check"),
            json: o.get("json").map(String::from),
        })
    }

    /// `ftla demo`: a preset of `ftla qr --ft --check --verify --compare`
    /// with one rank killed halfway through the factorization.
    pub fn demo(o: &Opts) -> Result<FactorArgs, UsageError> {
        let (p, q) = o.grid((2, 2))?;
        if q < 2 {
            return Err(UsageError(format!("the demo needs at least 2 process columns, got a {p}x{q} grid")));
        }
        let n = o.num("n", 2048usize)?;
        let nb = o.num("nb", 64usize)?;
        if n == 0 || nb == 0 {
            return Err(UsageError("--n and --nb must be ≥ 1".into()));
        }
        let victim = o.num("kill", if p * q > 1 { 1 } else { 0 })?;
        if victim < 0 || victim >= p * q {
            return Err(UsageError(format!("--kill: rank {victim} is not in the {p}x{q} grid")));
        }
        let spares = o.num("spares", 0i32)?;
        let step = n.div_ceil(nb) / 2;
        Ok(FactorArgs {
            which: Factorization::Qr,
            p,
            q,
            m: n,
            n,
            nb,
            kind: MatrixKind::Uniform,
            seed: 2026,
            input: None,
            output: None,
            check: true,
            json: o.get("json").map(String::from),
            ft: true,
            spares,
            kill: Some(format!("{victim}@qr:{step}:update")),
            compare: true,
            reps: 1,
            verify: true,
            corrupt: None,
        })
    }

    /// Number of MPI processes.
    pub fn nprocs(&self) -> u32 {
        (self.p * self.q + self.spares.max(0)) as u32
    }

    /// The matrix shape: the generated one, or the one in `--input`'s
    /// header (`None` if it cannot be read here).
    pub(crate) fn shape(&self) -> Option<(usize, usize)> {
        match &self.input {
            None => Some((self.m, self.n)),
            Some(path) if path.extension().is_some_and(|e| e == "mtx") => None,
            Some(path) => scalapack_ft::io::read_npy_header(path).ok().map(|h| (h.rows, h.cols)),
        }
    }

    /// The most memory one process of the job holds at once, in bytes:
    /// the matrix (with its checksum columns and sums for `--ft`, which a
    /// parked spare prepares as well) and, with `--check`, a copy of the
    /// input. `None` when the shape is not known before the launch.
    pub fn bytes_per_process(&self) -> Option<u64> {
        let (m, n) = self.shape()?;
        let (p, q) = (self.p.max(1) as usize, self.q.max(1) as usize);
        let matrix = 8 * DistMatrix::local_len_bound(m, n, self.nb, self.nb, p, q) as u64;
        let factored = match self.ft {
            true => scalapack_ft::qr_ft::FtWorkspace::bytes_per_process(m, n, self.nb, p, q).unwrap_or(matrix),
            false => matrix,
        };
        Some(factored + if self.check { matrix } else { 0 })
    }
}

/// Before the launch: refuses a job whose processes on this machine would
/// need more memory than it has left, in one line (`--n`, or `N` of an
/// input file, named). Jobs spread over other hosts are left to the
/// library's own check.
pub fn check_memory(a: &FactorArgs) -> Result<(), UsageError> {
    if blacs_ft::launch::runs_on_other_hosts() {
        return Ok(());
    }
    let (Some(need), Some(avail)) = (a.bytes_per_process(), scalapack_ft::memory::available_bytes()) else {
        return Ok(());
    };
    let procs = a.nprocs() as u64;
    if need.saturating_mul(procs) <= avail {
        return Ok(());
    }
    let gib = scalapack_ft::memory::gib;
    let (m, n) = a.shape().unwrap_or((a.m, a.n));
    let size = if m == n { format!("N = {n}") } else { format!("M = {m}, N = {n}") };
    Err(UsageError(format!(
        "{size} needs {:.1} GiB per process ({procs} process{}: {:.1} GiB); {:.1} GiB available on this machine",
        gib(need),
        if procs == 1 { "" } else { "es" },
        gib(need.saturating_mul(procs)),
        gib(avail)
    )))
}

/// Flops of an LU factorization of an M×N matrix (leading terms of
/// LAPACK's count; 2N³/3 for a square matrix).
pub fn lu_flops(m: usize, n: usize) -> f64 {
    let (m, n) = (m as f64, n as f64);
    if m >= n {
        m * n * n - n * n * n / 3.0
    } else {
        n * m * m - m * m * m / 3.0
    }
}

/// The matrix to factor: generated in place from (seed, i, j), or read
/// from `--input` (collective: an error, such as no memory for it, is the
/// same on every rank). With `collective = false` (a replacement joining a
/// factorization in progress, whose content is rebuilt anyway) the matrix
/// is only allocated, zero, with the right shape (read locally from the
/// file's header for `--input`), so the survivors do not wait for it.
pub(crate) fn make_matrix(
    grid: &blacs_ft::Grid,
    a: &FactorArgs,
    collective: bool,
) -> Result<DistMatrix, scalapack_ft::Error> {
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
    a: &FactorArgs,
    collective: bool,
) -> Result<DistMatrix, scalapack_ft::Error> {
    match &a.input {
        Some(path) if collective => read_matrix(grid, path, a.nb),
        Some(path) => {
            let shape = if path.extension().is_some_and(|e| e == "mtx") {
                scalapack_ft::io::read_mtx(path).map(|d| (d.rows, d.cols))
            } else {
                scalapack_ft::io::read_npy_header(path).map(|h| (h.rows, h.cols))
            };
            let (m, n) = shape.map_err(|e| blacs_ft::Error::Unrecoverable { reason: e.to_string() })?;
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

/// Runs inside MPI; never returns.
pub fn run(a: FactorArgs) -> ! {
    blas::use_single_thread();
    let injector = match &a.kill {
        Some(k) => Injector::parse(k).unwrap_or_default(),
        None => Injector::none(),
    };
    if a.ft {
        // A hot spare allocates and touches a replacement's matrix and
        // workspace while it is parked, not while the survivors wait.
        let (s, prepared) = start_preparing(a.p, a.q, injector, || crate::ft_cmd::SparePrep::new(&a));
        crate::ft_cmd::run(s, &a, prepared);
    }
    let s = start(a.p, a.q, injector);
    let outcome = factor(&s, &a);
    let unrecoverable = outcome.as_ref().is_err_and(|e| e.is_unrecoverable());
    let (ok, detail) = match outcome {
        Ok((ok, text)) => (ok, text),
        Err(e) => {
            if s.grid.rank() == 0 {
                eprintln!("ftla {}: {e}", a.which.name());
            }
            (false, e.to_string())
        }
    };
    s.finish(crate::session::outcome(ok, unrecoverable), &detail)
}

fn factor(s: &Session, a: &FactorArgs) -> Result<(bool, String), scalapack_ft::Error> {
    let grid = &*s.grid;
    let root = grid.rank() == 0;
    let mut mat = make_matrix(grid, a, true)?;
    let (m, n) = (mat.m(), mat.n());
    let original = a.check.then(|| mat.clone());
    // The local DGEMM rate, measured by every rank at once (so it sees the
    // same contention as the factorization), averaged over the ranks.
    let mut rate = [blas::measure_dgemm_gflops(1024)];
    grid.sum(Scope::All, &mut rate, None)?;
    let dgemm = rate[0] / grid.size() as f64;
    if root {
        println!(
            "ftla {}: {}x{} matrix, NB {}, {}x{} grid, OpenBLAS kernel {} (1 thread per rank), local DGEMM {:.1} Gflop/s",
            a.which.name(),
            m,
            n,
            a.nb,
            a.p,
            a.q,
            blas::kernel_name(),
            dgemm
        );
    }
    grid.barrier(Scope::All)?;
    let t = Instant::now();
    let mut tau = Vec::new();
    let mut ipiv: Vec<i64> = Vec::new();
    let singular = match a.which {
        Factorization::Qr => {
            qr::pdgeqrf(grid, &mut mat, &mut tau)?;
            None
        }
        Factorization::Lu => match scalapack_ft::lu::pdgetrf(grid, &mut mat, &mut ipiv) {
            Err(e @ scalapack_ft::Error::Singular { .. }) => Some(e),
            r => {
                r?;
                None
            }
        },
    };
    let mut secs = [t.elapsed().as_secs_f64()];
    grid.max(Scope::All, &mut secs)?;
    let secs = secs[0];
    let flops = match a.which {
        Factorization::Qr => qr::qr_flops(m, n),
        Factorization::Lu => lu_flops(m, n),
    };
    let gflops = if secs > 0.0 { flops / secs / 1e9 } else { 0.0 };
    let (mut residual, mut orthogonality) = (None, None);
    if let Some(orig) = &original {
        match a.which {
            Factorization::Qr => {
                residual = Some(qr::check::qr_residual(grid, orig, &mat, &tau)?);
                orthogonality = Some(qr::check::orthogonality(grid, &mat, &tau)?);
            }
            Factorization::Lu => residual = Some(scalapack_ft::lu::lu_residual(grid, orig, &mat, &ipiv)?),
        }
    }
    if let Some(out) = &a.output {
        write_matrix(grid, &mat, out)?;
        let side = |ext: &str| out.with_extension(ext);
        match a.which {
            Factorization::Qr => write_vector(grid, &side("tau.npy"), VectorData::F64(&tau))?,
            Factorization::Lu => write_vector(grid, &side("ipiv.npy"), VectorData::I64(&ipiv))?,
        }
    }
    let ok = singular.is_none() && residual.is_none_or(|r| r < 16.0) && orthogonality.is_none_or(|o| o < 16.0);
    let mut summary = format!(
        "{} {m}x{n} NB {} on {}x{}: {secs:.3} s, {gflops:.1} Gflop/s ({:.0} % of the ranks' summed local DGEMM rate)",
        a.which.name(),
        a.nb,
        a.p,
        a.q,
        100.0 * gflops / (dgemm * grid.size() as f64).max(1e-9)
    );
    if let Some(r) = residual {
        summary.push_str(&format!(", residual {r:.3}"));
    }
    if let Some(o) = orthogonality {
        summary.push_str(&format!(", orthogonality {o:.3}"));
    }
    if let Some(e) = &singular {
        summary.push_str(&format!(", {e}"));
    }
    if root {
        println!("{summary}{}", if ok { "" } else { "  FAILED" });
        if let Some(path) = &a.json {
            let mut fields = vec![
                ("command", Json::from(a.which.name())),
                ("grid", Json::Arr(vec![Json::Int(a.p as i64), Json::Int(a.q as i64)])),
                ("m", Json::Int(m as i64)),
                ("n", Json::Int(n as i64)),
                ("nb", Json::Int(a.nb as i64)),
                ("time_s", Json::Num(secs)),
                ("gflops", Json::Num(gflops)),
                ("residual", residual.map_or(Json::from("not checked"), Json::Num)),
            ];
            if a.which == Factorization::Qr {
                fields.push(("orthogonality", orthogonality.map_or(Json::from("not checked"), Json::Num)));
            }
            fields.extend([
                ("dgemm_gflops", Json::Num(dgemm)),
                ("blas_kernel", Json::from(blas::kernel_name())),
                ("blas_threads_per_rank", Json::Int(1)),
                ("ok", Json::Bool(ok)),
            ]);
            if let Err(e) = std::fs::write(path, Json::obj(fields).pretty()) {
                eprintln!("ftla: cannot write {path}: {e}");
                return Ok((false, format!("cannot write {path}: {e}")));
            }
        }
    }
    Ok((ok, summary))
}
