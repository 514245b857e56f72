//! `ftla baseline scalapack qr|lu|chol`: the distribution's ScaLAPACK as a baseline.
//!
//! Runs Debian's ScaLAPACK (`libscalapack-openmpi`, Open MPI 4.1, OpenBLAS)
//! PDGEQRF, PDGETRF or PDPOTRF on the same grid, size and block size as
//! `ftla qr|lu|chol`, on the same matrix (the `Uniform` generator kind, `Spd`
//! for chol), through the small C driver `bench/baseline/scalapack_driver.c`, and
//! reports the same JSON fields as our own factorizations.
//!
//! The driver is compiled on demand with `/usr/bin/mpicc.openmpi` into
//! `target/ftla-baseline/` (again whenever its source is newer) and launched
//! with `/usr/bin/mpirun.openmpi`, in an environment scrubbed of the
//! project's own Open MPI 5 (the `.venv` one, whose library is also named
//! `libmpi.so.40`): no `LD_LIBRARY_PATH`, `OPAL_PREFIX`, `OMPI_*`, `PMIX_*`,
//! `PRTE_*`, `OPAL_*`, and no `PATH` entry inside a virtual environment.
//! Where neither `ssh` nor `rsh` is on that `PATH` (containers, minimal
//! images), with `--mca plm isolated`: Open MPI 4.1's default launcher
//! refuses to start without one, even on one host.

use crate::cli::{BaselineArgs, Library};
use crate::problem::write_json;
use blacs_ft::launch::{run_with_timeout, EXIT_TIMEOUT};
use ftla_bench::report::{Checked, FactorReport, Op};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

/// The distribution's Open MPI 4.1 compiler wrapper and launcher.
const MPICC: &str = "/usr/bin/mpicc.openmpi";
const MPIRUN: &str = "/usr/bin/mpirun.openmpi";
/// What the JSON calls the library.
const LIBRARY: &str = "libscalapack-openmpi (Debian)";
const SETUP_HINT: &str = "run `scripts/setup.sh --scalapack` to install the distribution's ScaLAPACK";
/// Residuals (scaled by eps and the size) below this pass.
const RESIDUAL_OK: f64 = 16.0;

/// A validated `ftla baseline` run.
#[derive(Debug, PartialEq)]
pub struct BaselineJob {
    pub op: Op,
    pub p: i32,
    pub q: i32,
    pub m: u64,
    pub n: u64,
    pub nb: u64,
    pub seed: u64,
    pub json: Option<PathBuf>,
    /// `None`: no timeout.
    pub timeout: Option<Duration>,
}

/// Checks the arguments of `ftla baseline scalapack qr|lu|chol` (clap
/// checked each on its own).
fn validate(a: &BaselineArgs) -> Result<BaselineJob, String> {
    let Library::Scalapack = a.library;
    let op = Op::from(a.op);
    let m = a.m.unwrap_or(a.n);
    match op {
        Op::Qr => {}
        Op::Lu | Op::Chol if m != a.n => {
            return Err(format!("{} factors a square matrix: --m {m} differs from --n {}", op.name(), a.n));
        }
        Op::Lu | Op::Chol => {}
        Op::Cg => return Err("the ScaLAPACK baseline has no cg".to_string()),
    }
    Ok(BaselineJob {
        op,
        p: a.grid.p,
        q: a.grid.q,
        m,
        n: a.n,
        nb: a.nb,
        seed: a.seed,
        json: a.json.clone(),
        timeout: (a.timeout > 0).then(|| Duration::from_secs(a.timeout)),
    })
}

/// What the driver reported (its `FTLA_BASELINE key=value ...` line).
#[derive(Debug, PartialEq)]
pub struct DriverReport {
    pub op: Op,
    pub m: u64,
    pub n: u64,
    pub nb: u64,
    pub p: i32,
    pub q: i32,
    pub time_s: f64,
    pub residual: f64,
    /// QR only.
    pub orthogonality: Option<f64>,
    /// The eps of the scaled residuals (`PDLAMCH('P')` = 2⁻⁵²).
    pub eps: f64,
    pub dgemm_gflops: f64,
    pub blas_kernel: String,
}

