//! `ftla qr --ft`, `ftla lu --ft` and `ftla cg --ft`: the fault-tolerant
//! drivers (`pdgeqrf_ft`, `pdgetrf_ft`, `pdcg_ft`) with kills, spares,
//! checksum verification and a comparison with the plain run.

use crate::factors::{self, CgSolve, Outputs};
use crate::problem::{make_matrix, write_json, FactorJob, FtJob};
use crate::session::{local_dgemm_gflops, median, start_preparing, Session};
use blacs_ft::launch::Outcome;
use blacs_ft::{Injector, Scope};
use ftla_bench::report::{round_ms, CheckpointEntry, CompareReport, FactorReport, Op, RecoveryEntry, RestartEntry};
use recovery::{Region, RegionOptions};
use scalapack_ft::abft::{FtOptions, FtReport, FtWorkspace, LayoutKind};
use scalapack_ft::blas;
use std::time::Instant;

mod compare;
mod outcome;

use compare::{compare_lines, compare_runs, Compare, MainRun};
use outcome::FtOutcome;
pub use outcome::{cg_fields, cg_line};

/// What a hot spare prepares while parked: a matrix's local storage and a
/// workspace large enough for any grid position, their pages touched.
pub struct SparePrep {
    matrix: Vec<f64>,
    work: FtWorkspace,
}

impl SparePrep {
    /// Sized for the generated matrix of `a` (an `--input` matrix's shape is
    /// known only once the file is read: nothing is prepared for it).
    pub fn new(a: &FactorJob) -> SparePrep {
        if a.input.is_some() {
            return SparePrep { matrix: Vec::new(), work: FtWorkspace::new() };
        }
        let (p, q) = (a.grid.p as usize, a.grid.q as usize);
        // Without the memory, nothing is prepared (the replacement then
        // allocates when it joins, and reports it if it cannot).
        let kind = a.ft.as_ref().map(|ft| ft.layout).unwrap_or_default();
        let relations = a.op.ft_driver().relations;
        let (matrix, work) = FtWorkspace::for_spare_of((a.m, a.n, a.nb), (p, q), kind, relations).unwrap_or_default();
        SparePrep { matrix, work }
    }
}

/// [`FtWorkspace::in_place`], or an empty workspace where this process
/// cannot get the memory: the factorization then tries again inside its
/// argument agreement, which reports it on every rank.
fn in_place_or_empty(
    grid: &blacs_ft::Grid,
    mat: &mut scalapack_ft::DistMatrix,
    op: Op,
    kind: LayoutKind,
) -> FtWorkspace {
    FtWorkspace::in_place_of(grid, mat, kind, op.ft_driver().relations).unwrap_or_default()
}

