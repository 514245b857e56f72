//! `ftla qr --ft`: the fault-tolerant QR (`pdgeqrf_ft`) with kills,
//! spares, checksum verification and a comparison with the plain QR.

use crate::factor_cmd::{make_matrix, FactorArgs};
use crate::json::Json;
use crate::session::{median, Session};
use blacs_ft::{Injector, Scope};
use recovery::Region;
use scalapack_ft::blas;
use scalapack_ft::qr::{self, check};
use scalapack_ft::qr_ft::{pdgeqrf_ft_in, FtOptions, FtReport, FtWorkspace};
use std::time::Instant;

/// What a hot spare prepares while parked: a matrix's local storage and a
/// workspace large enough for any grid position, their pages touched.
pub struct SparePrep {
    matrix: Vec<f64>,
    work: FtWorkspace,
}

impl SparePrep {
    /// Sized for the generated matrix of `a` (an `--input` matrix's shape is
    /// known only once the file is read: nothing is prepared for it).
    pub fn new(a: &FactorArgs) -> SparePrep {
        if a.input.is_some() {
            return SparePrep { matrix: Vec::new(), work: FtWorkspace::new() };
        }
        let (p, q) = (a.p.max(1) as usize, a.q.max(1) as usize);
        // Without the memory, nothing is prepared (the replacement then
        // allocates when it joins, and reports it if it cannot).
        let (matrix, work) = FtWorkspace::for_spare(a.m, a.n, a.nb, p, q).unwrap_or_default();
        SparePrep { matrix, work }
    }
}

/// [`FtWorkspace::in_place`], or an empty workspace where this process
/// cannot get the memory: `pdgeqrf_ft_in` then tries again inside its
/// argument agreement, which reports it on every rank.
fn in_place_or_empty(grid: &blacs_ft::Grid, mat: &mut scalapack_ft::DistMatrix) -> FtWorkspace {
    FtWorkspace::in_place(grid, mat).unwrap_or_default()
}

/// Runs inside MPI; never returns. `prepared`: what this process prepared
/// while parked as a hot spare, if it was one.
pub fn run(s: Session, a: &FactorArgs, mut prepared: Option<SparePrep>) -> ! {
    let Session { rt, grid } = s;
    let me = grid.rank();
    let mut region = match Region::new(grid) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ftla qr --ft: rank {me}: cannot join the region: {e}");
            rt.finish(1)
        }
    };
    // Every repetition may repair as often as one run may.
    region.set_max_repairs(16 * a.reps.max(1));
    let outcome = ft(&mut region, a, &mut prepared);
    let unrecoverable = outcome.as_ref().is_err_and(|e| e.is_unrecoverable());
    let (ok, detail) = match outcome {
        Ok(x) => x,
        Err(e) => {
            // An agreed usage error is the same everywhere: said once. A
            // failure is said by every process that saw it.
            let agreed = matches!(e, scalapack_ft::Error::Argument { .. } | scalapack_ft::Error::Memory { .. });
            if !agreed || region.grid().rank() == 0 {
                println!("ftla qr --ft: rank {}: {e}", region.grid().rank());
            }
            (false, e.to_string())
        }
    };
    let s = Session { rt, grid: region.into_grid() };
    s.finish(crate::session::outcome(ok, unrecoverable), &detail)
}

/// The same-run comparison (`--compare`): one sample per repetition,
/// seconds; every figure reported is derived from them.
struct Compare {
    samples: Vec<Sample>,
}

/// One repetition: the plain QR, the failure-free FT QR, and the FT QR with
/// the failure (when the repetition had one).
struct Sample {
    plain: f64,
    free: f64,
    with: Option<f64>,
}

