//! The `pdgeqrf_ft` driver: a short step loop (panel, broadcast, update,
//! agree, commit) with one place where failures turn into a repair and a
//! rebuild.

use super::encode::{encode_checksums, Extended, Start};
use super::rebuild::{lost_ranks, rebuild_lost_blocks};
use super::verify::{verify_checksums, ChecksumCheck};
use super::workspace::FtWorkspace;
use crate::blas::Trans;
use crate::error::{agree_on_arguments, check_finite, Error, Result};
use crate::matrix::DistMatrix;
use crate::qr::factor::check_square_blocks;
use crate::qr::reflectors::{factor_panel, Panel};
use blacs_ft::{PendingBcast, Scope};
use recovery::{CallState, Region};
use std::time::Instant;

/// Options of [`pdgeqrf_ft`].
#[derive(Clone, Debug, Default)]
pub struct FtOptions {
    /// Check the checksum relations at the end and report them.
    pub verify: bool,
    /// Test hook for silent-error detection: at the commit of step `.1`,
    /// grid rank `.0` adds 1.0 to one element of its trailing data.
    pub corrupt: Option<(i32, u64)>,
}

/// One recovery, the same on every rank.
#[derive(Clone, Debug, PartialEq)]
pub struct RecoveryRecord {
    /// Grid ranks whose blocks were rebuilt.
    pub ranks: Vec<i32>,
    /// Committed steps when the failure was handled (the step that was redone).
    pub step: u64,
    /// Phase in which the failure surfaced: panel, bcast, update or commit.
    pub phase: String,
    /// From the start of the interrupted phase to the error (upper bound on detection).
    pub detect_ms: f64,
    /// Grid repair: revoke, shrink, spawn or spare, merge, split.
    pub repair_ms: f64,
    /// Rebuilding the lost blocks from the checksums.
    pub rebuild_ms: f64,
    pub total_ms: f64,
    /// "spawn" or "spare".
    pub mode: String,
}

/// What [`pdgeqrf_ft`] did besides factoring.
#[derive(Clone, Debug, Default)]
pub struct FtReport {
    pub recoveries: Vec<RecoveryRecord>,
    /// Predicted extra trailing-update work of the checksums, as a fraction.
    pub overhead_model: f64,
    /// The checksum relations at the end (with `FtOptions::verify`).
    pub check: Option<ChecksumCheck>,
}

const PHASES: [&str; 4] = ["panel", "bcast", "update", "commit"];

/// Fault-tolerant QR factorization: the same result as
/// [`crate::qr::pdgeqrf`] (R and V in `a`, `tau` replicated), computed with
/// reverse-neighboring checksums so that any one lost process per process
/// row can be rebuilt mid-factorization.
///
/// * `region` (global): the resilient region holding the grid and the status
///   log (the call records its committed steps there).
/// * `a` (local input/output): M×N, square blocks (MB = NB), Q ≥ 2.
/// * `tau` (global output): min(M, N) Householder scalars.
///
/// # Fault tolerance
/// A process failure in any phase of a step is repaired in place: the grid
/// is repaired (spawned replacement or hot spare), every survivor is at the
/// last committed step, the lost blocks — data, checksum copies and the
/// left-factor sums — are rebuilt by row-wise reductions, and the loop
/// resumes. A replacement process calls `pdgeqrf_ft` with a matrix of the
/// same shape (its content is rebuilt) and joins through the region's log.
/// Two losses in one process row are reported as [`blacs_ft::Error::Unrecoverable`]
/// on every survivor.
///
/// A process lost before the checksums are encoded (the call's first
/// commit point) took blocks nothing protects yet: every survivor then
/// forgets the call in the region's log and returns a process-failure
/// error, with `a` still holding its input. Repair the grid
/// ([`Region::run`] does) and call again with the input — a replacement,
/// which runs the region's body from the top, re-reads or regenerates its
/// part.
pub fn pdgeqrf_ft(region: &mut Region, a: &mut DistMatrix, tau: &mut Vec<f64>, opts: &FtOptions) -> Result<FtReport> {
    pdgeqrf_ft_in(region, a, tau, opts, &mut FtWorkspace::new())
}

