//! How a rank waits for an MPI request: without holding a core that
//! another rank of its node needs.

use crate::ffi::{self, Handle};
use crate::runtime::trace;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long a waiting rank tests in a tight loop (short waits cost
/// nothing extra).
const SPIN: Duration = Duration::from_micros(100);
/// How long it then yields its core between tests where every computing
/// rank of the node has a core of its own.
const YIELD_OWN_CORE: Duration = Duration::from_millis(20);
/// The longest sleep between two tests after that.
const LONGEST_NAP: Duration = Duration::from_micros(200);

/// Completes a request without holding a core while it waits: MPI_Test in
/// a tight loop for the first ~100 µs, then yielding the core between
/// tests for a while ([`yield_window`]), then with short sleeps in
/// between (a long wait costs no CPU). A blocking MPI wait spins, which on
/// an oversubscribed node takes the core from the rank everybody is
/// waiting for. Returns MPI's code.
pub(crate) fn wait_politely(req: &mut Handle) -> c_int {
    let start = Instant::now();
    let window = yield_window();
    let mut nap = Duration::from_micros(10);
    loop {
        let mut done: c_int = 0;
        // SAFETY: req is a live request handle; done is an out-parameter.
        let rc = unsafe { ffi::ftla_test(req, &mut done) };
        if rc != 0 || done != 0 {
            return rc;
        }
        let waited = start.elapsed();
        if waited > window {
            std::thread::sleep(nap);
            nap = (nap * 2).min(LONGEST_NAP);
        } else if waited > SPIN {
            std::thread::yield_now();
        }
    }
}

/// Grid ranks on this process's node, counted on the grid's communicator
/// when it was last built (0 before this process holds a grid rank).
static GRID_RANKS_ON_NODE: AtomicUsize = AtomicUsize::new(0);

/// Records how many grid ranks share this process's node: counted on the
/// grid's communicator each time it is built (at the start and after every
/// repair, so a replacement spawned elsewhere or a promoted spare is seen),
/// parked hot spares not among them (they sleep).
pub(crate) fn set_grid_ranks_on_node(ranks: usize) {
    trace!("grid ranks on this node, for the waits: {ranks}");
    GRID_RANKS_ON_NODE.store(ranks, Ordering::Relaxed);
}

/// How long a waiting rank yields its core between tests before it
/// sleeps. Where every grid rank of the node has a core of its own, 20 ms:
/// a yield then costs nothing, and the rank sees its message as soon as it
/// arrives, which a sleep would delay by its length. On an oversubscribed
/// node, nothing beyond the tight loop: a rank that yields stays runnable,
/// so the scheduler counts it as load and balances the node's cores
/// between the ranks that only wait and the ones that compute (a waiting
/// pair can hold a core while two computing ranks share the other); a
/// sleeping rank leaves its core to whoever computes. (Measured on two
/// cores, 4 ranks, LU with checksums at N = 4096: the fault-tolerant run's
/// time over the plain one's, paired, drops by about 4 %.)
fn yield_window() -> Duration {
    static CORES: OnceLock<Option<usize>> = OnceLock::new();
    let cores = *CORES.get_or_init(usable_cores);
    if oversubscribed(GRID_RANKS_ON_NODE.load(Ordering::Relaxed), cores) {
        SPIN
    } else {
        YIELD_OWN_CORE
    }
}

/// Whether `ranks` grid ranks (0: not known yet) outnumber the `cores`
/// they share (`None`: not known, or each rank bound to cores of its own).
fn oversubscribed(ranks: usize, cores: Option<usize>) -> bool {
    cores.is_some_and(|cores| ranks > cores)
}

/// The cores the ranks of this node share: `None` when the process is
/// bound to some of the node's cores (a launcher binds ranks to cores of
/// their own unless told otherwise).
fn usable_cores() -> Option<usize> {
    let cores = std::thread::available_parallelism().ok()?.get();
    let found = (!bound_to_some_cores()).then_some(cores);
    trace!("cores the ranks of this node share, for the waits: {found:?}");
    found
}

/// Whether this process may run on fewer cores than the node has online.
fn bound_to_some_cores() -> bool {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity
    // writes at most its size; sysconf has no preconditions.
    let (allowed, online) = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return false;
        }
        (libc::CPU_COUNT(&set) as i64, libc::sysconf(libc::_SC_NPROCESSORS_ONLN))
    };
    online > 0 && allowed < online
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_grid_ranks_than_cores_is_oversubscribed() {
        assert!(oversubscribed(4, Some(2)));
        assert!(!oversubscribed(2, Some(2)));
        // Not yet in a grid, or bound to cores of its own.
        assert!(!oversubscribed(0, Some(2)));
        assert!(!oversubscribed(4, None));
    }

    #[test]
    fn the_test_process_is_not_bound_to_some_cores_unless_its_affinity_says_so() {
        let allowed = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as i64;
        // SAFETY: sysconf has no preconditions.
        let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        if allowed >= online {
            assert!(!bound_to_some_cores());
        }
    }
}
