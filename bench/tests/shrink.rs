//! `--recovery shrink` under real SIGKILLs: once no hot spare is left the
//! survivors go on as a smaller grid (FT-MPI's SHRINK), the lost blocks
//! rebuilt onto survivors and every block moved to its owner on the new
//! grid; the survivor left over parks as a spare and takes the next loss;
//! a kill while the blocks move; the smallest grid the layout allows;
//! CG, whose vectors move with A's blocks.

// (The helpers of full-tier tests are unused in the core tier.)
#![cfg_attr(not(feature = "full-tests"), allow(unused_imports, dead_code))]

mod common;

use common::{report, residuals_pass, Ft};
use ftla_bench::report::FactorReport;

/// 384×384 in 16-blocks: 24 steps.
const SHAPE: [&str; 6] = ["--m", "384", "--n", "384", "--nb", "16"];

fn run(op: &'static str, args: &[&str]) -> (harness::Captured, Option<FactorReport>) {
    Ft::new(op, &SHAPE).with(&["--recovery", "shrink", "--check", "--verify"]).run(args)
}

/// The recoveries' modes and, for the shrinks, their grids.
fn shrinks(r: &FactorReport) -> Vec<String> {
    let recoveries = r.recoveries.clone().unwrap_or_default();
    recoveries
        .iter()
        .map(|x| match (x.grid_before, x.grid_after) {
            (Some(b), Some(a)) => format!("{} {b}->{a}", x.mode),
            _ => x.mode.clone(),
        })
        .collect()
}

