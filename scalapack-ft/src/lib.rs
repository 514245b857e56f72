//! # scalapack-ft — distributed dense linear algebra that survives failures
//!
//! ScaLAPACK semantics on a [`blacs_ft::Grid`]: descriptors, 2D
//! block-cyclic matrices, `pdgeqrf` / `pdgetrf` and their fault-tolerant
//! `_ft` siblings. Inside, indices are 0-based and typed; only the C ABI is
//! 1-based with `INFO` codes.
//!
//! Status: the process grid and its repair are in place (`blacs-ft`); the
//! distributed matrix and factorization layers are being built on it.

pub use blacs_ft::{Grid, Scope};
