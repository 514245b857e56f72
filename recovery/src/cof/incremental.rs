//! Incremental periodic checkpoints: the part of a call's state that no
//! later step changes (QR's finished columns and rows of R, LU's finished
//! rows of U, CG's A) is written once, to an append-only base file per
//! process; each generation's file holds only the rest and names the
//! prefix of the base file it needs (its length and CRC-32).
//!
//! A base file belongs to one job, one call and one process
//! (`DIR/base-J-C/rank-R-eE.base`: job J of the run, the call's index C in
//! the region, grid rank R at repair epoch E — a replacement starts a file
//! of its own, so that the files the kept generations name never change).
//! Layout (little-endian):
//!
//! ```text
//! "FTLABASE"  version (u32)
//! records, each: a r0 c0 r1 c1 (u64 × 5), then the values newly frozen
//!   when the frozen part of saved array a grew from (r0, c0) to (r1, c1):
//!   columns c0..c1, rows r0..ld; then columns c1..lc, rows r0..r1
//!   (column-major, each column's run in turn)
//! ```
//!
//! A save appends its record and syncs the file before its generation's
//! file is written; a save that did not complete may leave a tail, which
//! the next append cuts off and no generation names.

use super::file::{CHUNK, FORMAT_VERSION};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The first bytes of every base file.
const MAGIC: &[u8; 8] = b"FTLABASE";
/// Magic and version.
const LEAD: u64 = 12;
/// A record's array and four bounds.
const RECORD_HEAD: u64 = 40;

/// What no later step changes of one of a call's saved arrays (its local
/// storage, column-major with leading dimension `ld`) at a commit point:
/// its first `rows` local rows in every column and its first `cols` local
/// columns whole (see `protocol::Algorithm::frozen_at`). Never shrinks
/// from one commit point to a later one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frozen {
    pub ld: u64,
    pub rows: u64,
    pub cols: u64,
}

/// What a generation's file says of the base file it needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaseRef {
    /// The base directory (`base-J-C`) in the checkpoint directory, and
    /// the file in it.
    pub dir: String,
    pub file: String,
    /// The prefix of the base file this generation needs: its length and
    /// CRC-32.
    #[serde(with = "postcard::fixint::le")]
    pub len: u64,
    #[serde(with = "postcard::fixint::le")]
    pub crc: u32,
    /// The frozen part of each of the first saved arrays, as of this
    /// generation: the generation's payload holds the rest of each
    /// (columns `cols..`, rows `rows..ld`), then the arrays after them
    /// whole.
    pub frozen: Vec<Frozen>,
}

/// A process's base file while its job saves one call.
#[derive(Clone, Debug)]
pub(crate) struct Base {
    /// Its directory's name, its file's name and its path.
    pub dir: String,
    pub file: String,
    pub path: PathBuf,
    /// The call it belongs to (its index in the region).
    pub call: u64,
    /// The valid prefix, its CRC, and the frozen parts it holds.
    pub len: u64,
    pub crc: u32,
    pub frozen: Vec<Frozen>,
}

