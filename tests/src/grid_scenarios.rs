//! Multi-rank scenarios driven by the integration tests in `tests/tests/`.
//! Each one relaunches itself under `mpiexec` (with a hard timeout) when
//! started outside MPI and prints lines the tests assert on.
//!
//! ```text
//! grid-scenarios check        --grid PxQ [--spares S] [--steps N] [--timeout S]
//! grid-scenarios local-error  --grid PxQ --error-rank R [--timeout S]
//! grid-scenarios agree-error  --grid PxQ --error-rank R [--no-ft] [--timeout S]
//! grid-scenarios ulfm-status  --grid PxQ --no-ft [--timeout S]
//! grid-scenarios sends        --grid PxQ [--timeout S]
//! ```
//! Kills come from `FTLA_KILL` (points `check:STEP:verify`).

use blacs_ft::{verify_grid, Error, Grid, Runtime, Scope};

/// Multi-rank grid scenarios (see the module documentation).
#[derive(clap::Parser)]
struct Args {
    /// check | local-error | agree-error | ulfm-status | sends
    scenario: String,
    /// Process grid PxQ.
    #[arg(long, default_value = "2x2", value_parser = ftla_tests::parse_grid)]
    grid: (i32, i32),
    /// Hot spares.
    #[arg(long, default_value_t = 0)]
    spares: i32,
    /// Rounds of the self-check.
    #[arg(long, default_value_t = 3)]
    steps: u64,
    /// The rank that raises a local error.
    #[arg(long, default_value_t = 1)]
    error_rank: i32,
    /// Launch without ULFM.
    #[arg(long)]
    no_ft: bool,
    /// Hard timeout of the job, seconds.
    #[arg(long, default_value_t = 120)]
    timeout: u64,
}

fn main() {
    let a = <Args as clap::Parser>::parse();
    let (p, q) = a.grid;
    ftla_tests::relaunch_outside_mpi(p * q + a.spares, a.timeout, !a.no_ft, None);
    let (rt, grid) = ftla_tests::join_grid("grid-scenarios", p, q);
    let Some(mut grid) = grid else {
        println!("SPARE released");
        rt.finish(0)
    };
    if let Some(r) = grid.replacement() {
        println!("REPLACEMENT rank={} epoch={} mode={}", r.rank, r.epoch, r.mode.as_str());
    }
    let outcome = match a.scenario.as_str() {
        "check" => check(&mut grid, a.steps),
        "local-error" => local_error(&mut grid, a.error_rank),
        "agree-error" => agree_error(&mut grid, a.error_rank),
        "ulfm-status" => ulfm_status(&mut grid, &rt),
        "sends" => sends(&mut grid),
        other => Err(format!("unknown scenario {other}")),
    };
    match outcome {
        Ok(summary) => {
            println!("RANK {} ok {summary}", grid.rank());
            ftla_tests::finish(rt, grid, Ok(()), &summary)
        }
        Err(e) => ftla_tests::finish(rt, grid, Err(&e), &e),
    }
}