/// Runs inside MPI; never returns.
pub fn run(a: FactorJob) -> ! {
    blas::use_single_thread();
    let options = match RegionOptions::from_env() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("ftla {} --ft: {e}", a.op.name());
            std::process::exit(2)
        }
    };
    // (A job started again from checkpoints does not repeat the kills of
    // the recoveries before it.)
    let injector = a.injector().after_restart(options.epoch_base);
    // A hot spare allocates and touches a replacement's matrix and
    // workspace while it is parked, not while the survivors wait.
    let (s, mut prepared) = start_preparing(a.grid.p, a.grid.q, injector, || SparePrep::new(&a));
    let ft = a.ft.clone().unwrap_or_default();
    let Session { rt, grid } = s;
    let me = grid.rank();
    let mut region = match Region::with_options(grid, options) {
        Ok(r) => r,
        Err(e @ (blacs_ft::Error::Checkpoint { .. } | blacs_ft::Error::Unrecoverable { .. })) => {
            // The same error on every rank: said once.
            let outcome = Outcome::of_error(&e);
            if me == 0 {
                println!("ftla {} --ft: cannot resume: {e}", a.op.name());
                blacs_ft::launch::write_outcome(outcome, &e.to_string());
            }
            rt.finish(outcome.exit_code())
        }
        Err(e) => {
            eprintln!("ftla {} --ft: rank {me}: cannot join the region: {e}", a.op.name());
            rt.finish(1)
        }
    };
    if me == 0 {
        if region.restarted_afresh() {
            println!(
                "ftla {} --ft: restarting the factorization from its input: the process was lost before the \
                 checksums were encoded (checkpoint-on-failure restart)",
                a.op.name()
            );
        }
        if let Some(c) = region.resuming() {
            println!(
                "ftla {} --ft: resuming {} at step {} from the checkpoints in {}",
                a.op.name(),
                c.name,
                c.committed,
                region.options().dir().display()
            );
        }
    }
    // Every repetition may repair as often as one run may.
    region.set_max_repairs(16 * ft.reps.max(1));
    // The run ends at an unrecoverable failure: no replacement is started
    // only to be told so.
    region.set_ends_at_unrecoverable(true);
    let outcome = run_ft(&mut region, &a, &ft, &mut prepared);
    if let Err(scalapack_ft::Error::Grid(blacs_ft::Error::Released)) = &outcome {
        // Left without a place by a shrink and not needed again: the job
        // is over for it, as for a spare (the survivors report).
        rt.finish(0)
    }
    if let Err(scalapack_ft::Error::Grid(e @ blacs_ft::Error::Checkpointed { epoch, .. })) = &outcome {
        // The survivors saved their state: the job ends for a restart.
        let gone = region.grid().failed_grid_ranks();
        if (0..region.grid().size()).find(|r| !gone.contains(r)) == Some(region.grid().rank()) {
            match e {
                blacs_ft::Error::Checkpointed { dir, step, .. } if region.options().rebuild_checkpoint => println!(
                    "ftla {} --ft: the missing checkpoint files rebuilt: every process's state at step {step} saved \
                     in {dir}",
                    a.op.name()
                ),
                _ => println!("ftla {} --ft: {e}", a.op.name()),
            }
        }
        let epoch = *epoch;
        let detail = e.to_string();
        let s = Session { rt, grid: region.into_grid() };
        s.finish(Outcome::Checkpointed { epoch }, &detail)
    }
    // (Factors lost to two losses in one process row between the calls —
    // refused on every process, never used — are a loss the job cannot
    // recover from, as two in one call are.)
    let unrecoverable =
        outcome.as_ref().is_err_and(|e| e.is_unrecoverable() || matches!(e, scalapack_ft::Error::InputLost { .. }));
    let (ok, detail) = match outcome {
        Ok(x) => x,
        Err(e) => {
            // An agreed usage error is the same everywhere: said once. A
            // failure is said by every process that saw it.
            let agreed = matches!(
                e,
                scalapack_ft::Error::Argument { .. }
                    | scalapack_ft::Error::Memory { .. }
                    | scalapack_ft::Error::InputLost { .. }
                    | scalapack_ft::Error::Grid(blacs_ft::Error::Checkpoint { .. })
            );
            if !agreed || region.grid().rank() == 0 {
                println!("ftla {} --ft: rank {}: {e}", a.op.name(), region.grid().rank());
            }
            (false, e.to_string())
        }
    };
    if ok {
        region.remove_checkpoints_when_done();
    }
    let s = Session { rt, grid: region.into_grid() };
    s.finish(crate::session::outcome(ok, unrecoverable), &detail)
}

/// After an FT run that may have injected faults: names the kills that
/// never fired (grid rank 0, on stderr: a warning, the run goes on),
/// disarms the faults (the failure-free runs must not see them) and, with
/// kills configured, returns the repetition the survivors are in — a
/// replacement that just joined (`joined`) offers none and learns it.
/// Collective.
fn after_failure_run(
    region: &mut Region,
    a: &FactorJob,
    ft: &FtJob,
    joined: bool,
    rep: usize,
) -> Result<usize, scalapack_ft::Error> {
    if ft.kill.is_empty() && ft.corrupt.is_none() {
        return Ok(rep);
    }
    let grid = region.grid();
    if grid.rank() == 0 {
        for k in grid.unfired_kills() {
            eprintln!("ftla {} --ft: warning: kill point {k} never fired", a.op.name());
        }
    }
    region.grid_mut().set_injector(Injector::none());
    if ft.kill.is_empty() {
        return Ok(rep);
    }
    let mut r = [if joined { -1 } else { rep as i64 }];
    region.grid().max(Scope::All, &mut r)?;
    Ok(r[0].max(0) as usize)
}

