//! One process's checkpoint file: a header and the payload of its local
//! arrays, written atomically and read back with every check that keeps a
//! bad file from being resumed silently.
//!
//! Layout (little-endian):
//!
//! ```text
//! "FTLACKPT"  version (u32)  header length H (u32)
//! header (H bytes: `Header` in the one codec, `crate::codec`; its payload
//!         length and CRC-32 have a fixed width, so the header's length does
//!         not change when they are filled in)
//! CRC-32 of everything above (u32)
//! payload: the arrays' f64 values, one after the other
//! ```

use super::incremental::{self, BaseRef};
use crate::codec;
use crate::record::{Phase, RecoveryRecord};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The first bytes of every checkpoint file.
const MAGIC: &[u8; 8] = b"FTLACKPT";
/// The format this build writes and reads (2: the header in the one
/// codec, with typed call records; 3: a saved call records the losses per
/// process row its checksums rebuild; 4: a periodic checkpoint may be
/// incremental, its frozen part in a base file; an older file is refused,
/// naming it).
pub const FORMAT_VERSION: u32 = 5;
/// Bytes before the header: magic, version, header length.
const LEAD: usize = 16;
/// Values converted per write or read (1 MiB of payload).
pub(crate) const CHUNK: usize = 1 << 17;

/// The interrupted call a checkpoint holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SavedCall {
    /// Position of the call among the region's library calls (0-based).
    pub index: u64,
    /// The routine (`pdgeqrf_ft`, ...).
    pub name: String,
    /// Committed steps: the restarted call resumes there.
    pub committed: u64,
    /// The replicated state at that commit (bytes, see [`crate::Replicated`]).
    pub state: Vec<u8>,
    /// The call's description (its algorithm's typed
    /// [`crate::protocol::Algorithm::Call`]: shape and options, in the one
    /// codec): a restart of another call is refused.
    pub description: Vec<u8>,
    /// The phase in which this process saw the failure.
    pub phase: Phase,
    /// From the start of that phase to the failure's detection.
    pub detect_ms: f64,
    /// Time the call had run before the save, in this job and the ones
    /// before it.
    pub elapsed_s: f64,
    /// The call's earlier recoveries.
    pub history: Vec<RecoveryRecord>,
    /// Lengths of the local arrays in the payload (values).
    pub arrays: Vec<u64>,
    /// Lost processes per process row the call's checksums rebuild: more
    /// missing files in one row are refused as unrecoverable.
    pub tolerated_losses: u32,
    /// An incremental periodic checkpoint: the base file that holds the
    /// frozen part of the first array (the payload holds the rest of it,
    /// then the other arrays). `None`: the payload holds every array
    /// whole.
    pub incremental: Option<BaseRef>,
    /// The arrays hold the call's data only (a periodic checkpoint without
    /// parity): the checksums are encoded again when it resumes, which
    /// needs every file of the save.
    pub data_only: bool,
}

/// What a checkpoint file says about itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// The run that wrote it (kept across its restarts).
    pub run_id: u64,
    /// Restarts of the run before the job that wrote it.
    pub restarts: u32,
    /// Recoveries of the run up to this one included (kills of earlier
    /// epochs do not fire again in the restarted job).
    pub epoch: u32,
    /// Grid shape and the writer's grid rank.
    pub p: i32,
    pub q: i32,
    pub rank: i32,
    /// Repairs in place the region had gone through.
    pub repairs: u64,
    /// The interrupted call, or `None` when no call was in progress (the
    /// restarted job runs from the top).
    pub call: Option<SavedCall>,
    /// When the save was complete (ms since the Unix epoch).
    pub saved_at_ms: f64,
    /// How long the save took.
    pub save_ms: f64,
    /// Payload bytes and their CRC-32 (fixed width: filled in after the
    /// payload is written, over placeholders of the same length).
    #[serde(with = "postcard::fixint::le")]
    pub payload_len: u64,
    #[serde(with = "postcard::fixint::le")]
    pub payload_crc: u32,
}

