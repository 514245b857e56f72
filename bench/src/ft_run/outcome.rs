//! What one run measured (`FtOutcome`), rendered as the text report and
//! the JSON one.

use super::*;

/// What one `ftla qr|lu|cg --ft` run measured, the same on every rank:
/// the text and the JSON report are rendered from it.
pub(super) struct FtOutcome {
    /// The shape of the matrix factored.
    pub(super) m: usize,
    pub(super) n: usize,
    /// The main run's time, the slowest survivor's (`None` when no
    /// process that started the clock is left).
    pub(super) secs: Option<f64>,
    pub(super) report: FtReport,
    pub(super) factors: Outputs,
    /// LU: the exactly-zero pivot (INFO agreed on every rank).
    pub(super) singular: Option<scalapack_ft::Error>,
    pub(super) residuals: factors::Residuals,
    pub(super) restarts: usize,
    pub(super) restart_repairs: Vec<RestartEntry>,
    /// The grid the main run ended on.
    pub(super) ended_on: blacs_ft::GridShape,
    /// The periodic checkpoints saved, their interval in force at the end
    /// (seconds), and the step the job resumed from.
    pub(super) checkpoints: Vec<CheckpointEntry>,
    pub(super) checkpoint_interval_s: Option<f64>,
    pub(super) resumed_at_step: Option<u64>,
    /// How the grid ranks were placed on the nodes, and the node of each
    /// (grid rank 0's view, at the start).
    pub(super) placement: blacs_ft::placement::Placement,
    pub(super) nodes: Vec<u32>,
    pub(super) compare: Option<Compare>,
    /// The local DGEMM rate measured in the same run.
    pub(super) dgemm: f64,
    pub(super) dgemm_order: usize,
    /// Where this process's time went in the main run.
    pub(super) profile: recovery::profile::Profile,
}

impl FtOutcome {
    /// Whether the run passed: checksums consistent, not singular, the
    /// residuals within their bounds.
    pub(super) fn ok(&self) -> bool {
        let verified = self.report.check.as_ref().is_none_or(|c| c.ok);
        verified && self.singular.is_none() && self.residuals.pass()
    }

    /// The grid the run ended on, when shrinks changed it (inside the
    /// calls, or between them).
    fn final_grid(&self, a: &FactorJob) -> Option<blacs_ft::GridShape> {
        let started = blacs_ft::GridShape { p: a.grid.p, q: a.grid.q };
        (self.ended_on != started).then_some(self.ended_on)
    }

