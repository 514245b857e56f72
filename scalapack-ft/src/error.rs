//! Errors of the distributed routines, the same on every rank.

use recovery::codec;
use serde::{Deserialize, Serialize};
use std::fmt;

/// An error of a distributed routine. Collective routines return it only
/// after the ranks agreed, so every rank sees the same value.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// Grid or MPI error (process failure, revoked communicator, a local
    /// error raised on another rank, ...).
    Grid(blacs_ft::Error),
    /// Argument `position` (1-based, as in ScaLAPACK's calling sequence) is
    /// invalid; `entry` is the descriptor entry (1..9) when the argument is a
    /// descriptor, 0 otherwise. `info()` gives ScaLAPACK's INFO code.
    Argument { routine: String, position: u32, entry: u32, name: String, reason: String },
    /// `U(index, index)` is exactly zero (0-based): the factorization was
    /// completed but U is singular (ScaLAPACK INFO = index + 1 > 0).
    Singular { routine: String, index: usize },
    /// `routine` needs `bytes` more on a process for `what` than that
    /// process can get (`available`: what its machine had left, when
    /// known). Nothing was computed.
    Memory { routine: String, what: String, bytes: u64, available: Option<u64> },
    /// An iterative solver met a search direction `p` with `pᵀA·p ≤ 0`
    /// (`curvature`) at `iteration` (1-based): A is not positive definite.
    /// INFO = `iteration`.
    NotPositiveDefinite { routine: String, iteration: u64, curvature: f64 },
    /// A Cholesky factorization met a leading minor of order `order`
    /// (1-based) that is not positive definite: A is not, and the
    /// factorization stopped there (ScaLAPACK INFO = `order`). The same on
    /// every process.
    MinorNotPositiveDefinite { routine: String, order: usize },
    /// An iterative solver cannot go on (a non-finite value appeared, or a
    /// checksum mismatch persisted after recomputing): `reason`.
    Breakdown { routine: String, iteration: u64, reason: String },
    /// Argument `position` (`argument`, 1-based as in ScaLAPACK's calling
    /// sequence) is an output of an earlier call whose part on grid rank
    /// `rank` was lost with a failed process: `rank` is a replacement that
    /// joined after that call completed, so its part of the array never
    /// received the call's results (see [`crate::DistMatrix::is_lost`]).
    /// Agreed: every process returns it, and nothing was computed. Compute
    /// the input again (from the program's own data) before passing it.
    InputLost { routine: String, position: u32, argument: String, rank: i32 },
    /// `routine` needs `need` elements of storage for `what` where the
    /// program lent an array of `len` (see
    /// [`crate::storage::LocalStorage::lent`]): lent storage never grows.
    Storage { routine: String, what: String, len: usize, need: usize },
}

impl Error {
    /// ScaLAPACK's INFO: `-(position*100 + entry)` for a descriptor entry,
    /// `-position` for another argument, `index + 1` for a singular U, the
    /// iteration for a matrix found not positive definite; `i32::MIN` for
    /// the errors ScaLAPACK has no INFO for (the C ABI gives those its
    /// `FTLA_INFO_*` codes: an [`Error::InputLost`] is
    /// `FTLA_INFO_INPUT_LOST`).
    pub fn info(&self) -> i32 {
        match self {
            Error::Argument { position, entry, .. } if *entry > 0 => -((position * 100 + entry) as i32),
            Error::Argument { position, .. } => -(*position as i32),
            Error::Singular { index, .. } => *index as i32 + 1,
            Error::NotPositiveDefinite { iteration, .. } => *iteration as i32,
            Error::MinorNotPositiveDefinite { order, .. } => *order as i32,
            Error::Grid(_)
            | Error::Memory { .. }
            | Error::Breakdown { .. }
            | Error::InputLost { .. }
            | Error::Storage { .. } => i32::MIN,
        }
    }

    /// True for a failure the run could not recover from (reported as such
    /// on every rank).
    pub fn is_unrecoverable(&self) -> bool {
        matches!(self, Error::Grid(e) if e.is_unrecoverable())
    }