/// One line per recovery (grid rank 0), tagged with the repetition after
/// the first.
fn print_recoveries(region: &Region, report: &FtReport, rep: Option<usize>, layout: LayoutKind) {
    if region.grid().rank() != 0 {
        return;
    }
    let tag = rep.map(|r| format!("repetition {}: ", r + 1)).unwrap_or_default();
    for r in &report.recoveries {
        if r.mode == blacs_ft::RepairMode::Resume {
            // (The job before was lost whole: nothing was saved then.)
            let c = r.cof.unwrap_or_default();
            println!(
                "  {tag}resumed at step {} from the periodic checkpoint of a lost job: relaunch {:.1} + load {:.1} + \
                 rebuild {:.1} ms",
                r.step, c.relaunch_ms, c.load_ms, r.rebuild_ms
            );
            continue;
        }
        let repair = match &r.cof {
            Some(c) => format!("save {:.1} + relaunch {:.1} + load {:.1}", c.save_ms, c.relaunch_ms, c.load_ms),
            None => format!("repair {:.1}", r.repair_ms),
        };
        let (mode, rebuild) = match &r.shrink {
            Some(s) => (
                format!(
                    "shrink {} → {} (which tolerates {} per process row)",
                    s.grid_before,
                    s.grid_after,
                    match layout.checksums() {
                        1 => "one loss".to_string(),
                        f => format!("{f} losses"),
                    }
                ),
                format!(
                    "rebuild onto survivors, move and encode {:.1} + hand-over {:.1}",
                    s.redistribute_ms,
                    r.rebuild_ms - s.redistribute_ms
                ),
            ),
            None => (r.mode.as_str().to_string(), format!("rebuild {:.1}", r.rebuild_ms)),
        };
        println!(
            "  {tag}recovered ranks {:?} at step {} ({} phase) by {mode}: detect {:.1} + {repair} + {rebuild} = {:.1} ms",
            r.ranks, r.step, r.phase, r.detect_ms, r.total_ms
        );
    }
}

/// One timed FT factorization.
struct FtRun {
    /// Seconds, the slowest survivor's (`None` when no process that
    /// started the clock is left).
    secs: Option<f64>,
    report: FtReport,
    /// Tau or the pivots.
    factors: Outputs,
    /// LU: the exactly-zero pivot the factorization found.
    singular: Option<scalapack_ft::Error>,
    /// The factored matrix.
    fact: scalapack_ft::DistMatrix,
    /// A's shape, M×N (`fact` is Aᵀ's factors for a minimum-norm
    /// `--lstsq`).
    shape: (usize, usize),
    /// How often the call was restarted because a process was lost before
    /// its checksums existed.
    restarts: usize,
    /// Where this process's time went (empty on a replacement, which did
    /// not start the clock).
    profile: recovery::profile::Profile,
    /// The repairs behind those restarts.
    restart_repairs: Vec<RestartEntry>,
}

impl FtRun {
    /// Whether the run recovered from a failure (a restart, a kill before
    /// the checksums existed, is one too).
    fn had_failure(&self) -> bool {
        !self.report.recoveries.is_empty() || self.restarts > 0
    }
}

