//! The `ftla` command line (clap, derive): every command and option, with
//! the help text taken from these doc comments. Checks that involve several
//! options (a kill's rank inside the grid, its step inside the
//! factorization) are made after parsing, before anything is launched, and
//! reported like clap's own usage errors (exit code 2).

use blacs_ft::Injector;
use clap::{Args, Parser, Subcommand, ValueEnum};
use ftla_bench::report::Op;
use recovery::Policy;
use scalapack_ft::generate::MatrixKind;
use std::path::PathBuf;

const ENVIRONMENT: &str = "\
Started outside MPI, ftla re-launches itself under `mpiexec --with-ft ulfm` with one rank per grid position plus \
the spares.

Environment: FTLA_KILL (kill points, RANK@[OP:]STEP[:PHASE][/EPOCH]), FTLA_MPIEXEC (launcher), FTLA_MPIEXEC_ARGS \
(extra launcher arguments, e.g. a hostfile), FTLA_DEBUG=1 (trace repairs), FTLA_REPAIR_TIMEOUT (seconds before a \
stalled repair is reported, default 60).

Exit codes: 0 ok; 1 failed (a wrong result, an error, or a grid rank that died of a signal with no recovery \
replacing it: the rank and the signal are named); 2 usage error; 3 a failure that could not be recovered from, \
reported as such (also when every process of the grid was lost: the lost ranks are named); 124 past --timeout; \
128+N stopped by signal N.";

/// ftla — fault-tolerant distributed dense linear algebra.
#[derive(Parser, Debug)]
#[command(name = "ftla", version, after_help = ENVIRONMENT, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// The fault-tolerant QR at work: one rank SIGKILLed mid-factorization.
    ///
    /// pdgeqrf_ft on a 2x2 grid, one rank SIGKILLed halfway through, its
    /// blocks rebuilt from the checksums; then the residuals, the time, the
    /// recovery breakdown and the overhead against a failure-free run and
    /// the plain QR, all from the same job. By default twice: first a hot
    /// spare replaces the lost rank (milliseconds), then, in a second job
    /// without spares, a process started by MPI_Comm_spawn (about a
    /// second), with one line on what the spawn costs.
    Demo(DemoArgs),
    /// The grid layer alone: a rank dies, the grid repairs itself.
    ///
    /// A grid that loses a rank to SIGKILL mid-run, repairs itself (ULFM:
    /// revoke, shrink, spawn or spare, merge, split) and shows, with row,
    /// column and grid collectives, that the repaired grid computes
    /// correctly.
    GridDemo(GridDemoArgs),
    /// Repair latency: kill ranks, repair, time every phase.
    ///
    /// Kills ranks, repairs the grid, verifies every position, and times
    /// each phase of the repair: detection, revoke, shrink, spawn (or spare
    /// hand-over), merge, split, total. Prints the median over --reps.
    Repair(RepairArgs),
    /// QR factorization: pdgeqrf, or the fault-tolerant pdgeqrf_ft (--ft).
    ///
    /// Factors a generated or given matrix and reports the time, Gflop/s
    /// (2MN²−2N³/3), ScaLAPACK's residual checks and the local DGEMM rate
    /// measured in the same run. With --ft: kills, hot spares, the recovery
    /// breakdown, the checksum overhead against its model, and (--compare)
    /// the plain run timed in the same job. With --lstsq: the least-squares
    /// solution of A·X ≈ B through the factors, and LAPACK's check of it.
    Qr(QrArgs),
    /// LU with partial pivoting: pdgetrf, or the fault-tolerant pdgetrf_ft (--ft).
    ///
    /// Factors a generated or given matrix and reports the time, Gflop/s
    /// (2N³/3), the ‖PA−LU‖ residual (and with --solve the residual of a
    /// solve with the factors) and the local DGEMM rate measured in the same
    /// run. With --ft: kills, hot spares, the recovery breakdown, the
    /// checksum overhead against its model, and (--compare) the plain run
    /// timed in the same job.
    Lu(LuArgs),
    /// The distribution's ScaLAPACK on the same problem, as a baseline.
    ///
    /// Debian's ScaLAPACK (PDGEQRF or PDGETRF on Open MPI 4.1 and OpenBLAS)
    /// on the same grid, N and NB as `ftla qr|lu`, with time, Gflop/s,
    /// residuals and the local DGEMM rate in the same JSON fields. Needs
    /// `scripts/setup.sh --scalapack`.
    Baseline(BaselineArgs),
    /// Cholesky factorization of a symmetric positive definite matrix: pdpotrf.
    ///
    /// Factors a generated (default: symmetric uniform plus N on the
    /// diagonal) or given matrix, A = L·Lᵀ with L in the lower triangle
    /// (the upper one is not referenced), and reports the time, Gflop/s
    /// (N³/3), ScaLAPACK's residual ‖A−LLᵀ‖₁/(‖A‖₁·N·eps) and the local
    /// DGEMM rate measured in the same run. A matrix that is not positive
    /// definite is reported with ScaLAPACK's INFO (the order of the first
    /// leading minor that is not), exit code 1.
    Chol(CholArgs),
    /// Conjugate gradients: pdcg, or the fault-tolerant pdcg_ft (--ft).
    ///
    /// Solves A·x = b for a dense symmetric positive definite A (default:
    /// the 2-D Poisson matrix) and b with entries in [0.5, 1.5), and reports
    /// the iterations, whether it converged, the true relative residual
    /// ‖b−Ax‖/‖b‖, the time and Gflop/s (2N² per iteration). With --ft:
    /// kills (phases matvec, dot, commit at an iteration), hot spares, the
    /// recovery breakdown, silent errors caught by the checksums
    /// (--corrupt), and (--compare) the plain solve timed in the same job.
    Cg(CgArgs),
    /// Runs any program under mpiexec with fault tolerance on.
    ///
    /// Starts NP processes of PROGRAM (plus the spares) under the MPI's
    /// mpiexec with ULFM enabled, as `ftla`'s own commands run: kill points
    /// from FTLA_KILL reach every process, signals are forwarded to the job
    /// and nothing of it outlives the launcher, and the exit code is the
    /// outcome the job reports through ftla's runtime (else mpiexec's). With
    /// --recovery cof|auto a job whose survivors saved checkpoints is
    /// started again, resuming from them.
    Launch(LaunchProgramArgs),
    /// Random kills, many runs: counts correct, unrecoverable, hung, wrong.
    ///
    /// Runs many `ftla qr --ft` (--op lu|cg|chol: `ftla lu|cg|chol --ft`) jobs on random grids, sizes, ranks, steps,
    /// phases and repair points (double kills among them), each under a
    /// timeout, and counts correct, reported-unrecoverable, hung and
    /// wrong-answer runs. Prints the exact command of every run that was not
    /// correct, and exits non-zero on any hang or wrong answer.
    Soak(SoakArgs),
    /// Weak or strong scaling sweeps, with a table, JSON, CSV and a plot.
    ///
    /// One job per point (a rank count), each timed plain and, with --ft,
    /// fault-tolerant; prints a table (ranks, grid, N, time, Gflop/s,
    /// Tflop/s, parallel efficiency, FT overhead and its model) and writes
    /// JSON, CSV and an SVG plot. Runs unchanged on a cluster with
    /// --hostfile.
    Scale(ScaleArgs),
}

