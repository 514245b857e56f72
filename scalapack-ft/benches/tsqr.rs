//! criterion benchmarks of the local TSQR panel kernel at the shape one
//! process sees in a 131072×256 QR on 2x1 (NB = 64): 65536 local rows.
//! Compares the local tall-skinny QR (LAPACK's recursive DGEQRT3) with the
//! whole TSQR panel of two processes run on one (local QRs, the stacked
//! R's QR and Householder reconstruction), and with the gathered
//! Householder panel it replaces (DGEQRT3 over both processes' rows), and
//! with the CholeskyQR2 panel of the same two processes.
//!
//! ```sh
//! cargo bench -p scalapack-ft --bench tsqr
//! ```

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use scalapack_ft::blas;
use scalapack_ft::qr::cholesky_qr::{finish, gram, pass2_message, read_pass1, read_pass2, solve_r, store};
use scalapack_ft::qr::tall_skinny::{
    factor_local, factor_stack, local_v, reconstruct, stack_block, top_q_block, tree_message,
};
use std::hint::black_box;

const ROWS: usize = 65536;
const NB: usize = 64;

fn data(len: usize, seed: u64) -> Vec<f64> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..len).map(|_| rng.random_range(-0.5..0.5)).collect()
}

/// The TSQR panel of `pieces` equal pieces of `a` (rows × NB each), all on
/// this process: what each process of a process column does, plus the
/// others' local QRs.
fn tsqr_panel(pieces: &mut [Vec<f64>], rows: usize) -> f64 {
    let slots = pieces.len();
    let factors: Vec<_> = pieces.iter_mut().map(|p| factor_local(rows, NB, p, rows)).collect();
    let msgs: Vec<_> = pieces.iter().zip(&factors).map(|(p, f)| tree_message(p, rows, f)).collect();
    let mut stack = vec![0.0; slots * NB * NB];
    for (slot, m) in msgs.iter().enumerate() {
        stack_block(&mut stack, slots, NB, slot, m);
    }
    let (r, q) = factor_stack(&mut stack, slots * NB, NB);
    let c_of = |slot: usize| -> Vec<f64> {
        (0..NB).flat_map(|c| q[c * slots * NB + slot * NB..c * slots * NB + slot * NB + NB].to_vec()).collect()
    };
    let rec = reconstruct(&top_q_block(NB, &msgs[0], &c_of(0)), NB, false);
    let mut v = vec![0.0; rows * NB];
    for (slot, (p, f)) in pieces.iter_mut().zip(&factors).enumerate() {
        local_v(p, rows, f, &c_of(slot), &rec, (slot == 0).then_some((&r[..], &rec.s[..])), &mut v);
    }
    v[0]
}

/// The CholeskyQR2 panel of `pieces` equal pieces (rows × NB each), all on
/// this process: both passes, the reconstruction and every piece's V.
fn cholqr2_panel(pieces: &mut [Vec<f64>], rows: usize) -> f64 {
    let slots = pieces.len();
    let all: Vec<f64> = pieces.iter().flat_map(|p| gram(rows, NB, p, rows)).collect();
    let r1 = read_pass1(&all, slots, NB).expect("a random panel");
    let mut qs = pieces.to_vec();
    let mut all = Vec::new();
    for (slot, q) in qs.iter_mut().enumerate() {
        solve_r(rows, NB, &r1, q);
        all.extend(pass2_message(rows, NB, Some(q), slot == 0));
    }
    let (g2, q1_top) = read_pass2(&all, slots, 0, NB).expect("a random panel");
    let f = finish(g2, q1_top, &r1, NB, false).expect("a random panel");
    for (slot, (p, q)) in pieces.iter_mut().zip(&mut qs).enumerate() {
        store(p, rows, rows, NB, q, &f, slot == 0);
    }
    pieces[0][0]
}

/// A whole panel of equal pieces on this process ([`tsqr_panel`],
/// [`cholqr2_panel`]).
type WholePanel = fn(&mut [Vec<f64>], usize) -> f64;

fn local_panel(c: &mut Criterion) {
    let mut g = c.benchmark_group("tsqr_panel");
    g.sample_size(10);
    let a0 = data(2 * ROWS * NB, 1);
    // (Throughput: the Householder flops of one process's share, 2·rows·NB².)
    g.throughput(Throughput::Elements((2 * ROWS * NB * NB) as u64));
    for piece in [512, 1024, 2048, 4096, ROWS] {
        g.bench_with_input(BenchmarkId::new("local_dgeqrt3_in_pieces", piece), &piece, |b, &piece| {
            let mut a = a0[..ROWS * NB].to_vec();
            let mut t = vec![0.0; NB * NB];
            b.iter(|| {
                a.copy_from_slice(&a0[..ROWS * NB]);
                for p0 in (0..ROWS).step_by(piece) {
                    blas::dgeqrt3(piece, NB, &mut a[p0..], ROWS, &mut t, NB);
                }
                black_box(a[0])
            })
        });
    }
    let whole_panels: [(&str, WholePanel); 2] =
        [("tsqr_two_pieces_per_piece", tsqr_panel), ("cholqr2_two_pieces_per_piece", cholqr2_panel)];
    for (name, panel) in whole_panels {
        g.bench_with_input(BenchmarkId::new(name, ROWS), &ROWS, |b, &rows| {
            let mut pieces = vec![a0[..rows * NB].to_vec(), a0[rows * NB..].to_vec()];
            b.iter(|| {
                pieces[0].copy_from_slice(&a0[..rows * NB]);
                pieces[1].copy_from_slice(&a0[rows * NB..]);
                black_box(panel(&mut pieces, rows))
            })
        });
    }
    g.bench_with_input(BenchmarkId::new("gathered_dgeqrt3", 2 * ROWS), &ROWS, |b, &rows| {
        let mut a = a0.clone();
        let mut t = vec![0.0; NB * NB];
        b.iter(|| {
            a.copy_from_slice(&a0);
            black_box(blas::dgeqrt3(2 * rows, NB, &mut a, 2 * rows, &mut t, NB))
        })
    });
    g.finish();
}

/// The crossover `auto` uses: on two processes, with `rows` local rows
/// each, the whole TSQR panel of both (its time halved is one process's
/// share, but for the small redundant part) against DGEQRT3 over the
/// gathered 2·rows (which every process of the gathered panel runs).
fn crossover(c: &mut Criterion) {
    let mut g = c.benchmark_group("panel_crossover");
    g.sample_size(10);
    for rows in [512, 1024, 2048, 4096, 8192, 16384] {
        let a0 = data(2 * rows * NB, 2);
        g.bench_with_input(BenchmarkId::new("tsqr_both_processes", rows), &rows, |b, &rows| {
            let mut pieces = vec![a0[..rows * NB].to_vec(), a0[rows * NB..].to_vec()];
            b.iter(|| {
                pieces[0].copy_from_slice(&a0[..rows * NB]);
                pieces[1].copy_from_slice(&a0[rows * NB..]);
                black_box(tsqr_panel(&mut pieces, rows))
            })
        });
        g.bench_with_input(BenchmarkId::new("gathered_dgeqrt3", rows), &rows, |b, &rows| {
            let mut a = a0.clone();
            let mut t = vec![0.0; NB * NB];
            b.iter(|| {
                a.copy_from_slice(&a0);
                black_box(blas::dgeqrt3(2 * rows, NB, &mut a, 2 * rows, &mut t, NB))
            })
        });
    }
    g.finish();
}

criterion_group!(tsqr, local_panel, crossover);
criterion_main!(tsqr);
