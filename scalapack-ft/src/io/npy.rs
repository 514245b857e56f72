//! NumPy `.npy` files: format versions 1.0, 2.0 (and 3.0) read, 1.0 written
//! (2.0 when a header would not fit in 64 KiB); element types `<f8`
//! (little-endian float64) for matrices and vectors and `<i8` (little-endian
//! int64) for integer vectors such as pivots; 2-D arrays in either
//! `fortran_order`, and 1-D arrays of shape `(n,)`, which read as `n`×1.
//!
//! The layout is the one NumPy documents (`numpy.lib.format`): the magic
//! `\x93NUMPY`, two version bytes, a little-endian header length (2 bytes in
//! version 1.0, 4 bytes from 2.0), and an ASCII Python dict literal
//! `{'descr': '<f8', 'fortran_order': True, 'shape': (3, 4), }` padded with
//! spaces and a final `'\n'` so that the data starts at a multiple of 64
//! bytes. The data follows as raw little-endian elements, column by column
//! when `fortran_order` is true, row by row otherwise.
//!
//! Because every element sits at a fixed offset, each rank of a
//! block-cyclic distribution reads or writes only its own blocks with
//! positioned I/O ([`read_npy_local`], [`write_npy_local`]); no rank needs the
//! whole matrix.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::{needed_len, Dense, IoError, Layout};

const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// Alignment of the data start, as NumPy writes it.
pub const NPY_ALIGN: usize = 64;
const F64_EXPECTED: &str = "'<f8' (little-endian float64)";
const I64_EXPECTED: &str = "'<i8' (little-endian int64)";

/// Element types this module reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NpyDtype {
    /// `<f8`: little-endian IEEE double.
    F64,
    /// `<i8`: little-endian signed 64-bit integer.
    I64,
}

impl NpyDtype {
    /// The NumPy `descr` string (`<f8` or `<i8`).
    pub fn descr(&self) -> &'static str {
        match self {
            NpyDtype::F64 => "<f8",
            NpyDtype::I64 => "<i8",
        }
    }
}

/// A parsed `.npy` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyHeader {
    /// Format version `(major, minor)`.
    pub version: (u8, u8),
    /// Element type.
    pub dtype: NpyDtype,
    /// True when the data is stored column by column.
    pub fortran_order: bool,
    /// The shape as stored: one or two dimensions.
    pub shape: Vec<usize>,
    /// Rows: `shape[0]`.
    pub rows: usize,
    /// Columns: `shape[1]`, or 1 for a 1-D array.
    pub cols: usize,
    /// Byte offset of the first element.
    pub data_offset: u64,
}

impl NpyHeader {
    /// Bytes of element data the header implies (`rows * cols * 8`).
    pub fn data_bytes(&self) -> u64 {
        // Checked against overflow when the header was parsed.
        self.rows as u64 * self.cols as u64 * 8
    }

    /// Byte offset of element `(i, j)` *(global, 0-based)* in the file.
    pub fn element_offset(&self, i: usize, j: usize) -> u64 {
        let k = if self.fortran_order {
            i as u64 + j as u64 * self.rows as u64
        } else {
            i as u64 * self.cols as u64 + j as u64
        };
        self.data_offset + 8 * k
    }
}

