//! ScaLAPACK array descriptors for dense 2D block-cyclic matrices.
//!
//! A ScaLAPACK descriptor is 9 integers (1-based entry numbers as ScaLAPACK
//! documents them):
//!
//! | entry | name  | meaning                                                    |
//! |-------|-------|------------------------------------------------------------|
//! | 1     | DTYPE | descriptor type, 1 for dense block-cyclic                  |
//! | 2     | CTXT  | BLACS context the matrix is distributed over               |
//! | 3     | M     | number of global rows                                      |
//! | 4     | N     | number of global columns                                   |
//! | 5     | MB    | row block size                                             |
//! | 6     | NB    | column block size                                          |
//! | 7     | RSRC  | process row owning the first row block                     |
//! | 8     | CSRC  | process column owning the first column block               |
//! | 9     | LLD   | leading dimension of the column-major local array          |
//!
//! Global block `(I, J)` lives on process `((I + RSRC) mod NPROW, (J + CSRC) mod NPCOL)`.
//! Inside Rust the typed [`Descriptor`] holds the same values with 0-based
//! `RSRC`/`CSRC` process coordinates (as in ScaLAPACK, which numbers process
//! coordinates from 0) and all row/column indices passed to its helpers are
//! 0-based. [`Descriptor::to_array`] / [`Descriptor::from_array`] convert to and
//! from the raw `[i32; 9]` the C ABI uses.
//!
//! Validation follows ScaLAPACK's `DESCINIT`/`CHK1MAT`: a rejected value is
//! reported as a [`DescError`] naming the descriptor entry, and
//! [`DescError::info_code`] turns it into ScaLAPACK's `INFO = -(i*100 + j)`.

use std::fmt;

use blacs_ft::index::{indxg2l, indxg2p, indxl2g, numroc};

/// `DTYPE` of a dense 2D block-cyclic matrix descriptor.
pub const DTYPE_BLOCK_CYCLIC: i32 = 1;
/// Number of integers in a dense-matrix descriptor.
pub const DLEN: usize = 9;

/// 1-based descriptor entry numbers, as ScaLAPACK's `DTYPE_`, `CTXT_`, ... constants.
pub use crate::args::entry;

/// A descriptor entry that failed validation.
///
/// `Display` reads like
/// `argument NB (descriptor entry 6) must be positive, got 0`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescError {
    /// ScaLAPACK name of the entry (`"DTYPE"`, `"CTXT"`, `"M"`, `"N"`, `"MB"`, `"NB"`, `"RSRC"`, `"CSRC"`, `"LLD"`).
    pub arg: &'static str,
    /// 1-based descriptor entry number (see [`entry`]).
    pub index: u32,
    /// What is wrong, phrased to follow the argument name ("must be positive, got 0").
    pub reason: String,
}

impl DescError {
    fn new(arg: &'static str, index: u32, reason: impl Into<String>) -> Self {
        DescError { arg, index, reason: reason.into() }
    }

    /// ScaLAPACK `INFO` code for this error when the descriptor is argument
    /// number `argpos` (1-based, counted in the routine's Fortran argument
    /// list, e.g. 6 for `DESCA` in `PDGEQRF(M, N, A, IA, JA, DESCA, ...)`):
    /// `-(argpos*100 + entry)`. Saturates at `i32::MIN` for absurd positions.
    ///
    /// ```
    /// use scalapack_ft::descriptor::Descriptor;
    /// let err = Descriptor::new(4, 4, 2, 0, 0, 0, 2, 0, 1, 1, 0).unwrap_err();
    /// assert_eq!(err.info_code(6), -606);
    /// ```
    pub fn info_code(&self, argpos: usize) -> i32 {
        let pos = i64::try_from(argpos).unwrap_or(i64::MAX);
        let code = pos.saturating_mul(100).saturating_add(i64::from(self.index));
        i32::try_from(-code).unwrap_or(i32::MIN)
    }
}

