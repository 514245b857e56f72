//! The status log of a resilient region (Bland's "status object"): which
//! library calls completed, which one is in progress and at which committed
//! step, and the small replicated state (tau, pivots, ...) each one needs to
//! resume, kept as bytes ([`Replicated`] says how a type becomes them).
//! Survivors hand it to replacements after a repair.

use crate::codec;
use blacs_ft::Grid;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// State a fault-tolerant call keeps replicated on every process and
/// records in the log at each commit (QR's tau, LU's pivots): any serde
/// type, as the one [`codec`] writes it.
pub trait Replicated: Serialize + DeserializeOwned {
    /// The state as bytes.
    fn to_bytes(&self) -> Vec<u8> {
        codec::encode(self)
    }
    /// The state back from [`Replicated::to_bytes`]' output (`None` if the
    /// bytes are not such an output).
    fn from_bytes(bytes: &[u8]) -> Option<Self> {
        codec::decode(bytes)
    }
}

impl<T: Serialize + DeserializeOwned> Replicated for T {}

/// Where one library call of the log stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CallStatus {
    /// Started, not over: a re-run resumes it at its committed step.
    InProgress,
    /// Returned successfully on every process: a re-run skips it.
    Done,
    /// Refused by every process at its start (its arguments, memory for its
    /// scratch): the record's `replicated` holds the agreed error, as its
    /// driver records it, and a re-run returns that error again.
    Refused,
}

impl CallStatus {
    /// Whether the call is over for every process (done or refused).
    pub fn is_over(self) -> bool {
        self != CallStatus::InProgress
    }
}

/// State of one library call in the log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// Routine name (e.g. `pdgeqrf_ft`).
    pub name: String,
    /// Number of committed steps (the next step to run).
    pub committed: u64,
    /// Whether the call is in progress, done or refused.
    pub status: CallStatus,
    /// Replicated state the call keeps consistent at each commit (tau,
    /// pivots, ...), as bytes (see [`Replicated`]); a refused call's error.
    pub replicated: Vec<u8>,
}

/// What a call finds in the log when it starts.
#[derive(Clone, Debug, PartialEq)]
pub enum CallState {
    /// Not in the log: start from the beginning.
    Fresh,
    /// Interrupted: resume after `committed` steps with this replicated
    /// state (bytes, see [`Replicated`]).
    Resume { committed: u64, replicated: Vec<u8> },
    /// Completed earlier: skip it (its replicated outputs are here).
    Done { replicated: Vec<u8> },
    /// Refused earlier, on every process: return the same error again (its
    /// record is here), without communicating.
    Refused { error: Vec<u8> },
}

/// The ordered log of a region's library calls.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StatusLog {
    calls: Vec<CallRecord>,
    cursor: usize,
    /// Repairs the region went through, counted by every process alike: a
    /// replacement receives the survivors' count with the log, so that all
    /// agree on when a repair limit is reached.
    repairs: u64,
}

impl StatusLog {
    /// An empty log.
    pub fn new() -> StatusLog {
        StatusLog::default()
    }

    /// Rewinds to the first call (the region's body is about to run again).
    pub fn rewind(&mut self) {
        self.cursor = 0;
    }

    /// Rewinds to the call at `position` (a body that made its first call
    /// there is about to run again; calls made before it are not its own).
    pub fn rewind_to(&mut self, position: usize) {
        self.cursor = position.min(self.calls.len());
    }

    /// Moves past the completed calls at the front of the log, so that the
    /// next [`StatusLog::enter`] is the interrupted call (or a new one).
    pub fn skip_completed(&mut self) {
        self.cursor = self.calls.iter().position(|c| !c.status.is_over()).unwrap_or(self.calls.len());
    }

    /// Repairs recorded so far (see [`StatusLog::count_repair`]).
    pub fn repairs(&self) -> u64 {
        self.repairs
    }

    /// Records one more repair (before the log is shared with the
    /// replacements of that repair).
    pub fn count_repair(&mut self) {
        self.repairs += 1;
    }

    /// The records, oldest first.
    pub fn calls(&self) -> &[CallRecord] {
        &self.calls
    }

    /// Whether [`StatusLog::enter`] of `name` now would find the call
    /// completed ([`CallState::Done`]: a rerun, or a replacement, skips it).
    /// Nothing changes.
    pub fn next_is_done(&self, name: &str) -> bool {
        self.calls.get(self.cursor).is_some_and(|r| r.name == name && r.status.is_over())
    }