/// The complete header (magic, version, length, padded dict, `'\n'`) NumPy
/// would write for an array of `dtype` and `shape` (1 or 2 dimensions), with
/// the data starting at a multiple of [`NPY_ALIGN`] bytes.
pub fn npy_header_bytes(dtype: NpyDtype, shape: &[usize], fortran_order: bool) -> Vec<u8> {
    let shape_text = match shape {
        [n] => format!("({n},)"),
        dims => format!("({})", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let dict = format!(
        "{{'descr': '{}', 'fortran_order': {}, 'shape': {}, }}",
        dtype.descr(),
        if fortran_order { "True" } else { "False" },
        shape_text
    );
    // As numpy.lib.format._wrap_header: 1..=64 spaces, then '\n'.
    let build = |prefix: usize| {
        let pad = NPY_ALIGN - (prefix + dict.len() + 1) % NPY_ALIGN;
        dict.len() + pad + 1
    };
    let (version, prefix) = if build(10) <= u16::MAX as usize { (1u8, 10) } else { (2u8, 12) };
    let hlen = build(prefix);
    let mut out = Vec::with_capacity(prefix + hlen);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(hlen as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(hlen as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(prefix + hlen - 1, b' ');
    out.push(b'\n');
    out
}

/// Writes the header of a 2-D `<f8` array of `rows`×`cols` *(global)* at the
/// start of `file` (positioned write; the file's cursor is not used) and
/// returns the data offset. Does not size the file: see [`create_npy`].
pub fn write_npy_header(file: &File, rows: usize, cols: usize, fortran_order: bool) -> std::io::Result<u64> {
    let header = npy_header_bytes(NpyDtype::F64, &[rows, cols], fortran_order);
    file.write_all_at(&header, 0)?;
    Ok(header.len() as u64)
}

/// Creates (or truncates) `path`, writes the header of a 2-D `<f8`
/// `rows`×`cols` *(global)* array and extends the file to its full size
/// (unwritten elements read as 0.0). Called by one rank before every rank
/// calls [`write_npy_local`]; the ranks must synchronise in between.
pub fn create_npy(path: impl AsRef<Path>, rows: usize, cols: usize, fortran_order: bool) -> Result<NpyHeader, IoError> {
    create_npy_shaped(path, &[rows, cols], fortran_order)
}

/// [`create_npy`] for a 1-D `<f8` array of length `len` *(global)*: the
/// shape `(len,)` NumPy gives a vector; [`write_npy_local`] writes it as
/// a `len`×1 matrix.
pub fn create_npy_vector(path: impl AsRef<Path>, len: usize) -> Result<NpyHeader, IoError> {
    create_npy_shaped(path, &[len], false)
}

/// [`create_npy`] with the shape `[rows, cols]` or `[rows]` (a column).
fn create_npy_shaped(path: impl AsRef<Path>, shape: &[usize], fortran_order: bool) -> Result<NpyHeader, IoError> {
    let path = path.as_ref();
    let (rows, cols) = match shape {
        [rows] => (*rows, 1),
        [rows, cols] => (*rows, *cols),
        _ => return Err(IoError::InvalidLayout(format!("an .npy matrix has 1 or 2 dimensions, not {}", shape.len()))),
    };
    let bytes = (rows as u64)
        .checked_mul(cols as u64)
        .and_then(|k| k.checked_mul(8))
        .ok_or_else(|| IoError::InvalidLayout(format!("a {rows}x{cols} array is too large")))?;
    let header = npy_header_bytes(NpyDtype::F64, shape, fortran_order);
    let offset = header.len() as u64;
    let file = File::create(path).map_err(|e| IoError::os(path, "create", e))?;
    file.write_all_at(&header, 0).map_err(|e| IoError::os(path, "write", e))?;
    file.set_len(offset + bytes).map_err(|e| IoError::os(path, "resize", e))?;
    Ok(NpyHeader {
        version: (header[6], 0),
        dtype: NpyDtype::F64,
        fortran_order,
        shape: shape.to_vec(),
        rows,
        cols,
        data_offset: offset,
    })
}

/// Reads and checks the header of `path`: magic, version, dict, dtype,
/// shape, and that the file is long enough for the data it announces.
pub fn read_npy_header(path: impl AsRef<Path>) -> Result<NpyHeader, IoError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|e| IoError::os(path, "open", e))?;
    header_from_file(path, &file)
}

/// Reads process `layout.(myrow, mycol)`'s block-cyclic piece of the `<f8`
/// matrix in `path` with positioned reads of its own blocks only.
///
/// * `layout` *(global shape and distribution, local coordinates)*: the file
///   must hold an `m`×`n` matrix (a 1-D file of length `m` counts as `m`×1).
///
/// Returns the column-major local array and its leading dimension
/// `lld = max(1, local rows)`.
pub fn read_npy_local(path: impl AsRef<Path>, layout: &Layout) -> Result<(Vec<f64>, usize), IoError> {
    let path = path.as_ref();
    layout.validate()?;
    let file = File::open(path).map_err(|e| IoError::os(path, "open", e))?;
    let h = header_from_file(path, &file)?;
    require_dtype(path, &h, NpyDtype::F64)?;
    check_shape(path, &h, layout.m, layout.n)?;
    let (lr, lc, lld) = (layout.local_rows(), layout.local_cols(), layout.lld());
    let mut local = vec![0.0; lld * lc];
    let mut buf = Vec::new();
    if h.fortran_order {
        let rows = layout.row_runs();
        if let [only] = rows.as_slice() {
            if only.len == h.rows && lld == h.rows {
                // Whole columns: each column run is one contiguous piece of the file.
                for c in layout.col_runs() {
                    let out = &mut local[c.local * lld..(c.local + c.len) * lld];
                    read_f64s_at(path, &file, h.element_offset(0, c.global), &mut buf, out)?;
                }
                return Ok((local, lld));
            }
        }
        for lj in 0..lc {
            let gj = layout.global_col(lj);
            for r in &rows {
                let start = r.local + lj * lld;
                read_f64s_at(path, &file, h.element_offset(r.global, gj), &mut buf, &mut local[start..start + r.len])?;
            }
        }
    } else {
        let cols = layout.col_runs();
        let mut tmp = Vec::new();
        for li in 0..lr {
            let gi = layout.global_row(li);
            for c in &cols {
                tmp.resize(c.len, 0.0);
                read_f64s_at(path, &file, h.element_offset(gi, c.global), &mut buf, &mut tmp)?;
                for (k, &x) in tmp.iter().enumerate() {
                    local[li + (c.local + k) * lld] = x;
                }
            }
        }
    }
    Ok((local, lld))
}

/// Writes process `layout.(myrow, mycol)`'s piece into an existing `.npy`
/// file (made by [`create_npy`] or any writer of an `m`×`n` `<f8` array),
/// with positioned writes at its own elements' offsets. Works for both
/// storage orders; with Fortran order each block column is a contiguous run.
///
/// * `layout` *(global shape and distribution, local coordinates)*;
/// * `local` *(local)*: column-major local array with leading dimension
///   `lld` ≥ max(1, local rows).
pub fn write_npy_local(path: impl AsRef<Path>, layout: &Layout, local: &[f64], lld: usize) -> Result<(), IoError> {
    let path = path.as_ref();
    layout.validate()?;
    let (lr, lc) = (layout.local_rows(), layout.local_cols());
    check_local_buffer(lr, lc, local.len(), lld)?;
    let file = OpenOptions::new().read(true).write(true).open(path).map_err(|e| IoError::os(path, "open", e))?;
    let h = header_from_file(path, &file)?;
    require_dtype(path, &h, NpyDtype::F64)?;
    check_shape(path, &h, layout.m, layout.n)?;
    let mut buf = Vec::new();
    if h.fortran_order {
        let rows = layout.row_runs();
        for lj in 0..lc {
            let gj = layout.global_col(lj);
            for r in &rows {
                let start = r.local + lj * lld;
                write_f64s_at(path, &file, h.element_offset(r.global, gj), &mut buf, &local[start..start + r.len])?;
            }
        }
    } else {
        let cols = layout.col_runs();
        let mut tmp = Vec::new();
        for li in 0..lr {
            let gi = layout.global_row(li);
            for c in &cols {
                tmp.clear();
                tmp.extend((0..c.len).map(|k| local[li + (c.local + k) * lld]));
                write_f64s_at(path, &file, h.element_offset(gi, c.global), &mut buf, &tmp)?;
            }
        }
    }
    Ok(())
}

/// Reads a whole `<f8` matrix (either storage order; a 1-D array as `n`×1),
/// returned column-major.
pub fn read_npy(path: impl AsRef<Path>) -> Result<Dense, IoError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|e| IoError::os(path, "open", e))?;
    let h = header_from_file(path, &file)?;
    require_dtype(path, &h, NpyDtype::F64)?;
    let mut raw = vec![0.0; h.rows * h.cols];
    read_f64s_at(path, &file, h.data_offset, &mut Vec::new(), &mut raw)?;
    let data = if h.fortran_order || h.cols <= 1 || h.rows <= 1 {
        raw
    } else {
        let mut t = vec![0.0; raw.len()];
        for i in 0..h.rows {
            for j in 0..h.cols {
                t[i + j * h.rows] = raw[i * h.cols + j];
            }
        }
        t
    };
    Ok(Dense { rows: h.rows, cols: h.cols, data })
}