/// How the job is launched.
#[derive(Args, Debug, Clone, Default)]
pub struct LaunchArgs {
    /// Kill the whole job after SECS seconds (exit code 124).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Launch without ULFM: the job runs, but a lost process ends it
    /// (nothing can be repaired in place).
    #[arg(long)]
    pub no_ft: bool,
    /// Where the grid ranks go among the processes: default (grid rank r
    /// on the r-th process), or spread (the processes of each node in
    /// distinct process rows, so that a lost node takes at most one
    /// process of a row: the checksums rebuild it; FTLA_PLACEMENT).
    #[arg(long, value_name = "PLACEMENT", value_parser = parse_placement)]
    pub placement: Option<blacs_ft::placement::Placement>,
}

fn parse_placement(s: &str) -> Result<blacs_ft::placement::Placement, String> {
    blacs_ft::placement::Placement::parse(s).ok_or_else(|| format!("`{s}`: must be default or spread"))
}

/// `ftla launch`.
#[derive(Args, Debug, Clone)]
pub struct LaunchProgramArgs {
    /// Processes that hold grid ranks.
    #[arg(long, value_name = "NP", value_parser = clap::value_parser!(u32).range(1..))]
    pub np: u32,
    /// Hot spares started besides them (they park inside the grid's set-up).
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub spares: u32,
    /// How a lost process is recovered (inplace, cof, auto, shrink; see `ftla qr --help`).
    #[arg(long, value_name = "POLICY", default_value = "inplace", value_parser = parse_policy)]
    pub recovery: Policy,
    /// Where the checkpoints go (saved on a failure with --recovery
    /// cof|auto, or periodically with FTLA_CHECKPOINT_EVERY).
    #[arg(long, value_name = "D")]
    pub checkpoint_dir: Option<PathBuf>,
    /// With --recovery cof|auto: restarts from checkpoints allowed.
    #[arg(long, value_name = "K", default_value_t = 3)]
    pub max_restarts: u32,
    /// Start from the checkpoints an earlier run left in D.
    #[arg(long, value_name = "D")]
    pub resume: Option<PathBuf>,
    #[command(flatten)]
    pub launch: LaunchArgs,
    /// The program and its arguments (after `--`).
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    pub program: Vec<String>,
}

/// A process grid `P×Q`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridShape {
    pub p: i32,
    pub q: i32,
}

impl GridShape {
    /// Number of grid processes.
    pub fn size(self) -> i32 {
        self.p * self.q
    }
}

impl std::fmt::Display for GridShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.p, self.q)
    }
}

/// Parses `PxQ` (P, Q ≥ 1, at most 4096 processes in all).
pub fn parse_grid(v: &str) -> Result<GridShape, String> {
    let bad = || format!("wants PxQ with P, Q ≥ 1 (e.g. 2x2), got `{v}`");
    let (p, q) = v.split_once(['x', 'X']).ok_or_else(bad)?;
    let p: i32 = p.trim().parse().map_err(|_| bad())?;
    let q: i32 = q.trim().parse().map_err(|_| bad())?;
    if p < 1 || q < 1 {
        return Err(bad());
    }
    if p.checked_mul(q).is_none_or(|n| n > 4096) {
        return Err(format!("{p}x{q} is more than 4096 processes"));
    }
    Ok(GridShape { p, q })
}

/// Parses a matrix kind: `uniform`, `dd`, `spd`, `poisson2d` or `cond:C` (C ≥ 1).
pub fn parse_kind(s: &str) -> Result<MatrixKind, String> {
    Ok(match s {
        "uniform" => MatrixKind::Uniform,
        "dd" | "diagonally-dominant" => MatrixKind::DiagonallyDominant,
        "spd" => MatrixKind::Spd,
        "poisson2d" => MatrixKind::Poisson2d,
        other => match other.strip_prefix("cond:").and_then(|c| c.parse::<f64>().ok()) {
            Some(c) if c >= 1.0 && c.is_finite() => MatrixKind::Conditioned { cond: c },
            _ => return Err(format!("`{other}` is not one of uniform, dd, spd, poisson2d, cond:C (C ≥ 1)")),
        },
    })
}

