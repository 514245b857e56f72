//! MatrixMarket *array* files (dense), real values.
//!
//! ```text
//! %%MatrixMarket matrix array real general
//! % any number of comment lines
//! 3 2
//! 1.0
//! 2.0
//! ...            (rows*cols values, column by column)
//! ```
//!
//! The banner is matched case-insensitively; the field may be `real`,
//! `double` or `integer` (values are read as `f64`); only `general` symmetry
//! and the `array` format are supported (`coordinate` is reported as
//! unsupported, not misread). Values may be spread over lines in any way, may
//! use a Fortran `D` exponent (`1.5D+00`), and comment (`%`) or blank lines
//! may appear anywhere after the banner.
//!
//! Text has no fixed record size, so a distributed reader parses the whole
//! file and keeps only its own entries ([`read_mtx_local`]); the writer
//! ([`write_mtx`]) writes a whole, gathered matrix.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use blacs_ft::index::{indxg2l, indxg2p};

use super::{Dense, IoError, Layout};

const BANNER: &str = "%%MatrixMarket";

/// Reads a whole MatrixMarket array file, returned column-major.
pub fn read_mtx(path: impl AsRef<Path>) -> Result<Dense, IoError> {
    let path = path.as_ref();
    let mut data = Vec::new();
    let (rows, cols) = parse(path, |_, _| Ok(()), |_, v| data.push(v))?;
    Ok(Dense { rows, cols, data })
}

/// Reads process `layout.(myrow, mycol)`'s block-cyclic piece of the
/// MatrixMarket array matrix in `path`: the whole file is parsed (and
/// checked), only the local entries are kept.
///
/// * `layout` *(global shape and distribution, local coordinates)*: the file
///   must hold an `m`×`n` matrix.
///
/// Returns the column-major local array and its leading dimension
/// `lld = max(1, local rows)`.
pub fn read_mtx_local(path: impl AsRef<Path>, layout: &Layout) -> Result<(Vec<f64>, usize), IoError> {
    let path = path.as_ref();
    layout.validate()?;
    let lld = layout.lld();
    let mut local = vec![0.0; lld * layout.local_cols()];
    let m = layout.m.max(1);
    parse(
        path,
        |rows, cols| {
            if (rows, cols) != (layout.m, layout.n) {
                return Err(IoError::ShapeMismatch {
                    path: path.to_path_buf(),
                    file: (rows, cols),
                    expected: (layout.m, layout.n),
                });
            }
            Ok(())
        },
        |k, v| {
            let (i, j) = (k % m, k / m);
            if indxg2p(i, layout.mb, layout.rsrc, layout.nprow) == layout.myrow
                && indxg2p(j, layout.nb, layout.csrc, layout.npcol) == layout.mycol
            {
                local[indxg2l(i, layout.mb, layout.nprow) + indxg2l(j, layout.nb, layout.npcol) * lld] = v;
            }
        },
    )?;
    Ok((local, lld))
}

/// Writes a whole `rows`×`cols` matrix given column-major (leading dimension
/// `rows`) as `%%MatrixMarket matrix array real general`, one value per
/// line in the shortest form that reads back to the same `f64`.
pub fn write_mtx(path: impl AsRef<Path>, rows: usize, cols: usize, data: &[f64]) -> Result<(), IoError> {
    let path = path.as_ref();
    let expected = rows.checked_mul(cols);
    if expected != Some(data.len()) {
        return Err(IoError::InvalidLayout(format!(
            "a {rows}x{cols} matrix needs {} values, got {}",
            expected.map_or("too many".to_string(), |e| e.to_string()),
            data.len()
        )));
    }
    let file = File::create(path).map_err(|e| IoError::os(path, "create", e))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let werr = |e| IoError::os(path, "write", e);
    writeln!(w, "{BANNER} matrix array real general").map_err(werr)?;
    writeln!(w, "% written by ftla (scalapack-ft)").map_err(werr)?;
    writeln!(w, "{rows} {cols}").map_err(werr)?;
    for &x in data {
        write_value(&mut w, x).map_err(werr)?;
    }
    w.flush().map_err(werr)?;
    Ok(())
}

