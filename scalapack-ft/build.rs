// rpath to the MPI library blacs-ft was built against, and the system
// OpenBLAS (BLAS + LAPACK in one library on Debian) for the local kernels.
include!("../build-support/rpath.rs");
