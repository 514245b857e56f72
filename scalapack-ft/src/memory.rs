//! Memory needs, known before allocating.
//!
//! Every large buffer of the library (a matrix's local array, the extended
//! matrix and sums of the fault-tolerant factorizations) is allocated
//! through [`zeroed`]: its size is compared with the memory this machine
//! has left, and the allocation itself cannot abort the process — a need
//! that cannot be met is an [`Error::Memory`], which the collective
//! routines agree on so that every rank returns it. Large ones are offered
//! transparent huge pages.

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
    // (Before the zeros are written: the pages are faulted in by them.)
    advise_huge_pages(&mut v.spare_capacity_mut()[..extra]);
    v.resize(len, 0.0);
    Ok(())
}

/// Buffers smaller than this are left on the kernel's ordinary pages.
const HUGE_PAGE_MIN_BYTES: usize = 8 << 20;

/// Asks the kernel to back the 2 MiB-aligned part of `buf` with
/// transparent huge pages where it is large (at least
/// [`HUGE_PAGE_MIN_BYTES`]): OpenBLAS packs a trailing update's operand
/// column by column, each column on its own 4 KiB page where columns are
/// 32 KiB apart, so with ordinary pages every column of a packed block
/// costs a TLB miss. Takes effect for pages not yet touched, and only where
/// the system leaves huge pages to the program (`madvise` in
/// `/sys/kernel/mm/transparent_hugepage/enabled`; with `always` they are
/// used anyway, with `never` not at all). Advice only: its failure changes
/// nothing. Local. (4096² QR, NB 64, AMD EPYC, Zen kernel, five
/// interleaved rounds: 1×2 30.4 → 31.2 Gflop/s, 2×1 30.9 → 31.2, 2×2
/// 29.0 → 29.7.)
fn advise_huge_pages<T>(buf: &mut [T]) {
    const HUGE: usize = 2 << 20;
    let bytes = std::mem::size_of_val(buf);
    if bytes < HUGE_PAGE_MIN_BYTES {
        return;
    }
    let start = buf.as_mut_ptr() as usize;
    let (from, to) = (start.next_multiple_of(HUGE), (start + bytes) / HUGE * HUGE);
    if to > from {
        // SAFETY: [from, to) lies inside `buf`, memory this process owns;
        // MADV_HUGEPAGE changes how its pages are backed, not their content.
        unsafe { libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE) };
    }
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

    /// The `THPeligible` field of the mapping of this process holding
    /// `addr` (`/proc/self/smaps`).
    fn huge_page_eligible(addr: usize) -> Option<bool> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split_whitespace().next().and_then(|r| r.split_once('-'));
            let bounds =
                range.and_then(|(a, b)| Some((usize::from_str_radix(a, 16).ok()?, usize::from_str_radix(b, 16).ok()?)));
            // (A mapping's first line starts with its range, its fields
            // with a name and a colon.)
            if let Some((from, to)) = bounds {
                inside = (from..to).contains(&addr);
            } else if inside {
                if let Some(v) = line.strip_prefix("THPeligible:") {
                    return Some(v.trim() == "1");
                }
            }
        }
        None
    }

    #[test]
    fn large_arrays_are_offered_huge_pages_and_small_ones_are_not() {
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
        if !mode.contains("[madvise]") {
            // ("always": every mapping is eligible; "never": none is. Only
            // where the program decides does the advice show.)
            eprintln!("transparent huge pages not in madvise mode here ({}): nothing to check", mode.trim());
            return;
        }
        let large = zeroed(HUGE_PAGE_MIN_BYTES / 8 + (4 << 20) / 8, "test", "large").unwrap();
        let middle = (large.as_ptr() as usize + std::mem::size_of_val(&large[..]) / 2) & !((2 << 20) - 1);
        assert_eq!(huge_page_eligible(middle), Some(true), "a large array's aligned middle");
        // (A mapping of its own, which no earlier allocation of this
        // process can have advised.)
        let len = 1 << 20;
        // SAFETY: a fresh private anonymous mapping, unmapped below and
        // used only through `small` meanwhile.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(ptr, libc::MAP_FAILED);
        // SAFETY: `len` bytes at `ptr`, mapped above, zero-filled.
        let small = unsafe { std::slice::from_raw_parts_mut(ptr as *mut f64, len / 8) };
        advise_huge_pages(small);
        assert_eq!(huge_page_eligible(ptr as usize), Some(false), "a small array");
        // SAFETY: the mapping made above, no longer used.
        unsafe { libc::munmap(ptr, len) };
    }

    #[test]
    fn this_machine_reports_its_memory() {
        assert!(available_bytes().is_some_and(|b| b > 0));
    }
}