/// Writes a whole `rows`×`cols` matrix given column-major (leading dimension
/// `rows`) as a Fortran-order `<f8` `.npy` file.
pub fn write_npy(path: impl AsRef<Path>, rows: usize, cols: usize, data: &[f64]) -> Result<(), IoError> {
    let expected = rows.checked_mul(cols);
    if expected != Some(data.len()) {
        return Err(IoError::InvalidLayout(format!(
            "a {rows}x{cols} matrix needs {} values, got {}",
            expected.map_or("too many".to_string(), |e| e.to_string()),
            data.len()
        )));
    }
    write_whole(
        path.as_ref(),
        &npy_header_bytes(NpyDtype::F64, &[rows, cols], true),
        data.iter().map(|x| x.to_le_bytes()),
    )
}

/// Writes a 1-D `<f8` array of shape `(n,)` (e.g. Householder scalars `tau`).
pub fn write_npy_vector_f64(path: impl AsRef<Path>, v: &[f64]) -> Result<(), IoError> {
    write_whole(path.as_ref(), &npy_header_bytes(NpyDtype::F64, &[v.len()], false), v.iter().map(|x| x.to_le_bytes()))
}

/// Writes a 1-D `<i8` array of shape `(n,)` (e.g. pivot indices).
pub fn write_npy_vector_i64(path: impl AsRef<Path>, v: &[i64]) -> Result<(), IoError> {
    write_whole(path.as_ref(), &npy_header_bytes(NpyDtype::I64, &[v.len()], false), v.iter().map(|x| x.to_le_bytes()))
}

/// Reads a `<f8` vector: shape `(n,)`, `(n, 1)` or `(1, n)`.
pub fn read_npy_vector_f64(path: impl AsRef<Path>) -> Result<Vec<f64>, IoError> {
    let (file, h, path) = open_vector(path.as_ref(), NpyDtype::F64)?;
    let mut v = vec![0.0; h.rows * h.cols];
    read_f64s_at(path, &file, h.data_offset, &mut Vec::new(), &mut v)?;
    Ok(v)
}

/// Reads a `<i8` vector: shape `(n,)`, `(n, 1)` or `(1, n)`.
pub fn read_npy_vector_i64(path: impl AsRef<Path>) -> Result<Vec<i64>, IoError> {
    let (file, h, path) = open_vector(path.as_ref(), NpyDtype::I64)?;
    let mut raw = vec![0u8; h.rows * h.cols * 8];
    file.read_exact_at(&mut raw, h.data_offset).map_err(|e| IoError::os(path, "read", e))?;
    Ok(raw.chunks_exact(8).map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect())
}

fn open_vector(path: &Path, dtype: NpyDtype) -> Result<(File, NpyHeader, &Path), IoError> {
    let file = File::open(path).map_err(|e| IoError::os(path, "open", e))?;
    let h = header_from_file(path, &file)?;
    require_dtype(path, &h, dtype)?;
    if h.shape.len() == 2 && h.rows != 1 && h.cols != 1 {
        return Err(IoError::ShapeMismatch {
            path: path.to_path_buf(),
            file: (h.rows, h.cols),
            expected: (h.rows * h.cols, 1),
        });
    }
    Ok((file, h, path))
}

fn write_whole<I: Iterator<Item = [u8; 8]>>(path: &Path, header: &[u8], values: I) -> Result<(), IoError> {
    let file = File::create(path).map_err(|e| IoError::os(path, "create", e))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let werr = |e| IoError::os(path, "write", e);
    w.write_all(header).map_err(werr)?;
    for v in values {
        w.write_all(&v).map_err(werr)?;
    }
    w.flush().map_err(werr)?;
    Ok(())
}

fn check_local_buffer(lr: usize, lc: usize, len: usize, lld: usize) -> Result<(), IoError> {
    if lld < lr.max(1) {
        return Err(IoError::InvalidLayout(format!(
            "leading dimension {lld} is less than max(1, local rows) = {}",
            lr.max(1)
        )));
    }
    let needed = needed_len(lr, lc, lld);
    if len < needed {
        return Err(IoError::InvalidLayout(format!(
            "local array has {len} elements, a {lr}x{lc} piece with leading dimension {lld} needs {needed}"
        )));
    }
    Ok(())
}

