//! Periodic checkpoints beside the checksums (docs/cof.md, "Periodic
//! checkpoints"): what survives the loss of the whole job.
//!
//! The checksums cover every loss the job survives (a spare, a spawn,
//! checkpoint-on-failure); a job whose MPI runtime ends it — a lost node
//! on every released Open MPI — leaves no survivor to repair or save. So,
//! every `interval`, the fault-tolerant call in progress saves its
//! committed state at a commit point, every rank at the same step:
//!
//! 1. grid rank 0 decides that the step about to commit is due and says so
//!    in the commit's own agreement (one bit of it), so no rank diverges;
//! 2. after the commit every rank removes its file of the generation
//!    before the newest complete one, then writes its file of the new one
//!    (`DIR/gen-G/rank-R.ckpt`, the checkpoint-on-failure format: its
//!    blocks of the extended matrix, the left-factor sums, the replicated
//!    state) and syncs it;
//! 3. an agreement that every rank wrote; grid rank 0 then writes the
//!    manifest (`DIR/manifest`, by rename) naming generation G, and a
//!    second agreement makes G the newest complete one everywhere.
//!
//! A job killed during a save resumes from the previous generation, which
//! stays on disk until the next is complete: at most two generations
//! exist at once. A process lost during a save is repaired as at any
//! other point; the unfinished generation is written again at the next.
//! A resumed job (`--resume DIR`) loads the generation the manifest names
//! exactly as a job started again after checkpoint-on-failure loads its
//! files (every check and refusal included), and keeps that generation
//! until a newer one is complete.

use super::file::{self, unix_ms, FORMAT_VERSION};
use super::incremental::{self, Base};
use super::{agree_on, RegionOptions, Snapshot};
use crate::codec;
use crate::StatusLog;
use blacs_ft::launch::CheckpointInterval;
use blacs_ft::{Error, Grid, Scope};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The kill points of a periodic save (`R@checkpoint:GENERATION:write`,
/// `…:manifest`).
pub const POINTS: &str = "checkpoint";

/// The manifest's first bytes.
const MAGIC: &[u8; 8] = b"FTLAMNFT";
/// The manifest's name in the checkpoint directory.
pub const MANIFEST: &str = "manifest";

/// What the manifest says: the newest complete generation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The generation (`DIR/gen-G`).
    pub generation: u64,
    /// The routine saved and its committed steps (where it resumes).
    pub routine: String,
    pub step: u64,
    /// The grid it was saved on.
    pub p: i32,
    pub q: i32,
    /// The run, and its recoveries so far (the epoch the saving job was in).
    pub run_id: u64,
    pub epoch: u32,
    /// When the generation was complete (ms since the Unix epoch).
    pub saved_at_ms: f64,
    /// Bytes of the generation, every rank's file.
    pub bytes: u64,
    /// The base directory its files name (`base-J-C`: an incremental
    /// checkpoint's frozen parts), if any.
    pub base: Option<String>,
}

/// One periodic save of a call, the same on every rank.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckpointRecord {
    /// Committed steps saved (where a resumed job goes on).
    pub step: u64,
    /// Its generation.
    pub generation: u64,
    /// Bytes written, every rank's files together: the generation's files
    /// and what the save appended to the base files (an incremental
    /// checkpoint writes the frozen part once).
    pub bytes: u64,
    /// From the commit to the generation complete on every rank (the
    /// slowest rank's write included).
    pub write_ms: f64,
}

/// A generation's directory.
pub fn generation_dir(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("gen-{generation}"))
}

/// The manifest in `dir`, if there is one.
///
/// # Errors
/// A manifest that cannot be read or does not decode (the reason).
pub fn read_manifest(dir: &Path) -> Result<Option<Manifest>, String> {
    let path = dir.join(MANIFEST);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let corrupt = || format!("{} is not a manifest of ftla checkpoints (or is corrupt)", path.display());
    if bytes.len() < 16 || &bytes[..8] != MAGIC {
        return Err(corrupt());
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version != FORMAT_VERSION {
        return Err(format!("{}: format version {version}; this build reads version {FORMAT_VERSION}", path.display()));
    }
    let (body, crc) = bytes[12..].split_at(bytes.len() - 16);
    if crc32fast::hash(body) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
        return Err(corrupt());
    }
    codec::decode(body).map(Some).ok_or_else(corrupt)
}