fn parse_f64(key: &str, v: &str) -> Result<f64, String> {
    v.parse::<f64>().or_else(|_| {
        // C's printf writes NaN as `nan` or `-nan`.
        if v.trim_start_matches(['-', '+']).eq_ignore_ascii_case("nan") {
            Ok(f64::NAN)
        } else {
            Err(format!("driver output: {key}=`{v}` is not a number"))
        }
    })
}

/// Parses the driver's stdout: the `FTLA_BASELINE` line, or the message of
/// its `FTLA_BASELINE_ERROR` line as the error. Other lines are ignored.
fn parse_driver_output(stdout: &str) -> Result<DriverReport, String> {
    if let Some(e) = stdout.lines().find_map(|l| l.trim().strip_prefix("FTLA_BASELINE_ERROR")) {
        return Err(e.trim().to_string());
    }
    let line = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("FTLA_BASELINE "))
        .ok_or_else(|| "the driver printed no FTLA_BASELINE result line".to_string())?;
    let kv: BTreeMap<&str, &str> = line.split_whitespace().filter_map(|t| t.split_once('=')).collect();
    let get = |k: &str| kv.get(k).copied().ok_or_else(|| format!("driver output: no `{k}=` in `{line}`"));
    let int = |k: &str| -> Result<u64, String> {
        let v = get(k)?;
        v.parse().map_err(|_| format!("driver output: {k}=`{v}` is not an integer"))
    };
    let num = |k: &str| parse_f64(k, get(k)?);
    let op = match get("op")? {
        o @ ("qr" | "lu" | "chol") => Op::parse(o).ok_or_else(|| format!("driver output: unknown op `{o}`"))?,
        o => return Err(format!("driver output: unknown op `{o}`")),
    };
    let grid = |k: &str| -> Result<i32, String> {
        i32::try_from(int(k)?).map_err(|_| format!("driver output: {k} out of range"))
    };
    Ok(DriverReport {
        op,
        m: int("m")?,
        n: int("n")?,
        nb: int("nb")?,
        p: grid("p")?,
        q: grid("q")?,
        time_s: num("time_s")?,
        residual: num("residual")?,
        orthogonality: match op {
            Op::Qr => Some(num("orthogonality")?),
            Op::Lu | Op::Chol | Op::Cg => None,
        },
        eps: num("eps")?,
        dgemm_gflops: num("dgemm_gflops")?,
        blas_kernel: get("blas_kernel")?.to_string(),
    })
}

/// The measured rate in Gflop/s (NaN when the time is not positive).
fn gflops(r: &DriverReport) -> f64 {
    if r.time_s > 0.0 {
        r.op.flops(r.m as usize, r.n as usize) / r.time_s / 1e9
    } else {
        f64::NAN
    }
}

/// True when every residual is below [`RESIDUAL_OK`] (NaN fails).
fn passed(r: &DriverReport) -> bool {
    r.residual < RESIDUAL_OK && r.orthogonality.is_none_or(|o| o < RESIDUAL_OK)
}

/// The report: the fields of `ftla qr|lu|chol`, plus library, seed and eps.
fn to_report(a: &BaselineJob, r: &DriverReport) -> FactorReport {
    let mut f = FactorReport::new(
        format!("baseline scalapack {}", r.op.name()),
        [r.p, r.q],
        r.m as usize,
        r.n as usize,
        r.nb as usize,
    );
    f.library = Some(LIBRARY.into());
    f.seed = Some(a.seed);
    f.time_s = r.time_s;
    f.gflops = gflops(r);
    f.residual = Checked::Value(r.residual);
    f.orthogonality = r.orthogonality.map(Checked::Value);
    f.dgemm_gflops = r.dgemm_gflops;
    f.blas_kernel = r.blas_kernel.clone();
    f.eps = Some(r.eps);
    f.ok = passed(r);
    f
}

/// One human-readable line.
fn summary(r: &DriverReport) -> String {
    let size = if r.m == r.n { format!("N={}", r.n) } else { format!("M={} N={}", r.m, r.n) };
    let orth = r.orthogonality.map(|o| format!(", orthogonality {o:.3}")).unwrap_or_default();
    format!(
        "baseline scalapack {}: grid {}x{}, {size}, NB={}: {:.3} s, {:.2} Gflop/s (DGEMM {:.2} Gflop/s per rank), \
         residual {:.3}{orth}, kernel {} — {}",
        r.op.name(),
        r.p,
        r.q,
        r.nb,
        r.time_s,
        gflops(r),
        r.dgemm_gflops,
        r.residual,
        r.blas_kernel,
        if passed(r) { "ok" } else { "FAILED (a residual is ≥ 16)" }
    )
}