impl fmt::Display for DescError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "argument {} (descriptor entry {}) {}", self.arg, self.index, self.reason)
    }
}

impl std::error::Error for DescError {}

/// A validated dense 2D block-cyclic matrix descriptor (ScaLAPACK `DTYPE = 1`).
///
/// Fields are private so that a `Descriptor` always satisfies its invariants
/// (`MB, NB ≥ 1`, `LLD ≥ 1`, ...); read them through the accessors. The
/// grid shape is not part of a ScaLAPACK descriptor (it belongs to the
/// context), so helpers that need it take `nprow`/`npcol` as arguments; they
/// must be the grid the descriptor was validated against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Descriptor {
    ctxt: i32,
    m: usize,
    n: usize,
    mb: usize,
    nb: usize,
    rsrc: usize,
    csrc: usize,
    lld: usize,
}

impl Descriptor {
    /// Builds and validates a descriptor, like ScaLAPACK's `DESCINIT`.
    ///
    /// * `m`, `n` *(global)*: global rows and columns, ≥ 0;
    /// * `mb`, `nb` *(global)*: row and column block sizes, ≥ 1;
    /// * `rsrc` *(global)*: process row of the first row block, `< nprow`;
    /// * `csrc` *(global)*: process column of the first column block, `< npcol`;
    /// * `lld` *(local)*: leading dimension of the local array,
    ///   `≥ max(1, numroc(m, mb, myrow, rsrc, nprow))`;
    /// * `ctxt` *(global)*: BLACS context handle, stored as is;
    /// * `nprow`, `npcol` *(global)*: grid shape, ≥ 1;
    /// * `myrow` *(local)*: calling process's row, `< nprow`.
    ///
    /// An invalid grid (`nprow`/`npcol` zero, `myrow ≥ nprow`) is reported
    /// against `CTXT`, as ScaLAPACK reports an invalid context.
    ///
    /// ```
    /// use scalapack_ft::descriptor::Descriptor;
    /// // 10×7 matrix, 3×2 blocks, on a 2×2 grid, seen from process row 1 (4 local rows).
    /// let d = Descriptor::new(10, 7, 3, 2, 0, 0, 4, 0, 2, 2, 1)?;
    /// assert_eq!(d.local_rows(1, 2), 4);
    /// assert_eq!(d.to_array(), [1, 0, 10, 7, 3, 2, 0, 0, 4]);
    /// # Ok::<(), scalapack_ft::descriptor::DescError>(())
    /// ```
    pub fn new(
        m: usize,
        n: usize,
        mb: usize,
        nb: usize,
        rsrc: usize,
        csrc: usize,
        lld: usize,
        ctxt: i32,
        nprow: usize,
        npcol: usize,
        myrow: usize,
    ) -> Result<Descriptor, DescError> {
        check_grid(nprow, npcol, myrow)?;
        let too_big = |arg: &'static str, index: u32, v: usize| -> Result<(), DescError> {
            if v > i32::MAX as usize {
                Err(DescError::new(arg, index, format!("must fit in a 32-bit descriptor entry, got {v}")))
            } else {
                Ok(())
            }
        };
        too_big("M", entry::M, m)?;
        too_big("N", entry::N, n)?;
        if mb == 0 {
            return Err(DescError::new("MB", entry::MB, "must be positive, got 0"));
        }
        too_big("MB", entry::MB, mb)?;
        if nb == 0 {
            return Err(DescError::new("NB", entry::NB, "must be positive, got 0"));
        }
        too_big("NB", entry::NB, nb)?;
        if rsrc >= nprow {
            return Err(DescError::new("RSRC", entry::RSRC, format!("must be in 0..{nprow} (NPROW), got {rsrc}")));
        }
        if csrc >= npcol {
            return Err(DescError::new("CSRC", entry::CSRC, format!("must be in 0..{npcol} (NPCOL), got {csrc}")));
        }
        let min_lld = numroc(m, mb, myrow, rsrc, nprow).max(1);
        if lld < min_lld {
            return Err(DescError::new(
                "LLD",
                entry::LLD,
                format!("must be at least max(1, local rows) = {min_lld} on process row {myrow}, got {lld}"),
            ));
        }
        too_big("LLD", entry::LLD, lld)?;
        Ok(Descriptor { ctxt, m, n, mb, nb, rsrc, csrc, lld })
    }

    /// Like [`Descriptor::new`] with the smallest valid leading dimension,
    /// `LLD = max(1, local rows of myrow)`.
    ///
    /// * `m`, `n`, `mb`, `nb`, `rsrc`, `csrc`, `ctxt`, `nprow`, `npcol` *(global)*, `myrow` *(local)*: as in [`Descriptor::new`].
    pub fn with_min_lld(
        m: usize,
        n: usize,
        mb: usize,
        nb: usize,
        rsrc: usize,
        csrc: usize,
        ctxt: i32,
        nprow: usize,
        npcol: usize,
        myrow: usize,
    ) -> Result<Descriptor, DescError> {
        // Validate the grid and block sizes before calling numroc (which divides by them).
        check_grid(nprow, npcol, myrow)?;
        let lld = if mb == 0 { 1 } else { numroc(m, mb, myrow, rsrc % nprow, nprow).max(1) };
        Descriptor::new(m, n, mb, nb, rsrc, csrc, lld, ctxt, nprow, npcol, myrow)
    }

    /// This descriptor with the leading dimension ftla gives the local
    /// arrays it allocates: [`storage_lld`] of its LLD, which is the
    /// minimal one (as [`Descriptor::with_min_lld`] makes it).
    pub fn for_storage(self) -> Descriptor {
        Descriptor { lld: storage_lld(self.lld), ..self }
    }

    /// Reads and validates a raw ScaLAPACK descriptor (`DESCA(1..9)`), as a
    /// routine receiving it through the C ABI would (`CHK1MAT`).
    ///
    /// * `desc` *(local)*: the 9 integers, `DTYPE` first; `DTYPE` must be 1;
    ///   negative entries are rejected with the entry named;
    /// * `nprow`, `npcol` *(global)*: grid shape of the context, ≥ 1;
    /// * `myrow` *(local)*: calling process's row, `< nprow`.
    pub fn from_array(desc: [i32; DLEN], nprow: usize, npcol: usize, myrow: usize) -> Result<Descriptor, DescError> {
        if desc[0] != DTYPE_BLOCK_CYCLIC {
            return Err(DescError::new(
                "DTYPE",
                entry::DTYPE,
                format!("must be {DTYPE_BLOCK_CYCLIC} (dense block-cyclic), got {}", desc[0]),
            ));
        }
        let nonneg = |arg: &'static str, index: u32, what: &str| -> Result<usize, DescError> {
            let v = desc[index as usize - 1];
            usize::try_from(v).map_err(|_| DescError::new(arg, index, format!("must be {what}, got {v}")))
        };
        let ctxt = desc[entry::CTXT as usize - 1];
        let m = nonneg("M", entry::M, "non-negative")?;
        let n = nonneg("N", entry::N, "non-negative")?;
        let mb = nonneg("MB", entry::MB, "positive")?;
        let nb = nonneg("NB", entry::NB, "positive")?;
        let rsrc = nonneg("RSRC", entry::RSRC, &format!("in 0..{nprow} (NPROW)"))?;
        let csrc = nonneg("CSRC", entry::CSRC, &format!("in 0..{npcol} (NPCOL)"))?;
        let lld = nonneg("LLD", entry::LLD, "positive")?;
        Descriptor::new(m, n, mb, nb, rsrc, csrc, lld, ctxt, nprow, npcol, myrow)
    }

    /// The raw ScaLAPACK descriptor `[DTYPE, CTXT, M, N, MB, NB, RSRC, CSRC, LLD]`.
    /// Entries fit in `i32` by construction.
    pub fn to_array(&self) -> [i32; DLEN] {
        // Every entry was checked to be ≤ i32::MAX at construction.
        let c = |v: usize| v as i32;
        [
            DTYPE_BLOCK_CYCLIC,
            self.ctxt,
            c(self.m),
            c(self.n),
            c(self.mb),
            c(self.nb),
            c(self.rsrc),
            c(self.csrc),
            c(self.lld),
        ]
    }

    /// BLACS context (entry `CTXT`).
    pub fn ctxt(&self) -> i32 {
        self.ctxt
    }
    /// Global rows (entry `M`).
    pub fn m(&self) -> usize {
        self.m
    }
    /// Global columns (entry `N`).
    pub fn n(&self) -> usize {
        self.n
    }
    /// Row block size (entry `MB`), ≥ 1.
    pub fn mb(&self) -> usize {
        self.mb
    }
    /// Column block size (entry `NB`), ≥ 1.
    pub fn nb(&self) -> usize {
        self.nb
    }
    /// Process row of the first row block (entry `RSRC`), 0-based.
    pub fn rsrc(&self) -> usize {
        self.rsrc
    }
    /// Process column of the first column block (entry `CSRC`), 0-based.
    pub fn csrc(&self) -> usize {
        self.csrc
    }
    /// Leading dimension of the local array (entry `LLD`), ≥ 1.
    pub fn lld(&self) -> usize {
        self.lld
    }

    /// Number of global rows stored on process row `myrow` *(local)* of an
    /// `nprow` *(global)* row grid (`NUMROC(M, MB, MYROW, RSRC, NPROW)`).
    pub fn local_rows(&self, myrow: usize, nprow: usize) -> usize {
        numroc(self.m, self.mb, myrow, self.rsrc, nprow.max(1))
    }

    /// Number of global columns stored on process column `mycol` *(local)* of
    /// an `npcol` *(global)* column grid (`NUMROC(N, NB, MYCOL, CSRC, NPCOL)`).
    pub fn local_cols(&self, mycol: usize, npcol: usize) -> usize {
        numroc(self.n, self.nb, mycol, self.csrc, npcol.max(1))
    }

    /// Number of `f64` elements a process needs for its local array:
    /// `LLD * local columns` (0 when it owns no column).
    ///
    /// * `mycol` *(local)*, `npcol` *(global)*: process column and grid width.
    pub fn local_len(&self, mycol: usize, npcol: usize) -> usize {
        self.lld * self.local_cols(mycol, npcol)
    }

    /// Process `(prow, pcol)` owning global element `(i, j)` (0-based).
    ///
    /// * `i`, `j` *(global)*: 0-based global row and column;
    /// * `nprow`, `npcol` *(global)*: grid shape.
    pub fn owner_of(&self, i: usize, j: usize, nprow: usize, npcol: usize) -> (usize, usize) {
        (indxg2p(i, self.mb, self.rsrc, nprow.max(1)), indxg2p(j, self.nb, self.csrc, npcol.max(1)))
    }

    /// Local `(row, col)` of global element `(i, j)` in its owner's local array
    /// (meaningful on the process [`Descriptor::owner_of`] returns).
    ///
    /// * `i`, `j` *(global)*: 0-based global row and column;
    /// * `nprow`, `npcol` *(global)*: grid shape.
    pub fn global_to_local(&self, i: usize, j: usize, nprow: usize, npcol: usize) -> (usize, usize) {
        (indxg2l(i, self.mb, nprow.max(1)), indxg2l(j, self.nb, npcol.max(1)))
    }

    /// Global `(i, j)` of local element `(li, lj)` on process `(myrow, mycol)`.
    ///
    /// * `li`, `lj` *(local)*: 0-based local row and column;
    /// * `myrow`, `mycol` *(local)*: the process holding the element;
    /// * `nprow`, `npcol` *(global)*: grid shape.
    pub fn local_to_global(
        &self,
        li: usize,
        lj: usize,
        myrow: usize,
        mycol: usize,
        nprow: usize,
        npcol: usize,
    ) -> (usize, usize) {
        (indxl2g(li, self.mb, myrow, self.rsrc, nprow.max(1)), indxl2g(lj, self.nb, mycol, self.csrc, npcol.max(1)))
    }

    /// Offset of local element `(li, lj)` *(local)* in the column-major local
    /// array: `li + lj * LLD`.
    pub fn local_offset(&self, li: usize, lj: usize) -> usize {
        li + lj * self.lld
    }
}