impl Compare {
    fn plain_s(&self) -> Vec<f64> {
        self.samples.iter().map(|s| s.plain).collect()
    }
    fn free_s(&self) -> Vec<f64> {
        self.samples.iter().map(|s| s.free).collect()
    }
    fn with_s(&self) -> Vec<f64> {
        self.samples.iter().filter_map(|s| s.with).collect()
    }
    /// Medians of the plain and failure-free FT times, and of the times
    /// with the failure (if any repetition had one).
    fn medians(&self) -> (f64, f64, Option<f64>) {
        let with = self.with_s();
        (median(&self.plain_s()), median(&self.free_s()), (!with.is_empty()).then(|| median(&with)))
    }
    /// Medians of the per-repetition ratios, as fractions: the failure-free
    /// FT overhead over the plain QR, and the failure's cost over the
    /// failure-free FT run (when a repetition had a failure). They are
    /// immune to the slow drifts of a shared machine, which move a
    /// repetition's runs together but can put the medians of the separate
    /// lists in different phases.
    fn paired(&self) -> (f64, Option<f64>) {
        let over: Vec<f64> = self.samples.iter().map(|s| s.free / s.plain).collect();
        let failure: Vec<f64> = self.samples.iter().filter_map(|s| s.with.map(|w| w / s.free)).collect();
        (median(&over) - 1.0, (!failure.is_empty()).then(|| median(&failure) - 1.0))
    }
}

/// After an FT run that may have had kills: disarms them (the failure-free
/// runs must not see them) and, with kills configured, returns the
/// repetition the survivors are in — a replacement that just joined
/// (`joined`) offers none and learns it. Collective.
fn after_failure_run(
    region: &mut Region,
    a: &FactorArgs,
    joined: bool,
    rep: usize,
) -> Result<usize, scalapack_ft::Error> {
    if a.kill.is_none() {
        return Ok(rep);
    }
    region.grid_mut().set_injector(Injector::none());
    let mut r = [if joined { -1 } else { rep as i64 }];
    region.grid().max(Scope::All, &mut r)?;
    Ok(r[0].max(0) as usize)
}

/// One line per recovery (grid rank 0), tagged with the repetition after
/// the first.
fn print_recoveries(region: &Region, report: &FtReport, rep: Option<usize>) {
    if region.grid().rank() != 0 {
        return;
    }
    let tag = rep.map(|r| format!("repetition {}: ", r + 1)).unwrap_or_default();
    for r in &report.recoveries {
        println!(
            "  {tag}recovered ranks {:?} at step {} ({} phase) by {}: detect {:.1} + repair {:.1} + rebuild {:.1} = {:.1} \
             ms",
            r.ranks, r.step, r.phase, r.mode, r.detect_ms, r.repair_ms, r.rebuild_ms, r.total_ms
        );
    }
}

/// One timed FT factorization: seconds (the slowest rank's), the call's
/// report, tau, the factored matrix, and how often the call was restarted
/// because a process was lost before its checksums existed.
fn timed_ft(
    region: &mut Region,
    a: &FactorArgs,
    opts: &FtOptions,
    prepared: &mut Option<SparePrep>,
) -> Result<(f64, FtReport, Vec<f64>, scalapack_ft::DistMatrix, usize), scalapack_ft::Error> {
    let joining = region.is_joining();
    if joining {
        // This program does not repeat the FT runs that completed before a
        // replacement joined: it joins the interrupted one directly.
        region.skip_completed_calls();
    }
    // A promoted spare joins in storage it touched while parked.
    let (mut mat, mut work) = match prepared.take().filter(|p| joining && !p.matrix.is_empty()) {
        Some(SparePrep { matrix, work }) => {
            (scalapack_ft::DistMatrix::in_storage(region.grid(), a.m, a.n, a.nb, a.nb, matrix)?, work)
        }
        None => {
            let mut mat = make_matrix(region.grid(), a, !joining)?;
            // The room for the checksum columns and the scratch are
            // allocated and touched before the clock starts, as the matrix
            // is (ScaLAPACK callers hand their WORK array in the same way).
            let work = in_place_or_empty(region.grid(), &mut mat);
            (mat, work)
        }
    };
    if !joining {
        region.grid().barrier(Scope::All)?;
    }
    let t = Instant::now();
    let mut tau = Vec::new();
    let mut restarts = 0;
    let report = loop {
        match pdgeqrf_ft_in(region, &mut mat, &mut tau, opts, &mut work) {
            // Lost before the checksums protected its blocks: the call was
            // forgotten everywhere. Repair, then start again from the
            // input, as a replacement (which runs this program from the
            // top) does; the clock keeps running.
            // (The region's repair limit bounds the restarts.)
            Err(e) if e.is_process_failure() => {
                let r = region.repair()?;
                restarts += 1;
                // The lowest surviving rank speaks (no collective here: the
                // replacement is not in this loop).
                let speaker = (0..).find(|k| !r.killed.contains(k)).unwrap_or(0);
                if region.grid().rank() == speaker {
                    println!(
                        "  restarting the factorization: rank(s) {:?} lost before the checksums were encoded \
                         (repaired by {} in {:.1} ms)",
                        r.killed,
                        r.mode.as_str(),
                        r.total_ms
                    );
                }
                mat = make_matrix(region.grid(), a, true)?;
                work = in_place_or_empty(region.grid(), &mut mat);
                region.grid().barrier(Scope::All)?;
            }
            other => break other?,
        }
    };
    // The survivors' figures: a replacement's clock and count started late.
    let mut v = [if joining { 0.0 } else { t.elapsed().as_secs_f64() }, restarts as f64];
    region.grid().max(Scope::All, &mut v)?;
    Ok((v[0], report, tau, mat, v[1] as usize))
}

