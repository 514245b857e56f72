//! # recovery — resilient regions and fault injection for ftla
//!
//! The application-facing side of recovery: a resilient region runs a
//! closure, and when a process dies inside it, repairs the grid
//! ([`blacs_ft::Grid::recover`]) and runs the closure again. Fault injection
//! (SIGKILL a rank at a named point) is re-exported from `blacs-ft`, where
//! the repair protocol itself has injection points.
//!
//! The step-commit protocol and the status log that lets a re-run skip
//! completed calls arrive with the fault-tolerant factorizations.

pub use blacs_ft::inject::{kill_self, Injector, KillSpec};
use blacs_ft::{Error, Grid, RepairReport};

/// What a resilient region did.
#[derive(Debug, Default)]
pub struct RegionOutcome {
    /// One report per repair, oldest first.
    pub repairs: Vec<RepairReport>,
}

/// Runs `body` on the grid; when it fails with a process-failure error,
/// repairs the grid and runs it again (at most `max_repairs` times).
///
/// `body` must be re-entrant: it is called again from the start after a
/// repair, on survivors and replacements alike, and can use
/// [`Grid::epoch`] / [`Grid::replacement`] to find where to resume.
///
/// # Fault tolerance
/// Errors that are not process failures are returned as they are (they are
/// already agreed when they come from a collective of the grid).
pub fn resilient<T>(
    grid: &mut Grid,
    max_repairs: usize,
    mut body: impl FnMut(&mut Grid) -> Result<T, Error>,
) -> Result<(T, RegionOutcome), Error> {
    let mut outcome = RegionOutcome::default();
    loop {
        match body(grid) {
            Ok(v) => return Ok((v, outcome)),
            Err(e) if e.is_process_failure() && outcome.repairs.len() < max_repairs => {
                outcome.repairs.push(grid.recover()?);
            }
            Err(e) if e.is_process_failure() => {
                return Err(Error::Unrecoverable {
                    reason: format!("more than {max_repairs} repairs needed (last: {e})"),
                })
            }
            Err(e) => return Err(e),
        }
    }
}