/// Replaces an argument's help (and drops a longer one) for one command:
/// the shared argument structs are flattened into `qr`, `lu` and `cg`,
/// and each names its own operation, inputs, outputs and phases.
fn help(arg: clap::Arg, text: &'static str) -> clap::Arg {
    arg.help(text).long_help(None::<&'static str>)
}

/// The repair protocol's kill points, the same for every driver.
macro_rules! repair_points {
    () => {
        " or at a point of the repair: R@repair:ATTEMPT:{revoke,shrink,spawn,merge}, R@repair:BUILD:split, \
        R@region:REPAIR:share. Comma-separated. The points of FTLA_KILL (same grammar) are armed too, before these \
        (a point in both lists is armed once); the run prints one line naming every armed point and where it came \
        from. Kill points, from either source, need --ft (without it FTLA_KILL is a usage error)."
    };
}

/// `ftla qr --kill`.
const QR_KILL: &str = concat!(
    "With --ft: SIGKILL grid rank R at STEP (panel STEP of the QR) in PHASE: args or encode at step 0 (before the \
    checksums exist), then panel, bcast, update or commit at any step (R@qr:STEP:PHASE). The solves on the \
    protected factors take points of the same form: R@ormqr:STEP:PHASE (pdormqr_ft, STEP a panel of Q or Qᵀ), \
    R@trsm:STEP:PHASE (the solve with R, STEP a block row, last first) and R@gels:STEP:PHASE (pdgels_ft's solve: \
    steps 0..P−1 Qᵀ's P panels, then R's block rows; for M < N, Rᵀ's block rows, then Q's panels), PHASE being \
    args or encode at step 0, then bcast (V and T, or R's block column or row, along the process rows), update \
    (the reduction of Vᵀ·B, or the solved block row down the process columns) or commit at any step. A point \
    without an operation (R@STEP:PHASE) fires in whichever reaches it first, one without a phase at its step's \
    first. ftla qr --lstsq --ft runs pdgels_ft, whose R@gels points apply (not with --reps): a loss in its args or \
    encode phase, or between its factorization and its solve (met at R@gels:0:args), makes the job repair and \
    solve again with the kept factors;",
    repair_points!()
);
/// `ftla lu --kill`.
const LU_KILL: &str = concat!(
    "With --ft: SIGKILL grid rank R at STEP (panel STEP of the LU) in PHASE: args or encode at step 0 (before the \
    checksums exist), then panel, bcast, swap (the row interchanges), update or commit at any step; in the solve \
    pdgetrs_ft, R@getrs:STEP:PHASE: args or encode at step 0, swap at the interchanges' step (step 0 with TRANS=N, \
    2*NBLK with T; NBLK = ceil(N/NB)), bcast (the factors' panel) or update (B's solved block row) at a block step \
    (the others), commit at any step (ftla lu runs it with --solve, TRANS=N, and takes all its points, not with \
    --reps: a loss in args or encode makes the job repair and solve again with the kept factors); with --solve, \
    R@app:0 kills R in the program's own work between the factorization and the solve (met at the solve's \
    start, which the job then makes again);",
    repair_points!()
);
/// `ftla chol --kill`.
const CHOL_KILL: &str = concat!(
    "With --ft: SIGKILL grid rank R at STEP (block column STEP of the Cholesky) in PHASE: args or encode at step \
    0 (before the checksums exist), then panel, bcast, update or commit at any step (R@potrf:STEP:PHASE; panel \
    factors the diagonal block and solves the column below it, bcast sends the column along the process rows, \
    update gathers it down the process columns); with --solve, in pdpotrs_ft R@potrs:STEP:PHASE: args or encode \
    at step 0, then bcast (a block column of L, or a block row of it for Lᵀ) or update (B's solved block row) at \
    the block steps of L (0..NBLK−1) then of Lᵀ (NBLK..2·NBLK−1; NBLK = ceil(N/NB)), commit at any step, and \
    R@app:0 in the program's own work between the factorization and the solve (a loss in the solve's args or \
    encode, or at app, makes the job repair and solve again with the kept factor);",
    repair_points!()
);
/// `ftla cg --kill`.
const CG_KILL: &str = concat!(
    "With --ft: SIGKILL grid rank R at STEP in PHASE: args or encode at step 0, then matvec, dot or commit at an \
    iteration (step 0 is the initial residual b−A·x₀, step k iteration k);",
    repair_points!()
);

fn parse_interval(s: &str) -> Result<String, String> {
    if s == "auto" {
        return Ok(s.to_string());
    }
    blacs_ft::launch::CheckpointInterval::parse(s, None).map(|_| s.to_string())
}

fn parse_hours(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x > 0.0)
        .ok_or_else(|| format!("`{s}`: must be a number of hours, more than 0"))
}

fn parse_policy(s: &str) -> Result<Policy, String> {
    Policy::parse(s).ok_or_else(|| format!("`{s}`: must be inplace, cof, auto or shrink"))
}

// Kill points (`RANK@[OP:]STEP[:PHASE][/EPOCH]`, comma-separated), parsed
// by the injector itself: a malformed point is a usage error here.
fn parse_kills(s: &str) -> Result<Injector, String> {
    match Injector::parse(s) {
        Ok(kills) => Ok(kills),
        Err(blacs_ft::Error::InvalidArgument { reason, .. }) => Err(reason),
        Err(e) => Err(e.to_string()),
    }
}

fn parse_corrupt(s: &str) -> Result<(i32, u64), String> {
    let (r, st) = s.split_once('@').ok_or("wants R@STEP")?;
    Ok((r.trim().parse().map_err(|_| "bad rank")?, st.trim().parse().map_err(|_| "bad step")?))
}

/// `--nb`: a block size, or `auto`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NbArg {
    Fixed(usize),
    Auto,
}

fn parse_nb(s: &str) -> Result<NbArg, String> {
    match s.trim() {
        "auto" => Ok(NbArg::Auto),
        v => match v.parse::<usize>() {
            Ok(nb) if nb >= 1 => Ok(NbArg::Fixed(nb)),
            _ => Err(format!("`{v}` is neither a block size (1 or more) nor `auto`")),
        },
    }
}

/// A comma-separated list of grid ranks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankList(pub Vec<i32>);

fn parse_ranks(s: &str) -> Result<RankList, String> {
    s.split(',')
        .map(|r| r.trim().parse::<i32>().map_err(|_| format!("`{r}` is not a rank")))
        .collect::<Result<Vec<_>, _>>()
        .map(RankList)
}

/// The matrix to factor and what to do with the result.
#[derive(Args, Debug, Clone)]
pub struct MatrixArgs {
    /// Process grid, row-major ranks.
    #[arg(long, value_name = "PxQ", default_value = "1x2", value_parser = parse_grid)]
    pub grid: GridShape,
    /// Columns of the generated matrix (required unless --input; each
    /// command says what N is for it).
    #[arg(long, value_name = "N", required_unless_present = "input")]
    pub n: Option<usize>,
    /// Rows of the generated matrix (default N).
    #[arg(long, value_name = "M")]
    pub m: Option<usize>,
    /// Block size of the 2-D block-cyclic layout, or `auto`: the smallest
    /// of 64, 128 and 256 at which this machine's DGEMM (one thread, inner
    /// dimension NB) runs within 5 % of its best, measured by a short probe
    /// where `ftla` starts (about a second), and at most a quarter of the
    /// matrix's share of one process row or column. The choice is printed
    /// and is the JSON's `nb`; kill steps count its panels.
    #[arg(long, value_name = "NB|auto", default_value = "64", value_parser = parse_nb)]
    pub nb: NbArg,
    /// Generated matrix: uniform | dd (diagonally dominant) | spd |
    /// poisson2d | cond:C (default: uniform for QR, dd for LU, poisson2d for
    /// CG).
    #[arg(long, value_name = "KIND", value_parser = parse_kind)]
    pub matrix: Option<MatrixKind>,
    /// Seed of the generated matrix.
    #[arg(long, value_name = "S", default_value_t = 2026)]
    pub seed: u64,
    /// Read the matrix from FILE (.npy <f8, or .mtx array) instead.
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Write the result to FILE (.npy or .mtx).
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Check the result against the input.
    #[arg(long)]
    pub check: bool,
    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write every rank's timeline of the run (its parts: panel, bcast,
    /// update, …) to FILE in the Chrome trace format (Perfetto,
    /// chrome://tracing).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// No progress line (on a terminal a live line, elsewhere one per
    /// tenth of the flops, once a run has taken two seconds).
    #[arg(long)]
    pub quiet: bool,
}