    /// The report's lines (the first is the headline).
    pub(super) fn text(&self, a: &FactorJob) -> Vec<String> {
        let (m, n, report, res) = (self.m, self.n, &self.report, &self.residuals);
        let flops = self.factors.done_flops(a.op, m, n, self.singular.as_ref());
        let timing = match self.secs {
            Some(s) if flops.is_nan() => format!("stopped after {s:.3} s"),
            Some(s) => format!("{s:.3} s, {:.1} Gflop/s", flops / s / 1e9),
            None => "time unknown (every process that started the clock was replaced)".to_string(),
        };
        let name = a.op.name().to_uppercase();
        // (A restart follows a repair too: it is counted beside them.)
        let restarts = match self.restarts {
            0 => String::new(),
            1 => ", 1 restart".to_string(),
            k => format!(", {k} restarts"),
        };
        let grid = match self.final_grid(a) {
            Some(g) => format!("{} → {g}", a.grid),
            None => a.grid.to_string(),
        };
        let mut lines = vec![format!(
            "{name} {m}x{n} NB {} on {grid} with checksums: {timing}, {} recover{}{restarts}",
            a.nb,
            report.recoveries.len(),
            if report.recoveries.len() == 1 { "y" } else { "ies" },
        )];
        if let Some(s) = self.factors.solve() {
            lines.push(cg_line(s));
            for d in s.report.iter().flat_map(|r| &r.detections) {
                lines.push(format!(
                    "silent error caught in the matrix-vector product of iteration {}: |eᵀ(Ap) − (eᵀA)p| = {:.2e} > \
                     {:.2e}, recomputed",
                    d.iteration, d.defect, d.tolerance
                ));
            }
        }
        if let Some(e) = &self.singular {
            lines.push(format!("{e} (INFO {} on every rank)", e.info()));
        }
        let nodes = self.nodes.iter().max().map_or(0, |&n| n as usize + 1);
        if self.placement == blacs_ft::placement::Placement::Spread && nodes > 0 {
            let most = blacs_ft::placement::most_per_row(&self.nodes, a.grid.q as usize);
            lines.push(format!(
                "placement spread: {nodes} node(s), each holding at most {most} process(es) of a process row \
                 (nodes of the grid ranks: {:?})",
                self.nodes
            ));
        }
        let mut checks = Vec::new();
        if let Some(r) = res.residual {
            checks.push(match a.op {
                Op::Qr => format!("residual ‖A−QR‖₁/(‖A‖₁·max(M,N)·eps) = {r:.3}"),
                Op::Lu => format!("residual ‖PA−LU‖₁/(‖A‖₁·max(M,N)·eps) = {r:.3}"),
                Op::Cg => format!("residual {r:.3}"),
                Op::Chol => format!("residual ‖A−LLᵀ‖₁/(‖A‖₁·N·eps) = {r:.3}"),
            });
        }
        if let Some(o) = res.orthogonality {
            checks.push(format!("orthogonality ‖I−QᵀQ‖₁/(M·eps) = {o:.3}"));
        }
        let nrhs = a.solve.as_ref().map_or(1, |s| s.nrhs);
        if let Some(r) = res.solve {
            checks.push(format!("solve residual {} = {r:.3} (NRHS {nrhs})", crate::solve::LU_SOLVE_RESIDUAL));
        }
        if let (Some(t), Some(routine)) = (self.factors.solve_seconds(), self.factors.solve_routine(true)) {
            lines.push(format!("  solve ({routine}) {:.1} ms", t * 1e3));
        }
        if let Some(r) = res.lstsq {
            let formula = crate::solve::lstsq_residual_formula(self.m, self.n);
            checks.push(format!("least-squares residual {formula} = {r:.3} (NRHS {nrhs})"));
        }
        if !checks.is_empty() {
            lines.push(format!("{} ({})", checks.join(", "), if res.pass() { "pass: < 16" } else { "FAIL: ≥ 16" }));
        }
        if let Some(c) = &report.check {
            // (Cholesky: and the sums of the upper triangle, to their own scale.)
            let upper = if c.upper_tolerance > 0.0 {
                format!("; upper triangle {:.2e}, tolerance {:.2e}", c.max_upper_defect, c.upper_tolerance)
            } else {
                String::new()
            };
            lines.push(format!(
                "checksums {} (largest defect C {:.2e}, D {:.2e}; tolerance {:.2e}{upper})",
                if c.ok { "consistent" } else { "MISMATCH" },
                c.max_c_defect,
                c.max_d_defect,
                c.tolerance
            ));
            if !c.ok {
                lines.push(format!("silent corruption detected in checksum group {}", c.worst_group));
            }
        }
        if !self.checkpoints.is_empty() {
            let n = self.checkpoints.len() as f64;
            let steps: Vec<String> = self.checkpoints.iter().map(|c| c.step.to_string()).collect();
            let mib = self.checkpoints.iter().map(|c| c.bytes as f64).sum::<f64>() / n / (1 << 20) as f64;
            let ms = self.checkpoints.iter().map(|c| c.write_ms).sum::<f64>() / n;
            let asked = a.ft.as_ref().and_then(|f| f.checkpoint_every);
            let every = match (self.checkpoint_interval_s, asked) {
                (Some(s), Some(blacs_ft::launch::CheckpointInterval::YoungDaly { mtbf })) => {
                    let h = mtbf.as_secs_f64() / 3600.0;
                    let mtbf = if h >= 1.0 { format!("{h:.1} h") } else { format!("{:.0} s", h * 3600.0) };
                    format!(
                        ", every {s:.1} s (Young/Daly: √(2 × {:.2} s, the first one's cost, × MTBF {mtbf}))",
                        self.checkpoints[0].write_ms / 1e3
                    )
                }
                (Some(s), _) if s > 0.0 => format!(", every {s:.1} s"),
                _ => String::new(),
            };
            lines.push(format!(
                "periodic checkpoints: {} (after step{} {}), {mib:.1} MiB and {ms:.0} ms each on average{every}",
                steps.len(),
                if steps.len() == 1 { "" } else { "s" },
                steps.join(", ")
            ));
        }
        if !self.profile.seconds.is_empty() {
            lines.push(crate::phases::line(&self.profile));
        }
        match &self.compare {
            Some(cmp) => lines.extend(compare_lines(cmp, &name)),
            None if a.op == Op::Cg => {}
            None => lines.push(format!(
                "overhead model of the checksums: +{:.1} % trailing-update work",
                100.0 * report.overhead_model
            )),
        }
        lines
    }

