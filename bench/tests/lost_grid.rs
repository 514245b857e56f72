//! Every process of a grid lost — the last survivor killed during the
//! repair of the first loss, or every rank at once — ends the job within
//! seconds as unrecoverable (exit code 3), the launcher naming the lost
//! grid ranks: nobody is left to report it, and a replacement spawned just
//! before waits for its dead parents until its repair deadline (a minute).

mod common;

use common::ftla;
use std::time::{Duration, Instant};

/// `ftla qr --ft --grid 1x2` with `kills`: exit 3 within 20 s (the
/// repair deadline is 60 s), the launcher saying both grid ranks were lost.
fn the_whole_grid_is_lost(kills: &str) {
    let started = Instant::now();
    let out = ftla(&["qr", "--ft", "--grid", "1x2", "--n", "400", "--nb", "32", "--kill", kills]);
    let took = started.elapsed();
    assert_eq!(out.code, Some(blacs_ft::launch::EXIT_UNRECOVERABLE), "{kills}:\n{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains(
            "ftla: unrecoverable failure: every process of the grid was lost (grid ranks 0 and 1), so none was \
             left to recover or report"
        ),
        "{kills}:\n{}",
        out.stderr
    );
    for rank in [0, 1] {
        assert!(out.stderr.contains(&format!("injecting SIGKILL into rank {rank}")), "{kills}:\n{}", out.stderr);
    }
    assert!(took < Duration::from_secs(20), "{kills}: {took:?}\n{}", out.stderr);
}

#[test]
fn the_last_survivor_lost_after_spawning_a_replacement_ends_the_job_in_seconds() {
    the_whole_grid_is_lost("0@3:panel,1@repair:*:spawn");
}

#[test]
fn the_last_survivor_lost_in_the_shrink_or_both_ranks_at_once_end_the_job_as_unrecoverable() {
    the_whole_grid_is_lost("0@3:panel,1@repair:*:shrink");
    the_whole_grid_is_lost("0@3:panel,1@3:panel");
}