/// The fault-tolerant run and its failures.
#[derive(Args, Debug, Clone, Default)]
pub struct FtArgs {
    /// Run the fault-tolerant driver (reverse-neighboring checksums, repair
    /// in place).
    #[arg(long)]
    pub ft: bool,
    /// With --ft: SIGKILL grid rank R at STEP in PHASE (args and encode at
    /// step 0; then at any step QR's panel, bcast, update, commit, LU's
    /// panel, bcast, swap, update, commit, or CG's matvec, dot, commit —
    /// CG's step k is iteration k, step 0 the initial residual), or at a
    /// point of the repair:
    /// R@repair:ATTEMPT:{revoke,shrink,spawn,merge}, R@repair:BUILD:split,
    /// R@region:REPAIR:share. Comma-separated. FTLA_KILL's points are
    /// armed as well, before these.
    #[arg(long, value_name = "R@STEP:PHASE[,...]", requires = "ft", value_parser = parse_kills)]
    pub kill: Option<Injector>,
    /// With --ft: hot spares parked at start-up (default 0: a lost process
    /// is respawned).
    #[arg(long, value_name = "S", requires = "ft", default_value_t = 0)]
    pub spares: u32,
    /// With --ft: also time the plain run and a failure-free FT one in the
    /// same job.
    #[arg(long, requires = "ft")]
    pub compare: bool,
    /// With --compare: time the plain / failure-free FT pair R times,
    /// alternating, and report medians; with --kill every repetition also
    /// repeats the FT run with the kills (give R spares, or it spawns).
    #[arg(long, value_name = "R", requires = "compare", default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub reps: u64,
    /// With --ft: check the checksum relations at the end.
    #[arg(long, requires = "ft")]
    pub verify: bool,
    /// With --ft: how a lost process is recovered. inplace: the grid is
    /// repaired (a hot spare, or a spawned process); cof
    /// (checkpoint-on-failure): the survivors save their committed state,
    /// the job is started again and resumes from it; shrink: a hot spare,
    /// else the survivors go on as a smaller grid (QR, LU, Cholesky); auto:
    /// in place while possible (a spare, a spawn, a shrink), cof when the
    /// repair is refused.
    #[arg(long, value_name = "POLICY", requires = "ft", default_value = "inplace", value_parser = parse_policy)]
    pub recovery: Policy,
    /// With --ft: where the checkpoints go, saved on a failure (--recovery
    /// cof|auto) or periodically (--checkpoint-every; default
    /// $TMPDIR/ftla-checkpoints-RUNID; on several nodes, a directory they
    /// share). Deleted after a successful finish.
    #[arg(long, value_name = "D", requires = "ft")]
    pub checkpoint_dir: Option<PathBuf>,
    /// With --ft: save a periodic checkpoint of the call in progress at the
    /// first commit point every SECONDS (fractions allowed; 0: at every
    /// commit point, for tests and very long steps; auto: Young and Daly's
    /// √(2·C·MTBF), C the first checkpoint's cost, with --mtbf), which
    /// survives the loss of the whole job (a lost node): resume it with
    /// --resume D. Incremental (what no later step changes is written
    /// once); at most two generations are on disk; deleted after a
    /// successful finish unless --keep-checkpoints.
    #[arg(long, value_name = "SECONDS|auto", requires = "ft", value_parser = parse_interval)]
    pub checkpoint_every: Option<String>,
    /// With --checkpoint-every auto: the mean time between failures that
    /// end the whole job (a lost node), in hours.
    #[arg(long, value_name = "HOURS", requires = "checkpoint_every", value_parser = parse_hours)]
    pub mtbf: Option<f64>,
    /// With --checkpoint-every: keep the checkpoints after a successful
    /// finish.
    #[arg(long, requires = "checkpoint_every")]
    pub keep_checkpoints: bool,
    /// With --checkpoint-every: save the checksum columns too (the parity
    /// that rebuilds files missing for up to the layout's losses per
    /// process row, when resuming on the grid of the save: checkpoints on
    /// node-local disks). Without it the checkpoints hold the data only,
    /// and the checksums are encoded again when resuming.
    #[arg(long, requires = "checkpoint_every")]
    pub checkpoint_parity: bool,
    /// With --recovery cof|auto: restarts from checkpoints allowed; 0 stops
    /// after the first save, leaving the checkpoints for --resume (exit
    /// code 76).
    #[arg(long, value_name = "K", requires = "ft", default_value_t = 3)]
    pub max_restarts: u32,
    /// With --ft: start from the checkpoints an earlier run left in D
    /// (under --recovery cof unless auto is given), with the same matrix
    /// options, on the grid of the save or another --grid (QR, LU and CG
    /// periodic checkpoints with every file there; the blocks are
    /// redistributed and the checksums encoded for the new grid).
    #[arg(long, value_name = "D", requires = "ft")]
    pub resume: Option<PathBuf>,
    /// With --ft: a silent error on rank R at STEP (each command says
    /// where).
    #[arg(long, value_name = "R@STEP", requires = "ft", value_parser = parse_corrupt)]
    pub corrupt: Option<(i32, u64)>,
    /// With --ft: the checksum layout. reverse-neighbor (default): one
    /// checksum per group of Q block columns, stored twice, one loss per
    /// process row; rotating: --checksums F weighted checksums per group of
    /// Q − F block columns, F losses per process row (Q ≥ F + 1).
    #[arg(long, value_name = "LAYOUT", requires = "ft", value_enum, default_value_t = LayoutArg::ReverseNeighbor)]
    pub layout: LayoutArg,
    /// With --layout rotating: checksums per group F, the losses per
    /// process row tolerated (1 to 3; default 1).
    #[arg(long, value_name = "F", requires = "ft", value_parser = clap::value_parser!(u64).range(1..=3))]
    pub checksums: Option<u64>,
}

/// `--layout`: which checksum layout the fault-tolerant run uses.
#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LayoutArg {
    /// One checksum per group of Q, stored on two process columns.
    #[default]
    ReverseNeighbor,
    /// F weighted checksums per group of Q − F, on the columns it skips.
    Rotating,
}

impl LayoutArg {
    /// The layout of `--layout` with `--checksums F` (the one place the
    /// two options combine).
    pub fn kind(self, checksums: Option<u64>) -> Result<scalapack_ft::abft::LayoutKind, String> {
        use scalapack_ft::abft::LayoutKind;
        match (self, checksums) {
            (LayoutArg::ReverseNeighbor, None | Some(1)) => Ok(LayoutKind::ReverseNeighbor),
            (LayoutArg::ReverseNeighbor, Some(f)) => Err(format!(
                "--checksums {f} needs --layout rotating (the reverse-neighboring layout keeps one checksum per group)"
            )),
            (LayoutArg::Rotating, f) => Ok(LayoutKind::Rotating { checksums: f.unwrap_or(1) as usize }),
        }
    }
}

/// What is solved with the factors (`lu --solve`, `qr --lstsq`): the
/// right-hand sides and where the solution goes. Each command's help says
/// which flag they need.
#[derive(Args, Debug, Clone, Default)]
pub struct SolveArgs {
    /// Right-hand sides: the columns of B (default 1; with --rhs, the
    /// file's).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..=i32::MAX as u64))]
    pub nrhs: Option<u64>,
    /// Read B from FILE.
    #[arg(long, value_name = "FILE")]
    pub rhs: Option<PathBuf>,
    /// Write the solution X to FILE.
    #[arg(long, value_name = "FILE")]
    pub solution: Option<PathBuf>,
}