fn ft(
    region: &mut Region,
    a: &FactorArgs,
    prepared: &mut Option<SparePrep>,
) -> Result<(bool, String), scalapack_ft::Error> {
    let opts = FtOptions { verify: a.verify, corrupt: a.corrupt };
    let root_prints = |region: &Region| region.grid().rank() == 0;
    // (A replacement that starts a restarted factorization from the top
    // does not print it again.)
    if root_prints(region) && !region.is_joining() && region.grid().replacement().is_none() {
        println!(
            "ftla qr --ft: {}x{} matrix, NB {}, {}x{} grid + {} spare(s), OpenBLAS kernel {}{}",
            a.shape().map_or(a.m, |s| s.0),
            a.shape().map_or(a.n, |s| s.1),
            a.nb,
            a.p,
            a.q,
            a.spares,
            blas::kernel_name(),
            a.kill.as_ref().map(|k| format!(", kills {k}")).unwrap_or_default()
        );
    }
    // 1. The fault-tolerant run (the kills happen here).
    let joined = region.is_joining();
    let (ft_secs, report, tau, fact, restarts) = timed_ft(region, a, &opts, prepared)?;
    // A replacement that joined a later repetition's failure run (`--reps`
    // with `--kill`) learns which one, and goes on from there.
    let start_rep = after_failure_run(region, a, joined, 0)?;
    let grid = region.grid();
    let (m, n) = (fact.m(), fact.n());
    let flops = qr::qr_flops(m, n);
    print_recoveries(region, &report, None);
    // 2. Checks against the original matrix (regenerated or re-read).
    let (mut residual, mut orthogonality) = (None, None);
    if a.check && start_rep == 0 {
        let original = make_matrix(grid, a, true)?;
        residual = Some(check::qr_residual(grid, &original, &fact, &tau)?);
        orthogonality = Some(check::orthogonality(grid, &fact, &tau)?);
    }
    if let Some(out) = a.output.as_ref().filter(|_| start_rep == 0) {
        scalapack_ft::dist_io::write_matrix(grid, &fact, out)?;
        scalapack_ft::dist_io::write_vector(
            grid,
            &out.with_extension("tau.npy"),
            scalapack_ft::dist_io::VectorData::F64(&tau),
        )?;
    }
    drop(fact);
    // 3. Same-run comparison: plain QR, and the failure-free FT QR.
    let mut compare = None;
    if a.compare {
        // Pairs of (plain QR, failure-free FT QR), alternating so that both
        // see the same machine; medians when repeated. With one repetition
        // and no failure the main run is the failure-free FT sample. With
        // kills, every repetition starts with an FT run that has them (the
        // first one is the main run), so the failure's cost is a median too.
        let mut samples = Vec::new();
        // A restart (a kill before the checksums existed) is a failure too.
        let main_had_failure = !report.recoveries.is_empty() || restarts > 0;
        // This repetition's FT run with the failure, if it had one.
        let mut with_now = (main_had_failure && start_rep == 0).then_some(ft_secs);
        let kills = Injector::parse(a.kill.as_deref().unwrap_or_default()).unwrap_or_default();
        for rep in start_rep..a.reps {
            if rep > 0 && a.kill.is_some() && !(joined && rep == start_rep) {
                let epoch = region.grid().epoch();
                region.grid_mut().set_injector(kills.shifted(epoch));
                // The main run's options: a replacement joining here runs
                // its code path for the main run (its verification included).
                let (secs, with, _, _, _) = timed_ft(region, a, &opts, &mut None)?;
                after_failure_run(region, a, false, rep)?;
                print_recoveries(region, &with, Some(rep));
                if !with.recoveries.is_empty() {
                    with_now = Some(secs);
                }
            }
            let grid = region.grid();
            let mut plain = make_matrix(grid, a, true)?;
            grid.barrier(Scope::All)?;
            let t = Instant::now();
            let mut tau2 = Vec::new();
            qr::pdgeqrf(grid, &mut plain, &mut tau2)?;
            let mut nonft = [t.elapsed().as_secs_f64()];
            grid.max(Scope::All, &mut nonft)?;
            drop(plain);
            let secs = if rep == 0 && a.reps == 1 && !main_had_failure {
                ft_secs
            } else {
                let (secs, again, _, _, _) = timed_ft(region, a, &FtOptions::default(), &mut None)?;
                if !again.recoveries.is_empty() {
                    return Err(blacs_ft::Error::Unrecoverable {
                        reason: "the failure-free comparison run saw a failure".into(),
                    }
                    .into());
                }
                secs
            };
            samples.push(Sample { plain: nonft[0], free: secs, with: with_now.take() });
        }
        compare = Some(Compare { samples });
    }
    let grid = region.grid();
    let mut rate = [blas::measure_dgemm_gflops(1024)];
    grid.sum(Scope::All, &mut rate, None)?;
    let dgemm = rate[0] / grid.size() as f64;
    let verified = report.check.as_ref().is_none_or(|c| c.ok);
    let ok = verified && residual.is_none_or(|r| r < 16.0) && orthogonality.is_none_or(|o| o < 16.0);
    let gflops = flops / ft_secs.max(1e-12) / 1e9;
    let mut lines = vec![format!(
        "QR {m}x{n} NB {} on {}x{} with checksums: {ft_secs:.3} s, {gflops:.1} Gflop/s, {} recover{}",
        a.nb,
        a.p,
        a.q,
        report.recoveries.len(),
        if report.recoveries.len() == 1 { "y" } else { "ies" },
    )];
    if let (Some(r), Some(o)) = (residual, orthogonality) {
        lines.push(format!(
            "residual ‖A−QR‖₁/(‖A‖₁·max(M,N)·eps) = {r:.3}, orthogonality ‖I−QᵀQ‖₁/(M·eps) = {o:.3} ({})",
            if r < 16.0 && o < 16.0 { "pass: < 16" } else { "FAIL: ≥ 16" }
        ));
    }
    if let Some(c) = &report.check {
        lines.push(format!(
            "checksums {} (largest defect C {:.2e}, D {:.2e}; tolerance {:.2e})",
            if c.ok { "consistent" } else { "MISMATCH" },
            c.max_c_defect,
            c.max_d_defect,
            c.tolerance
        ));
        if !c.ok {
            lines.push(format!("silent corruption detected in checksum group {}", c.worst_group));
        }
    }
    match &compare {
        Some(cmp) => {
            let (nonft, free, with) = cmp.medians();
            let model = report.overhead_model;
            let paired = cmp.samples.len() > 1;
            let of = if paired { format!("; medians of {}", cmp.samples.len()) } else { String::new() };
            let mut l = format!(
                "overhead: plain QR {nonft:.3} s, FT failure-free {free:.3} s ({:+.1} %; model +{:.1} %, ratio {:.2}{of})",
                100.0 * (free / nonft - 1.0),
                100.0 * model,
                (free / nonft - 1.0) / model
            );
            if let Some(w) = with {
                let n = cmp.with_s().len();
                let of = if n > 1 { format!("; median of {n}") } else { String::new() };
                l.push_str(&format!(
                    ", FT with the failure {w:.3} s ({:+.1} % over failure-free{of})",
                    100.0 * (w / free - 1.0)
                ));
            }
            lines.push(l);
            if paired {
                let (over, per_failure) = cmp.paired();
                let mut l = format!(
                    "paired (median of the per-repetition ratios): FT failure-free {:+.1} %, ratio {:.2}",
                    100.0 * over,
                    over / model
                );
                if let Some(f) = per_failure {
                    l.push_str(&format!("; the failure {:+.1} %", 100.0 * f));
                }
                lines.push(l);
            }
        }
        None => lines.push(format!(
            "overhead model of the checksums: +{:.1} % trailing-update work",
            100.0 * report.overhead_model
        )),
    }
    let summary = lines.join("; ");
    if grid.rank() == 0 {
        println!("{}{}", lines.join("\n  "), if ok { "" } else { "\n  FAILED" });
        if let Some(path) = &a.json {
            let recoveries = report
                .recoveries
                .iter()
                .map(|r| {
                    Json::obj([
                        ("rank", Json::Int(r.ranks.first().copied().unwrap_or(-1) as i64)),
                        ("ranks", Json::Arr(r.ranks.iter().map(|&x| Json::Int(x as i64)).collect())),
                        ("step", Json::Int(r.step as i64)),
                        ("phase", Json::from(r.phase.as_str())),
                        ("mode", Json::from(r.mode.as_str())),
                        ("detect_ms", Json::ms(r.detect_ms)),
                        ("repair_ms", Json::ms(r.repair_ms)),
                        ("rebuild_ms", Json::ms(r.rebuild_ms)),
                        ("total_ms", Json::ms(r.total_ms)),
                    ])
                })
                .collect();
            let mut fields = vec![
                ("command", Json::from("qr")),
                ("ft", Json::Bool(true)),
                ("grid", Json::Arr(vec![Json::Int(a.p as i64), Json::Int(a.q as i64)])),
                ("spares", Json::Int(a.spares as i64)),
                ("m", Json::Int(m as i64)),
                ("n", Json::Int(n as i64)),
                ("nb", Json::Int(a.nb as i64)),
                ("time_s", Json::Num(ft_secs)),
                ("gflops", Json::Num(flops / ft_secs.max(1e-12) / 1e9)),
                ("residual", residual.map_or(Json::from("not checked"), Json::Num)),
                ("orthogonality", orthogonality.map_or(Json::from("not checked"), Json::Num)),
                ("dgemm_gflops", Json::Num(dgemm)),
                ("blas_kernel", Json::from(blas::kernel_name())),
                ("recoveries", Json::Arr(recoveries)),
                ("restarts", Json::Int(restarts as i64)),
                ("overhead_model", Json::Num(report.overhead_model)),
            ];
            if let Some(c) = &report.check {
                fields.push((
                    "checksum_check",
                    Json::obj([
                        ("ok", Json::Bool(c.ok)),
                        ("max_c_defect", Json::Num(c.max_c_defect)),
                        ("max_d_defect", Json::Num(c.max_d_defect)),
                        ("tolerance", Json::Num(c.tolerance)),
                        ("worst_group", Json::Int(c.worst_group as i64)),
                    ]),
                ));
            }
            if let Some(cmp) = &compare {
                let list = |xs: &[f64]| Json::Arr(xs.iter().map(|&x| Json::Num(x)).collect());
                let (nonft, free, with) = cmp.medians();
                let mut c = vec![
                    ("nonft_time_s", Json::Num(nonft)),
                    ("ft_time_s", Json::Num(free)),
                    ("reps", Json::Int(cmp.samples.len() as i64)),
                    ("nonft_times_s", list(&cmp.plain_s())),
                    ("ft_times_s", list(&cmp.free_s())),
                ];
                let (over, per_failure) = cmp.paired();
                c.push(("paired_overhead", Json::Num(over)));
                if let Some(w) = with {
                    c.push(("ft_with_failure_time_s", Json::Num(w)));
                    c.push(("ft_with_failure_times_s", list(&cmp.with_s())));
                }
                if let Some(f) = per_failure {
                    c.push(("paired_failure_overhead", Json::Num(f)));
                }
                fields.push(("compare", Json::obj(c)));
            }
            fields.push(("ok", Json::Bool(ok)));
            if let Err(e) = std::fs::write(path, Json::obj(fields).pretty()) {
                eprintln!("ftla: cannot write {path}: {e}");
                return Ok((false, format!("cannot write {path}: {e}")));
            }
        }
    }
    Ok((ok, summary))
}
