//! Checkpoint-on-failure (CoF; docs/architecture.md, "Checkpoint-on-failure"): for jobs whose grid cannot be
//! repaired in place (the batch system refuses `MPI_Comm_spawn`, no hot
//! spare is left, or the policy says so).
//!
//! Nothing is saved while nothing fails. When a process is lost, every
//! survivor writes its committed state — its blocks of the extended
//! matrix, the left-factor sums, the call's replicated state and the
//! status of the call — to one file per grid rank ([`file`](mod@file)), and the job
//! ends ([`blacs_ft::launch::EXIT_CHECKPOINTED`]). The launcher starts a new
//! job, which loads the files at the start of its region (`load`); the
//! interrupted call resumes at its committed step, the lost process's
//! blocks rebuilt by the same ABFT code as after an in-place repair.
//!
//! What the MPI must provide: that survivors regain control after a
//! process dies (Open MPI 5: `mpiexec --with-ft ulfm`, which `ftla` and
//! `ftla launch` pass). Without it the runtime ends the whole job (Open
//! MPI's default), or the survivors block for ever in their next
//! collective (`--enable-recovery` without ULFM), and no recovery of any
//! kind is possible. Spawning, shrinking and merging are not needed.

pub mod file;
pub mod incremental;
pub mod periodic;

pub use file::{Header, SavedCall};
pub use periodic::{CheckpointRecord, Manifest};

use crate::StatusLog;
use blacs_ft::launch::{
    CheckpointInterval, CHECKPOINT_DIR_VAR, CHECKPOINT_EVERY_VAR, CHECKPOINT_PARITY_VAR, EPOCH_BASE_VAR,
    EXIT_CHECKPOINTED, KEEP_CHECKPOINTS_VAR, MTBF_VAR, REBUILD_CHECKPOINT_VAR, RECOVERY_VAR, RESTARTS_VAR, RESUME_VAR,
    RUN_ID_VAR,
};
use blacs_ft::{Error, Grid, Scope};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// How a resilient region recovers from a lost process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Policy {
    /// Repair the grid in place (ULFM: a hot spare or a spawned process).
    #[default]
    InPlace,
    /// Checkpoint-on-failure: the survivors save and the job is started again.
    Cof,
    /// In place while possible — a hot spare, a spawned process, and
    /// inside a fault-tolerant call a shrink onto the processes left (see
    /// [`Policy::Shrink`]) — and checkpoint-on-failure when that is refused
    /// (or without a usable ULFM).
    Auto,
    /// FT-MPI's SHRINK: a hot spare while one is parked; otherwise, inside
    /// a fault-tolerant call, the survivors go on as a smaller grid
    /// (nothing is spawned). The call returns its result on that grid: the
    /// matrices it was given come back distributed on it. A loss between
    /// calls needs a spare. Refused for C programs (their arrays and
    /// descriptors are their own): see [`RegionOptions::no_shrink`].
    Shrink,
}

impl Policy {
    /// `inplace`, `cof`, `auto` or `shrink`.
    pub fn name(self) -> &'static str {
        match self {
            Policy::InPlace => "inplace",
            Policy::Cof => "cof",
            Policy::Auto => "auto",
            Policy::Shrink => "shrink",
        }
    }

    /// The policy called `name`.
    pub fn parse(name: &str) -> Option<Policy> {
        [Policy::InPlace, Policy::Cof, Policy::Auto, Policy::Shrink].into_iter().find(|p| p.name() == name)
    }
}

