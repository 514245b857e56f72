//! `pdcg_ft`: conjugate gradients that survive SIGKILLed ranks with no
//! rollback and no lost iteration, and catch silent errors in the
//! matrix-vector products — on the step-commit protocol of
//! [`recovery::protocol`] and the checksums of [`crate::abft`], the layer
//! of [`crate::qr_ft::pdgeqrf_ft`] and [`crate::lu_ft::pdgetrf_ft`].
//!
//! * A never changes: its checksums (in the layout chosen) are encoded once,
//!   and a lost process's blocks of A are rebuilt from them (exactly the
//!   factorizations' rebuild, at step 0).
//! * The vectors (b, x, r, p, diag(A)⁻¹) are kept in row form, the same on
//!   every process of a process row (see [`crate::cg`]): a lost process's
//!   pieces are copied from another process of its row. The scalars are
//!   replicated and handed over by the protocol. So the state after a
//!   recovery is exactly the committed one (exact state reconstruction):
//!   the solve goes on from the interrupted iteration, with the iterates of
//!   a failure-free run up to the rounding of the rebuilt A.
//! * Every matrix-vector product is checked against the column sums eᵀA:
//!   eᵀ(A·p) = (eᵀA)·p costs O(N) per iteration, and a mismatch beyond
//!   rounding recomputes the product and is reported.

mod solve;

pub use solve::{pdcg_ft, pdcg_ft_in, STEP_PHASES};
