//! `--nb auto`: a block size that fits the kernel, from a short probe of
//! the local DGEMM at the inner dimensions a factorization's updates have.
//!
//! The probe runs once, where `ftla` starts (its launcher), and the choice
//! travels to every process of the job in [`NB_VAR`] (the launcher passes
//! it on, to replacements too): every process of a job, and a job restarted
//! by the same launcher, uses the same NB. A process started by hand with
//! `--nb auto` and without the variable refuses to guess.

use crate::cli::GridShape;
use blacs_ft::launch::inside_mpi;
pub use blacs_ft::launch::NB_VAR;
use scalapack_ft::blas::{self, Trans};
use std::time::Instant;

/// The block sizes `auto` chooses from (the default, 64, first).
const CANDIDATES: [usize; 3] = [64, 128, 256];
/// A larger NB must be this much faster to be chosen.
const WITHIN: f64 = 0.95;

/// The block size for an `m`×`n` matrix on `grid`: [`NB_VAR`]'s inside a
/// job, else measured now (and put in [`NB_VAR`] for the job), said on
/// stderr.
pub fn choose(grid: GridShape, m: usize, n: usize) -> Result<usize, String> {
    if let Ok(v) = std::env::var(NB_VAR) {
        if !v.is_empty() {
            return v.parse::<usize>().ok().filter(|&nb| nb >= 1).ok_or(format!("{NB_VAR}={v} is not a block size"));
        }
    }
    if inside_mpi() {
        return Err(format!(
            "--nb auto is chosen by ftla's launcher (in {NB_VAR}); started otherwise, give NB or set {NB_VAR}"
        ));
    }
    blas::use_single_thread();
    let rates: Vec<f64> = CANDIDATES.iter().map(|&k| dgemm_gflops(k)).collect();
    let best = rates.iter().copied().fold(0.0, f64::max);
    let fits = CANDIDATES.iter().zip(&rates).find(|&(_, &r)| r >= WITHIN * best).map_or(64, |(&k, _)| k);
    // (A matrix of a few blocks per process: smaller blocks keep the work
    // spread.)
    // (`--input`: its shape is not known here.)
    let share = m.min(n) / (4 * grid.p.max(grid.q).max(1) as usize);
    let nb = match share {
        _ if m.min(n) == 0 => fits,
        s if s >= CANDIDATES[0] => fits.min(s),
        s => (s / 8 * 8).max(8),
    };
    let said: Vec<String> = CANDIDATES.iter().zip(&rates).map(|(k, r)| format!("{k}: {r:.1}")).collect();
    eprintln!(
        "ftla: --nb auto: NB {nb} (DGEMM Gflop/s by inner dimension, one thread, OpenBLAS kernel {}: {})",
        blas::kernel_name(),
        said.join(", ")
    );
    std::env::set_var(NB_VAR, nb.to_string());
    Ok(nb)
}

/// The local DGEMM rate of the trailing update's shape: 768×768 by an
/// inner dimension of `k` (after one warm-up call).
fn dgemm_gflops(k: usize) -> f64 {
    let s = 768;
    let a: Vec<f64> = (0..s * k).map(|i| ((i * 7919) % 1000) as f64 * 1e-3 - 0.5).collect();
    let b: Vec<f64> = (0..k * s).map(|i| ((i * 104_729) % 1000) as f64 * 1e-3 - 0.5).collect();
    let mut c = vec![0.0; s * s];
    blas::dgemm(Trans::No, Trans::No, s, s, k, -1.0, &a, s, &b, k, 1.0, &mut c, s);
    // (About the same flops for every k; the best of three timings, as a
    // shared machine slows some down.)
    let reps = (2 * 256 / k).max(1);
    let best = (0..3)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..reps {
                blas::dgemm(Trans::No, Trans::No, s, s, k, -1.0, &a, s, &b, k, 1.0, &mut c, s);
            }
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    2.0 * (s * s * k * reps) as f64 / best / 1e9
}