/// The recovery settings of a region.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RegionOptions {
    /// The recovery policy.
    pub policy: Policy,
    /// Where checkpoints go (`None`: see [`RegionOptions::dir`]).
    pub checkpoint_dir: Option<PathBuf>,
    /// The run's identity, written in every checkpoint (a resumed job
    /// adopts its checkpoints').
    pub run_id: u64,
    /// Load the checkpoints in the directory at the region's start.
    pub resume: bool,
    /// Recoveries of the run before this job.
    pub epoch_base: u32,
    /// Restarts of the run before this job.
    pub restarts: u32,
    /// Periodic checkpoints in [`RegionOptions::dir`] (`None`: none; every
    /// so often, zero: at every commit point; or at Young and Daly's
    /// interval; see [`periodic`]). They outlive the loss of the whole
    /// job, which no other recovery does.
    pub checkpoint_every: Option<CheckpointInterval>,
    /// Keep the periodic checkpoints after every call of the region
    /// completed (by default they are removed then).
    pub keep_checkpoints: bool,
    /// Periodic checkpoints save the checksum columns and left-factor sums
    /// too: files missing for up to the layout's losses per process row
    /// are then rebuilt when resuming on the grid of the save (checkpoints
    /// on node-local disks). By default they hold the data only, and the
    /// checksums are encoded again when resuming (a file missing is then
    /// refused).
    pub checkpoint_parity: bool,
    /// A resumed job that only rebuilds its checkpoint's missing files: it
    /// loads the save on the grid of the save, rebuilds the blocks of the
    /// processes whose file is missing from the checksums, writes every
    /// process's file again (as checkpoint-on-failure does) and returns
    /// [`Error::Checkpointed`] from the interrupted call; another grid
    /// then resumes the complete save (`ftla` runs such a job itself first,
    /// with `FTLA_REBUILD_CHECKPOINT=1`).
    pub rebuild_checkpoint: bool,
    /// Never shrink the grid: a program whose arrays and descriptors are
    /// its own (the C ABI) cannot have them moved onto a smaller grid.
    /// `auto` then skips the shrink, and `shrink` repairs with a spare
    /// only (a loss with none left is unrecoverable, never a wrong
    /// answer).
    pub no_shrink: bool,
}

impl RegionOptions {
    /// The settings the launcher (`ftla`, `ftla launch`) passes to every
    /// process: `FTLA_RECOVERY`, `FTLA_CHECKPOINT_DIR`, `FTLA_RUN_ID`,
    /// `FTLA_RESUME`, `FTLA_EPOCH_BASE`, `FTLA_RESTARTS`,
    /// `FTLA_CHECKPOINT_EVERY` (with `auto`, `FTLA_MTBF`),
    /// `FTLA_KEEP_CHECKPOINTS`, `FTLA_CHECKPOINT_PARITY`,
    /// `FTLA_REBUILD_CHECKPOINT` (unset or empty: the defaults, in-place
    /// repair).
    pub fn from_env() -> Result<RegionOptions, Error> {
        let var = |v: &str| std::env::var(v).ok().filter(|s| !s.is_empty());
        let bad = |v: &str, why: &str| Error::invalid(v, why.to_string());
        let policy = match var(RECOVERY_VAR) {
            None => Policy::InPlace,
            Some(p) => Policy::parse(&p).ok_or_else(|| bad(RECOVERY_VAR, "must be inplace, cof, auto or shrink"))?,
        };
        let number = |v: &str| -> Result<u32, Error> {
            var(v).map_or(Ok(0), |s| s.parse().map_err(|_| bad(v, "must be a non-negative integer")))
        };
        Ok(RegionOptions {
            policy,
            checkpoint_dir: var(CHECKPOINT_DIR_VAR).map(PathBuf::from),
            run_id: match var(RUN_ID_VAR) {
                None => 0,
                Some(s) => u64::from_str_radix(&s, 16).map_err(|_| bad(RUN_ID_VAR, "must be hexadecimal"))?,
            },
            resume: var(RESUME_VAR).is_some_and(|s| s != "0"),
            epoch_base: number(EPOCH_BASE_VAR)?,
            restarts: number(RESTARTS_VAR)?,
            checkpoint_every: match var(CHECKPOINT_EVERY_VAR) {
                None => None,
                Some(s) => Some(
                    CheckpointInterval::parse(&s, var(MTBF_VAR).as_deref())
                        .map_err(|why| bad(CHECKPOINT_EVERY_VAR, &why))?,
                ),
            },
            keep_checkpoints: var(KEEP_CHECKPOINTS_VAR).is_some_and(|s| s != "0"),
            checkpoint_parity: var(CHECKPOINT_PARITY_VAR).is_some_and(|s| s != "0"),
            rebuild_checkpoint: var(REBUILD_CHECKPOINT_VAR).is_some_and(|s| s != "0"),
            no_shrink: false,
        })
    }

    /// The checkpoint directory: the one set, else
    /// `$TMPDIR/ftla-checkpoints-RUNID` (on one node; a job on several
    /// nodes needs one on a file system they share).
    pub fn dir(&self) -> PathBuf {
        self.checkpoint_dir
            .clone()
            .unwrap_or_else(|| std::env::temp_dir().join(format!("ftla-checkpoints-{:016x}", self.run_id)))
    }
}

