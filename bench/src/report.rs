//! The reports the `ftla` tool writes as JSON, one serializable type per
//! command family, and the one flop count every rate is computed from.
//!
//! * [`FactorReport`]: `ftla qr|lu` (plain and `--ft`) and `ftla baseline`;
//! * [`RepairRunReport`]: `ftla repair`;
//! * [`ScaleReport`]: `ftla scale` (one [`ScalePoint`] per job);
//! * [`SoakReport`]: `ftla soak`.
//!
//! Field names are the documented JSON keys; optional fields are left out
//! when they do not apply (no `orthogonality` for LU, no `recoveries`
//! without `--ft`). Times are seconds (`*_s`) or milliseconds (`*_ms`,
//! rounded to the microsecond); a NaN is written as `null`.

use serde::{Deserialize, Serialize};

/// An operation the tool runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// `pdgeqrf` / `pdgeqrf_ft`.
    Qr,
    /// `pdgetrf`.
    Lu,
    /// `pdcg` / `pdcg_ft`: conjugate gradients.
    Cg,
    /// `pdpotrf`: Cholesky, A = L·Lᵀ.
    Chol,
}

impl Op {
    /// Lower-case name (`qr`, `lu`, `cg`, `chol`).
    pub fn name(self) -> &'static str {
        match self {
            Op::Qr => "qr",
            Op::Lu => "lu",
            Op::Cg => "cg",
            Op::Chol => "chol",
        }
    }

    /// The operation named `name` ([`Op::name`]'s inverse).
    pub fn parse(name: &str) -> Option<Op> {
        [Op::Qr, Op::Lu, Op::Cg, Op::Chol].into_iter().find(|op| op.name() == name)
    }

    /// The fault-tolerant routine of `ftla OP --ft`, in the catalogue of
    /// drivers.
    pub fn ft_driver(self) -> &'static scalapack_ft::drivers::Driver {
        use scalapack_ft::drivers;
        match self {
            Op::Qr => &drivers::PDGEQRF_FT,
            Op::Lu => &drivers::PDGETRF_FT,
            Op::Cg => &drivers::PDCG_FT,
            Op::Chol => &drivers::PDPOTRF_FT,
        }
    }

    /// The fault-tolerant solve with the factors of `ftla OP --ft` with
    /// `--solve` (`--lstsq` for QR), in the catalogue of drivers.
    pub fn ft_solve_driver(self) -> Option<&'static scalapack_ft::drivers::Driver> {
        use scalapack_ft::drivers;
        match self {
            Op::Qr => Some(&drivers::PDGELS_FT),
            Op::Lu => Some(&drivers::PDGETRS_FT),
            Op::Chol => Some(&drivers::PDPOTRS_FT),
            Op::Cg => None,
        }
    }

    /// Floating-point operations of the factorization of an `m`×`n`
    /// matrix: the leading terms of LAPACK's counts, 2MN² − 2N³/3 for QR
    /// (M ≥ N) and MN² − N³/3 for LU (2N³/3 when square), with M and N
    /// swapped when M < N; N³/3 for Cholesky. For CG, whose count depends on its iterations,
    /// one matrix-vector product (2N²); see [`scalapack_ft::cg::cg_flops`].
    pub fn flops(self, m: usize, n: usize) -> f64 {
        let (m, n) = (m as f64, n as f64);
        let (big, small) = if m >= n { (m, n) } else { (n, m) };
        match self {
            Op::Qr => 2.0 * big * small * small - 2.0 * small * small * small / 3.0,
            Op::Lu => big * small * small - small * small * small / 3.0,
            Op::Cg => 2.0 * m * n,
            Op::Chol => small * small * small / 3.0,
        }
    }
}

/// A residual that was computed (a number; NaN is written `null`) or not
/// asked for (the string `"not checked"`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Checked {
    /// The scaled residual.
    Value(f64),
    /// `--check` was not given.
    NotChecked,
}

