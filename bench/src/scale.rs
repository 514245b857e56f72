//! `ftla scale`: a weak or strong scaling sweep, one job per point.
//!
//! Every point is an `ftla qr|lu|cg` job of its own on the most square grid
//! for its rank count (P ≤ Q; Q ≥ 2 with `--ft`). A fault-tolerant point
//! is one `ftla qr|lu|cg --ft --compare` job, so its plain and FT times come
//! from the same run. The sweep prints a progress line per point, then a
//! table, and writes JSON, CSV and an SVG plot (Gflop/s and parallel
//! efficiency against ranks, plain and FT on the same axes). With
//! `--hostfile` the jobs run where the hostfile says, unchanged.

use crate::cli::{ScaleArgs, ScaleMode};
use crate::problem::write_json;
use crate::session::median;
use blacs_ft::launch::run_with_timeout;
use ftla_bench::report::{FactorReport, Op, ScalePoint, ScaleReport};
use std::path::Path;
use std::time::Duration;

/// The most square `P×Q` with `P·Q = ranks` and `P ≤ Q`; with `ft`, `Q ≥ 2`
/// (`None` when that cannot be: one rank).
pub fn squarest_grid(ranks: u32, ft: bool) -> Option<(i32, i32)> {
    let r = ranks as i32;
    let p = (1..=r).filter(|p| r % p == 0 && p * p <= r).max()?;
    let q = r / p;
    (!ft || q >= 2).then_some((p, q))
}

/// N of a point: strong scaling keeps N; weak scaling makes it
/// `n · √ranks`, so that N²/ranks (the matrix memory per rank) is `n²` at
/// every point, rounded to a multiple of NB.
pub fn point_n(mode: ScaleMode, n: usize, ranks: u32, nb: usize) -> usize {
    match mode {
        ScaleMode::Strong => n,
        ScaleMode::Weak => {
            let scaled = n as f64 * (ranks as f64).sqrt();
            ((scaled / nb as f64).round() as usize).max(1) * nb
        }
    }
}

/// Runs `ftla ARGS --json TMP` and reads its report.
fn job(exe: &Path, args: &[String], timeout: u64, hostfile: Option<&Path>) -> Result<FactorReport, String> {
    let json = std::env::temp_dir().join(format!("ftla-scale-{}-{}.json", std::process::id(), args.len()));
    let _ = std::fs::remove_file(&json);
    let mut cmd = std::process::Command::new(exe);
    cmd.args(args).args(["--json".to_string(), json.display().to_string(), "--timeout".into(), timeout.to_string()]);
    if let Some(h) = hostfile {
        let extra = std::env::var("FTLA_MPIEXEC_ARGS").unwrap_or_default();
        cmd.env("FTLA_MPIEXEC_ARGS", format!("{extra} --hostfile {}", h.display()));
    }
    let out = run_with_timeout(cmd, Duration::from_secs(timeout + 60)).map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(&json);
    let _ = std::fs::remove_file(&json);
    if out.code != Some(0) {
        let tail: Vec<&str> = out.stderr.lines().chain(out.stdout.lines()).rev().take(4).collect();
        return Err(format!("`ftla {}` failed ({:?}): {}", args.join(" "), out.code, tail.join(" | ")));
    }
    let text = text.map_err(|e| format!("no report from `ftla {}`: {e}", args.join(" ")))?;
    serde_json::from_str(&text).map_err(|e| format!("unreadable report: {e}"))
}