/// Writes `m` as `dir`'s manifest, atomically (a synced temporary file
/// renamed over it, the directory synced).
fn write_manifest(dir: &Path, m: &Manifest) -> Result<(), String> {
    let body = codec::encode(m);
    let mut v = Vec::with_capacity(body.len() + 16);
    v.extend_from_slice(MAGIC);
    v.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    v.extend_from_slice(&body);
    v.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    let tmp = dir.join(format!(".{MANIFEST}.tmp"));
    let fail = |what: &str, e: std::io::Error| format!("cannot {what} {}: {e}", tmp.display());
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| fail("create", e))?;
    f.write_all(&v).map_err(|e| fail("write", e))?;
    f.sync_all().map_err(|e| fail("sync", e))?;
    drop(f);
    std::fs::rename(&tmp, dir.join(MANIFEST)).map_err(|e| fail("rename", e))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Where a job resuming from `dir` reads its files: the newest complete
/// generation the manifest names, unless checkpoint-on-failure files are
/// there (`DIR/rank-R.ckpt`: written after the newest generation, by the
/// survivors of a failure) — then `dir` itself.
///
/// # Errors
/// A manifest that cannot be read: the reason, naming it.
pub fn resume_dir(dir: &Path) -> Result<(PathBuf, Option<Manifest>), String> {
    let saved_on_failure = std::fs::read_dir(dir).is_ok_and(|mut d| {
        d.any(|e| {
            e.is_ok_and(|e| e.file_name().to_str().is_some_and(|n| n.starts_with("rank-") && n.ends_with(".ckpt")))
        })
    });
    if saved_on_failure {
        return Ok((dir.to_path_buf(), None));
    }
    match read_manifest(dir)? {
        Some(m) => Ok((generation_dir(dir, m.generation), Some(m))),
        None => Ok((dir.to_path_buf(), None)),
    }
}

/// Removes every generation and the manifest from `dir` (each rank of a
/// grid of `size` its own files, grid rank 0 those of larger grids too;
/// the directories and the manifest go when they are empty or on grid
/// rank 0).
pub fn remove_all(dir: &Path, rank: i32, size: i32) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name();
            if name.to_str().is_some_and(|n| n.starts_with("gen-")) {
                file::remove(&e.path(), rank, size);
                let _ = std::fs::remove_dir(e.path());
            } else if rank == 0 && name.to_str().is_some_and(|n| n.starts_with("base-")) {
                // (Every call of the region is over on every rank.)
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    if rank == 0 {
        let _ = std::fs::remove_file(dir.join(MANIFEST));
    }
    let _ = std::fs::remove_dir(dir);
}

/// The periodic checkpoints of a region.
#[derive(Debug)]
pub(crate) struct Periodic {
    /// The interval asked for (`None`: no periodic checkpoint).
    pub interval: Option<CheckpointInterval>,
    /// The interval in force: the one asked for, or Young and Daly's once
    /// the first checkpoint's cost is known.
    pub every: Option<Duration>,
    /// Since when (grid rank 0's clock decides).
    pub since: Instant,
    /// The newest complete generation (0: none yet).
    pub complete: u64,
    /// The saves of this job, oldest first.
    pub records: Vec<CheckpointRecord>,
    /// Whether the directory was found to hold two generations' room.
    pub room_checked: bool,
    /// This process's base file for the call it saves (incremental
    /// checkpoints), once it has written one.
    pub base: Option<Base>,
    /// The base directory the newest complete generation names (kept with
    /// its generation).
    pub newest_base: Option<String>,
}

impl Periodic {
    /// `complete`: the newest complete generation in the directory, and
    /// the base directory it names.
    pub fn new(interval: Option<CheckpointInterval>, complete: u64, newest_base: Option<String>) -> Periodic {
        Periodic {
            interval,
            every: interval.map(CheckpointInterval::before_first),
            since: Instant::now(),
            complete,
            records: Vec::new(),
            room_checked: false,
            base: None,
            newest_base,
        }
    }

    /// Whether the step about to commit should be saved: grid rank 0's
    /// clock (the others' answer does not count; see `protocol::steps`).
    pub fn due(&self) -> bool {
        self.every.is_some_and(|e| self.since.elapsed() >= e)
    }
}

/// Free bytes of the file system that holds `dir` (or the nearest
/// existing directory above it).
fn free_bytes(dir: &Path) -> Option<u64> {
    let mut at = Some(dir);
    while let Some(d) = at {
        if d.exists() {
            let c = std::ffi::CString::new(d.as_os_str().as_encoded_bytes()).ok()?;
            // SAFETY: a NUL-terminated path and an out-parameter.
            let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
            if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
                return None;
            }
            return Some(s.f_bavail as u64 * s.f_frsize as u64);
        }
        at = d.parent();
    }
    None
}