fn require_dtype(path: &Path, h: &NpyHeader, want: NpyDtype) -> Result<(), IoError> {
    if h.dtype == want {
        return Ok(());
    }
    Err(IoError::UnsupportedDtype {
        path: path.to_path_buf(),
        found: describe_descr(h.dtype.descr()),
        expected: match want {
            NpyDtype::F64 => F64_EXPECTED,
            NpyDtype::I64 => I64_EXPECTED,
        },
    })
}

fn check_shape(path: &Path, h: &NpyHeader, m: usize, n: usize) -> Result<(), IoError> {
    if (h.rows, h.cols) != (m, n) {
        return Err(IoError::ShapeMismatch { path: path.to_path_buf(), file: (h.rows, h.cols), expected: (m, n) });
    }
    Ok(())
}

fn read_f64s_at(path: &Path, file: &File, offset: u64, buf: &mut Vec<u8>, out: &mut [f64]) -> Result<(), IoError> {
    buf.resize(out.len() * 8, 0);
    file.read_exact_at(buf, offset).map_err(|e| IoError::os(path, "read", e))?;
    for (x, c) in out.iter_mut().zip(buf.chunks_exact(8)) {
        *x = f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
    }
    Ok(())
}

fn write_f64s_at(path: &Path, file: &File, offset: u64, buf: &mut Vec<u8>, values: &[f64]) -> Result<(), IoError> {
    buf.clear();
    for x in values {
        buf.extend_from_slice(&x.to_le_bytes());
    }
    file.write_all_at(buf, offset).map_err(|e| IoError::os(path, "write", e))
}

/// Reads the header from an open file and checks the file length.
fn header_from_file(path: &Path, file: &File) -> Result<NpyHeader, IoError> {
    let file_len = file.metadata().map_err(|e| IoError::os(path, "stat", e))?.len();
    let mut prefix = vec![0u8; file_len.min(12) as usize];
    file.read_exact_at(&mut prefix, 0).map_err(|e| IoError::os(path, "read", e))?;
    let magic_len = prefix.len().min(MAGIC.len());
    if prefix[..magic_len] != MAGIC[..magic_len] || file_len < MAGIC.len() as u64 {
        return Err(IoError::BadMagic { path: path.to_path_buf(), format: "NumPy .npy" });
    }
    let truncated = |expected: u64| IoError::Truncated { path: path.to_path_buf(), expected, actual: file_len };
    if prefix.len() < 8 {
        return Err(truncated(10));
    }
    let (major, minor) = (prefix[6], prefix[7]);
    let (len_bytes, prefix_len) = match major {
        1 => (2usize, 10u64),
        2 | 3 => (4usize, 12u64),
        _ => return Err(IoError::UnsupportedVersion { path: path.to_path_buf(), major, minor }),
    };
    if (prefix.len() as u64) < prefix_len {
        return Err(truncated(prefix_len));
    }
    let hlen = if len_bytes == 2 {
        u16::from_le_bytes([prefix[8], prefix[9]]) as u64
    } else {
        u32::from_le_bytes([prefix[8], prefix[9], prefix[10], prefix[11]]) as u64
    };
    let data_offset = prefix_len + hlen;
    if file_len < data_offset {
        return Err(truncated(data_offset));
    }
    let mut text = vec![0u8; hlen as usize];
    file.read_exact_at(&mut text, prefix_len).map_err(|e| IoError::os(path, "read", e))?;
    let header = parse_dict_bytes(path, &text, (major, minor), data_offset)?;
    let needed = data_offset + header.data_bytes();
    if file_len < needed {
        return Err(truncated(needed));
    }
    Ok(header)
}

/// Parses the header dict (the bytes between the length field and the data).
fn parse_dict_bytes(path: &Path, text: &[u8], version: (u8, u8), data_offset: u64) -> Result<NpyHeader, IoError> {
    let malformed = |reason: String| IoError::MalformedHeader { path: path.to_path_buf(), reason };
    let text = std::str::from_utf8(text).map_err(|_| malformed("header is not ASCII/UTF-8 text".into()))?;
    let entries = DictParser { s: text.as_bytes(), pos: 0 }.dict().map_err(malformed)?;
    let mut descr = None;
    let mut fortran = None;
    let mut shape = None;
    for (key, value) in entries {
        match (key.as_str(), value) {
            ("descr", PyValue::Str(s)) => descr = Some(s),
            ("descr", PyValue::Other(raw)) => {
                return Err(IoError::UnsupportedDtype {
                    path: path.to_path_buf(),
                    found: format!("{raw} (structured dtype)"),
                    expected: F64_EXPECTED,
                })
            }
            ("fortran_order", PyValue::Bool(b)) => fortran = Some(b),
            ("shape", PyValue::Tuple(t)) => shape = Some(t),
            ("descr" | "fortran_order" | "shape", v) => {
                return Err(malformed(format!("key '{key}' has an unexpected value {v:?}")))
            }
            (other, _) => return Err(malformed(format!("unexpected key '{other}'"))),
        }
    }
    let descr = descr.ok_or_else(|| malformed("missing key 'descr'".into()))?;
    let fortran_order = fortran.ok_or_else(|| malformed("missing key 'fortran_order'".into()))?;
    let shape = shape.ok_or_else(|| malformed("missing key 'shape'".into()))?;
    let dtype = match descr.as_str() {
        "<f8" => NpyDtype::F64,
        "<i8" => NpyDtype::I64,
        other => {
            return Err(IoError::UnsupportedDtype {
                path: path.to_path_buf(),
                found: describe_descr(other),
                expected: "'<f8' (little-endian float64) or '<i8' (little-endian int64)",
            })
        }
    };
    let (rows, cols) = match shape.as_slice() {
        [n] => (*n, 1),
        [r, c] => (*r, *c),
        dims => {
            return Err(IoError::Unsupported {
                path: path.to_path_buf(),
                what: format!("{}-dimensional array (only 1-D and 2-D arrays are read)", dims.len()),
            })
        }
    };
    if (rows as u64)
        .checked_mul(cols as u64)
        .and_then(|k| k.checked_mul(8))
        .and_then(|b| b.checked_add(data_offset))
        .is_none()
        || rows.checked_mul(cols).is_none()
    {
        return Err(malformed(format!("shape {shape:?} is too large")));
    }
    Ok(NpyHeader { version, dtype, fortran_order, shape, rows, cols, data_offset })
}