/// The file of grid rank `rank` in `dir`.
pub fn path_of(dir: &Path, rank: i32) -> PathBuf {
    dir.join(format!("rank-{rank}.ckpt"))
}

/// The temporary file a save of `rank` writes before renaming it.
fn temp_of(dir: &Path, rank: i32) -> PathBuf {
    dir.join(format!(".rank-{rank}.ckpt.tmp"))
}

/// Milliseconds since the Unix epoch.
pub fn unix_ms() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64() * 1e3).unwrap_or(0.0)
}

impl Header {
    /// The header as bytes (for the file, and for a broadcast).
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        codec::encode(self)
    }

    /// A header back from [`Header::to_bytes`].
    pub(crate) fn from_bytes(v: &[u8]) -> Option<Header> {
        codec::decode(v)
    }

    /// The bytes that must be equal in every file of one save (everything
    /// but the writer's own rank, timings, payload and view of the failure).
    pub fn identity(&self) -> Vec<u8> {
        let mut h = self.clone();
        h.rank = 0;
        h.saved_at_ms = 0.0;
        h.save_ms = 0.0;
        h.payload_len = 0;
        h.payload_crc = 0;
        if let Some(c) = &mut h.call {
            // (A replacement that joined in place knows fewer of the
            // call's earlier recoveries: the reference's count.)
            c.history.clear();
            c.phase = Phase::Commit;
            c.detect_ms = 0.0;
            c.elapsed_s = 0.0;
            c.arrays.clear();
            if let Some(b) = &mut c.incremental {
                // (Each process's base file and its frozen part are its own.)
                b.file.clear();
                b.len = 0;
                b.crc = 0;
                b.frozen.clear();
            }
        }
        h.to_bytes()
    }
}

/// The values of `arrays` as little-endian bytes, in chunks.
fn for_each_chunk(arrays: &[&[f64]], mut f: impl FnMut(&[u8]) -> std::io::Result<()>) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(CHUNK * 8);
    for a in arrays {
        for chunk in a.chunks(CHUNK) {
            buf.clear();
            buf.extend(chunk.iter().flat_map(|x| x.to_le_bytes()));
            f(&buf)?;
        }
    }
    Ok(())
}

/// Writes `header` and `arrays` to grid rank `header.rank`'s file in
/// `dir` atomically: a temporary file readable by the owner only, its data
/// synced, then renamed over the final name (and the directory synced), so
/// a process killed while saving leaves no partial checkpoint. Fills in
/// the payload's length and CRC, the save time and its end. Returns the
/// final path.
pub fn write(dir: &Path, header: &mut Header, arrays: &[&[f64]]) -> Result<PathBuf, String> {
    let t = std::time::Instant::now();
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot create the checkpoint directory {}: {e}", dir.display()))?;
    let tmp = temp_of(dir, header.rank);
    let fin = path_of(dir, header.rank);
    let fail = |what: &str, e: std::io::Error| format!("cannot {what} {}: {e}", tmp.display());
    let _ = std::fs::remove_file(&tmp);
    let mut f =
        OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp).map_err(|e| fail("create", e))?;
    header.payload_len = arrays.iter().map(|a| a.len() as u64 * 8).sum();
    // The header has a fixed length: written first with placeholders,
    // then again once the payload's CRC and the timings are known.
    let body = header.to_bytes();
    let lead_len = LEAD + body.len() + 4;
    f.write_all(&vec![0u8; lead_len]).map_err(|e| fail("write", e))?;
    let mut crc = crc32fast::Hasher::new();
    for_each_chunk(arrays, |b| {
        crc.update(b);
        f.write_all(b)
    })
    .map_err(|e| fail("write", e))?;
    header.payload_crc = crc.finalize();
    f.sync_data().map_err(|e| fail("sync", e))?;
    header.save_ms = t.elapsed().as_secs_f64() * 1e3;
    header.saved_at_ms = unix_ms();
    let filled = lead(header);
    if filled.len() != lead_len {
        // (Only fixed-width fields change after the placeholders: this
        // would overwrite the payload.)
        return Err(format!("the header of {} changed length when filled in", tmp.display()));
    }
    f.write_all_at(&filled, 0).map_err(|e| fail("write", e))?;
    f.sync_all().map_err(|e| fail("sync", e))?;
    drop(f);
    std::fs::rename(&tmp, &fin).map_err(|e| fail("rename", e))?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(fin)
}

