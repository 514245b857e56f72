//! Matrix files: NumPy `.npy` and MatrixMarket *array* `.mtx`, read and
//! written either whole or as one process's block-cyclic piece.
//!
//! Distributed use:
//!
//! * **.npy** (binary, fixed-size records): every rank parses the header
//!   ([`npy::read_npy_header`]) and reads only its own blocks with positioned
//!   reads ([`npy::read_npy_local`]). To write, one rank creates the file
//!   and its header ([`npy::create_npy`]), all ranks synchronise, then each
//!   writes its own blocks at their offsets ([`npy::write_npy_local`]).
//! * **.mtx** (text): every rank parses the whole file and keeps only its own
//!   entries ([`mtx::read_mtx_local`]); writing is whole-matrix
//!   ([`mtx::write_mtx`]) from a rank that gathered the matrix.
//!
//! A process's piece is described by a [`Layout`]: the global shape, block
//! sizes, grid shape and the process's coordinates. Local arrays are
//! column-major with leading dimension `lld = max(1, local rows)`, exactly as
//! a [`Descriptor`] built with [`Descriptor::with_min_lld`] expects.
//!
//! All failures are an [`IoError`] naming the file and the problem.

use std::fmt;
use std::path::{Path, PathBuf};

use blacs_ft::index::{indxl2g, numroc};

use crate::descriptor::Descriptor;

pub mod mtx;
pub mod npy;

pub use mtx::{read_mtx, read_mtx_local, write_mtx};
pub use npy::{
    create_npy, create_npy_vector, read_npy, read_npy_header, read_npy_local, read_npy_vector_f64, read_npy_vector_i64,
    write_npy, write_npy_header, write_npy_local, write_npy_vector_f64, write_npy_vector_i64, NpyDtype, NpyHeader,
};

/// A failure reading or writing a matrix file. Every variant that concerns a
/// file carries its path, and `Display` names it first.
#[derive(Debug)]
pub enum IoError {
    /// The file does not exist.
    NotFound {
        /// The file.
        path: PathBuf,
    },
    /// Any other operating-system error (permissions, disk full, ...).
    Os {
        /// The file.
        path: PathBuf,
        /// What was being done: "open", "read", "write", ...
        action: &'static str,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file does not start with the format's signature
    /// (`\x93NUMPY` for .npy, `%%MatrixMarket` for .mtx).
    BadMagic {
        /// The file.
        path: PathBuf,
        /// Which format was expected ("NumPy .npy", "MatrixMarket").
        format: &'static str,
    },
    /// A .npy format version this reader does not know (1.0, 2.0 and 3.0 are read).
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// Major version byte.
        major: u8,
        /// Minor version byte.
        minor: u8,
    },
    /// An element type other than the one needed.
    UnsupportedDtype {
        /// The file.
        path: PathBuf,
        /// The dtype the file declares (e.g. `<f4`, or `complex` for .mtx).
        found: String,
        /// What is accepted here (e.g. `'<f8' (little-endian float64)`).
        expected: &'static str,
    },
    /// A feature of the format that is valid but not supported here
    /// (.mtx `coordinate` or `symmetric`, .npy arrays of 0 or ≥ 3 dimensions).
    Unsupported {
        /// The file.
        path: PathBuf,
        /// What it is.
        what: String,
    },
    /// The header cannot be parsed.
    MalformedHeader {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The file is shorter than its header says.
    Truncated {
        /// The file.
        path: PathBuf,
        /// Bytes the header implies.
        expected: u64,
        /// Bytes the file has.
        actual: u64,
    },
    /// The file holds a matrix of another shape than the caller expects.
    ShapeMismatch {
        /// The file.
        path: PathBuf,
        /// Shape in the file (rows, cols).
        file: (usize, usize),
        /// Shape expected (rows, cols).
        expected: (usize, usize),
    },
    /// A value in a text file is not a number.
    NonNumeric {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The offending token.
        token: String,
    },
    /// A text file holds another number of values than its size line says.
    WrongCount {
        /// The file.
        path: PathBuf,
        /// Values the size line implies.
        expected: usize,
        /// Values found.
        found: usize,
    },
    /// The distribution or buffer passed in is inconsistent (no file involved).
    InvalidLayout(String),
}

impl fmt::Display for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IoError::NotFound { path } => write!(f, "{}: file not found", path.display()),
            IoError::Os { path, action, source } => write!(f, "{}: cannot {action}: {source}", path.display()),
            IoError::BadMagic { path, format } => {
                write!(f, "{}: not a {format} file (bad magic string at the start)", path.display())
            }
            IoError::UnsupportedVersion { path, major, minor } => {
                write!(
                    f,
                    "{}: unsupported .npy format version {major}.{minor} (1.0, 2.0, 3.0 are read)",
                    path.display()
                )
            }
            IoError::UnsupportedDtype { path, found, expected } => {
                write!(f, "{}: unsupported dtype {found}, expected {expected}", path.display())
            }
            IoError::Unsupported { path, what } => write!(f, "{}: unsupported {what}", path.display()),
            IoError::MalformedHeader { path, reason } => write!(f, "{}: malformed header: {reason}", path.display()),
            IoError::Truncated { path, expected, actual } => {
                write!(f, "{}: truncated file: expected {expected} bytes, file has {actual}", path.display())
            }
            IoError::ShapeMismatch { path, file, expected } => write!(
                f,
                "{}: shape mismatch: file is {}x{}, expected {}x{}",
                path.display(),
                file.0,
                file.1,
                expected.0,
                expected.1
            ),
            IoError::NonNumeric { path, line, token } => {
                write!(f, "{}: non-numeric token '{token}' at line {line}", path.display())
            }
            IoError::WrongCount { path, expected, found } => {
                write!(f, "{}: wrong count of values: expected {expected}, found {found}", path.display())
            }
            IoError::InvalidLayout(why) => write!(f, "invalid distribution: {why}"),
        }
    }
}