    /// The JSON report.
    pub(super) fn json(&self, a: &FactorJob, ft: &FtJob) -> FactorReport {
        let (m, n) = (self.m, self.n);
        let mut r = FactorReport::new(a.op.name(), [a.grid.p, a.grid.q], m, n, a.nb);
        // (An unknown time is written as null.)
        let flops = self.factors.done_flops(a.op, m, n, self.singular.as_ref());
        r.timed_flops(flops, self.secs.unwrap_or(f64::NAN));
        r.info = self.singular.as_ref().map(|e| e.info());
        cg_fields(&mut r, &self.factors);
        r.ft = Some(true);
        r.final_grid = self.final_grid(a);
        r.spares = Some(ft.spares as i32);
        r.residual = self.residuals.residual.into();
        r.orthogonality = (a.op == Op::Qr).then(|| self.residuals.orthogonality.into());
        r.solve_residual = self.residuals.solve;
        r.lstsq_residual = self.residuals.lstsq;
        r.nrhs = a.solve.as_ref().map(|s| s.nrhs);
        r.solve_s = self.factors.solve_seconds();
        r.dgemm_gflops = self.dgemm;
        r.dgemm_order = Some(self.dgemm_order);
        r.blas_kernel = blas::kernel_name();
        r.recoveries = Some(self.report.recoveries.iter().map(RecoveryEntry::from).collect());
        r.restarts = Some(self.restarts);
        r.restart_repairs = Some(self.restart_repairs.clone());
        r.checkpoints = (!self.checkpoints.is_empty()).then(|| self.checkpoints.clone());
        r.checkpoint_interval_s = self.checkpoint_interval_s;
        r.placement = Some(self.placement.name().to_string());
        r.nodes = (!self.nodes.is_empty()).then(|| self.nodes.clone());
        r.resumed_at_step = self.resumed_at_step;
        r.phases_s = (!self.profile.seconds.is_empty()).then(|| crate::phases::seconds_by_name(&self.profile));
        r.overhead_model = Some(self.report.overhead_model);
        r.checksum_layout = Some(ft.layout);
        r.checksum_check = self.report.check.clone();
        r.compare = self.compare.as_ref().map(Compare::report);
        r.ok = self.ok();
        r
    }
}

/// CG's line of the summary: iterations, convergence, residuals; for a
/// solve that stopped on a finding, that no residual was computed.
pub fn cg_line(s: &CgSolve) -> String {
    let jacobi = if s.opts.jacobi { ", Jacobi" } else { "" };
    let Some(r) = &s.report else {
        return format!("stopped without a solution (tol {:.1e}{jacobi}), no residual computed", s.opts.tol);
    };
    format!(
        "{} iterations ({}, tol {:.1e}{jacobi}), true relative residual ‖b−Ax‖/‖b‖ = {:.2e} (recurrence {:.2e})",
        r.iterations,
        if r.converged { "converged" } else { "NOT converged" },
        s.opts.tol,
        r.relative_residual,
        r.recurrence_residual
    )
}

/// CG's fields of the JSON report (none for a factorization); a solve
/// that stopped on a finding has not converged and no iterations,
/// residual or detections to report.
pub fn cg_fields(r: &mut FactorReport, factors: &Outputs) {
    if let Some(s) = factors.solve() {
        r.converged = Some(s.report.as_ref().is_some_and(|s| s.converged));
        if let Some(s) = &s.report {
            r.iterations = Some(s.iterations);
            r.relative_residual = Some(s.relative_residual);
            r.detections = Some(s.detections.clone());
        }
    }
}