const NOT_CHECKED: &str = "not checked";

impl Checked {
    /// The value, if computed.
    pub fn value(self) -> Option<f64> {
        match self {
            Checked::Value(v) => Some(v),
            Checked::NotChecked => None,
        }
    }
}

impl From<Option<f64>> for Checked {
    fn from(v: Option<f64>) -> Checked {
        v.map_or(Checked::NotChecked, Checked::Value)
    }
}

impl Serialize for Checked {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Checked::Value(v) => v.serialize(s),
            Checked::NotChecked => s.serialize_str(NOT_CHECKED),
        }
    }
}

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Checked, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(Option<f64>),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Num(v) => Ok(Checked::Value(v.unwrap_or(f64::NAN))),
            Raw::Text(t) if t == NOT_CHECKED => Ok(Checked::NotChecked),
            Raw::Text(t) => Err(serde::de::Error::custom(format!("unexpected residual `{t}`"))),
        }
    }
}

/// Reads a number that may have been written as `null` (a NaN: a time
/// nobody could measure, a rate of an unknown time).
fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Milliseconds rounded to the microsecond, as every `*_ms` field is
/// written.
pub fn round_ms(ms: f64) -> f64 {
    (ms * 1e3).round() / 1e3
}

/// One recovery of a fault-tolerant factorization, the same on every rank.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecoveryEntry {
    /// The first rebuilt rank (`ranks[0]`).
    pub rank: i32,
    /// Grid ranks whose blocks were rebuilt.
    pub ranks: Vec<i32>,
    /// Committed steps when the failure was handled (the step redone).
    pub step: u64,
    /// Phase in which the failure surfaced.
    pub phase: String,
    /// `spawn`, `spare`, `shrink`, `cof` or `resume`.
    pub mode: String,
    pub detect_ms: f64,
    pub repair_ms: f64,
    pub rebuild_ms: f64,
    pub total_ms: f64,
    /// Checkpoint-on-failure (`mode` `cof`): writing the checkpoints, the
    /// old job's end and the new one's start, reading them (`repair_ms` is
    /// their sum).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relaunch_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_ms: Option<f64>,
    /// A shrink (`mode` `shrink`): the grid before and after it (`"PxQ"`)
    /// and the rebuild onto survivors, the moving of the blocks onto the
    /// new grid and the checksums' encoding there (part of `rebuild_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid_before: Option<blacs_ft::GridShape>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid_after: Option<blacs_ft::GridShape>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redistribute_ms: Option<f64>,
}

impl From<&recovery::protocol::RecoveryRecord> for RecoveryEntry {
    fn from(r: &recovery::protocol::RecoveryRecord) -> RecoveryEntry {
        RecoveryEntry {
            rank: r.ranks.first().copied().unwrap_or(-1),
            ranks: r.ranks.clone(),
            step: r.step,
            phase: r.phase.name().to_string(),
            mode: r.mode.as_str().to_string(),
            detect_ms: round_ms(r.detect_ms),
            repair_ms: round_ms(r.repair_ms),
            rebuild_ms: round_ms(r.rebuild_ms),
            total_ms: round_ms(r.total_ms),
            save_ms: r.cof.map(|c| round_ms(c.save_ms)),
            relaunch_ms: r.cof.map(|c| round_ms(c.relaunch_ms)),
            load_ms: r.cof.map(|c| round_ms(c.load_ms)),
            grid_before: r.shrink.map(|s| s.grid_before),
            grid_after: r.shrink.map(|s| s.grid_after),
            redistribute_ms: r.shrink.map(|s| round_ms(s.redistribute_ms)),
        }
    }
}

/// One periodic checkpoint of the run, the same on every rank.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckpointEntry {
    /// The routine's committed steps saved.
    pub step: u64,
    /// Bytes written, every rank's file together.
    pub bytes: u64,
    /// From the commit to the save complete on every rank.
    pub write_ms: f64,
}

