//! The Fortran interface: `capi/include/ftla.f90` checked against the C
//! header it declares, and `examples/fortran/lu_solve.f90` compiled with
//! the distribution's gfortran (no MPI Fortran bindings) against
//! `libftla.so`, run under `ftla launch --np 4` on a 2x2 grid, with kills.

mod common;

use common::c_programs::{launch as launch_program, lib_dir, root};
use harness::Captured;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The `#define FTLA_* VALUE` constants of ftla.h.
fn header_constants(h: &str) -> BTreeMap<String, i64> {
    h.lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("#define ")?.split_whitespace();
            let (name, value) = (w.next()?, w.next()?);
            Some((name.to_string(), value.parse().ok()?))
        })
        .filter(|(n, _)| n.starts_with("FTLA_"))
        .collect()
}

/// The functions of ftla.h and their numbers of arguments.
fn header_functions(h: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let mut text = h;
    while let Some(open) = text.find('(') {
        let close = open + text[open..].find(')').expect("a closing parenthesis");
        let before = &text[..open];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let decl = &before[line_start..];
        // A prototype starts its line with its return type.
        if (decl.starts_with("void ") || decl.starts_with("int ")) && text[close..].starts_with(");") {
            let name = decl.split_whitespace().last().expect("a name");
            out.insert(name.to_string(), text[open + 1..close].split(',').count());
        }
        text = &text[close..];
    }
    out
}

/// The module's text without comments, its continuation lines joined.
fn fortran_statements(f: &str) -> String {
    f.lines().map(|l| l.split('!').next().unwrap_or("")).collect::<Vec<_>>().join("\n").replace("&\n", " ")
}

/// The `integer(c_int), parameter, public :: NAME = VALUE` of the module.
fn module_constants(f: &str) -> BTreeMap<String, i64> {
    fortran_statements(f)
        .lines()
        .filter_map(|l| {
            let (_, rest) = l.split_once("parameter, public ::")?;
            let (name, value) = rest.split_once('=')?;
            Some((name.trim().to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

/// The link names of the module's interfaces (`bind(C, name="...")`) and
/// their numbers of dummy arguments.
fn module_functions(f: &str) -> BTreeMap<String, usize> {
    fortran_statements(f)
        .lines()
        .filter_map(|l| {
            let (_, bound) = l.split_once("bind(C, name=\"")?;
            let name = bound.split('"').next()?;
            // (After `subroutine NAME` or `function NAME`: a function's
            // type has parentheses too.)
            let proc = l.find("subroutine ").or_else(|| l.find("function "))?;
            let open = proc + l[proc..].find('(')?;
            let args = &l[open + 1..open + l[open..].find(')')?];
            let count = if args.trim().is_empty() { 0 } else { args.split(',').count() };
            Some((name.to_string(), count))
        })
        .collect()
}

#[test]
fn the_fortran_module_declares_every_function_and_code_of_the_c_header() {
    let (h, f) = (read("capi/include/ftla.h"), read("capi/include/ftla.f90"));
    let constants = header_constants(&h);
    assert!(constants.contains_key("FTLA_INFO_PROCESS_LOST"), "{constants:?}");
    assert_eq!(module_constants(&f), constants);
    let functions = header_functions(&h);
    assert!(functions.len() >= 15 && functions.get("pdcg_ft_") == Some(&18), "{functions:?}");
    assert_eq!(module_functions(&f), functions);
}

/// The example, compiled with its module (once per test binary).
fn example() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("ftla-fortran-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a build directory");
        let out = dir.join("lu_solve");
        let lib = lib_dir();
        let mut fc = Command::new("gfortran");
        fc.args(["-O2", "-std=f2018", "-Wall", "-Werror", "-J"])
            .arg(&dir)
            .arg(root().join("capi/include/ftla.f90"))
            .arg(root().join("examples/fortran/lu_solve.f90"))
            .arg("-L")
            .arg(&lib)
            .arg("-lftla")
            .arg(format!("-Wl,-rpath,{}", lib.display()))
            .arg("-o")
            .arg(&out);
        // (scripts/setup.sh installs gfortran.)
        let done = harness::run(fc, Duration::from_secs(120));
        assert_eq!(done.code, Some(0), "gfortran failed:\n{}\n{}", done.stdout, done.stderr);
        out
    })
}

/// `ftla launch --np NP ARGS -- lu_solve 192 16 2 2` with `FTLA_KILL = kill`.
fn launch(np: &str, args: &[&str], kill: &str) -> Captured {
    let prog = example().display().to_string();
    let mut all = vec!["launch", "--np", np];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--", &prog, "192", "16", "2", "2"]);
    launch_program(&all, kill)
}

/// Every grid rank found its part of X correct, with INFO 0 from the LU
/// and the solve; `replaced`: the rank a replacement took over;
/// `solve_losses`: the solves each survivor saw lose a process.
fn all_correct(out: &Captured, replaced: Option<i32>, solve_losses: u32) {
    let mut got: Vec<(i32, &str)> = out
        .stdout
        .lines()
        .filter_map(|l| Some((l.strip_prefix("lu_solve: grid rank ")?.split_whitespace().next()?.parse().ok()?, l)))
        .collect();
    got.sort();
    let ranks: Vec<i32> = got.iter().map(|(r, _)| *r).collect();
    assert_eq!(ranks, vec![0, 1, 2, 3], "a line per grid rank:\n{}\n{}", out.stdout, out.stderr);
    for (r, l) in got {
        let replacement = replaced == Some(r);
        assert_eq!(l.contains("[replacement]"), replacement, "{l}");
        assert!(l.contains(": x correct ") && l.contains("INFO 0 0;"), "{l}");
        let losses = if replacement { 0 } else { solve_losses };
        assert!(l.ends_with(&format!("; {losses} solve(s) lost a process")), "{l}");
    }
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
}

#[test]
fn a_fortran_program_on_the_module_survives_kills_in_the_lu_and_in_the_solve() {
    // Failure-free.
    all_correct(&launch("4", &[], ""), None, 0);
    // Grid rank 1 killed in step 3 of PDGETRF_FT: a spawned replacement
    // runs the program from the top and joins the LU's recovery.
    let out = launch("4", &[], "1@lu:3:update");
    assert!(out.stderr.contains("injecting SIGKILL into rank 1 at lu:3:update"), "{}", out.stderr);
    all_correct(&out, Some(1), 0);
    // A hot spare takes the place of rank 3, killed in a row exchange.
    all_correct(&launch("5", &["--spares", "1"], "3@lu:2:swap"), Some(3), 0);
    // Rank 2 killed in FTLA_PDGETRS (no fault tolerance): the survivors
    // get FTLA_INFO_PROCESS_LOST, call it again with the replacement, and
    // since the replacement holds no LU factors, factor and solve again.
    let out = launch("4", &[], "2@ftla_pdgetrs:0:call");
    assert!(out.stderr.contains("injecting SIGKILL into rank 2 at ftla_pdgetrs:0:call"), "{}", out.stderr);
    all_correct(&out, Some(2), 1);
    // (The one test of the example: its build goes.)
    std::fs::remove_dir_all(example().parent().expect("its build directory")).expect("remove the build");
}
