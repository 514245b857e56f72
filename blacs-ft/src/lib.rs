//! # blacs-ft — a fault-tolerant BLACS-like process grid
//!
//! A P×Q process grid over MPI (row-major ranks, row / column / all scopes)
//! with the BLACS operations the factorizations need on `f64` blocks —
//! broadcast (dgebs2d/dgebr2d), element-wise sum (dgsum2d), max and
//! |max| with location (dgamx2d), point-to-point exchange — and a repair that
//! survives SIGKILLed ranks through ULFM: revoke every grid communicator,
//! shrink, hand dead ranks to parked hot spares or spawn replacements, merge,
//! and split back to the **same** shape, ranks and coordinates — or, where
//! the grid asks for it and no replacement can be had, go on as a smaller
//! grid of the survivors ([`RepairPlan`], FT-MPI's SHRINK).
//!
//! This is the only crate that touches MPI. It reaches MPI through a small C
//! shim compiled by the MPI's own `mpicc` (so any MPI works: the PyPI Open MPI
//! that `scripts/setup.sh` installs, a cluster's Open MPI 5 or MPICH 4), with
//! `MPI_ERRORS_RETURN` on every communicator and every return code checked.
//! ULFM is detected at run time ([`UlfmStatus`]): without it the crate still
//! builds and runs, and says that a lost process cannot be repaired in
//! place.
//!
//! ```no_run
//! use blacs_ft::{Grid, GridOptions, Joined, Runtime, Scope};
//! let mut rt = Runtime::init()?;
//! let comm = rt.world_dup()?;
//! let grid = match Grid::join(&mut rt, comm, 2, 2, GridOptions::default())? {
//!     Joined::Active(g) => g,
//!     Joined::Released => rt.finish(0),
//! };
//! let mut x = [grid.rank() as f64];
//! grid.sum(Scope::All, &mut x, None)?;
//! # Ok::<(), blacs_ft::Error>(())
//! ```

mod comm;
mod error;
mod ffi;
mod grid;
pub mod index;
pub mod inject;
pub mod launch;
mod malloc_tuning;
mod members;
pub mod placement;
mod report;
mod runtime;
#[doc(hidden)]
pub use runtime::debug_enabled;
mod sends;
mod shrink;
mod stable_tags;
mod universe;
mod verify;
mod wait;
mod watchdog;

pub use comm::{error_string, Comm, Element, PendingAgree, PendingBcast, ReduceOp};
pub use error::{processes_in_words, row_beyond_tolerance, Error, Result};
pub use grid::{check_shape, Grid, GridAgreement, GridOptions, Joined, Mailbox, Replacement, Scope};
pub use inject::{Injector, KillSpec};
pub use report::{RepairMode, RepairReport};
pub use runtime::{LaunchCommand, Runtime, UlfmStatus};
pub use sends::Sends;
#[doc(hidden)]
pub use serde as __serde;
pub use shrink::{shrunk_shape, GridShape};
pub use universe::{
    RepairPlan, ShrunkFrom, EXIT_ABANDONED, LATE_REVOKE_VAR, REFUSE_SPAWN_VAR, REPAIR_ATTEMPTS, REPAIR_POINTS,
    STALL_SPAWN_VAR,
};
pub use verify::{probe_value, verify_grid, GridCheck};
pub use watchdog::EXIT_STALLED;

/// The `mpiexec` next to the `mpicc` this crate was built with (the launcher
/// that matches the linked MPI library). `FTLA_MPIEXEC` overrides it.
pub fn mpiexec_path() -> String {
    std::env::var("FTLA_MPIEXEC").unwrap_or_else(|_| env!("FTLA_BUILD_MPIEXEC").to_string())
}

/// The MPI C compiler wrapper this crate was built with: the one to build
/// C programs that link ftla's C ABI (the same MPI library).
pub fn mpicc_path() -> &'static str {
    env!("FTLA_BUILD_MPICC")
}