/// [`pdgeqrf_ft`] in caller-owned scratch:
///
/// * `a` (local input/output): as in [`pdgeqrf_ft`]. When its storage has
///   room for the padding and checksum columns after its local array
///   ([`FtWorkspace::in_place`] makes it), the factorization runs in that
///   storage and A is copied neither in nor out.
/// * `work` (local workspace): the D_g sums, and the extended matrix when
///   `a` has no room ([`FtWorkspace::for_matrix`] sizes it ahead; an empty
///   one grows). Reusing it across calls avoids allocating and
///   first-touching that memory on every call. Its content is overwritten.
///
/// A is unchanged after an argument error and after a failure before the
/// checksums exist (see [`pdgeqrf_ft`]); after any other error its content
/// is undefined.
///
/// # Fault tolerance
/// As [`pdgeqrf_ft`]; a replacement process may pass any workspace.
pub fn pdgeqrf_ft_in(
    region: &mut Region,
    a: &mut DistMatrix,
    tau: &mut Vec<f64>,
    opts: &FtOptions,
    work: &mut FtWorkspace,
) -> Result<FtReport> {
    let (state, joining) = region.enter_call("pdgeqrf_ft");
    if let CallState::Done { replicated } = state {
        // Completed before a later failure: the result is already in `a`.
        *tau = replicated;
        return Ok(FtReport::default());
    }
    let grid = region.grid();
    let q = grid.npcol() as usize;
    let layout = checksum::ReverseNeighborLayout::new(a.m(), a.n(), a.nb(), grid.nprow() as usize, q);
    let mut check = check_square_blocks("pdgeqrf_ft", a, 2).and_then(|()| first_block_at_origin(a)).and_then(|()| {
        layout.as_ref().map(|_| ()).map_err(|e| Error::Argument {
            routine: "pdgeqrf_ft".into(),
            position: 2,
            entry: 0,
            name: "A".into(),
            reason: format!("cannot carry reverse-neighboring checksums: {e}"),
        })
    });
    if matches!(state, CallState::Resume { .. }) && !joining {
        // Only a replacement meets an interrupted call: survivors finish
        // theirs inside it, and a call that failed before its first commit
        // point was forgotten (see `factor_extended`).
        return Err(blacs_ft::Error::Unrecoverable {
            reason: "pdgeqrf_ft: this call was interrupted on this process; only a replacement joining the \
                     survivors' recovery can resume it"
                .into(),
        }
        .into());
    }
    if !joining {
        // (A replacement's A is meaningless until it is rebuilt.)
        check = check.and_then(|()| check_finite("pdgeqrf_ft", 3, a));
    }
    // The extended matrix is set up before the verdict, so that a process
    // that cannot get its memory says so in the agreement (A is untouched
    // until the encoding).
    let start = if joining { Start::Join } else { Start::Fresh };
    let mut ext = None;
    if let (Ok(()), Ok(layout)) = (&check, &layout) {
        match Extended::new(grid, a, layout, work, start) {
            Ok(e) => ext = Some(e),
            Err(e) => check = Err(e),
        }
    }
    // The verdict comes from an agreement, which every rank leaves with
    // the same answer even if a process fails meanwhile: all go on to the
    // encoding, or all return. A joining replacement skips it (the
    // survivors are past it).
    if !joining {
        grid.inject("qr", 0, "args");
    }
    let verdict = if joining { Ok(check.is_ok()) } else { grid.agree(check.is_ok()) };
    let refused = match verdict {
        Ok(true) => None,
        Ok(false) if joining => {
            // The survivors are inside their recovery: tell them, and
            // return what every process then returns.
            let why = check.err().map_or_else(|| "no extended matrix".to_string(), |e| e.to_string());
            if let Some(ext) = ext {
                ext.release(a, work, false);
            }
            return Err(region.refuse_join(format!("replacement grid rank {}: {why}", region.grid().rank())).into());
        }
        Ok(false) => {
            // Bad arguments (or no memory) somewhere: the same typed error
            // everywhere. The call did nothing; a re-run of the region's
            // body meets it afresh. (Had the offending rank died since, a
            // process failure is reported instead.)
            Some(
                agree_on_arguments(grid, check)
                    .err()
                    .unwrap_or_else(|| blacs_ft::Error::ProcFailed { ranks: Vec::new() }.into()),
            )
        }
        // A process lost before anything was touched (see below).
        Err(e) => Some(e.into()),
    };
    if let Some(err) = refused {
        if let Some(ext) = ext {
            ext.release(a, work, false);
        }
        region.abandon_call();
        return Err(err);
    }
    let (Some(mut ext), Ok(layout)) = (ext, layout) else {
        return Err(blacs_ft::Error::Unrecoverable {
            reason: "pdgeqrf_ft: no extended matrix after the checks".into(),
        }
        .into());
    };
    let mut report = FtReport { overhead_model: layout.overhead_model(), ..FtReport::default() };
    // One exit from here on: A gets its storage (or its blocks) back
    // whatever the outcome.
    let result = factor_extended(region, &mut ext, &layout, &state, tau, opts);
    ext.release(a, work, result.is_ok());
    (report.recoveries, report.check) = result?;
    region.complete(tau);
    Ok(report)
}