/// `'<f4' (little-endian float32)`-style description of a NumPy dtype string.
fn describe_descr(descr: &str) -> String {
    let mut chars = descr.chars();
    let order = match chars.next() {
        Some('<') => "little-endian ",
        Some('>') => "big-endian ",
        Some('|') | Some('=') => "",
        _ => return format!("'{descr}'"),
    };
    let kind = chars.next();
    let bits = chars.as_str().parse::<u32>().ok().and_then(|b| b.checked_mul(8));
    let name = match (kind, bits) {
        (Some('f'), Some(b)) => format!("float{b}"),
        (Some('i'), Some(b)) => format!("int{b}"),
        (Some('u'), Some(b)) => format!("uint{b}"),
        (Some('c'), Some(b)) => format!("complex{b}"),
        (Some('b'), _) => "bool".to_string(),
        (Some('U'), _) => "unicode string".to_string(),
        (Some('S'), _) => "byte string".to_string(),
        (Some('O'), _) => "Python object".to_string(),
        _ => return format!("'{descr}'"),
    };
    format!("'{descr}' ({order}{name})")
}

/// A Python literal in a `.npy` header dict.
#[derive(Debug, Clone, PartialEq)]
enum PyValue {
    Str(String),
    Bool(bool),
    Tuple(Vec<usize>),
    /// Anything else (a list, e.g. a structured dtype), as raw text.
    Other(String),
}