/// The environment of the distribution's MPI: `vars` without anything that
/// would steer it to another Open MPI (the project's `.venv` one, whose
/// library has the same soname), plus one BLAS thread per rank unless set.
fn clean_env(vars: impl IntoIterator<Item = (OsString, OsString)>, venvs: &[PathBuf]) -> Vec<(OsString, OsString)> {
    const DROP: [&str; 4] = ["LD_LIBRARY_PATH", "LD_PRELOAD", "OPAL_PREFIX", "VIRTUAL_ENV"];
    const DROP_PREFIX: [&str; 4] = ["OMPI_", "PMIX_", "PRTE_", "OPAL_"];
    let mut out: Vec<(OsString, OsString)> = Vec::new();
    for (k, v) in vars {
        let name = k.to_string_lossy();
        if DROP.contains(&name.as_ref()) || DROP_PREFIX.iter().any(|p| name.starts_with(p)) {
            continue;
        }
        if name == "PATH" {
            let kept: Vec<PathBuf> =
                std::env::split_paths(&v).filter(|d| !venvs.iter().any(|venv| d.starts_with(venv))).collect();
            let joined = std::env::join_paths(kept).unwrap_or_else(|_| OsString::from("/usr/bin:/bin"));
            out.push((k, joined));
            continue;
        }
        out.push((k, v));
    }
    for t in ["OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"] {
        if !out.iter().any(|(k, _)| k == t) {
            out.push((t.into(), "1".into()));
        }
    }
    out
}

/// This process's environment, cleaned for the distribution's MPI.
fn child_env() -> Vec<(OsString, OsString)> {
    let mut venvs = vec![workspace_root().join(".venv")];
    if let Some(v) = std::env::var_os("VIRTUAL_ENV").filter(|v| !v.is_empty()) {
        venvs.push(PathBuf::from(v));
    }
    clean_env(std::env::vars_os(), &venvs)
}

fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

fn driver_source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("baseline").join("scalapack_driver.c")
}

fn driver_binary() -> PathBuf {
    workspace_root().join("target").join("ftla-baseline").join("scalapack_driver")
}

fn mtime(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// The last `n` lines of `s`, for error messages.
fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Compiles `source` into `binary` with `mpicc` unless `binary` is at least
/// as new as `source`. Returns whether it compiled.
fn ensure_driver(mpicc: &Path, source: &Path, binary: &Path) -> Result<bool, String> {
    if !mpicc.exists() {
        return Err(format!("{} not found: {SETUP_HINT}", mpicc.display()));
    }
    let src_time = mtime(source);
    match (src_time, mtime(binary)) {
        (None, Some(_)) => return Ok(false), // no source (installed elsewhere): use what is there
        (None, None) => return Err(format!("the driver source {} is missing", source.display())),
        (Some(s), Some(b)) if b >= s => return Ok(false),
        _ => {}
    }
    let dir = binary.parent().ok_or("bad driver path")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tmp = dir.join(format!(".scalapack_driver.{}.tmp", std::process::id()));
    eprintln!("ftla: compiling the ScaLAPACK baseline driver into {}", binary.display());
    let mut cmd = Command::new(mpicc);
    cmd.env_clear().envs(child_env());
    cmd.arg("-O2").arg("-o").arg(&tmp).arg(source).args(["-lscalapack-openmpi", "-lopenblas", "-lm"]);
    let out = run_with_timeout(cmd, Duration::from_secs(300))
        .map_err(|e| format!("cannot run {}: {e} ({SETUP_HINT})", mpicc.display()))?;
    if out.code != Some(0) {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!(
            "compiling {} failed ({}):\n{}\n{SETUP_HINT}",
            source.display(),
            if out.timed_out { "timed out".to_string() } else { format!("exit code {:?}", out.code) },
            tail(&format!("{}{}", out.stdout, out.stderr), 20)
        ));
    }
    std::fs::rename(&tmp, binary).map_err(|e| format!("cannot move the driver to {}: {e}", binary.display()))?;
    Ok(true)
}

fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    // /proc/self belongs to the effective user of this process.
    std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
}

/// Whether `ssh` or `rsh` is on the `PATH` of `env`: Open MPI 4.1's
/// default launcher (rsh) refuses to start without one, even for a job on
/// this host alone (containers and minimal images often have neither).
fn remote_shell_on_path(env: &[(OsString, OsString)]) -> bool {
    let path = env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone()).unwrap_or_default();
    let executable = |p: std::path::PathBuf| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    std::env::split_paths(&path)
        .filter(|d| !d.as_os_str().is_empty())
        .any(|d| ["ssh", "rsh"].iter().any(|s| executable(d.join(s))))
}

/// The `mpirun.openmpi` command line of one run (`rsh`: a remote shell is
/// on the PATH; without one, the launcher for this host alone).
fn mpirun_command(a: &BaselineJob, driver: &Path, root: bool, rsh: bool) -> Command {
    let mut cmd = Command::new(MPIRUN);
    if root {
        cmd.arg("--allow-run-as-root");
    }
    if !rsh {
        cmd.args(["--mca", "plm", "isolated"]);
    }
    // As our own launcher: no binding, so more ranks than cores still share fairly.
    cmd.args(["--oversubscribe", "--bind-to", "none", "-n"]).arg((a.p * a.q).to_string()).arg(driver);
    cmd.arg(a.op.name());
    for v in [a.m, a.n, a.nb, a.p as u64, a.q as u64, a.seed] {
        cmd.arg(v.to_string());
    }
    cmd
}