/// One timed FT factorization of `a.op`, with the faults the grid's
/// injector holds.
fn timed_ft(
    region: &mut Region,
    a: &FactorJob,
    opts: &FtOptions,
    prepared: &mut Option<SparePrep>,
) -> Result<FtRun, scalapack_ft::Error> {
    let joining = region.is_joining();
    if joining && !joins_a_solve(region) {
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
            let mut mat = match make_matrix(region.grid(), a, !joining) {
                Ok(m) => m,
                // The survivors are waiting in their recovery for it.
                Err(e) if joining => return Err(region.refuse_join(e.to_string()).into()),
                Err(e) => return Err(e),
            };
            // The room for the checksum columns and the scratch are
            // allocated and touched before the clock starts, as the matrix
            // is (ScaLAPACK callers hand their WORK array in the same way).
            let work = in_place_or_empty(region.grid(), &mut mat, a.op, opts.layout);
            (mat, work)
        }
    };
    if !joining {
        region.grid().barrier(Scope::All)?;
    }
    if !joining {
        crate::phases::start_recording(region.grid(), a);
    }
    let t = Instant::now();
    let mut factors = Outputs::of(a);
    let mut restarts = 0;
    let mut restart_repairs = Vec::new();
    let shape = (mat.m(), mat.n());
    // Where this run's calls start in the log (a re-run starts there).
    let first_call = region.log().position();
    let mut first_run = true;
    // Lost before a call's checksums protected its blocks (the
    // factorization's, or with --solve/--lstsq the solve's, or between
    // them): that call was forgotten everywhere, and the region repairs
    // and runs the body again from the input, as a replacement (which
    // runs this program from the top) does: a factorization that
    // completed returns its protected factors again (the replacement's
    // hollow copy is mended at the solve's start), and the solve starts
    // again with B made again. The clock keeps running. (The region's
    // repair limit bounds the restarts.)
    // (The region's loop takes the grid's errors: a process failure
    // travels as one, every other error as the body's result.)
    let outcome = region.run(|region| {
        let run = (|| {
            let again = !std::mem::take(&mut first_run);
            if again && region.is_joining() {
                // Left without a place by a shrink, parked, and given a
                // grid rank since: a replacement, on the grid of now.
                mat = make_matrix(region.grid(), a, false)?;
                work = in_place_or_empty(region.grid(), &mut mat, a.op, opts.layout);
            } else if again {
                restarts += 1;
                let again = RunAgain::of(region, first_call)?;
                if let Some(r) = region.repairs().last() {
                    restart_repairs.push(RestartEntry {
                        ranks: r.killed.clone(),
                        mode: r.mode.as_str().to_string(),
                        repair_ms: round_ms(r.total_ms),
                        restarted: again.name().to_string(),
                        grid_before: r.grid_before,
                        grid_after: r.grid_after,
                    });
                    // The lowest surviving rank speaks (no collective here:
                    // the replacement is not in this loop).
                    // (After a shrink the ranks lost are the grid's before
                    // it: the new grid's rank 0 speaks.)
                    let speaker = match r.grid_after {
                        Some(_) => 0,
                        None => (0..).find(|k| !r.killed.contains(k)).unwrap_or(0),
                    };
                    if region.grid().rank() == speaker {
                        match (r.grid_before, r.grid_after) {
                            // (Before the checksums, or in pdgels_ft's
                            // factorization, whose B is not protected yet.)
                            (Some(b), Some(g)) => println!(
                                "  {}: rank(s) {:?} lost where the call could not move: the grid shrank {b} → {g} in \
                                 {:.1} ms, and the call starts again there",
                                again.what(),
                                r.killed,
                                r.total_ms
                            ),
                            _ => println!(
                                "  {}: rank(s) {:?} lost before {} checksums were encoded (repaired by {} in {:.1} ms)",
                                again.what(),
                                r.killed,
                                again.whose(),
                                r.mode.as_str(),
                                r.total_ms
                            ),
                        }
                    }
                }
                mat = make_matrix(region.grid(), a, true)?;
                work = in_place_or_empty(region.grid(), &mut mat, a.op, opts.layout);
                region.grid().barrier(Scope::All)?;
            }
            factors.factor_ft(region, &mut mat, opts, &mut work)
        })();
        match run {
            Err(scalapack_ft::Error::Grid(e))
                if e.is_process_failure() || matches!(e, blacs_ft::Error::Rejoined { .. }) =>
            {
                Err(e)
            }
            other => Ok(other),
        }
    });
    let profile = recovery::profile::stop().unwrap_or_default();
    let (report, singular) = outcome??;
    // The survivors' figures: a replacement's clock and count started late.
    // (When every process that started the clock was replaced, nobody has
    // it: the time is unknown.)
    // (A call restored from checkpoints ran partly in earlier jobs.)
    let mut counts = [(!joining) as i64, restarts];
    region.grid().max(Scope::All, &mut counts)?;
    // (A replacement that joined `lu --solve`'s solve has an empty report
    // of the factorization, completed before it came: the model is the
    // survivors'.)
    let mut model = [report.overhead_model];
    region.grid().max(Scope::All, &mut model)?;
    let mut report = report;
    report.overhead_model = model[0];
    let mut slowest = [if joining { 0.0 } else { t.elapsed().as_secs_f64() + report.earlier_s }];
    region.grid().max(Scope::All, &mut slowest)?;
    let secs = (counts[0] > 0).then_some(slowest[0]);
    // The restarts' repairs, as a process that saw them all tells them (a
    // replacement, or a hot spare promoted, saw fewer).
    let restart_repairs = longest_list(region.grid(), restart_repairs)?;
    Ok(FtRun {
        secs,
        report,
        factors,
        singular,
        fact: mat,
        shape,
        restarts: counts[1] as usize,
        restart_repairs,
        profile,
    })
}

