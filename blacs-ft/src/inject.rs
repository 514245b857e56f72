//! Deterministic fault injection: SIGKILL a rank at a named point, or
//! plant a silent error for the checksums to find.
//!
//! A point is `(operation, step, phase)`, e.g. `("qr", 3, "update")`.
//! Specifications come from a CLI flag or the `FTLA_KILL` environment
//! variable, as a comma-separated list of
//!
//! ```text
//! RANK@[OP:]STEP[:PHASE][/EPOCH]     e.g.  1@3:update   2@qr:0:panel   0@repair:1:shrink/1
//! job@[OP:]STEP[:PHASE][/EPOCH]      e.g.  job@qr:5:update
//! ```
//!
//! `STEP` and `PHASE` may be `*` (any). The process really dies: it sends
//! itself SIGKILL, it does not return. `job@` ends the whole job at once,
//! as a lost node does: the process of grid rank 0 SIGKILLs its node's MPI
//! runtime daemon (its parent when it started: after the daemon's death
//! `getppid()` no longer names it), then itself; what the runtime, or
//! `ftla`'s launcher, does to the other processes then is what happens to
//! them.
//!
//! # When a point fires
//! A point that names `/EPOCH` fires only in that repair epoch (0 before
//! any repair, +1 per repair). A point without one fires the first time
//! its rank reaches it, in whatever epoch, and never twice: the points of
//! one rank that name no epoch are armed one at a time, in the order they
//! are listed, and each process the rank loses counts as one of them
//! having fired. A replacement, which starts fresh and reaches again the
//! points its predecessor passed, learns this from the grid: the grid
//! keeps the losses of every repair ([`Loss`]) in its replicated state and
//! hands them to every newcomer. A loss in epoch E is the rank's point
//! `/E` when it has one not yet fired (a point that names its epoch fires
//! there or nowhere), else its armed point without an epoch; a loss to a
//! real failure counts the same way. A job started again from checkpoints (checkpoint-on-
//! failure) keeps only the points that name a later epoch: it cannot know
//! which of the others fired in the jobs before it.
//!
//! [`Injector::unfired`] names the points that never fired: `ftla qr|lu|cg`
//! print each as a warning on stderr at the end of the run (a warning, not
//! an error: the run's outcome stands as it is).

use crate::error::{Error, Result};
use std::fmt;
use std::io::Write;

/// What a kill ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Victim {
    /// The process of the grid rank.
    #[default]
    Process,
    /// The whole job (`job@…`): the grid rank's node's MPI runtime daemon,
    /// then the process.
    Job,
}

/// One kill: grid rank `rank` dies at the first matching point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KillSpec {
    /// Grid rank to kill (`job@…`: 0, the process that ends the job).
    pub rank: i32,
    /// What it kills.
    pub victim: Victim,
    /// Operation name (`None`: any).
    pub op: Option<String>,
    /// Step (`None`: any).
    pub step: Option<u64>,
    /// Phase (`None`: any).
    pub phase: Option<String>,
    /// Repair epoch in which the kill fires (`None`: the first time the
    /// rank reaches the point, in whatever epoch; see the module's
    /// documentation).
    pub epoch: Option<u32>,
}

