//! The README's Rust program: a fault-tolerant QR on a 2×2 grid, written
//! the way an application is. Run it under the launcher, with a kill:
//!
//! ```sh
//! cargo build -p ftla-examples
//! FTLA_KILL=1@qr:4:update ftla launch --np 4 -- target/debug/qr-ft
//! ```
//!
//! (`--spares 1` for a hot spare, `--recovery cof` for
//! checkpoint-on-failure.) The kill points and the recovery settings that
//! `ftla launch` hands to the job reach the program without its asking:
//! `GridOptions::default()` reads `FTLA_KILL`, `Region::new` the recovery
//! settings.

use blacs_ft::launch::{write_outcome, Outcome, EXIT_CHECKPOINTED};
use blacs_ft::{Grid, GridOptions, Joined, Runtime};
use recovery::Region;
use scalapack_ft::qr_ft::{pdgeqrf_ft, FtOptions};
use scalapack_ft::{DistMatrix, Error};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut rt = Runtime::init()?;
    let comm = rt.world_dup()?;
    let grid = match Grid::join(&mut rt, comm, 2, 2, GridOptions::default())? {
        Joined::Active(g) => g,           // a grid rank (maybe a replacement)
        Joined::Released => rt.finish(0), // a hot spare that was never needed
    };
    // The region keeps the status log that survivors hand to replacements.
    let mut region = Region::new(grid)?;
    let (n, nb) = (1000, 64);
    let mut a = DistMatrix::from_fn(region.grid(), n, n, nb, nb, |i, j| 1.0 / (1 + i + j) as f64)?;
    let mut tau = Vec::new();
    let report = match pdgeqrf_ft(&mut region, &mut a, &mut tau, &FtOptions::default()) {
        Ok(report) => report,
        // Checkpoint-on-failure: the survivors saved; `ftla launch` restarts
        // the job, and this call resumes from the files.
        Err(Error::Grid(e @ blacs_ft::Error::Checkpointed { epoch, .. })) => {
            write_outcome(Outcome::Checkpointed { epoch }, &e.to_string());
            rt.finish(EXIT_CHECKPOINTED)
        }
        Err(e) => return Err(e.into()),
    };
    // `a` holds R and V as pdgeqrf leaves them, on every rank, replacements included.
    if region.grid().rank() == 0 {
        println!("QR done, {} recovery(ies)", report.recoveries.len());
        write_outcome(Outcome::Ok, "QR done"); // the job's outcome, for `ftla launch`
    }
    region.into_grid().close();
    rt.finish(0)
}