/// Recursive-descent parser for the restricted Python dict literal NumPy writes.
struct DictParser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl DictParser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at byte {} of the header, found {}", c as char, self.pos, self.found()))
        }
    }

    fn found(&self) -> String {
        match self.peek() {
            Some(c) => format!("'{}'", c as char),
            None => "the end of the header".to_string(),
        }
    }

    fn dict(mut self) -> Result<Vec<(String, PyValue)>, String> {
        self.expect(b'{')?;
        let mut entries = Vec::new();
        loop {
            self.skip_ws();
            if self.peek() == Some(b'}') {
                self.pos += 1;
                break;
            }
            let key = self.string()?;
            self.expect(b':')?;
            let value = self.value()?;
            entries.push((key, value));
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {}
                _ => return Err(format!("expected ',' or '}}' at byte {}, found {}", self.pos, self.found())),
            }
        }
        self.skip_ws();
        if self.pos != self.s.len() {
            return Err(format!("unexpected text after the dict at byte {}", self.pos));
        }
        Ok(entries)
    }

    fn string(&mut self) -> Result<String, String> {
        self.skip_ws();
        let quote = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return Err(format!("expected a quoted string at byte {}, found {}", self.pos, self.found())),
        };
        self.pos += 1;
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c == quote {
                let s = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
                self.pos += 1;
                return Ok(s);
            }
            self.pos += 1;
        }
        Err("unterminated string".to_string())
    }

    fn value(&mut self) -> Result<PyValue, String> {
        self.skip_ws();
        let rest = &self.s[self.pos..];
        if rest.starts_with(b"True") {
            self.pos += 4;
            return Ok(PyValue::Bool(true));
        }
        if rest.starts_with(b"False") {
            self.pos += 5;
            return Ok(PyValue::Bool(false));
        }
        match self.peek() {
            Some(b'\'' | b'"') => self.string().map(PyValue::Str),
            Some(b'(') => self.tuple(),
            Some(b'[') => self.bracketed(),
            _ => Err(format!("unexpected value at byte {}, found {}", self.pos, self.found())),
        }
    }

    fn tuple(&mut self) -> Result<PyValue, String> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                Some(b')') => {
                    self.pos += 1;
                    return Ok(PyValue::Tuple(dims));
                }
                Some(b'0'..=b'9') => {
                    let start = self.pos;
                    while matches!(self.peek(), Some(b'0'..=b'9')) {
                        self.pos += 1;
                    }
                    let digits = std::str::from_utf8(&self.s[start..self.pos]).unwrap_or("");
                    let d = digits.parse::<usize>().map_err(|_| format!("dimension {digits} is too large"))?;
                    dims.push(d);
                    if self.peek() == Some(b'L') {
                        self.pos += 1; // Python 2 long suffix
                    }
                    self.skip_ws();
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b')') => {}
                        _ => {
                            return Err(format!(
                                "expected ',' or ')' in shape at byte {}, found {}",
                                self.pos,
                                self.found()
                            ))
                        }
                    }
                }
                _ => {
                    return Err(format!(
                        "shape must be a tuple of non-negative integers, found {} at byte {}",
                        self.found(),
                        self.pos
                    ))
                }
            }
        }
    }

    fn bracketed(&mut self) -> Result<PyValue, String> {
        let start = self.pos;
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                b'[' | b'(' => depth += 1,
                b']' | b')' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Ok(PyValue::Other(String::from_utf8_lossy(&self.s[start..self.pos]).into_owned()));
                    }
                }
                _ => {}
            }
        }
        Err("unterminated list".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{matrix, TempPath};
    use super::*;

    fn write_raw(path: &Path, bytes: &[u8]) {
        std::fs::write(path, bytes).expect("write test file");
    }

    /// A file with an arbitrary header dict and `nbytes` of data (no alignment fuss).
    fn raw_npy(dict: &str, nbytes: usize) -> Vec<u8> {
        let mut v = MAGIC.to_vec();
        v.extend_from_slice(&[1, 0]);
        v.extend_from_slice(&((dict.len() + 1) as u16).to_le_bytes());
        v.extend_from_slice(dict.as_bytes());
        v.push(b'\n');
        v.resize(v.len() + nbytes, 0);
        v
    }

    #[test]
    fn a_column_written_in_pieces_is_a_numpy_vector() {
        let path = TempPath::new("npy");
        let v: Vec<f64> = (0..10).map(|i| i as f64 * 0.5).collect();
        let h = create_npy_vector(&path.0, v.len()).expect("create");
        assert_eq!((h.shape.as_slice(), h.rows, h.cols), (&[10][..], 10, 1));
        // Two process rows, blocks of 3: each writes its own rows.
        for myrow in 0..2 {
            let layout = Layout::new(10, 1, 3, 3, myrow, 0, 2, 1);
            let mine: Vec<f64> = (0..10).filter(|i| (i / 3) % 2 == myrow).map(|i| v[i]).collect();
            write_npy_local(&path.0, &layout, &mine, mine.len()).expect("write");
        }
        assert_eq!(read_npy_header(&path.0).expect("header").shape, [10]);
        assert_eq!(read_npy_vector_f64(&path.0).expect("read"), v);
    }

    #[test]
    fn header_is_numpy_compatible() {
        for (shape, fortran) in [(vec![3usize, 4], true), (vec![3, 4], false), (vec![7], false), (vec![0, 0], true)] {
            for dtype in [NpyDtype::F64, NpyDtype::I64] {
                let h = npy_header_bytes(dtype, &shape, fortran);
                assert_eq!(&h[..6], MAGIC);
                assert_eq!(h[6..8], [1, 0]);
                assert_eq!(h.len() % NPY_ALIGN, 0, "data must start at a multiple of 64");
                assert_eq!(u16::from_le_bytes([h[8], h[9]]) as usize, h.len() - 10);
                assert_eq!(*h.last().expect("nonempty"), b'\n');
                let text = std::str::from_utf8(&h[10..]).expect("ascii");
                let dict = text.trim_end();
                let shape_text =
                    if shape.len() == 1 { format!("({},)", shape[0]) } else { format!("({}, {})", shape[0], shape[1]) };
                let f = if fortran { "True" } else { "False" };
                assert_eq!(
                    dict,
                    format!("{{'descr': '{}', 'fortran_order': {f}, 'shape': {shape_text}, }}", dtype.descr())
                );
                assert!(text[dict.len()..text.len() - 1].bytes().all(|b| b == b' '));
            }
        }
        // Byte-exact against what numpy 1.x/2.x `np.save` writes for np.zeros((3, 4)) (minus numpy's growth-axis padding).
        let h = npy_header_bytes(NpyDtype::F64, &[3, 4], false);
        assert_eq!(h.len(), 128);
    }

    #[test]
    fn whole_round_trip_both_orders() {
        let (m, n) = (7, 5);
        let a = matrix(m, n);
        let p = TempPath::new("npy");
        write_npy(&p.0, m, n, &a).expect("write");
        let h = read_npy_header(&p.0).expect("header");
        assert_eq!((h.rows, h.cols, h.fortran_order, h.dtype, h.version), (m, n, true, NpyDtype::F64, (1, 0)));
        assert_eq!(h.data_offset % 64, 0);
        assert_eq!(std::fs::metadata(&p.0).expect("stat").len(), h.data_offset + (m * n * 8) as u64);
        assert_eq!(read_npy(&p.0).expect("read"), Dense { rows: m, cols: n, data: a.clone() });

        // A C-order file with the same matrix reads back identically.
        let mut bytes = npy_header_bytes(NpyDtype::F64, &[m, n], false);
        for i in 0..m {
            for j in 0..n {
                bytes.extend_from_slice(&a[i + j * m].to_le_bytes());
            }
        }
        let q = TempPath::new("npy");
        write_raw(&q.0, &bytes);
        assert_eq!(read_npy(&q.0).expect("read").data, a);
    }

    #[test]
    fn vectors_round_trip() {
        let p = TempPath::new("npy");
        let piv: Vec<i64> = vec![3, 1, -2, i64::MAX, 0];
        write_npy_vector_i64(&p.0, &piv).expect("write");
        let h = read_npy_header(&p.0).expect("header");
        assert_eq!((h.shape.clone(), h.dtype, h.rows, h.cols), (vec![5], NpyDtype::I64, 5, 1));
        assert_eq!(read_npy_vector_i64(&p.0).expect("read"), piv);
        assert!(matches!(read_npy_vector_f64(&p.0), Err(IoError::UnsupportedDtype { .. })));
        assert!(matches!(read_npy(&p.0), Err(IoError::UnsupportedDtype { .. })));

        let tau = vec![1.5, -0.25, f64::MIN_POSITIVE, 0.0];
        write_npy_vector_f64(&p.0, &tau).expect("write");
        assert_eq!(read_npy_vector_f64(&p.0).expect("read"), tau);
        assert_eq!(read_npy(&p.0).expect("read as matrix"), Dense { rows: 4, cols: 1, data: tau.clone() });
        assert!(matches!(read_npy_vector_i64(&p.0), Err(IoError::UnsupportedDtype { .. })));

        write_npy(&p.0, 1, 4, &tau).expect("write row");
        assert_eq!(read_npy_vector_f64(&p.0).expect("row vector"), tau);
        write_npy(&p.0, 2, 2, &tau).expect("write 2x2");
        assert!(matches!(read_npy_vector_f64(&p.0), Err(IoError::ShapeMismatch { .. })));

        write_npy_vector_i64(&p.0, &[]).expect("empty");
        assert_eq!(read_npy_vector_i64(&p.0).expect("empty"), Vec::<i64>::new());
    }

    #[test]
    fn version_2_header_is_read() {
        let dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }";
        let mut v = MAGIC.to_vec();
        v.extend_from_slice(&[2, 0]);
        let hlen = 128 - 12; // pad so data starts at 128
        v.extend_from_slice(&(hlen as u32).to_le_bytes());
        v.extend_from_slice(dict.as_bytes());
        v.resize(127, b' ');
        v.push(b'\n');
        for x in [1.0f64, 2.0, 3.0, 4.0] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        let p = TempPath::new("npy");
        write_raw(&p.0, &v);
        let h = read_npy_header(&p.0).expect("v2");
        assert_eq!((h.version, h.data_offset, h.fortran_order), ((2, 0), 128, false));
        assert_eq!(read_npy(&p.0).expect("read").data, vec![1.0, 3.0, 2.0, 4.0]);
    }

    #[test]
    fn header_variants_numpy_may_write() {
        // Double quotes, extra spaces, no trailing comma, keys in another order, py2 long suffix.
        let p = TempPath::new("npy");
        for dict in [
            "{\"shape\": (2,3), \"fortran_order\": True, \"descr\": \"<f8\"}",
            "{'descr': '<f8', 'fortran_order': True, 'shape': (2L, 3L), }      ",
            "{'descr':'<f8','fortran_order':True,'shape':(2,3)}",
        ] {
            write_raw(&p.0, &raw_npy(dict, 48));
            let h = read_npy_header(&p.0).unwrap_or_else(|e| panic!("{dict}: {e}"));
            assert_eq!((h.rows, h.cols, h.fortran_order), (2, 3, true));
        }
    }

    #[test]
    fn error_cases() {
        let p = TempPath::new("npy");
        let missing = std::env::temp_dir().join("ftla-io-test-definitely-missing.npy");
        assert!(matches!(read_npy_header(&missing), Err(IoError::NotFound { .. })));
        assert!(matches!(read_npy(&missing), Err(IoError::NotFound { .. })));

        write_raw(&p.0, b"PK\x03\x04 this is a zip file");
        assert!(matches!(read_npy_header(&p.0), Err(IoError::BadMagic { .. })));
        write_raw(&p.0, b"");
        assert!(matches!(read_npy_header(&p.0), Err(IoError::BadMagic { .. })));
        write_raw(&p.0, b"\x93NUMPY\x01");
        assert!(matches!(read_npy_header(&p.0), Err(IoError::Truncated { expected: 10, actual: 7, .. })));

        let mut v = raw_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", 32);
        v[6] = 9;
        write_raw(&p.0, &v);
        assert!(matches!(read_npy_header(&p.0), Err(IoError::UnsupportedVersion { major: 9, .. })));

        write_raw(&p.0, &raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", 16));
        match read_npy_header(&p.0) {
            Err(e @ IoError::UnsupportedDtype { .. }) => {
                assert!(e.to_string().contains("'<f4' (little-endian float32)"), "{e}")
            }
            other => panic!("{other:?}"),
        }
        write_raw(&p.0, &raw_npy("{'descr': '>f8', 'fortran_order': False, 'shape': (2, 2), }", 32));
        let e = read_npy_header(&p.0).expect_err("big-endian");
        assert!(e.to_string().contains("big-endian float64"), "{e}");
        for odd in ["<\u{e9}8", "<f99999999999", "<f4294967295", "", "x", "|b1", "<U3"] {
            write_raw(&p.0, &raw_npy(&format!("{{'descr': '{odd}', 'fortran_order': False, 'shape': (2,), }}"), 16));
            assert!(matches!(read_npy_header(&p.0), Err(IoError::UnsupportedDtype { .. })), "{odd}");
        }
        write_raw(&p.0, &raw_npy("{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (2,), }", 16));
        assert!(matches!(read_npy_header(&p.0), Err(IoError::UnsupportedDtype { .. })));

        for dict in [
            "{'descr': '<f8', 'fortran_order': False}",
            "{'descr': '<f8', 'shape': (2, 2)}",
            "{'fortran_order': False, 'shape': (2, 2)}",
            "{'descr': '<f8', 'fortran_order': 0, 'shape': (2, 2)}",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (2, -2)}",
            "{'descr': '<f8', 'fortran_order': False, 'shape': [2, 2]}",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), 'extra': True}",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2)",
            "'descr': '<f8'",
            "{'descr: '<f8', 'fortran_order': False, 'shape': (2, 2)}",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999999, 2)}",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4)}",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2)} junk",
        ] {
            write_raw(&p.0, &raw_npy(dict, 32));
            match read_npy_header(&p.0) {
                Err(IoError::MalformedHeader { reason, .. }) => assert!(!reason.is_empty()),
                other => panic!("{dict}: {other:?}"),
            }
        }
        write_raw(&p.0, &raw_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2, 2), }", 64));
        assert!(matches!(read_npy_header(&p.0), Err(IoError::Unsupported { .. })));
        write_raw(&p.0, &raw_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 8));
        assert!(matches!(read_npy_header(&p.0), Err(IoError::Unsupported { .. })));

        // Truncated data: header says 3x4 (96 bytes), file has fewer.
        let mut bytes = npy_header_bytes(NpyDtype::F64, &[3, 4], true);
        bytes.resize(bytes.len() + 90, 0);
        write_raw(&p.0, &bytes);
        match read_npy(&p.0) {
            Err(e @ IoError::Truncated { expected: 224, actual: 218, .. }) => {
                assert!(e.to_string().contains("expected 224 bytes, file has 218"), "{e}")
            }
            other => panic!("{other:?}"),
        }
        // Truncated header.
        let full = npy_header_bytes(NpyDtype::F64, &[3, 4], true);
        write_raw(&p.0, &full[..40]);
        assert!(matches!(read_npy_header(&p.0), Err(IoError::Truncated { expected: 128, actual: 40, .. })));

        // Shape mismatch on a local read.
        write_npy(&p.0, 3, 4, &matrix(3, 4)).expect("write");
        match read_npy_local(&p.0, &Layout::new(4, 3, 2, 2, 0, 0, 1, 1)) {
            Err(e @ IoError::ShapeMismatch { file: (3, 4), expected: (4, 3), .. }) => {
                assert!(e.to_string().contains("file is 3x4, expected 4x3"))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(read_npy_local(&p.0, &Layout::new(3, 4, 0, 2, 0, 0, 1, 1)), Err(IoError::InvalidLayout(_))));
        assert!(matches!(
            write_npy_local(&p.0, &Layout::new(3, 4, 2, 2, 0, 0, 1, 1), &[0.0; 11], 3),
            Err(IoError::InvalidLayout(_))
        ));
        assert!(matches!(
            write_npy_local(&p.0, &Layout::new(3, 4, 2, 2, 0, 0, 1, 1), &[0.0; 12], 2),
            Err(IoError::InvalidLayout(_))
        ));
        assert!(matches!(
            write_npy_local(&missing, &Layout::new(3, 4, 2, 2, 0, 0, 1, 1), &[0.0; 12], 3),
            Err(IoError::NotFound { .. })
        ));
        assert!(matches!(write_npy(&p.0, 3, 4, &[0.0; 11]), Err(IoError::InvalidLayout(_))));
    }

    /// Every process of a grid reads its piece; together they are the matrix.
    fn check_local_reads(
        path: &Path,
        a: &[f64],
        m: usize,
        n: usize,
        mb: usize,
        nb: usize,
        nprow: usize,
        npcol: usize,
        src: (usize, usize),
    ) {
        let mut seen = vec![0u8; m * n];
        for myrow in 0..nprow {
            for mycol in 0..npcol {
                let l = Layout::new(m, n, mb, nb, myrow, mycol, nprow, npcol).with_source(src.0, src.1);
                let (local, lld) = read_npy_local(path, &l).expect("local read");
                assert_eq!(lld, l.local_rows().max(1));
                assert_eq!(local.len(), lld * l.local_cols());
                for lj in 0..l.local_cols() {
                    for li in 0..l.local_rows() {
                        let (i, j) = (l.global_row(li), l.global_col(lj));
                        assert_eq!(local[li + lj * lld], a[i + j * m], "({i},{j}) on ({myrow},{mycol})");
                        seen[i + j * m] += 1;
                    }
                }
            }
        }
        assert!(seen.iter().all(|&c| c == 1), "every element read exactly once");
    }

    #[test]
    fn local_reads_reassemble_matrix_on_2x3_grid() {
        let (m, n) = (13, 11);
        let a = matrix(m, n);
        for fortran in [true, false] {
            let p = TempPath::new("npy");
            let mut bytes = npy_header_bytes(NpyDtype::F64, &[m, n], fortran);
            for k in 0..m * n {
                let (i, j) = if fortran { (k % m, k / m) } else { (k / n, k % n) };
                bytes.extend_from_slice(&a[i + j * m].to_le_bytes());
            }
            write_raw(&p.0, &bytes);
            for (mb, nb) in [(2, 3), (4, 2), (1, 1), (13, 11), (64, 64)] {
                for src in [(0, 0), (1, 2)] {
                    check_local_reads(&p.0, &a, m, n, mb, nb, 2, 3, src);
                }
            }
            // One process row: whole-column fast path; one process: everything.
            check_local_reads(&p.0, &a, m, n, 4, 3, 1, 3, (0, 0));
            check_local_reads(&p.0, &a, m, n, 4, 3, 1, 1, (0, 0));
        }
    }

    #[test]
    fn local_writes_by_every_process_build_the_file() {
        let (m, n) = (10, 9);
        let a = matrix(m, n);
        for fortran in [true, false] {
            let p = TempPath::new("npy");
            let h = create_npy(&p.0, m, n, fortran).expect("create");
            assert_eq!(h.data_offset % 64, 0);
            assert_eq!(read_npy_header(&p.0).expect("header"), h);
            let (nprow, npcol) = (2, 3);
            for myrow in 0..nprow {
                for mycol in 0..npcol {
                    let l = Layout::new(m, n, 3, 2, myrow, mycol, nprow, npcol).with_source(1, 0);
                    let lld = l.local_rows() + 3; // padded leading dimension
                    let mut local = vec![f64::NAN; lld * l.local_cols()];
                    for lj in 0..l.local_cols() {
                        for li in 0..l.local_rows() {
                            local[li + lj * lld] = a[l.global_row(li) + l.global_col(lj) * m];
                        }
                    }
                    write_npy_local(&p.0, &l, &local, lld).expect("local write");
                }
            }
            assert_eq!(read_npy(&p.0).expect("read").data, a, "fortran={fortran}");
        }
    }
}
