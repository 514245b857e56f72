//! Where a job lost whole can run again: the hosts of `FTLA_MPIEXEC_ARGS`
//! that still start a process, their slots, and the grid those slots hold.
//!
//! A lost node takes its slots with it. Before the launcher resumes a lost
//! job it tries every host of the job's host list (`--hostfile`,
//! `--machinefile`, `--default-hostfile`, `--host`/`-H`) with a one-process
//! job; the hosts that answer make the next job's host list, and when
//! their slots no longer hold the job, a program that says what grid it
//! runs ([`JobGrid`]) resumes on the largest grid they hold
//! ([`grid_for_slots`]), told by [`GRID_VAR`].

use std::process::{Command, Stdio};
use std::time::Duration;

/// The grid and hot spares a job that the launcher resumes on fewer slots
/// runs with (`PxQ+S`), in place of those it was started with. Set by the
/// launcher only (empty otherwise); the `ftla` tool reads it
/// ([`parse_job_grid`]).
pub const GRID_VAR: &str = "FTLA_GRID";

/// How long one host may take to start a one-process job before it counts
/// as lost.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// The grid of a program that can run on another one (`ftla qr|lu|cg`,
/// whose checkpoints resume on any grid): what the launcher needs to pick
/// a smaller grid after a lost node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobGrid {
    /// Its grid.
    pub p: u32,
    pub q: u32,
    /// The fewest process columns its checksums need (2; F + 1 with F
    /// rotating checksums).
    pub min_q: u32,
    /// Its hot spares (kept on a smaller grid as far as the slots allow).
    pub spares: u32,
}

/// The grid a job of grid `p`×`q`, needing at least `min_q` process columns,
/// runs on with `slots` processes: its own when they hold it; otherwise
/// the largest grid (the most processes) with at least `min_q` columns,
/// and among grids of one size the one with the job's `p` rows, then the
/// squarer (fewer rows than columns): 2x3 on 4 slots is 2x2, on 5 1x5;
/// 2x2 on 3 slots is 1x3; 3x4 on 8 is 2x4. `None` when the slots hold no
/// grid.
pub fn grid_for_slots(p: u32, q: u32, min_q: u32, slots: u32) -> Option<(u32, u32)> {
    let min_q = min_q.max(1);
    if p * q <= slots {
        return Some((p, q));
    }
    (1..=slots)
        .filter_map(|rows| {
            let cols = slots / rows;
            (cols >= min_q).then_some((rows, cols))
        })
        .max_by_key(|&(rows, cols)| (rows * cols, rows == p, rows <= cols, std::cmp::Reverse(rows.abs_diff(cols))))
}

/// [`GRID_VAR`]'s value: the grid's rows and columns, and the hot spares.
pub fn parse_job_grid(v: &str) -> Result<(u32, u32, u32), String> {
    let bad = || format!("{GRID_VAR}: wants PxQ+S, got `{v}`");
    let (grid, spares) = v.split_once('+').unwrap_or((v, "0"));
    let (p, q) = grid.split_once('x').ok_or_else(bad)?;
    let n = |s: &str| s.trim().parse::<u32>().map_err(|_| bad());
    let (p, q, s) = (n(p)?, n(q)?, n(spares)?);
    if p == 0 || q == 0 {
        return Err(bad());
    }
    Ok((p, q, s))
}

/// A job's hosts as its `mpiexec` arguments name them, with their slots,
/// and the other arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostList {
    /// Each host and its slots, in the list's order (`None`: not said in
    /// the hostfile, so `mpiexec`'s default, this machine's count of cores
    /// for the other hosts too).
    pub hosts: Vec<(String, Option<u32>)>,
    /// The arguments that do not name hosts.
    rest: Vec<String>,
}

impl HostList {
    /// The hosts of `args` (`FTLA_MPIEXEC_ARGS`): `None` when they name
    /// none (the job runs on this machine). A hostfile's lines are `HOST
    /// [slots=N]` (one slot when not said; `#` starts a comment); `--host`
    /// takes `HOST[:N],…`.
    ///
    /// # Errors
    /// A hostfile that cannot be read, or a host option without its value.
    pub fn parse(args: &str) -> Result<Option<HostList>, String> {
        let mut words = args.split_whitespace();
        let (mut hosts, mut rest, mut named) = (Vec::new(), Vec::new(), false);
        while let Some(w) = words.next() {
            let (flag, inline) = match w.split_once('=') {
                Some((f, v)) if f.starts_with('-') => (f, Some(v.to_string())),
                _ => (w, None),
            };
            let file =
                ["--hostfile", "-hostfile", "--machinefile", "-machinefile", "--default-hostfile"].contains(&flag);
            let list = ["--host", "-host", "-H"].contains(&flag);
            if !file && !list {
                rest.push(w.to_string());
                continue;
            }
            let value = inline
                .or_else(|| words.next().map(str::to_string))
                .ok_or_else(|| format!("{flag} without its value in FTLA_MPIEXEC_ARGS"))?;
            named = true;
            if file {
                let text = std::fs::read_to_string(&value).map_err(|e| format!("hostfile {value}: {e}"))?;
                hosts.extend(text.lines().filter_map(hostfile_line));
            } else {
                // (`--host H` is one slot.)
                hosts.extend(value.split(',').filter(|h| !h.is_empty()).map(|h| match h.split_once(':') {
                    Some((h, n)) => (h.to_string(), Some(n.parse().unwrap_or(1))),
                    None => (h.to_string(), Some(1)),
                }));
            }
        }
        Ok(named.then_some(HostList { hosts, rest }))
    }

    /// Their slots; a host whose count the hostfile does not say counts
    /// as this machine's cores (`mpiexec`'s default).
    pub fn slots(&self) -> u32 {
        let cores = super::local_cores() as u32;
        self.hosts.iter().map(|&(_, n)| n.unwrap_or(cores)).sum()
    }