impl std::error::Error for IoError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            IoError::Os { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl IoError {
    /// Wraps an OS error, turning "not found" into [`IoError::NotFound`].
    pub(crate) fn os(path: &Path, action: &'static str, source: std::io::Error) -> IoError {
        if source.kind() == std::io::ErrorKind::NotFound {
            IoError::NotFound { path: path.to_path_buf() }
        } else {
            IoError::Os { path: path.to_path_buf(), action, source }
        }
    }
}

/// A whole matrix read from a file: column-major, leading dimension `rows`.
#[derive(Debug, Clone, PartialEq)]
pub struct Dense {
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// `rows * cols` values, column-major.
    pub data: Vec<f64>,
}

/// One process's share of a 2D block-cyclic matrix: everything needed to map
/// between the global matrix (in a file) and the local column-major array.
///
/// Checked by every function that takes it ([`Layout::validate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Global rows *(global)*.
    pub m: usize,
    /// Global columns *(global)*.
    pub n: usize,
    /// Row block size *(global)*, ≥ 1.
    pub mb: usize,
    /// Column block size *(global)*, ≥ 1.
    pub nb: usize,
    /// Process row owning the first row block *(global)*.
    pub rsrc: usize,
    /// Process column owning the first column block *(global)*.
    pub csrc: usize,
    /// Process rows *(global)*, ≥ 1.
    pub nprow: usize,
    /// Process columns *(global)*, ≥ 1.
    pub npcol: usize,
    /// This process's row *(local)*.
    pub myrow: usize,
    /// This process's column *(local)*.
    pub mycol: usize,
}

impl Layout {
    /// Layout of an `m`×`n` matrix in `mb`×`nb` blocks *(global)* on process
    /// `(myrow, mycol)` *(local)* of an `nprow`×`npcol` grid *(global)*, the
    /// first block on process (0, 0) (`RSRC = CSRC = 0`).
    pub fn new(
        m: usize,
        n: usize,
        mb: usize,
        nb: usize,
        myrow: usize,
        mycol: usize,
        nprow: usize,
        npcol: usize,
    ) -> Layout {
        Layout { m, n, mb, nb, rsrc: 0, csrc: 0, nprow, npcol, myrow, mycol }
    }

    /// The same layout with the first block on process `(rsrc, csrc)` *(global)*.
    pub fn with_source(self, rsrc: usize, csrc: usize) -> Layout {
        Layout { rsrc, csrc, ..self }
    }