impl KillSpec {
    /// Parses `RANK@[OP:]STEP[:PHASE][/EPOCH]` or `job@[OP:]STEP[:PHASE][/EPOCH]`.
    pub fn parse(s: &str) -> Result<KillSpec> {
        let bad = |why: &str| {
            Error::invalid("kill", format!("`{s}`: {why} (expected RANK@[OP:]STEP[:PHASE][/EPOCH] or job@…)"))
        };
        let (rank, rest) = s.split_once('@').ok_or_else(|| bad("missing @"))?;
        let (rank, victim) = match rank.trim() {
            "job" => (0, Victim::Job),
            r => (r.parse::<i32>().map_err(|_| bad("rank is not an integer"))?, Victim::Process),
        };
        if rank < 0 {
            return Err(bad("negative rank"));
        }
        let (point, epoch) = match rest.split_once('/') {
            Some((p, e)) => (p, Some(e.trim().parse::<u32>().map_err(|_| bad("epoch is not an integer"))?)),
            None => (rest, None),
        };
        let parts: Vec<&str> = point.split(':').map(str::trim).collect();
        let step_of = |t: &str| -> Result<Option<u64>> {
            if t == "*" {
                Ok(None)
            } else {
                t.parse().map(Some).map_err(|_| bad("step is not an integer"))
            }
        };
        let any = |t: &str| (t != "*" && !t.is_empty()).then(|| t.to_string());
        let (op, step, phase) = match parts.as_slice() {
            [step] => (None, step_of(step)?, None),
            [a, b] if step_of(a).is_ok() => (None, step_of(a)?, any(b)),
            [op, step] => (any(op), step_of(step)?, None),
            [op, step, phase] => (any(op), step_of(step)?, any(phase)),
            _ => return Err(bad("too many fields")),
        };
        Ok(KillSpec { rank, victim, op, step, phase, epoch })
    }

    /// Whether the point `(op, step, phase)` on grid rank `rank` is this
    /// one's (its epoch aside).
    fn at(&self, rank: i32, op: &str, step: u64, phase: &str) -> bool {
        self.rank == rank
            && self.op.as_deref().is_none_or(|o| o == op)
            && self.step.is_none_or(|s| s == step)
            && self.phase.as_deref().is_none_or(|p| p == phase)
    }
}

/// The kill point in the syntax [`KillSpec::parse`] reads.
impl fmt::Display for KillSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.victim {
            Victim::Process => write!(f, "{}@", self.rank)?,
            Victim::Job => write!(f, "job@")?,
        }
        if let Some(op) = &self.op {
            write!(f, "{op}:")?;
        }
        match self.step {
            Some(s) => write!(f, "{s}")?,
            None => write!(f, "*")?,
        }
        if let Some(p) = &self.phase {
            write!(f, ":{p}")?;
        }
        if let Some(e) = self.epoch {
            write!(f, "/{e}")?;
        }
        Ok(())
    }
}

/// A grid rank that lost its process, and the repair epoch it was lost in
/// (the epoch the repair started from). The grid keeps every loss in its
/// replicated state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loss {
    /// The grid rank.
    pub rank: i32,
    /// The epoch of the repair that replaced it.
    pub epoch: u32,
}

/// A silent error for the checksums to find: at step `step`, grid rank
/// `rank` adds 1.0 to one element of its data (a factorization's trailing
/// matrix at the step's commit, CG's first matrix-vector product of that
/// iteration). A test and benchmark hook, carried with the kills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SilentError {
    /// Grid rank whose data is corrupted.
    pub rank: i32,
    /// Step (CG: iteration) at which it is.
    pub step: u64,
}

impl SilentError {
    /// Whether it strikes grid rank `rank` at step `step`.
    pub fn strikes(&self, rank: i32, step: u64) -> bool {
        self.rank == rank && self.step == step
    }
}

/// The faults to inject: kills, checked at every injection point, and at
/// most one silent error.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Injector {
    specs: Vec<KillSpec>,
    /// The grid's losses so far (kept up to date by the grid).
    losses: Vec<Loss>,
    /// The epoch from which the losses count: the kills were armed then
    /// (see [`Injector::shifted`]).
    since: u32,
    silent: Option<SilentError>,
}

impl Injector {
    /// No kills.
    pub fn none() -> Injector {
        Injector::default()
    }

