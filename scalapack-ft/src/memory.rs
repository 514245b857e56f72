//! Memory needs, known before allocating.
//!
//! Every large buffer of the library (a matrix's local array, the extended
//! matrix and sums of the fault-tolerant factorizations) is allocated
//! through [`zeroed`]: its size is compared with the memory this machine
//! has left, and the allocation itself cannot abort the process — a need
//! that cannot be met is an [`Error::Memory`], which the collective
//! routines agree on so that every rank returns it.

use crate::error::{Error, Result};

/// Bytes in a GiB, for messages.
const GIB: f64 = (1u64 << 30) as f64;

/// `bytes` in GiB.
pub fn gib(bytes: u64) -> f64 {
    bytes as f64 / GIB
}

/// Memory this process may still allocate on this machine, in bytes: the
/// kernel's `MemAvailable`, or less where a cgroup (a container, a batch
/// job's allocation) sets a lower limit. `None` where it cannot be read.
pub fn available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
        text.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
    });
    let cgroup = (|| {
        let max = std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok()?.trim().parse::<u64>().ok()?;
        let used = std::fs::read_to_string("/sys/fs/cgroup/memory.current").ok()?.trim().parse::<u64>().ok()?;
        Some(max.saturating_sub(used))
    })();
    match (meminfo, cgroup) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The error for `bytes` that `routine` could not get for `what`.
pub fn memory_error(routine: &str, what: &str, bytes: u64) -> Error {
    Error::Memory { routine: routine.into(), what: what.into(), bytes, available: available_bytes() }
}

/// `len` zeros, or [`Error::Memory`] when this machine has not that much
/// memory left or the allocation fails (never an abort). Local.
pub fn zeroed(len: usize, routine: &str, what: &str) -> Result<Vec<f64>> {
    let mut v = Vec::new();
    grow_zeroed(&mut v, len, routine, what)?;
    Ok(v)
}

/// Grows `v` to `len` elements with zeros (its content kept), under the
/// rules of [`zeroed`]. Local.
pub fn grow_zeroed(v: &mut Vec<f64>, len: usize, routine: &str, what: &str) -> Result<()> {
    if v.len() >= len {
        return Ok(());
    }
    let extra = len - v.len();
    let bytes = (extra as u64).saturating_mul(std::mem::size_of::<f64>() as u64);
    if available_bytes().is_some_and(|a| bytes > a) {
        return Err(memory_error(routine, what, bytes));
    }
    v.try_reserve_exact(extra).map_err(|_| memory_error(routine, what, bytes))?;
    v.resize(len, 0.0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impossible_allocation_is_an_error_not_an_abort() {
        let e = zeroed(usize::MAX / 16, "test", "a huge array").unwrap_err();
        match &e {
            Error::Memory { routine, what, bytes, .. } => {
                assert_eq!((routine.as_str(), what.as_str()), ("test", "a huge array"));
                assert!(*bytes > 1 << 60);
            }
            other => panic!("{other:?}"),
        }
        assert!(e.to_string().contains("GiB"), "{e}");
    }

    #[test]
    fn growing_keeps_the_content() {
        let mut v = vec![1.0, 2.0];
        grow_zeroed(&mut v, 4, "test", "v").unwrap();
        assert_eq!(v, [1.0, 2.0, 0.0, 0.0]);
        grow_zeroed(&mut v, 1, "test", "v").unwrap();
        assert_eq!(v.len(), 4);
    }

    #[test]
    fn this_machine_reports_its_memory() {
        assert!(available_bytes().is_some_and(|b| b > 0));
    }
}
