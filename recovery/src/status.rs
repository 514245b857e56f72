//! The status log of a resilient region (Bland's "status object"): which
//! library calls completed, which one is in progress and at which committed
//! step, and the small replicated arrays (tau, pivots, ...) each one needs to
//! resume. Survivors hand it to replacements after a repair.

use blacs_ft::Grid;

/// State of one library call in the log.
#[derive(Clone, Debug, PartialEq)]
pub struct CallRecord {
    /// Routine name (e.g. `pdgeqrf_ft`).
    pub name: String,
    /// Number of committed steps (the next step to run).
    pub committed: u64,
    /// True once the call returned successfully.
    pub done: bool,
    /// Replicated data the call keeps consistent at each commit (tau, ...).
    pub replicated: Vec<f64>,
}

/// What a call finds in the log when it starts.
#[derive(Clone, Debug, PartialEq)]
pub enum CallState {
    /// Not in the log: start from the beginning.
    Fresh,
    /// Interrupted: resume after `committed` steps with this replicated data.
    Resume { committed: u64, replicated: Vec<f64> },
    /// Completed earlier: skip it (its replicated outputs are here).
    Done { replicated: Vec<f64> },
}

/// The ordered log of a region's library calls.
#[derive(Clone, Debug, Default, PartialEq)]
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

    /// Moves past the completed calls at the front of the log, so that the
    /// next [`StatusLog::enter`] is the interrupted call (or a new one).
    pub fn skip_completed(&mut self) {
        self.cursor = self.calls.iter().position(|c| !c.done).unwrap_or(self.calls.len());
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

    /// Called when the body reaches its next library call `name`: tells the
    /// call whether to start, resume or skip, and makes it the current one.
    pub fn enter(&mut self, name: &str) -> CallState {
        let i = self.cursor;
        self.cursor += 1;
        match self.calls.get(i) {
            Some(r) if r.name == name && r.done => CallState::Done { replicated: r.replicated.clone() },
            Some(r) if r.name == name => CallState::Resume { committed: r.committed, replicated: r.replicated.clone() },
            _ => {
                // A different call sequence than recorded: forget the rest.
                self.calls.truncate(i);
                self.calls.push(CallRecord {
                    name: name.to_string(),
                    committed: 0,
                    done: false,
                    replicated: Vec::new(),
                });
                CallState::Fresh
            }
        }
    }

    /// Records a commit of the current call.
    pub fn commit(&mut self, committed: u64, replicated: &[f64]) {
        if let Some(r) = self.current_mut() {
            r.committed = committed;
            r.replicated.clear();
            r.replicated.extend_from_slice(replicated);
        }
    }

    /// Marks the current call as completed.
    pub fn complete(&mut self, replicated: &[f64]) {
        if let Some(r) = self.current_mut() {
            r.done = true;
            r.replicated.clear();
            r.replicated.extend_from_slice(replicated);
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

    fn current_mut(&mut self) -> Option<&mut CallRecord> {
        self.cursor.checked_sub(1).and_then(|i| self.calls.get_mut(i))
    }

    /// Flattens the log for a broadcast: `[ncalls, cursor, repairs, per
    /// call: name length, name bytes (as f64), committed, done, data length,
    /// data]`.
    fn encode(&self) -> Vec<f64> {
        let mut v = vec![self.calls.len() as f64, self.cursor as f64, self.repairs as f64];
        for r in &self.calls {
            v.push(r.name.len() as f64);
            v.extend(r.name.bytes().map(|b| b as f64));
            v.push(r.committed as f64);
            v.push(if r.done { 1.0 } else { 0.0 });
            v.push(r.replicated.len() as f64);
            v.extend_from_slice(&r.replicated);
        }
        v
    }

    fn decode(v: &[f64]) -> Option<StatusLog> {
        let mut it = v.iter().copied();
        let mut next = || it.next();
        let n = next()? as usize;
        let cursor = next()? as usize;
        let repairs = next()? as u64;
        let mut calls = Vec::with_capacity(n);
        for _ in 0..n {
            let len = next()? as usize;
            let name: String = (0..len).map(|_| next().map(|b| b as u8 as char)).collect::<Option<_>>()?;
            let committed = next()? as u64;
            let done = next()? != 0.0;
            let dl = next()? as usize;
            let replicated = (0..dl).map(|_| next()).collect::<Option<Vec<f64>>>()?;
            calls.push(CallRecord { name, committed, done, replicated });
        }
        Some(StatusLog { calls, cursor, repairs })
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
        log.commit(3, &[0.5, 0.25]);
        log.complete(&[1.0, 2.0]);
        assert_eq!(log.enter("pdormqr"), CallState::Fresh);
        log.commit(1, &[]);
        // A failure: the body runs again from the top.
        log.rewind();
        assert_eq!(log.enter("pdgeqrf_ft"), CallState::Done { replicated: vec![1.0, 2.0] });
        assert_eq!(log.enter("pdormqr"), CallState::Resume { committed: 1, replicated: vec![] });
    }

    #[test]
    fn a_different_call_sequence_forgets_the_stale_tail() {
        let mut log = StatusLog::new();
        log.enter("a");
        log.complete(&[]);
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
        log.complete(&[1.0]);
        log.enter("pdgeqrf_ft");
        log.abandon_current();
        assert_eq!(log.calls().len(), 1);
        log.rewind();
        assert_eq!(log.enter("pdgeqrf_ft"), CallState::Done { replicated: vec![1.0] });
        assert_eq!(log.enter("pdgeqrf_ft"), CallState::Fresh);
        // Nothing to abandon before the first call.
        let mut empty = StatusLog::new();
        empty.abandon_current();
        assert_eq!(empty, StatusLog::new());
    }

    #[test]
    fn the_log_survives_encoding() {
        let mut log = StatusLog::new();
        log.enter("pdgeqrf_ft");
        log.commit(7, &[0.1, -3.5, 1e300]);
        log.enter("x");
        log.complete(&[]);
        log.count_repair();
        log.count_repair();
        let back = StatusLog::decode(&log.encode()).unwrap();
        assert_eq!(back, log);
        // A replacement counts the repairs from where the survivors are.
        assert_eq!(back.repairs(), 2);
        assert!(StatusLog::decode(&[3.0]).is_none());
    }

    #[test]
    fn skipping_completed_calls_lands_on_the_interrupted_one() {
        let mut log = StatusLog::new();
        for name in ["a", "b"] {
            log.enter(name);
            log.complete(&[1.0]);
        }
        log.enter("c");
        log.commit(3, &[2.0]);
        log.rewind();
        log.skip_completed();
        assert_eq!(log.enter("c"), CallState::Resume { committed: 3, replicated: vec![2.0] });
    }
}
