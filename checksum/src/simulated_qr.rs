//! The simulated fault-tolerant QR ([`crate::simulated_rebuild`]) on the
//! reverse-neighboring layout: after every committed step both invariants are
//! verified, then each process of the grid in turn, and one process in every
//! process row at once, is lost and rebuilt by the plans ([`crate::GroupRebuild`]);
//! two losses in one process row are refused.

use crate::checksum_layout::{ChecksumLayout, LayoutKind};
use crate::simulated_rebuild::{assert_refused, lose_and_rebuild, Sim};
use rand::rngs::StdRng as Rng;
use rand::seq::SliceRandom;
use rand::{Rng as _, SeedableRng};

/// Runs the whole factorization for one layout, checking and losing processes at every step.
fn run(m: usize, n: usize, nb: usize, p: usize, q: usize, rng: &mut Rng) -> f64 {
    let layout = ChecksumLayout::new(LayoutKind::ReverseNeighbor, m, n, nb, p, q).unwrap();
    let mut sim = Sim::new(layout.clone(), rng);
    let panels = m.min(n).div_ceil(nb);
    for k in 0..=panels {
        if k > 0 {
            sim.step(k - 1);
        }
        sim.verify_invariants();
        for pr in 0..p {
            for pc in 0..q {
                lose_and_rebuild(&mut sim, &[(pr, vec![pc])]);
            }
            // Two lost process columns of one row are refused.
            let mut two: Vec<usize> = (0..q).collect();
            two.shuffle(rng);
            two.truncate(2);
            two.sort_unstable();
            assert_refused(&layout, pr, &two);
        }
        // Simultaneous losses, one in each process row.
        let lost: Vec<_> = (0..p).map(|pr| (pr, vec![rng.random_range(0..q)])).collect();
        lose_and_rebuild(&mut sim, &lost);
    }
    sim.finish()
}

#[test]
fn simulated_ft_qr_keeps_both_invariants_and_rebuilds_any_lost_process() {
    let mut rng = Rng::seed_from_u64(0x5EED);
    let mut worst: f64 = 0.0;
    let mut runs = 0;
    for m in [1usize, 4, 7, 12] {
        for n in [1usize, 5, 9, 16] {
            for nb in [1usize, 2, 3, 5] {
                for p in [1usize, 2, 3] {
                    for q in [2usize, 3, 4] {
                        worst = worst.max(run(m, n, nb, p, q, &mut rng));
                        runs += 1;
                    }
                }
            }
        }
    }
    assert_eq!(runs, 576);
    // Rounding errors stay well below the tolerance (about 5% of it at worst), not just under it.
    assert!(worst < 0.25, "worst error / tolerance = {worst}");
}

#[test]
fn a_larger_matrix_on_a_wide_grid() {
    let mut rng = Rng::seed_from_u64(42);
    let worst = run(40, 37, 4, 3, 4, &mut rng);
    assert!(worst < 0.25, "worst error / tolerance = {worst}");
}

#[test]
fn random_shapes() {
    let mut rng = Rng::seed_from_u64(0x5A);
    let mut worst: f64 = 0.0;
    for _ in 0..24 {
        let (m, n) = (rng.random_range(1..=30usize), rng.random_range(1..=30usize));
        let (nb, p, q) = (rng.random_range(1..=4usize), rng.random_range(1..=3usize), rng.random_range(2..=6usize));
        worst = worst.max(run(m, n, nb, p, q, &mut rng));
    }
    assert!(worst < 0.25, "worst error / tolerance = {worst}");
}

#[test]
fn a_corrupted_checksum_is_detected() {
    let mut rng = Rng::seed_from_u64(9);
    let layout = ChecksumLayout::new(LayoutKind::ReverseNeighbor, 6, 8, 2, 2, 2).unwrap();
    let mut sim = Sim::new(layout, &mut rng);
    sim.step(0);
    sim.verify_invariants();
    let col = sim.layout.replica_block_cols(1, 0).unwrap()[0] * sim.layout.nb();
    sim.e[col * 6 + 3] += 1e-6;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sim.verify_invariants()));
    assert!(result.is_err(), "a perturbed checksum must fail verification");
}
