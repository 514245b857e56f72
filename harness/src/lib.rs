//! The one harness of ftla's multi-rank tests (`bench/tests`, `tests/tests`,
//! `examples/tests`): every MPI job a test starts goes through [`launch`],
//! which runs one job at a time per test binary (the tests of a binary run
//! in parallel threads; jobs of 4–7 oversubscribed processes must not
//! share two cores) under a hard limit, past which the job and every
//! process of it are killed and the test fails with what the job printed.
//! A hung job is a failed test, never a skipped one.
//!
//! Tests come in two tiers: the core (`./test.sh`, every driver and path
//! once) and the full tier (`./test.sh --full`, the cargo feature
//! `full-tests` of each test package: kill matrices, repeated recoveries,
//! long soaks). `tests/README.md` maps which test covers what.

use blacs_ft::launch::run_with_timeout;
pub use blacs_ft::launch::Captured;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

/// The hard limit on one job: the jobs' own `--timeout` (120 s where a
/// test sets one) ends them first; this is the backstop.
pub const HARD_LIMIT: Duration = Duration::from_secs(150);

/// One MPI job at a time in this test binary.
static SERIAL: Mutex<()> = Mutex::new(());

/// Runs the MPI job `cmd` (an `ftla` command, a test program under
/// `mpiexec` or `ftla launch`) alone, under [`HARD_LIMIT`]; panics, with
/// the command and its output, if it had to be killed.
pub fn launch(cmd: Command) -> Captured {
    launch_within(cmd, HARD_LIMIT)
}

/// [`launch`] with another hard limit.
pub fn launch_within(cmd: Command, limit: Duration) -> Captured {
    let _one_at_a_time = one_job_at_a_time();
    let what = describe(&cmd);
    let out = run_with_timeout(cmd, limit).unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    assert!(!out.timed_out, "{what} hung (killed after {limit:?}):\n{}\n{}", out.stdout, out.stderr);
    if let Some(note) = known_runtime_failure(&out.stderr) {
        // (Shown with the test's output if it fails.)
        eprintln!("harness: {what}: {note}");
    }
    out
}

/// What a job's output says of a failure that is the MPI runtime's, not
/// ftla's: Open MPI 5.0's runtime fails a spawn of two replacements at
/// once now and then (both die in `MPI_Init`, docs/fault-tolerance.md).
fn known_runtime_failure(stderr: &str) -> Option<&'static str> {
    let spawn_stalled = stderr.contains("MPI_Comm_spawn of the replacements of grid ranks");
    let children_refused = stderr.contains("OPAL ERROR: Not supported in file") && stderr.contains("dpm.c");
    (spawn_stalled && children_refused).then_some(
        "the spawn of two replacements at once failed in the MPI runtime (both replacements died in MPI_Init: \
         a known limit of Open MPI 5.0.11, see docs/fault-tolerance.md), not in ftla",
    )
}

/// Holds the machine for one MPI job that a test drives by hand (to
/// signal it, say) until the guard is dropped; [`launch`] takes it itself.
pub fn one_job_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs a command that starts no MPI job (a compiler, an installer) under
/// `limit`, beside the jobs; panics if it had to be killed.
pub fn run(cmd: Command, limit: Duration) -> Captured {
    let what = describe(&cmd);
    let out = run_with_timeout(cmd, limit).unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    assert!(!out.timed_out, "{what} hung (killed after {limit:?}):\n{}\n{}", out.stdout, out.stderr);
    out
}

/// `program arg arg …`, for messages.
fn describe(cmd: &Command) -> String {
    std::iter::once(cmd.get_program()).chain(cmd.get_args()).map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ")
}

/// The cases of a list that a test runs in this tier: the first `core` of
/// them in the core tier, every one in the full tier (the test crate's
/// feature `full-tests`; the macro expands in the test crate, whose feature
/// decides):
///
/// ```
/// let kills = harness::cases!(["1@2:panel", "1@2:update", "3@9:commit"], core = 1);
/// // (This doctest's crate has no `full-tests` feature: the core tier's one.)
/// assert_eq!(kills, ["1@2:panel"]);
/// ```
#[macro_export]
macro_rules! cases {
    ($all:expr, core = $n:expr) => {{
        let all = &$all[..];
        if cfg!(feature = "full-tests") {
            all
        } else {
            &all[..::std::cmp::min($n, all.len())]
        }
    }};
}

/// The lines of `text` that start with `prefix` followed by a rank number
/// (`"RANK 2 …"`, `"qr_lu_solve: grid rank 2 …"`), with that rank, sorted
/// by rank (stable: a rank's lines keep their order).
pub fn rank_lines<'a>(text: &'a str, prefix: &str) -> Vec<(i32, &'a str)> {
    let mut v: Vec<(i32, &str)> = text
        .lines()
        .filter_map(|l| Some((l.strip_prefix(prefix)?.split_whitespace().next()?.parse().ok()?, l)))
        .collect();
    v.sort_by_key(|&(r, _)| r);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_lines_are_found_by_prefix_and_sorted_by_rank() {
        let text = "x: grid rank 2 b\nnoise\nx: grid rank 0 a\nx: grid rank 2 c\nx: grid rank ? d\n";
        assert_eq!(
            rank_lines(text, "x: grid rank "),
            [(0, "x: grid rank 0 a"), (2, "x: grid rank 2 b"), (2, "x: grid rank 2 c")]
        );
    }

    #[test]
    fn a_command_past_its_limit_fails_the_test_with_its_output() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo started; sleep 30"]);
        let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(cmd, Duration::from_millis(300))))
            .expect_err("must fail");
        let msg = err.downcast_ref::<String>().expect("a message");
        assert!(msg.contains("sh -c echo started; sleep 30 hung") && msg.contains("started"), "{msg}");
    }

    #[test]
    fn the_runtime_s_failed_two_replacement_spawn_is_named_and_nothing_else_is() {
        let stalled = "ftla: unrecoverable failure: grid rank 2: MPI_Comm_spawn of the replacements of grid ranks \
                       0 and 1 (bound 60.0 s: no spawn of the job measured yet) did not complete in time";
        let refused = "[vm:25868] OPAL ERROR: Not supported in file /openmpi-5.0.11/ompi/dpm/dpm.c at line 406";
        assert!(known_runtime_failure(&format!("{stalled}\n{refused}\n")).is_some());
        // A stall alone (a replacement that never starts) is not it.
        assert!(known_runtime_failure(stalled).is_none());
        assert!(known_runtime_failure(refused).is_none());
        assert!(known_runtime_failure("").is_none());
    }
}