/// Magic, version, header length, header, header CRC.
fn lead(header: &Header) -> Vec<u8> {
    let body = header.to_bytes();
    let mut v = Vec::with_capacity(LEAD + body.len() + 4);
    v.extend_from_slice(MAGIC);
    v.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    v.extend_from_slice(&(body.len() as u32).to_le_bytes());
    v.extend_from_slice(&body);
    let crc = crc32fast::hash(&v);
    v.extend_from_slice(&crc.to_le_bytes());
    v
}

/// Reads and checks the header of the checkpoint at `path`: magic,
/// version, the header's CRC, and the file's length against the payload
/// it announces (a truncated file is caught here). The error is the
/// reason, for a message that names the file.
pub fn read_header(path: &Path) -> Result<(Header, u64), String> {
    let mut f = File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let size = f.metadata().map_err(|e| format!("cannot stat: {e}"))?.len();
    let mut head = [0u8; LEAD];
    f.read_exact(&mut head).map_err(|_| format!("truncated: {size} bytes, not even a header"))?;
    if &head[..8] != MAGIC {
        return Err("not an ftla checkpoint (bad magic number)".into());
    }
    let version = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
    if version != FORMAT_VERSION {
        return Err(format!("format version {version}; this build reads version {FORMAT_VERSION}"));
    }
    let hl = u32::from_le_bytes(head[12..16].try_into().expect("4 bytes")) as u64;
    if LEAD as u64 + hl + 4 > size {
        return Err(format!("truncated: {size} bytes, the header alone needs {}", LEAD as u64 + hl + 4));
    }
    let mut body = vec![0u8; hl as usize + 4];
    f.read_exact(&mut body).map_err(|e| format!("cannot read the header: {e}"))?;
    let (body, crc) = body.split_at(hl as usize);
    let mut whole = head.to_vec();
    whole.extend_from_slice(body);
    if crc32fast::hash(&whole) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
        return Err("header checksum mismatch (the file is corrupt)".into());
    }
    let h = Header::from_bytes(body).ok_or("header does not decode (the file is corrupt)")?;
    let offset = LEAD as u64 + hl + 4;
    let announced = offset.checked_add(h.payload_len).ok_or("header announces an impossible payload length")?;
    if size != announced {
        return Err(format!(
            "{}: {size} bytes, the header announces {announced}",
            if size < announced { "truncated" } else { "too long" },
        ));
    }
    Ok((h, offset))
}