/// What a process saves when the grid is not repaired in place.
pub enum Saving<'a> {
    /// Nothing valid: its blocks were being rebuilt (they are rebuilt
    /// again in the restarted job).
    Nothing,
    /// No call in progress: the restarted job runs the region's body from
    /// the top.
    NothingInProgress,
    /// The current call's committed state.
    Call(Snapshot<'a>),
}

/// A call's committed state on this process.
pub struct Snapshot<'a> {
    /// The local arrays (see `protocol::Algorithm::saved_arrays`).
    pub arrays: Vec<&'a [f64]>,
    /// The call's description (its algorithm's `Call`, in the one codec).
    pub description: Vec<u8>,
    /// Where this process saw the failure, and how long detecting it took.
    pub phase: crate::protocol::Phase,
    pub detect_ms: f64,
    /// Time the call ran so far (this job and the jobs before it).
    pub elapsed_s: f64,
    /// The call's earlier recoveries.
    pub history: Vec<crate::protocol::RecoveryRecord>,
    /// Lost processes per process row the call's checksums rebuild
    /// (`protocol::Algorithm::tolerated_losses`).
    pub tolerated_losses: usize,
    /// What no later step changes of each of the first arrays (a
    /// periodic checkpoint writes it once; see [`incremental`]); `None`:
    /// every array is saved whole.
    pub frozen: Option<Vec<incremental::Frozen>>,
    /// The arrays hold the data only (`protocol::Algorithm::data_arrays`):
    /// the checksums are encoded again when resuming.
    pub data_only: bool,
}

/// Writes this process's checkpoint (`saving`) and waits for the other
/// survivors to have written theirs; returns the error every survivor
/// returns, [`Error::Checkpointed`]. A process that cannot write says why
/// on standard error: its blocks are then missing in the restarted job,
/// which rebuilds them if it can and names the files if it cannot.
pub(crate) fn save(grid: &Grid, opts: &RegionOptions, log: &StatusLog, saving: Saving<'_>) -> Error {
    let dir = opts.dir();
    // (The failure is one more recovery of the run.)
    let epoch = opts.epoch_base.saturating_add(grid.epoch()).saturating_add(1);
    let mut header = header_of(grid, opts, log, epoch);
    let current = log.current();
    let step = current.map_or(0, |(_, c)| c.committed);
    let written = match saving {
        Saving::Nothing => None,
        Saving::NothingInProgress => Some(file::write(&dir, &mut header, &[])),
        Saving::Call(s) => Some(match current {
            None => Err("no call in progress in the status log".to_string()),
            Some((index, c)) => {
                header.call = Some(SavedCall {
                    index: index as u64,
                    name: c.name.clone(),
                    committed: c.committed,
                    state: c.replicated.clone(),
                    description: s.description,
                    phase: s.phase,
                    detect_ms: s.detect_ms,
                    elapsed_s: s.elapsed_s,
                    history: s.history,
                    arrays: s.arrays.iter().map(|a| a.len() as u64).collect(),
                    tolerated_losses: s.tolerated_losses as u32,
                    incremental: None,
                    data_only: false,
                });
                file::write(&dir, &mut header, &s.arrays)
            }
        }),
    };
    match written {
        Some(Err(e)) => eprintln!("ftla: grid rank {}: checkpoint not saved: {e}", grid.rank()),
        Some(Ok(path)) => {
            blacs_ft::trace!("[ftla rank {}] saved {} in {:.1} ms", grid.rank(), path.display(), header.save_ms)
        }
        _ => {}
    }
    grid.meet_before_exit(EXIT_CHECKPOINTED);
    Error::Checkpointed { dir: dir.display().to_string(), step, epoch }
}

/// The header of this process's checkpoint, the call left out: the run,
/// the grid, this rank, the region's repairs, and the run's recoveries
/// `epoch`.
pub(crate) fn header_of(grid: &Grid, opts: &RegionOptions, log: &StatusLog, epoch: u32) -> Header {
    Header {
        run_id: opts.run_id,
        restarts: opts.restarts,
        epoch,
        p: grid.nprow(),
        q: grid.npcol(),
        rank: grid.rank(),
        repairs: log.repairs(),
        call: None,
        saved_at_ms: 0.0,
        save_ms: 0.0,
        payload_len: 0,
        payload_crc: 0,
    }
}

