//! What the tests of programs on the C ABI (C and Fortran) share: the
//! `libftla.so` built with the tests, and `ftla launch` of such a program.

use harness::Captured;
use std::path::{Path, PathBuf};

/// The workspace's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The directory of the `libftla.so` built with this test (a dependency's
/// cdylib stays in `deps/`; the workspace's own build is one up).
pub fn lib_dir() -> PathBuf {
    let deps = std::env::current_exe().expect("test path").parent().expect("deps dir").to_path_buf();
    [deps.clone(), deps.join("..")]
        .into_iter()
        .find(|d| d.join("libftla.so").is_file())
        .unwrap_or_else(|| panic!("no libftla.so next to {} (cargo builds it with ftla-capi)", deps.display()))
}

/// `ftla launch ARGS` with `FTLA_KILL = kill`, the program loading the
/// library it was linked with (`cargo test` puts target directories with
/// other builds of it on `LD_LIBRARY_PATH`, which goes before the
/// program's RUNPATH).
pub fn launch(args: &[&str], kill: &str) -> Captured {
    let lib = lib_dir().display().to_string();
    super::ftla_with(args, &[("FTLA_KILL", kill), ("LD_LIBRARY_PATH", &lib)])
}
