// Shared by the build scripts of every crate that produces binaries or tests:
// put the MPI library directory that blacs-ft was built against into their
// rpath (link arguments do not propagate from a library crate).
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_FTLA_MPI_RPATH");
    println!("cargo:rerun-if-env-changed=FTLA_BLAS_LIB");
    // The local kernels use OpenBLAS (BLAS and LAPACK in one library on
    // Debian: libopenblas-dev). FTLA_BLAS_LIB names another library.
    let blas = std::env::var("FTLA_BLAS_LIB").unwrap_or_else(|_| "openblas".to_string());
    println!("cargo:rustc-link-lib=dylib={blas}");
    if let Ok(rpath) = std::env::var("DEP_FTLA_MPI_RPATH") {
        for d in rpath.split(':').filter(|d| !d.is_empty()) {
            println!("cargo:rustc-link-arg=-Wl,--disable-new-dtags,-rpath,{d}");
        }
    }
}