/// A repair after which a call started again from its input (a process
/// lost before the call's checksums existed, or between the
/// factorization and the solve): nothing was rebuilt, but the grid was
/// repaired.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RestartEntry {
    /// The lost grid ranks.
    pub ranks: Vec<i32>,
    /// `spawn`, `spare` (or `cof` for a job started again from the top).
    pub mode: String,
    pub repair_ms: f64,
    /// What started again: `factorization` or `solve`.
    pub restarted: String,
    /// A repair that shrank the grid (mode `shrink`): the grids before
    /// and after it ("PxQ"; null otherwise). (No field is skipped: the
    /// entries also travel between processes in the one binary codec.)
    #[serde(default)]
    pub grid_before: Option<blacs_ft::GridShape>,
    #[serde(default)]
    pub grid_after: Option<blacs_ft::GridShape>,
}

/// `--compare`: the plain run, the failure-free fault-tolerant run and
/// (with kills) the run with the failure, timed in the same job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompareReport {
    /// Median of `nonft_times_s`.
    pub nonft_time_s: f64,
    /// Median of `ft_times_s`.
    pub ft_time_s: f64,
    /// The flop model of the failure-free FT runs (their checksum layout's,
    /// the run's): what `paired_overhead` is held against.
    #[serde(default)]
    pub ft_overhead_model: f64,
    /// Repetitions.
    pub reps: usize,
    pub nonft_times_s: Vec<f64>,
    pub ft_times_s: Vec<f64>,
    /// Median of the per-repetition ratios FT/plain, minus 1.
    pub paired_overhead: f64,
    /// Median of `ft_with_failure_times_s`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ft_with_failure_time_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ft_with_failure_times_s: Option<Vec<f64>>,
    /// Median of the per-repetition ratios with-failure/failure-free, minus 1.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub paired_failure_overhead: Option<f64>,
    /// CG: the iterations of each plain, failure-free FT and FT-with-the-
    /// failure run.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub iterations_nonft: Option<Vec<u64>>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub iterations_ft: Option<Vec<u64>>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub iterations_with_failure: Option<Vec<u64>>,
    /// Grid rank 0's seconds per part (phase name → seconds, as
    /// `phases_s`), medians over the repetitions, of the plain and of the
    /// failure-free FT runs.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub phases_nonft_s: Option<std::collections::BTreeMap<String, f64>>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub phases_ft_s: Option<std::collections::BTreeMap<String, f64>>,
}

