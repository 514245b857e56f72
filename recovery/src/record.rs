//! The records of a fault-tolerant call that outlive it: the phase a
//! failure was seen in and the recovery that followed. Status logs and
//! checkpoint files hold them, so their bytes are part of the checkpoint
//! format (`cof::file::FORMAT_VERSION`): enums are written by stable tags,
//! never by declaration order, and a test pins the encoded bytes.

use blacs_ft::RepairMode;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Where in a fault-tolerant call a process is: the points where a
/// failure can surface and where kills can be injected (`R@OP:STEP:PHASE`).
/// Ordered as a call meets them ([`Phase::ALL`]).
///
/// A vocabulary of the kinds of work a step does, not a list of drivers:
/// each driver names the phases its steps go through, in order, in its
/// entry of the catalogue of drivers (`scalapack_ft::drivers`), and the
/// protocol reads them from its `Algorithm`. A new driver reuses these; a
/// new kind of work is a new variant with a new tag.
///
/// Its wire tags are stable ([`blacs_ft::stable_tags!`]): status logs and
/// checkpoint files hold it; a new phase takes a new tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// The argument check (an agreement), before step 0.
    Args,
    /// The encoding of the checksums, before step 0.
    Encode,
    /// The factorization of a step's panel (with its pivot search where
    /// it pivots).
    Panel,
    /// The row interchanges of a step's pivots.
    Swap,
    /// The broadcasts of a step (a panel along the process rows, a block
    /// row down the process columns).
    Bcast,
    /// The trailing update, or its reduction into scratch.
    Update,
    /// A distributed matrix-vector product (checked against the column
    /// checksums).
    Matvec,
    /// Inner products reduced over the grid.
    Dot,
    /// The step's agreement and its local commit.
    Commit,
}

blacs_ft::stable_tags!(Phase, "phase", {
    Phase::Args => (0, "args"),
    Phase::Encode => (1, "encode"),
    Phase::Panel => (2, "panel"),
    Phase::Swap => (3, "swap"),
    Phase::Bcast => (4, "bcast"),
    Phase::Update => (5, "update"),
    Phase::Matvec => (6, "matvec"),
    Phase::Dot => (7, "dot"),
    Phase::Commit => (8, "commit"),
});

impl Phase {
    /// Every phase, in the order a call meets them.
    pub const ALL: [Phase; 9] = [
        Phase::Args,
        Phase::Encode,
        Phase::Panel,
        Phase::Swap,
        Phase::Bcast,
        Phase::Update,
        Phase::Matvec,
        Phase::Dot,
        Phase::Commit,
    ];

    /// The phase's name in kill points and reports.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Args => "args",
            Phase::Encode => "encode",
            Phase::Panel => "panel",
            Phase::Swap => "swap",
            Phase::Bcast => "bcast",
            Phase::Update => "update",
            Phase::Matvec => "matvec",
            Phase::Dot => "dot",
            Phase::Commit => "commit",
        }
    }

    /// The phase called `name`.
    pub fn parse(name: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Whether the phase comes once, before step 0.
    pub fn before_steps(self) -> bool {
        matches!(self, Phase::Args | Phase::Encode)
    }

    /// The phase's place in [`Phase::ALL`] (what the grid reduces to agree
    /// on the earliest phase a failure was seen in).
    pub(crate) fn index(self) -> i64 {
        Phase::ALL.iter().position(|&p| p == self).unwrap_or(0) as i64
    }

    /// The phase at [`Phase::index`] `i` (the last for anything past it).
    pub(crate) fn at_index(i: i64) -> Phase {
        Phase::ALL[usize::try_from(i).unwrap_or(0).min(Phase::ALL.len() - 1)]
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One recovery of a fault-tolerant call, the same on every process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecoveryRecord {
    /// Grid ranks whose blocks were rebuilt.
    pub ranks: Vec<i32>,
    /// Committed steps when the failure was handled (the step redone).
    pub step: u64,
    /// The earliest phase in which a survivor saw the failure.
    pub phase: Phase,
    /// From the start of that phase to the error (an upper bound on the
    /// detection), the slowest survivor's.
    pub detect_ms: f64,
    /// The grid's repair: revoke, shrink, spawn or spare, merge, split.
    pub repair_ms: f64,
    /// Agreeing on what was lost and rebuilding it.
    pub rebuild_ms: f64,
    pub total_ms: f64,
    /// How the lost processes were replaced.
    pub mode: RepairMode,
    /// Checkpoint-on-failure's parts (`repair_ms` is their sum).
    pub cof: Option<CofBreakdown>,
    /// A shrink: the grids before and after it, and the moving of the
    /// blocks onto the new grid (part of `rebuild_ms`).
    pub shrink: Option<ShrinkBreakdown>,
}

/// What a recovery by shrinking did besides the repair.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShrinkBreakdown {
    /// The grid before the shrink and the grid the call goes on with.
    pub grid_before: blacs_ft::GridShape,
    pub grid_after: blacs_ft::GridShape,
    /// Rebuilding the lost blocks onto survivors, moving every block to
    /// its owner on the new grid and encoding the checksums there, the
    /// slowest process's.
    pub redistribute_ms: f64,
}

/// What a checkpoint-on-failure recovery took besides the detection and
/// the rebuild, the slowest process's each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CofBreakdown {
    /// Writing the checkpoint (synced to disk).
    pub save_ms: f64,
    /// From the end of the save to the start of the load: the old job's
    /// end and the new job's start (MPI start-up, the grid).
    pub relaunch_ms: f64,
    /// Reading and checking the checkpoints.
    pub load_ms: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_keep_their_tags_and_names() {
        let tags: Vec<u8> = Phase::ALL.iter().map(|p| crate::codec::encode(p)[0]).collect();
        assert_eq!(tags, [0, 1, 2, 3, 4, 5, 6, 7, 8]);
        for p in Phase::ALL {
            assert_eq!(crate::codec::encode(&p).len(), 1);
            assert_eq!(crate::codec::decode::<Phase>(&crate::codec::encode(&p)), Some(p));
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.name()));
            assert_eq!(serde_json::from_str::<Phase>(&json).unwrap(), p);
        }
        assert_eq!(crate::codec::decode::<Phase>(&[9]), None);
    }
}
