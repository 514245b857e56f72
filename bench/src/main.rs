//! `ftla`: the command-line tool of the ftla library.
//!
//! Started outside MPI, it re-launches itself under `mpiexec --with-ft ulfm`
//! with the right number of ranks (grid + spares), so users rarely type
//! `mpiexec` themselves. Run `ftla --help` for the commands.

mod baseline;
mod cli;
mod demo;
mod factor_cmd;
mod ft_cmd;
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

const QR_DEMO: CommandSpec = CommandSpec {
    name: "demo",
    summary: "The fault-tolerant QR at work: pdgeqrf_ft on a 2x2 grid, one rank SIGKILLed mid-factorization, \
              repair and rebuild from the checksums, then residuals, time, the recovery breakdown and the \
              overhead against a failure-free run and the plain QR, all from the same run.",
    usage: "ftla demo [--grid PxQ] [--n N] [--nb NB] [--kill R] [--spares S] [--json FILE]",
    options: &[
        OptSpec { name: "grid", value: Some("PxQ"), help: "process grid, Q ≥ 2 (default 2x2)" },
        OptSpec { name: "n", value: Some("N"), help: "order of the generated matrix (default 2048)" },
        OptSpec { name: "nb", value: Some("NB"), help: "block size (default 64)" },
        OptSpec { name: "kill", value: Some("R"), help: "grid rank SIGKILLed halfway through (default 1)" },
        OptSpec { name: "spares", value: Some("S"), help: "hot spares (default 0: the dead rank is respawned)" },
        OptSpec { name: "json", value: Some("FILE"), help: "write the results as JSON to FILE" },
        COMMON[0],
        COMMON[1],
    ],
};