impl Base {
    /// A new, empty base file for call `call` of job `job`, grid rank
    /// `rank` at repair epoch `epoch`, in `dir` (created with its lead).
    /// `lds`: the leading dimension of each array it takes.
    pub fn create(dir: &Path, job: u32, call: u64, rank: i32, epoch: u32, lds: &[u64]) -> Result<Base, String> {
        let name = format!("base-{job}-{call}");
        let file = format!("rank-{rank}-e{epoch}.base");
        let at = dir.join(&name);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&at)
            .map_err(|e| format!("cannot create {}: {e}", at.display()))?;
        let path = at.join(&file);
        let mut lead = MAGIC.to_vec();
        lead.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        f.write_all(&lead).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(Base {
            dir: name,
            file,
            path,
            call,
            len: LEAD,
            crc: crc32fast::hash(&lead),
            frozen: lds.iter().map(|&ld| Frozen { ld, rows: 0, cols: 0 }).collect(),
        })
    }

    /// Whether it takes the frozen parts `to` of call `call` (the same
    /// arrays, never shrinking).
    pub fn fits(&self, call: u64, to: &[Frozen]) -> bool {
        self.call == call
            && self.frozen.len() == to.len()
            && self.frozen.iter().zip(to).all(|(f, t)| f.ld == t.ld && f.rows <= t.rows && f.cols <= t.cols)
    }

    /// Appends the values of `arrays` that froze since the last append (up
    /// to `to`, one per array, as [`Base::fits`] takes), synced; returns
    /// the bytes appended.
    pub fn append(&mut self, arrays: &[&[f64]], to: &[Frozen]) -> Result<u64, String> {
        if !self.fits(self.call, to) || arrays.len() < to.len() {
            return Err(format!("the frozen parts of the arrays shrank ({:?} to {to:?})", self.frozen));
        }
        let grew: Vec<usize> = (0..to.len()).filter(|&a| to[a] != self.frozen[a]).collect();
        if grew.is_empty() {
            return Ok(0);
        }
        let fail = |what: &str, e: std::io::Error| format!("cannot {what} {}: {e}", self.path.display());
        let f = OpenOptions::new().write(true).open(&self.path).map_err(|e| fail("open", e))?;
        // (A tail an interrupted save left is cut off first.)
        f.set_len(self.len).map_err(|e| fail("truncate", e))?;
        let mut crc = crc32fast::Hasher::new_with_initial_len(self.crc, self.len);
        let mut at = self.len;
        let mut put = |bytes: &[u8]| -> std::io::Result<()> {
            crc.update(bytes);
            f.write_all_at(bytes, at)?;
            at += bytes.len() as u64;
            Ok(())
        };
        let mut buf = Vec::with_capacity(CHUNK * 8);
        for a in grew {
            let (from, to) = (self.frozen[a], to[a]);
            let head: Vec<u8> =
                [a as u64, from.rows, from.cols, to.rows, to.cols].iter().flat_map(|v| v.to_le_bytes()).collect();
            put(&head).map_err(|e| fail("write", e))?;
            for run in record_runs(from, to, arrays[a].len() as u64) {
                for chunk in arrays[a][run].chunks(CHUNK) {
                    buf.clear();
                    buf.extend(chunk.iter().flat_map(|x| x.to_le_bytes()));
                    put(&buf).map_err(|e| fail("write", e))?;
                }
            }
        }
        f.sync_data().map_err(|e| fail("sync", e))?;
        let added = at - self.len;
        self.len = at;
        self.crc = crc.finalize();
        self.frozen = to.to_vec();
        Ok(added)
    }

    /// The reference a generation saved now records.
    pub fn reference(&self) -> BaseRef {
        BaseRef {
            dir: self.dir.clone(),
            file: self.file.clone(),
            len: self.len,
            crc: self.crc,
            frozen: self.frozen.clone(),
        }
    }
}

/// The runs (ranges of the array) of a record from `from` to `to` frozen,
/// in its order: columns `from.cols..to.cols`, rows `from.rows..ld`; then
/// columns `to.cols..lc`, rows `from.rows..to.rows`.
fn record_runs(from: Frozen, to: Frozen, len: u64) -> Vec<std::ops::Range<usize>> {
    let ld = to.ld.max(1);
    let lc = len / ld;
    let mut runs = Vec::new();
    for c in from.cols..to.cols.min(lc) {
        runs.push((c * ld + from.rows) as usize..((c + 1) * ld) as usize);
    }
    if to.rows > from.rows {
        for c in to.cols..lc {
            runs.push((c * ld + from.rows) as usize..(c * ld + to.rows) as usize);
        }
    }
    runs.retain(|r| !r.is_empty());
    runs
}

/// The runs of a generation's payload that hold the unfrozen part of the
/// first array (`len` values): columns `cols..lc`, rows `rows..ld`.
pub(crate) fn unfrozen_runs(frozen: Frozen, len: u64) -> Vec<std::ops::Range<usize>> {
    let ld = frozen.ld.max(1);
    let lc = len / ld;
    (frozen.cols..lc)
        .map(|c| (c * ld + frozen.rows) as usize..((c + 1) * ld) as usize)
        .filter(|r| !r.is_empty())
        .collect()
}

