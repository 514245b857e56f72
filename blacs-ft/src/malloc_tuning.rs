//! Keeps glibc from handing large scratch buffers back to the kernel.
//!
//! The factorizations allocate a few panel-sized buffers (1–4 MiB) per step.
//! With glibc's defaults such buffers are mmapped or trimmed off the heap
//! when freed, so every step page-faults them in again — on a VM that is
//! about a millisecond per buffer, several per step, a visible share of a
//! factorization. HPC runtimes commonly pin these settings (Open MPI used to
//! install memory hooks for similar reasons); `FTLA_MALLOC_DEFAULTS=1`
//! leaves glibc's behaviour untouched.

/// Applies the settings once per process (idempotent, cheap).
pub(crate) fn keep_scratch_resident() {
    if std::env::var_os("FTLA_MALLOC_DEFAULTS").is_some_and(|v| v != "0") {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::raw::c_int;
        extern "C" {
            fn mallopt(param: c_int, value: c_int) -> c_int;
        }
        const M_TRIM_THRESHOLD: c_int = -1;
        const M_MMAP_THRESHOLD: c_int = -3;
        // Below 32 MiB (glibc's largest mmap threshold) allocations come
        // from the heap, and the heap is not trimmed below 1 GiB of free
        // top: freed scratch stays mapped for the next step. Matrices
        // themselves (larger) are still mmapped and returned on free.
        // SAFETY: mallopt only changes allocator parameters; a rejected
        // value leaves the default in place.
        unsafe {
            mallopt(M_MMAP_THRESHOLD, 32 << 20);
            mallopt(M_TRIM_THRESHOLD, 1 << 30);
        }
    }
}
