//! The TSQR panel across a process column: local tall-skinny QR, a flat
//! reduction of the R factors (one all-gather down the process column),
//! and Householder reconstruction, so that the panel leaves ScaLAPACK's V,
//! T and tau (see [`super::tall_skinny`] for the arithmetic and where R's
//! signs differ from ScaLAPACK's).

use super::reflectors::Panel;
use super::tall_skinny::{factor_local, factor_stack, local_v, reconstruct, stack_block, top_q_block, tree_message};
use crate::error::Result;
use crate::matrix::DistMatrix;
use blacs_ft::{Grid, Scope};

/// Factors panel `j0..j0+jb` of `a` in place (R on and above the diagonal,
/// V below it) by TSQR and returns its reflectors. Called by every process
/// of the owning process column; one all-gather of `2·jb²` values per
/// process down that column.
///
/// Every process of the column factors the stacked R factors and
/// reconstructs U, S and T from the same gathered data with the same
/// kernels, so all hold the same T; each then forms only its own rows of V.
pub fn tsqr_panel(grid: &Grid, a: &mut DistMatrix, j0: usize, jb: usize) -> Result<Panel> {
    let (lr0, lc0, ld) = (a.local_rows_before(j0), a.local_cols_before(j0), a.lld());
    let rows = a.local_rows() - lr0;
    let nprow = grid.nprow() as usize;
    let top = a.row_owner(j0);
    let slot_of = |pr: usize| (pr + nprow - top) % nprow;
    let myslot = slot_of(a.coords().0);
    // Rows j0..m held by process row `pr` (every process can count them).
    let base = lr0 + lc0 * ld;
    let lda = ld.max(1);
    let local = factor_local(rows, jb, &mut a.local_mut()[base..], lda);
    let message = tree_message(&a.local()[base..], lda, &local);
    let all = grid.allgather(Scope::Column, &message)?;
    let block_of = |pr: usize| &all[pr * message.len()..(pr + 1) * message.len()];
    let srows = nprow * jb;
    let mut stack = vec![0.0; srows * jb];
    for pr in 0..nprow {
        stack_block(&mut stack, nprow, jb, slot_of(pr), block_of(pr));
    }
    let (r, q) = factor_stack(&mut stack, srows, jb);
    let c_of = |slot: usize| -> Vec<f64> {
        let mut c = vec![0.0; jb * jb];
        for col in 0..jb {
            let from = col * srows + slot * jb;
            c[col * jb..(col + 1) * jb].copy_from_slice(&q[from..from + jb]);
        }
        c
    };
    // (The matrix's last row in this panel: its last column has nothing below.)
    let ends_matrix = a.m() - j0 == jb;
    let rec = reconstruct(&top_q_block(jb, block_of(top), &c_of(0)), jb, ends_matrix);
    let mut v = vec![0.0; rows * jb];
    if rows > 0 {
        let panel = &mut a.local_mut()[base..];
        local_v(panel, lda, &local, &c_of(myslot), &rec, (myslot == 0).then_some((&r[..], &rec.s[..])), &mut v);
    }
    Ok(Panel { j0, jb, v, lrows: rows, t: rec.t })
}