/// The report of one factorization run: `ftla qr|lu` (plain or `--ft`)
/// or `ftla baseline scalapack qr|lu`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FactorReport {
    /// `qr`, `lu`, or `baseline scalapack qr|lu`.
    pub command: String,
    /// The baseline library (baseline runs only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub library: Option<String>,
    /// `true` for a fault-tolerant run.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ft: Option<bool>,
    /// Process grid `[P, Q]` (the one the run started on).
    pub grid: [i32; 2],
    /// The grid the run ended on, when a shrink (`--recovery shrink`)
    /// changed it: `"PxQ"`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub final_grid: Option<blacs_ft::GridShape>,
    /// Hot spares (fault-tolerant runs).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub spares: Option<i32>,
    pub m: usize,
    pub n: usize,
    pub nb: usize,
    /// Seed of the generated matrix (baseline runs).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub seed: Option<u64>,
    /// Wall time of the factorization, the slowest rank's (`null` when
    /// every process that started the clock was replaced).
    #[serde(deserialize_with = "nan_if_null")]
    pub time_s: f64,
    /// [`Op::flops`] / `time_s`, in Gflop/s.
    #[serde(deserialize_with = "nan_if_null")]
    pub gflops: f64,
    /// ScaLAPACK's scaled residual (‖A − QR‖ or ‖PA − LU‖).
    pub residual: Checked,
    /// QR only: ‖I − QᵀQ‖₁ / (M·eps).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub orthogonality: Option<Checked>,
    /// LU with `--solve`: ScaLAPACK's ‖A·x − b‖₁ / (‖A‖₁·‖x‖₁·N·eps) of the
    /// solve with the factors.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub solve_residual: Option<f64>,
    /// ScaLAPACK's INFO of a factorization that found its matrix singular
    /// (LU: the 1-based index of the zero pivot) or not positive definite
    /// (Cholesky: the order of the first leading minor that is not); absent
    /// when INFO = 0.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub info: Option<i32>,
    /// LU with `--solve`, QR with `--lstsq`: seconds of the solve alone
    /// (`pdgetrs`, or `pdgetrs_ft` with its recoveries; `pdgels`'s part
    /// after its factorization, or `pdgels_ft`'s protected solve with its
    /// recoveries), on grid rank 0.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub solve_s: Option<f64>,
    /// QR with `--lstsq`: LAPACK's least-squares check (dqrt17)
    /// ‖Aᵀ(B − A·X)‖₁ / (max(M, N, NRHS)·‖A‖₁·‖B‖₁·eps).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub lstsq_residual: Option<f64>,
    /// LU with `--solve`, QR with `--lstsq`: the columns of B and X.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub nrhs: Option<usize>,
    /// Local DGEMM rate per rank, measured in the same run.
    #[serde(deserialize_with = "nan_if_null")]
    pub dgemm_gflops: f64,
    /// The order of the square DGEMM that measured it (1024, smaller for
    /// a run of fewer flops than the measurement's).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub dgemm_order: Option<usize>,
    /// The OpenBLAS kernel that ran.
    pub blas_kernel: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub blas_threads_per_rank: Option<u32>,
    /// Machine epsilon of the residuals (baseline runs).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub eps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub recoveries: Option<Vec<RecoveryEntry>>,
    /// Calls started again after a loss before the checksums existed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub restarts: Option<usize>,
    /// The repairs behind `restarts` (those in this job), oldest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_repairs: Option<Vec<RestartEntry>>,
    /// The periodic checkpoints this job saved (`--checkpoint-every`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoints: Option<Vec<CheckpointEntry>>,
    /// Their interval in force at the end, in seconds (with
    /// `--checkpoint-every auto`, Young and Daly's from the first one's
    /// cost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_interval_s: Option<f64>,
    /// How the grid ranks were placed on the nodes (`default`, `spread`:
    /// `--placement`), and the node of each grid rank at the start
    /// (numbered from 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<u32>>,
    /// Seconds per part of the main run on grid rank 0 (`panel`, `bcast`,
    /// `swap`, `update`, `encode`, `commit`, `wait` — in agreements —,
    /// `checkpoint`, `recovery`, …: `recovery::profile::Part`); they sum
    /// to its wall time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases_s: Option<std::collections::BTreeMap<String, f64>>,
    /// The committed steps this job resumed from (a periodic checkpoint or
    /// one saved on a failure): the work done before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_at_step: Option<u64>,
    /// Predicted extra trailing-update work of the checksums (fraction).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub overhead_model: Option<f64>,
    /// The checksum layout of a fault-tolerant run (`"ReverseNeighbor"`,
    /// or `{"Rotating": {"checksums": F}}`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub checksum_layout: Option<scalapack_ft::abft::LayoutKind>,
    /// `--verify`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub checksum_check: Option<scalapack_ft::abft::ChecksumCheck>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub compare: Option<CompareReport>,
    /// CG: iterations run.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub iterations: Option<u64>,
    /// CG: the tolerance was met within the iteration limit.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub converged: Option<bool>,
    /// CG: the true relative residual ‖b − A·x‖₂/‖b‖₂, recomputed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub relative_residual: Option<f64>,
    /// CG with --ft: the silent errors caught in matrix-vector products.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub detections: Option<Vec<scalapack_ft::cg::Detection>>,
    /// The residuals passed (< 16; CG: converged, and the true residual
    /// within 10·tol) and the checksums, where verified, held.
    pub ok: bool,
}