    /// True for errors a grid repair can cure.
    pub fn is_process_failure(&self) -> bool {
        matches!(self, Error::Grid(e) if e.is_process_failure())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Grid(e) => write!(f, "{e}"),
            Error::Argument { routine, position, entry, name, reason } if *entry > 0 => {
                write!(f, "{routine}: argument {position} ({name}, descriptor entry {entry}) {reason}")
            }
            Error::Argument { routine, position, name, reason, .. } => {
                write!(f, "{routine}: argument {position} ({name}) {reason}")
            }
            Error::Singular { routine, index } => {
                write!(f, "{routine}: U({i},{i}) is exactly zero: the matrix is singular", i = index + 1)
            }
            Error::Memory { routine, what, bytes, available } => {
                write!(f, "{routine}: {what} needs {:.1} GiB on a process", crate::memory::gib(*bytes))?;
                match available {
                    Some(a) => write!(f, "; {:.1} GiB available", crate::memory::gib(*a)),
                    None => write!(f, ", more than it could allocate"),
                }
            }
            Error::NotPositiveDefinite { routine, iteration, curvature } => write!(
                f,
                "{routine}: pᵀA·p = {curvature:e} ≤ 0 at iteration {iteration}: the matrix is not positive definite"
            ),
            Error::MinorNotPositiveDefinite { routine, order } => write!(
                f,
                "{routine}: the leading minor of order {order} is not positive definite: the matrix is not \
                 (INFO = {order})"
            ),
            Error::Breakdown { routine, iteration, reason } => {
                write!(f, "{routine}: breakdown at iteration {iteration}: {reason}")
            }
            Error::InputLost { routine, position, argument, rank } => write!(
                f,
                "{routine}: argument {position} ({argument}) is the output of a call that completed before grid \
                 rank {rank} replaced a failed process, or protected factors more losses hit than their \
                 checksums rebuild: its part there was lost, and nothing was computed (compute {argument} again)"
            ),
            Error::Storage { routine, what, len, need } => write!(
                f,
                "{routine}: {what} needs {need} elements on a process, and the program's array there holds {len}"
            ),
        }
    }
}

impl std::error::Error for Error {}

impl recovery::protocol::ProtocolError for Error {
    fn is_process_failure(&self) -> bool {
        Error::is_process_failure(self)
    }

    /// `Agreed`'s form (an error that is no agreed one counts as found
    /// on an unknown rank).
    fn to_record(&self) -> Vec<u8> {
        Agreed::of(self, -1).to_bytes()
    }

    /// A singular U: the factorization is complete (CG's finding that A
    /// is not positive definite is not: the solve stopped).
    fn is_result(&self) -> bool {
        matches!(self, Error::Singular { .. })
    }

    fn from_record(bytes: &[u8]) -> Self {
        match Agreed::from_bytes(bytes) {
            Some(agreed) => agreed.error(),
            None => {
                let message = "a refused call whose error record is unreadable".to_string();
                Error::Grid(blacs_ft::Error::Remote { rank: -1, message })
            }
        }
    }
}

/// An agreed error as it travels from the rank that found it to the others
/// (and as the status log keeps a refused call's), in the one codec
/// (`recovery::codec`): an argument error, a memory error, a lost input,
/// or anything else as a [`blacs_ft::Error::Remote`] from the rank that
/// found it.
#[derive(Serialize, Deserialize)]
enum Agreed {
    Argument { routine: String, position: u32, entry: u32, name: String, reason: String },
    Memory { routine: String, what: String, bytes: u64, available: Option<u64> },
    Remote { rank: i32, message: String },
    InputLost { routine: String, position: u32, argument: String, rank: i32 },
}

impl Agreed {
    /// `e` as found on grid rank `rank`.
    fn of(e: &Error, rank: i32) -> Agreed {
        match e.clone() {
            Error::Argument { routine, position, entry, name, reason } => {
                Agreed::Argument { routine, position, entry, name, reason }
            }
            Error::Memory { routine, what, bytes, available } => Agreed::Memory { routine, what, bytes, available },
            Error::InputLost { routine, position, argument, rank } => {
                Agreed::InputLost { routine, position, argument, rank }
            }
            Error::Grid(blacs_ft::Error::Remote { rank, message }) => Agreed::Remote { rank, message },
            e => Agreed::Remote { rank, message: e.to_string() },
        }
    }

    fn to_bytes(&self) -> Vec<u8> {
        codec::encode(self)
    }

    fn from_bytes(bytes: &[u8]) -> Option<Agreed> {
        codec::decode(bytes)
    }

    /// The error, the same typed value wherever it is read.
    fn error(self) -> Error {
        match self {
            Agreed::Argument { routine, position, entry, name, reason } => {
                Error::Argument { routine, position, entry, name, reason }
            }
            Agreed::Memory { routine, what, bytes, available } => Error::Memory { routine, what, bytes, available },
            Agreed::Remote { rank, message } => Error::Grid(blacs_ft::Error::Remote { rank, message }),
            Agreed::InputLost { routine, position, argument, rank } => {
                Error::InputLost { routine, position, argument, rank }
            }
        }
    }
}

