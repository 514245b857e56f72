//! `ftla`: the command-line tool of the ftla library.
//!
//! Started outside MPI, it re-launches itself under `mpiexec --with-ft ulfm`
//! with the right number of ranks (grid + spares), so users rarely type
//! `mpiexec` themselves. Run `ftla --help` for the commands.

mod baseline;
mod cli;
mod demo;
mod factors;
mod ft_run;
mod nb_auto;
mod phases;
mod plain;
mod problem;
mod repair;
mod scale;
mod scale_plot;
mod session;
mod soak;
mod solve;

use blacs_ft::launch::{inside_mpi, new_run_id, relaunch, CofRelaunch, Relaunch};
use clap::Parser;
use cli::{usage_error, Cli, Command, LaunchArgs};
use problem::FactorJob;
use std::time::Duration;

/// A job that runs inside MPI.
// (One value per process, made once: its size does not matter.)
#[allow(clippy::large_enum_variant)]
enum Job {
    GridDemo(demo::DemoJob),
    Repair(repair::RepairJob),
    Factor(FactorJob),
}

impl Job {
    fn nprocs(&self) -> u32 {
        match self {
            Job::GridDemo(a) => a.nprocs(),
            Job::Repair(a) => a.nprocs(),
            Job::Factor(a) => a.nprocs(),
        }
    }
}

fn main() {
    let cli = Cli::parse();
    if let Some(name) = ignores_ftla_kill(&cli.command) {
        refuse_ftla_kill(name);
    }
    // (`--quiet`: the ranks show no progress; the launcher passes it on.)
    if let Command::Qr(cli::QrArgs { matrix, .. })
    | Command::Lu(cli::LuArgs { matrix, .. })
    | Command::Cg(cli::CgArgs { matrix, .. })
    | Command::Chol(cli::CholArgs { matrix, .. }) = &cli.command
    {
        if matrix.quiet && !inside_mpi() {
            std::env::set_var(blacs_ft::launch::PROGRESS_VAR, "off");
        }
    }
    let (name, job, launch) = match cli.command {
        // Commands that run their own jobs.
        Command::Baseline(a) => std::process::exit(baseline::run(a)),
        Command::Soak(a) => std::process::exit(soak::run(a)),
        Command::Scale(a) => std::process::exit(scale::run(a)),
        Command::Launch(a) => launch_program(a),
        // Commands that are one MPI job.
        Command::GridDemo(a) => ("grid-demo", demo::DemoJob::new(&a).map(Job::GridDemo), a.launch),
        Command::Repair(a) => ("repair", repair::RepairJob::new(&a).map(Job::Repair), a.launch),
        Command::Demo(a) if a.scenario == cli::DemoScenario::All && !inside_mpi() => {
            std::process::exit(demo::run_all(a))
        }
        Command::Demo(a) if a.scenario == cli::DemoScenario::Node && !inside_mpi() => {
            std::process::exit(demo::run_node(&a))
        }
        Command::Demo(a) => {
            let a = demo::one_scenario(a);
            ("demo", FactorJob::demo(&a).map(Job::Factor), a.launch)
        }
        Command::Qr(a) => {
            let launch = a.launch.clone();
            ("qr", FactorJob::from_qr(a).map(Job::Factor), launch)
        }
        Command::Lu(a) => {
            let launch = a.launch.clone();
            ("lu", FactorJob::from_lu(a).map(Job::Factor), launch)
        }
        Command::Cg(a) => {
            let launch = a.launch.clone();
            ("cg", FactorJob::from_cg(a).map(Job::Factor), launch)
        }
        Command::Chol(a) => {
            let launch = a.launch.clone();
            ("chol", FactorJob::from_chol(a).map(Job::Factor), launch)
        }
    };
    let mut job = job.unwrap_or_else(|e| usage_error(name, e));
    if let (true, Job::Factor(a)) = (inside_mpi(), &mut job) {
        // A job the launcher resumes on fewer slots than it started on.
        if let Some(g) = std::env::var(blacs_ft::launch::GRID_VAR).ok().filter(|g| !g.is_empty()) {
            let (p, q, spares) = blacs_ft::launch::parse_job_grid(&g).unwrap_or_else(|e| usage_error(name, e));
            a.grid = cli::GridShape { p: p as i32, q: q as i32 };
            if let Some(ft) = a.ft.as_mut() {
                ft.spares = spares;
            }
        }
    }
    if !inside_mpi() {
        if let Job::Factor(a) = &job {
            if let Err(e) = a.check_memory() {
                eprintln!("ftla: {e}");
                std::process::exit(2);
            }
        }
        launch_job(&job, &launch);
    }
    match job {
        Job::GridDemo(a) => demo::run(a),
        Job::Repair(a) => repair::run(a),
        Job::Factor(a) if a.ft.is_some() => ft_run::run(a),
        Job::Factor(a) => plain::run(a),
    }
}

