//! `--compare`: the same-run comparison of the plain, the failure-free FT
//! and the FT run with its failure, and its lines in the report.

use super::*;
use recovery::profile::Part;

/// The same-run comparison (`--compare`): one sample per repetition,
/// seconds; every figure reported is derived from them.
pub(super) struct Compare {
    pub(super) samples: Vec<Sample>,
}

/// One repetition: the plain factorization, the failure-free FT one, and
/// the FT one with the failure (when the repetition had one); for CG also
/// their iterations.
pub(super) struct Sample {
    pub(super) plain: f64,
    pub(super) free: f64,
    pub(super) with: Option<f64>,
    pub(super) iterations: Option<(u64, u64, Option<u64>)>,
    /// The failure-free FT run's flop model (its layout's).
    pub(super) model: f64,
    /// Grid rank 0's seconds per part of the plain and of the failure-free
    /// FT run.
    pub(super) plain_parts: Vec<(Part, f64)>,
    pub(super) free_parts: Vec<(Part, f64)>,
}

impl Compare {
    pub(super) fn plain_s(&self) -> Vec<f64> {
        self.samples.iter().map(|s| s.plain).collect()
    }
    pub(super) fn free_s(&self) -> Vec<f64> {
        self.samples.iter().map(|s| s.free).collect()
    }
    pub(super) fn with_s(&self) -> Vec<f64> {
        self.samples.iter().filter_map(|s| s.with).collect()
    }
    /// The flop model of the failure-free FT runs, the overhead the
    /// measured one is held against: their checksum layout's (the main
    /// run's, whose options they take).
    pub(super) fn model(&self) -> f64 {
        self.samples.first().map_or(0.0, |s| s.model)
    }

    /// Medians of the plain and failure-free FT times, and of the times
    /// with the failure (if any repetition had one).
    pub(super) fn medians(&self) -> (f64, f64, Option<f64>) {
        let with = self.with_s();
        (median(&self.plain_s()), median(&self.free_s()), (!with.is_empty()).then(|| median(&with)))
    }
    /// Medians of the per-repetition ratios, as fractions: the failure-free
    /// FT overhead over the plain factorization, and the failure's cost over the
    /// failure-free FT run (when a repetition had a failure). They are
    /// immune to the slow drifts of a shared machine, which move a
    /// repetition's runs together but can put the medians of the separate
    /// lists in different phases.
    pub(super) fn paired(&self) -> (f64, Option<f64>) {
        let over: Vec<f64> = self.samples.iter().map(|s| s.free / s.plain).collect();
        let failure: Vec<f64> = self.samples.iter().filter_map(|s| s.with.map(|w| w / s.free)).collect();
        (median(&over) - 1.0, (!failure.is_empty()).then(|| median(&failure) - 1.0))
    }

    /// Grid rank 0's seconds per part, medians over the repetitions, of
    /// the plain and of the failure-free FT runs (a part a run never
    /// entered counts 0 s), in [`Part::all`]'s order.
    pub(super) fn parts(&self) -> Vec<(Part, f64, f64)> {
        let of = |parts: &[(Part, f64)], part: Part| parts.iter().find(|p| p.0 == part).map_or(0.0, |p| p.1);
        Part::all()
            .map(|part| {
                let plain: Vec<f64> = self.samples.iter().map(|s| of(&s.plain_parts, part)).collect();
                let free: Vec<f64> = self.samples.iter().map(|s| of(&s.free_parts, part)).collect();
                (part, median(&plain), median(&free))
            })
            .filter(|&(_, p, f)| p > 0.0 || f > 0.0)
            .collect()
    }

    /// The `compare` object of the JSON report.
    pub(super) fn report(&self) -> CompareReport {
        let (nonft, free, with) = self.medians();
        let (over, per_failure) = self.paired();
        let its: Vec<_> = self.samples.iter().filter_map(|s| s.iterations).collect();
        let cg = !its.is_empty();
        let parts = self.parts();
        CompareReport {
            iterations_nonft: cg.then(|| its.iter().map(|i| i.0).collect()),
            iterations_ft: cg.then(|| its.iter().map(|i| i.1).collect()),
            iterations_with_failure: (cg && with.is_some()).then(|| its.iter().filter_map(|i| i.2).collect()),
            nonft_time_s: nonft,
            ft_time_s: free,
            ft_overhead_model: self.model(),
            reps: self.samples.len(),
            nonft_times_s: self.plain_s(),
            ft_times_s: self.free_s(),
            paired_overhead: over,
            ft_with_failure_time_s: with,
            ft_with_failure_times_s: with.map(|_| self.with_s()),
            paired_failure_overhead: per_failure,
            phases_nonft_s: Some(crate::phases::by_name(parts.iter().map(|&(p, s, _)| (p, s)))),
            phases_ft_s: Some(crate::phases::by_name(parts.iter().map(|&(p, _, s)| (p, s)))),
        }
    }
}

/// The main run as the comparison uses it.
pub(super) struct MainRun {
    pub(super) secs: Option<f64>,
    pub(super) iterations: Option<u64>,
    pub(super) had_failure: bool,
    /// Its flop model (its layout's).
    pub(super) model: f64,
    /// Its seconds per part (grid rank 0's).
    pub(super) parts: Vec<(Part, f64)>,
}

