// Shared by the build scripts of every crate that produces binaries or tests:
// put the MPI library directory that blacs-ft was built against into their
// rpath (link arguments do not propagate from a library crate). BLAS and
// LAPACK are linked by blas-src / openblas-src.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_FTLA_MPI_RPATH");
    if let Ok(rpath) = std::env::var("DEP_FTLA_MPI_RPATH") {
        for d in rpath.split(':').filter(|d| !d.is_empty()) {
            println!("cargo:rustc-link-arg=-Wl,--disable-new-dtags,-rpath,{d}");
        }
    }
}