/// The commands that choose their own kills, or none: `FTLA_KILL` is
/// refused there rather than ignored (`qr`, `lu` and `cg` add it to their
/// `--kill`, `launch` hands it to the program).
fn ignores_ftla_kill(command: &Command) -> Option<&'static str> {
    match command {
        Command::Demo(_) => Some("demo"),
        Command::GridDemo(_) => Some("grid-demo"),
        Command::Repair(_) => Some("repair"),
        Command::Baseline(_) => Some("baseline"),
        Command::Soak(_) => Some("soak"),
        Command::Scale(_) => Some("scale"),
        Command::Qr(_) | Command::Lu(_) | Command::Cg(_) | Command::Chol(_) | Command::Launch(_) => None,
    }
}

/// A usage error when `FTLA_KILL` is set for a command that does not read
/// it (the launcher forwards it empty when unset).
fn refuse_ftla_kill(name: &str) {
    if let Ok(kills) = std::env::var("FTLA_KILL") {
        if !kills.trim().is_empty() {
            usage_error(name, format!("FTLA_KILL is set ({kills}) but ftla {name} does not read it; unset it"));
        }
    }
}

/// Hands `--placement` to every process of the job (`FTLA_PLACEMENT`, which
/// the launcher passes on).
fn pass_placement(launch: &LaunchArgs) {
    if let Some(p) = launch.placement {
        std::env::set_var(blacs_ft::placement::PLACEMENT_VAR, p.name());
    }
}

/// Re-executes this command under `mpiexec`; never returns.
fn launch_job(job: &Job, launch: &LaunchArgs) -> ! {
    pass_placement(launch);
    let cof = match job {
        Job::Factor(FactorJob { ft: Some(ft), .. })
            if ft.recovery != recovery::Policy::InPlace || ft.checkpoint_every.is_some() =>
        {
            let mut c = cof_relaunch(ft.recovery, ft.checkpoint_dir.clone(), ft.max_restarts, ft.resume.as_deref());
            c.checkpoint_every = ft.checkpoint_every;
            c.keep_checkpoints = ft.keep_checkpoints;
            c.checkpoint_parity = ft.checkpoint_parity;
            Some(c)
        }
        _ => None,
    };
    // (Its checkpoints resume on any grid: a job lost with a node resumes
    // on the largest grid the hosts left hold.)
    let grid = match job {
        Job::Factor(FactorJob { ft: Some(ft), grid, .. }) => Some(blacs_ft::launch::JobGrid {
            p: grid.p as u32,
            q: grid.q as u32,
            min_q: match ft.layout {
                scalapack_ft::abft::LayoutKind::ReverseNeighbor => 2,
                scalapack_ft::abft::LayoutKind::Rotating { checksums } => checksums as u32 + 1,
            },
            spares: ft.spares,
        }),
        _ => None,
    };
    relaunch(&Relaunch {
        nprocs: job.nprocs(),
        timeout: launch.timeout.filter(|&t| t > 0).map(Duration::from_secs),
        ulfm: !launch.no_ft,
        cof,
        program: None,
        grid,
    })
}

/// `ftla launch`: any program under mpiexec; never returns.
fn launch_program(a: cli::LaunchProgramArgs) -> ! {
    pass_placement(&a.launch);
    if a.recovery == recovery::Policy::Cof && a.spares > 0 {
        usage_error("launch", "--spares needs --recovery inplace or auto (cof does not repair the grid in place)");
    }
    // (`--resume` alone resumes under checkpoint-on-failure.)
    let policy = match (a.recovery, &a.resume) {
        (recovery::Policy::InPlace, Some(_)) => recovery::Policy::Cof,
        (p, _) => p,
    };
    // (Periodic checkpoints of a C program: FTLA_CHECKPOINT_EVERY.)
    let var = |v: &str| std::env::var(v).ok().filter(|s| !s.is_empty());
    let every = var(blacs_ft::launch::CHECKPOINT_EVERY_VAR).map(|s| {
        blacs_ft::launch::CheckpointInterval::parse(&s, var(blacs_ft::launch::MTBF_VAR).as_deref())
            .unwrap_or_else(|e| usage_error("launch", format!("{}: {e}", blacs_ft::launch::CHECKPOINT_EVERY_VAR)))
    });
    let cof = (policy != recovery::Policy::InPlace || every.is_some()).then(|| {
        let dir = a.resume.clone().or_else(|| a.checkpoint_dir.clone());
        let mut c = cof_relaunch(policy, dir, a.max_restarts, a.resume.as_deref());
        c.checkpoint_every = every;
        c.keep_checkpoints = std::env::var(blacs_ft::launch::KEEP_CHECKPOINTS_VAR).is_ok_and(|s| s == "1");
        c.checkpoint_parity = std::env::var(blacs_ft::launch::CHECKPOINT_PARITY_VAR).is_ok_and(|s| s == "1");
        c
    });
    relaunch(&Relaunch {
        nprocs: a.np + a.spares,
        timeout: a.launch.timeout.filter(|&t| t > 0).map(Duration::from_secs),
        ulfm: !a.launch.no_ft,
        cof,
        program: Some(a.program),
        grid: None,
    })
}