/// `ftla qr`.
#[derive(Args, Debug, Clone)]
#[command(
    mut_arg("n", |a| help(a, "Columns of the generated matrix A (required unless --input)")),
    mut_arg("m", |a| help(a, "Rows of the generated matrix A (default N)")),
    mut_arg("matrix", |a| help(a, "Generated matrix: uniform (default) | dd (diagonally dominant) | spd | poisson2d | cond:C")),
    mut_arg("input", |a| help(a, "Factor the matrix in FILE (.npy <f8, or .mtx array) instead of a generated one")),
    mut_arg("output", |a| help(a, "Write the factored matrix in ScaLAPACK's layout (R on and above the diagonal, the \
        Householder vectors V below it) to FILE (.npy or .mtx), and tau to FILE.tau.npy")),
    mut_arg("check", |a| help(a, "Compute ScaLAPACK's checks: the residual ‖A−QR‖₁/(‖A‖₁·max(M,N)·eps) and the \
        orthogonality ‖I−QᵀQ‖₁/(M·eps)")),
    mut_arg("ft", |a| help(a, "Fault-tolerant QR, pdgeqrf_ft: reverse-neighboring checksums, a commit per panel, \
        lost processes repaired in place and their blocks rebuilt")),
    mut_arg("kill", |a| help(a, QR_KILL)),
    mut_arg("compare", |a| help(a, "With --ft: also time the plain QR (pdgeqrf) and a failure-free pdgeqrf_ft in the \
        same job")),
    mut_arg("verify", |a| help(a, "With --ft: recompute every checksum of the factored matrix at the end and compare")),
    mut_arg("corrupt", |a| help(a, "With --ft: add 1.0 to one element of rank R's blocks at step STEP (a silent \
        error for --verify to report)")),
    // The least-squares solve.
    mut_arg("nrhs", |a| help(a, "With --lstsq: the columns of B (default 1; with --rhs, the file's)")),
    mut_arg("rhs", |a| help(a, "With --lstsq: read B (M×NRHS, or of length M for one column) from FILE (.npy <f8, \
        or .mtx array) instead of generating it (entries uniform in [−0.5, 0.5) from --seed)")),
    mut_arg("solution", |a| help(a, "With --lstsq: write the solution X (N×NRHS, or of length N for one column) to \
        FILE (.npy, or .mtx)")),
)]
pub struct QrArgs {
    #[command(flatten)]
    pub matrix: MatrixArgs,
    /// Least squares (pdgels): for M ≥ N minimise ‖A·X−B‖₂ through the QR
    /// factorization (pdgeqrf, Qᵀ·B, R·X = (Qᵀ·B)(1:N)); for M < N the
    /// minimum-norm solution of A·X = B through the QR of Aᵀ. With --ft
    /// pdgels_ft: pdgeqrf_ft's protected factors and a protected solve,
    /// taking kills R@gels:STEP:PHASE; the time and Gflop/s count the
    /// factorization and the solve together, and the solve alone (Qᵀ·B
    /// and R·X, or Rᵀ·Y and Q·[Y; 0]; with --ft with its recoveries) is
    /// timed on rank 0 too: solve_s, the "solve (pdgels…)" line. Reports
    /// LAPACK's checks as lstsq_residual, small (< 16) when correct: for
    /// M ≥ N dqrt17,
    /// ‖Aᵀ(B−A·X)‖₁/(max(M,N,NRHS)·‖A‖₁·‖B‖₁·eps) (X solves the normal
    /// equations); for M < N the larger of dqrt16's
    /// ‖A·X−B‖₁/(‖A‖₁·‖X‖₁·N·eps) and dqrt14's row-space test
    /// ‖X−P·X‖_F/(‖X‖_F·N·eps), P·X the minimum-norm solution of
    /// A·Z = A·X (X has no part in A's null space).
    #[arg(long)]
    pub lstsq: bool,
    #[command(flatten)]
    pub system: SolveArgs,
    /// How the panels are factored: auto (TSQR on grids with several process
    /// rows, where it measured faster) | householder (ScaLAPACK's PDGEQR2
    /// panel) | tsqr (TSQR with Householder reconstruction: ScaLAPACK's R, V
    /// and tau up to rounding, but a row of R whose column is already zero
    /// below the diagonal may change sign)
    #[arg(long, value_name = "METHOD", default_value = "auto")]
    pub panel: scalapack_ft::qr::PanelMethod,
    #[command(flatten)]
    pub ft: FtArgs,
    #[command(flatten)]
    pub launch: LaunchArgs,
}

/// `ftla lu`.
#[derive(Args, Debug, Clone)]
#[command(
    mut_arg("n", |a| help(a, "Columns of the generated matrix A; with the default --m, the order of a square A \
        (required unless --input)")),
    mut_arg("m", |a| help(a, "Rows of the generated matrix A (default N; --solve needs M = N)")),
    mut_arg("matrix", |a| help(a, "Generated matrix: dd (diagonally dominant, default) | uniform | spd | poisson2d | \
        cond:C")),
    mut_arg("input", |a| help(a, "Factor the matrix in FILE (.npy <f8, or .mtx array) instead of a generated one")),
    mut_arg("output", |a| help(a, "Write the factored matrix in ScaLAPACK's layout (L below the diagonal, unit \
        diagonal implied, U on and above it) to FILE (.npy or .mtx), and the pivots (0-based global rows) to \
        FILE.ipiv.npy")),
    mut_arg("check", |a| help(a, "Compute ScaLAPACK's residual check ‖PA−LU‖₁/(‖A‖₁·max(M,N)·eps)")),
    mut_arg("ft", |a| help(a, "Fault-tolerant LU, pdgetrf_ft: reverse-neighboring checksums carried through the row \
        interchanges, a commit per panel, lost processes repaired in place and their blocks rebuilt; the pivots \
        are pdgetrf's")),
    mut_arg("kill", |a| help(a, LU_KILL)),
    mut_arg("compare", |a| help(a, "With --ft: also time the plain LU (pdgetrf) and a failure-free pdgetrf_ft in the \
        same job")),
    mut_arg("verify", |a| help(a, "With --ft: recompute every checksum of the factored matrix at the end and compare")),
    mut_arg("corrupt", |a| help(a, "With --ft: add 1.0 to one element of rank R's blocks at step STEP (a silent \
        error for --verify to report)")),
    // The solve.
    mut_arg("nrhs", |a| help(a, "With --solve: the columns of B (default 1; with --rhs, the file's)")),
    mut_arg("rhs", |a| help(a, "With --solve: read B (N×NRHS, or of length N for one column) from FILE (.npy <f8, \
        or .mtx array) instead of generating it (entries uniform in [−0.5, 0.5) from --seed)")),
    mut_arg("solution", |a| help(a, "With --solve: write the solution X (N×NRHS, or of length N for one column) to \
        FILE (.npy, or .mtx)")),
)]
pub struct LuArgs {
    #[command(flatten)]
    pub matrix: MatrixArgs,
    /// Solve A·X = B with the factors (pdgetrs; with --ft pdgetrs_ft on
    /// the protected factors of pdgetrf_ft, taking kills
    /// R@getrs:STEP:PHASE) and report ScaLAPACK's solve residual
    /// solve_residual = ‖A·X−B‖₁/(‖A‖₁·‖X‖₁·N·eps), norm-wise over all
    /// NRHS columns at once (matrix 1-norms: largest column sums). The
    /// time and Gflop/s are then those of the factorization and the solve
    /// together.
    #[arg(long)]
    pub solve: bool,
    #[command(flatten)]
    pub system: SolveArgs,
    #[command(flatten)]
    pub ft: FtArgs,
    #[command(flatten)]
    pub launch: LaunchArgs,
}