/// Runs the sweep; returns the exit code.
pub fn run(a: ScaleArgs) -> i32 {
    let op = Op::from(a.op);
    let base_n = match (a.mode, a.n, a.n_per_rank) {
        (ScaleMode::Strong, Some(n), _) => n,
        (ScaleMode::Weak, _, Some(n)) => n,
        (ScaleMode::Strong, None, _) => crate::cli::usage_error("scale", "--mode strong needs --n N"),
        (ScaleMode::Weak, _, None) => crate::cli::usage_error("scale", "--mode weak needs --n-per-rank N"),
    };
    let mut ranks = a.ranks.clone();
    ranks.sort_unstable();
    ranks.dedup();
    let Ok(exe) = std::env::current_exe() else {
        eprintln!("ftla scale: cannot find this program");
        return 1;
    };
    let nb = a.nb as usize;
    let mut points: Vec<ScalePoint> = Vec::new();
    let mut kernel = String::new();
    let mut all_ok = true;
    let total = ranks.len();
    for (i, &r) in ranks.iter().enumerate() {
        let n = point_n(a.mode, base_n, r, nb);
        let measured = measure_point(&exe, &a, op, r, n);
        let plain_time = measured.iter().find(|m| !m.ft).and_then(|m| m.result.as_ref().ok()).map(|(t, _)| *t);
        if a.ft && !measured.iter().any(|m| m.ft) {
            println!("[{}/{total}] {r} rank(s): no FT run (the checksums need 2 process columns)", i + 1);
        }
        for m in measured {
            let (p, q) = m.grid;
            let kind = if m.ft { "FT" } else { "plain" };
            match m.result {
                Ok((t, rep)) => {
                    kernel.clone_from(&rep.blas_kernel);
                    all_ok &= rep.ok;
                    println!(
                        "[{}/{total}] {} {kind:<5} {r} rank(s) on {p}x{q}, N = {n}: {t:.3} s, {:.2} Gflop/s{}",
                        i + 1,
                        op.name(),
                        rep.gflops,
                        if rep.ok { "" } else { "  (checks FAILED)" }
                    );
                    points.push(ScalePoint {
                        ranks: r as usize,
                        grid: [p, q],
                        n,
                        nb,
                        ft: m.ft,
                        time_s: t,
                        gflops: rep.gflops,
                        tflops: rep.gflops / 1e3,
                        efficiency: f64::NAN,
                        overhead: plain_time.filter(|_| m.ft).map(|pt| t / pt - 1.0),
                        overhead_model: if m.ft { rep.overhead_model } else { None },
                        recoveries: rep.recoveries.as_ref().map_or(0, Vec::len),
                        ok: rep.ok,
                    });
                }
                Err(e) => {
                    all_ok = false;
                    println!("[{}/{total}] {r} rank(s), {kind}: {e}", i + 1);
                }
            }
        }
    }
    fill_efficiency(&mut points, a.mode);
    let mode = match a.mode {
        ScaleMode::Strong => "strong",
        ScaleMode::Weak => "weak",
    };
    print_table(&points, op, mode);
    let report = ScaleReport {
        command: "scale".into(),
        op,
        mode: mode.into(),
        blas_kernel: kernel,
        ok: all_ok && !points.is_empty(),
        points,
    };
    let mut code = if report.ok { 0 } else { 1 };
    if let Some(path) = &a.json {
        if let Err(e) = write_json(path, &report) {
            eprintln!("ftla scale: {e}");
            code = 1;
        }
    }
    if let Some(path) = &a.csv {
        if let Err(e) = std::fs::write(path, csv(&report)) {
            eprintln!("ftla scale: cannot write {}: {e}", path.display());
            code = 1;
        }
    }
    if let Some(path) = &a.plot {
        if let Err(e) = crate::scale_plot::draw(&report, path) {
            eprintln!("ftla scale: cannot draw {}: {e}", path.display());
            code = 1;
        }
    }
    code
}

/// One kind of run (plain or FT) of one point: its grid, and its median
/// time with the job's report, or why it failed.
struct Measured {
    ft: bool,
    grid: (i32, i32),
    result: Result<(f64, FactorReport), String>,
}