/// Collective: the longest of the ranks' `list`s (that of a process that
/// saw every event a replacement saw only the end of), on every rank.
fn longest_list<T>(grid: &blacs_ft::Grid, list: Vec<T>) -> Result<Vec<T>, scalapack_ft::Error>
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let mut most = [list.len() as i64];
    grid.max(Scope::All, &mut most)?;
    let Some(holder) = grid.lowest_rank_where(list.len() as i64 == most[0])? else {
        return Ok(list);
    };
    let bytes = grid.broadcast_vec(recovery::codec::encode(&list), holder)?;
    // (The same bytes on every process: the same verdict.)
    recovery::codec::decode(&bytes).ok_or_else(|| {
        blacs_ft::Error::Unrecoverable {
            reason: "a list of the report handed over between processes is corrupt".into(),
        }
        .into()
    })
}

/// What a run of the FT job's body made again after a repair does.
enum RunAgain {
    /// The factorization was lost before its checksums existed: it
    /// starts again from the input.
    Factorization,
    /// The factorization completed: its protected factors are kept, and
    /// the solve (lost before B's checksums existed, or not yet entered)
    /// starts again.
    Solve,
}

impl RunAgain {
    /// Local, from the log (the same on every process): what the body
    /// run again from the call at `first_call` makes again.
    ///
    /// # Errors
    /// [`blacs_ft::Error::Unrecoverable`] when the solve had completed:
    /// a process lost after it took its part of X, which nothing rebuilds
    /// (no kill point is there: only a real failure in the checks' copy
    /// of the factors).
    fn of(region: &Region, first_call: usize) -> Result<RunAgain, scalapack_ft::Error> {
        let calls = region.log().calls().get(first_call..).unwrap_or_default();
        if calls.iter().any(|c| c.status.is_over() && crate::solve::SOLVE_CALLS.contains(&c.name.as_str())) {
            return Err(blacs_ft::Error::Unrecoverable {
                reason: "a process was lost after the solve completed: its part of X is gone".into(),
            }
            .into());
        }
        Ok(if calls.first().is_some_and(|c| c.status.is_over()) { RunAgain::Solve } else { RunAgain::Factorization })
    }

    /// What started again, in the JSON report.
    fn name(&self) -> &'static str {
        match self {
            RunAgain::Factorization => "factorization",
            RunAgain::Solve => "solve",
        }
    }

    /// What the run's line says.
    fn what(&self) -> &'static str {
        match self {
            RunAgain::Factorization => "restarting the factorization",
            RunAgain::Solve => "solving again with the kept factors",
        }
    }

    /// Whose checksums did not exist yet.
    fn whose(&self) -> &'static str {
        match self {
            RunAgain::Factorization => "its",
            RunAgain::Solve => "the solve's",
        }
    }
}

