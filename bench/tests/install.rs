//! `scripts/install.sh` into a temporary prefix (the libraries and the
//! `ftla` binary built with the tests), then the examples built against
//! the installed files as a user builds them: `examples/c/qr_lu_solve.c`
//! with the distribution's cc and `pkg-config --cflags --libs ftla`, and
//! with the distribution's cmake (`find_package(ftla)`: `ftla::ftla` and
//! `ftla::ftla_static`), `examples/fortran/lu_solve.f90` with cmake; each
//! run under the installed `ftla launch --np 4` (with a kill for some), with
//! no `LD_LIBRARY_PATH`: the programs find their libraries by themselves.

mod common;

use common::c_programs::root;
use harness::Captured;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Runs `cmd` (at most `secs` seconds) and asserts it succeeded
/// (scripts/setup.sh installs pkg-config, cmake and gfortran). The test is
/// alone in its binary: its jobs need no serialising.
fn run_ok(mut cmd: Command, secs: u64) -> Captured {
    cmd.env_remove("LD_LIBRARY_PATH");
    let what = format!("{cmd:?}");
    let out = harness::run(cmd, Duration::from_secs(secs));
    assert_eq!(out.code, Some(0), "{what} failed:\n{}\n{}", out.stdout, out.stderr);
    out
}

/// Configures and builds the CMake project `source` against `prefix` in
/// `build`.
fn cmake_build(source: &str, build: &Path, prefix: &Path) {
    let mut configure = Command::new("cmake");
    configure.arg("-S").arg(root().join(source)).arg("-B").arg(build);
    configure.arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()));
    run_ok(configure, 300);
    let mut make = Command::new("cmake");
    make.arg("--build").arg(build);
    run_ok(make, 300);
}

/// `PREFIX/bin/ftla launch --np 4 -- PROGRAM ARGS` with `FTLA_KILL = kill`;
/// asserts that it succeeded and that every grid rank printed a line
/// starting with `tag` and holding `want`.
fn launch_ok(prefix: &Path, program: &Path, args: &[&str], kill: &str, tag: &str, want: &str) {
    let mut cmd = Command::new(prefix.join("bin/ftla"));
    cmd.args(["launch", "--np", "4", "--timeout", "120", "--"]).arg(program).args(args);
    cmd.env("FTLA_KILL", kill);
    let out = run_ok(cmd, 150);
    for r in 0..4 {
        let line = format!("{tag}: grid rank {r} ");
        let l = out.stdout.lines().find(|l| l.starts_with(&line));
        let l = l.unwrap_or_else(|| panic!("no line of grid rank {r}:\n{}\n{}", out.stdout, out.stderr));
        assert!(l.contains(want), "{l}");
    }
    if !kill.is_empty() {
        assert!(out.stderr.contains("injecting SIGKILL"), "{}", out.stderr);
    }
}

#[test]
fn an_installed_ftla_builds_c_and_fortran_programs_with_pkg_config_and_cmake() {
    let dir = std::env::temp_dir().join(format!("ftla-install-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let prefix = dir.join("prefix");
    // What the tests were built with: the ftla binary's directory (its
    // libftla.so and libftla.a in deps/).
    let built = Path::new(env!("CARGO_BIN_EXE_ftla")).parent().expect("a target directory");
    let mut install = Command::new(root().join("scripts/install.sh"));
    install.arg("--from").arg(built).arg(&prefix);
    run_ok(install, 300);
    for f in [
        "bin/ftla",
        "lib/libftla.so",
        "lib/libftla.a",
        "include/ftla.h",
        "include/ftla.f90",
        "lib/pkgconfig/ftla.pc",
        "lib/cmake/ftla/ftlaConfig.cmake",
        "lib/cmake/ftla/ftlaConfigVersion.cmake",
    ] {
        assert!(prefix.join(f).is_file(), "{f} not installed");
    }

    // pkg-config and the distribution's C compiler.
    let mut pc = Command::new("pkg-config");
    pc.args(["--cflags", "--libs", "ftla"]).env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"));
    let flags = run_ok(pc, 60).stdout;
    assert!(flags.contains("-lftla"), "{flags}");
    let with_pc = dir.join("qr_lu_solve_pkg_config");
    let mut cc = Command::new("cc");
    cc.args(["-O2", "-Wall", "-Werror"]).arg(root().join("examples/c/qr_lu_solve.c"));
    cc.args(flags.split_whitespace()).arg("-o").arg(&with_pc);
    run_ok(cc, 120);

    // CMake: the C example (shared and static), the Fortran example.
    cmake_build("examples/c", &dir.join("build-c"), &prefix);
    cmake_build("examples/fortran", &dir.join("build-fortran"), &prefix);

    let (c_args, c_ok) = (["128", "16", "2", "2"], "R equal to LAPACK's");
    launch_ok(&prefix, &with_pc, &c_args, "", "qr_lu_solve", c_ok);
    let with_cmake = dir.join("build-c/qr_lu_solve");
    launch_ok(&prefix, &with_cmake, &c_args, "1@qr:3:update", "qr_lu_solve", c_ok);
    launch_ok(&prefix, &dir.join("build-c/qr_lu_solve_static"), &c_args, "", "qr_lu_solve", c_ok);
    // Factor once, solve three right-hand sides, grid rank 1 dying after
    // the first (by its own SIGKILL).
    let many = dir.join("build-c/factor_once_solve_many");
    launch_ok(&prefix, &many, &["128", "16", "3", "1", "0"], "", "factor_once_solve_many", "x correct");
    let fortran = dir.join("build-fortran/lu_solve");
    launch_ok(&prefix, &fortran, &["128", "16", "2", "2"], "2@lu:2:update", "lu_solve", "x correct");
    std::fs::remove_dir_all(&dir).expect("remove the temporary prefix");
}