/// Rejects an unusable grid as an invalid context (entry `CTXT`).
fn check_grid(nprow: usize, npcol: usize, myrow: usize) -> Result<(), DescError> {
    if nprow == 0 || npcol == 0 {
        return Err(DescError::new(
            "CTXT",
            entry::CTXT,
            format!("must name a valid process grid, got a {nprow}x{npcol} grid"),
        ));
    }
    if myrow >= nprow {
        return Err(DescError::new(
            "CTXT",
            entry::CTXT,
            format!("must name a grid containing the caller, but process row {myrow} is outside 0..{nprow}"),
        ));
    }
    Ok(())
}

/// The most [`storage_lld`] adds to the minimal leading dimension.
pub const STORAGE_LLD_PAD: usize = 8;

/// The leading dimension of a local array that ftla allocates for
/// `local_rows` rows (local): the minimal one, `max(1, local_rows)`, one
/// cache line ([`STORAGE_LLD_PAD`] doubles) more where that is a multiple
/// of 512 doubles (and the padded one fits a descriptor entry).
///
/// Why: columns a multiple of 4 KiB apart fall into the same cache sets,
/// and OpenBLAS's trailing updates (`C −= A·Bᵀ` into such columns) ran
/// 3–6 % slower there (AMD EPYC, Zen kernel, 2000–3000 rows, inner
/// dimension 192). Square matrices of 2^k rows, the common benchmark
/// sizes, have such local row counts on every grid with a power-of-two
/// number of process rows.
pub fn storage_lld(local_rows: usize) -> usize {
    let min = local_rows.max(1);
    if min.is_multiple_of(512) && min + STORAGE_LLD_PAD <= i32::MAX as usize {
        min + STORAGE_LLD_PAD
    } else {
        min
    }
}