/// `ftla baseline ...`: returns the exit code (0: ran and passed, 1:
/// failed, 2: usage error, 124: timeout).
pub fn run(args: BaselineArgs) -> i32 {
    let a = validate(&args).unwrap_or_else(|e| crate::cli::usage_error("baseline", e));
    let driver = driver_binary();
    if let Err(e) = ensure_driver(Path::new(MPICC), &driver_source(), &driver) {
        eprintln!("ftla: {e}");
        return 1;
    }
    if !Path::new(MPIRUN).exists() {
        eprintln!("ftla: {MPIRUN} not found: {SETUP_HINT}");
        return 1;
    }
    let env = child_env();
    let mut cmd = mpirun_command(&a, &driver, running_as_root(), remote_shell_on_path(&env));
    cmd.env_clear().envs(env);
    // No timeout: a year is as good as none.
    let limit = a.timeout.unwrap_or(Duration::from_secs(365 * 24 * 3600));
    let out = match run_with_timeout(cmd, limit) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("ftla: cannot start {MPIRUN}: {e} ({SETUP_HINT})");
            return 1;
        }
    };
    if out.timed_out {
        eprintln!("ftla: the ScaLAPACK baseline exceeded its {} s timeout; killed it", limit.as_secs());
        return EXIT_TIMEOUT;
    }
    let r = match parse_driver_output(&out.stdout) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ftla: the ScaLAPACK baseline failed (exit code {:?}): {e}", out.code);
            let t = tail(&out.stderr, 15);
            if !t.is_empty() {
                eprintln!("{t}");
            }
            return 1;
        }
    };
    if (r.op, r.m, r.n, r.nb, r.p, r.q) != (a.op, a.m, a.n, a.nb, a.p, a.q) {
        eprintln!("ftla: the driver reports another problem than asked for: {r:?}");
        return 1;
    }
    if out.code != Some(0) {
        eprintln!("ftla: warning: {MPIRUN} exited with {:?} after reporting", out.code);
    }
    println!("{}", summary(&r));
    if let Some(path) = &a.json {
        if let Err(e) = write_json(path, &to_report(&a, &r)) {
            eprintln!("ftla: {e}");
            return 1;
        }
    }
    if passed(&r) {
        0
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    /// `ftla baseline ARGS` parsed by clap and validated.
    fn job(words: &str) -> Result<BaselineJob, String> {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from(["ftla", "baseline"].into_iter().chain(words.split_whitespace()))
            .map_err(|e| e.to_string())?;
        match cli.command {
            crate::cli::Command::Baseline(a) => validate(&a),
            other => panic!("{other:?}"),
        }
    }

    fn run_args(s: &str) -> BaselineJob {
        job(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    const QR_LINE: &str = "FTLA_BASELINE op=qr m=4096 n=4096 nb=64 p=1 q=2 seed=1 time_s=1.250000000e+01 \
                           residual=2.222915e-02 orthogonality=3.132601e-01 anorm=1.0e+03 eps=2.220446e-16 \
                           dgemm_gflops=45.5000 blas_kernel=Prescott nprocs=2";

    #[test]
    fn parses_valid_arguments() {
        let a = run_args("scalapack qr --grid 1x2 --n 4096 --nb 64 --json out.json --timeout 30");
        assert_eq!((a.op, a.p, a.q, a.m, a.n, a.nb, a.seed), (Op::Qr, 1, 2, 4096, 4096, 64, 1));
        assert_eq!(a.json.as_deref(), Some(Path::new("out.json")));
        assert_eq!(a.timeout, Some(Duration::from_secs(30)));
        let a = run_args("scalapack qr --grid=2x1 --n 300 --m 500 --nb 32 --seed 7 --timeout 0");
        assert_eq!((a.m, a.n, a.seed, a.timeout), (500, 300, 7, None));
        let a = run_args("scalapack lu --grid 2x2 --n 300 --m 300 --nb 32");
        assert_eq!((a.op, a.timeout), (Op::Lu, Some(Duration::from_secs(600))));
        let a = run_args("scalapack chol --grid 2x2 --n 1024 --nb 64 --seed 3");
        assert_eq!((a.op, a.m, a.n, a.nb, a.seed), (Op::Chol, 1024, 1024, 64, 3));
        let a = run_args("scalapack chol --grid 1x2 --n 300 --m 300 --nb 32");
        assert_eq!((a.op, a.m, a.n), (Op::Chol, 300, 300));
    }

    #[test]
    fn rejects_bad_arguments() {
        for bad in [
            "",
            "scalapack",
            "elemental qr --grid 1x2 --n 10 --nb 2",
            "scalapack cholesky --grid 1x2 --n 10 --nb 2",
            "scalapack qr --n 10 --nb 2",
            "scalapack qr --grid 1x2 --nb 2",
            "scalapack qr --grid 1x2 --n 10",
            "scalapack qr --grid 0x2 --n 10 --nb 2",
            "scalapack qr --grid 1x2 --n 0 --nb 2",
            "scalapack qr --grid 1x2 --n 10 --nb 0",
            "scalapack qr --grid 1x2 --n 10 --nb x",
            "scalapack qr --grid 1x2 --n 10 --m -3 --nb 2",
            "scalapack qr --grid 1x2 --n 3000000000 --nb 2",
            "scalapack lu --grid 1x2 --n 10 --m 12 --nb 2",
            "scalapack chol --grid 1x2 --n 10 --m 12 --nb 2",
            "scalapack chol --grid 1x2 --n 12 --m 10 --nb 2",
            "scalapack cg --grid 1x2 --n 10 --nb 2",
            "scalapack qr --grid 1x2 --n 10 --nb 2 --bogus",
            "scalapack qr qr --grid 1x2 --n 10 --nb 2",
        ] {
            assert!(job(bad).is_err(), "`{bad}` was accepted");
        }
    }

    #[test]
    fn parses_driver_output_amid_launcher_noise() {
        let out = format!("some launcher chatter\n{QR_LINE}\n[vm:123] more chatter\n");
        let r = parse_driver_output(&out).unwrap();
        assert_eq!((r.op, r.m, r.n, r.nb, r.p, r.q), (Op::Qr, 4096, 4096, 64, 1, 2));
        assert_eq!(r.time_s, 12.5);
        assert_eq!(r.orthogonality, Some(3.132601e-01));
        assert_eq!(r.eps, 2.220446e-16);
        assert_eq!(r.blas_kernel, "Prescott");
        assert!(passed(&r));
        // 4/3 N³ flops in 12.5 s.
        let want = 4.0 / 3.0 * 4096f64.powi(3) / 12.5 / 1e9;
        approx::assert_relative_eq!(gflops(&r), want, max_relative = 1e-9);
        let j = serde_json::to_value(to_report(&run_args("scalapack qr --grid 1x2 --n 4096 --nb 64"), &r)).unwrap();
        assert_eq!(j["command"], "baseline scalapack qr");
        assert_eq!(j["library"], "libscalapack-openmpi (Debian)");
        assert_eq!(j["grid"], serde_json::json!([1, 2]));
        assert_eq!((j["m"].as_u64(), j["nb"].as_u64()), (Some(4096), Some(64)));
        assert_eq!(j["time_s"], 12.5);
        assert_eq!(j["residual"], 0.02222915);
        assert_eq!(j["orthogonality"], 0.3132601);
        assert_eq!(j["dgemm_gflops"], 45.5);
        assert_eq!(j["blas_kernel"], "Prescott");
        assert_eq!(j["ok"], true);
        assert!(j["gflops"].as_f64().is_some());
        assert!(summary(&r).contains("kernel Prescott"), "{}", summary(&r));
    }

    #[test]
    fn lu_output_has_no_orthogonality_and_nan_fails() {
        let line = "FTLA_BASELINE op=lu m=300 n=300 nb=32 p=2 q=2 seed=1 time_s=2e-3 residual=-nan \
                    anorm=80.3 eps=2.220446e-16 dgemm_gflops=9.5 blas_kernel=SkylakeX nprocs=4";
        let r = parse_driver_output(line).unwrap();
        assert_eq!((r.op, r.orthogonality), (Op::Lu, None));
        assert!(r.residual.is_nan() && !passed(&r));
        let j = serde_json::to_value(to_report(&run_args("scalapack lu --grid 2x2 --n 300 --nb 32"), &r)).unwrap();
        assert!(j.get("orthogonality").is_none() && j["ok"] == false && j["residual"].is_null(), "{j}");
        let big = line.replace("residual=-nan", "residual=17.5");
        assert!(!passed(&parse_driver_output(&big).unwrap()));
    }

    #[test]
    fn chol_output_has_no_orthogonality() {
        let line = "FTLA_BASELINE op=chol m=1024 n=1024 nb=64 p=2 q=2 seed=1 time_s=5.000000000e-02 \
                    residual=1.234500e-03 anorm=1.5e+03 eps=2.220446e-16 dgemm_gflops=30.25 \
                    blas_kernel=Haswell nprocs=4";
        let r = parse_driver_output(line).unwrap();
        assert_eq!((r.op, r.m, r.n, r.nb, r.p, r.q), (Op::Chol, 1024, 1024, 64, 2, 2));
        assert_eq!((r.orthogonality, r.residual), (None, 1.2345e-3));
        assert!(passed(&r));
        // N³/3 flops in 0.05 s.
        approx::assert_relative_eq!(gflops(&r), 1024f64.powi(3) / 3.0 / 0.05 / 1e9, max_relative = 1e-9);
        let j = serde_json::to_value(to_report(&run_args("scalapack chol --grid 2x2 --n 1024 --nb 64"), &r)).unwrap();
        assert_eq!(j["command"], "baseline scalapack chol");
        assert!(j.get("orthogonality").is_none() && j["ok"] == true, "{j}");
        assert!(summary(&r).starts_with("baseline scalapack chol: grid 2x2, N=1024, NB=64"), "{}", summary(&r));
        let e = parse_driver_output(
            "FTLA_BASELINE_ERROR rank 1: PDPOTRF: the leading minor of order 7 is not positive definite\n",
        )
        .unwrap_err();
        assert_eq!(e, "rank 1: PDPOTRF: the leading minor of order 7 is not positive definite");
    }

    #[test]
    fn reports_driver_errors_and_malformed_output() {
        let e = parse_driver_output("FTLA_BASELINE_ERROR rank 0: PDGETRF info=-4\n").unwrap_err();
        assert_eq!(e, "rank 0: PDGETRF info=-4");
        assert!(parse_driver_output("").is_err());
        assert!(parse_driver_output("nothing here\n").is_err());
        // QR without orthogonality, a missing key, a bad number.
        assert!(parse_driver_output(&QR_LINE.replace("orthogonality=3.132601e-01", "")).is_err());
        assert!(parse_driver_output(&QR_LINE.replace("time_s=1.250000000e+01", "")).is_err());
        assert!(parse_driver_output(&QR_LINE.replace("nb=64", "nb=sixty")).is_err());
        assert!(parse_driver_output(&QR_LINE.replace("op=qr", "op=cg")).is_err());
        assert!(parse_driver_output(&QR_LINE.replace("op=qr", "op=svd")).is_err());
    }

    #[test]
    fn scrubs_the_projects_mpi_from_the_environment() {
        let venv = PathBuf::from("/work/main/.venv");
        let vars: Vec<(OsString, OsString)> = [
            ("PATH", "/work/main/.venv/bin:/root/.cargo/bin:/usr/bin:/work/main/.venv/lib/x/bin:/bin"),
            ("LD_LIBRARY_PATH", "/work/main/.venv/lib"),
            ("OPAL_PREFIX", "/work/main/.venv"),
            ("OMPI_MCA_btl", "self"),
            ("PMIX_RANK", "0"),
            ("PRTE_MCA_x", "1"),
            ("HOME", "/root"),
            ("OPENBLAS_NUM_THREADS", "2"),
        ]
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect();
        let env = clean_env(vars, &[venv]);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.to_string_lossy().into_owned());
        assert_eq!(get("PATH").as_deref(), Some("/root/.cargo/bin:/usr/bin:/bin"));
        for gone in ["LD_LIBRARY_PATH", "OPAL_PREFIX", "OMPI_MCA_btl", "PMIX_RANK", "PRTE_MCA_x"] {
            assert_eq!(get(gone), None, "{gone}");
        }
        assert_eq!(get("HOME").as_deref(), Some("/root"));
        assert_eq!(get("OPENBLAS_NUM_THREADS").as_deref(), Some("2"));
        assert_eq!(get("OMP_NUM_THREADS").as_deref(), Some("1"));
    }

    #[test]
    fn missing_compiler_points_to_setup() {
        let dir = std::env::temp_dir();
        let e =
            ensure_driver(Path::new("/nonexistent/mpicc.openmpi"), &driver_source(), &dir.join("nope")).unwrap_err();
        assert!(e.contains("scripts/setup.sh --scalapack"), "{e}");
    }

    #[test]
    fn mpirun_command_line() {
        let a = run_args("scalapack lu --grid 2x3 --n 300 --nb 32 --seed 9");
        let cmd = mpirun_command(&a, Path::new("/t/drv"), true, true);
        let words: Vec<String> = cmd.get_args().map(|s: &OsStr| s.to_string_lossy().into_owned()).collect();
        assert_eq!(cmd.get_program(), MPIRUN);
        assert_eq!(
            words.join(" "),
            "--allow-run-as-root --oversubscribe --bind-to none -n 6 /t/drv lu 300 300 32 2 3 9"
        );
        assert!(!mpirun_command(&a, Path::new("/t/drv"), false, true).get_args().any(|w| w == "--allow-run-as-root"));
        let a = run_args("scalapack chol --grid 1x2 --n 512 --nb 32");
        let words: Vec<String> = mpirun_command(&a, Path::new("/t/drv"), false, true)
            .get_args()
            .map(|s: &OsStr| s.to_string_lossy().into_owned())
            .collect();
        assert_eq!(words.join(" "), "--oversubscribe --bind-to none -n 2 /t/drv chol 512 512 32 1 2 1");
        // No ssh or rsh: this host's own launcher.
        let words: Vec<String> = mpirun_command(&a, Path::new("/t/drv"), false, false)
            .get_args()
            .map(|s: &OsStr| s.to_string_lossy().into_owned())
            .collect();
        assert_eq!(words[..3], ["--mca", "plm", "isolated"]);
    }

    #[test]
    fn a_remote_shell_is_looked_for_on_the_path() {
        let dir = std::env::temp_dir().join(format!("ftla-rsh-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let env = |path: &Path| vec![(OsString::from("PATH"), path.as_os_str().to_owned())];
        assert!(!remote_shell_on_path(&env(&dir)));
        std::fs::write(dir.join("ssh"), "").unwrap();
        // (Not executable: not a shell Open MPI could run.)
        assert!(!remote_shell_on_path(&env(&dir)));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join("ssh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(remote_shell_on_path(&env(&dir)));
        assert!(!remote_shell_on_path(&[]));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
