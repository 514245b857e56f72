//! `pdgeqrf`: blocked Householder QR of a distributed matrix.

use super::panel_choice::QrOptions;
use super::panel_group::PanelGroup;
use super::reflectors::{factor_panel, Panel};
use crate::args::check_square_blocks;
use crate::args::pdgeqrf::{A, DESCA};
use crate::error::{agree_on_arguments, check_finite, Result};
use crate::matrix::DistMatrix;
use crate::row_panel::{receive_panel_working, start_row_send};
use blacs_ft::Grid;
use recovery::profile;

/// QR factorization `A = Q·R` of the distributed M×N matrix `a`
/// (ScaLAPACK `PDGEQRF` with IA = JA = 1).
///
/// * `grid` (global): the process grid `a` is distributed on.
/// * `a` (local input/output): on exit, R on and above the diagonal and the
///   Householder vectors V below it, exactly ScaLAPACK's layout.
/// * `tau` (global output): the min(M, N) Householder scalars, replicated on
///   every rank (ScaLAPACK keeps the local part only).
///
/// Blocked right-looking algorithm, panels in groups of three where the
/// trailing matrix is wide: each panel's columns get the group's update
/// so far before it is factored, and the columns right of the group one
/// update by all three, with inner dimension 3·NB (LAPACK's merged T; the
/// same R, V and tau up to rounding). With several process columns, one
/// panel of look-ahead besides: the process column that owns the next
/// panel updates and factors it before the rest of its trailing matrix
/// and starts a non-blocking broadcast of it, so the other columns find
/// the panel waiting; and a process that waits for a panel all the same
/// updates far columns meanwhile (a group's far update is postponed into
/// the next group's waits).
///
/// The panels are factored as [`super::PanelMethod::Auto`] picks; see
/// [`pdgeqrf_with`] to choose.
///
/// # Errors
/// Argument errors (MB ≠ NB, a NaN or an infinity in A) are agreed: every
/// rank returns the same one.
/// A process failure returns [`crate::Error::Grid`] with a process-failure error.
pub fn pdgeqrf(grid: &Grid, a: &mut DistMatrix, tau: &mut Vec<f64>) -> Result<()> {
    pdgeqrf_with(grid, a, tau, &QrOptions::default())
}

/// [`pdgeqrf`] with options:
///
/// * `opts` (global): how the panels are factored ([`QrOptions::panel`]).
///   With [`super::PanelMethod::Tsqr`] or [`super::PanelMethod::CholQr2`]
///   (`auto` picks the latter with several process rows) R, V and tau
///   are ScaLAPACK's up to rounding, except that where ScaLAPACK's reflector
///   is the identity (`tau = 0`: a column already exactly zero below the
///   diagonal, other than the matrix's last row) TSQR stores one that flips
///   R's row instead (see [`super::tall_skinny`]); either is a valid
///   ScaLAPACK QR.
///
/// # Errors
/// As [`pdgeqrf`].
pub fn pdgeqrf_with(grid: &Grid, a: &mut DistMatrix, tau: &mut Vec<f64>, opts: &QrOptions) -> Result<()> {
    // (PDGEQRF(M, N, A, IA, JA, DESCA, ...): A is argument 3, DESCA 6.)
    let check = check_square_blocks("pdgeqrf", DESCA, "A", a.desc()).and_then(|()| check_finite("pdgeqrf", A, a));
    agree_on_arguments(grid, check)?;
    let (m, n, nb) = (a.m(), a.n(), a.nb());
    let k = m.min(n);
    tau.clear();
    tau.resize(k, 0.0);
    if k == 0 {
        return Ok(());
    }
    let panels: Vec<(usize, usize)> = (0..k).step_by(nb).map(|j0| (j0, nb.min(k - j0))).collect();
    if grid.npcol() == 1 {
        factor_in_groups(grid, a, tau, &panels, opts)?;
    } else {
        factor_with_look_ahead(grid, a, tau, &panels, opts)?;
    }
    a.set_lost(false);
    Ok(())
}