/// `steps` rounds of the full grid self-check; kills fire at
/// `check:STEP:verify`; every failure is repaired and the step redone.
fn check(grid: &mut Grid, steps: u64) -> Result<String, String> {
    let mut step = 0u64;
    // A replacement does not know the step: it contributes "no opinion"
    // (i64::MAX) to the min-reduction by which everybody agrees on the step
    // to redo after a repair.
    let mut fresh = grid.replacement().is_some();
    let mut resume = fresh;
    loop {
        if resume {
            let mut s = [if fresh { i64::MAX } else { step as i64 }];
            match grid.min(Scope::All, &mut s) {
                Ok(()) => {}
                Err(e) if e.is_process_failure() => {
                    recover(grid)?;
                    continue;
                }
                Err(e) => return Err(e.to_string()),
            }
            step = s[0] as u64;
            resume = false;
            fresh = false;
        }
        if step >= steps {
            break;
        }
        grid.inject("check", step, "verify");
        match verify_grid(grid, 64) {
            Ok(c) => {
                if grid.rank() == 0 {
                    println!("STEP {step} ok epoch={} total={} ops={}", grid.epoch(), c.total, c.operations);
                }
                step += 1;
            }
            Err(e) if e.is_process_failure() => {
                recover(grid)?;
                resume = true;
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    let reps: Vec<String> =
        grid.repairs().iter().map(|r| format!("{}:{:?}:{:.0}ms", r.mode.as_str(), r.killed, r.total_ms)).collect();
    Ok(format!("epoch={} steps={steps} repairs=[{}]", grid.epoch(), reps.join(" ")))
}

fn recover(grid: &mut Grid) -> Result<(), String> {
    match grid.recover() {
        Ok(r) => {
            {
                println!(
                    "REPAIRED by={} epoch={} mode={} killed={:?} attempts={} total_ms={:.1}",
                    grid.rank(),
                    r.epoch,
                    r.mode.as_str(),
                    r.killed,
                    r.attempts,
                    r.total_ms
                );
            }
            Ok(())
        }
        Err(e) => Err(format!("recover: {e}")),
    }
}

/// Rank `bad` hits a local error while every other rank waits in a
/// broadcast from it; every rank must end with the same error.
fn local_error(grid: &mut Grid, bad: i32) -> Result<String, String> {
    let mut buf = [0.0f64; 4];
    let r = if grid.rank() == bad {
        Err(grid.raise(format!("invalid input on rank {bad}: N = -5")))
    } else {
        grid.broadcast(Scope::All, &mut buf, bad)
    };
    raised_everywhere(grid, r, "the broadcast completed although its root raised an error")
}

/// After one rank raised an error (`r`: this rank's outcome of the
/// operation it was in), every rank recovers and must get the same error.
fn raised_everywhere(grid: &mut Grid, r: Result<(), Error>, if_ok: &str) -> Result<String, String> {
    let err = match r {
        Ok(()) => return Err(if_ok.into()),
        Err(e) if e.is_process_failure() => match grid.recover() {
            Ok(_) => return Err("recover returned Ok although a rank raised an error".into()),
            Err(e) => e,
        },
        Err(e) => e,
    };
    println!("ERROR rank={} got: {err}", grid.rank());
    same_everywhere(grid, &err)
}

/// Rank `bad` has a bad argument; the ranks agree before communicating
/// (works without ULFM).
fn agree_error(grid: &mut Grid, bad: i32) -> Result<String, String> {
    let local: Result<(), String> =
        if grid.rank() == bad { Err(format!("argument 3 (NB) is -1 on rank {bad}")) } else { Ok(()) };
    match grid.agree_ok(local) {
        Ok(()) => Err("agree_ok returned Ok although a rank had an error".into()),
        Err(e) => {
            println!("ERROR rank={} got: {e}", grid.rank());
            same_everywhere(grid, &e)
        }
    }
}

/// Checks that `err` is the same on every rank (compares a digest).
fn same_everywhere(grid: &Grid, err: &Error) -> Result<String, String> {
    let text = err.to_string();
    let digest = text.bytes().fold(1469598103934665603u64, |h, b| (h ^ b as u64).wrapping_mul(1099511628211)) as i64;
    let mut lo = [digest];
    let mut hi = [digest];
    grid.min(Scope::All, &mut lo).map_err(|e| e.to_string())?;
    grid.max(Scope::All, &mut hi).map_err(|e| e.to_string())?;
    if lo != hi {
        return Err(format!("ranks disagree on the error (this rank: {text})"));
    }
    Ok(format!("same error on every rank: {text}"))
}

/// Reports ULFM detection and that a repair is refused cleanly without it.
fn ulfm_status(grid: &mut Grid, rt: &Runtime) -> Result<String, String> {
    println!("ULFM rank={} status={:?} mpi={}", grid.rank(), rt.ulfm(), rt.mpi_version());
    match grid.recover() {
        Err(e @ Error::UlfmUnavailable { .. }) => Ok(format!("{:?}: {e}", rt.ulfm())),
        Err(e) => Err(format!("unexpected error: {e}")),
        Ok(_) => Ok(format!("{:?}: repair available", rt.ulfm())),
    }
}

/// Sends that run while the sender computes ([`Grid::with_sends`]): rank 0
/// sends rank 1 six rendezvous-sized messages, two in flight at a time,
/// alternately borrowed and owned (reused once sent); rank 1 checks each.
/// Then rank 0's scope fails with two sends that nobody receives in
/// flight: it must return its error (not wait for ever), and every rank
/// then gets the same error from the repair. Between the two, a short
/// message is refused by [`Grid::recv_exact`] and by [`Grid::exchange`].
fn sends(grid: &mut Grid) -> Result<String, String> {
    const LEN: usize = 300_000; // 2.4 MB: above any eager limit
    const COUNT: usize = 6;
    let value = |i: usize, j: usize| (i * LEN + j) as f64;
    let borrowed: Vec<Vec<f64>> = (0..COUNT).map(|i| (0..LEN).map(|j| value(i, j)).collect()).collect();
    if grid.rank() == 0 {
        let mut addresses = std::collections::BTreeSet::new();
        let r: Result<(), Error> = grid.with_sends(2, |s| {
            for (i, b) in borrowed.iter().enumerate() {
                if i % 2 == 0 {
                    s.send(b, 0, 1, 7)?;
                } else {
                    let mut x = s.buffer(LEN)?;
                    x.extend((0..LEN).map(|j| value(i, j)));
                    addresses.insert(x.as_ptr() as usize);
                    s.send_owned(x, 0, 1, 7)?;
                }
            }
            Ok(())
        });
        r.map_err(|e| e.to_string())?;
        // Three owned sends, at most two in flight: the first owned buffer
        // has been sent before the third is asked for, so it is reused.
        println!("SENDS sent {COUNT} reused={}", addresses.len() < 3);
    } else if grid.rank() == 1 {
        let mut got = vec![0.0; LEN];
        for i in 0..COUNT {
            grid.recv(&mut got, 0, 0, 7).map_err(|e| e.to_string())?;
            if got.iter().enumerate().any(|(j, &v)| v != value(i, j)) {
                return Err(format!("message {i} arrived wrong"));
            }
        }
        println!("SENDS received {COUNT} in order");
    }
    // A message shorter than its receiver expects is an error there, not a
    // partly filled buffer.
    if grid.rank() == 0 {
        grid.send(&borrowed[0][..10], 0, 1, 9).map_err(|e| e.to_string())?;
    } else if grid.rank() == 1 {
        let mut got = vec![0.0; 11];
        match grid.recv_exact(&mut got, 0, 0, 9) {
            Ok(()) => return Err("a short message was taken as whole".into()),
            Err(e) => println!("SHORT unrecoverable={} {e}", matches!(e, Error::Unrecoverable { .. })),
        }
    }
    // So is a short half of an exchange: rank 0 sends 10 elements where
    // rank 1 expects 11; rank 1's 11 reach rank 0 whole.
    if grid.rank() < 2 {
        let (me, other) = (grid.rank(), 1 - grid.rank());
        let send = &borrowed[0][..if me == 0 { 10 } else { 11 }];
        let mut got = vec![0.0; 11];
        match (me, grid.exchange(send, (0, other), &mut got, (0, other), 10)) {
            (0, Ok(())) => println!("EXCHANGE whole"),
            (1, Err(e)) => println!("EXCHANGE unrecoverable={} {e}", matches!(e, Error::Unrecoverable { .. })),
            (_, r) => return Err(format!("exchange on rank {me}: {r:?}")),
        }
    }
    // The failing scope: rank 1 never posts these receives.
    let r = if grid.rank() == 0 {
        let r: Result<(), Error> = grid.with_sends(2, |s| {
            s.send(&borrowed[0], 0, 1, 8)?;
            s.send(&borrowed[1], 0, 1, 8)?;
            Err(Error::invalid("share", "a local error with two sends in flight"))
        });
        match r {
            Ok(()) => return Err("the scope returned Ok although its closure failed".into()),
            Err(e) => {
                println!("SENDS scope returned: {e}");
                Err(grid.raise(e.to_string()))
            }
        }
    } else {
        grid.barrier(Scope::All)
    };
    raised_everywhere(grid, r, "the barrier completed although rank 0 raised an error")
}
