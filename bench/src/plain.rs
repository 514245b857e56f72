//! `ftla qr`, `ftla lu`, `ftla chol` and `ftla cg` without `--ft`: factor (or solve
//! with) a generated or user-supplied matrix on a grid, time it, check it
//! as ScaLAPACK's testers do, and report Gflop/s next to the local DGEMM
//! rate measured in the same run.

use crate::factors::{self, Outputs};
use crate::problem::{make_matrix, write_json, FactorJob};
use crate::session::{local_dgemm_gflops, start, Session};
use blacs_ft::Scope;
use ftla_bench::report::{FactorReport, Op};
use scalapack_ft::blas;
use std::time::Instant;

/// Runs inside MPI; never returns.
pub fn run(a: FactorJob) -> ! {
    let s = start(a.grid.p, a.grid.q, a.injector());
    let outcome = factor(&s, &a);
    let unrecoverable = outcome.as_ref().is_err_and(|e| e.is_unrecoverable());
    let (ok, detail) = match outcome {
        Ok((ok, text)) => (ok, text),
        Err(e) => {
            if s.grid.rank() == 0 {
                eprintln!("ftla {}: {e}", a.op.name());
            }
            (false, e.to_string())
        }
    };
    s.finish(crate::session::outcome(ok, unrecoverable), &detail)
}

fn factor(s: &Session, a: &FactorJob) -> Result<(bool, String), scalapack_ft::Error> {
    let grid = &*s.grid;
    let root = grid.rank() == 0;
    let mut mat = make_matrix(grid, a, true)?;
    let (m, n) = (mat.m(), mat.n());
    let original = ((a.check || a.solve.is_some()) && a.op != Op::Cg).then(|| mat.clone());
    let (dgemm, order) = local_dgemm_gflops(grid, a.planned_flops(m, n))?;
    if root {
        // (QR: the panel method, and what it picks on this grid.)
        let panel = match a.op {
            Op::Qr => format!(
                ", --panel {} ({})",
                a.qr.panel,
                format!("{:?}", a.qr.panel.resolve(grid.nprow() as usize, m, n)).to_lowercase()
            ),
            _ => String::new(),
        };
        println!(
            "ftla {}: {m}x{n} matrix, NB {}, {} grid{panel}, OpenBLAS kernel {} (1 thread per rank), local DGEMM \
             {dgemm:.1} Gflop/s (order {order})",
            a.op.name(),
            a.nb,
            a.grid,
            blas::kernel_name(),
        );
    }
    grid.barrier(Scope::All)?;
    crate::phases::start_recording(grid, a);
    let t = Instant::now();
    let mut factors = Outputs::of(a);
    let singular = factors.factor(grid, &mut mat);
    let profile = recovery::profile::stop().unwrap_or_default();
    let singular = singular?;
    let mut secs = [t.elapsed().as_secs_f64()];
    grid.max(Scope::All, &mut secs)?;
    let mut report = FactorReport::new(a.op.name(), [a.grid.p, a.grid.q], m, n, a.nb);
    report.timed_flops(factors.done_flops(a.op, m, n, singular.as_ref()), secs[0]);
    report.info = singular.as_ref().map(|e| e.info());
    crate::ft_run::cg_fields(&mut report, &factors);
    let res = factors::check(grid, a, original, &mat, &factors)?;
    factors::write(grid, a, &mat, &factors)?;
    let ok = singular.is_none() && res.pass();
    report.residual = res.residual.into();
    report.orthogonality = (a.op == Op::Qr).then(|| res.orthogonality.into());
    report.solve_residual = res.solve;
    report.lstsq_residual = res.lstsq;
    report.nrhs = a.solve.as_ref().map(|s| s.nrhs);
    report.solve_s = factors.solve_seconds();
    report.dgemm_gflops = dgemm;
    report.dgemm_order = Some(order);
    report.blas_kernel = blas::kernel_name();
    report.blas_threads_per_rank = Some(1);
    report.phases_s = Some(crate::phases::seconds_by_name(&profile));
    report.ok = ok;
    if let Some(path) = &a.trace {
        if let Err(e) = crate::phases::write_trace(grid, &profile.spans, path) {
            eprintln!("ftla: {e}");
        }
    }
    let mut summary = if matches!(singular, Some(scalapack_ft::Error::MinorNotPositiveDefinite { .. })) {
        format!("{} {m}x{n} NB {} on {}: stopped after {:.3} s", a.op.name(), a.nb, a.grid, report.time_s)
    } else {
        format!(
            "{} {m}x{n} NB {} on {}: {:.3} s, {:.1} Gflop/s ({:.0} % of the ranks' summed local DGEMM rate){}",
            a.op.name(),
            a.nb,
            a.grid,
            report.time_s,
            report.gflops,
            100.0 * report.gflops / (dgemm * grid.size() as f64).max(1e-9),
            res.summary()
        )
    };
    if let Some(s) = factors.solve() {
        summary.push_str(&format!(", {}", crate::ft_run::cg_line(s)));
    }
    if let (Some(t), Some(routine)) = (report.solve_s, factors.solve_routine(false)) {
        summary.push_str(&format!(", solve ({routine}) {:.1} ms", t * 1e3));
    }
    if let Some(e) = &singular {
        summary.push_str(&format!(", {e}"));
    }
    if root {
        println!("{summary}{}", if ok { "" } else { "  FAILED" });
        println!("  {}", crate::phases::line(&profile));
        if let Some(path) = &a.json {
            if let Err(e) = write_json(path, &report) {
                eprintln!("ftla: {e}");
                return Ok((false, e));
            }
        }
    }
    Ok((ok, summary))
}