impl FactorReport {
    /// A report with the fields every run has; the optional ones empty.
    pub fn new(command: impl Into<String>, grid: [i32; 2], m: usize, n: usize, nb: usize) -> FactorReport {
        FactorReport {
            command: command.into(),
            library: None,
            ft: None,
            grid,
            final_grid: None,
            spares: None,
            m,
            n,
            nb,
            seed: None,
            time_s: 0.0,
            gflops: 0.0,
            residual: Checked::NotChecked,
            orthogonality: None,
            solve_residual: None,
            solve_s: None,
            lstsq_residual: None,
            nrhs: None,
            dgemm_gflops: 0.0,
            dgemm_order: None,
            blas_kernel: String::new(),
            blas_threads_per_rank: None,
            eps: None,
            recoveries: None,
            info: None,
            restarts: None,
            restart_repairs: None,
            checkpoints: None,
            checkpoint_interval_s: None,
            placement: None,
            nodes: None,
            phases_s: None,
            resumed_at_step: None,
            overhead_model: None,
            checksum_layout: None,
            checksum_check: None,
            compare: None,
            iterations: None,
            converged: None,
            relative_residual: None,
            detections: None,
            ok: false,
        }
    }

    /// Sets `time_s` and the rate of `op` on this report's shape.
    pub fn timed(&mut self, op: Op, seconds: f64) {
        self.timed_flops(op.flops(self.m, self.n), seconds);
    }

    /// Sets `time_s` and the rate of `flops` floating-point operations.
    pub fn timed_flops(&mut self, flops: f64, seconds: f64) {
        self.time_s = seconds;
        self.gflops = if seconds > 0.0 { flops / seconds / 1e9 } else { f64::NAN };
    }
}

/// `ftla repair`: repeated kill → repair → verify of a grid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RepairRunReport {
    /// `repair`.
    pub command: String,
    pub grid: [i32; 2],
    pub ok: bool,
    pub spares: i32,
    pub reps: i64,
    /// The MPI library's version line.
    pub mpi: String,
    pub median_total_ms: f64,
    /// Each repetition's repair: its mode, the ranks it replaced and the
    /// time of each phase (and a shrink's `grid_before`, `grid_after`).
    pub repairs: Vec<blacs_ft::RepairReport>,
    /// The grid at the end, when shrinks changed it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub final_grid: Option<blacs_ft::GridShape>,
}

/// One point of a scaling run: one job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScalePoint {
    /// Processes of the grid (spares not counted).
    pub ranks: usize,
    pub grid: [i32; 2],
    pub n: usize,
    pub nb: usize,
    /// Fault-tolerant run.
    pub ft: bool,
    /// Median time of the repetitions, seconds.
    pub time_s: f64,
    pub gflops: f64,
    pub tflops: f64,
    /// Against the smallest point of the same kind (plain or FT): strong
    /// scaling T₁·r₁/(T·r), weak scaling the Gflop/s per rank ratio.
    pub efficiency: f64,
    /// FT only: the time over the plain point of the same ranks, minus 1
    /// (when both ran).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub overhead: Option<f64>,
    /// FT only: the checksums' predicted extra work.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub overhead_model: Option<f64>,
    /// Recoveries during the point's runs.
    pub recoveries: usize,
    /// The run's residual checks passed.
    pub ok: bool,
}

/// `ftla scale`: a weak or strong scaling sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScaleReport {
    /// `scale`.
    pub command: String,
    pub op: Op,
    /// `strong` or `weak`.
    pub mode: String,
    pub blas_kernel: String,
    pub points: Vec<ScalePoint>,
    pub ok: bool,
}