    /// Parses a comma-separated list of kill specifications (a point
    /// listed twice is one point).
    pub fn parse(list: &str) -> Result<Injector> {
        let mut injector = Injector::none();
        for spec in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            injector.add(KillSpec::parse(spec)?);
        }
        Ok(injector)
    }

    /// Kills from `FTLA_KILL` (empty when unset).
    pub fn from_env() -> Result<Injector> {
        match std::env::var("FTLA_KILL") {
            Ok(s) => Injector::parse(&s),
            Err(_) => Ok(Injector::none()),
        }
    }

    /// The kills `ftla launch` hands to its job: `FTLA_KILL`, less those
    /// of the recoveries before a checkpoint-on-failure restart (its
    /// `FTLA_EPOCH_BASE`; see [`Injector::after_restart`]). An unparsable
    /// variable is an error naming it.
    pub fn from_launch_env() -> Result<Injector> {
        let kills = Injector::from_env().map_err(|e| match e {
            Error::InvalidArgument { reason, .. } => Error::invalid("FTLA_KILL", reason),
            e => e,
        })?;
        let var = crate::launch::EPOCH_BASE_VAR;
        let base = match std::env::var(var) {
            Ok(s) if !s.trim().is_empty() => s
                .trim()
                .parse::<u32>()
                .map_err(|_| Error::invalid(var, format!("`{s}` is not a number of recoveries")))?,
            _ => 0,
        };
        Ok(kills.after_restart(base))
    }

    /// Adds one kill (a point already there is not added again).
    pub fn add(&mut self, spec: KillSpec) {
        if !self.specs.contains(&spec) {
            self.specs.push(spec);
        }
    }

    /// Adds the kills of `other` (those already there are not added
    /// again), and its silent error if this one has none.
    pub fn extend(&mut self, other: Injector) {
        for spec in other.specs {
            self.add(spec);
        }
        self.silent = self.silent.or(other.silent);
    }

    /// The same kills with a silent error planted (`None`: none).
    pub fn with_silent_error(mut self, silent: Option<SilentError>) -> Injector {
        self.silent = silent;
        self
    }

    /// The silent error to plant, if any.
    pub fn silent_error(&self) -> Option<SilentError> {
        self.silent
    }

    /// The kills.
    pub fn specs(&self) -> &[KillSpec] {
        &self.specs
    }

    /// True when no kill is configured.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// The same kills on a grid that has lost these processes so far (the
    /// grid calls it after every repair, and when it is handed kills).
    pub fn set_losses(&mut self, losses: &[Loss]) {
        self.losses.clear();
        self.losses.extend_from_slice(losses);
    }

    /// The same kills, each in the repair epoch `by` later than it names:
    /// a scenario written for a fresh grid (epoch 0), armed on a grid that
    /// has already been repaired `by` times. Points without an epoch count
    /// only the losses from epoch `by` on.
    pub fn shifted(&self, by: u32) -> Injector {
        let specs =
            self.specs.iter().map(|k| KillSpec { epoch: k.epoch.map(|e| e.saturating_add(by)), ..k.clone() }).collect();
        Injector { specs, since: self.since.saturating_add(by), ..self.clone() }
    }

    /// The kills left for a job started again after `epochs` recoveries
    /// (a checkpoint-on-failure restart): those of earlier epochs fired in
    /// the jobs before and are dropped; the others fire `epochs` epochs
    /// earlier in the new job, whose grid counts its repairs from 0. Points
    /// without an epoch are dropped after a restart: the new job does not
    /// know which of them fired in the jobs before.
    pub fn after_restart(&self, epochs: u32) -> Injector {
        let specs = self
            .specs
            .iter()
            .filter(|k| k.epoch.map_or(epochs == 0, |e| e >= epochs))
            .map(|k| KillSpec { epoch: k.epoch.map(|e| e - epochs), ..k.clone() })
            .collect();
        Injector { specs, ..self.clone() }
    }

    /// Which kills have fired, by the losses since the kills were armed:
    /// a loss of a rank in epoch E is its point of that epoch when it has
    /// one not yet fired, else its armed point without an epoch (the first
    /// not yet fired, in list order).
    fn fired(&self) -> Vec<bool> {
        let mut fired = vec![false; self.specs.len()];
        for loss in self.losses.iter().filter(|l| l.epoch >= self.since) {
            let of_rank = |i: &usize| !fired[*i] && self.specs[*i].rank == loss.rank;
            let took = (0..self.specs.len())
                .filter(of_rank)
                .find(|&i| self.specs[i].epoch == Some(loss.epoch))
                .or_else(|| (0..self.specs.len()).filter(of_rank).find(|&i| self.specs[i].epoch.is_none()));
            if let Some(i) = took {
                fired[i] = true;
            }
        }
        fired
    }

    /// The kill that fires at this point, if any.
    fn firing(&self, rank: i32, epoch: u32, op: &str, step: u64, phase: &str) -> Option<&KillSpec> {
        if self.specs.is_empty() {
            return None;
        }
        let fired = self.fired();
        let armed =
            (0..self.specs.len()).find(|&i| !fired[i] && self.specs[i].rank == rank && self.specs[i].epoch.is_none());
        self.specs.iter().enumerate().find_map(|(i, k)| {
            let now = match k.epoch {
                Some(e) => e == epoch,
                None => armed == Some(i) && epoch >= self.since,
            };
            (now && k.at(rank, op, step, phase)).then_some(k)
        })
    }

    /// The kills that have not fired (by the grid's losses so far): at the
    /// end of a run, the points it never reached.
    pub fn unfired(&self) -> Vec<&KillSpec> {
        self.fired().into_iter().zip(&self.specs).filter(|(f, _)| !f).map(|(_, k)| k).collect()
    }

    /// SIGKILLs this process (or the whole job) if a kill fires at the
    /// point.
    pub fn point(&self, rank: i32, epoch: u32, op: &str, step: u64, phase: &str) {
        match self.firing(rank, epoch, op, step, phase).map(|k| k.victim) {
            Some(Victim::Process) => kill_self(&format!("rank {rank} at {op}:{step}:{phase} (epoch {epoch})")),
            Some(Victim::Job) => kill_job(&format!("at {op}:{step}:{phase} (epoch {epoch}), from grid rank {rank}")),
            None => {}
        }
    }
}