/// A job resuming from checkpoints: what every rank agreed on when its
/// region started.
#[derive(Clone, Debug, PartialEq)]
pub struct Resumed {
    /// The checkpoint directory.
    pub dir: PathBuf,
    /// The save every file belongs to (the lowest rank's header).
    pub reference: Header,
    /// The file `reference` was read from (what a refusal of the saved
    /// call names, the same on every rank).
    pub reference_file: PathBuf,
    /// This rank's file, its header and where its payload starts (`None`:
    /// its blocks are rebuilt by the others).
    pub own: Option<(PathBuf, Header, u64)>,
    /// When the loading started (ms since the Unix epoch) and how long
    /// reading and agreeing on the headers took.
    pub started_ms: f64,
    pub load_ms: f64,
    /// The periodic generation the files are (`None`: saved on a
    /// failure). A generation stays on disk until a newer one is
    /// complete: a job lost again before that resumes from it again.
    pub generation: Option<u64>,
    /// The save was made on another grid (`own` is then `None`): every
    /// file of it, which the call redistributes onto this grid.
    pub elsewhere: Option<SavedGrid>,
}

/// A save made on another grid than the resuming job's: its shape and
/// every process's file, checked (the same save, the same run).
#[derive(Clone, Debug, PartialEq)]
pub struct SavedGrid {
    /// The saving grid's shape.
    pub p: i32,
    pub q: i32,
    /// Each of its grid ranks' file, header and payload offset, by rank.
    pub files: Vec<(PathBuf, Header, u64)>,
}

impl SavedGrid {
    /// "PxQ".
    pub fn shape(&self) -> String {
        format!("{}x{}", self.p, self.q)
    }
}

/// Collective: every rank gets `Ok` when every `local` is `Ok`, else the
/// lowest failing rank's [`Error::Checkpoint`] (file, reason) everywhere.
pub(crate) fn agree_on(grid: &Grid, local: Result<(), (String, String)>) -> Result<(), Error> {
    let Some(bad) = grid.lowest_rank_where(local.is_err())? else {
        return Ok(());
    };
    let mine = match local {
        Err(file_and_reason) if grid.rank() == bad => crate::codec::encode(&file_and_reason),
        _ => Vec::new(),
    };
    let bytes = grid.broadcast_vec(mine, bad)?;
    let (file, reason) = crate::codec::decode::<(String, String)>(&bytes)
        .unwrap_or_else(|| (String::new(), "the reason a checkpoint was refused does not decode".into()));
    Err(Error::Checkpoint { file, reason })
}

/// Why `mine` does not belong to the save `reference` (held by grid rank
/// `holder`) belongs to.
fn mismatch(mine: &Header, reference: &Header, holder: i32) -> String {
    let theirs = format!("grid rank {holder}'s checkpoint");
    if mine.run_id != reference.run_id {
        return format!("from another run (run {:016x}; {theirs} is from run {:016x})", mine.run_id, reference.run_id);
    }
    let (a, b) = (mine.call.as_ref(), reference.call.as_ref());
    match (a, b) {
        (Some(a), Some(b)) if (a.index, &a.name) != (b.index, &b.name) => {
            format!(
                "saved in {} (call {} of the region); {theirs} in {} (call {})",
                a.name,
                a.index + 1,
                b.name,
                b.index + 1
            )
        }
        (Some(a), Some(b)) if a.committed != b.committed => {
            format!("saved at step {}; {theirs} at step {}", a.committed, b.committed)
        }
        (Some(a), Some(b)) if a.description != b.description => {
            format!("saved for another matrix or options than {theirs}")
        }
        (Some(_), None) | (None, Some(_)) => format!("does not hold the same call as {theirs}"),
        _ => format!("does not match {theirs} (another save of this run)"),
    }
}