/// Collective, before a call's first periodic save: the checkpoint
/// directory has room for two generations of every rank's file on this
/// process's file system (`bytes`: this rank's file).
///
/// # Errors
/// The same [`Error::Checkpoint`] on every rank, naming the directory, the
/// room needed and the room there is.
pub(crate) fn check_room(grid: &Grid, dir: &Path, bytes: u64) -> Result<(), Error> {
    // (Node-local or shared, the ranks' files may share one file system:
    // every rank asks for all of them.)
    let mut total = [bytes as f64];
    grid.sum(Scope::All, &mut total, None)?;
    let need = 2 * total[0] as u64;
    let local = match free_bytes(dir) {
        Some(free) if free < need => Err((
            dir.display().to_string(),
            format!(
                "the periodic checkpoints need room for two generations, {need} bytes ({:.1} MiB), and {free} bytes \
                 are free there",
                need as f64 / (1 << 20) as f64
            ),
        )),
        _ => Ok(()),
    };
    agree_on(grid, local)
}

/// Collective: saves `snapshot`, the committed state of the call in
/// progress, as the next generation in `opts.dir()` (see the module's
/// documentation); returns its record, the same on every rank.
///
/// # Errors
/// A process failure during the save (the generation stays incomplete; the
/// caller repairs as after any failure); a file that could not be written
/// ([`Error::Checkpoint`], the same on every rank: the previous generation
/// stays the newest).
pub(crate) fn save(
    grid: &Grid,
    opts: &RegionOptions,
    log: &StatusLog,
    periodic: &mut Periodic,
    snapshot: Snapshot<'_>,
) -> Result<CheckpointRecord, Error> {
    let t = Instant::now();
    let dir = opts.dir();
    // The next generation: one past the newest complete one any rank knows
    // (a replacement knows none).
    let mut newest = [periodic.complete as i64];
    grid.max(Scope::All, &mut newest)?;
    periodic.complete = newest[0] as u64;
    let generation = periodic.complete + 1;
    let Some((index, call)) = log.current() else {
        return Err(Error::Unrecoverable { reason: "a periodic checkpoint with no call in progress".into() });
    };
    // Only the newest complete generation is kept while this one is written.
    if periodic.complete > 1 {
        let old = generation_dir(&dir, periodic.complete - 1);
        file::remove(&old, grid.rank(), grid.size());
        let _ = std::fs::remove_dir(&old);
    }
    let epoch = opts.epoch_base.saturating_add(grid.epoch());
    let mut header = super::header_of(grid, opts, log, epoch);
    let lengths: Vec<u64> = snapshot.arrays.iter().map(|a| a.len() as u64).collect();
    // An incremental checkpoint: what froze since the last save is appended
    // to this process's base file, and the generation holds the rest.
    let mut appended = 0;
    let incremental = match &snapshot.frozen {
        Some(frozen) => {
            if !periodic.base.as_ref().is_some_and(|b| b.fits(index as u64, frozen)) {
                periodic.base = None;
            }
            let base = match periodic.base.take() {
                Some(b) => Ok(b),
                None => {
                    let lds: Vec<u64> = frozen.iter().map(|f| f.ld).collect();
                    Base::create(&dir, opts.restarts, index as u64, grid.rank(), grid.epoch(), &lds)
                }
            };
            base.and_then(|mut b| {
                let added = b.append(&snapshot.arrays, frozen);
                let r = b.reference();
                periodic.base = Some(b);
                added.map(|n| {
                    appended = n;
                    r
                })
            })
            .map(Some)
        }
        None => Ok(None),
    };
    let arrays: Vec<&[f64]> = match &incremental {
        Ok(Some(b)) => (0..snapshot.arrays.len())
            .flat_map(|a| match b.frozen.get(a) {
                Some(&f) => {
                    incremental::unfrozen_runs(f, lengths[a]).into_iter().map(|r| &snapshot.arrays[a][r]).collect()
                }
                None => vec![snapshot.arrays[a]],
            })
            .collect(),
        _ => snapshot.arrays.clone(),
    };
    let base_dir = incremental.as_ref().ok().and_then(|b| b.as_ref().map(|b| b.dir.clone()));
    header.call = Some(file::SavedCall {
        index: index as u64,
        name: call.name.clone(),
        committed: call.committed,
        state: call.replicated.clone(),
        description: snapshot.description,
        phase: snapshot.phase,
        detect_ms: 0.0,
        elapsed_s: snapshot.elapsed_s,
        history: snapshot.history,
        arrays: lengths,
        tolerated_losses: snapshot.tolerated_losses as u32,
        incremental: incremental.clone().ok().flatten(),
        data_only: snapshot.data_only,
    });
    let gen_dir = generation_dir(&dir, generation);
    let written = incremental.and_then(|_| file::write(&gen_dir, &mut header, &arrays));
    let mine = match &written {
        Ok(path) => std::fs::metadata(path).map(|m| m.len()).unwrap_or(0) + appended,
        Err(_) => 0,
    };
    // (Kill points: `R@checkpoint:G:write`, a process or the job lost
    // with the generation half written; `R@checkpoint:G:manifest`, once it
    // is complete but before every process knows.)
    grid.inject(POINTS, generation, "write");
    let file_name = file::path_of(&gen_dir, grid.rank()).display().to_string();
    agree_on(grid, written.map(|_| ()).map_err(|e| (file_name, e)))?;
    let mut bytes = [mine as f64];
    grid.sum(Scope::All, &mut bytes, None)?;
    let bytes = bytes[0] as u64;
    // Grid rank 0 names the generation complete; the others learn that it
    // did from the agreement after it.
    let manifest = Manifest {
        generation,
        routine: call.name.clone(),
        step: call.committed,
        p: grid.nprow(),
        q: grid.npcol(),
        run_id: opts.run_id,
        epoch,
        saved_at_ms: unix_ms(),
        bytes,
        base: base_dir,
    };
    let named = if grid.rank() == 0 { write_manifest(&dir, &manifest) } else { Ok(()) };
    if named.is_ok() && grid.rank() == 0 {
        // Base directories that neither this generation nor the one before
        // it names (an earlier job's or call's) are of no use any more.
        let keep = [manifest.base.clone(), periodic.newest_base.clone()];
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with("base-") && !keep.iter().any(|k| k.as_deref() == Some(name.as_str())) {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
    }
    grid.inject(POINTS, generation, "manifest");
    agree_on(grid, named.map_err(|e| (dir.join(MANIFEST).display().to_string(), e)))?;
    periodic.complete = generation;
    periodic.newest_base = manifest.base;
    periodic.since = Instant::now();
    let mut slowest = [t.elapsed().as_secs_f64() * 1e3];
    grid.max(Scope::All, &mut slowest)?;
    let record = CheckpointRecord { step: call.committed, generation, bytes, write_ms: slowest[0] };
    blacs_ft::trace!(
        "[ftla rank {}] periodic checkpoint: generation {generation} at step {}, {bytes} bytes in {:.1} ms",
        grid.rank(),
        call.committed,
        slowest[0]
    );
    periodic.records.push(record.clone());
    if periodic.records.len() == 1 {
        // (The same on every rank: the slowest rank's cost.)
        let first = Duration::from_secs_f64(record.write_ms / 1e3);
        periodic.every = periodic.interval.map(|i| i.after_first(first));
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        Manifest {
            generation: 3,
            routine: "pdgeqrf_ft".into(),
            step: 7,
            p: 2,
            q: 2,
            run_id: 0xABCD,
            epoch: 1,
            saved_at_ms: 12.5,
            bytes: 4096,
            base: Some("base-0-0".into()),
        }
    }

    #[test]
    fn a_manifest_reads_back_and_a_bad_one_is_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_manifest(dir.path()), Ok(None));
        write_manifest(dir.path(), &manifest()).unwrap();
        assert_eq!(read_manifest(dir.path()), Ok(Some(manifest())));
        let (from, m) = resume_dir(dir.path()).unwrap();
        assert_eq!((from, m.map(|m| m.generation)), (generation_dir(dir.path(), 3), Some(3)));
        // A checkpoint-on-failure file is newer than any generation.
        std::fs::write(dir.path().join("rank-0.ckpt"), b"x").unwrap();
        assert_eq!(resume_dir(dir.path()).unwrap(), (dir.path().to_path_buf(), None));
        let path = dir.path().join(MANIFEST);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 5;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(read_manifest(dir.path()).unwrap_err().contains("corrupt"));
        bytes[8] = 2;
        std::fs::write(&path, &bytes).unwrap();
        assert!(read_manifest(dir.path()).unwrap_err().contains("format version 2"));
    }

    #[test]
    fn a_save_is_due_once_the_interval_has_passed_and_at_every_commit_with_zero() {
        let mut p = Periodic::new(Some(CheckpointInterval::Every(Duration::from_secs(3600))), 0, None);
        assert!(!p.due());
        p.since -= Duration::from_secs(3601);
        assert!(p.due());
        assert!(Periodic::new(Some(CheckpointInterval::Every(Duration::ZERO)), 0, None).due());
        assert!(!Periodic::new(None, 0, None).due());
    }

    #[test]
    fn free_room_is_read_from_the_nearest_existing_directory() {
        let dir = tempfile::tempdir().unwrap();
        assert!(free_bytes(&dir.path().join("not/yet")).is_some_and(|b| b > 0));
    }
}