/// The kills in the syntax [`Injector::parse`] reads, comma-separated.
impl fmt::Display for Injector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, k) in self.specs.iter().enumerate() {
            write!(f, "{}{k}", if i > 0 { "," } else { "" })?;
        }
        Ok(())
    }
}

/// Ends the whole job as a lost node does: SIGKILLs this node's MPI
/// runtime daemon (this process's parent when it started), then this
/// process.
pub fn kill_job(why: &str) -> ! {
    let daemon = crate::runtime::daemon_pid();
    let _ = writeln!(
        std::io::stderr(),
        "ftla: injecting the loss of the whole job {why}: SIGKILL to its runtime daemon (pid {daemon})"
    );
    let _ = std::io::stdout().flush();
    if daemon > 1 {
        // SAFETY: signalling the daemon this process was started by.
        unsafe { libc::kill(daemon, libc::SIGKILL) };
    }
    kill_self("the process that ended the job")
}

/// Sends SIGKILL to this process after flushing its output.
pub fn kill_self(why: &str) -> ! {
    let _ = writeln!(std::io::stderr(), "ftla: injecting SIGKILL into {why}");
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: signalling ourselves; SIGKILL cannot be caught, so we never return.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    loop {
        std::thread::park();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fires(inj: &Injector, rank: i32, epoch: u32, op: &str, step: u64, phase: &str) -> bool {
        inj.firing(rank, epoch, op, step, phase).is_some()
    }

    fn lost(inj: &mut Injector, losses: &[(i32, u32)]) {
        let l: Vec<Loss> = losses.iter().map(|&(rank, epoch)| Loss { rank, epoch }).collect();
        inj.set_losses(&l);
    }

    #[test]
    fn parses_the_documented_forms() {
        let k = KillSpec::parse("1@3:update").unwrap();
        assert_eq!(
            (k.rank, k.op.clone(), k.step, k.phase.clone(), k.epoch),
            (1, None, Some(3), Some("update".into()), None)
        );
        let k = KillSpec::parse("2@qr:0:panel").unwrap();
        assert_eq!((k.op.as_deref(), k.step, k.phase.as_deref()), (Some("qr"), Some(0), Some("panel")));
        let k = KillSpec::parse("0@repair:*:shrink/1").unwrap();
        assert_eq!(
            (k.op.as_deref(), k.step, k.phase.as_deref(), k.epoch),
            (Some("repair"), None, Some("shrink"), Some(1))
        );
        let k = KillSpec::parse("4@demo:7").unwrap();
        assert_eq!((k.op.as_deref(), k.step, k.phase), (Some("demo"), Some(7), None));
        let k = KillSpec::parse("5@9").unwrap();
        assert_eq!((k.op, k.step, k.phase), (None, Some(9), None));
    }

    #[test]
    fn a_point_prints_as_it_parses() {
        for s in ["1@3:update", "2@qr:0:panel", "0@repair:*:shrink/1", "4@demo:7", "5@9", "3@*:panel/2", "1@qr:*"] {
            let k = KillSpec::parse(s).unwrap();
            assert_eq!(k.to_string(), s);
            assert_eq!(KillSpec::parse(&k.to_string()).unwrap(), k);
        }
        let inj = Injector::parse("1@3:update, 2@qr:0:panel,1@3:update").unwrap();
        assert_eq!(inj.to_string(), "1@3:update,2@qr:0:panel", "a point listed twice is one point");
    }

    #[test]
    fn rejects_bad_specs_with_the_argument_named() {
        for bad in ["1", "x@3", "-1@3", "1@a:b:c:d", "1@3/x", "1@qr:x:panel"] {
            match KillSpec::parse(bad) {
                Err(Error::InvalidArgument { arg, .. }) => assert_eq!(arg, "kill"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_point_with_an_epoch_fires_only_in_it() {
        let inj = Injector::parse("1@qr:2:update/0, 3@*:panel/1").unwrap();
        assert!(fires(&inj, 1, 0, "qr", 2, "update"));
        assert!(!fires(&inj, 1, 1, "qr", 2, "update"));
        assert!(!fires(&inj, 1, 0, "qr", 2, "panel"));
        assert!(!fires(&inj, 0, 0, "qr", 2, "update"));
        assert!(fires(&inj, 3, 1, "lu", 17, "panel"));
        assert!(!fires(&inj, 3, 0, "lu", 17, "panel"));
    }

    #[test]
    fn points_without_an_epoch_fire_once_each_in_whatever_epoch() {
        // The 2x3 scenario: three ranks, one loss each, in three epochs.
        let mut inj = Injector::parse("1@qr:5:update,4@qr:15:panel,2@qr:25:commit").unwrap();
        assert!(fires(&inj, 1, 0, "qr", 5, "update"));
        assert!(fires(&inj, 4, 0, "qr", 15, "panel"), "armed from the start");
        assert_eq!(inj.unfired().len(), 3);
        lost(&mut inj, &[(1, 0)]);
        // Rank 1's replacement reaches step 5 again: not a second time.
        assert!(!fires(&inj, 1, 1, "qr", 5, "update"));
        assert!(fires(&inj, 4, 1, "qr", 15, "panel"), "a later epoch");
        lost(&mut inj, &[(1, 0), (4, 1)]);
        assert!(!fires(&inj, 4, 2, "qr", 15, "panel"));
        assert!(fires(&inj, 2, 2, "qr", 25, "commit"));
        assert_eq!(inj.unfired().iter().map(|k| k.to_string()).collect::<Vec<_>>(), ["2@qr:25:commit"]);
        lost(&mut inj, &[(1, 0), (4, 1), (2, 2)]);
        assert!(inj.unfired().is_empty());
        assert!(!fires(&inj, 2, 3, "qr", 25, "commit"));
    }

    #[test]
    fn one_ranks_points_are_armed_in_the_order_listed() {
        let mut inj = Injector::parse("1@qr:9:panel, 1@qr:4:update, 1@repair:*:merge/1").unwrap();
        // Only the first is armed: step 4 passes.
        assert!(!fires(&inj, 1, 0, "qr", 4, "update"));
        assert!(fires(&inj, 1, 0, "qr", 9, "panel"));
        lost(&mut inj, &[(1, 0)]);
        assert!(!fires(&inj, 1, 1, "qr", 9, "panel"));
        assert!(fires(&inj, 1, 1, "qr", 4, "update"));
        assert!(fires(&inj, 1, 1, "repair", 1, "merge"));
        // A loss in epoch 1 is the point of epoch 1's; the two losses of
        // that epoch (the update, then the replacement in the repair's
        // merge) are both.
        lost(&mut inj, &[(1, 0), (1, 1)]);
        assert_eq!(inj.unfired().iter().map(|k| k.to_string()).collect::<Vec<_>>(), ["1@qr:4:update"]);
        lost(&mut inj, &[(1, 0), (1, 1), (1, 1)]);
        assert!(inj.unfired().is_empty());
        // A point of an epoch and one without, for one rank: the loss of
        // epoch 0 is the first's, and the second fires after it.
        let mut inj = Injector::parse("1@4:update/0, 1@9:panel").unwrap();
        assert!(fires(&inj, 1, 0, "qr", 4, "update"));
        lost(&mut inj, &[(1, 0)]);
        assert_eq!(inj.unfired().iter().map(|k| k.to_string()).collect::<Vec<_>>(), ["1@9:panel"]);
        assert!(fires(&inj, 1, 1, "qr", 9, "panel"));
        lost(&mut inj, &[(1, 0), (1, 1)]);
        assert!(inj.unfired().is_empty());
        // With none left, a loss is the point of its epoch's.
        let mut inj = Injector::parse("1@4:update, 1@9:panel/1").unwrap();
        lost(&mut inj, &[(1, 0), (1, 1)]);
        assert!(inj.unfired().is_empty());
        // Two ranks lost at once: each its own point.
        let mut inj = Injector::parse("1@5:update, 2@5:update").unwrap();
        lost(&mut inj, &[(1, 0), (2, 0)]);
        assert!(inj.unfired().is_empty());
        assert!(!fires(&inj, 2, 1, "qr", 5, "update"));
    }

    #[test]
    fn shifted_kills_fire_that_many_epochs_later() {
        let mut inj = Injector::parse("1@qr:2:update/0, 3@*:panel/1, 2@7").unwrap().shifted(4);
        assert!(fires(&inj, 1, 4, "qr", 2, "update"));
        assert!(!fires(&inj, 1, 0, "qr", 2, "update"));
        assert!(fires(&inj, 3, 5, "lu", 17, "panel"));
        assert!(!fires(&inj, 3, 4, "lu", 17, "panel"));
        // Rank 2 was lost before the scenario was armed: not its point.
        lost(&mut inj, &[(2, 1)]);
        assert!(fires(&inj, 2, 4, "qr", 7, "x"));
        lost(&mut inj, &[(2, 1), (2, 4)]);
        assert!(!fires(&inj, 2, 5, "qr", 7, "x"));
    }

    #[test]
    fn a_restarted_job_keeps_only_the_kills_of_later_epochs() {
        let inj = Injector::parse("1@qr:2:update/0, 3@*:panel/1, 2@7/3, 0@4").unwrap().after_restart(1);
        assert_eq!(inj.to_string(), "3@*:panel/0,2@7/2");
        assert!(fires(&inj, 3, 0, "lu", 17, "panel"));
        assert!(fires(&inj, 2, 2, "qr", 7, "update"));
        assert!(fires(&Injector::parse("1@2").unwrap().after_restart(0), 1, 0, "qr", 2, "x"));
    }

    #[test]
    fn the_silent_error_travels_with_the_kills() {
        let e = SilentError { rank: 1, step: 2 };
        let mut inj = Injector::parse("1@3").unwrap().with_silent_error(Some(e));
        assert_eq!(inj.silent_error(), Some(e));
        assert_eq!(inj.shifted(2).silent_error(), Some(e));
        inj.extend(Injector::parse("1@3,2@4").unwrap());
        assert_eq!((inj.to_string().as_str(), inj.silent_error()), ("1@3,2@4", Some(e)));
    }
}
