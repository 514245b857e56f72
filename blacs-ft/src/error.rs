//! Typed errors of the grid layer.
//!
//! Two families (rsmpi #130): *process-failure* errors ([`Error::ProcFailed`],
//! [`Error::Revoked`]) mean "repair the grid and try again"; every other
//! variant is final for the operation that returned it. Errors returned by a
//! collective API of this crate are the same on every rank once the ranks have
//! agreed (see [`crate::Grid::agree_ok`] and [`crate::Grid::recover`]).

use std::fmt;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error of the fault-tolerant grid layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A process of the communicator failed. `ranks` are the ranks (in that
    /// communicator) this process knows to have failed; it may be empty when
    /// the failure was reported before it was acknowledged locally.
    ProcFailed { ranks: Vec<i32> },
    /// The communicator was revoked by another rank (after it saw a failure or
    /// raised a local error): go to the resilient region and repair.
    Revoked,
    /// Any other MPI error, with MPI's own error class and message.
    Mpi { code: i32, class: i32, message: String },
    /// The MPI library offers no usable ULFM: a lost process cannot be
    /// repaired in place.
    UlfmUnavailable { reason: String },
    /// A failure the grid cannot repair (two losses in one process row for
    /// ABFT data, no spare left and the spawn failed, ...).
    Unrecoverable { reason: String },
    /// The grid cannot be repaired in place here: no hot spare is left and
    /// spawning a replacement was refused (many batch systems refuse
    /// `MPI_Comm_spawn`). Unrecoverable in place; under the `auto`
    /// recovery policy the survivors save a checkpoint instead.
    RepairRefused { reason: String },
    /// A checkpoint (checkpoint-on-failure) that cannot be used: missing,
    /// truncated, corrupt, or from another grid, matrix, call or run. The
    /// same on every rank; `file` names the file (or the directory).
    Checkpoint { file: String, reason: String },
    /// Not a failure of the call: a process was lost, the grid was not
    /// repaired in place (recovery policy `cof`, or `auto` when the repair
    /// was refused), and the survivors saved their committed state in
    /// `dir`. The process should exit with
    /// [`crate::launch::EXIT_CHECKPOINTED`]; the launcher starts a new job
    /// that resumes from `dir`.
    Checkpointed { dir: String, step: u64, epoch: u32 },
    /// Not a failure: a shrink left this process without a place on the
    /// smaller grid; it handed its blocks over, parked as a hot spare, and
    /// the job ended without needing it. It has nothing more to compute
    /// and should end (exit code 0).
    Released,
    /// Not a failure: a shrink left this process without a place, and a
    /// later repair gave it grid rank `rank` (a replacement). The program
    /// runs its region's body again from the top, as a replacement does
    /// (the recovery crate's `Region::run` does it), after receiving the
    /// survivors' log.
    Rejoined { rank: i32 },
    /// A local error raised on grid rank `rank` and agreed on by every rank.
    Remote { rank: i32, message: String },
    /// A bad argument, detected before any communication.
    InvalidArgument { arg: String, reason: String },
}

impl Error {
    /// True for the errors that a repair of the grid can cure.
    pub fn is_process_failure(&self) -> bool {
        matches!(self, Error::ProcFailed { .. } | Error::Revoked)
    }

    /// True for [`Error::Unrecoverable`]: the run cannot go on, and says so.
    pub fn is_unrecoverable(&self) -> bool {
        matches!(self, Error::Unrecoverable { .. } | Error::RepairRefused { .. })
    }

    /// True for [`Error::Checkpointed`]: the survivors saved a checkpoint
    /// and the job should end for a restart.
    pub fn is_checkpointed(&self) -> bool {
        matches!(self, Error::Checkpointed { .. })
    }

    /// The [`Error::Unrecoverable`] of more lost processes in one process
    /// row than the checksums rebuild: grid `ranks` (ascending) of process
    /// `row`, `tolerated` per row. One wording wherever it is found (before
    /// a repair spawns anyone, or after it).
    pub fn too_many_losses_in_row(row: usize, ranks: &[i32], tolerated: usize) -> Self {
        let names: Vec<String> = ranks.iter().map(i32::to_string).collect();
        let lost = match names.as_slice() {
            [a, b] => format!("ranks {a} and {b} of process row {row} were both lost"),
            _ => format!("ranks {} of process row {row} were all lost", names.join(", ")),
        };
        let rebuilt = processes_in_words(tolerated);
        Error::Unrecoverable { reason: format!("{lost}: the checksums can rebuild {rebuilt} per process row") }
    }

