//! The block column of a step as it travels along the process rows, and
//! the look-ahead on one process row, worked in scratch while the step's
//! agreement runs: the owner of the next block column updates that column
//! and factors it, and the commit puts it in and starts sending it before
//! it updates the rest of its columns (as plain `pdpotrf` does), so that
//! the other process columns, updating theirs meanwhile, find it waiting
//! at the next step. (With several process rows the column's
//! factorization needs its process column's collectives: the commit does
//! it there, see `factor::CholSteps::commit`.)

use crate::blas::{self, Diag, Side, Trans, Uplo};
use crate::matrix::{pack, DistMatrix};
use crate::row_panel::RowPanel;

/// A factored block column, as its process column sends it along the
/// process rows: the INFO of its diagonal block (the order of the first
/// leading minor that is not positive definite; 0: none) and this process
/// row's rows of it from the diagonal block down (`lrows`×`jb`).
pub(crate) struct CholPanel {
    pub info: i64,
    pub rows: Vec<f64>,
}

impl RowPanel for CholPanel {
    /// The rows, then the INFO (last: a receiver pops it off instead of
    /// moving every row down).
    fn row_message(&self) -> Vec<f64> {
        let mut m = Vec::with_capacity(1 + self.rows.len());
        m.extend_from_slice(&self.rows);
        m.push(self.info as f64);
        m
    }

    fn row_message_len(jb: usize, lrows: usize) -> usize {
        1 + jb * lrows
    }

    fn from_row_message(_j0: usize, _jb: usize, _lrows: usize, mut message: Vec<f64>) -> CholPanel {
        let info = message.pop().map_or(0, |x| x as i64);
        CholPanel { info, rows: message }
    }
}

/// The next block column worked ahead on its owner (one process row):
/// its local columns `cols`, its rows from `top` on after this step's
/// update (`updated`: the committed state the commit writes), and
/// factored (`panel`).
pub(crate) struct Early {
    pub cols: std::ops::Range<usize>,
    pub top: usize,
    pub updated: Vec<f64>,
    pub panel: CholPanel,
}

/// Local, one process row, on the owner of block column `j1..j1+jb1`:
/// that column updated with the step's column `whole` (its rows from
/// global row `k0`, leading dimension `ld`, `kb` wide) and factored, in
/// scratch (`a` is only read: the commit writes both).
pub(crate) fn compute(
    a: &DistMatrix,
    (whole, ld, kb, k0): (&[f64], usize, usize, usize),
    (j1, jb1): (usize, usize),
) -> Early {
    let (lld, lr) = (a.lld(), a.local_rows());
    let c1 = a.local_cols_before(j1);
    let top = a.local_rows_before(j1);
    let h = lr - top;
    let mut updated = Vec::new();
    pack(a.local(), lld, top..lr, c1..c1 + jb1, &mut updated);
    // (One process row: every row is local, in global order.)
    let l = &whole[j1 - k0..];
    // The diagonal block's lower triangle (as the update leaves its upper
    // half), then the rows below it.
    blas::dsyrk(Uplo::Lower, Trans::No, jb1, kb, -1.0, l, ld, 1.0, &mut updated, h);
    if h > jb1 {
        let below = &whole[j1 + jb1 - k0..];
        blas::dgemm(Trans::No, Trans::Yes, h - jb1, jb1, kb, -1.0, below, ld, l, ld, 1.0, &mut updated[jb1..], h);
    }
    let mut rows = updated.clone();
    let mut info = 0i64;
    let j = blas::dpotrf(Uplo::Lower, jb1, &mut rows, h);
    if j > 0 {
        info = (j1 + j as usize) as i64;
    } else if h > jb1 {
        // (The rows below solved against the factored diagonal block, a
        // copy of it.)
        let mut l11 = vec![0.0; jb1 * jb1];
        for c in 0..jb1 {
            l11[c * jb1..(c + 1) * jb1].copy_from_slice(&rows[c * h..c * h + jb1]);
        }
        blas::dtrsm(
            Side::Right,
            Uplo::Lower,
            Trans::Yes,
            Diag::NonUnit,
            h - jb1,
            jb1,
            1.0,
            &l11,
            jb1,
            &mut rows[jb1..],
            h,
        );
    }
    Early { cols: c1..c1 + jb1, top, updated, panel: CholPanel { info, rows } }
}
