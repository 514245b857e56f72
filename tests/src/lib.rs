//! Shared by the test drivers in `src/`: their command-line pieces and
//! their launch, join and per-rank report.

/// Parses a process grid `PxQ` (P, Q ≥ 1).
pub fn parse_grid(v: &str) -> Result<(i32, i32), String> {
    let bad = || format!("wants PxQ with P, Q ≥ 1, got `{v}`");
    let (p, q) = v.split_once(['x', 'X']).ok_or_else(bad)?;
    let (p, q): (i32, i32) = (p.parse().map_err(|_| bad())?, q.parse().map_err(|_| bad())?);
    if p < 1 || q < 1 {
        return Err(bad());
    }
    Ok((p, q))
}

use blacs_ft::launch::{inside_mpi, relaunch, write_status, CofRelaunch, Relaunch};
use blacs_ft::{Grid, GridOptions, Joined, Runtime};
use recovery::Region;
use std::time::Duration;

/// Run outside `mpiexec`, starts this program again under it with
/// `nprocs` (global) processes and a hard timeout of `timeout_s` seconds,
/// and does not return; run inside, returns at once.
///
/// `ulfm` (global) turns on ULFM fault tolerance in the job; `cof` (global)
/// asks for checkpoint-on-failure restarts.
pub fn relaunch_outside_mpi(nprocs: i32, timeout_s: u64, ulfm: bool, cof: Option<CofRelaunch>) {
    if !inside_mpi() {
        relaunch(&Relaunch {
            nprocs: nprocs as u32,
            timeout: Some(Duration::from_secs(timeout_s)),
            ulfm,
            cof,
            program: None,
            grid: None,
        });
    }
}

/// Starts MPI and joins the `p`×`q` (global) grid with the default options
/// (which take the kills from `FTLA_KILL`). Returns `None` in a spare the
/// grid released; ends the process with a message when MPI does not start
/// (`PROGRAM: MPI start-up failed: E`) or the join fails (`JOIN-ERROR E`).
pub fn join_grid(program: &str, p: i32, q: i32) -> (Runtime, Option<Box<Grid>>) {
    let mut rt = Runtime::init().unwrap_or_else(|e| {
        eprintln!("{program}: MPI start-up failed: {e}");
        std::process::exit(1)
    });
    match rt.world_dup().and_then(|c| Grid::join(&mut rt, c, p, q, GridOptions::default())) {
        Ok(Joined::Active(g)) => (rt, Some(g)),
        Ok(Joined::Released) => (rt, None),
        Err(e) => {
            println!("JOIN-ERROR {e}");
            rt.finish(1)
        }
    }
}

/// [`join_grid`], then a recovery region over the grid: a released spare
/// ends the process quietly (exit code 0); a region that cannot start ends
/// it with `REGION-ERROR E` (exit code 1).
pub fn join_region(program: &str, p: i32, q: i32) -> (Runtime, Region) {
    let (rt, grid) = join_grid(program, p, q);
    let Some(grid) = grid else { rt.finish(0) };
    match Region::new(grid) {
        Ok(r) => (rt, r),
        Err(e) => {
            println!("REGION-ERROR {e}");
            rt.finish(1)
        }
    }
}

/// Ends the program with its `outcome` (global): prints `RANK r failed: E`
/// for a failure (the success line is the caller's), has rank 0 write the
/// job's status (`status` (global): its detail), closes the grid and ends
/// the process with exit code 0 when `outcome` is a success, 1 otherwise.
pub fn finish(rt: Runtime, grid: Box<Grid>, outcome: Result<(), &str>, status: &str) -> ! {
    if let Err(e) = outcome {
        println!("RANK {} failed: {e}", grid.rank());
    }
    if grid.rank() == 0 {
        write_status(outcome.is_ok(), status);
    }
    grid.close();
    rt.finish(if outcome.is_ok() { 0 } else { 1 })
}

/// The usual end of a test driver: joins the `p`×`q` region as `program`,
/// runs `scenario` on it, prints `RANK r<line>` for its success (the rank
/// of the grid at the end), and ends the process as [`finish`] does.
pub fn run_scenario(program: &str, p: i32, q: i32, scenario: impl FnOnce(&mut Region) -> Result<String, String>) -> ! {
    let (rt, mut region) = join_region(program, p, q);
    let outcome = scenario(&mut region);
    let grid = region.into_grid();
    match outcome {
        Ok(line) => {
            println!("RANK {}{line}", grid.rank());
            finish(rt, grid, Ok(()), &line)
        }
        Err(e) => finish(rt, grid, Err(&e), &e),
    }
}

/// A 64-bit digest of `text` (FNV-1a): what processes compare to learn
/// that they hold the same text.
pub fn digest(text: &str) -> i64 {
    text.bytes().fold(1469598103934665603u64, |h, b| (h ^ b as u64).wrapping_mul(1099511628211)) as i64
}

/// Collective: whether `value` is the same on every process of `grid`.
pub fn same_everywhere(grid: &Grid, value: i64) -> Result<bool, String> {
    let (mut lo, mut hi) = ([value], [value]);
    grid.min(blacs_ft::Scope::All, &mut lo).map_err(|e| e.to_string())?;
    grid.max(blacs_ft::Scope::All, &mut hi).map_err(|e| e.to_string())?;
    Ok(lo == hi)
}

/// Collective: what one case of an error check returned on this process
/// (`result`: its INFO and message, or success), printed as `ERROR
/// case=.. rank=.. info=.. err=..`, and whether every process got the same
/// with INFO `want_info` (rank 0 prints `AGREE case=.. same=.. info=..`).
pub fn report_agreed(
    grid: &Grid,
    case: &str,
    result: Result<(), (i32, String)>,
    want_info: i32,
) -> Result<bool, String> {
    let (info, text) = result.err().unwrap_or((0, "no error".to_string()));
    println!("ERROR case={case} rank={} info={info} err={text}", grid.rank());
    let same = same_everywhere(grid, digest(&format!("{info} {text}")))?;
    if grid.rank() == 0 {
        println!("AGREE case={case} same={same} info={info}");
    }
    Ok(same && info == want_info)
}