const DEMO: CommandSpec = CommandSpec {
    name: "grid-demo",
    summary: "A grid that loses a rank to SIGKILL mid-run, repairs itself (ULFM: revoke, shrink, spawn or spare, \
              merge, split) and shows the repaired grid computing correctly.",
    usage: "ftla grid-demo [--grid PxQ] [--kill R] [--step K] [--steps N] [--spares S]",
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

const FACTOR_OPTIONS: [OptSpec; 19] = [
    OptSpec { name: "ft", value: None, help: "fault-tolerant QR (pdgeqrf_ft): reverse-neighboring checksums, repair in place" },
    OptSpec {
        name: "kill",
        value: Some("R@STEP:PHASE[,...]"),
        help: "with --ft: SIGKILL grid rank R at STEP in PHASE (panel|bcast|update|commit); full kill points also accepted",
    },
    OptSpec { name: "spares", value: Some("S"), help: "with --ft: hot spares parked at start-up (default 0: spawn)" },
    OptSpec {
        name: "compare",
        value: None,
        help: "with --ft: also time the plain QR and a failure-free FT QR in the same run",
    },
    OptSpec {
        name: "reps",
        value: Some("R"),
        help: "with --compare: time the plain / failure-free FT pair R times, alternating, and report medians; with \
               --kill every repetition also repeats the FT run with the kills (needs R spares, or spawns) (default 1)",
    },
    OptSpec { name: "verify", value: None, help: "with --ft: check the checksum relations at the end" },
    OptSpec {
        name: "corrupt",
        value: Some("R@STEP"),
        help: "with --ft: add 1.0 to one element on rank R at STEP (a silent error for --verify to report)",
    },
    OptSpec { name: "grid", value: Some("PxQ"), help: "process grid, row-major ranks (default 1x2)" },
    OptSpec { name: "n", value: Some("N"), help: "columns of the generated matrix (required unless --input)" },
    OptSpec { name: "m", value: Some("M"), help: "rows of the generated matrix (default N)" },
    OptSpec { name: "nb", value: Some("NB"), help: "block size of the 2-D block-cyclic layout (default 64)" },
    OptSpec {
        name: "matrix",
        value: Some("KIND"),
        help: "generated matrix: uniform | dd (diagonally dominant) | spd | cond:C (default: uniform for QR, dd for LU)",
    },
    OptSpec { name: "seed", value: Some("S"), help: "seed of the generated matrix (default 2026)" },
    OptSpec { name: "input", value: Some("FILE"), help: "factor the matrix in FILE (.npy <f8, or .mtx array) instead" },
    OptSpec {
        name: "output",
        value: Some("FILE"),
        help: "write the factored matrix (ScaLAPACK layout) to FILE (.npy or .mtx) and tau / pivots to FILE.tau.npy / FILE.ipiv.npy",
    },
    OptSpec { name: "check", value: None, help: "compute ScaLAPACK's residual checks (QR: also orthogonality)" },
    OptSpec { name: "json", value: Some("FILE"), help: "write the results as JSON to FILE" },
    COMMON[0],
    COMMON[1],
];

const QR: CommandSpec = CommandSpec {
    name: "qr",
    summary: "QR factorization (pdgeqrf) of a generated or given matrix: time, Gflop/s (2MN²−2N³/3), residuals, and \
              the local DGEMM rate measured in the same run.",
    usage: "ftla qr --grid PxQ --n N [--m M] --nb NB [--input FILE] [--output FILE] [--check] [--json FILE]",
    options: &FACTOR_OPTIONS,
};

const LU: CommandSpec = CommandSpec {
    name: "lu",
    summary: "LU factorization with partial pivoting (pdgetrf) of a generated or given matrix: time, Gflop/s \
              (2N³/3), residual, and the local DGEMM rate measured in the same run.",
    usage: "ftla lu --grid PxQ --n N --nb NB [--input FILE] [--output FILE] [--check] [--json FILE]",
    options: &FACTOR_OPTIONS,
};

const COMMANDS: [&CommandSpec; 6] = [&QR_DEMO, &DEMO, &REPAIR, &QR, &LU, &baseline::BASELINE];

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
    if spec.name == "baseline" {
        std::process::exit(baseline::run(rest));
    }
    if rest.iter().any(|a| a == "--help" || a == "-h") {
        print!("{}", spec.help());
        return;
    }
    let opts = spec.parse(rest).unwrap_or_else(|e| usage_exit(Some(spec), e));
    let timeout = opts.num("timeout", 0u64).unwrap_or_else(|e| usage_exit(Some(spec), e));
    enum Job {
        Demo(demo::DemoArgs),
        Repair(repair::RepairArgs),
        Factor(factor_cmd::FactorArgs),
    }
    let job = match spec.name {
        "grid-demo" => demo::DemoArgs::from_opts(&opts).map(Job::Demo),
        "demo" => factor_cmd::FactorArgs::demo(&opts).map(Job::Factor),
        "qr" => factor_cmd::FactorArgs::from_opts(factor_cmd::Factorization::Qr, &opts).map(Job::Factor),
        "lu" => factor_cmd::FactorArgs::from_opts(factor_cmd::Factorization::Lu, &opts).map(Job::Factor),
        _ => repair::RepairArgs::from_opts(&opts).map(Job::Repair),
    }
    .unwrap_or_else(|e| usage_exit(Some(spec), e));
    let nprocs = match &job {
        Job::Demo(a) => a.nprocs(),
        Job::Repair(a) => a.nprocs(),
        Job::Factor(a) => a.nprocs(),
    };
    if !inside_mpi() {
        if let Job::Factor(a) = &job {
            factor_cmd::check_memory(a).unwrap_or_else(|e| {
                eprintln!("ftla: {e}");
                std::process::exit(2)
            });
        }
        relaunch(&Relaunch {
            nprocs,
            timeout: (timeout > 0).then(|| Duration::from_secs(timeout)),
            ulfm: !opts.flag("no-ft"),
        });
    }
    match job {
        Job::Demo(a) => demo::run(a),
        Job::Repair(a) => repair::run(a),
        Job::Factor(a) => factor_cmd::run(a),
    }
}
