//! `pdcg` and the argument checks both CG solvers share.

use super::iteration::{self, Operator, Scalars};
use super::vectors::Vectors;
use super::{CgOptions, CgReport};
use crate::args::pdcg::{A, B, DESCA, DESCB, DESCX, MAXIT, TOL, X};
use crate::args::{arg_error, check_first_block_at_origin, check_grid, check_square_blocks, entry};
use crate::error::{agree_on_arguments, check_finite, check_not_lost, Error, Result};
use crate::matrix::DistMatrix;
use blacs_ft::Grid;
use recovery::profile;

/// Conjugate gradients (optionally Jacobi-preconditioned) for A·x = b,
/// A dense symmetric positive definite (only its values are read; it is
/// not checked for symmetry).
///
/// * `grid` (global): the process grid.
/// * `a` (local input): N×N, square blocks (MB = NB), first block on
///   process (0, 0).
/// * `b` (local input): N×1 with A's row blocks (MB_B = MB_A), first
///   block on process (0, 0): the right-hand side.
/// * `x` (local input/output): as `b`; the initial guess on entry, the
///   solution on exit.
/// * `opts` (global): tolerance, iteration limit, preconditioning.
///
/// Stops when ‖r‖₂ ≤ tol·‖b‖₂ (the recurrence's residual) or after
/// `maxit` iterations, and recomputes the true residual ‖b − A·x‖₂/‖b‖₂.
/// Not converging is not an error: the report says so.
///
/// # Errors
/// Agreed on every process: argument errors (ScaLAPACK-style positions,
/// see [`crate::cg`]), a NaN or an infinity in A, b or x,
/// [`Error::NotPositiveDefinite`] when pᵀA·p ≤ 0 (or a non-positive
/// diagonal with Jacobi), [`Error::Breakdown`] when a non-finite value
/// appears, [`Error::InputLost`] when A or b is lost on some process (see
/// [`DistMatrix::is_lost`]; nothing computed).
///
/// # Fault tolerance
/// None: a process failure surfaces as [`Error::Grid`]. See
/// [`crate::cg_ft::pdcg_ft`].
pub fn pdcg(grid: &Grid, a: &DistMatrix, b: &DistMatrix, x: &mut DistMatrix, opts: &CgOptions) -> Result<CgReport> {
    const ROUTINE: &str = "pdcg";
    let local = check_args(ROUTINE, grid, a, b, x, opts).and_then(|()| check_inputs(ROUTINE, grid, a, b, x));
    agree_on_arguments(grid, local)?;
    let mut v = Vectors::from_inputs(grid, a, b, x, opts.jacobi)?;
    let mut op = Operator {
        a,
        lc: a.local_cols(),
        sums: None,
        tamper: None,
        enter: &mut |phase| profile::enter(phase.into(), 0),
        routine: ROUTINE,
    };
    let mut s = Scalars::default();
    let start = iteration::start(&mut op, grid, &v)?;
    iteration::apply_start(&mut v, &mut s, start);
    let mut iterations = 0;
    while !converged(&s, opts) && iterations < opts.maxit {
        iterations += 1;
        profile::at_step(iterations);
        let step = iteration::iterate(&mut op, grid, &v, &s, iterations)?;
        iteration::apply(&mut v, &mut s, step);
    }
    let (res, _) = iteration::true_residual(&mut op, grid, &v, iterations + 1)?;
    v.write_x(grid, x);
    Ok(CgReport {
        iterations,
        converged: converged(&s, opts),
        relative_residual: iteration::relative(res, s.bb),
        recurrence_residual: s.relative(),
        ..CgReport::default()
    })
}

/// Whether the recurrence's residual meets the tolerance: ‖r‖ ≤ tol·‖b‖,
/// or ‖r‖ ≤ tol when b = 0 (the residual [`Scalars::relative`] reports).
pub(crate) fn converged(s: &Scalars, opts: &CgOptions) -> bool {
    s.relative() <= opts.tol
}

/// The local argument checks of both solvers (agreed by the caller).
pub(crate) fn check_args(
    routine: &str,
    grid: &Grid,
    a: &DistMatrix,
    b: &DistMatrix,
    x: &DistMatrix,
    opts: &CgOptions,
) -> Result<()> {
    check_grid(grid, a, routine, DESCA, "A")?;
    check_grid(grid, b, routine, DESCB, "B")?;
    check_grid(grid, x, routine, DESCX, "X")?;
    if a.m() != a.n() {
        return Err(arg_error(routine, DESCA, entry::N, "N_A", format!("A must be square, got {}x{}", a.m(), a.n())));
    }
    check_square_blocks(routine, DESCA, "A", a.desc())?;
    for (pos, name, m) in [(DESCA, "A", a), (DESCB, "B", b), (DESCX, "X", x)] {
        check_first_block_at_origin(routine, pos, name, m.desc())?;
    }
    for (pos, name, v) in [(DESCB, "B", b), (DESCX, "X", x)] {
        if v.m() != a.m() || v.n() != 1 {
            return Err(arg_error(
                routine,
                pos,
                entry::M,
                &format!("M_{name}"),
                format!("{name} must be {}x1 (A is {}x{}), got {}x{}", a.m(), a.m(), a.n(), v.m(), v.n()),
            ));
        }
        if v.mb() != a.mb() {
            return Err(arg_error(
                routine,
                pos,
                entry::MB,
                &format!("MB_{name}"),
                format!("must equal MB_A = {} (the vector shares A's row blocks), got {}", a.mb(), v.mb()),
            ));
        }
    }
    if !(opts.tol.is_finite() && opts.tol >= 0.0) {
        return Err(arg_error(routine, TOL, 0, "TOL", format!("must be finite and ≥ 0, got {}", opts.tol)));
    }
    if opts.maxit == 0 {
        return Err(arg_error(routine, MAXIT, 0, "MAXIT", "must be at least 1"));
    }
    Ok(())
}

/// Local: A, b and x hold finite values only.
pub(crate) fn check_inputs(routine: &str, grid: &Grid, a: &DistMatrix, b: &DistMatrix, x: &DistMatrix) -> Result<()> {
    // (X, overwritten with the solution, is the program's guess.)
    check_not_lost(grid, routine, A, "A", a)?;
    check_not_lost(grid, routine, B, "B", b)?;
    check_finite(routine, A, a)?;
    for (pos, name, v) in [(B, "B", b), (X, "X", x)] {
        if let Err(Error::Argument { reason, .. }) = check_finite(routine, pos, v) {
            return Err(arg_error(routine, pos, 0, name, reason.replacen("A(", &format!("{name}("), 1)));
        }
    }
    Ok(())
}