/// `--compare`: pairs of (plain, failure-free FT) factorizations,
/// alternating so that both see the same machine; medians when repeated.
/// With one repetition and no failure the main run is the failure-free FT
/// sample. With kills, every repetition starts with an FT run that has
/// them (the first one is the main run), so the failure's cost is a
/// median too. Collective.
pub(super) fn compare_runs(
    region: &mut Region,
    a: &FactorJob,
    ft: &FtJob,
    opts: &FtOptions,
    main: &MainRun,
    start_rep: usize,
    joined: bool,
) -> Result<Compare, scalapack_ft::Error> {
    let mut samples = Vec::new();
    // This repetition's FT run with the failure, if it had one (time,
    // CG's iterations).
    let mut with_now = (main.had_failure && start_rep == 0).then_some((main.secs, main.iterations));
    for rep in start_rep..ft.reps {
        if rep > 0 && !ft.kill.is_empty() && !(joined && rep == start_rep) {
            let epoch = region.grid().epoch();
            region.grid_mut().set_injector(a.injector().shifted(epoch));
            // The main run's options: a replacement joining here runs
            // its code path for the main run (its verification included).
            let with = timed_ft(region, a, opts, &mut None)?;
            after_failure_run(region, a, ft, false, rep)?;
            print_recoveries(region, &with.report, Some(rep), opts.layout);
            if with.had_failure() {
                with_now = Some((with.secs, iterations(&with.factors)));
            }
        }
        let grid = region.grid();
        let mut plain = make_matrix(grid, a, true)?;
        grid.barrier(Scope::All)?;
        recovery::profile::start(false);
        let t = Instant::now();
        let mut plain_factors = Outputs::of(a);
        let factored = plain_factors.factor(grid, &mut plain);
        let plain_parts = recovery::profile::stop().unwrap_or_default().seconds;
        factored?;
        let mut nonft = [t.elapsed().as_secs_f64()];
        grid.max(Scope::All, &mut nonft)?;
        drop(plain);
        let (free, free_its, free_parts, model) = if rep == 0 && ft.reps == 1 && !main.had_failure {
            (known(main.secs)?, main.iterations, main.parts.clone(), main.model)
        } else {
            // The main run's layout (what the overhead is measured for),
            // without its verification.
            let free_opts = FtOptions { verify: false, layout: opts.layout };
            let again = timed_ft(region, a, &free_opts, &mut None)?;
            if again.had_failure() {
                return Err(blacs_ft::Error::Unrecoverable {
                    reason: "the failure-free comparison run saw a failure".into(),
                }
                .into());
            }
            (known(again.secs)?, iterations(&again.factors), again.profile.seconds, again.report.overhead_model)
        };
        let with = with_now.take();
        let its = iterations(&plain_factors).zip(free_its).map(|(p, f)| (p, f, with.and_then(|w| w.1)));
        samples.push(Sample {
            plain: nonft[0],
            free,
            with: with.and_then(|w| w.0),
            iterations: its,
            model,
            plain_parts,
            free_parts,
        });
    }
    Ok(Compare { samples })
}

/// The comparison's lines: overheads (medians, paired ratios, held
/// against the compared runs' model) and CG's iterations.
pub(super) fn compare_lines(cmp: &Compare, name: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let model = cmp.model();
    let (nonft, free, with) = cmp.medians();
    let paired = cmp.samples.len() > 1;
    let of = if paired { format!("; medians of {}", cmp.samples.len()) } else { String::new() };
    // (CG's checksums add no flops to its products: no model.)
    let vs_model = if model > 0.0 {
        format!("; model +{:.1} %, ratio {:.2}", 100.0 * model, (free / nonft - 1.0) / model)
    } else {
        String::new()
    };
    let mut l = format!(
        "overhead: plain {name} {nonft:.3} s, FT failure-free {free:.3} s ({:+.1} %{vs_model}{of})",
        100.0 * (free / nonft - 1.0),
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
        let mut l = format!("paired (median of the per-repetition ratios): FT failure-free {:+.1} %", 100.0 * over);
        if model > 0.0 {
            l.push_str(&format!(", ratio {:.2}", over / model));
        }
        if let Some(f) = per_failure {
            l.push_str(&format!("; the failure {:+.1} %", 100.0 * f));
        }
        lines.push(l);
    }
    // Side by side, the largest FT part first.
    let mut parts = cmp.parts();
    parts.sort_by(|a, b| b.2.total_cmp(&a.2));
    let side: Vec<String> = parts.iter().map(|&(part, p, f)| format!("{} {p:.3} | {f:.3} s", part.name())).collect();
    lines.push(format!("time per part, plain | FT failure-free (grid rank 0{of}): {}", side.join(", ")));
    let c = cmp.report();
    if let (Some(p), Some(f)) = (&c.iterations_nonft, &c.iterations_ft) {
        let w = c.iterations_with_failure.as_ref().map(|w| format!(", with the failure {w:?}")).unwrap_or_default();
        lines.push(format!("iterations: plain {p:?}, FT failure-free {f:?}{w}"));
    }
    lines
}
