//! pdgeqrf_ft with TSQR panels (`ftla qr --ft --panel tsqr`) under real
//! SIGKILLs: the panel runs in phase 1 on the backed-up panel, so a kill in
//! any phase of a step is rebuilt as with the Householder panel, and the
//! factors pass the residual and checksum checks. (The whole fault matrix
//! runs with `scripts/fault-matrix.sh`, on the default panels.)

// (The helpers of full-tier tests are unused in the core tier.)
#![cfg_attr(not(feature = "full-tests"), allow(unused_imports, dead_code))]

mod common;

use common::{report, residuals_pass, Ft, Rebuilt};

/// 260×200 in 16-blocks: 13 panels (steps 0..=12) on a 2x2 grid.
fn qr() -> Ft {
    Ft::new("qr", &["--m", "260", "--n", "200", "--nb", "16", "--panel", "tsqr"])
}

#[cfg(feature = "full-tests")]
#[test]
fn kills_in_the_panel_and_update_phases_are_rebuilt_with_tsqr_panels() {
    for (kill, rank, step, phase) in [("1@3:panel", "1", 3, "panel"), ("2@7:update", "2", 7, "update")] {
        qr().survives("2x2", "0", kill, Rebuilt { ranks: rank, step, phase, mode: "spawn" });
    }
}

#[cfg(feature = "full-tests")]
#[test]
fn tsqr_panels_pass_the_checks_without_a_failure() {
    // (3x2: three process rows take part in each panel's reduction.)
    let (out, json) = qr().run(&["--grid", "3x2", "--check", "--verify"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(r.ok && residuals_pass(&r) && r.checksum_check.as_ref().is_some_and(|c| c.ok), "{r:?}");
}