/// 2x3: rank 4 dies → 2x2 and a survivor left over, which parks; rank 1
/// of the 2x2 grid dies → the parked survivor takes its place; rank 2
/// dies → 1x3. The result is right and its checksums consistent on the
/// grid it ends on.
fn three_losses(op: &'static str) {
    let kill = "4@5:update,1@10:update,2@15:panel";
    let (out, json) = run(op, &["--grid", "2x3", "--kill", kill]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(residuals_pass(&r) && r.ok, "{r:?}");
    assert!(r.checksum_check.as_ref().is_some_and(|c| c.ok), "{r:?}");
    assert_eq!(shrinks(&r), ["shrink 2x3->2x2", "spare", "shrink 2x2->1x3"], "{r:?}");
    assert_eq!((r.grid, r.final_grid.map(|g| g.to_string())), ([2, 3], Some("1x3".to_string())), "{r:?}");
    let recoveries = r.recoveries.clone().unwrap_or_default();
    let ranks: Vec<(Vec<i32>, u64)> = recoveries.iter().map(|x| (x.ranks.clone(), x.step)).collect();
    assert_eq!(ranks, [(vec![4], 5), (vec![1], 10), (vec![2], 15)], "{r:?}");
    for x in recoveries.iter().filter(|x| x.mode == "shrink") {
        assert!(x.redistribute_ms.is_some_and(|ms| ms > 0.0 && ms <= x.rebuild_ms), "{r:?}");
    }
    assert!(out.stdout.contains("on 2x3 → 1x3 with checksums"), "{}", out.stdout);
    assert!(out.stdout.contains("by shrink 2x3 → 2x2"), "{}", out.stdout);
}

#[test]
fn qr_shrinks_twice_and_the_survivor_left_over_takes_a_loss_between() {
    three_losses("qr");
}

#[cfg(feature = "full-tests")]
#[test]
fn lu_shrinks_twice_and_the_survivor_left_over_takes_a_loss_between() {
    three_losses("lu");
}

#[cfg(feature = "full-tests")]
#[test]
fn cholesky_shrinks_twice_and_the_survivor_left_over_takes_a_loss_between() {
    three_losses("chol");
}

#[test]
fn cg_shrinks_twice_with_its_vectors_and_the_survivor_left_over_takes_a_loss_between() {
    // CG's vectors (b, x, r, p and diag(A)⁻¹, the same on every process of
    // a process row) move with A's blocks; the iterates go on from the
    // committed iteration on each grid.
    let cg = Ft::new("cg", &["--n", "400", "--nb", "16", "--jacobi"]);
    let kill = "4@3:matvec,1@6:dot,2@9:matvec";
    let (out, json) = cg.with(&["--recovery", "shrink", "--verify"]).run(&["--grid", "2x3", "--kill", kill]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(residuals_pass(&r) && r.ok, "{r:?}");
    assert!(r.relative_residual.is_some_and(|v| v < 1e-7), "{r:?}");
    assert!(r.checksum_check.as_ref().is_some_and(|c| c.ok), "{r:?}");
    assert_eq!(shrinks(&r), ["shrink 2x3->2x2", "spare", "shrink 2x2->1x3"], "{r:?}");
    assert_eq!(r.final_grid.map(|g| g.to_string()), Some("1x3".to_string()), "{r:?}");
}

/// `ftla OP --ft --solve` (QR: `--lstsq`) on 2x3 whose solve (kill
/// operation `solve`) loses rank 4 (→ 2x2, the protected factors and B
/// moved), then rank 1 (the survivor left over takes its place), then
/// rank 2 (→ 1x3): the solve's residual passes on the grid it ends on.
fn a_solve_shrinks_with_its_factors(op: &'static str, solve: &str, shape: &[&str]) {
    let kill = format!("4@{solve}:3:update,1@{solve}:20:update,2@{solve}:30:bcast");
    let extra = if op == "qr" { "--lstsq" } else { "--solve" };
    let ft = Ft::new(op, shape).with(&["--recovery", "shrink", "--check", "--verify", extra]);
    let (out, json) = ft.run(&["--grid", "2x3", "--kill", &kill]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(residuals_pass(&r) && r.ok, "{r:?}");
    assert!(r.solve_residual.or(r.lstsq_residual).is_some(), "{r:?}");
    assert!(r.checksum_check.as_ref().is_some_and(|c| c.ok), "{r:?}");
    assert_eq!(shrinks(&r), ["shrink 2x3->2x2", "spare", "shrink 2x2->1x3"], "{r:?}");
    assert_eq!(r.final_grid.map(|g| g.to_string()), Some("1x3".to_string()), "{r:?}");
}

#[test]
fn an_lu_solve_shrinks_and_its_protected_factors_move_with_it() {
    a_solve_shrinks_with_its_factors("lu", "getrs", &SHAPE);
}

#[cfg(feature = "full-tests")]
#[test]
fn a_cholesky_solve_shrinks_and_its_protected_factors_move_with_it() {
    a_solve_shrinks_with_its_factors("chol", "potrs", &SHAPE);
}

#[cfg(feature = "full-tests")]
#[test]
fn a_least_squares_solve_shrinks_and_its_protected_factors_move_with_it() {
    a_solve_shrinks_with_its_factors("qr", "gels", &["--m", "512", "--n", "384", "--nb", "16", "--nrhs", "3"]);
}

#[cfg(feature = "full-tests")]
#[test]
fn a_loss_while_a_solve_and_its_factors_move_is_recovered_from_the_grid_before() {
    let ft = Ft::new("lu", &SHAPE).with(&["--recovery", "shrink", "--check", "--verify", "--solve", "--nrhs", "5"]);
    let (out, json) = ft.run(&["--grid", "2x3", "--kill", "4@getrs:3:update,0@repair:1:redistribute"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(residuals_pass(&r) && r.ok && r.solve_residual.is_some(), "{r:?}");
    assert_eq!(shrinks(&r), ["shrink 2x3->2x2"], "{r:?}");
    assert_eq!(r.recoveries.as_ref().map(|x| x[0].ranks.clone()), Some(vec![0, 4]), "{r:?}");
}

#[test]
fn a_loss_between_the_factorization_and_the_solve_shrinks_and_moves_the_kept_factors() {
    // Rank 4 dies between the calls (met at the solve's start): the grid
    // shrinks there, the protected factors move onto 2x2, and the program
    // runs its body again, B made on the new grid; the survivor left over
    // parks, and takes the place of rank 0 lost in the solve.
    let ft = Ft::new("lu", &SHAPE).with(&["--recovery", "shrink", "--check", "--verify", "--solve"]);
    let (out, json) = ft.run(&["--grid", "2x3", "--kill", "4@app:0,0@getrs:9:update"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(residuals_pass(&r) && r.ok && r.solve_residual.is_some(), "{r:?}");
    let restarts = r.restart_repairs.clone().unwrap_or_default();
    let grids: Vec<String> = restarts
        .iter()
        .map(|x| {
            format!(
                "{} {}->{}",
                x.mode,
                x.grid_before.map_or("?".into(), |g| g.to_string()),
                x.grid_after.map_or("?".into(), |g| g.to_string())
            )
        })
        .collect();
    assert_eq!(grids, ["shrink 2x3->2x2"], "{r:?}");
    assert_eq!(shrinks(&r), ["spare"], "{r:?}");
    assert_eq!(r.final_grid.map(|g| g.to_string()), Some("2x2".to_string()), "{r:?}");
}

#[cfg(feature = "full-tests")]
#[test]
fn a_loss_before_the_checksums_exist_shrinks_and_the_call_starts_again() {
    let (out, json) = run("qr", &["--grid", "2x3", "--kill", "2@0:encode"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(residuals_pass(&r) && r.ok, "{r:?}");
    assert_eq!(r.restarts, Some(1), "{r:?}");
    assert_eq!(r.final_grid.map(|g| g.to_string()), Some("2x2".to_string()), "{r:?}");
}

#[cfg(feature = "full-tests")]
#[test]
fn a_least_squares_factorization_that_keeps_its_grid_starts_again_on_a_smaller_one() {
    // pdgels_ft's B is not protected during its factorization, which keeps
    // its grid: the loss ends the call, the grid shrinks between calls,
    // and the body runs again on 2x2 with A and B made there.
    let ft = Ft::new("qr", &["--m", "300", "--n", "200", "--nb", "16"]);
    let (out, json) =
        ft.with(&["--recovery", "shrink", "--check", "--lstsq"]).run(&["--grid", "2x3", "--kill", "4@3:bcast"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("the grid shrank 2x3 → 2x2"), "{}", out.stdout);
    let r = report(json, &out);
    assert!(residuals_pass(&r) && r.ok && r.lstsq_residual.is_some(), "{r:?}");
    assert_eq!((r.restarts, r.final_grid.map(|g| g.to_string())), (Some(1), Some("2x2".to_string())), "{r:?}");
}

#[test]
fn a_spare_stays_parked_through_a_shrink_and_takes_the_next_loss() {
    // 2x3 and one spare; ranks 2 and 5 die together: the spare cannot
    // take both, so the survivors shrink to 2x2 (their four fill it) and
    // the spare stays parked; it takes the next loss; the one after it
    // shrinks again.
    let kill = "5@3:bcast,2@3:bcast,1@8:update/1,2@12:panel/2";
    let (out, json) = run("qr", &["--grid", "2x3", "--spares", "1", "--kill", kill]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(residuals_pass(&r) && r.ok, "{r:?}");
    assert_eq!(shrinks(&r), ["shrink 2x3->2x2", "spare", "shrink 2x2->1x3"], "{r:?}");
    assert_eq!(r.recoveries.as_ref().map(|x| x[0].ranks.clone()), Some(vec![2, 5]), "{r:?}");
}

#[test]
fn a_loss_while_the_blocks_move_is_recovered_from_the_grid_before() {
    // Rank 0 of the new 2x2 grid (rank 0 of the 2x3 one) dies while the
    // blocks move: nothing of the 2x3 grid had changed, so its blocks are
    // rebuilt too (one loss in each process row), in one recovery.
    let (out, json) = run("lu", &["--grid", "2x3", "--kill", "4@5:update,0@repair:1:redistribute"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("injecting SIGKILL into rank 0 at repair:1:redistribute"), "{}", out.stderr);
    let r = report(json, &out);
    assert!(residuals_pass(&r) && r.ok, "{r:?}");
    assert_eq!(shrinks(&r), ["shrink 2x3->2x2"], "{r:?}");
    assert_eq!(r.recoveries.as_ref().map(|x| x[0].ranks.clone()), Some(vec![0, 4]), "{r:?}");
}

#[test]
fn below_the_smallest_grid_the_loss_is_reported_unrecoverable() {
    // 1x2 losing one: a single process cannot keep two process columns.
    let (out, _) = run("qr", &["--grid", "1x2", "--kill", "1@5:update"]);
    assert_eq!(out.code, Some(3), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("only 1 process(es) of the 1x2 grid are left"), "{}", out.stdout);
}

#[cfg(feature = "full-tests")]
#[test]
fn two_losses_of_one_row_while_the_blocks_move_are_unrecoverable() {
    // Rank 3 of the 2x2 grid is rank 5 of the 2x3 one: with rank 4, two
    // losses in process row 1 of the grid the blocks are still on.
    let (out, _) = run("qr", &["--grid", "2x3", "--kill", "4@5:update,3@repair:1:redistribute"]);
    assert_eq!(out.code, Some(3), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("ranks 4 and 5 of process row 1 were both lost"), "{}", out.stdout);
}

#[cfg(feature = "full-tests")]
#[test]
fn the_rotating_layout_shrinks_onto_enough_columns_for_its_checksums() {
    // Two checksums per row: at least three process columns; 2x4 → 2x3.
    let (out, json) = run("qr", &["--grid", "2x4", "--layout", "rotating", "--checksums", "2", "--kill", "1@5:update"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(residuals_pass(&r) && r.ok, "{r:?}");
    assert_eq!(shrinks(&r), ["shrink 2x4->2x3"], "{r:?}");
}

/// `ftla OP --ft --check ARGS --recovery auto` with spawning refused: its
/// report (it must succeed).
fn auto_with_spawn_refused(op: &str, args: &[&str]) -> FactorReport {
    let all = [args, &["--recovery", "auto"]].concat();
    let (out, text, _) = common::run_ft_with_json(op, &all, &[("FTLA_TEST_REFUSE_SPAWN", "1")]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let text = text.expect("json written");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[cfg(feature = "full-tests")]
#[test]
fn auto_shrinks_when_the_spawn_is_refused() {
    let r = auto_with_spawn_refused("qr", &[&SHAPE[..], &["--grid", "2x3", "--kill", "4@5:update"]].concat());
    assert!(residuals_pass(&r) && r.ok, "{r:?}");
    assert_eq!(shrinks(&r), ["shrink 2x3->2x2"], "{r:?}");
}

#[cfg(feature = "full-tests")]
#[test]
fn auto_shrinks_cg_when_the_spawn_is_refused() {
    let r = auto_with_spawn_refused("cg", &["--n", "400", "--grid", "2x3", "--kill", "4@3:matvec"]);
    assert!(residuals_pass(&r) && r.ok, "{r:?}");
    assert_eq!(shrinks(&r), ["shrink 2x3->2x2"], "{r:?}");
}

#[cfg(feature = "full-tests")]
#[test]
fn lu_on_one_process_row_shrinks_right_after_a_step_that_deferred_its_far_update() {
    // On one process row an even step leaves its far update to the next:
    // the move applies it (1x4 → 1x3 after step 4), and the next shrink
    // comes after an odd step (1x3 → 1x2); the solve runs on the factors.
    let (out, json) = run("lu", &["--grid", "1x4", "--solve", "--kill", "1@5:update,2@11:commit"]);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = report(json, &out);
    assert!(residuals_pass(&r) && r.ok && r.solve_residual.is_some(), "{r:?}");
    assert!(r.checksum_check.as_ref().is_some_and(|c| c.ok), "{r:?}");
    assert_eq!(shrinks(&r), ["shrink 1x4->1x3", "shrink 1x3->1x2"], "{r:?}");
}