/// Reads the payload of the checkpoint at `path` (header `h` at payload
/// `offset`, from [`read_header`]) into `arrays`, which must have the
/// lengths it was saved with, and checks its CRC: a corrupt payload is an
/// error, never data.
pub fn read_payload(path: &Path, h: &Header, offset: u64, arrays: &mut [&mut [f64]]) -> Result<(), String> {
    let saved: Vec<u64> = h.call.as_ref().map(|c| c.arrays.clone()).unwrap_or_default();
    let want: Vec<u64> = arrays.iter().map(|a| a.len() as u64).collect();
    if saved != want {
        return Err(format!(
            "holds local arrays of {saved:?} values; this process needs {want:?} (another grid position, matrix or \
             call)"
        ));
    }
    // (The payload's values in order, as the stream delivers them: the
    // arrays one after the other, of each only its unfrozen part when the
    // checkpoint is incremental.)
    let mut runs: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
    let incremental = h.call.as_ref().and_then(|c| c.incremental.as_ref());
    if let Some(b) = incremental {
        incremental::read_base(path.parent().unwrap_or(path), b, arrays)?;
    }
    for (a, &len) in want.iter().enumerate() {
        match incremental.and_then(|b| b.frozen.get(a)) {
            Some(&f) => runs.extend(incremental::unfrozen_runs(f, len).into_iter().map(|r| (a, r))),
            None => runs.push((a, 0..len as usize)),
        }
    }
    let starts: Vec<u64> =
        runs.iter().scan(0, |at, (_, r)| Some(std::mem::replace(at, *at + r.len() as u64))).collect();
    stream_payload(path, h, offset, |at, values| {
        let mut done = 0;
        while done < values.len() {
            let v = at + done as u64;
            let k = starts.partition_point(|&s| s <= v) - 1;
            let (a, run) = &runs[k];
            let from = run.start + (v - starts[k]) as usize;
            let n = (run.end - from).min(values.len() - done);
            arrays[*a][from..from + n].copy_from_slice(&values[done..done + n]);
            done += n;
        }
    })
}

/// Streams the payload of the checkpoint at `path` (header `h` at payload
/// `offset`, from [`read_header`]) through `sink`, in chunks of values with
/// the index of their first value in the payload (the arrays one after the
/// other), and checks its CRC at the end: a corrupt payload is an error,
/// and a reader takes what the sink kept only on `Ok`. What a process
/// reads of another process's file (a resume on another grid) comes this
/// way, without holding the whole file.
pub fn stream_payload(path: &Path, h: &Header, offset: u64, mut sink: impl FnMut(u64, &[f64])) -> Result<(), String> {
    let f = File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let total = h.payload_len / 8;
    let mut crc = crc32fast::Hasher::new();
    let mut bytes = vec![0u8; CHUNK * 8];
    let mut values = vec![0.0f64; CHUNK];
    let mut at = 0u64;
    while at < total {
        let n = (total - at).min(CHUNK as u64) as usize;
        let b = &mut bytes[..n * 8];
        f.read_exact_at(b, offset + at * 8).map_err(|e| format!("cannot read the payload: {e}"))?;
        crc.update(b);
        for (x, c) in values[..n].iter_mut().zip(b.chunks_exact(8)) {
            *x = f64::from_le_bytes(c.try_into().expect("8 bytes"));
        }
        sink(at, &values[..n]);
        at += n as u64;
    }
    if crc.finalize() != h.payload_crc {
        return Err("payload checksum mismatch (the file is corrupt)".into());
    }
    Ok(())
}

