//! `ftla`: the command-line tool of the ftla library.
//!
//! Started outside MPI, it re-launches itself under `mpiexec --with-ft ulfm`
//! with the right number of ranks (grid + spares), so users rarely type
//! `mpiexec` themselves. Run `ftla --help` for the commands.

mod cli;
mod demo;
mod json;
mod repair;
mod session;

use blacs_ft::launch::{inside_mpi, relaunch, Relaunch};
use cli::{CommandSpec, OptSpec, UsageError};
use std::time::Duration;

const COMMON: [OptSpec; 2] = [
    OptSpec { name: "timeout", value: Some("SECS"), help: "kill the whole job after SECS seconds (exit code 124)" },
    OptSpec { name: "no-ft", value: None, help: "launch without ULFM (checkpoint-on-failure repair only)" },
];

const DEMO: CommandSpec = CommandSpec {
    name: "demo",
    summary: "A grid that loses a rank to SIGKILL mid-run, repairs itself (ULFM: revoke, shrink, spawn or spare, \
              merge, split) and shows the repaired grid computing correctly.",
    usage: "ftla demo [--grid PxQ] [--kill R] [--step K] [--steps N] [--spares S]",
    options: &[
        OptSpec { name: "grid", value: Some("PxQ"), help: "process grid (default 2x2)" },
        OptSpec { name: "kill", value: Some("R"), help: "grid rank to SIGKILL (default 1)" },
        OptSpec { name: "no-kill", value: None, help: "run without killing anyone" },
        OptSpec { name: "step", value: Some("K"), help: "step at which the rank dies (default 2)" },
        OptSpec { name: "steps", value: Some("N"), help: "number of steps (default 4)" },
        OptSpec { name: "spares", value: Some("S"), help: "hot spares parked at start-up (default 0: spawn)" },
        COMMON[0],
        COMMON[1],
    ],
};

const REPAIR: CommandSpec = CommandSpec {
    name: "repair",
    summary: "Kill ranks, repair the grid, verify every position, and time each phase of the repair: detection, \
              revoke, shrink, spawn (or spare hand-over), merge, split, total. Prints the median over --reps.",
    usage: "ftla repair --grid PxQ [--spares S] [--kill R[,R...]] [--reps K] [--json FILE]",
    options: &[
        OptSpec { name: "grid", value: Some("PxQ"), help: "process grid (default 2x2)" },
        OptSpec { name: "spares", value: Some("S"), help: "hot spares parked at start-up (default 0: spawn)" },
        OptSpec { name: "kill", value: Some("R[,R...]"), help: "grid ranks SIGKILLed in each repetition (default 1)" },
        OptSpec { name: "reps", value: Some("K"), help: "repetitions: kill, repair, verify (default 1)" },
        OptSpec { name: "json", value: Some("FILE"), help: "write the timings as JSON to FILE" },
        COMMON[0],
        COMMON[1],
    ],
};

const COMMANDS: [&CommandSpec; 2] = [&DEMO, &REPAIR];

fn top_help() -> String {
    let mut s = String::from(
        "ftla — fault-tolerant distributed dense linear algebra\n\n\
         Usage: ftla <command> [options]        (ftla <command> --help for its options)\n\nCommands:\n",
    );
    for c in COMMANDS {
        let first = c.summary.split(". ").next().unwrap_or(c.summary);
        s.push_str(&format!("  {:<8} {first}\n", c.name));
    }
    s.push_str(
        "\nStarted outside MPI, ftla re-launches itself under `mpiexec --with-ft ulfm` with one rank per grid \
         position plus the spares.\nEnvironment: FTLA_KILL (kill points, RANK@[OP:]STEP[:PHASE][/EPOCH]), \
         FTLA_MPIEXEC (launcher), FTLA_MPIEXEC_ARGS (extra launcher\narguments, e.g. a hostfile), FTLA_DEBUG=1 \
         (trace repairs), FTLA_REPAIR_TIMEOUT (seconds before a stalled repair is reported).\n",
    );
    s
}

fn usage_exit(spec: Option<&CommandSpec>, e: UsageError) -> ! {
    eprintln!("ftla: {e}");
    match spec {
        Some(s) => eprintln!("Try `ftla {} --help`.", s.name),
        None => eprintln!("Try `ftla --help`."),
    }
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        print!("{}", top_help());
        std::process::exit(2);
    };
    if cmd == "--help" || cmd == "-h" || cmd == "help" {
        print!("{}", top_help());
        return;
    }
    if cmd == "--version" {
        println!("ftla {}", env!("CARGO_PKG_VERSION"));
        return;
    }
    let Some(spec) = COMMANDS.iter().copied().find(|c| c.name == cmd) else {
        usage_exit(None, UsageError(format!("unknown command `{cmd}`")));
    };
    let rest = &args[1..];
    if rest.iter().any(|a| a == "--help" || a == "-h") {
        print!("{}", spec.help());
        return;
    }
    let opts = spec.parse(rest).unwrap_or_else(|e| usage_exit(Some(spec), e));
    let timeout = opts.num("timeout", 0u64).unwrap_or_else(|e| usage_exit(Some(spec), e));
    enum Job {
        Demo(demo::DemoArgs),
        Repair(repair::RepairArgs),
    }
    let job = match spec.name {
        "demo" => demo::DemoArgs::from_opts(&opts).map(Job::Demo),
        _ => repair::RepairArgs::from_opts(&opts).map(Job::Repair),
    }
    .unwrap_or_else(|e| usage_exit(Some(spec), e));
    let nprocs = match &job {
        Job::Demo(a) => a.nprocs(),
        Job::Repair(a) => a.nprocs(),
    };
    if !inside_mpi() {
        relaunch(&Relaunch {
            nprocs,
            timeout: (timeout > 0).then(|| Duration::from_secs(timeout)),
            ulfm: !opts.flag("no-ft"),
        });
    }
    match job {
        Job::Demo(a) => demo::run(a),
        Job::Repair(a) => repair::run(a),
    }
}