/// `ftla chol`.
#[derive(Args, Debug, Clone)]
#[command(
    mut_arg("n", |a| help(a, "Order of the generated N×N matrix A (required unless --input)")),
    mut_arg("m", |a| help(a, "Rows of A: Cholesky factors a square A, so M must equal N (default N)")),
    mut_arg("matrix", |a| help(a, "Generated matrix: spd (symmetric uniform plus N on the diagonal, default) | \
        poisson2d | dd | uniform | cond:C (only symmetric positive definite ones factor)")),
    mut_arg("input", |a| help(a, "Factor the matrix in FILE (.npy <f8, or .mtx array) instead of a generated one \
        (its lower triangle is read)")),
    mut_arg("output", |a| help(a, "Write the factored matrix to FILE (.npy or .mtx): L in the lower triangle, the \
        upper one as given")),
    mut_arg("check", |a| help(a, "Compute ScaLAPACK's residual check ‖A−LLᵀ‖₁/(‖A‖₁·N·eps)")),
    mut_arg("ft", |a| help(a, "Fault-tolerant Cholesky, pdpotrf_ft: checksums of the lower triangle carried through \
        the symmetric update, a commit per block column, lost processes repaired in place and their blocks of the \
        lower triangle rebuilt; with --solve, pdpotrs_ft on the protected factor")),
    mut_arg("kill", |a| help(a, CHOL_KILL)),
    mut_arg("compare", |a| help(a, "With --ft: also time the plain Cholesky (pdpotrf) and a failure-free pdpotrf_ft \
        in the same job")),
    mut_arg("verify", |a| help(a, "With --ft: recompute every checksum of the factored matrix at the end and compare")),
    mut_arg("corrupt", |a| help(a, "With --ft: add 1.0 to one element of rank R's blocks at step STEP (a silent \
        error for --verify to report)")),
    mut_arg("nrhs", |a| help(a, "With --solve: the columns of B (default 1; with --rhs, the file's)")),
    mut_arg("rhs", |a| help(a, "With --solve: read B (N×NRHS, or of length N for one column) from FILE (.npy <f8, \
        or .mtx array) instead of generating it (entries uniform in [−0.5, 0.5) from --seed)")),
    mut_arg("solution", |a| help(a, "With --solve: write the solution X (N×NRHS, or of length N for one column) to \
        FILE (.npy, or .mtx)")),
)]
pub struct CholArgs {
    #[command(flatten)]
    pub matrix: MatrixArgs,
    /// Solve A·X = B with the factor (pdpotrs; with --ft pdpotrs_ft on the
    /// protected factor of pdpotrf_ft, taking kills R@potrs:STEP:PHASE)
    /// and report ScaLAPACK's solve residual
    /// solve_residual = ‖A·X−B‖₁/(‖A‖₁·‖X‖₁·N·eps). The
    /// time and Gflop/s are then those of the factorization and the solve
    /// together.
    #[arg(long)]
    pub solve: bool,
    #[command(flatten)]
    pub system: SolveArgs,
    #[command(flatten)]
    pub ft: FtArgs,
    #[command(flatten)]
    pub launch: LaunchArgs,
}

/// `ftla cg`.
#[derive(Args, Debug, Clone)]
#[command(
    mut_arg("n", |a| help(a, "Order of the generated N×N matrix A, and the length of b and x (required unless \
        --input)")),
    mut_arg("m", |a| help(a, "Rows of A: CG needs a square A, so M must equal N (default N)")),
    mut_arg("matrix", |a| help(a, "Generated A: poisson2d (the 2-D Poisson matrix, default) | spd (both symmetric \
        positive definite, as CG needs) | uniform | dd | cond:C (not symmetric: CG reports a breakdown or no \
        convergence)")),
    mut_arg("input", |a| help(a, "Solve with the symmetric positive definite matrix A in FILE (.npy <f8, or .mtx \
        array) instead of a generated one")),
    mut_arg("output", |a| help(a, "Write the solution x (N×1) to FILE (.npy or .mtx)")),
    mut_arg("check", |a| help(a, "Accepted for the same command line as qr and lu: the solve always recomputes the \
        true residual ‖b−Ax‖/‖b‖ and checks it against 10·TOL")),
    mut_arg("ft", |a| help(a, "Fault-tolerant CG, pdcg_ft: checksums of A, a commit per iteration, lost processes \
        repaired in place (no rollback), every matrix-vector product checked for silent errors")),
    mut_arg("kill", |a| help(a, CG_KILL)),
    mut_arg("compare", |a| help(a, "With --ft: also time the plain solve (pdcg) and a failure-free pdcg_ft in the \
        same job, with the iterations of each")),
    mut_arg("verify", |a| help(a, "With --ft: recompute the checksums of A at the end and compare")),
    mut_arg("corrupt", |a| help(a, "With --ft: add 1.0 to rank R's matrix-vector product of iteration STEP, which \
        the checksums catch and recompute (reported as a detection)")),
)]
pub struct CgArgs {
    #[command(flatten)]
    pub matrix: MatrixArgs,
    /// Stop when ‖r‖ ≤ TOL·‖b‖ (the recurrence's residual).
    #[arg(long, value_name = "T", default_value_t = 1e-8)]
    pub tol: f64,
    /// At most K iterations (default: N).
    #[arg(long, value_name = "K")]
    pub maxit: Option<u64>,
    /// Jacobi preconditioning (z = diag(A)⁻¹·r).
    #[arg(long)]
    pub jacobi: bool,
    #[command(flatten)]
    pub ft: FtArgs,
    #[command(flatten)]
    pub launch: LaunchArgs,
}