/// The panels with one panel of look-ahead (several process columns), in
/// groups of [`GROUP_PANELS`] where the trailing matrix is wide enough
/// ([`GROUP_MIN_FAR_PANELS`]): the owner of the next panel updates its
/// columns by the group so far, factors it and starts sending it, so the
/// other process columns find it waiting; the rest of the trailing matrix
/// gets one update by the whole group, after its last panel, with inner
/// dimension 3·NB, which repays the waits inside a group (4096², NB 64,
/// AMD EPYC Zen, four interleaved runs against one panel at a time: 1x2
/// 29.8–30.2 vs 28.7–29.2 Gflop/s, 2x2 29.2–29.5 vs 27.0–28.0).
///
/// Inside a group the other process columns have nothing to update before
/// the next panel arrives, so a group's far update is postponed: at the
/// group's end W is computed and summed for all of its far columns, the
/// columns of the next group's panels are updated at once, and the rest a
/// few columns at a time while this process waits for the next group's
/// panels ([`receive_panel_working`]), the remainder at that group's end
/// (1x2, 4096², NB 64: the waits for panels fell from 0.14–0.20 s to
/// 0.04–0.06 s of 2.6–3.1 s).
fn factor_with_look_ahead(
    grid: &Grid,
    a: &mut DistMatrix,
    tau: &mut [f64],
    panels: &[(usize, usize)],
    opts: &QrOptions,
) -> Result<()> {
    let mycol = a.coords().1;
    let method = opts.panel.resolve(grid.nprow() as usize, a.m(), a.n());
    // The owner of a panel factors it one step ahead and starts sending it
    // along the process row at once (non-blocking). `sent` is the owner's
    // last broadcast still in flight (completed before the next).
    let mut ahead: Option<Panel> = None;
    let mut sent = None;
    if a.col_owner(0) == mycol {
        let p = factor_panel(grid, a, panels[0].0, panels[0].1, method)?;
        sent = start_row_send(grid, &p)?;
        ahead = Some(p);
    }
    let mut group = PanelGroup::default();
    let mut rest = panels;
    let mut step = 0;
    while !rest.is_empty() {
        let size = group_size(a, rest);
        let (members, tail) = rest.split_at(size);
        rest = tail;
        // The local columns right of the group.
        let (last, lw) = members[size - 1];
        let (beyond, all) = (a.local_cols_before(last + lw), a.local_cols());
        for (i, &(j0, jb)) in members.iter().enumerate() {
            profile::at_step(step as u64);
            step += 1;
            let panel = match ahead.take() {
                Some(mine) => mine,
                None => {
                    // (An earlier group's postponed update meanwhile.)
                    let lrows = a.local_rows() - a.local_rows_before(j0);
                    receive_panel_working(grid, a.col_owner(j0), (j0, jb, lrows), || group.work_postponed(a))?
                }
            };
            tau[j0..j0 + jb].copy_from_slice(&panel.tau());
            if i == 0 {
                group.start(panel, size * jb);
            } else {
                group.push(&panel);
            }
            // The panel factored next (the next group's first after the
            // group's last).
            let ends = i + 1 == size;
            match tail.first().filter(|_| ends).or(members.get(i + 1)).copied() {
                Some((n0, nw)) if a.col_owner(n0) == mycol => {
                    // Look-ahead: update and factor the next panel first.
                    let next = a.local_cols_before(n0)..a.local_cols_before(n0 + nw);
                    if ends {
                        // (The earlier group's postponed columns start
                        // with the next panel's: only those before it is
                        // factored, the rest once it is on its way.)
                        group.finish_postponed_before(a, next.end);
                    }
                    group.apply(grid, a, next.clone())?;
                    let p = factor_panel(grid, a, n0, nw, method)?;
                    if let Some(previous) = sent.take() {
                        grid.wait_broadcast(previous)?;
                    }
                    sent = start_row_send(grid, &p)?;
                    ahead = Some(p);
                    if ends {
                        group.finish_postponed(a);
                        group.apply(grid, a, beyond..next.start)?;
                        group.apply_postponing(grid, a, next.end..all, next_group_end(a, tail))?;
                    }
                }
                // (apply_postponing completes the earlier postponed update
                // first: this group's far columns are among its columns.)
                _ if ends => group.apply_postponing(grid, a, beyond..all, next_group_end(a, tail))?,
                // (Nothing of this process column's to update before the
                // group's next panel: the panel's coupling waits for the
                // next reduction.)
                _ => {}
            }
        }
    }
    group.finish_postponed(a);
    if let Some(last) = sent {
        grid.wait_broadcast(last)?;
    }
    Ok(())
}