    /// The layout a descriptor gives process `(myrow, mycol)` *(local)* of an
    /// `nprow`×`npcol` grid *(global)*. (The descriptor's `LLD` is not part of
    /// a layout; local arrays returned by readers use `max(1, local rows)`.)
    pub fn from_descriptor(desc: &Descriptor, myrow: usize, mycol: usize, nprow: usize, npcol: usize) -> Layout {
        Layout {
            m: desc.m(),
            n: desc.n(),
            mb: desc.mb(),
            nb: desc.nb(),
            rsrc: desc.rsrc(),
            csrc: desc.csrc(),
            nprow,
            npcol,
            myrow,
            mycol,
        }
    }

    /// Checks block sizes ≥ 1, grid ≥ 1×1, coordinates inside the grid and
    /// that `m·n` fits in `usize`.
    pub fn validate(&self) -> Result<(), IoError> {
        let bad = |why: String| Err(IoError::InvalidLayout(why));
        if self.mb == 0 || self.nb == 0 {
            return bad(format!("block sizes must be positive, got {}x{}", self.mb, self.nb));
        }
        if self.nprow == 0 || self.npcol == 0 {
            return bad(format!("grid must be at least 1x1, got {}x{}", self.nprow, self.npcol));
        }
        if self.myrow >= self.nprow || self.mycol >= self.npcol {
            return bad(format!(
                "process ({}, {}) is outside the {}x{} grid",
                self.myrow, self.mycol, self.nprow, self.npcol
            ));
        }
        if self.m.checked_mul(self.n).is_none() {
            return bad(format!("a {}x{} matrix is too large", self.m, self.n));
        }
        if self.rsrc >= self.nprow || self.csrc >= self.npcol {
            return bad(format!(
                "source process ({}, {}) is outside the {}x{} grid",
                self.rsrc, self.csrc, self.nprow, self.npcol
            ));
        }
        Ok(())
    }

    /// Rows stored on this process (`NUMROC(M, MB, MYROW, RSRC, NPROW)`); the layout must be valid.
    pub fn local_rows(&self) -> usize {
        numroc(self.m, self.mb, self.myrow, self.rsrc, self.nprow.max(1))
    }

    /// Columns stored on this process (`NUMROC(N, NB, MYCOL, CSRC, NPCOL)`); the layout must be valid.
    pub fn local_cols(&self) -> usize {
        numroc(self.n, self.nb, self.mycol, self.csrc, self.npcol.max(1))
    }

    /// Leading dimension the readers use for this process: `max(1, local rows)`.
    pub fn lld(&self) -> usize {
        self.local_rows().max(1)
    }

    /// Global row of local row `li`.
    pub(crate) fn global_row(&self, li: usize) -> usize {
        indxl2g(li, self.mb, self.myrow, self.rsrc, self.nprow)
    }

    /// Global column of local column `lj`.
    pub(crate) fn global_col(&self, lj: usize) -> usize {
        indxl2g(lj, self.nb, self.mycol, self.csrc, self.npcol)
    }

    /// Maximal runs of consecutive global rows stored on this process.
    pub(crate) fn row_runs(&self) -> Vec<Run> {
        runs(self.local_rows(), self.mb, |l| self.global_row(l))
    }

    /// Maximal runs of consecutive global columns stored on this process.
    pub(crate) fn col_runs(&self) -> Vec<Run> {
        runs(self.local_cols(), self.nb, |l| self.global_col(l))
    }
}

/// `len` consecutive global indices starting at `global`, stored at
/// consecutive local indices starting at `local`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    pub global: usize,
    pub local: usize,
    pub len: usize,
}

/// Splits `0..nloc` local indices into block runs and merges runs that are
/// also contiguous globally (a 1-process dimension gives one run).
fn runs(nloc: usize, nb: usize, l2g: impl Fn(usize) -> usize) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    let mut l = 0;
    while l < nloc {
        let len = nb.min(nloc - l);
        let g = l2g(l);
        match out.last_mut() {
            Some(last) if last.global + last.len == g => last.len += len,
            _ => out.push(Run { global: g, local: l, len }),
        }
        l += len;
    }
    out
}

