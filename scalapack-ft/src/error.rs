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
}

impl Error {
    /// ScaLAPACK's INFO: `-(position*100 + entry)` for a descriptor entry,
    /// `-position` for another argument, `index + 1` for a singular U.
    pub fn info(&self) -> i32 {
        match self {
            Error::Argument { position, entry, .. } if *entry > 0 => -((position * 100 + entry) as i32),
            Error::Argument { position, .. } => -(*position as i32),
            Error::Singular { index, .. } => *index as i32 + 1,
            Error::Grid(_) => i32::MIN,
        }
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
        }
    }
}

impl std::error::Error for Error {}

impl From<blacs_ft::Error> for Error {
    fn from(e: blacs_ft::Error) -> Error {
        Error::Grid(e)
    }
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Collective: every rank passes its own argument check; if any failed,
/// every rank returns the argument error of the lowest failing rank (the
/// same typed value everywhere).
pub fn agree_on_arguments(grid: &blacs_ft::Grid, local: Result<()>) -> Result<()> {
    use blacs_ft::Scope;
    let mine = match &local {
        Err(Error::Argument { position, entry, name, reason, routine }) => {
            Some((*position, *entry, format!("{routine}\u{1f}{name}\u{1f}{reason}")))
        }
        Err(e) => Some((0, 0, format!("?\u{1f}?\u{1f}{e}"))),
        Ok(()) => None,
    };
    let Some(root) = grid.lowest_rank_where(mine.is_some())? else {
        return Ok(());
    };
    let (pos, ent, text) = mine.unwrap_or_default();
    let mut head = [pos as i64, ent as i64];
    grid.broadcast(Scope::All, &mut head, root)?;
    let bytes = grid.broadcast_vec(text.into_bytes(), root)?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let mut parts = text.splitn(3, '\u{1f}');
    let routine = parts.next().unwrap_or("?").to_string();
    let name = parts.next().unwrap_or("?").to_string();
    let reason = parts.next().unwrap_or("").to_string();
    Err(Error::Argument { routine, position: head[0] as u32, entry: head[1] as u32, name, reason })
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