/// How the demo's lost rank is replaced.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DemoScenario {
    /// A hot spare parked at start-up takes the lost rank's place.
    Spare,
    /// MPI_Comm_spawn starts a new process in the lost rank's place.
    Spawn,
    /// A lost node: the whole job ends, no process survives; a new job
    /// resumes it from its periodic checkpoint on a smaller grid.
    Node,
    /// The three scenarios, one after the other.
    #[value(alias = "both")]
    All,
}

/// `ftla demo`.
#[derive(Args, Debug, Clone)]
pub struct DemoArgs {
    /// Process grid, Q ≥ 2.
    #[arg(long, value_name = "PxQ", default_value = "2x2", value_parser = parse_grid)]
    pub grid: GridShape,
    /// Order of the generated matrix.
    #[arg(long, value_name = "N", default_value_t = 2048, value_parser = clap::value_parser!(u64).range(1..))]
    pub n: u64,
    /// Block size.
    #[arg(long, value_name = "NB", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    pub nb: u64,
    /// Grid rank SIGKILLed halfway through.
    #[arg(long, value_name = "R", default_value_t = 1)]
    pub kill: i32,
    /// How the loss is recovered: spare (a parked hot spare, milliseconds), spawn (a new process
    /// started by MPI_Comm_spawn, about a second), node (the whole job lost, as with a lost node, and
    /// resumed from its periodic checkpoint on a smaller grid), or all three, one after the other
    /// (default).
    #[arg(long, value_enum, default_value = "all")]
    pub scenario: DemoScenario,
    /// Hot spares parked in the spare scenario (the spawn scenario has none).
    #[arg(long, value_name = "S", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub spares: u32,
    /// Write the results as JSON to FILE (with --scenario all: the spare scenario's; the spawn
    /// and node scenarios' to FILE with the extensions .spawn.json and .node.json).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub launch: LaunchArgs,
}

/// `ftla grid-demo`.
#[derive(Args, Debug, Clone)]
pub struct GridDemoArgs {
    /// Process grid.
    #[arg(long, value_name = "PxQ", default_value = "2x2", value_parser = parse_grid)]
    pub grid: GridShape,
    /// Grid rank to SIGKILL.
    #[arg(long, value_name = "R", default_value_t = 1, conflicts_with = "no_kill")]
    pub kill: i32,
    /// Run without killing anyone.
    #[arg(long)]
    pub no_kill: bool,
    /// Step at which the rank dies.
    #[arg(long, value_name = "K", default_value_t = 2)]
    pub step: u64,
    /// Number of steps.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub steps: u64,
    /// Hot spares parked at start-up (default 0: spawn).
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub spares: u32,
    #[command(flatten)]
    pub launch: LaunchArgs,
}

/// `ftla repair`.
#[derive(Args, Debug, Clone)]
pub struct RepairArgs {
    /// Process grid.
    #[arg(long, value_name = "PxQ", default_value = "2x2", value_parser = parse_grid)]
    pub grid: GridShape,
    /// Hot spares parked at start-up (default 0: spawn).
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub spares: u32,
    /// Grid ranks SIGKILLed in each repetition (default 1).
    #[arg(long, value_name = "R[,R...]", value_parser = parse_ranks)]
    pub kill: Option<RankList>,
    /// Repetitions: kill, repair, verify.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(i64).range(1..))]
    pub reps: i64,
    /// When no spare is left, go on as a smaller grid of the survivors
    /// instead of spawning (SHRINK); the survivors left without a place
    /// park as spares. `--kill` then names ranks of the grid of each
    /// repetition.
    #[arg(long)]
    pub shrink: bool,
    /// Write the timings as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub launch: LaunchArgs,
}

/// The baseline library.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Library {
    /// Debian's libscalapack-openmpi.
    Scalapack,
}

/// The factorizations of the baseline.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FactorArg {
    Qr,
    Lu,
    Chol,
}

impl From<FactorArg> for Op {
    fn from(o: FactorArg) -> Op {
        match o {
            FactorArg::Qr => Op::Qr,
            FactorArg::Lu => Op::Lu,
            FactorArg::Chol => Op::Chol,
        }
    }
}

/// The operations of the soak and the scaling runs.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpArg {
    Qr,
    Lu,
    Cg,
    Chol,
}

impl From<OpArg> for Op {
    fn from(o: OpArg) -> Op {
        match o {
            OpArg::Qr => Op::Qr,
            OpArg::Lu => Op::Lu,
            OpArg::Cg => Op::Cg,
            OpArg::Chol => Op::Chol,
        }
    }
}

/// `ftla baseline scalapack qr|lu`.
#[derive(Args, Debug, Clone)]
pub struct BaselineArgs {
    /// The library.
    #[arg(value_enum)]
    pub library: Library,
    /// The factorization.
    #[arg(value_enum)]
    pub op: FactorArg,
    /// Process grid, row-major.
    #[arg(long, value_name = "PxQ", value_parser = parse_grid)]
    pub grid: GridShape,
    /// Columns (LU: the order of the square matrix).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=i32::MAX as u64))]
    pub n: u64,
    /// Rows (default N; QR only, LU is square).
    #[arg(long, value_name = "M", value_parser = clap::value_parser!(u64).range(1..=i32::MAX as u64))]
    pub m: Option<u64>,
    /// Block size of the 2-D block-cyclic layout.
    #[arg(long, value_name = "NB", value_parser = clap::value_parser!(u64).range(1..=i32::MAX as u64))]
    pub nb: u64,
    /// Seed of the uniform [-0.5, 0.5) test matrix.
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Kill the job after SECS seconds, exit code 124 (0: none).
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub timeout: u64,
}

/// `ftla soak`.
#[derive(Args, Debug, Clone)]
pub struct SoakArgs {
    /// Number of random runs.
    #[arg(long, value_name = "N", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub runs: u64,
    /// Seed of the random choices (the same seed gives the same runs).
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
    /// The operation to soak (its fault-tolerant driver).
    #[arg(long, value_enum, default_value = "qr")]
    pub op: OpArg,
    /// Seconds after which one run counts as hung (it is then killed).
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    pub run_timeout: u64,
    /// The recovery policy of every run (inplace, cof, auto, shrink; with cof no
    /// spares are drawn).
    #[arg(long, value_name = "POLICY", default_value = "inplace", value_parser = parse_policy)]
    pub recovery: Policy,
    /// Write every run and the counts as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// The checksum layout of every run (as `ftla qr --ft --layout`).
    #[arg(long, value_name = "LAYOUT", value_enum, default_value_t = LayoutArg::ReverseNeighbor)]
    pub layout: LayoutArg,
    /// With --layout rotating: checksums per group F (1 to 3; default 1);
    /// with F > 1 up to F + 1 losses per process row are drawn at once.
    #[arg(long, value_name = "F", value_parser = clap::value_parser!(u64).range(1..=3))]
    pub checksums: Option<u64>,
}