impl From<blacs_ft::Error> for Error {
    fn from(e: blacs_ft::Error) -> Error {
        Error::Grid(e)
    }
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Collective: every rank passes its own local checks (arguments, memory,
/// the input's values); if any failed, every rank returns the error of the
/// lowest failing rank — the same typed value everywhere.
pub fn agree_on_arguments(grid: &blacs_ft::Grid, local: Result<()>) -> Result<()> {
    let Some(root) = grid.lowest_rank_where(local.is_err())? else {
        return Ok(());
    };
    let mine = local.err().map_or_else(Vec::new, |e| Agreed::of(&e, grid.rank()).to_bytes());
    let bytes = grid.broadcast_vec(mine, root)?;
    Err(Agreed::from_bytes(&bytes).map_or_else(
        || {
            let message = "an agreed error that does not decode".to_string();
            Error::Grid(blacs_ft::Error::Remote { rank: root, message })
        },
        Agreed::error,
    ))
}

/// Collective, after an agreement that some process failed its local
/// checks (`local`, this process's): the agreed error
/// ([`agree_on_arguments`]) — every call's verdict explains a refusal so,
/// whoever makes it (a driver, or the C ABI's call gate for a process
/// whose own checks failed). A process failure when the process that
/// failed its checks is gone.
pub fn agreed_refusal(grid: &blacs_ft::Grid, local: Result<()>) -> Error {
    agree_on_arguments(grid, local).err().unwrap_or_else(|| blacs_ft::Error::ProcFailed { ranks: Vec::new() }.into())
}

/// Local: [`Error::InputLost`] of `routine` when this process's part of
/// `m` (argument `position`, named `argument`) was lost (see
/// [`crate::DistMatrix::is_lost`]). Part of a routine's argument checks,
/// whose verdict every process agrees on.
pub fn check_not_lost(
    grid: &blacs_ft::Grid,
    routine: &str,
    position: u32,
    argument: &str,
    m: &crate::DistMatrix,
) -> Result<()> {
    if !m.is_lost() {
        return Ok(());
    }
    Err(Error::InputLost { routine: routine.into(), position, argument: argument.into(), rank: grid.rank() })
}

/// Local: an argument error of `routine` when `a`'s local array holds a
/// NaN or an infinity (`position`: A's place in the calling sequence). A
/// factorization of such input would spread it silently over the result.
pub fn check_finite(routine: &str, position: u32, a: &crate::DistMatrix) -> Result<()> {
    let (lr, lld) = (a.local_rows(), a.lld().max(1));
    let data = a.local();
    // A fast scan first; the position is looked for only when needed.
    if data.iter().all(|x| x.is_finite()) {
        return Ok(());
    }
    let at = data.iter().enumerate().find(|(k, x)| k % lld < lr && !x.is_finite());
    let Some((k, x)) = at else {
        return Ok(()); // only in the padding rows past the local array
    };
    let (i, j) = (a.global_row(k % lld), a.global_col(k / lld));
    Err(Error::Argument {
        routine: routine.into(),
        position,
        entry: 0,
        name: "A".into(),
        reason: format!("holds a non-finite value: A({i}, {j}) = {x} (0-based); the input must be finite"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_codes_follow_scalapack() {
        let e =
            Error::Argument { routine: "pdgeqrf".into(), position: 6, entry: 6, name: "NB".into(), reason: "x".into() };
        assert_eq!(e.info(), -606);
        let e =
            Error::Argument { routine: "pdgeqrf".into(), position: 1, entry: 0, name: "M".into(), reason: "x".into() };
        assert_eq!(e.info(), -1);
        assert_eq!(Error::Singular { routine: "pdgetrf".into(), index: 4 }.info(), 5);
        assert!(e.to_string().contains("argument 1 (M)"));
    }

    #[test]
    fn a_refused_calls_error_comes_back_from_its_record() {
        use recovery::protocol::ProtocolError;
        let errors = [
            Error::Argument {
                routine: "pdgeqrf_ft".into(),
                position: 6,
                entry: 6,
                name: "A".into(),
                reason: "x".into(),
            },
            Error::Memory { routine: "pdgetrf_ft".into(), what: "the sums".into(), bytes: 1 << 40, available: None },
            Error::Memory { routine: "pdgetrf_ft".into(), what: "w".into(), bytes: 8, available: Some(3) },
            Error::Grid(blacs_ft::Error::Remote { rank: 3, message: "no".into() }),
            Error::InputLost { routine: "pdgetrs".into(), position: 4, argument: "A".into(), rank: 2 },
        ];
        for e in errors {
            let back = Error::from_record(&e.to_record());
            assert_eq!(back.to_string(), e.to_string());
            assert_eq!(back.info(), e.info());
        }
        // Another error is carried as what its rank said.
        let e = Error::Breakdown { routine: "pdcg".into(), iteration: 2, reason: "nan".into() };
        let back = Error::from_record(&Agreed::of(&e, 5).to_bytes());
        assert!(
            matches!(&back, Error::Grid(blacs_ft::Error::Remote { rank: 5, message }) if *message == e.to_string())
        );
        assert!(matches!(Error::from_record(&[1, 2]), Error::Grid(blacs_ft::Error::Remote { rank: -1, .. })));
    }
}