/// How one soak run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SoakVerdict {
    /// Finished, results checked and right.
    Correct,
    /// Stopped, and said so on every survivor: a failure it could not
    /// recover from.
    ReportedUnrecoverable,
    /// Past its timeout.
    Hung,
    /// Finished with a wrong result (a residual ≥ 16), or ended without
    /// saying why.
    Wrong,
}

/// One run of `ftla soak`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoakRun {
    pub index: usize,
    /// The exact command, to run it again.
    pub command: String,
    pub verdict: SoakVerdict,
    /// Whether the kills could be recovered from (at most the layout's F
    /// losses per process row, one on the default layout).
    pub recoverable: bool,
    pub exit_code: Option<i32>,
    pub seconds: f64,
    /// Recoveries the run reported.
    pub recoveries: usize,
}

/// `ftla soak`: random kills, counted by how each run ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoakReport {
    /// `soak`.
    pub command: String,
    pub op: Op,
    pub seed: u64,
    pub runs: usize,
    pub correct: usize,
    pub reported_unrecoverable: usize,
    pub hung: usize,
    pub wrong: usize,
    /// No hang and no wrong answer.
    pub ok: bool,
    pub details: Vec<SoakRun>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flop_counts_follow_lapack() {
        assert_eq!(Op::Lu.flops(3, 3), 18.0);
        assert_eq!(Op::Qr.flops(3, 3), 2.0 * 27.0 - 18.0);
        assert_eq!(Op::Qr.flops(6, 3), 2.0 * 6.0 * 9.0 - 18.0);
        assert_eq!(Op::Qr.flops(3, 6), Op::Qr.flops(6, 3));
        assert_eq!(Op::Lu.flops(6, 3), 6.0 * 9.0 - 9.0);
    }

    #[test]
    fn residuals_are_numbers_null_or_not_checked() {
        let j = |c: Checked| serde_json::to_string(&c).unwrap();
        assert_eq!(j(Checked::Value(0.5)), "0.5");
        assert_eq!(j(Checked::Value(f64::NAN)), "null");
        assert_eq!(j(Checked::NotChecked), "\"not checked\"");
        for c in [Checked::Value(0.25), Checked::NotChecked] {
            assert_eq!(serde_json::from_str::<Checked>(&j(c)).unwrap(), c);
        }
        assert!(serde_json::from_str::<Checked>("null").unwrap().value().unwrap().is_nan());
    }

    #[test]
    fn restart_entries_survive_the_codec_between_processes() {
        let shrunk = RestartEntry {
            ranks: vec![4],
            mode: "shrink".into(),
            repair_ms: 2.5,
            restarted: "solve".into(),
            grid_before: Some(blacs_ft::GridShape { p: 2, q: 3 }),
            grid_after: Some(blacs_ft::GridShape { p: 2, q: 2 }),
        };
        let spawned = RestartEntry { mode: "spawn".into(), grid_before: None, grid_after: None, ..shrunk.clone() };
        let list = vec![shrunk, spawned];
        let back: Option<Vec<RestartEntry>> = recovery::codec::decode(&recovery::codec::encode(&list));
        assert_eq!(back, Some(list));
    }

    #[test]
    fn optional_fields_are_left_out() {
        let mut r = FactorReport::new("lu", [1, 2], 10, 10, 2);
        r.timed(Op::Lu, 0.5);
        let v: serde_json::Value = serde_json::to_value(&r).unwrap();
        let obj = v.as_object().unwrap();
        for absent in ["orthogonality", "recoveries", "compare", "ft", "library"] {
            assert!(!obj.contains_key(absent), "{absent} in {v}");
        }
        assert_eq!(v["grid"], serde_json::json!([1, 2]));
        assert_eq!(v["residual"], "not checked");
        approx::assert_relative_eq!(v["gflops"].as_f64().unwrap(), Op::Lu.flops(10, 10) / 0.5 / 1e9);
        let back: FactorReport = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }
}