/// Removes grid rank `rank`'s checkpoint and any temporary file of it in
/// `dir` (after a successful finish), on a grid of `size` processes: grid
/// rank 0 also removes the files of ranks `size` and above, which a save
/// on a larger grid left (a job resumed on a smaller one).
pub fn remove(dir: &Path, rank: i32, size: i32) {
    let _ = std::fs::remove_file(path_of(dir, rank));
    let _ = std::fs::remove_file(temp_of(dir, rank));
    if rank != 0 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(r) = name.to_str().and_then(rank_of_file) else { continue };
        if r >= size {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The grid rank whose checkpoint (or its temporary file) is called
/// `name` (`rank-R.ckpt`, `.rank-R.ckpt.tmp`).
pub fn rank_of_file(name: &str) -> Option<i32> {
    let r = name.strip_prefix("rank-").and_then(|n| n.strip_suffix(".ckpt"));
    let r = r.or_else(|| name.strip_prefix(".rank-").and_then(|n| n.strip_suffix(".ckpt.tmp")))?;
    r.parse().ok().filter(|&r: &i32| r >= 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn header(rank: i32) -> Header {
        Header {
            run_id: 0xABCD,
            restarts: 0,
            epoch: 1,
            p: 2,
            q: 2,
            rank,
            repairs: 0,
            call: Some(SavedCall {
                index: 0,
                name: "pdgeqrf_ft".into(),
                committed: 3,
                state: vec![1, 2, 3],
                description: codec::encode(&(8u64, 8u64, 2u64)),
                phase: Phase::Update,
                detect_ms: 1.5,
                elapsed_s: 0.25,
                history: vec![],
                arrays: vec![3, 2],
                tolerated_losses: 1,
                incremental: None,
                data_only: false,
            }),
            saved_at_ms: 0.0,
            save_ms: 0.0,
            payload_len: 0,
            payload_crc: 0,
        }
    }

    /// The bytes before the payload of [`header`] 1 with one earlier
    /// recovery, in format [`FORMAT_VERSION`] 5.
    fn pinned_header() -> Header {
        let mut h = header(1);
        if let Some(c) = &mut h.call {
            c.history.push(RecoveryRecord {
                ranks: vec![0, 3],
                step: 2,
                phase: Phase::Bcast,
                detect_ms: 0.5,
                repair_ms: 1000.0,
                rebuild_ms: 2.0,
                total_ms: 1002.5,
                mode: blacs_ft::RepairMode::Cof,
                cof: Some(crate::protocol::CofBreakdown { save_ms: 1.0, relaunch_ms: 998.0, load_ms: 1.0 }),
                shrink: None,
            });
        }
        h.payload_len = 40;
        h.payload_crc = 0xDEAD_BEEF;
        h
    }

    /// The format of every checkpoint file, pinned: a change of the header,
    /// of a record it holds (their fields, an enum's tags) or of the
    /// framing changes these bytes. Such a change needs a new
    /// [`FORMAT_VERSION`] (older files are then refused by name) and the
    /// new bytes written here.
    #[test]
    fn the_bytes_of_format_5_are_pinned() {
        assert_eq!(FORMAT_VERSION, 5, "a new format: pin its bytes below");
        let hex: String = lead(&pinned_header()).iter().map(|b| format!("{b:02x}")).collect();
        let expected = concat!(
            "46544c41434b5054", // "FTLACKPT"
            "05000000",         // version 5
            "93000000",         // header length
            // run 0xABCD, restarts 0, epoch 1, 2x2, rank 1, repairs 0;
            // a call: index 0, "pdgeqrf_ft", 3 committed, state [1, 2, 3],
            // its description (8, 8, 2), phase update (tag 5), detect
            // 1.5 ms, 0.25 s elapsed, ...
            "cdd7020001040402000100",
            "0a706467657172665f6674",
            "03",
            "03010203",
            "03080802",
            "05",
            "000000000000f83f",
            "000000000000d03f",
            // ... one recovery of ranks [0, 3] at step 2, bcast (tag 4),
            // 0.5 + 1000 + 2 = 1002.5 ms, checkpoint-on-failure (tag 2)
            // with its breakdown (1, 998, 1), no shrink ...
            "01",
            "020006",
            "02",
            "04",
            "000000000000e03f0000000000408f4000000000000000400000000000548f40",
            "02",
            "01000000000000f03f0000000000308f40000000000000f03f",
            "00",
            // ... arrays [3, 2], 1 loss per row tolerated, not incremental,
            // the arrays whole (not the data only); saved at 0 ms, in 0 ms;
            // a payload of 40 bytes, CRC 0xDEADBEEF.
            "020302",
            "01",
            "00",
            "00",
            "00000000000000000000000000000000",
            "2800000000000000",
            "efbeadde",
            "c7502643" // the header's CRC
        );
        assert_eq!(hex, expected);
    }

    #[test]
    fn a_checkpoint_reads_back_exactly_and_only_its_owner_may_read_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = header(1);
        let (a, b) = (vec![1.0, -2.5, f64::MAX], vec![0.125, 3.0]);
        let path = write(dir.path(), &mut h, &[&a, &b]).unwrap();
        assert_eq!(path, path_of(dir.path(), 1));
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(!temp_of(dir.path(), 1).exists());
        let (back, offset) = read_header(&path).unwrap();
        assert_eq!(back, h);
        assert!(h.save_ms >= 0.0 && h.saved_at_ms > 0.0);
        let (mut x, mut y) = (vec![0.0; 3], vec![0.0; 2]);
        read_payload(&path, &back, offset, &mut [&mut x, &mut y]).unwrap();
        assert_eq!((x, y), (a, b));
        // Another process's arrays do not fit.
        let mut z = vec![0.0; 4];
        assert!(read_payload(&path, &back, offset, &mut [&mut z]).unwrap_err().contains("needs [4]"));
        remove(dir.path(), 1, 2);
        assert!(!path.exists());
    }

    #[test]
    fn truncated_and_corrupt_files_are_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = header(0);
        let path = write(dir.path(), &mut h, &[&[1.0, 2.0, 3.0], &[4.0, 5.0]]).unwrap();
        let good = std::fs::read(&path).unwrap();
        // A flipped payload bit: the header is fine, the payload CRC is not.
        let mut bad = good.clone();
        *bad.last_mut().unwrap() ^= 1;
        std::fs::write(&path, &bad).unwrap();
        let (back, offset) = read_header(&path).unwrap();
        let (mut x, mut y) = (vec![0.0; 3], vec![0.0; 2]);
        let e = read_payload(&path, &back, offset, &mut [&mut x, &mut y]).unwrap_err();
        assert!(e.contains("payload checksum mismatch"), "{e}");
        // A flipped header bit.
        let mut bad = good.clone();
        bad[LEAD + 3] ^= 0x10;
        std::fs::write(&path, &bad).unwrap();
        assert!(read_header(&path).unwrap_err().contains("header checksum mismatch"));
        // Truncated.
        std::fs::write(&path, &good[..good.len() - 5]).unwrap();
        assert!(read_header(&path).unwrap_err().starts_with("truncated"));
        std::fs::write(&path, &good[..10]).unwrap();
        assert!(read_header(&path).unwrap_err().starts_with("truncated"));
        // Not a checkpoint; another format version.
        std::fs::write(&path, b"hello, this is not a checkpoint file").unwrap();
        assert!(read_header(&path).unwrap_err().contains("not an ftla checkpoint"));
        let mut bad = good.clone();
        bad[8] = 9;
        std::fs::write(&path, &bad).unwrap();
        assert!(read_header(&path).unwrap_err().contains("format version 9"));
        // A checkpoint of the formats before the one codec, before the
        // saved call recorded the losses per row its checksums rebuild,
        // before incremental checkpoints, and before recoveries recorded
        // a shrink.
        for old in [1u8, 2, 3, 4] {
            bad[8] = old;
            std::fs::write(&path, &bad).unwrap();
            let e = read_header(&path).unwrap_err();
            assert!(e.contains(&format!("format version {old}; this build reads version 5")), "{e}");
        }
    }

    #[test]
    fn identities_differ_exactly_where_a_save_must_agree() {
        let (a, mut b) = (header(0), header(3));
        b.save_ms = 9.0;
        b.call.as_mut().unwrap().detect_ms = 7.0;
        b.call.as_mut().unwrap().arrays = vec![1];
        assert_eq!(a.identity(), b.identity());
        b.run_id = 1;
        assert_ne!(a.identity(), b.identity());
        let mut c = header(0);
        c.call.as_mut().unwrap().committed = 4;
        assert_ne!(a.identity(), c.identity());
        let empty = Header { call: None, ..header(2) };
        assert_eq!(Header::from_bytes(&empty.to_bytes()), Some(empty));
    }
}
