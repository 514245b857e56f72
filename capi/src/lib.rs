//! # ftla-capi — ftla for C, C++ and Fortran programs
//!
//! `libftla.so` / `libftla.a` and the header `capi/include/ftla.h`: grid
//! functions shaped like Cblacs' (`Cftla_pinfo`, `Cftla_gridinit`, …),
//! ScaLAPACK's descriptor tools (`ftla_numroc_`, `ftla_descinit_`) and the
//! drivers with ScaLAPACK's argument lists — the fault-tolerant
//! `pdgeqrf_ft_`, `pdgetrf_ft_` (whose factors ftla keeps protected until
//! `ftla_release_`), the solves on those kept factors `pdgetrs_ft_`,
//! `pdormqr_ft_`, the least squares `pdgels_ft_`, `pdcg_ft_`, and the plain
//! `ftla_pdgeqrf_`, `ftla_pdgetrf_`, `ftla_pdgetrs_`, and Cholesky's
//! `ftla_pdpotrf_`, `ftla_pdpotrs_`, `ftla_pdposv_`. Every name is prefixed so that a BLACS
//! or ScaLAPACK linked into the same program never clashes.
//!
//! Arguments follow ScaLAPACK: pointers (Fortran calling convention),
//! 1-based IA/JA, 9-integer descriptors, INFO = -i or -(i·100+j) for a bad
//! argument, INFO > 0 as in ScaLAPACK; the negative `FTLA_INFO_*` codes
//! for failures. Inside, everything is the Rust library's (0-based, typed).
//! Call ftla from the thread that started it (MPI runs funneled).

// (In the header's order: the grid, the tools, the drivers, the solves
// on kept factors, factors kept in place, their release.)
mod grid;

mod tools;

mod drivers;

mod cholesky;

mod solves;

mod solve_args;

mod in_place;

mod kept;

mod fingerprint;

mod call;
mod lost;
mod matrix;
mod process;

pub use call::{
    FTLA_INFO_ERROR, FTLA_INFO_INPUT_LOST, FTLA_INFO_NO_MEMORY, FTLA_INFO_PROCESS_LOST, FTLA_INFO_RESULT_LOST,
    FTLA_INFO_UNRECOVERABLE,
};
pub use cholesky::{ftla_pdposv_, ftla_pdpotrf_, ftla_pdpotrs_};
pub use drivers::{ftla_pdgeqrf_, ftla_pdgetrf_, ftla_pdgetrs_, pdcg_ft_, pdgeqrf_ft_, pdgetrf_ft_};
pub use grid::{
    Cftla_comm_f, Cftla_exit, Cftla_gridexit, Cftla_gridinfo, Cftla_gridinit, Cftla_is_replacement, Cftla_pinfo,
};
pub use in_place::{ftla_in_place_, ftla_kept_bytes_, ftla_kept_lsize_};
pub use kept::ftla_release_;
pub use solves::{pdgels_ft_, pdgetrs_ft_, pdormqr_ft_};
pub use tools::{ftla_descinit_, ftla_numroc_};

/// The exit code of a process whose job ends for a restart after a
/// checkpoint-on-failure save (the survivors exit with it inside the
/// interrupted call; `ftla launch` then starts the job again).
pub const FTLA_EXIT_CHECKPOINTED: std::os::raw::c_int = 76;

#[cfg(test)]
mod tests {
    #[test]
    fn the_checkpointed_exit_code_is_the_launchers() {
        assert_eq!(super::FTLA_EXIT_CHECKPOINTED, blacs_ft::launch::EXIT_CHECKPOINTED);
    }
}