/// Runs the jobs of the point with `ranks` ranks and order `n`. With --ft
/// one `ftla qr|lu --ft --compare` job gives both kinds (paired, in the same
/// job); else (or where no FT grid exists) the plain point is `--reps`
/// jobs and their median time.
fn measure_point(exe: &Path, a: &ScaleArgs, op: Op, ranks: u32, n: usize) -> Vec<Measured> {
    let nb = a.nb as usize;
    let grid_args = |(p, q): (i32, i32)| -> Vec<String> {
        vec!["--grid".into(), format!("{p}x{q}"), "--n".into(), n.to_string(), "--nb".into(), nb.to_string()]
    };
    let mut out = Vec::new();
    if let Some(g) = squarest_grid(ranks, true).filter(|_| a.ft) {
        let mut args: Vec<String> = [op.name(), "--ft", "--compare", "--check"].map(String::from).to_vec();
        args.extend(grid_args(g));
        args.extend(["--reps".into(), a.reps.to_string()]);
        if let Some(k) = &a.kill {
            args.extend(["--kill".into(), k.to_string()]);
        }
        match job(exe, &args, a.timeout, a.hostfile.as_deref()) {
            Ok(rep) => {
                let c = rep.compare.clone().unwrap_or_default();
                // (CG's flops follow its iterations.)
                let flops = |its: Option<u64>| match op {
                    Op::Cg => scalapack_ft::cg::cg_flops(n, its.unwrap_or(0)),
                    _ => op.flops(n, n),
                };
                let mut plain = FactorReport { ft: None, recoveries: None, overhead_model: None, ..rep.clone() };
                plain.timed_flops(flops(c.iterations_nonft.as_ref().and_then(|v| v.first().copied())), c.nonft_time_s);
                out.push(Measured { ft: false, grid: g, result: Ok((c.nonft_time_s, plain)) });
                // With kills, the FT point is the run with the failure.
                let t = c.ft_with_failure_time_s.unwrap_or(c.ft_time_s);
                let mut ft = rep;
                ft.timed_flops(flops(ft.iterations), t);
                out.push(Measured { ft: true, grid: g, result: Ok((t, ft)) });
            }
            Err(e) => out.push(Measured { ft: true, grid: g, result: Err(e) }),
        }
    }
    if !out.iter().any(|m| !m.ft) {
        let g = squarest_grid(ranks, false).unwrap_or((1, ranks as i32));
        let mut times = Vec::new();
        let mut last = Err(String::from("no run"));
        for _ in 0..a.reps {
            let mut args: Vec<String> = vec![op.name().into(), "--check".into()];
            args.extend(grid_args(g));
            last = job(exe, &args, a.timeout, a.hostfile.as_deref());
            match &last {
                Ok(rep) => times.push(rep.time_s),
                Err(_) => break,
            }
        }
        let t = median(&times);
        let result = last.map(|mut rep| {
            rep.timed(op, t);
            (t, rep)
        });
        out.insert(0, Measured { ft: false, grid: g, result });
    }
    out
}

/// Parallel efficiency against the smallest point of the same kind:
/// strong scaling T₁·r₁/(T·r); weak scaling (Gflop/s per rank) over the
/// first point's.
fn fill_efficiency(points: &mut [ScalePoint], mode: ScaleMode) {
    for ft in [false, true] {
        let Some(base) = points.iter().filter(|p| p.ft == ft).min_by_key(|p| p.ranks).cloned() else {
            continue;
        };
        for p in points.iter_mut().filter(|p| p.ft == ft) {
            p.efficiency = match mode {
                ScaleMode::Strong => base.time_s * base.ranks as f64 / (p.time_s * p.ranks as f64),
                ScaleMode::Weak => (p.gflops / p.ranks as f64) / (base.gflops / base.ranks as f64),
            };
        }
    }
}

