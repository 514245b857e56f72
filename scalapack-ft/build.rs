// rpath to the MPI library blacs-ft was built against.
include!("../build-support/rpath.rs");