/// Whether this replacement joins an interrupted solve (a kill in
/// `lu --solve`'s `pdgetrs_ft` or `qr --lstsq`'s `pdgels_ft` solve): its
/// program then makes the factorization call before it again, which
/// returns at once with the factors to be rebuilt, and joins the solve
/// (the checks allow such kills only in the main run, whose factorization
/// is the log's call before the solve).
fn joins_a_solve(region: &Region) -> bool {
    let calls = region.log().calls();
    calls.iter().find(|c| !c.status.is_over()).is_some_and(|c| crate::solve::SOLVE_CALLS.contains(&c.name.as_str()))
}

/// pdgetrf's INFO for a singular matrix must be the same on every rank (a
/// replacement learns it from the survivors): checked, not assumed.
/// Collective.
fn agree_on_info(grid: &blacs_ft::Grid, singular: Option<&scalapack_ft::Error>) -> Result<(), scalapack_ft::Error> {
    let info = singular.map_or(0, |e| e.info()) as i64;
    let (mut lowest, mut highest) = ([info], [info]);
    grid.min(Scope::All, &mut lowest)?;
    grid.max(Scope::All, &mut highest)?;
    if lowest != highest {
        return Err(blacs_ft::Error::Unrecoverable {
            reason: format!("the ranks disagree on INFO (from {} to {})", lowest[0], highest[0]),
        }
        .into());
    }
    Ok(())
}

/// A time the comparison needs: a run without a failure always has one.
fn known(secs: Option<f64>) -> Result<f64, scalapack_ft::Error> {
    secs.ok_or_else(|| {
        blacs_ft::Error::Unrecoverable { reason: "a failure-free comparison run has no time".into() }.into()
    })
}

/// CG's iterations (none for a factorization).
fn iterations(f: &Outputs) -> Option<u64> {
    f.solve().and_then(|s| s.report.as_ref()).map(|r| r.iterations)
}

/// The fault-tolerant run, its checks and (`--compare`) the comparison
/// runs. Collective.
fn measure(
    region: &mut Region,
    a: &FactorJob,
    ft: &FtJob,
    prepared: &mut Option<SparePrep>,
) -> Result<FtOutcome, scalapack_ft::Error> {
    let opts = FtOptions { verify: ft.verify, layout: ft.layout };
    // 1. The fault-tolerant run (the kills happen here).
    let joined = region.is_joining();
    let main = timed_ft(region, a, &opts, prepared)?;
    // (A checkpoint-on-failure restart from the top is one too.)
    let restarts = main.restarts + region.restarted_afresh() as usize;
    // A replacement that joined a later repetition's failure run (`--reps`
    // with `--kill`) learns which one, and goes on from there.
    let start_rep = after_failure_run(region, a, ft, joined, 0)?;
    let FtRun { secs, report, factors, singular, fact, shape, restart_repairs, profile, .. } = main;
    let ended_on = region.grid().shape();
    // (Collective: not where a replacement joined a later repetition and
    // the survivors are past the main run.)
    if let (Some(path), 0) = (&a.trace, start_rep) {
        if let Err(e) = crate::phases::write_trace(region.grid(), &profile.spans, path) {
            eprintln!("ftla: {e}");
        }
    }
    let (m, n) = shape;
    // (Only after the main run: the survivors of a later repetition's
    // failure run go straight on with the comparison.)
    if start_rep == 0 {
        agree_on_info(region.grid(), singular.as_ref())?;
    }
    print_recoveries(region, &report, None, opts.layout);
    // 2. Checks against the original matrix (regenerated or re-read). (A
    // replacement that joined a later repetition has no main run's result.)
    let mut residuals = factors::Residuals::default();
    if start_rep == 0 {
        residuals = factors::check(region.grid(), a, None, &fact, &factors)?;
        factors::write(region.grid(), a, &fact, &factors)?;
    }
    drop(fact);
    // 3. Same-run comparison: the plain factorization, and the
    // failure-free FT one.
    let compare = if ft.compare {
        let had_failure = !report.recoveries.is_empty() || restarts > 0;
        let main = MainRun {
            secs,
            iterations: iterations(&factors),
            had_failure,
            model: report.overhead_model,
            parts: profile.seconds.clone(),
        };
        Some(compare_runs(region, a, ft, &opts, &main, start_rep, joined)?)
    } else {
        None
    };
    // (The planned flops, not the run's: the same on every rank, so that
    // every rank times the same order.)
    let (dgemm, dgemm_order) = local_dgemm_gflops(region.grid(), a.planned_flops(m, n))?;
    let checkpoints = region
        .checkpoints()
        .iter()
        .map(|c| CheckpointEntry { step: c.step, bytes: c.bytes, write_ms: round_ms(c.write_ms) })
        .collect();
    let checkpoints = longest_list(region.grid(), checkpoints)?;
    // (A replacement did not load the checkpoints: the survivors say.)
    let mut at = [region.resumed_at_step().map_or(-1, |s| s as i64)];
    region.grid().max(Scope::All, &mut at)?;
    let resumed_at_step = u64::try_from(at[0]).ok();
    // (Young and Daly's interval is known where the first checkpoint was
    // taken: not on a replacement that joined later.)
    let mut every = [region.checkpoint_interval().map_or(-1.0, |d| d.as_secs_f64())];
    region.grid().max(Scope::All, &mut every)?;
    let checkpoint_interval_s = (every[0] >= 0.0).then_some(every[0]);
    let (placement, nodes) = (region.grid().placement(), region.grid().start_nodes().to_vec());
    Ok(FtOutcome {
        profile,
        placement,
        nodes,
        m,
        n,
        secs,
        report,
        factors,
        singular,
        residuals,
        restarts,
        restart_repairs,
        ended_on,
        checkpoints,
        checkpoint_interval_s,
        resumed_at_step,
        compare,
        dgemm,
        dgemm_order,
    })
}