/// Collective, at the start of a resumed job's region: reads and checks
/// every rank's checkpoint header in `dir` and agrees on one save (of the
/// run `run_id`, when given: a file of another run is refused before
/// anything else).
///
/// # Errors
/// The same [`Error::Checkpoint`] on every rank, naming the file: one that
/// cannot be read, is truncated or corrupt, or comes from another grid,
/// call or run; or none at all. More files of one process row missing than
/// the saved call's checksums rebuild per row (its layout's `f`) are
/// [`Error::Unrecoverable`], naming the files. Files of an earlier save
/// of the same run (a newer one exists) are ignored, said on standard
/// error: those ranks are rebuilt.
pub(crate) fn load(grid: &Grid, dir: &Path, run_id: Option<u64>) -> Result<Resumed, Error> {
    let t = Instant::now();
    let started_ms = file::unix_ms();
    // (A save made elsewhere, or of the data only, is redistributed onto
    // this grid and its checksums encoded again.)
    let here = (grid.nprow(), grid.npcol());
    if let Some((p, q, _)) = saving_grid(grid, dir)?.filter(|&(p, q, data_only)| data_only || (p, q) != here) {
        let saved = load_elsewhere(grid, dir, run_id, p, q)?;
        let reference = saved.files[0].1.clone();
        return Ok(Resumed {
            dir: dir.to_path_buf(),
            reference,
            reference_file: saved.files[0].0.clone(),
            own: None,
            started_ms,
            load_ms: t.elapsed().as_secs_f64() * 1e3,
            generation: None,
            elsewhere: Some(saved),
        });
    }
    let me = grid.rank();
    let path = file::path_of(dir, me);
    let name = path.display().to_string();
    let own = if path.exists() {
        file::read_header(&path).and_then(|(h, offset)| {
            if let Some(id) = run_id.filter(|&id| id != h.run_id) {
                Err(format!("from another run (run {:016x}; this job resumes run {id:016x})", h.run_id))
            } else if h.rank != me || (h.p, h.q) != (grid.nprow(), grid.npcol()) {
                Err(format!(
                    "written by grid rank {} of a {}x{} grid; this process is grid rank {me} of a {}x{} grid",
                    h.rank,
                    h.p,
                    h.q,
                    grid.nprow(),
                    grid.npcol()
                ))
            } else {
                Ok(Some((h, offset)))
            }
        })
    } else {
        Ok(None)
    };
    agree_on(grid, own.as_ref().map(|_| ()).map_err(|r| (name.clone(), r.clone())))?;
    let mut own = own.unwrap_or_default();
    // The newest save counts; older files of the run are left out.
    let mut newest = [own.as_ref().map_or(-1, |(h, _)| h.restarts as i64)];
    grid.max(Scope::All, &mut newest)?;
    if newest[0] < 0 {
        return Err(Error::Checkpoint {
            file: dir.display().to_string(),
            reason: "no checkpoint file (rank-R.ckpt) in this directory".into(),
        });
    }
    if own.as_ref().is_some_and(|(h, _)| (h.restarts as i64) < newest[0]) {
        eprintln!("ftla: {name} is from an earlier save of this run: left out, its blocks are rebuilt");
        own = None;
    }
    let holder = grid.lowest_rank_where(own.is_some())?.unwrap_or(0);
    let bytes = grid.broadcast_vec(own.as_ref().map(|(h, _)| h.to_bytes()).unwrap_or_default(), holder)?;
    let reference = Header::from_bytes(&bytes).ok_or_else(|| Error::Checkpoint {
        file: file::path_of(dir, holder).display().to_string(),
        reason: "its header did not reach the other ranks intact".into(),
    })?;
    let fits = match &own {
        Some((h, _)) if h.identity() != reference.identity() => Err((name.clone(), mismatch(h, &reference, holder))),
        _ => Ok(()),
    };
    agree_on(grid, fits)?;
    if let Some(call) = &reference.call {
        let flags = grid.allgather(Scope::All, &[own.is_none() as i64])?;
        let q = grid.npcol();
        let missing: Vec<(usize, usize)> = (0..flags.len() as i32)
            .filter(|&r| flags[r as usize] != 0)
            .map(|r| ((r / q) as usize, (r % q) as usize))
            .collect();
        let tolerated = call.tolerated_losses as usize;
        if let Some((row, cols)) = blacs_ft::row_beyond_tolerance(&missing, tolerated) {
            // (More losses in one process row than the checksums rebuild:
            // unrecoverable, as in place.)
            let ranks: Vec<i32> = cols.iter().map(|&c| row as i32 * q + c as i32).collect();
            let files: Vec<String> = ranks.iter().map(|&r| file::path_of(dir, r).display().to_string()).collect();
            let rebuild = blacs_ft::processes_in_words(tolerated);
            return Err(Error::Unrecoverable {
                reason: format!(
                    "the checkpoints {} are missing: grid ranks {ranks:?} were all lost in process row {row}, \
                     and the checksums rebuild {rebuild} per process row",
                    files.join(", ")
                ),
            });
        }
    }
    Ok(Resumed {
        dir: dir.to_path_buf(),
        reference,
        reference_file: file::path_of(dir, holder),
        own: own.map(|(h, offset)| (path, h, offset)),
        started_ms,
        load_ms: t.elapsed().as_secs_f64() * 1e3,
        generation: None,
        elsewhere: None,
    })
}