    /// The record of the error with which every process refused `name`,
    /// if [`StatusLog::enter`] of `name` now would find it refused
    /// ([`CallState::Refused`]). Nothing changes.
    pub fn next_refusal(&self, name: &str) -> Option<&[u8]> {
        self.calls
            .get(self.cursor)
            .filter(|r| r.name == name && r.status == CallStatus::Refused)
            .map(|r| r.replicated.as_slice())
    }

    /// Called when the body reaches its next library call `name`: tells the
    /// call whether to start, resume or skip, and makes it the current one.
    pub fn enter(&mut self, name: &str) -> CallState {
        let done = self.next_is_done(name);
        let i = self.cursor;
        self.cursor += 1;
        match self.calls.get(i) {
            Some(r) if done && r.status == CallStatus::Refused => CallState::Refused { error: r.replicated.clone() },
            Some(r) if done => CallState::Done { replicated: r.replicated.clone() },
            Some(r) if r.name == name => CallState::Resume { committed: r.committed, replicated: r.replicated.clone() },
            _ => {
                // A different call sequence than recorded: forget the rest.
                self.calls.truncate(i);
                self.calls.push(CallRecord {
                    name: name.to_string(),
                    committed: 0,
                    status: CallStatus::InProgress,
                    replicated: Vec::new(),
                });
                CallState::Fresh
            }
        }
    }

    /// Records a commit of the current call.
    pub fn commit(&mut self, committed: u64, replicated: Vec<u8>) {
        if let Some(r) = self.current_mut() {
            r.committed = committed;
            r.replicated = replicated;
        }
    }

    /// Marks the current call as completed.
    pub fn complete(&mut self, replicated: Vec<u8>) {
        if let Some(r) = self.current_mut() {
            r.status = CallStatus::Done;
            r.replicated = replicated;
        }
    }

    /// Marks the current call as refused by every process, with `error`
    /// (its driver's record of the agreed error): a re-run of the body, or a
    /// replacement's, returns that error again instead of making the call
    /// (the program goes on as it did on the survivors).
    pub fn refuse(&mut self, error: Vec<u8>) {
        if let Some(r) = self.current_mut() {
            r.status = CallStatus::Refused;
            r.replicated = error;
        }
    }

    /// Forgets the current call, as if it had never been entered: it failed
    /// before it could protect its data, so a re-run of the region's body
    /// starts it afresh (on survivors and replacements alike).
    pub fn abandon_current(&mut self) {
        if let Some(i) = self.cursor.checked_sub(1).filter(|&i| i < self.calls.len()) {
            self.calls.truncate(i);
            self.cursor = i;
        }
    }

    /// The current call (the last one entered) and its position, if it is
    /// in the log.
    pub fn current(&self) -> Option<(usize, &CallRecord)> {
        let i = self.cursor.checked_sub(1)?;
        self.calls.get(i).map(|c| (i, c))
    }

    /// The position the next [`StatusLog::enter`] gives its call.
    pub fn position(&self) -> usize {
        self.cursor
    }

    fn current_mut(&mut self) -> Option<&mut CallRecord> {
        self.cursor.checked_sub(1).and_then(|i| self.calls.get_mut(i))
    }

    fn encode(&self) -> Vec<u8> {
        codec::encode(self)
    }

    fn decode(v: &[u8]) -> Option<StatusLog> {
        codec::decode(v)
    }