/// Shortest round-trip text: plain decimal for moderate magnitudes, exponent form otherwise.
fn write_value(w: &mut impl Write, x: f64) -> std::io::Result<()> {
    let a = x.abs();
    if x == 0.0 || !x.is_finite() || (1e-5..1e16).contains(&a) {
        writeln!(w, "{x}")
    } else {
        writeln!(w, "{x:e}")
    }
}

/// Streams the file: checks the banner, reads the size line and hands it to
/// `on_size`, then hands every value with its column-major index to
/// `on_value`. Returns the size.
fn parse(
    path: &Path,
    mut on_size: impl FnMut(usize, usize) -> Result<(), IoError>,
    mut on_value: impl FnMut(usize, f64),
) -> Result<(usize, usize), IoError> {
    let file = File::open(path).map_err(|e| IoError::os(path, "open", e))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let malformed = |reason: String| IoError::MalformedHeader { path: path.to_path_buf(), reason };
    let mut raw = Vec::new();
    let mut lineno = 0usize;
    // Next line as text (lossy for non-UTF-8 bytes, which then fail to parse as numbers); None at EOF.
    let mut next_line = |raw: &mut Vec<u8>, lineno: &mut usize| -> Result<Option<String>, IoError> {
        raw.clear();
        let n = reader.read_until(b'\n', raw).map_err(|e| IoError::os(path, "read", e))?;
        if n == 0 {
            return Ok(None);
        }
        *lineno += 1;
        Ok(Some(String::from_utf8_lossy(raw).into_owned()))
    };

    let banner = next_line(&mut raw, &mut lineno)?.unwrap_or_default();
    let banner = banner.trim();
    let head = banner.get(..BANNER.len()).unwrap_or("");
    if !head.eq_ignore_ascii_case(BANNER) {
        return Err(IoError::BadMagic { path: path.to_path_buf(), format: "MatrixMarket" });
    }
    let words: Vec<String> = banner[BANNER.len()..].split_whitespace().map(|w| w.to_ascii_lowercase()).collect();
    let [object, format, field, symmetry] = words.as_slice() else {
        return Err(malformed(format!("banner must read '{BANNER} matrix array real general', found '{banner}'")));
    };
    if object != "matrix" {
        return Err(IoError::Unsupported { path: path.to_path_buf(), what: format!("MatrixMarket object '{object}'") });
    }
    if format != "array" {
        return Err(IoError::Unsupported {
            path: path.to_path_buf(),
            what: format!("MatrixMarket format '{format}' (only dense 'array' is read)"),
        });
    }
    if !matches!(field.as_str(), "real" | "double" | "integer") {
        return Err(IoError::UnsupportedDtype {
            path: path.to_path_buf(),
            found: format!("'{field}'"),
            expected: "'real' (or 'double', 'integer')",
        });
    }
    if symmetry != "general" {
        return Err(IoError::Unsupported {
            path: path.to_path_buf(),
            what: format!("MatrixMarket symmetry '{symmetry}' (only 'general' is read)"),
        });
    }

    // Size line: first line that is neither blank nor a comment.
    let (rows, cols) = loop {
        let Some(line) = next_line(&mut raw, &mut lineno)? else {
            return Err(malformed("missing size line 'rows cols'".to_string()));
        };
        let t = line.trim();
        if t.is_empty() || t.starts_with('%') {
            continue;
        }
        let dims: Vec<Option<usize>> = t.split_whitespace().map(|w| w.parse::<usize>().ok()).collect();
        match dims.as_slice() {
            [Some(r), Some(c)] => break (*r, *c),
            _ => {
                return Err(malformed(format!(
                    "size line {lineno} must be two non-negative integers 'rows cols', found '{t}'"
                )))
            }
        }
    };
    let total = rows.checked_mul(cols).ok_or_else(|| malformed(format!("size {rows}x{cols} is too large")))?;
    on_size(rows, cols)?;

    let mut count = 0usize;
    while let Some(line) = next_line(&mut raw, &mut lineno)? {
        let t = line.trim();
        if t.starts_with('%') {
            continue;
        }
        for token in t.split_whitespace() {
            let v = parse_number(token).ok_or_else(|| IoError::NonNumeric {
                path: path.to_path_buf(),
                line: lineno,
                token: token.to_string(),
            })?;
            if count < total {
                on_value(count, v);
            }
            count += 1;
        }
    }
    if count != total {
        return Err(IoError::WrongCount { path: path.to_path_buf(), expected: total, found: count });
    }
    Ok((rows, cols))
}

