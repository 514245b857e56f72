//! What a repair did and how long each part took.

use crate::shrink::GridShape;
use serde::{Deserialize, Serialize};

/// How a dead rank's place was filled (written `spawn`, `spare`, `cof`,
/// `none`, `resume`, `shrink`).
///
/// Its wire tags are stable ([`crate::stable_tags!`]): status logs and
/// checkpoint files hold it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RepairMode {
    /// A new process was spawned (`MPI_Comm_spawn`) and merged in.
    Spawn,
    /// A parked hot spare took the place; nothing was spawned.
    Spare,
    /// Checkpoint-on-failure: the survivors saved their committed state,
    /// the job was started again, and the lost blocks were rebuilt there.
    Cof,
    /// Nobody died (a local error was propagated): communicators rebuilt only.
    NoLoss,
    /// The whole job was lost (a lost node): a new job resumed from the
    /// newest periodic checkpoint.
    Resume,
    /// Nobody took the place: the survivors went on as a smaller grid
    /// (FT-MPI's SHRINK; see [`RepairReport::grid_after`]).
    Shrink,
}

crate::stable_tags!(RepairMode, "repair mode", {
    RepairMode::Spawn => (0, "spawn"),
    RepairMode::Spare => (1, "spare"),
    RepairMode::Cof => (2, "cof"),
    RepairMode::NoLoss => (3, "none"),
    RepairMode::Resume => (4, "resume"),
    RepairMode::Shrink => (5, "shrink"),
});

impl RepairMode {
    /// Its name as written in JSON reports (`"spawn"`, `"spare"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            RepairMode::Spawn => "spawn",
            RepairMode::Spare => "spare",
            RepairMode::Cof => "cof",
            RepairMode::NoLoss => "none",
            RepairMode::Resume => "resume",
            RepairMode::Shrink => "shrink",
        }
    }
}

/// Timings and outcome of one repair of the grid, as seen by one rank.
///
/// Times are milliseconds of wall clock on the reporting rank. `detect_ms` is
/// filled by the caller that knows when the failure happened (the repair only
/// starts once it was detected); it is 0 otherwise. Serialized as `ftla
/// repair --json` writes each repair (times rounded to the microsecond;
/// epoch, attempts and lost spares left out).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RepairReport {
    /// Repair epoch reached by this repair (1 after the first repair).
    #[serde(skip_serializing, default)]
    pub epoch: u32,
    /// How the dead ranks were replaced (spawn if any had to be spawned).
    pub mode: RepairMode,
    /// Grid ranks that died and were replaced.
    pub killed: Vec<i32>,
    /// Dead spares (they are simply dropped).
    #[serde(skip_serializing, default)]
    pub lost_spares: usize,
    /// Attempts needed (more than 1 when a failure hit the repair itself).
    #[serde(skip_serializing, default)]
    pub attempts: u32,
    #[serde(serialize_with = "micro")]
    pub detect_ms: f64,
    #[serde(serialize_with = "micro")]
    pub revoke_ms: f64,
    #[serde(serialize_with = "micro")]
    pub shrink_ms: f64,
    /// Spawn time; for a spare hand-over, the time of the hand-over itself.
    #[serde(serialize_with = "micro")]
    pub spawn_ms: f64,
    #[serde(serialize_with = "micro")]
    pub merge_ms: f64,
    #[serde(serialize_with = "micro")]
    pub split_ms: f64,
    /// Repair total (revoke to split) plus `detect_ms`.
    #[serde(serialize_with = "micro")]
    pub total_ms: f64,
    /// A shrink: the grid before and after it (`None` otherwise).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub grid_before: Option<GridShape>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub grid_after: Option<GridShape>,
}

/// Milliseconds written to the microsecond.
fn micro<S: serde::Serializer>(ms: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((ms * 1e3).round() / 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repair_modes_keep_their_tags_and_names() {
        let all = [
            RepairMode::Spawn,
            RepairMode::Spare,
            RepairMode::Cof,
            RepairMode::NoLoss,
            RepairMode::Resume,
            RepairMode::Shrink,
        ];
        let tags: Vec<Vec<u8>> = all.iter().map(|m| postcard::to_allocvec(m).unwrap()).collect();
        assert_eq!(tags, [[0], [1], [2], [3], [4], [5]]);
        for m in all {
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.as_str()));
            assert_eq!(serde_json::from_str::<RepairMode>(&json).unwrap(), m);
            assert_eq!(postcard::from_bytes::<RepairMode>(&postcard::to_allocvec(&m).unwrap()).unwrap(), m);
        }
        assert!(postcard::from_bytes::<RepairMode>(&[6]).is_err());
        assert!(serde_json::from_str::<RepairMode>("\"respawn\"").is_err());
    }
}
