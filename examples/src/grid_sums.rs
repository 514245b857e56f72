//! A small application in the shape users write: each grid rank owns a
//! block of numbers, the application computes row, column and grid totals
//! inside a resilient region, and survives a rank being SIGKILLed.
//!
//! ```sh
//! cargo build --release -p ftla-examples
//! FTLA_KILL=2@sums:1 target/release/grid-sums 2x2 3
//! ```
//! Arguments: grid shape (default 2x2) and number of rounds (default 3).

use blacs_ft::launch::{inside_mpi, relaunch, write_status, Relaunch};
use blacs_ft::{Grid, GridOptions, Joined, Runtime, Scope};
use std::time::Duration;

/// The block a rank owns in round `round`: regenerated from its position,
/// so a replacement process can rebuild it.
fn my_block(grid: &Grid, round: u64) -> Vec<f64> {
    (0..16).map(|i| (grid.rank() * 16 + i) as f64 + round as f64).collect()
}

/// Row, column and grid totals in a resilient region that survives a
/// SIGKILLed rank (kills from FTLA_KILL, e.g. `2@sums:1`).
#[derive(clap::Parser)]
struct Cli {
    /// Process grid PxQ.
    #[arg(default_value = "2x2", value_parser = parse_grid)]
    grid: (i32, i32),
    /// Rounds.
    #[arg(default_value_t = 3)]
    rounds: u64,
}

fn parse_grid(v: &str) -> Result<(i32, i32), String> {
    let bad = || format!("wants PxQ with P, Q ≥ 1, got `{v}`");
    let (p, q) = v.split_once('x').ok_or_else(bad)?;
    let (p, q): (i32, i32) = (p.parse().map_err(|_| bad())?, q.parse().map_err(|_| bad())?);
    if p < 1 || q < 1 {
        return Err(bad());
    }
    Ok((p, q))
}

fn main() {
    let Cli { grid: (p, q), rounds } = <Cli as clap::Parser>::parse();
    if !inside_mpi() {
        relaunch(&Relaunch {
            nprocs: (p * q) as u32,
            timeout: Some(Duration::from_secs(300)),
            ulfm: true,
            cof: None,
            program: None,
            grid: None,
        });
    }
    let mut rt = Runtime::init().expect("MPI start-up");
    let comm = rt.world_dup().expect("communicator");
    let mut grid = match Grid::join(&mut rt, comm, p, q, GridOptions::default()) {
        Ok(Joined::Active(g)) => g,
        Ok(Joined::Released) => rt.finish(0),
        Err(e) => {
            eprintln!("grid-sums: {e}");
            rt.finish(1)
        }
    };
    let n = (p * q * 16) as f64;
    let result = recovery::resilient(&mut grid, 4, |g| {
        // The region restarts from round 0 after a repair, on survivors and
        // the replacement alike: every round is recomputed from scratch.
        for r in 0..rounds {
            g.inject("sums", r, "compute");
            let mut total = vec![my_block(g, r).iter().sum::<f64>()];
            g.sum(Scope::All, &mut total, None)?;
            let expect = n * (n - 1.0) / 2.0 + n * r as f64;
            if g.rank() == 0 {
                println!("round {r}: grid total {} (expected {expect}) on epoch {}", total[0], g.epoch());
            }
            if total[0] != expect {
                return Err(blacs_ft::Error::Unrecoverable { reason: format!("round {r}: wrong total {}", total[0]) });
            }
        }
        Ok(rounds)
    });
    let ok = result.is_ok();
    if grid.rank() == 0 {
        match &result {
            Ok((r, repairs)) => println!("grid-sums: {r} rounds ok after {} repair(s)", repairs.len()),
            Err(e) => println!("grid-sums: failed: {e}"),
        }
        write_status(ok, "grid-sums");
    }
    grid.close();
    rt.finish(if ok { 0 } else { 1 })
}
