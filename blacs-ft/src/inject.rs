//! Deterministic fault injection: SIGKILL a rank at a named point.
//!
//! A point is `(operation, step, phase)`, e.g. `("qr", 3, "update")`, and a
//! kill fires only in the repair epoch it names (default 0, before any
//! repair), so a replacement that reaches the same point again does not kill
//! itself. Specifications come from a CLI flag or the `FTLA_KILL`
//! environment variable, as a comma-separated list of
//!
//! ```text
//! RANK@[OP:]STEP[:PHASE][/EPOCH]     e.g.  1@3:update   2@qr:0:panel   0@repair:1:shrink/1
//! ```
//!
//! `STEP` and `PHASE` may be `*` (any). The process really dies: it sends
//! itself SIGKILL, it does not return.

use crate::error::{Error, Result};
use std::io::Write;

/// One kill: grid rank `rank` dies at the first matching point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KillSpec {
    /// Grid rank to kill.
    pub rank: i32,
    /// Operation name (`None`: any).
    pub op: Option<String>,
    /// Step (`None`: any).
    pub step: Option<u64>,
    /// Phase (`None`: any).
    pub phase: Option<String>,
    /// Repair epoch in which the kill fires.
    pub epoch: u32,
}

impl KillSpec {
    /// Parses `RANK@[OP:]STEP[:PHASE][/EPOCH]`.
    pub fn parse(s: &str) -> Result<KillSpec> {
        let bad = |why: &str| Error::invalid("kill", format!("`{s}`: {why} (expected RANK@[OP:]STEP[:PHASE][/EPOCH])"));
        let (rank, rest) = s.split_once('@').ok_or_else(|| bad("missing @"))?;
        let rank: i32 = rank.trim().parse().map_err(|_| bad("rank is not an integer"))?;
        if rank < 0 {
            return Err(bad("negative rank"));
        }
        let (point, epoch) = match rest.split_once('/') {
            Some((p, e)) => (p, e.trim().parse::<u32>().map_err(|_| bad("epoch is not an integer"))?),
            None => (rest, 0),
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
        Ok(KillSpec { rank, op, step, phase, epoch })
    }

    fn matches(&self, rank: i32, epoch: u32, op: &str, step: u64, phase: &str) -> bool {
        self.rank == rank
            && self.epoch == epoch
            && self.op.as_deref().is_none_or(|o| o == op)
            && self.step.is_none_or(|s| s == step)
            && self.phase.as_deref().is_none_or(|p| p == phase)
    }
}

/// A set of kills, checked at every injection point.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Injector {
    specs: Vec<KillSpec>,
}

impl Injector {
    /// No kills.
    pub fn none() -> Injector {
        Injector::default()
    }

    /// Parses a comma-separated list of kill specifications.
    pub fn parse(list: &str) -> Result<Injector> {
        let specs =
            list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(KillSpec::parse).collect::<Result<_>>()?;
        Ok(Injector { specs })
    }

    /// Kills from `FTLA_KILL` (empty when unset).
    pub fn from_env() -> Result<Injector> {
        match std::env::var("FTLA_KILL") {
            Ok(s) => Injector::parse(&s),
            Err(_) => Ok(Injector::none()),
        }
    }

    /// Adds the kills of `other`.
    pub fn extend(&mut self, other: Injector) {
        self.specs.extend(other.specs);
    }

    /// The kills.
    pub fn specs(&self) -> &[KillSpec] {
        &self.specs
    }

    /// True when no kill is configured.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// The same kills, each in the repair epoch `by` later than it names:
    /// a scenario written for a fresh grid (epoch 0), armed on a grid that
    /// has already been repaired `by` times.
    pub fn shifted(&self, by: u32) -> Injector {
        let specs = self.specs.iter().map(|k| KillSpec { epoch: k.epoch.saturating_add(by), ..k.clone() }).collect();
        Injector { specs }
    }

    /// The kills left for a job started again after `epochs` recoveries
    /// (a checkpoint-on-failure restart): those of earlier epochs fired in
    /// the jobs before and are dropped; the others fire `epochs` epochs
    /// earlier in the new job, whose grid counts its repairs from 0.
    pub fn after_restart(&self, epochs: u32) -> Injector {
        let specs = self
            .specs
            .iter()
            .filter(|k| k.epoch >= epochs)
            .map(|k| KillSpec { epoch: k.epoch - epochs, ..k.clone() })
            .collect();
        Injector { specs }
    }

    /// SIGKILLs this process if a kill matches the point.
    pub fn point(&self, rank: i32, epoch: u32, op: &str, step: u64, phase: &str) {
        if self.specs.iter().any(|k| k.matches(rank, epoch, op, step, phase)) {
            kill_self(&format!("rank {rank} at {op}:{step}:{phase} (epoch {epoch})"));
        }
    }
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

    #[test]
    fn parses_the_documented_forms() {
        let k = KillSpec::parse("1@3:update").unwrap();
        assert_eq!(
            (k.rank, k.op.clone(), k.step, k.phase.clone(), k.epoch),
            (1, None, Some(3), Some("update".into()), 0)
        );
        let k = KillSpec::parse("2@qr:0:panel").unwrap();
        assert_eq!((k.op.as_deref(), k.step, k.phase.as_deref()), (Some("qr"), Some(0), Some("panel")));
        let k = KillSpec::parse("0@repair:*:shrink/1").unwrap();
        assert_eq!((k.op.as_deref(), k.step, k.phase.as_deref(), k.epoch), (Some("repair"), None, Some("shrink"), 1));
        let k = KillSpec::parse("4@demo:7").unwrap();
        assert_eq!((k.op.as_deref(), k.step, k.phase), (Some("demo"), Some(7), None));
        let k = KillSpec::parse("5@9").unwrap();
        assert_eq!((k.op, k.step, k.phase), (None, Some(9), None));
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
    fn matches_only_its_epoch_and_point() {
        let inj = Injector::parse("1@qr:2:update, 3@*:panel/1").unwrap();
        let k = &inj.specs()[0];
        assert!(k.matches(1, 0, "qr", 2, "update"));
        assert!(!k.matches(1, 1, "qr", 2, "update"));
        assert!(!k.matches(1, 0, "qr", 2, "panel"));
        assert!(!k.matches(0, 0, "qr", 2, "update"));
        let k = &inj.specs()[1];
        assert!(k.matches(3, 1, "lu", 17, "panel"));
        assert!(!k.matches(3, 0, "lu", 17, "panel"));
    }

    #[test]
    fn shifted_kills_fire_that_many_epochs_later() {
        let inj = Injector::parse("1@qr:2:update, 3@*:panel/1").unwrap().shifted(4);
        assert!(inj.specs()[0].matches(1, 4, "qr", 2, "update"));
        assert!(!inj.specs()[0].matches(1, 0, "qr", 2, "update"));
        assert!(inj.specs()[1].matches(3, 5, "lu", 17, "panel"));
        assert!(!inj.specs()[1].matches(3, 4, "lu", 17, "panel"));
    }

    #[test]
    fn a_restarted_job_keeps_only_the_kills_of_later_epochs() {
        let inj = Injector::parse("1@qr:2:update, 3@*:panel/1, 2@7/3").unwrap().after_restart(1);
        assert_eq!(inj.specs().len(), 2);
        assert!(inj.specs()[0].matches(3, 0, "lu", 17, "panel"));
        assert!(inj.specs()[1].matches(2, 2, "qr", 7, "update"));
        assert!(Injector::parse("1@2").unwrap().after_restart(0).specs()[0].matches(1, 0, "qr", 2, "x"));
    }
}