    /// `mpiexec` arguments naming these hosts only (`--host H:N,…`; `H`
    /// alone where the count was not said) and the others unchanged.
    pub fn args(&self) -> String {
        let list: Vec<String> = self
            .hosts
            .iter()
            .map(|(h, n)| match n {
                Some(n) => format!("{h}:{n}"),
                None => h.clone(),
            })
            .collect();
        let mut words = self.rest.clone();
        words.extend(["--host".to_string(), list.join(",")]);
        words.join(" ")
    }

    /// The hosts that start a process now: each is tried with a
    /// one-process job (`mpiexec … --host H:1 -n 1 true`, at most 30 s;
    /// all at once).
    pub fn answering(&self) -> HostList {
        let up: Vec<bool> = std::thread::scope(|s| {
            let tries: Vec<_> = self.hosts.iter().map(|(h, _)| s.spawn(move || self.starts_a_process(h))).collect();
            tries.into_iter().map(|t| t.join().unwrap_or(false)).collect()
        });
        let hosts = self.hosts.iter().zip(up).filter(|(_, up)| *up).map(|(h, _)| h.clone()).collect();
        HostList { hosts, rest: self.rest.clone() }
    }

    fn starts_a_process(&self, host: &str) -> bool {
        let mut cmd = Command::new(crate::mpiexec_path());
        // SAFETY: getuid has no preconditions.
        if unsafe { libc::getuid() } == 0 {
            cmd.arg("--allow-run-as-root");
        }
        cmd.args(&self.rest).args(["--host", &format!("{host}:1"), "-n", "1", "true"]);
        cmd.stdin(Stdio::null());
        super::run_with_timeout(cmd, PROBE_TIMEOUT).is_ok_and(|c| c.code == Some(0))
    }
}

/// A hostfile line's host and slots, if said (`None` for a blank or
/// comment line).
fn hostfile_line(line: &str) -> Option<(String, Option<u32>)> {
    let line = line.split('#').next()?.trim();
    let mut words = line.split_whitespace();
    let host = words.next()?.to_string();
    let slots = words.find_map(|w| w.strip_prefix("slots=")?.parse().ok());
    Some((host, slots))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_for_fewer_slots_keeps_the_rows_or_is_the_largest() {
        // Enough slots: the job's own grid.
        assert_eq!(grid_for_slots(2, 2, 2, 4), Some((2, 2)));
        assert_eq!(grid_for_slots(2, 2, 2, 9), Some((2, 2)));
        // The largest grid the slots hold; of equals, the job's rows.
        assert_eq!(grid_for_slots(2, 3, 2, 4), Some((2, 2)));
        assert_eq!(grid_for_slots(2, 3, 2, 5), Some((1, 5)));
        assert_eq!(grid_for_slots(2, 2, 2, 2), Some((1, 2)));
        assert_eq!(grid_for_slots(2, 2, 2, 3), Some((1, 3)));
        assert_eq!(grid_for_slots(4, 4, 2, 12), Some((4, 3)));
        // Otherwise the squarer, fewer rows than columns.
        assert_eq!(grid_for_slots(3, 4, 2, 8), Some((2, 4)));
        assert_eq!(grid_for_slots(4, 4, 2, 9), Some((3, 3)));
        // Rotating checksums (F = 2) need three columns.
        assert_eq!(grid_for_slots(2, 3, 3, 5), Some((1, 5)));
        assert_eq!(grid_for_slots(2, 4, 3, 6), Some((2, 3)));
        assert_eq!(grid_for_slots(2, 3, 3, 2), None);
        assert_eq!(grid_for_slots(2, 2, 2, 1), None);
    }

    #[test]
    fn host_lists_are_read_from_hostfiles_and_host_options() {
        let dir = std::env::temp_dir().join(format!("ftla-hosts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("hosts");
        std::fs::write(&file, "# nodes\nftn1 slots=2\n\nftn2 slots=3 max_slots=4\nftn3\n").unwrap();
        let args = format!("--hostfile {} --prtemca plm_ssh_agent /x/agent --map-by node", file.display());
        let list = HostList::parse(&args).unwrap().unwrap();
        let h = |s: &str, n: Option<u32>| (s.to_string(), n);
        assert_eq!(list.hosts, [h("ftn1", Some(2)), h("ftn2", Some(3)), h("ftn3", None)]);
        assert_eq!(list.slots(), 5 + crate::launch::local_cores() as u32);
        let fewer = HostList { hosts: list.hosts[1..].to_vec(), rest: list.rest.clone() };
        assert_eq!(fewer.args(), "--prtemca plm_ssh_agent /x/agent --map-by node --host ftn2:3,ftn3");
        let list = HostList::parse("--host=a:2,b --mca x y").unwrap().unwrap();
        assert_eq!(list.hosts, [h("a", Some(2)), h("b", Some(1))]);
        assert_eq!(list.args(), "--mca x y --host a:2,b:1");
        let list = HostList::parse("-machinefile /dev/null -host c:4").unwrap().unwrap();
        assert_eq!(list.hosts, [h("c", Some(4))]);
        assert_eq!(parse_job_grid("1x2+0"), Ok((1, 2, 0)));
        assert_eq!(parse_job_grid("2x3+1"), Ok((2, 3, 1)));
        assert_eq!(parse_job_grid("2x2"), Ok((2, 2, 0)));
        assert!(parse_job_grid("0x2").is_err() && parse_job_grid("2").is_err());
        assert_eq!(HostList::parse("--mca btl self,tcp").unwrap(), None);
        assert!(HostList::parse("--hostfile").is_err());
        assert!(HostList::parse("--hostfile /no/such/file").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