/// Strong or weak scaling.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleMode {
    /// The same N at every point.
    Strong,
    /// N grows with the ranks: the same memory per rank.
    Weak,
}

/// `ftla scale`.
#[derive(Args, Debug, Clone)]
pub struct ScaleArgs {
    /// The operation.
    #[arg(long, value_enum)]
    pub op: OpArg,
    /// Strong (fixed N) or weak (fixed N²/ranks) scaling.
    #[arg(long, value_enum)]
    pub mode: ScaleMode,
    /// Rank counts, one job each (e.g. 1,2,4,8,16).
    #[arg(long, value_name = "R,R,...", value_delimiter = ',', required = true,
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub ranks: Vec<u32>,
    /// Strong scaling: the order of the matrix.
    #[arg(long, value_name = "N", conflicts_with = "n_per_rank", required_unless_present = "n_per_rank")]
    pub n: Option<usize>,
    /// Weak scaling: N = this · √ranks at every point (the matrix memory
    /// per rank of this N on one rank).
    #[arg(long, value_name = "N")]
    pub n_per_rank: Option<usize>,
    /// Block size.
    #[arg(long, value_name = "NB", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    pub nb: u64,
    /// Also run every point fault-tolerant (pdgeqrf_ft, pdgetrf_ft, pdcg_ft or pdpotrf_ft; grids with Q ≥ 2), and
    /// report the overhead against the plain run and its model.
    #[arg(long)]
    pub ft: bool,
    /// With --ft: kills in every FT run of every point (ftla qr|lu|cg|chol --kill).
    #[arg(long, value_name = "R@STEP:PHASE[,...]", requires = "ft", value_parser = parse_kills)]
    pub kill: Option<Injector>,
    /// Repetitions per point and kind; the median time is reported.
    #[arg(long, value_name = "R", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub reps: u64,
    /// A hostfile for the launcher (passed through FTLA_MPIEXEC_ARGS).
    #[arg(long, value_name = "FILE")]
    pub hostfile: Option<PathBuf>,
    /// Write the points as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the points as CSV to FILE (one row per point).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Draw Gflop/s and parallel efficiency against ranks to FILE.svg.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Seconds after which one job is killed.
    #[arg(long, value_name = "SECS", default_value_t = 1800)]
    pub timeout: u64,
}

/// A usage error found after parsing, reported as clap reports its own
/// (exit code 2), naming the subcommand.
pub fn usage_error(subcommand: &str, message: impl std::fmt::Display) -> ! {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let sub = cmd.find_subcommand_mut(subcommand).cloned();
    let mut sub = sub.unwrap_or(cmd).bin_name(format!("ftla {subcommand}"));
    sub.error(clap::error::ErrorKind::ValueValidation, message).exit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(words: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("ftla").chain(words.split_whitespace()))
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    /// The kill help of each command names its routines' phases as the
    /// catalogue of drivers has them (`panel, bcast, update or commit`),
    /// and the kill operations of the solves it runs.
    #[test]
    fn the_kill_help_follows_the_catalogue_of_drivers() {
        use scalapack_ft::drivers::{self, Driver};
        let in_words = |d: &Driver| {
            let names: Vec<&str> = d.step_phases.iter().map(|p| p.name()).collect();
            format!("{} or commit", names.join(", "))
        };
        for (help, driver, solves) in [
            (QR_KILL, &drivers::PDGEQRF_FT, &[&drivers::PDORMQR_FT, &drivers::UPPER_SOLVE_FT, &drivers::PDGELS_FT][..]),
            (LU_KILL, &drivers::PDGETRF_FT, &[&drivers::PDGETRS_FT][..]),
            (CG_KILL, &drivers::PDCG_FT, &[][..]),
            (CHOL_KILL, &drivers::PDPOTRF_FT, &[&drivers::PDPOTRS_FT][..]),
        ] {
            // (LU's swap is explained where it is named.)
            let text = help.replace("swap (the row interchanges)", "swap");
            assert!(text.contains(&in_words(driver)), "{}: {help}", driver.routine);
            for s in solves {
                assert!(help.contains(&format!("R@{}:STEP:PHASE", s.kill_op)), "{}: {help}", s.routine);
            }
        }
    }

    #[test]
    fn parses_grids_kinds_and_lists() {
        assert_eq!(parse_grid("2x3"), Ok(GridShape { p: 2, q: 3 }));
        for g in ["2", "0x2", "ax2", "2x-1", "100x100"] {
            assert!(parse_grid(g).is_err(), "{g}");
        }
        assert_eq!(parse_kind("cond:100"), Ok(MatrixKind::Conditioned { cond: 100.0 }));
        assert!(parse_kind("cond:0.5").is_err());
        let Command::Repair(r) = parse("repair --grid 2x3 --kill 0,3").unwrap().command else { panic!() };
        assert_eq!((r.grid, r.kill), (GridShape { p: 2, q: 3 }, Some(RankList(vec![0, 3]))));
        let Command::Scale(s) = parse("scale --op qr --mode strong --ranks 1,2,4 --n 512").unwrap().command else {
            panic!()
        };
        assert_eq!(s.ranks, [1, 2, 4]);
    }

    #[test]
    fn kill_points_are_parsed_by_clap() {
        let Command::Qr(a) = parse("qr --ft --n 10 --kill 1@5:update,4@qr:15:panel/1").unwrap().command else {
            panic!()
        };
        let kills = a.ft.kill.unwrap();
        assert_eq!(kills.specs().len(), 2);
        assert_eq!((kills.specs()[1].op.as_deref(), kills.specs()[1].epoch), (Some("qr"), Some(1)));
        for bad in ["1", "x@3", "1@3/x", "1@a:b:c:d"] {
            let e = parse(&format!("qr --ft --n 10 --kill {bad}")).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{bad}");
            assert!(e.to_string().contains("expected RANK@[OP:]STEP[:PHASE][/EPOCH]"), "{e}");
        }
        let e = parse("scale --op qr --mode strong --ranks 2 --n 64 --ft --kill 1@").unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation);
    }

    #[test]
    fn options_that_need_another_are_refused() {
        for bad in [
            "qr --n 10 --kill 1@2:panel",
            "qr --n 10 --ft --reps 3",
            "qr --grid 2x2",
            "lu --n 10 --kill 1@2:panel",
            "repair --reps 0",
            "scale --op qr --mode weak --ranks 1,2",
            "scale --op qr --mode strong --ranks 1,2 --n 5 --n-per-rank 5",
            "baseline scalapack qr --n 10 --nb 2",
            "baseline elemental qr --grid 1x2 --n 10 --nb 2",
        ] {
            assert!(parse(bad).is_err(), "`{bad}` was accepted");
        }
    }
}
