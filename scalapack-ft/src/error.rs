//! Errors of the distributed routines, the same on every rank.

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
    /// An iterative solver cannot go on (a non-finite value appeared, or a
    /// checksum mismatch persisted after recomputing): `reason`.
    Breakdown { routine: String, iteration: u64, reason: String },
}

impl Error {
    /// ScaLAPACK's INFO: `-(position*100 + entry)` for a descriptor entry,
    /// `-position` for another argument, `index + 1` for a singular U, the
    /// iteration for a matrix found not positive definite.
    pub fn info(&self) -> i32 {
        match self {
            Error::Argument { position, entry, .. } if *entry > 0 => -((position * 100 + entry) as i32),
            Error::Argument { position, .. } => -(*position as i32),
            Error::Singular { index, .. } => *index as i32 + 1,
            Error::NotPositiveDefinite { iteration, .. } => *iteration as i32,
            Error::Grid(_) | Error::Memory { .. } | Error::Breakdown { .. } => i32::MIN,
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
            Error::Breakdown { routine, iteration, reason } => {
                write!(f, "{routine}: breakdown at iteration {iteration}: {reason}")
            }
        }
    }
}

impl std::error::Error for Error {}

impl recovery::protocol::ProtocolError for Error {
    fn is_process_failure(&self) -> bool {
        Error::is_process_failure(self)
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
    use blacs_ft::Scope;
    const SEP: char = '\u{1f}';
    // (kind, three numbers, text): 0 argument, 1 memory, 2 anything else.
    let mine = match &local {
        Ok(()) => None,
        Err(Error::Argument { position, entry, name, reason, routine }) => {
            Some((0, [*position as i64, *entry as i64, 0], format!("{routine}{SEP}{name}{SEP}{reason}")))
        }
        Err(Error::Memory { routine, what, bytes, available }) => {
            Some((1, [*bytes as i64, available.map_or(-1, |a| a as i64), 0], format!("{routine}{SEP}{what}")))
        }
        Err(e) => Some((2, [0, 0, 0], format!("?{SEP}?{SEP}{e}"))),
    };
    let Some(root) = grid.lowest_rank_where(mine.is_some())? else {
        return Ok(());
    };
    let (kind, nums, text) = mine.unwrap_or_default();
    let mut head = [kind, nums[0], nums[1], nums[2]];
    grid.broadcast(Scope::All, &mut head, root)?;
    let bytes = grid.broadcast_vec(text.into_bytes(), root)?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let mut parts = text.splitn(3, SEP);
    let mut part = || parts.next().unwrap_or("?").to_string();
    Err(match head[0] {
        1 => Error::Memory {
            routine: part(),
            what: part(),
            bytes: head[1] as u64,
            available: (head[2] >= 0).then_some(head[2] as u64),
        },
        _ => Error::Argument {
            routine: part(),
            name: part(),
            reason: part(),
            position: head[1] as u32,
            entry: head[2] as u32,
        },
    })
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
}