/// The largest [`storage_lld`] over the process rows of an `m`-row
/// matrix in blocks of `mb` rows on `nprow` process rows (all global):
/// process row 0 holds the most rows, but the padding can give another
/// row the larger leading dimension.
pub fn largest_storage_lld(m: usize, mb: usize, nprow: usize) -> usize {
    (0..nprow).map(|r| storage_lld(numroc(m, mb, r, 0, nprow))).max().unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok() -> Descriptor {
        Descriptor::new(10, 7, 3, 2, 0, 1, 6, 5, 2, 3, 0).expect("valid")
    }

    #[test]
    fn valid_descriptor_and_accessors() {
        let d = ok();
        assert_eq!((d.m(), d.n(), d.mb(), d.nb(), d.rsrc(), d.csrc(), d.lld(), d.ctxt()), (10, 7, 3, 2, 0, 1, 6, 5));
        assert_eq!(d.local_rows(0, 2), 6);
        assert_eq!(d.local_rows(1, 2), 4);
        // 7 columns in blocks of 2 starting on column 1 of 3: blocks 0..4 → pcols 1,2,0,1.
        assert_eq!(d.local_cols(0, 3), 2);
        assert_eq!(d.local_cols(1, 3), 3);
        assert_eq!(d.local_cols(2, 3), 2);
        assert_eq!(d.local_len(1, 3), 18);
        assert_eq!(d.local_offset(2, 1), 8);
    }

    #[test]
    fn array_round_trip() {
        let d = ok();
        let a = d.to_array();
        assert_eq!(a, [1, 5, 10, 7, 3, 2, 0, 1, 6]);
        assert_eq!(Descriptor::from_array(a, 2, 3, 0), Ok(d));
        let e = Descriptor::new(0, 0, 1, 1, 0, 0, 1, -1, 1, 1, 0).expect("empty matrix is valid");
        assert_eq!(Descriptor::from_array(e.to_array(), 1, 1, 0), Ok(e));
    }

    #[test]
    fn min_lld() {
        let d = Descriptor::with_min_lld(10, 7, 3, 2, 1, 0, 0, 2, 3, 0).expect("valid");
        assert_eq!(d.lld(), 4); // rsrc=1: row 0 owns blocks 1 and 3 → 3 + 1 rows
        let d = Descriptor::with_min_lld(3, 7, 3, 2, 0, 0, 0, 2, 3, 1).expect("valid");
        assert_eq!(d.lld(), 1); // process row 1 owns nothing, LLD is still ≥ 1
        assert_eq!(Descriptor::with_min_lld(3, 7, 0, 2, 0, 0, 0, 2, 3, 1).unwrap_err().arg, "MB");
        assert_eq!(Descriptor::with_min_lld(3, 7, 3, 2, 0, 0, 0, 0, 3, 0).unwrap_err().arg, "CTXT");
    }

    #[test]
    fn every_validation_branch() {
        let cases: Vec<(Result<Descriptor, DescError>, &str, u32)> = vec![
            (Descriptor::new(4, 4, 2, 2, 0, 0, 2, 0, 0, 1, 0), "CTXT", 2),
            (Descriptor::new(4, 4, 2, 2, 0, 0, 2, 0, 1, 0, 0), "CTXT", 2),
            (Descriptor::new(4, 4, 2, 2, 0, 0, 2, 0, 2, 1, 2), "CTXT", 2),
            (Descriptor::new(1 << 31, 4, 2, 2, 0, 0, 1 << 31, 0, 1, 1, 0), "M", 3),
            (Descriptor::new(4, 1 << 31, 2, 2, 0, 0, 4, 0, 1, 1, 0), "N", 4),
            (Descriptor::new(4, 4, 0, 2, 0, 0, 4, 0, 1, 1, 0), "MB", 5),
            (Descriptor::new(4, 4, 2, 0, 0, 0, 4, 0, 1, 1, 0), "NB", 6),
            (Descriptor::new(4, 4, 2, 2, 2, 0, 4, 0, 2, 2, 0), "RSRC", 7),
            (Descriptor::new(4, 4, 2, 2, 0, 3, 4, 0, 2, 2, 0), "CSRC", 8),
            (Descriptor::new(4, 4, 2, 2, 0, 0, 1, 0, 2, 2, 0), "LLD", 9),
            (Descriptor::new(0, 4, 2, 2, 0, 0, 0, 0, 2, 2, 0), "LLD", 9),
            (Descriptor::new(4, 4, 2, 2, 0, 0, 1 << 31, 0, 2, 2, 0), "LLD", 9),
        ];
        for (res, arg, index) in cases {
            let err = res.expect_err(arg);
            assert_eq!((err.arg, err.index), (arg, index), "{err}");
        }
        // Boundary values that are accepted.
        assert!(Descriptor::new(4, 4, 2, 2, 1, 1, 2, 0, 2, 2, 1).is_ok());
        assert!(Descriptor::new(0, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0).is_ok());
        assert!(Descriptor::new(4, 4, 2, 2, 0, 0, 100, 0, 2, 2, 0).is_ok());
    }

    #[test]
    fn from_array_rejects_bad_entries() {
        let good = ok().to_array();
        let bad = |entry: u32, value: i32| {
            let mut a = good;
            a[entry as usize - 1] = value;
            Descriptor::from_array(a, 2, 3, 0).expect_err("must be rejected")
        };
        let cases = [
            (entry::DTYPE, 2, "DTYPE"),
            (entry::DTYPE, 0, "DTYPE"),
            (entry::M, -1, "M"),
            (entry::N, -3, "N"),
            (entry::MB, 0, "MB"),
            (entry::MB, -2, "MB"),
            (entry::NB, 0, "NB"),
            (entry::NB, -2, "NB"),
            (entry::RSRC, -1, "RSRC"),
            (entry::RSRC, 2, "RSRC"),
            (entry::CSRC, -1, "CSRC"),
            (entry::CSRC, 3, "CSRC"),
            (entry::LLD, 0, "LLD"),
            (entry::LLD, -6, "LLD"),
            (entry::LLD, 5, "LLD"),
        ];
        for (e, v, name) in cases {
            let err = bad(e, v);
            assert_eq!((err.arg, err.index), (name, e), "{err}");
        }
        // Any context value is kept as is; the grid is what is validated.
        assert!(Descriptor::from_array(good, 2, 3, 0).is_ok());
        assert_eq!(Descriptor::from_array(good, 2, 3, 2).expect_err("myrow").arg, "CTXT");
        assert_eq!(Descriptor::from_array(good, 2, 0, 0).expect_err("npcol").arg, "CTXT");
    }

    #[test]
    fn messages_and_info_codes() {
        let err = Descriptor::new(4, 4, 2, 0, 0, 0, 2, 0, 1, 1, 0).unwrap_err();
        assert_eq!(err.to_string(), "argument NB (descriptor entry 6) must be positive, got 0");
        assert_eq!(err.info_code(6), -606);
        assert_eq!(err.info_code(1), -106);
        assert_eq!(err.info_code(usize::MAX), i32::MIN);
        let mut a = ok().to_array();
        a[0] = 7;
        let err = Descriptor::from_array(a, 2, 3, 0).unwrap_err();
        assert_eq!(err.to_string(), "argument DTYPE (descriptor entry 1) must be 1 (dense block-cyclic), got 7");
        assert_eq!(err.info_code(9), -901);
        let err = Descriptor::new(4, 4, 2, 2, 0, 0, 1, 0, 2, 2, 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "argument LLD (descriptor entry 9) must be at least max(1, local rows) = 2 on process row 0, got 1"
        );
        let err = Descriptor::new(4, 4, 2, 2, 0, 5, 4, 0, 2, 2, 0).unwrap_err();
        assert_eq!(err.to_string(), "argument CSRC (descriptor entry 8) must be in 0..2 (NPCOL), got 5");
    }

    #[test]
    fn owner_and_local_indices_cover_matrix() {
        let (nprow, npcol) = (2, 3);
        for (rsrc, csrc) in [(0, 0), (1, 2), (1, 0)] {
            let descs: Vec<Descriptor> = (0..nprow)
                .map(|r| Descriptor::with_min_lld(11, 9, 3, 2, rsrc, csrc, 0, nprow, npcol, r).expect("valid"))
                .collect();
            let mut seen = vec![vec![vec![false; descs[0].local_len(0, npcol).max(64)]; npcol]; nprow];
            for j in 0..9 {
                for i in 0..11 {
                    let (pr, pc) = descs[0].owner_of(i, j, nprow, npcol);
                    let d = &descs[pr];
                    let (li, lj) = d.global_to_local(i, j, nprow, npcol);
                    assert!(li < d.local_rows(pr, nprow) && lj < d.local_cols(pc, npcol));
                    assert_eq!(d.local_to_global(li, lj, pr, pc, nprow, npcol), (i, j));
                    let off = d.local_offset(li, lj);
                    assert!(off < d.local_len(pc, npcol));
                    assert!(!seen[pr][pc][off], "two elements at one local offset");
                    seen[pr][pc][off] = true;
                }
            }
            let total: usize = (0..nprow)
                .flat_map(|r| (0..npcol).map(move |c| (r, c)))
                .map(|(r, c)| descs[r].local_rows(r, nprow) * descs[r].local_cols(c, npcol))
                .sum();
            assert_eq!(total, 99);
        }
    }
}
