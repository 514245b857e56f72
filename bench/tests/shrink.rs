//! `--recovery shrink` under real SIGKILLs: once no hot spare is left the
//! survivors go on as a smaller grid (FT-MPI's SHRINK), the lost blocks
//! rebuilt onto survivors and every block moved to its owner on the new
//! grid; the survivor left over parks as a spare and takes the next loss;
//! a kill while the blocks move; the smallest grid the layout allows.

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
fn a_call_that_cannot_move_does_not_shrink() {
    // CG's vectors do not move yet: under shrink its loss with no spare
    // is unrecoverable, said as such; under auto it falls back to
    // checkpoint-on-failure as before.
    let cg = Ft::new("cg", &["--n", "400"]);
    let (out, _) = cg.with(&["--recovery", "shrink"]).run(&["--grid", "2x3", "--kill", "4@3:matvec"]);
    assert_eq!(out.code, Some(3), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("the repair may neither spawn nor shrink"), "{}", out.stdout);
    let r = auto_with_spawn_refused("cg", &["--n", "400", "--grid", "2x3", "--kill", "4@3:matvec"]);
    assert_eq!(shrinks(&r), ["cof"], "{r:?}");
    // LU on one process row, at a step whose far update waits for the
    // next step, cannot move either.
    let (out, _) = run("lu", &["--grid", "1x3", "--kill", "1@5:update"]);
    assert_eq!(out.code, Some(3), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("cannot move to a smaller grid"), "{}", out.stdout);
}
