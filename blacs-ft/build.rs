//! Compiles the MPI shim with the chosen MPI's own compiler wrapper and links
//! the MPI library with an rpath, so the binary always loads the MPI it was
//! built against (the PyPI Open MPI and a distribution Open MPI both name
//! their library libmpi.so.40).
//!
//! Which MPI: `$FTLA_MPICC`, else `$MPICC`, else the project's `.venv/bin/mpicc`
//! (made by `scripts/setup.sh`), else `mpicc` on `PATH`.
use std::path::{Path, PathBuf};
use std::process::Command;

fn which(prog: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(prog)).find(|p| p.is_file())
}

fn main() {
    for v in ["FTLA_MPICC", "MPICC", "PATH"] {
        println!("cargo:rerun-if-env-changed={v}");
    }
    println!("cargo:rerun-if-changed=csrc/ftla_mpi.c");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let venv_mpicc = manifest.join("../.venv/bin/mpicc");
    println!("cargo:rerun-if-changed={}", venv_mpicc.display());

    let mpicc: PathBuf = std::env::var_os("FTLA_MPICC")
        .or_else(|| std::env::var_os("MPICC"))
        .map(PathBuf::from)
        .or_else(|| venv_mpicc.is_file().then(|| venv_mpicc.canonicalize().unwrap()))
        .or_else(|| which("mpicc"))
        .unwrap_or_else(|| {
            panic!(
                "no MPI C compiler found: run scripts/setup.sh (installs Open MPI with ULFM \
                 into .venv/), or set MPICC to your MPI's mpicc"
            )
        });
    let show = Command::new(&mpicc)
        .arg("-show")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} -show: {e}", mpicc.display()));
    assert!(show.status.success(), "{} -show failed: {}", mpicc.display(), String::from_utf8_lossy(&show.stderr));
    let show = String::from_utf8_lossy(&show.stdout).to_string();
    let mut libdirs: Vec<String> = Vec::new();
    let mut libs: Vec<String> = Vec::new();
    let mut toks = show.split_whitespace().skip(1).peekable();
    while let Some(t) = toks.next() {
        if let Some(d) = t.strip_prefix("-L") {
            libdirs.push(d.to_string());
        } else if let Some(l) = t.strip_prefix("-l") {
            libs.push(l.to_string());
        } else if t == "-Wl,-rpath" {
            if let Some(d) = toks.next().and_then(|n| n.strip_prefix("-Wl,")) {
                libdirs.push(d.to_string());
            }
        } else if let Some(d) = t.strip_prefix("-Wl,-rpath,") {
            libdirs.push(d.to_string());
        }
    }
    libdirs.dedup();

    cc::Build::new()
        .compiler(&mpicc)
        .file("csrc/ftla_mpi.c")
        .flag_if_supported("-Wno-unused-parameter")
        .opt_level(2)
        .compile("ftla_mpi");

    for d in &libdirs {
        println!("cargo:rustc-link-search=native={d}");
    }
    for l in &libs {
        println!("cargo:rustc-link-lib=dylib={l}");
    }
    let rpath = libdirs.join(":");
    // Dependent crates read this as DEP_FTLA_MPI_RPATH and add the rpath to
    // their own binaries (link args do not propagate through rlibs).
    println!("cargo:rpath={rpath}");
    for d in &libdirs {
        println!("cargo:rustc-link-arg=-Wl,--disable-new-dtags,-rpath,{d}");
    }
    let bindir = mpicc.parent().unwrap_or(Path::new("."));
    let mpiexec = bindir.join("mpiexec");
    println!("cargo:rustc-env=FTLA_BUILD_MPIEXEC={}", mpiexec.display());
    println!("cargo:rustc-env=FTLA_BUILD_MPICC={}", mpicc.display());
    println!("cargo:mpiexec={}", mpiexec.display());
}