/// Reads the prefix of the base file `r` names (next to the generation's
/// directory `gen_dir`) into `arrays`, checking its length and CRC.
///
/// # Errors
/// The reason: a base file missing, shorter than the generation needs,
/// corrupt, or not of these arrays' shapes.
pub(crate) fn read_base(gen_dir: &Path, r: &BaseRef, arrays: &mut [&mut [f64]]) -> Result<(), String> {
    let path = gen_dir.parent().unwrap_or(gen_dir).join(&r.dir).join(&r.file);
    let name = path.display();
    let f = File::open(&path).map_err(|e| format!("its base file {name} cannot be opened: {e}"))?;
    let size = f.metadata().map_err(|e| format!("cannot stat {name}: {e}"))?.len();
    if size < r.len {
        return Err(format!("its base file {name} is truncated: {size} bytes, the generation needs {}", r.len));
    }
    let mut crc = crc32fast::Hasher::new();
    let mut read = |at: u64, n: usize| -> Result<Vec<u8>, String> {
        let mut b = vec![0u8; n];
        f.read_exact_at(&mut b, at).map_err(|e| format!("cannot read {name}: {e}"))?;
        crc.update(&b);
        Ok(b)
    };
    let lead = read(0, LEAD as usize)?;
    if &lead[..8] != MAGIC {
        return Err(format!("its base file {name} is not an ftla base file"));
    }
    let bad = || format!("its base file {name} does not hold this process's arrays (another call or grid position)");
    if r.frozen.len() > arrays.len() {
        return Err(bad());
    }
    let mut at = LEAD;
    let mut frozen: Vec<Frozen> = r.frozen.iter().map(|f| Frozen { ld: f.ld, rows: 0, cols: 0 }).collect();
    while at < r.len {
        if r.len - at < RECORD_HEAD {
            return Err(bad());
        }
        let head = read(at, RECORD_HEAD as usize)?;
        at += RECORD_HEAD;
        let v: Vec<u64> = head.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        let a = usize::try_from(v[0]).ok().filter(|&a| a < frozen.len()).ok_or_else(bad)?;
        let ld = frozen[a].ld;
        let (from, to) = (Frozen { ld, rows: v[1], cols: v[2] }, Frozen { ld, rows: v[3], cols: v[4] });
        if from != frozen[a] || to.rows > ld.max(1) || to.rows < from.rows || to.cols < from.cols {
            return Err(bad());
        }
        for run in record_runs(from, to, arrays[a].len() as u64) {
            if run.end > arrays[a].len() {
                return Err(bad());
            }
            for chunk in arrays[a][run].chunks_mut(CHUNK) {
                let b = read(at, chunk.len() * 8)?;
                at += b.len() as u64;
                for (x, c) in chunk.iter_mut().zip(b.chunks_exact(8)) {
                    *x = f64::from_le_bytes(c.try_into().expect("8 bytes"));
                }
            }
        }
        frozen[a] = to;
    }
    if at != r.len || frozen != r.frozen {
        return Err(bad());
    }
    if crc.finalize() != r.crc {
        return Err(format!("its base file {name} is corrupt (checksum mismatch)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frozen_parts_written_once_and_the_rest_give_the_arrays_back() {
        let dir = tempfile::tempdir().unwrap();
        // A 5 × 4 array (ld 5) and a 3 × 2 one (ld 3).
        let a: Vec<f64> = (0..20).map(|x| x as f64 * 0.5 - 3.0).collect();
        let b: Vec<f64> = (0..6).map(|x| x as f64 + 100.0).collect();
        let both: [&[f64]; 2] = [&a, &b];
        let mut base = Base::create(dir.path(), 2, 1, 3, 0, &[5, 3]).unwrap();
        assert_eq!((base.dir.as_str(), base.file.as_str()), ("base-2-1", "rank-3-e0.base"));
        let one = [Frozen { ld: 5, rows: 1, cols: 1 }, Frozen { ld: 3, rows: 0, cols: 0 }];
        let two = [Frozen { ld: 5, rows: 3, cols: 2 }, Frozen { ld: 3, rows: 3, cols: 2 }];
        assert!(base.append(&both, &one).unwrap() > 0);
        let first = base.reference();
        // (An interrupted save's tail is cut off by the next append.)
        std::fs::OpenOptions::new().append(true).open(&base.path).unwrap().write_all(b"tail").unwrap();
        base.append(&both, &two).unwrap();
        assert_eq!(base.append(&both, &two).unwrap(), 0);
        // Shrinking is refused.
        assert!(!base.fits(1, &one) && base.fits(1, &two) && !base.fits(2, &two));
        assert!(base.append(&both, &one).is_err());
        let gen_dir = dir.path().join("gen-1");
        for r in [first, base.reference()] {
            let (mut x, mut y) = (vec![f64::NAN; 20], vec![f64::NAN; 6]);
            read_base(&gen_dir, &r, &mut [&mut x, &mut y]).unwrap();
            for (back, f, orig) in [(&mut x, r.frozen[0], &a), (&mut y, r.frozen[1], &b)] {
                for run in unfrozen_runs(f, orig.len() as u64) {
                    back[run.clone()].copy_from_slice(&orig[run]);
                }
                assert_eq!(back, orig);
            }
        }
        // A corrupt prefix is refused, and a truncated one.
        let mut bytes = std::fs::read(&base.path).unwrap();
        bytes[LEAD as usize + 48] ^= 1;
        std::fs::write(&base.path, &bytes).unwrap();
        let (mut x, mut y) = (vec![0.0; 20], vec![0.0; 6]);
        let e = read_base(&gen_dir, &base.reference(), &mut [&mut x, &mut y]).unwrap_err();
        assert!(e.contains("corrupt"), "{e}");
        std::fs::write(&base.path, &bytes[..30]).unwrap();
        let e = read_base(&gen_dir, &base.reference(), &mut [&mut x, &mut y]).unwrap_err();
        assert!(e.contains("truncated"), "{e}");
    }
}
