//! Aᵀ of a block-cyclic matrix (ScaLAPACK PDTRAN's job, for square blocks
//! starting on process (0, 0)): what the minimum-norm least squares
//! (M < N) factors.

use crate::error::Result;
use crate::matrix::DistMatrix;
use blacs_ft::Grid;

/// Tag of the transpose's messages.
const TAG: i32 = 0x7a;

/// Collective over the grid: Aᵀ (N×M) of `a` (M×N, square NB×NB blocks,
/// first block on process (0, 0), which the caller has checked), with the
/// same blocks. Block (I, J) of A, on process (I mod P, J mod Q), becomes
/// block (J, I) of Aᵀ on process (J mod P, I mod Q): each process packs
/// what goes to each other one, and the processes exchange in P·Q − 1
/// rounds of paired messages (round s: to rank + s, from rank − s).
/// Local memory: one more A, and one A's worth of messages.
pub(crate) fn transpose(grid: &Grid, a: &DistMatrix) -> Result<DistMatrix> {
    let (m, n, nb) = (a.m(), a.n(), a.nb());
    let mut t = DistMatrix::zeros(grid, n, m, nb, nb)?;
    let (p, q) = (grid.nprow() as usize, grid.npcol() as usize);
    let size = p * q;
    let me = grid.rank() as usize;
    let (mb_rows, nb_cols) = (m.div_ceil(nb), n.div_ceil(nb));
    let width = |b: usize, extent: usize| nb.min(extent - b * nb);
    // A's blocks (I, J) held by process `from` that go to process `to`, in
    // one order both sides know: I, then J, ascending.
    let blocks = |from: usize, to: usize| {
        let (fr, fc, tr, tc) = (from / q, from % q, to / q, to % q);
        let rows = (fr..mb_rows).step_by(p).filter(move |&i| i % q == tc);
        rows.flat_map(move |i| (fc..nb_cols).step_by(q).filter(move |&j| j % p == tr).map(move |j| (i, j)))
    };
    let len = |from: usize, to: usize| blocks(from, to).map(|(i, j)| width(i, m) * width(j, n)).sum::<usize>();
    // Packs my blocks for `to`, each transposed (Aᵀ's block, column-major).
    let pack = |to: usize| {
        let mut buf = Vec::with_capacity(len(me, to));
        let lda = a.lld();
        for (i, j) in blocks(me, to) {
            let (li0, lj0) = (a.local_rows_before(i * nb), a.local_cols_before(j * nb));
            let (bi, bj) = (width(i, m), width(j, n));
            for r in 0..bi {
                for c in 0..bj {
                    buf.push(a.local()[li0 + r + (lj0 + c) * lda]);
                }
            }
        }
        buf
    };
    // Unpacks what `from` sent into Aᵀ.
    let unpack = |t: &mut DistMatrix, from: usize, buf: &[f64]| {
        let ldt = t.lld();
        let mut at = 0;
        for (i, j) in blocks(from, me) {
            let (li0, lj0) = (t.local_rows_before(j * nb), t.local_cols_before(i * nb));
            let (bi, bj) = (width(i, m), width(j, n));
            for c in 0..bi {
                t.local_mut()[li0 + (lj0 + c) * ldt..li0 + (lj0 + c) * ldt + bj].copy_from_slice(&buf[at..at + bj]);
                at += bj;
            }
        }
    };
    let own = pack(me);
    unpack(&mut t, me, &own);
    let coords = |r: usize| ((r / q) as i32, (r % q) as i32);
    for s in 1..size {
        let (to, from) = ((me + s) % size, (me + size - s) % size);
        let send = pack(to);
        let mut recv = vec![0.0; len(from, me)];
        grid.exchange(&send, coords(to), &mut recv, coords(from), TAG)?;
        unpack(&mut t, from, &recv);
    }
    Ok(t)
}