/// The local column where the group formed from `panels` ends: the
/// columns before it get a group's far update at once, so that the next
/// group can factor its panels; the columns past it are postponed
/// (see [`PanelGroup::apply_postponing`]).
fn next_group_end(a: &DistMatrix, panels: &[(usize, usize)]) -> usize {
    if panels.is_empty() {
        return a.local_cols();
    }
    let (last, jb) = panels[group_size(a, panels) - 1];
    a.local_cols_before(last + jb)
}

/// How many of the next `panels` form a group: [`GROUP_PANELS`] where at
/// least [`GROUP_MIN_FAR_PANELS`] panels' worth of columns lie right of
/// them, else one (the plain right-looking step).
fn group_size(a: &DistMatrix, panels: &[(usize, usize)]) -> usize {
    let whole = GROUP_PANELS.min(panels.len());
    let (last, jb) = panels[whole - 1];
    if a.n() - (last + jb) >= GROUP_MIN_FAR_PANELS * a.nb() {
        whole
    } else {
        1
    }
}

/// Panels merged into one block reflector for the far trailing matrix
/// (see [`PanelGroup`]). Measured on 2x1, 4096² (NB 64), as CPU time of
/// one rank's local arithmetic in the factorization (robust to the other
/// work on a shared machine), against one panel at a time: 2 panels −9 %,
/// 3 panels −11 %, 4 about as 3, 6 less. OpenBLAS's trailing DGEMMs run
/// about 10 % faster at inner dimension 128 than at 64 and 3 % more at
/// 192, while every further panel of a group adds a narrow update inside
/// the group and T's flops grow with the width.
const GROUP_PANELS: usize = 3;

/// A group is formed only where at least this many panels' worth of
/// columns lie right of it: merging T costs `V₁ᵀ·V₂` over the local rows
/// (`2·lrows·NB²·3` flops for a group of three), which the faster update
/// repays only over enough columns (break-even near 5 panels' worth).
/// Narrower trailing matrices (the end of a square factorization, tall
/// and skinny matrices) are updated one panel at a time: on 2x1 at
/// 131072 × 256, where the coupling is about a fifth of the work, groups
/// of three took about 1.6 times as long (perf, CPU samples).
const GROUP_MIN_FAR_PANELS: usize = 8;

/// The panels in groups of [`GROUP_PANELS`] (one process column: every
/// process holds every column, so there is nothing to look ahead to).
/// Inside a group each panel's columns get the group's update so far
/// before it is factored; the columns right of the group then get one
/// update by all of its panels. (A group of one panel is the plain
/// right-looking step.)
fn factor_in_groups(
    grid: &Grid,
    a: &mut DistMatrix,
    tau: &mut [f64],
    panels: &[(usize, usize)],
    opts: &QrOptions,
) -> Result<()> {
    let method = opts.panel.resolve(grid.nprow() as usize, a.m(), a.n());
    let mut merged = PanelGroup::default();
    let mut rest = panels;
    while !rest.is_empty() {
        let (group, tail) = rest.split_at(group_size(a, rest));
        rest = tail;
        for (i, &(j0, jb)) in group.iter().enumerate() {
            if i > 0 {
                merged.apply(grid, a, a.local_cols_before(j0)..a.local_cols_before(j0 + jb))?;
            }
            let panel = factor_panel(grid, a, j0, jb, method)?;
            tau[j0..j0 + jb].copy_from_slice(&panel.tau());
            if i == 0 {
                merged.start(panel, group.len() * jb);
            } else {
                merged.push(&panel);
            }
        }
        let (last, jb) = group[group.len() - 1];
        merged.apply(grid, a, a.local_cols_before(last + jb)..a.local_cols())?;
    }
    Ok(())
}