/// Elements a column-major `rows`×`cols` array with leading dimension `ld` spans.
pub(crate) fn needed_len(rows: usize, cols: usize, ld: usize) -> usize {
    if rows == 0 || cols == 0 {
        0
    } else {
        ld * (cols - 1) + rows
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static COUNTER: AtomicUsize = AtomicUsize::new(0);

    /// A unique path in the temp directory, removed on drop.
    pub struct TempPath(pub PathBuf);

    impl TempPath {
        pub fn new(ext: &str) -> TempPath {
            let k = COUNTER.fetch_add(1, Ordering::Relaxed);
            TempPath(std::env::temp_dir().join(format!("ftla-io-test-{}-{k}.{ext}", std::process::id())))
        }
    }

    impl Drop for TempPath {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    /// Deterministic test matrix, column-major, distinct values.
    pub fn matrix(m: usize, n: usize) -> Vec<f64> {
        (0..m * n).map(|k| (k as f64) * 0.25 - 3.0 + 1.0 / (k as f64 + 7.0)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_merge_contiguous_blocks() {
        let one = Layout::new(10, 7, 3, 2, 0, 0, 1, 1);
        assert_eq!(one.row_runs(), vec![Run { global: 0, local: 0, len: 10 }]);
        let l = Layout::new(10, 7, 3, 2, 1, 0, 2, 3);
        assert_eq!(l.row_runs(), vec![Run { global: 3, local: 0, len: 3 }, Run { global: 9, local: 3, len: 1 }]);
        assert_eq!(l.col_runs(), vec![Run { global: 0, local: 0, len: 2 }, Run { global: 6, local: 2, len: 1 }]);
        let l = Layout::new(0, 7, 3, 2, 1, 0, 2, 3);
        assert!(l.row_runs().is_empty());
    }

    #[test]
    fn layout_validation() {
        assert!(Layout::new(4, 4, 2, 2, 0, 0, 1, 1).validate().is_ok());
        for bad in [
            Layout::new(4, 4, 0, 2, 0, 0, 1, 1),
            Layout::new(4, 4, 2, 0, 0, 0, 1, 1),
            Layout::new(4, 4, 2, 2, 0, 0, 0, 1),
            Layout::new(4, 4, 2, 2, 1, 0, 1, 1),
            Layout::new(4, 4, 2, 2, 0, 2, 2, 2),
            Layout::new(4, 4, 2, 2, 0, 0, 2, 2).with_source(2, 0),
            Layout::new(usize::MAX, 2, 2, 2, 0, 0, 1, 1),
        ] {
            assert!(matches!(bad.validate(), Err(IoError::InvalidLayout(_))), "{bad:?}");
        }
        let d = Descriptor::new(10, 7, 3, 2, 1, 2, 6, 0, 2, 3, 0).expect("desc");
        let l = Layout::from_descriptor(&d, 0, 1, 2, 3);
        assert_eq!((l.rsrc, l.csrc, l.local_rows(), l.local_cols()), (1, 2, d.local_rows(0, 2), d.local_cols(1, 3)));
    }

    #[test]
    fn messages_name_file_and_problem() {
        let p = PathBuf::from("/data/a.npy");
        let cases: Vec<(IoError, &str)> = vec![
            (IoError::NotFound { path: p.clone() }, "/data/a.npy: file not found"),
            (IoError::Truncated { path: p.clone(), expected: 138, actual: 100 }, "expected 138 bytes, file has 100"),
            (IoError::ShapeMismatch { path: p.clone(), file: (3, 4), expected: (4, 3) }, "file is 3x4, expected 4x3"),
            (IoError::NonNumeric { path: p.clone(), line: 7, token: "x1".into() }, "'x1' at line 7"),
            (IoError::WrongCount { path: p.clone(), expected: 12, found: 11 }, "expected 12, found 11"),
            (
                IoError::UnsupportedDtype { path: p.clone(), found: "'<f4'".into(), expected: "'<f8'" },
                "unsupported dtype '<f4', expected '<f8'",
            ),
            (IoError::BadMagic { path: p.clone(), format: "NumPy .npy" }, "not a NumPy .npy file"),
            (IoError::MalformedHeader { path: p.clone(), reason: "no shape".into() }, "malformed header: no shape"),
        ];
        for (e, want) in cases {
            let s = e.to_string();
            assert!(s.starts_with("/data/a.npy: ") && s.contains(want), "{s}");
        }
    }
}
