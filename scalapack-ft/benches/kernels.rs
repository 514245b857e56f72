//! criterion benchmarks of the local kernels that bound the speed of the
//! distributed factorizations, at the shapes one process sees in a
//! 4096² factorization on 1×2 (NB = 64): the panel factorization, the
//! trailing update, and the checksum encoding and rebuild.
//!
//! ```sh
//! cargo bench -p scalapack-ft --bench kernels
//! ```

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use scalapack_ft::blas::{self, Diag, Side, Trans, Uplo};
use std::hint::black_box;

/// Local rows of a 4096-row matrix on one process row, and the block size.
const ROWS: usize = 4096;
const NB: usize = 64;

fn data(len: usize, seed: u64) -> Vec<f64> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..len).map(|_| rng.random_range(-0.5..0.5)).collect()
}

fn panel_factorization(c: &mut Criterion) {
    let mut g = c.benchmark_group("panel");
    for rows in [ROWS / 2, ROWS] {
        let a0 = data(rows * NB, 1);
        g.throughput(Throughput::Elements((rows * NB) as u64));
        g.bench_with_input(BenchmarkId::new("dgeqrt3", rows), &rows, |b, &rows| {
            let mut a = a0.clone();
            let mut t = vec![0.0; NB * NB];
            b.iter(|| {
                a.copy_from_slice(&a0);
                black_box(blas::dgeqrt3(rows, NB, &mut a, rows, &mut t, NB))
            })
        });
        g.bench_with_input(BenchmarkId::new("dgetrf", rows), &rows, |b, &rows| {
            let mut a = a0.clone();
            let mut ipiv = vec![0i32; NB];
            b.iter(|| {
                a.copy_from_slice(&a0);
                black_box(blas::dgetrf(rows, NB, &mut a, rows, &mut ipiv))
            })
        });
    }
    g.finish();
}

fn trailing_update(c: &mut Criterion) {
    let mut g = c.benchmark_group("trailing_update");
    let cols = 1024;
    let v = data(ROWS * NB, 2);
    let t = data(NB * NB, 3);
    let c0 = data(ROWS * cols, 4);
    // (Throughput in flops.)
    g.throughput(Throughput::Elements((4 * ROWS * cols * NB) as u64));
    // QR: C -= V·(Tᵀ·(Vᵀ·C)), as PDLARFB applies a block reflector.
    g.bench_function("qr_block_reflector", |b| {
        let mut cm = c0.clone();
        let mut w = vec![0.0; NB * cols];
        b.iter(|| {
            blas::dgemm(Trans::Yes, Trans::No, NB, cols, ROWS, 1.0, &v, ROWS, &cm, ROWS, 0.0, &mut w, NB);
            blas::dtrmm(Side::Left, Uplo::Upper, Trans::Yes, Diag::NonUnit, NB, cols, 1.0, &t, NB, &mut w, NB);
            blas::dgemm(Trans::No, Trans::No, ROWS, cols, NB, -1.0, &v, ROWS, &w, NB, 1.0, &mut cm, ROWS);
            black_box(cm[0])
        })
    });
    // LU: C -= L·U.
    g.throughput(Throughput::Elements((2 * ROWS * cols * NB) as u64));
    g.bench_function("lu_rank_nb_update", |b| {
        let mut cm = c0.clone();
        let u = data(NB * cols, 5);
        b.iter(|| {
            blas::dgemm(Trans::No, Trans::No, ROWS, cols, NB, -1.0, &v, ROWS, &u, NB, 1.0, &mut cm, ROWS);
            black_box(cm[0])
        })
    });
    g.finish();
}

fn checksums(c: &mut Criterion) {
    let mut g = c.benchmark_group("checksum");
    let q = 4;
    let blocks: Vec<Vec<f64>> = (0..q).map(|k| data(ROWS * NB, 10 + k as u64)).collect();
    let refs: Vec<&[f64]> = blocks.iter().map(Vec::as_slice).collect();
    g.throughput(Throughput::Elements((q * ROWS * NB) as u64));
    g.bench_function("encode_group", |b| {
        b.iter(|| black_box(checksum::encode_group(&refs, ROWS, NB, ROWS).expect("shapes")))
    });
    // The plain-sum rebuild of one lost block: the checksum minus the survivors' sum.
    let sum = checksum::encode_group(&refs, ROWS, NB, ROWS).expect("shapes");
    let survivors = checksum::encode_group(&refs[1..], ROWS, NB, ROWS).expect("shapes");
    g.bench_function("rebuild_lost_block", |b| {
        let mut block = sum.clone();
        b.iter(|| {
            block.copy_from_slice(&sum);
            checksum::sub_block(&mut block, &survivors, ROWS, NB, ROWS).expect("shapes");
            black_box(block[0])
        })
    });
    // Two erased blocks of a group with two weighted checksums: the 2 × 2 solve per entry.
    let weights = checksum::CodeWeights::new(2, q).expect("weights");
    let erased = [checksum::GroupBlock::Data(0), checksum::GroupBlock::Data(1)];
    let plan = checksum::ErasurePlan::new(&weights, q, &erased).expect("plan");
    g.bench_function("solve_two_erasures", |b| {
        b.iter(|| black_box(plan.solve(&[&sum, &survivors], ROWS * NB).expect("shapes")))
    });
    g.finish();
}

criterion_group!(kernels, panel_factorization, trailing_update, checksums);
criterion_main!(kernels);