/// A decimal number, also with a Fortran `D`/`d` exponent.
fn parse_number(token: &str) -> Option<f64> {
    token.parse::<f64>().ok().or_else(|| {
        if token.contains(['d', 'D']) {
            token.replace(['d', 'D'], "e").parse::<f64>().ok()
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{matrix, TempPath};
    use super::*;

    fn write_text(path: &Path, text: &str) {
        std::fs::write(path, text).expect("write test file");
    }

    #[test]
    fn round_trip_preserves_every_bit() {
        let (m, n) = (6, 4);
        let mut a = matrix(m, n);
        a[0] = -0.0;
        a[1] = 1e-300;
        a[2] = -1.2345678901234567e250;
        a[3] = f64::MIN_POSITIVE / 3.0; // subnormal
        a[4] = 0.1;
        a[5] = f64::INFINITY;
        a[6] = f64::NAN;
        a[7] = 123456789012345680.0;
        let p = TempPath::new("mtx");
        write_mtx(&p.0, m, n, &a).expect("write");
        let text = std::fs::read_to_string(&p.0).expect("read text");
        assert!(text.starts_with("%%MatrixMarket matrix array real general\n"));
        assert_eq!(text.lines().count(), 3 + m * n);
        let d = read_mtx(&p.0).expect("read");
        assert_eq!((d.rows, d.cols), (m, n));
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&d.data), bits(&a));
        // Empty matrix.
        write_mtx(&p.0, 0, 3, &[]).expect("write empty");
        assert_eq!(read_mtx(&p.0).expect("read empty"), Dense { rows: 0, cols: 3, data: vec![] });
    }

    #[test]
    fn lenient_syntax() {
        let p = TempPath::new("mtx");
        write_text(
            &p.0,
            "%%matrixmarket MATRIX Array REAL General\r\n% comment\n%another\n\n  2   3  \n1.0 2D0\n% mid comment\n\n\
             -3.5e+00\t4\n5.0d-1\n+6\n",
        );
        let d = read_mtx(&p.0).expect("read");
        assert_eq!(d, Dense { rows: 2, cols: 3, data: vec![1.0, 2.0, -3.5, 4.0, 0.5, 6.0] });
        write_text(&p.0, "%%MatrixMarket matrix array integer general\n1 2\n7\n-8");
        assert_eq!(read_mtx(&p.0).expect("integer field").data, vec![7.0, -8.0]);
    }

    #[test]
    fn error_cases() {
        let p = TempPath::new("mtx");
        let missing = std::env::temp_dir().join("ftla-io-test-definitely-missing.mtx");
        assert!(matches!(read_mtx(&missing), Err(IoError::NotFound { .. })));

        type Check = fn(&IoError) -> bool;
        let cases: Vec<(&str, Check)> = vec![
            ("", |e| matches!(e, IoError::BadMagic { .. })),
            ("1 2\n3 4\n", |e| matches!(e, IoError::BadMagic { .. })),
            ("%MatrixMarket matrix array real general\n1 1\n1\n", |e| matches!(e, IoError::BadMagic { .. })),
            ("%%MatrixMarket matrix array real\n1 1\n1\n", |e| matches!(e, IoError::MalformedHeader { .. })),
            ("%%MatrixMarket vector array real general\n1 1\n1\n", |e| matches!(e, IoError::Unsupported { .. })),
            (
                "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 5\n",
                |e| matches!(e, IoError::Unsupported { what, .. } if what.contains("coordinate")),
            ),
            (
                "%%MatrixMarket matrix array complex general\n1 1\n1 0\n",
                |e| matches!(e, IoError::UnsupportedDtype { found, .. } if found == "'complex'"),
            ),
            ("%%MatrixMarket matrix array real symmetric\n1 1\n1\n", |e| matches!(e, IoError::Unsupported { .. })),
            ("%%MatrixMarket matrix array real general\n% only comments\n", |e| {
                matches!(e, IoError::MalformedHeader { .. })
            }),
            ("%%MatrixMarket matrix array real general\n2\n1\n2\n", |e| matches!(e, IoError::MalformedHeader { .. })),
            ("%%MatrixMarket matrix array real general\n2 -1\n", |e| matches!(e, IoError::MalformedHeader { .. })),
            ("%%MatrixMarket matrix array real general\n2 x\n", |e| matches!(e, IoError::MalformedHeader { .. })),
            ("%%MatrixMarket matrix array real general\n9999999999999 9999999999999\n", |e| {
                matches!(e, IoError::MalformedHeader { .. })
            }),
            (
                "%%MatrixMarket matrix array real general\n2 2\n1\n2\nthree\n4\n",
                |e| matches!(e, IoError::NonNumeric { line: 5, token, .. } if token == "three"),
            ),
            (
                "%%MatrixMarket matrix array real general\n% c\n2 2\n1\n2\n3 1.0.0\n",
                |e| matches!(e, IoError::NonNumeric { line: 6, token, .. } if token == "1.0.0"),
            ),
            ("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n", |e| {
                matches!(e, IoError::WrongCount { expected: 4, found: 3, .. })
            }),
            ("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n5\n6\n", |e| {
                matches!(e, IoError::WrongCount { expected: 4, found: 6, .. })
            }),
        ];
        for (text, is_expected) in cases {
            write_text(&p.0, text);
            match read_mtx(&p.0) {
                Err(e) => {
                    assert!(is_expected(&e), "{text:?}: got {e:?}");
                    assert!(e.to_string().contains(&*p.0.to_string_lossy()), "{e}");
                }
                Ok(d) => panic!("{text:?}: accepted as {d:?}"),
            }
        }
        let e = {
            write_text(&p.0, "%%MatrixMarket matrix array real general\n2 2\n1\n2\nthree\n4\n");
            read_mtx(&p.0).expect_err("non-numeric")
        };
        assert!(e.to_string().ends_with("non-numeric token 'three' at line 5"), "{e}");

        write_mtx(&p.0, 3, 2, &matrix(3, 2)).expect("write");
        assert!(matches!(
            read_mtx_local(&p.0, &Layout::new(2, 3, 1, 1, 0, 0, 1, 1)),
            Err(IoError::ShapeMismatch { file: (3, 2), expected: (2, 3), .. })
        ));
        assert!(matches!(read_mtx_local(&p.0, &Layout::new(3, 2, 1, 1, 1, 0, 1, 1)), Err(IoError::InvalidLayout(_))));
        assert!(matches!(write_mtx(&p.0, 3, 2, &[1.0; 5]), Err(IoError::InvalidLayout(_))));
        let dir = std::env::temp_dir();
        assert!(matches!(write_mtx(&dir, 1, 1, &[1.0]), Err(IoError::Os { action: "create", .. })));
    }

    #[test]
    fn local_reads_reassemble_matrix_on_2x3_grid() {
        let (m, n) = (11, 8);
        let a = matrix(m, n);
        let p = TempPath::new("mtx");
        write_mtx(&p.0, m, n, &a).expect("write");
        for (mb, nb, src) in [(2, 3, (0, 0)), (3, 1, (1, 2)), (16, 16, (0, 1))] {
            let mut seen = vec![0u8; m * n];
            for myrow in 0..2 {
                for mycol in 0..3 {
                    let l = Layout::new(m, n, mb, nb, myrow, mycol, 2, 3).with_source(src.0, src.1);
                    let (local, lld) = read_mtx_local(&p.0, &l).expect("local");
                    assert_eq!((lld, local.len()), (l.lld(), l.lld() * l.local_cols()));
                    for lj in 0..l.local_cols() {
                        for li in 0..l.local_rows() {
                            let (i, j) = (l.global_row(li), l.global_col(lj));
                            assert_eq!(local[li + lj * lld], a[i + j * m]);
                            seen[i + j * m] += 1;
                        }
                    }
                }
            }
            assert!(seen.iter().all(|&c| c == 1));
        }
    }
}