/// Collective: the grid shape the checkpoints in `dir` were saved on, and
/// whether they hold the data only, as the header of its lowest-numbered
/// readable file says (grid rank 0 reads it, every rank gets it); `None`
/// when no file there reads (the usual checks then say why).
fn saving_grid(grid: &Grid, dir: &Path) -> Result<Option<(i32, i32, bool)>, Error> {
    let mine = if grid.rank() == 0 {
        let mut ranks: Vec<i32> = std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.file_name().to_str().filter(|n| !n.starts_with('.')).and_then(file::rank_of_file))
                    .collect()
            })
            .unwrap_or_default();
        ranks.sort_unstable();
        let shape = ranks.iter().find_map(|&r| {
            let (h, _) = file::read_header(&file::path_of(dir, r)).ok()?;
            Some((h.p, h.q, h.call.as_ref().is_some_and(|c| c.data_only)))
        });
        crate::codec::encode(&shape)
    } else {
        Vec::new()
    };
    let bytes = grid.broadcast_vec(mine, 0)?;
    Ok(crate::codec::decode::<Option<(i32, i32, bool)>>(&bytes).flatten())
}

/// Collective: the checks of a save made on a `p`×`q` grid that a job on
/// another grid resumes: every one of its files is there and reads, each
/// written by its rank of that grid, all of one save of one run (of
/// `run_id`, when given). Every rank reads every header (small) and gets
/// the same answer.
///
/// # Errors
/// The same [`Error::Checkpoint`] on every rank, naming the file: one
/// missing (its blocks are rebuilt from the checksums only on the grid of
/// the save, whose layout they are in: a job there with
/// [`RegionOptions::rebuild_checkpoint`] rebuilds and saves them, which
/// `ftla` runs itself first), unreadable, or of another save, grid
/// position or run.
fn load_elsewhere(grid: &Grid, dir: &Path, run_id: Option<u64>, p: i32, q: i32) -> Result<SavedGrid, Error> {
    if p < 1 || q < 1 {
        let file = file::path_of(dir, 0).display().to_string();
        return Err(Error::Checkpoint { file, reason: format!("saved on a {p}x{q} grid, which cannot be") });
    }
    let on = |r: i32| file::path_of(dir, r);
    let mut files: Vec<(PathBuf, Header, u64)> = Vec::with_capacity((p * q).max(0) as usize);
    let mut local = Ok(());
    for r in 0..p * q {
        let path = on(r);
        let name = path.display().to_string();
        if !path.exists() {
            let why = if (p, q) == (grid.nprow(), grid.npcol()) {
                "missing: the checkpoint holds the data only (its checksums are encoded again when resuming), so \
                 a missing file cannot be rebuilt (periodic checkpoints with --checkpoint-parity save the checksums \
                 that rebuild one)"
                    .to_string()
            } else {
                format!(
                    "missing: a save of a {p}x{q} grid resumes on a {}x{} grid only with every file of it; when its \
                     files hold the checksums (a save on a failure, or periodic with --checkpoint-parity) a job on \
                     the {p}x{q} grid rebuilds the missing ones first (ftla runs it; a program of its own sets \
                     FTLA_REBUILD_CHECKPOINT=1 there)",
                    grid.nprow(),
                    grid.npcol()
                )
            };
            local = Err((name, why));
            break;
        }
        match file::read_header(&path) {
            Ok((h, offset)) => {
                let fits = if let Some(id) = run_id.filter(|&id| id != h.run_id) {
                    Err(format!("from another run (run {:016x}; this job resumes run {id:016x})", h.run_id))
                } else if h.rank != r || (h.p, h.q) != (p, q) {
                    Err(format!(
                        "written by grid rank {} of a {}x{} grid, where rank {r} of a {p}x{q} grid's is expected",
                        h.rank, h.p, h.q
                    ))
                } else if let Some((_, first, _)) = files.first() {
                    if h.identity() == first.identity() {
                        Ok(())
                    } else {
                        Err(mismatch(&h, first, 0))
                    }
                } else {
                    Ok(())
                };
                if let Err(reason) = fits {
                    local = Err((name, reason));
                    break;
                }
                files.push((path, h, offset));
            }
            Err(reason) => {
                local = Err((name, reason));
                break;
            }
        }
    }
    agree_on(grid, local)?;
    Ok(SavedGrid { p, q, files })
}
