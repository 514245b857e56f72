//! `ftla qr` and `ftla lu` without `--ft`: factor a generated or
//! user-supplied matrix on a grid, time it, check it as ScaLAPACK's testers
//! do, and report Gflop/s next to the local DGEMM rate measured in the same
//! run.

use crate::problem::{make_matrix, write_json, FactorJob};
use crate::session::{local_dgemm_gflops, start, Session};
use blacs_ft::Scope;
use scalapack_ft::blas;
use scalapack_ft::dist_io::{write_matrix, write_vector, VectorData};
use scalapack_ft::report::{FactorReport, Op};
use scalapack_ft::{lu, qr};
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
    let original = a.check.then(|| mat.clone());
    let dgemm = local_dgemm_gflops(grid)?;
    if root {
        println!(
            "ftla {}: {m}x{n} matrix, NB {}, {} grid, OpenBLAS kernel {} (1 thread per rank), local DGEMM {dgemm:.1} \
             Gflop/s",
            a.op.name(),
            a.nb,
            a.grid,
            blas::kernel_name(),
        );
    }
    grid.barrier(Scope::All)?;
    let t = Instant::now();
    let mut tau = Vec::new();
    let mut ipiv: Vec<i64> = Vec::new();
    let singular = match a.op {
        Op::Qr => {
            qr::pdgeqrf(grid, &mut mat, &mut tau)?;
            None
        }
        Op::Lu => match lu::pdgetrf(grid, &mut mat, &mut ipiv) {
            Err(e @ scalapack_ft::Error::Singular { .. }) => Some(e),
            r => {
                r?;
                None
            }
        },
    };
    let mut secs = [t.elapsed().as_secs_f64()];
    grid.max(Scope::All, &mut secs)?;
    let mut report = FactorReport::new(a.op.name(), [a.grid.p, a.grid.q], m, n, a.nb);
    report.timed(a.op, secs[0]);
    let (mut residual, mut orthogonality) = (None, None);
    if let Some(orig) = &original {
        match a.op {
            Op::Qr => {
                residual = Some(qr::check::qr_residual(grid, orig, &mat, &tau)?);
                orthogonality = Some(qr::check::orthogonality(grid, &mat, &tau)?);
            }
            Op::Lu => residual = Some(lu::lu_residual(grid, orig, &mat, &ipiv)?),
        }
    }
    if let Some(out) = &a.output {
        write_matrix(grid, &mat, out)?;
        let side = |ext: &str| out.with_extension(ext);
        match a.op {
            Op::Qr => write_vector(grid, &side("tau.npy"), VectorData::F64(&tau))?,
            Op::Lu => write_vector(grid, &side("ipiv.npy"), VectorData::I64(&ipiv))?,
        }
    }
    let ok = singular.is_none() && residual.is_none_or(|r| r < 16.0) && orthogonality.is_none_or(|o| o < 16.0);
    report.residual = residual.into();
    report.orthogonality = (a.op == Op::Qr).then(|| orthogonality.into());
    report.dgemm_gflops = dgemm;
    report.blas_kernel = blas::kernel_name();
    report.blas_threads_per_rank = Some(1);
    report.ok = ok;
    let mut summary = format!(
        "{} {m}x{n} NB {} on {}: {:.3} s, {:.1} Gflop/s ({:.0} % of the ranks' summed local DGEMM rate)",
        a.op.name(),
        a.nb,
        a.grid,
        report.time_s,
        report.gflops,
        100.0 * report.gflops / (dgemm * grid.size() as f64).max(1e-9)
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
            if let Err(e) = write_json(path, &report) {
                eprintln!("ftla: {e}");
                return Ok((false, e));
            }
        }
    }
    Ok((ok, summary))
}