    /// Convenience constructor for [`Error::InvalidArgument`].
    pub fn invalid(arg: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidArgument { arg: arg.into(), reason: reason.into() }
    }
}

/// `one process`, `2 processes`: how many processes per row the checksums
/// rebuild, as the unrecoverable failures say it.
pub fn processes_in_words(count: usize) -> String {
    match count {
        1 => "one process".to_string(),
        n => format!("{n} processes"),
    }
}

/// The lowest process row in which more than `tolerated` distinct
/// processes were lost, with its lost process columns (ascending); `lost`
/// holds grid coordinates `(process row, process column)`, duplicates
/// counting once. `None` when every row is within `tolerated`.
pub fn row_beyond_tolerance(lost: &[(usize, usize)], tolerated: usize) -> Option<(usize, Vec<usize>)> {
    let mut by_row: std::collections::BTreeMap<usize, Vec<usize>> = std::collections::BTreeMap::new();
    for &(pr, pc) in lost {
        let cols = by_row.entry(pr).or_default();
        if !cols.contains(&pc) {
            cols.push(pc);
        }
    }
    by_row.into_iter().find(|(_, cols)| cols.len() > tolerated).map(|(row, mut cols)| {
        cols.sort_unstable();
        (row, cols)
    })
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ProcFailed { ranks } if ranks.is_empty() => write!(f, "an MPI process failed"),
            Error::ProcFailed { ranks } => write!(f, "MPI process(es) failed: ranks {ranks:?}"),
            Error::Revoked => write!(f, "communicator revoked after a failure or error on another rank"),
            Error::Mpi { code, class, message } => {
                write!(f, "MPI error {code} (class {class}): {message}")
            }
            Error::UlfmUnavailable { reason } => {
                write!(f, "ULFM is not available ({reason}): a lost process cannot be repaired in place")
            }
            Error::Unrecoverable { reason } => write!(f, "unrecoverable failure: {reason}"),
            Error::RepairRefused { reason } => {
                write!(f, "unrecoverable failure: the grid cannot be repaired in place: {reason}")
            }
            Error::Checkpoint { file, reason } => write!(f, "checkpoint {file}: {reason}"),
            Error::Checkpointed { dir, step, .. } => {
                write!(f, "a process was lost: committed state at step {step} saved in {dir} for a restart")
            }
            Error::Released => write!(f, "this process left the grid in a shrink and was not needed again"),
            Error::Rejoined { rank } => {
                write!(f, "this process, left without a place by a shrink, replaced grid rank {rank}")
            }
            Error::Remote { rank, message } => write!(f, "error on rank {rank}: {message}"),
            Error::InvalidArgument { arg, reason } => write!(f, "invalid argument {arg}: {reason}"),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rows_that_lost_more_than_they_tolerate_are_found_lowest_first() {
        assert_eq!(row_beyond_tolerance(&[], 1), None);
        assert_eq!(row_beyond_tolerance(&[(0, 1), (1, 1), (2, 0)], 1), None);
        // (A process counted twice is one loss.)
        assert_eq!(row_beyond_tolerance(&[(1, 2), (1, 2)], 1), None);
        assert_eq!(row_beyond_tolerance(&[(2, 3), (0, 1), (2, 0), (1, 1), (1, 0)], 1), Some((1, vec![0, 1])));
        assert_eq!(row_beyond_tolerance(&[(0, 3), (0, 1), (0, 2)], 2), Some((0, vec![1, 2, 3])));
        assert_eq!(row_beyond_tolerance(&[(0, 3), (0, 1)], 2), None);
    }

    #[test]
    fn losses_beyond_the_checksums_are_said_in_words() {
        let text = |row, ranks: &[i32], t| Error::too_many_losses_in_row(row, ranks, t).to_string();
        assert_eq!(
            text(1, &[2, 3], 1),
            "unrecoverable failure: ranks 2 and 3 of process row 1 were both lost: the checksums can rebuild one \
             process per process row"
        );
        assert!(text(0, &[0, 1, 3], 1).contains("ranks 0, 1, 3 of process row 0 were all lost"));
        assert!(
            text(0, &[0, 1, 3], 2).ends_with("were all lost: the checksums can rebuild 2 processes per process row")
        );
        assert!(Error::too_many_losses_in_row(0, &[0, 1], 1).is_unrecoverable());
    }
}