/// Checkpoint-on-failure's launch settings: a new run, or the run whose
/// checkpoints `--resume` names (its identity and recoveries read from
/// the files; the job itself checks them all).
fn cof_relaunch(
    policy: recovery::Policy,
    checkpoint_dir: Option<std::path::PathBuf>,
    max_restarts: u32,
    resume: Option<&std::path::Path>,
) -> CofRelaunch {
    // (A directory with a periodic checkpoint and no file saved on a
    // failure after it: the newest generation's files.)
    let periodic = resume.and_then(|d| match recovery::cof::periodic::resume_dir(d) {
        Ok((_, Some(m))) => Some(m),
        _ => None,
    });
    let from = resume.and_then(|d| {
        let (_, _, headers) = headers_of_save(d)?;
        newest_of_the_run(&headers).cloned()
    });
    let run_id = from.as_ref().map_or_else(new_run_id, |h| h.run_id);
    let dir = checkpoint_dir.unwrap_or_else(|| recovery::RegionOptions { run_id, ..Default::default() }.dir());
    // A periodic checkpoint was left by a job lost whole: that loss is one
    // more recovery of the run.
    let epoch_base = match (&periodic, &from) {
        (Some(m), _) => m.epoch + 1,
        (None, h) => h.as_ref().map_or(0, |h| h.epoch),
    };
    CofRelaunch {
        dir,
        run_id,
        max_restarts,
        resume: resume.is_some(),
        policy: policy.name(),
        epoch_base,
        newest_checkpoint: Some(newest_checkpoint),
        save_in: Some(save_in),
        ..Default::default()
    }
}

/// The save a job resuming from `dir` loads, as saved (for the launcher):
/// its grid, from its manifest or its lowest-numbered readable file, and
/// which of that grid's files are missing.
fn save_in(dir: &std::path::Path) -> Option<blacs_ft::launch::SaveOnGrid> {
    use recovery::cof::file;
    let (files, manifest, headers) = headers_of_save(dir)?;
    let (p, q) = match (&manifest, headers.first()) {
        (Some(m), _) => (m.p, m.q),
        (None, Some(h)) => (h.p, h.q),
        (None, None) => return None,
    };
    // (As the job's load does: a file of an earlier save of the run, a
    // newer one being there, is left out and rebuilt; one that does not
    // read, or of another run, is refused by the job, naming it.)
    let newest = newest_of_the_run(&headers).map(|h| (h.run_id, h.restarts));
    let earlier = |r: i32| {
        headers.iter().any(|h| h.rank == r && newest.is_some_and(|(run, n)| h.run_id == run && h.restarts < n))
    };
    let missing = (0..p * q).filter(|&r| !file::path_of(&files, r).exists() || earlier(r)).map(|r| r as u32).collect();
    let parity = headers.iter().any(|h| h.call.as_ref().is_some_and(|c| !c.data_only));
    Some(blacs_ft::launch::SaveOnGrid {
        p: p as u32,
        q: q as u32,
        missing,
        parity,
        saved_on_failure: manifest.is_none(),
    })
}

/// The save a job resuming from `dir` loads: the directory of its files,
/// its manifest (a periodic generation's), and the headers of its
/// readable files, by grid rank.
fn headers_of_save(
    dir: &std::path::Path,
) -> Option<(std::path::PathBuf, Option<recovery::cof::Manifest>, Vec<recovery::cof::Header>)> {
    use recovery::cof::file;
    let (files, manifest) = recovery::cof::periodic::resume_dir(dir).ok()?;
    let mut headers: Vec<_> = std::fs::read_dir(&files)
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(file::rank_of_file))
        .filter_map(|r| file::read_header(&file::path_of(&files, r)).ok().map(|(h, _)| h))
        .collect();
    headers.sort_by_key(|h| h.rank);
    Some((files, manifest, headers))
}

/// The newest save's header of the run most files belong to (the job
/// refuses the files of other runs, naming them).
fn newest_of_the_run(headers: &[recovery::cof::Header]) -> Option<&recovery::cof::Header> {
    let votes = |id: u64| headers.iter().filter(|h| h.run_id == id).count();
    headers.iter().max_by_key(|h| (votes(h.run_id), h.restarts, h.epoch))
}

/// The newest complete periodic checkpoint in `dir` (for the launcher).
fn newest_checkpoint(dir: &std::path::Path) -> Option<blacs_ft::launch::SavedGeneration> {
    let m = recovery::cof::periodic::read_manifest(dir).ok()??;
    Some(blacs_ft::launch::SavedGeneration {
        generation: m.generation,
        routine: m.routine,
        step: m.step,
        epoch: m.epoch,
    })
}
