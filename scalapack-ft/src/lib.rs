//! # scalapack-ft — distributed dense linear algebra that survives failures
//!
//! ScaLAPACK semantics on a [`blacs_ft::Grid`]: descriptors, 2D
//! block-cyclic matrices, `pdgeqrf` / `pdgetrf` and their fault-tolerant
//! `_ft` siblings. Inside, indices are 0-based and typed; only a C ABI would
//! be 1-based with `INFO` codes ([`Error::info`] gives them).

pub mod abft;
pub mod args;
pub mod array;
pub mod blas;
pub mod cg;
pub mod cg_ft;
pub mod chol;
pub mod chol_ft;
pub mod descriptor;
pub mod dist_io;
pub mod drivers;
pub mod error;
pub mod generate;
pub mod io;
pub mod lu;
pub mod lu_ft;
pub mod matrix;
pub mod memory;
pub mod norms;
pub mod pblas;
pub mod qr;
pub mod qr_ft;
mod row_panel;
pub mod storage;

pub use blacs_ft::{Grid, Scope};
pub use error::{Error, Result};
pub use matrix::DistMatrix;