/// The checksum-extended matrix starts on process (0, 0): so must A.
fn first_block_at_origin(a: &DistMatrix) -> Result<()> {
    for (entry, name, src) in [(7, "RSRC_A", a.desc().rsrc()), (8, "CSRC_A", a.desc().csrc())] {
        if src != 0 {
            return Err(Error::Argument {
                routine: "pdgeqrf_ft".into(),
                position: 2,
                entry,
                name: name.into(),
                reason: format!("must be 0 (the first block on process (0, 0)), got {src}"),
            });
        }
    }
    Ok(())
}

/// The body of [`pdgeqrf_ft_in`] once the extended matrix exists: the
/// encoding (of a fresh call), then the step loop with its repairs.
/// Returns the recoveries and the checksum check.
fn factor_extended(
    region: &mut Region,
    ext: &mut Extended,
    layout: &checksum::ReverseNeighborLayout,
    state: &CallState,
    tau: &mut Vec<f64>,
    opts: &FtOptions,
) -> Result<(Vec<RecoveryRecord>, Option<ChecksumCheck>)> {
    let mut recoveries = Vec::new();
    let kmax = ext.e.m().min(ext.data_n());
    let panels = kmax.div_ceil(ext.e.nb());
    let mut committed = 0usize;
    tau.clear();
    tau.resize(kmax, 0.0);
    if let CallState::Resume { committed: c, replicated } = state {
        committed = *c as usize;
        tau[..replicated.len().min(kmax)].copy_from_slice(&replicated[..replicated.len().min(kmax)]);
    }
    let joining = !matches!(state, CallState::Fresh);
    if !joining {
        let grid = region.grid();
        let t = Instant::now();
        grid.inject("qr", 0, "encode");
        let encoded = encode_checksums(grid, ext, layout);
        if std::env::var_os("FTLA_DEBUG").is_some() {
            eprintln!("[ftla rank {}] encode {:.1} ms", grid.rank(), t.elapsed().as_secs_f64() * 1e3);
        }
        // The first commit point: the checksums protect every block once
        // every process has encoded its share. A process lost before then
        // took unprotected blocks with it, which nothing can rebuild. Every
        // survivor learns it here (whichever collective failed on it),
        // forgets the call and reports a process failure, so that the
        // region repairs the grid and runs its body again — the call then
        // starts afresh everywhere, replacements included.
        if !matches!(grid.agree(encoded.is_ok()), Ok(true)) {
            region.abandon_call();
            return Err(match encoded {
                Err(e) if !e.is_process_failure() => e,
                _ => blacs_ft::Error::ProcFailed { ranks: Vec::new() }.into(),
            });
        }
    }
    // A joining replacement starts in the recovery of the survivors: its
    // blocks are invalid until they are rebuilt.
    let mut valid = !joining;
    let mut failure: Option<(&'static str, f64, bool)> = joining.then_some(("panel", 0.0, false));
    loop {
        if let Some((phase, detect_ms, mut need_repair)) = failure.take() {
            let record = loop {
                let t = Instant::now();
                let mode = if need_repair { Some(region.repair()?.mode) } else { None };
                need_repair = true;
                let repair_ms = t.elapsed().as_secs_f64() * 1e3;
                let mine = valid.then_some((phase, detect_ms, repair_ms, mode));
                match after_repair(region, ext, layout, &mut committed, tau, mine) {
                    Ok(r) => break r,
                    Err(e) if e.is_process_failure() => continue,
                    Err(e) => return Err(e),
                }
            };
            valid = true;
            recoveries.push(record);
        }
        match run_steps(region, ext, layout, &mut committed, panels, tau, opts)
            .and_then(|()| finish(region, ext, layout, committed, opts))
        {
            Ok(check) => return Ok((recoveries, check)),
            Err((e, phase, since)) if e.is_process_failure() => {
                failure = Some((phase, since.elapsed().as_secs_f64() * 1e3, true));
            }
            Err((e, _, _)) => return Err(e),
        }
    }
}

type StepError = (Error, &'static str, Instant);

/// The next panel as its owner carries it into the next step: the factored
/// reflectors (or the error that stopped them), the panel's backup, and its
/// broadcast in flight.
type LookAhead = (Result<Panel>, Vec<f64>, Option<PendingBcast<f64>>);

/// What phase 1 of a step hands to the commit: the panel's reflectors, the
/// reduced W and the local columns to update.
type StepScratch = (Panel, Vec<f64>, std::ops::Range<usize>);

/// After a repair, collective over the grid (survivors and replacements):
/// agree on the lost ranks and the committed step, share tau, rebuild the
/// lost blocks, and agree on one record of the recovery. `mine` is `None`
/// on a process whose blocks are being rebuilt, else the survivor's own
/// (phase, detection ms, repair ms, repair mode).
fn after_repair(
    region: &mut Region,
    ext: &mut Extended,
    layout: &checksum::ReverseNeighborLayout,
    committed: &mut usize,
    tau: &mut [f64],
    mine: Option<(&'static str, f64, f64, Option<blacs_ft::RepairMode>)>,
) -> Result<RecoveryRecord> {
    let t = Instant::now();
    let valid = mine.is_some();
    let grid = region.grid();
    let lost = lost_ranks(grid, valid)?;
    let t_met = t.elapsed().as_secs_f64() * 1e3;
    // Survivors agree on the committed step (a replacement learnt it from
    // the log; it offers no opinion).
    let mut lo = [if valid { *committed as i64 } else { i64::MAX }];
    let mut hi = [if valid { *committed as i64 } else { i64::MIN }];
    grid.min(Scope::All, &mut lo)?;
    grid.max(Scope::All, &mut hi)?;
    if lo[0] != hi[0] {
        return Err(blacs_ft::Error::Unrecoverable {
            reason: format!("survivors disagree on the committed step ({} vs {})", lo[0], hi[0]),
        }
        .into());
    }
    *committed = lo[0] as usize;
    // tau is replicated: the lowest valid rank's copy is everybody's.
    if let Some(holder) = grid.lowest_rank_where(valid)? {
        grid.broadcast(Scope::All, tau, holder)?;
    }
    let t_rb = Instant::now();
    rebuild_lost_blocks(grid, ext, layout, *committed, &lost)?;
    if std::env::var_os("FTLA_DEBUG").is_some() {
        eprintln!(
            "[ftla rank {}] after repair: met the replacements after {t_met:.1} ms, rebuild {:.1} ms",
            grid.rank(),
            t_rb.elapsed().as_secs_f64() * 1e3
        );
    }
    let rebuild_ms = t.elapsed().as_secs_f64() * 1e3;
    let (phase, detect_ms, repair_ms, mode) = mine.unwrap_or(("panel", 0.0, 0.0, None));
    let mode_code = match mode {
        Some(blacs_ft::RepairMode::Spawn) => 2.0,
        Some(blacs_ft::RepairMode::Spare) => 1.0,
        _ => 0.0,
    };
    // The earliest phase any survivor saw the failure in (a replacement has
    // no opinion): the phase of the step the failure interrupted.
    let phase_code = if valid { -(PHASES.iter().position(|p| *p == phase).unwrap_or(0) as f64) } else { f64::MIN };
    let mut v = [detect_ms, repair_ms, rebuild_ms, phase_code, mode_code];
    grid.max(Scope::All, &mut v)?;
    v[3] = -v[3];
    region.commit(*committed as u64, tau);
    Ok(RecoveryRecord {
        ranks: lost,
        step: *committed as u64,
        phase: PHASES[(v[3] as usize).min(3)].to_string(),
        detect_ms: v[0],
        repair_ms: v[1],
        rebuild_ms: v[2],
        total_ms: v[0] + v[1] + v[2],
        mode: match v[4] as i32 {
            2 => "spawn",
            1 => "spare",
            _ => "none",
        }
        .to_string(),
    })
}

/// The end of the call, itself a commit point: the optional checksum
/// verification and one last agreement that every rank is alive, so that a
/// process lost during the last step is rebuilt before the call returns.
fn finish(
    region: &Region,
    ext: &Extended,
    layout: &checksum::ReverseNeighborLayout,
    committed: usize,
    opts: &FtOptions,
) -> std::result::Result<Option<ChecksumCheck>, StepError> {
    let since = Instant::now();
    let grid = region.grid();
    let check = if opts.verify {
        match verify_checksums(grid, ext, layout, committed) {
            Ok(c) => Some(c),
            Err(e) => {
                if e.is_process_failure() {
                    let _ = grid.agree(false);
                }
                return Err((e, "commit", since));
            }
        }
    } else {
        None
    };
    match grid.agree(true) {
        Ok(true) => Ok(check),
        Ok(false) => Err((blacs_ft::Error::ProcFailed { ranks: Vec::new() }.into(), "commit", since)),
        Err(e) => Err((e.into(), "commit", since)),
    }
}

/// Steps `committed..panels`. On error returns the error, the phase and
/// when that phase started; the matrix is then at the last committed step.
fn run_steps(
    region: &mut Region,
    ext: &mut Extended,
    layout: &checksum::ReverseNeighborLayout,
    committed: &mut usize,
    panels: usize,
    tau: &mut [f64],
    opts: &FtOptions,
) -> std::result::Result<(), StepError> {
    let nb = ext.e.nb();
    let kmax = tau.len();
    // Look-ahead: the next panel's owner factors it during the local commit
    // of the current step (on a backed-up copy, like any panel) and starts
    // sending it at once: its reflectors (or the error that stopped it),
    // the backup, and the broadcast in flight.
    let mut ahead: Option<LookAhead> = None;
    while *committed < panels {
        let k = *committed;
        let (j0, jb) = (k * nb, nb.min(kmax - k * nb));
        let grid = region.grid();
        let mycol = grid.mycol() as usize;
        let owner = ext.e.col_owner(j0);
        let lrows = ext.e.local_rows() - ext.e.local_rows_before(j0);
        let lc0 = ext.e.local_cols_before(j0);

        // Phase 1: panel (on a backed-up panel), broadcasts, reduction.
        let mut phase = "panel";
        let mut since = Instant::now();
        grid.inject("qr", k as u64, phase);
        let (early, backup, sending) = match ahead.take() {
            Some((panel, backup, sending)) => (Some(panel), Some(backup), sending),
            None => (None, (mycol == owner).then(|| ext.panel_backup(lc0, jb)), None),
        };
        let attempt = (|| -> Result<StepScratch> {
            let mine = match (mycol == owner, early) {
                (false, _) => None,
                (true, Some(done)) => Some(done?),
                (true, None) => Some(factor_panel(grid, &mut ext.e, j0, jb)?),
            };
            phase = "bcast";
            since = Instant::now();
            grid.inject("qr", k as u64, phase);
            // V and T: the D_g holders take the left factor from V.
            let panel = match (mine, sending) {
                // Sent during the previous commit: only its completion is left.
                (Some(done), Some(pending)) => {
                    grid.wait_broadcast(pending)?;
                    done
                }
                (mine, _) => Panel::broadcast(grid, mine, owner, j0, jb, lrows)?,
            };
            phase = "update";
            since = Instant::now();
            grid.inject("qr", k as u64, phase);
            let cols = ext.e.local_cols_before(j0 + jb)..ext.e.local_cols_before(layout.active_end_col(k));
            // Phase 2: the commit point. With one process row W needs no
            // communication, so it is formed while the agreement runs.
            let (w, agreed) = if grid.nprow() > 1 {
                let mut w = panel.local_w(&ext.e, cols.clone());
                panel.reduce_w(grid, &mut w)?;
                phase = "commit";
                since = Instant::now();
                (w, grid.agree(true)?)
            } else {
                phase = "commit";
                since = Instant::now();
                let started = grid.start_agree(true)?;
                let w = panel.local_w(&ext.e, cols.clone());
                (w, grid.finish_agree(started)?)
            };
            if !agreed {
                return Err(blacs_ft::Error::ProcFailed { ranks: Vec::new() }.into());
            }
            Ok((panel, w, cols))
        })();
        let (panel, mut w, cols) = match attempt {
            Ok(x) => x,
            Err(e) => {
                if let Some(b) = backup {
                    ext.restore_panel(lc0, &b);
                }
                // Everyone meets at the commit point even after an error
                // (the agreement works on revoked communicators): ranks
                // waiting there learn that the step failed.
                if phase != "commit" && e.is_process_failure() {
                    let _ = grid.agree(false);
                }
                return Err((e, phase, since));
            }
        };
        grid.inject("qr", k as u64, "commit");
        // Phase 3: local commit, no communication — except that the owner of
        // the next panel updates and factors it first (look-ahead), so that
        // the other process columns do not wait for it at the next step.
        panel.scale_w(Trans::Yes, &mut w, cols.len());
        let next = (k + 1 < panels).then(|| ((k + 1) * nb, nb.min(kmax - (k + 1) * nb)));
        match next {
            Some((n0, nw)) if ext.e.col_owner(n0) == mycol => {
                let ncols = ext.e.local_cols_before(n0)..ext.e.local_cols_before(n0 + nw);
                panel.update_cols(&mut ext.e, cols.start, ncols.clone(), &w);
                let nbackup = ext.panel_backup(ncols.start, nw);
                let mut early = factor_panel(grid, &mut ext.e, n0, nw);
                // Start sending it now, so that the other columns find it
                // waiting.
                let mut sending = None;
                if let Ok(p) = &early {
                    match p.start_send(grid, mycol) {
                        Ok(s) => sending = s,
                        Err(e) => early = Err(e),
                    }
                }
                if early.is_err() {
                    ext.restore_panel(ncols.start, &nbackup);
                }
                ahead = Some((early, nbackup, sending));
                panel.update_cols(&mut ext.e, cols.start, ncols.end..cols.end, &w);
            }
            _ => panel.update_cols(&mut ext.e, cols.start, cols.clone(), &w),
        }
        ext.accumulate_finished(layout, k, &panel);
        tau[j0..j0 + jb].copy_from_slice(&panel.tau());
        *committed = k + 1;
        if opts.corrupt == Some((grid.rank(), k as u64)) {
            ext.corrupt_trailing(j0 + jb);
        }
        region.commit(*committed as u64, tau);
    }
    Ok(())
}