fn print_table(points: &[ScalePoint], op: Op, mode: &str) {
    println!("\n{} {mode} scaling", op.name());
    println!(
        "{:>6} {:>6} {:>8} {:>5} {:>10} {:>10} {:>9} {:>7} {:>9} {:>7}",
        "ranks", "grid", "N", "kind", "time_s", "Gflop/s", "Tflop/s", "eff", "overhead", "model"
    );
    for p in points {
        let pct = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{:+.1}%", 100.0 * x));
        println!(
            "{:>6} {:>6} {:>8} {:>5} {:>10.3} {:>10.2} {:>9.4} {:>7.2} {:>9} {:>7}",
            p.ranks,
            format!("{}x{}", p.grid[0], p.grid[1]),
            p.n,
            if p.ft { "FT" } else { "plain" },
            p.time_s,
            p.gflops,
            p.tflops,
            p.efficiency,
            pct(p.overhead),
            pct(p.overhead_model)
        );
    }
}

/// One row per point.
fn csv(r: &ScaleReport) -> String {
    let mut s = String::from(
        "op,mode,ranks,grid,n,nb,ft,time_s,gflops,tflops,efficiency,overhead,overhead_model,recoveries,ok\n",
    );
    let opt = |x: Option<f64>| x.map_or(String::new(), |x| x.to_string());
    for p in &r.points {
        s.push_str(&format!(
            "{},{},{},{}x{},{},{},{},{},{},{},{},{},{},{},{}\n",
            r.op.name(),
            r.mode,
            p.ranks,
            p.grid[0],
            p.grid[1],
            p.n,
            p.nb,
            p.ft,
            p.time_s,
            p.gflops,
            p.tflops,
            p.efficiency,
            opt(p.overhead),
            opt(p.overhead_model),
            p.recoveries,
            p.ok
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_are_the_most_square() {
        assert_eq!(squarest_grid(1, false), Some((1, 1)));
        assert_eq!(squarest_grid(1, true), None);
        assert_eq!(squarest_grid(2, true), Some((1, 2)));
        assert_eq!(squarest_grid(4, true), Some((2, 2)));
        assert_eq!(squarest_grid(6, false), Some((2, 3)));
        assert_eq!(squarest_grid(8, false), Some((2, 4)));
        assert_eq!(squarest_grid(16, true), Some((4, 4)));
        assert_eq!(squarest_grid(7, true), Some((1, 7)));
    }

    #[test]
    fn weak_scaling_keeps_the_memory_per_rank() {
        assert_eq!(point_n(ScaleMode::Strong, 1000, 8, 64), 1000);
        assert_eq!(point_n(ScaleMode::Weak, 1024, 1, 64), 1024);
        assert_eq!(point_n(ScaleMode::Weak, 1024, 4, 64), 2048);
        assert_eq!(point_n(ScaleMode::Weak, 1000, 2, 100), 1400);
    }

    #[test]
    fn efficiency_and_csv() {
        let pt = |ranks, time_s, gflops| ScalePoint {
            ranks,
            grid: [1, ranks as i32],
            n: 100,
            nb: 10,
            ft: false,
            time_s,
            gflops,
            tflops: gflops / 1e3,
            efficiency: 0.0,
            overhead: None,
            overhead_model: None,
            recoveries: 0,
            ok: true,
        };
        let mut pts = vec![pt(1, 4.0, 1.0), pt(2, 2.5, 1.6)];
        fill_efficiency(&mut pts, ScaleMode::Strong);
        assert_eq!(pts[0].efficiency, 1.0);
        assert_eq!(pts[1].efficiency, 0.8);
        let r = ScaleReport {
            command: "scale".into(),
            op: Op::Lu,
            mode: "strong".into(),
            blas_kernel: "k".into(),
            points: pts,
            ok: true,
        };
        let text = csv(&r);
        assert_eq!(text.lines().count(), 3);
        assert!(text.lines().next().unwrap().contains(",gflops,"));
        assert!(text.lines().nth(2).unwrap().starts_with("lu,strong,2,1x2,100,10,false,2.5,1.6,"));
    }
}