/// The run's first line (grid rank 0; a replacement that starts a
/// restarted factorization from the top does not print it again).
fn announce(region: &Region, a: &FactorJob, ft: &FtJob) {
    if region.grid().rank() != 0 || region.is_joining() || region.grid().replacement().is_some() {
        return;
    }
    println!(
        "ftla {} --ft: {}x{} matrix, NB {}, {} grid + {} spare(s), {} checksums, OpenBLAS kernel {}",
        a.op.name(),
        a.shape().map_or(a.m, |s| s.0),
        a.shape().map_or(a.n, |s| s.1),
        a.nb,
        a.grid,
        ft.spares,
        ft.layout,
        blas::kernel_name(),
    );
    if !ft.kill.is_empty() {
        println!("  kill points armed: {}", armed_kills(ft));
    }
}

/// `1@qr:3:update (FTLA_KILL), 1@qr:6:update (--kill)`: every armed
/// point, in the order armed, with where it came from (a point given by
/// both is armed once, as FTLA_KILL's).
fn armed_kills(ft: &FtJob) -> String {
    let from_env = ft.kill_from_env.specs();
    let points: Vec<String> = ft
        .kill
        .specs()
        .iter()
        .map(|k| format!("{k} ({})", if from_env.contains(k) { "FTLA_KILL" } else { "--kill" }))
        .collect();
    points.join(", ")
}

/// `ftla qr|lu|cg --ft` inside the job: measure, then the text (and the
/// JSON report) on grid rank 0. Returns whether it passed and the summary.
fn run_ft(
    region: &mut Region,
    a: &FactorJob,
    ft: &FtJob,
    prepared: &mut Option<SparePrep>,
) -> Result<(bool, String), scalapack_ft::Error> {
    announce(region, a, ft);
    let outcome = measure(region, a, ft, prepared)?;
    let ok = outcome.ok();
    let lines = outcome.text(a);
    if region.grid().rank() == 0 {
        println!("{}{}", lines.join("\n  "), if ok { "" } else { "\n  FAILED" });
        if let Some(path) = &a.json {
            if let Err(e) = write_json(path, &outcome.json(a, ft)) {
                eprintln!("ftla: {e}");
                return Ok((false, e));
            }
        }
    }
    Ok((ok, lines.join("; ")))
}