    /// Collective after a repair: every rank adopts the log of the lowest
    /// rank that holds one (`has_log = false` on a replacement), so a
    /// replacement learns what completed and where the current call stands.
    pub fn share(&mut self, grid: &Grid, has_log: bool) -> blacs_ft::Result<()> {
        let Some(root) = grid.lowest_rank_where(has_log)? else {
            return Ok(()); // nobody has one: everybody starts afresh
        };
        let buf = grid.broadcast_vec(self.encode(), root)?;
        match StatusLog::decode(&buf) {
            Some(log) => {
                if !has_log {
                    // A replacement runs the region's body from the top.
                    *self = StatusLog { cursor: 0, ..log };
                }
                Ok(())
            }
            None => Err(blacs_ft::Error::Unrecoverable {
                reason: "the status log received after a repair is corrupt".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rerun_skips_completed_calls_and_resumes_the_interrupted_one() {
        let mut log = StatusLog::new();
        assert_eq!(log.enter("pdgeqrf_ft"), CallState::Fresh);
        log.commit(3, vec![0.5, 0.25].to_bytes());
        log.complete(vec![1.0, 2.0].to_bytes());
        assert_eq!(log.enter("pdormqr"), CallState::Fresh);
        log.commit(1, vec![]);
        // A failure: the body runs again from the top.
        log.rewind();
        assert!(log.next_is_done("pdgeqrf_ft") && !log.next_is_done("pdormqr"));
        assert_eq!(log.enter("pdgeqrf_ft"), CallState::Done { replicated: vec![1.0, 2.0].to_bytes() });
        assert!(!log.next_is_done("pdormqr"));
        assert_eq!(log.enter("pdormqr"), CallState::Resume { committed: 1, replicated: vec![] });
    }

    #[test]
    fn a_different_call_sequence_forgets_the_stale_tail() {
        let mut log = StatusLog::new();
        log.enter("a");
        log.complete(vec![]);
        log.enter("b");
        log.rewind();
        log.enter("a");
        assert_eq!(log.enter("c"), CallState::Fresh);
        assert_eq!(log.calls().len(), 2);
    }

    #[test]
    fn an_abandoned_call_starts_afresh_on_the_rerun() {
        let mut log = StatusLog::new();
        log.enter("pdgeqrf_ft");
        log.complete(vec![1.0].to_bytes());
        log.enter("pdgeqrf_ft");
        log.abandon_current();
        assert_eq!(log.calls().len(), 1);
        log.rewind();
        assert_eq!(log.enter("pdgeqrf_ft"), CallState::Done { replicated: vec![1.0].to_bytes() });
        assert_eq!(log.enter("pdgeqrf_ft"), CallState::Fresh);
        // Nothing to abandon before the first call.
        let mut empty = StatusLog::new();
        empty.abandon_current();
        assert_eq!(empty, StatusLog::new());
    }

    #[test]
    fn a_refused_call_is_refused_again_on_the_rerun_and_counts_as_over() {
        let mut log = StatusLog::new();
        log.enter("pdgeqrf_ft");
        log.refuse(b"argument 9".to_vec());
        log.enter("pdgeqrf_ft");
        log.commit(2, vec![7]);
        log.rewind();
        assert!(log.next_is_done("pdgeqrf_ft"));
        assert_eq!(log.next_refusal("pdgeqrf_ft"), Some(&b"argument 9"[..]));
        assert_eq!(log.next_refusal("pdgetrf_ft"), None);
        assert_eq!(log.enter("pdgeqrf_ft"), CallState::Refused { error: b"argument 9".to_vec() });
        assert_eq!(log.next_refusal("pdgeqrf_ft"), None);
        assert_eq!(log.enter("pdgeqrf_ft"), CallState::Resume { committed: 2, replicated: vec![7] });
        // The interrupted call is the one after it.
        log.rewind();
        log.skip_completed();
        assert_eq!(log.position(), 1);
        let back = StatusLog::decode(&log.encode()).unwrap();
        assert_eq!(back, log);
    }

    #[test]
    fn the_log_survives_encoding() {
        let mut log = StatusLog::new();
        log.enter("pdgeqrf_ft");
        log.commit(7, vec![0.1, -3.5, 1e300].to_bytes());
        log.enter("pdgetrf_ft");
        log.complete(vec![3i64, -1, i64::MAX].to_bytes());
        log.count_repair();
        log.count_repair();
        let back = StatusLog::decode(&log.encode()).unwrap();
        assert_eq!(back, log);
        // A replacement counts the repairs from where the survivors are.
        assert_eq!(back.repairs(), 2);
        assert!(StatusLog::decode(&[3, 0]).is_none());
        assert_eq!(Vec::<i64>::from_bytes(&vec![3i64, -1, i64::MAX].to_bytes()), Some(vec![3, -1, i64::MAX]));
        assert!(Vec::<f64>::from_bytes(&[1, 2, 3]).is_none());
    }

    #[test]
    fn skipping_completed_calls_lands_on_the_interrupted_one() {
        let mut log = StatusLog::new();
        for name in ["a", "b"] {
            log.enter(name);
            log.complete(vec![1]);
        }
        log.enter("c");
        log.commit(3, vec![2]);
        log.rewind();
        log.skip_completed();
        assert_eq!(log.enter("c"), CallState::Resume { committed: 3, replicated: vec![2] });
    }
}
