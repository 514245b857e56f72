//! The simulated fault-tolerant QR ([`crate::simulated_rebuild`]) on the rotating
//! layout: after every committed step both invariants are verified, then sets of up
//! to `f` processes of one process row are lost and rebuilt by the plans
//! ([`crate::GroupRebuild`], [`crate::ErasurePlan`]); `f + 1` losses are refused.

use crate::checksum_layout::{ChecksumLayout, LayoutKind};
use crate::encode::encode_group;
use crate::simulated_rebuild::{assert_refused, lose_and_rebuild, Sim};
use crate::weights::combinations;
use rand::rngs::StdRng as Rng;
use rand::seq::SliceRandom;
use rand::{Rng as _, SeedableRng};

/// Runs the whole factorization for one layout, losing up to `f` processes of a row at every step.
fn run(m: usize, n: usize, nb: usize, p: usize, q: usize, f: usize, rng: &mut Rng) -> f64 {
    let layout = ChecksumLayout::new(LayoutKind::Rotating { checksums: f }, m, n, nb, p, q).unwrap();
    let mut sim = Sim::new(layout.clone(), rng);
    let panels = m.min(n).div_ceil(nb);
    for k in 0..=panels {
        if k > 0 {
            sim.step(k - 1);
        }
        sim.verify_invariants();
        for pr in 0..p {
            // Every set of 1 to f process columns (a sample of 12 of each size when there
            // are more), then one set of f + 1, which must be refused.
            for size in 1..=f {
                let mut sets: Vec<Vec<usize>> = combinations(q, size).collect();
                sets.shuffle(rng);
                for cols in sets.into_iter().take(12) {
                    lose_and_rebuild(&mut sim, &[(pr, cols)]);
                }
            }
            if f < q {
                let mut too_many: Vec<usize> = (0..q).collect();
                too_many.shuffle(rng);
                too_many.truncate(f + 1);
                too_many.sort_unstable();
                assert_refused(&layout, pr, &too_many);
            }
        }
        // Losses in every process row at once, f of them in a random one.
        let lost: Vec<_> = (0..p)
            .map(|pr| {
                let mut cols: Vec<usize> = (0..q).collect();
                cols.shuffle(rng);
                cols.truncate(rng.random_range(1..=f));
                cols.sort_unstable();
                (pr, cols)
            })
            .collect();
        lose_and_rebuild(&mut sim, &lost);
    }
    sim.finish()
}

#[test]
fn simulated_ft_qr_on_the_rotating_layout_rebuilds_any_f_lost_processes_of_a_row() {
    let mut rng = Rng::seed_from_u64(0xF00D);
    let mut worst: f64 = 0.0;
    let mut runs = 0;
    for q in 2..=8usize {
        for f in 1..=(q - 1).min(3) {
            for m in [1usize, 6, 11] {
                for n in [1usize, 7, 12] {
                    for nb in [1usize, 2, 3] {
                        for p in [1usize, 2] {
                            worst = worst.max(run(m, n, nb, p, q, f, &mut rng));
                            runs += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(runs, 18 * 54);
    // Rounding errors stay well below the tolerance, not just under it.
    assert!(worst < 0.25, "worst error / tolerance = {worst}");
}

#[test]
fn random_shapes_on_grids_up_to_eight_columns() {
    let mut rng = Rng::seed_from_u64(28);
    let mut worst: f64 = 0.0;
    for _ in 0..24 {
        let q = rng.random_range(2..=8usize);
        let f = rng.random_range(1..=(q - 1).min(3));
        let nb = rng.random_range(1..=4usize);
        let (m, n) = (rng.random_range(1..=30usize), rng.random_range(1..=30usize));
        let p = rng.random_range(1..=3usize);
        worst = worst.max(run(m, n, nb, p, q, f, &mut rng));
    }
    assert!(worst < 0.25, "worst error / tolerance = {worst}");
}

#[test]
fn a_larger_matrix_with_three_checksums() {
    let mut rng = Rng::seed_from_u64(7);
    let worst = run(40, 37, 4, 3, 7, 3, &mut rng);
    assert!(worst < 0.25, "worst error / tolerance = {worst}");
}

#[test]
fn a_corrupted_weighted_checksum_is_detected() {
    let mut rng = Rng::seed_from_u64(5);
    let layout = ChecksumLayout::new(LayoutKind::Rotating { checksums: 2 }, 6, 8, 2, 2, 4).unwrap();
    let mut sim = Sim::new(layout, &mut rng);
    sim.step(0);
    sim.verify_invariants();
    let col = sim.layout.replica_block_cols(1, 1).unwrap()[0] * sim.layout.nb();
    sim.e[col * 6 + 3] += 1e-6;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sim.verify_invariants()));
    assert!(result.is_err(), "a perturbed checksum must fail verification");
}

#[test]
fn with_one_checksum_the_encoding_is_the_plain_sum() {
    let mut rng = Rng::seed_from_u64(6);
    let layout = ChecksumLayout::new(LayoutKind::Rotating { checksums: 1 }, 5, 9, 2, 1, 4).unwrap();
    let sim = Sim::new(layout.clone(), &mut rng);
    for g in 0..layout.groups() {
        let blocks: Vec<&[f64]> = layout.group_members(g).unwrap().map(|j| sim.block(j)).collect();
        let sum = encode_group(&blocks, 5, 2, 5).unwrap();
        assert_eq!(sim.block(layout.replica_block_cols(g, 0).unwrap()[0]), sum.as_slice());
    }
}
