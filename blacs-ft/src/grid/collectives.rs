//! The grid's collectives and point-to-point messages, in the row, the
//! column or the whole grid, and its agreements (which survive failures).

use super::*;

impl Grid {
    /// Broadcast of `buf` from `root` along `scope` (BLACS dgebs2d/dgebr2d:
    /// the root sends, the others receive, all with the same call).
    pub fn broadcast<T: Element>(&self, scope: Scope, buf: &mut [T], root: i32) -> Result<()> {
        self.check_root(scope, root)?;
        self.fail(self.comm(scope).bcast(buf, root))
    }

    /// Non-blocking [`Grid::broadcast`]: starts it and returns; `wait` on the
    /// result completes it. Lets a process send a panel as soon as it is
    /// ready and go on computing while the others receive it.
    ///
    /// # Fault tolerance
    /// A failure surfaces at [`Grid::wait_broadcast`] as a process-failure
    /// error and revokes the grid, as for the blocking broadcast. A pending
    /// broadcast dropped without waiting leaks its buffer (MPI may still
    /// write into it).
    pub fn ibroadcast<T: Element>(&self, scope: Scope, buf: Vec<T>, root: i32) -> Result<PendingBcast<T>> {
        self.check_root(scope, root)?;
        self.fail(self.comm(scope).ibcast(buf, root))
    }

    /// Completes a broadcast started by [`Grid::ibroadcast`]; a process
    /// failure revokes the grid like any other operation's. A long wait
    /// sleeps between tests instead of spinning, leaving the core to the
    /// rank being waited for on an oversubscribed node.
    pub fn wait_broadcast<T: Element>(&self, pending: PendingBcast<T>) -> Result<Vec<T>> {
        self.fail(pending.wait())
    }

    /// Progresses a broadcast started by [`Grid::ibroadcast`] without
    /// blocking: `true` once it has completed. A process whose broadcast is
    /// large calls it between chunks of its computation, so that the
    /// receivers get the data meanwhile. A failure revokes the grid, as at
    /// [`Grid::wait_broadcast`].
    pub fn test_broadcast<T: Element>(&self, pending: &mut PendingBcast<T>) -> Result<bool> {
        self.fail(pending.test())
    }

    /// Element-wise sum along `scope` (BLACS dgsum2d). `root = None`: every
    /// process gets the result; `Some(r)`: only `r` does.
    pub fn sum<T: Element>(&self, scope: Scope, buf: &mut [T], root: Option<i32>) -> Result<()> {
        self.reduce(scope, buf, ReduceOp::Sum, root)
    }

    /// Element-wise maximum along `scope`, result on every process.
    pub fn max<T: Element>(&self, scope: Scope, buf: &mut [T]) -> Result<()> {
        self.reduce(scope, buf, ReduceOp::Max, None)
    }

    /// Element-wise minimum along `scope`, result on every process.
    pub fn min<T: Element>(&self, scope: Scope, buf: &mut [T]) -> Result<()> {
        self.reduce(scope, buf, ReduceOp::Min, None)
    }

    fn reduce<T: Element>(&self, scope: Scope, buf: &mut [T], op: ReduceOp, root: Option<i32>) -> Result<()> {
        match root {
            None => self.fail(self.comm(scope).allreduce(buf, op)),
            Some(r) => {
                self.check_root(scope, r)?;
                self.fail(self.comm(scope).reduce(buf, op, r))
            }
        }
    }

    /// Largest |value| along `scope` and where it is (BLACS dgamx2d, as used
    /// for pivot search): each process offers `(value, index)`; every process
    /// gets the offer with the largest magnitude, the lowest index on ties,
    /// and the signed value. NaN counts as larger than any number.
    pub fn amax(&self, scope: Scope, value: f64, index: i64) -> Result<(f64, i64)> {
        let all = self.allgather(scope, &[value, index as f64])?;
        let mut best = (value, index);
        let key = |v: f64| if v.is_nan() { f64::INFINITY } else { v.abs() };
        let mut first = true;
        for pair in all.chunks_exact(2) {
            let (v, i) = (pair[0], pair[1] as i64);
            if first || key(v) > key(best.0) || (key(v) == key(best.0) && i < best.1) {
                best = (v, i);
                first = false;
            }
        }
        Ok(best)
    }

    /// Sends `buf` to the process at (`row`, `col`).
    pub fn send<T: Element>(&self, buf: &[T], row: i32, col: i32, tag: i32) -> Result<()> {
        match self.peer(row, col)? {
            Some(dest) => self.fail(self.all.send(buf, dest, tag)),
            None => {
                self.post(buf, row, col, tag);
                Ok(())
            }
        }
    }

    /// Receives into `buf` from the process at (`row`, `col`); returns the
    /// number of elements received.
    pub fn recv<T: Element>(&self, buf: &mut [T], row: i32, col: i32, tag: i32) -> Result<usize> {
        match self.peer(row, col)? {
            Some(src) => self.fail(self.all.recv(buf, Some(src), tag)).map(|(_, n)| n),
            None => self.take(buf, row, col, tag),
        }
    }

    /// [`Grid::recv`] of exactly `buf.len()` elements. A shorter message
    /// means the sender's idea of the data differs from this process's (a
    /// defect, never a user's input): an [`Error::Unrecoverable`], not a
    /// partly filled buffer that goes on as if it were whole.
    pub fn recv_exact<T: Element>(&self, buf: &mut [T], row: i32, col: i32, tag: i32) -> Result<()> {
        let got = self.recv(buf, row, col, tag)?;
        whole_message(got, buf.len(), (row, col), tag)
    }

    /// Sends `send` to (`to`) while receiving exactly `recv.len()`
    /// elements from (`from`); a shorter message is an
    /// [`Error::Unrecoverable`], as in [`Grid::recv_exact`].
    pub fn exchange<T: Element>(
        &self,
        send: &[T],
        to: (i32, i32),
        recv: &mut [T],
        from: (i32, i32),
        tag: i32,
    ) -> Result<()> {
        let (Some(dest), Some(src)) = (self.peer(to.0, to.1)?, self.peer(from.0, from.1)?) else {
            return Err(Error::Unrecoverable { reason: "an exchange between positions one process plays".into() });
        };
        let got = self.fail(self.all.sendrecv(send, dest, recv, src, tag))?;
        whole_message(got, recv.len(), from, tag)
    }

    /// All-gather along `scope`: every process gets every contribution, in
    /// rank order of the scope.
    pub fn allgather<T: Element>(&self, scope: Scope, send: &[T]) -> Result<Vec<T>> {
        self.fail(self.comm(scope).allgather(send))
    }

    /// Collective: the lowest grid rank that passed `cond = true`, the same
    /// on every rank (`None` if nobody did). The usual way to pick who
    /// sends a replicated object after a repair (a survivor, not a
    /// replacement) or whose error everybody reports.
    pub fn lowest_rank_where(&self, cond: bool) -> Result<Option<i32>> {
        let mut who = [if cond { self.rank as i64 } else { i64::MAX }];
        self.min(Scope::All, &mut who)?;
        Ok((who[0] != i64::MAX).then_some(who[0] as i32))
    }

    /// Collective: broadcasts a vector whose length only `root` knows;
    /// every rank returns root's vector (`data` is ignored elsewhere).
    pub fn broadcast_vec<T: Element>(&self, data: Vec<T>, root: i32) -> Result<Vec<T>> {
        let mut len = [data.len() as i64];
        self.broadcast(Scope::All, &mut len, root)?;
        let mut buf = if self.rank == root { data } else { vec![T::default(); len[0].max(0) as usize] };
        self.broadcast(Scope::All, &mut buf, root)?;
        Ok(buf)
    }

    /// Fault-tolerant agreement over the whole grid (`MPIX_Comm_agree`):
    /// `true` only if every live rank passed `true`; the same answer on every
    /// live rank. A process failure returns a process-failure error. Without
    /// ULFM it is an all-reduce (not fault tolerant). This is the commit
    /// point of the step-commit protocol.
    ///
    /// The wait sleeps between tests once it runs long (non-blocking
    /// agreement where the MPI has it), like [`Grid::wait_broadcast`].
    pub fn agree(&self, flag: bool) -> Result<bool> {
        let started = self.start_agree(flag)?;
        self.finish_agree(started)
    }

    /// How many agreements ([`Grid::agree`], [`Grid::start_agree`],
    /// [`Grid::start_agree_bits`]) this process has started on the grid:
    /// the count of a protocol's collective decisions, for tests and
    /// profiles (local; a replacement counts from its join).
    pub fn agreements_started(&self) -> u64 {
        self.agreements.get()
    }

    /// Starts [`Grid::agree`] and returns at once, so that local work can
    /// overlap the agreement; [`Grid::finish_agree`] completes it. Every
    /// rank starts its agreements in the same order.
    pub fn start_agree(&self, flag: bool) -> Result<GridAgreement> {
        self.start_agree_bits(flag as i32)
    }

    /// [`Grid::start_agree`] on the low `AGREED_BITS` bits of `flags`:
    /// [`Grid::finish_agree_bits`] gives their bitwise AND over every live
    /// process. One rank can say yes or no for all in a bit the others
    /// set (the step-commit protocol's "save this step").
    pub fn start_agree_bits(&self, flags: i32) -> Result<GridAgreement> {
        let flags = flags & ((1 << AGREED_BITS) - 1);
        self.agreements.set(self.agreements.get() + 1);
        trace!("grid rank {} starts agreement {} (flags {flags})", self.rank, self.agreements.get());
        if self.ulfm == UlfmStatus::Available {
            return Ok(GridAgreement(Agreement::Pending(self.fail(self.all.start_agree(flags))?)));
        }
        // (Without ULFM: one minimum per bit.)
        let mut v: Vec<i64> = (0..AGREED_BITS).map(|b| ((flags >> b) & 1) as i64).collect();
        self.fail(self.all.allreduce(&mut v, ReduceOp::Min))?;
        Ok(GridAgreement(Agreement::Done(v.iter().enumerate().map(|(b, &x)| (x as i32) << b).sum())))
    }

    /// Completes an agreement started by [`Grid::start_agree`]; a process
    /// failure revokes the grid like any other operation's.
    pub fn finish_agree(&self, started: GridAgreement) -> Result<bool> {
        Ok(self.finish_agree_bits(started)? & 1 == 1)
    }

    /// Completes an agreement started by [`Grid::start_agree_bits`]: the
    /// flags' bitwise AND.
    pub fn finish_agree_bits(&self, started: GridAgreement) -> Result<i32> {
        match started.0 {
            Agreement::Done(v) => Ok(v),
            Agreement::Pending(p) => {
                let agreed = p.wait();
                trace!("grid rank {} ends agreement {}: {agreed:?}", self.rank, self.agreements.get());
                Ok(self.fail(agreed)? & ((1 << AGREED_BITS) - 1))
            }
            Agreement::Failed(e) => Err(e),
        }
    }

    /// Progresses an agreement started by [`Grid::start_agree`] without
    /// blocking, for a process that computes while it runs (the others'
    /// agreement may need this one's participation to complete): `true`
    /// once it has completed or failed. An error is kept for
    /// [`Grid::finish_agree`], which returns it.
    pub fn progress_agree(&self, started: &mut GridAgreement) -> bool {
        let Agreement::Pending(p) = &mut started.0 else { return true };
        match self.fail(p.test()) {
            Ok(done) => done,
            Err(e) => {
                started.0 = Agreement::Failed(e);
                true
            }
        }
    }

    /// Barrier along `scope`.
    pub fn barrier(&self, scope: Scope) -> Result<()> {
        self.fail(self.comm(scope).barrier())
    }

    pub(super) fn check_root(&self, scope: Scope, root: i32) -> Result<()> {
        let n = self.comm(scope).size();
        if root < 0 || root >= n {
            return Err(Error::invalid("root", format!("{root} is outside 0..{n} for scope {scope:?}")));
        }
        Ok(())
    }

    pub(super) fn check_coords(&self, row: i32, col: i32) -> Result<()> {
        if row < 0 || row >= self.p || col < 0 || col >= self.q {
            return Err(Error::invalid(
                "(row, col)",
                format!("({row}, {col}) is outside the {}x{} grid", self.p, self.q),
            ));
        }
        Ok(())
    }

    /// Collective: turns each rank's local outcome into one outcome that is
    /// the same everywhere. If any rank passes `Err`, every rank returns
    /// [`Error::Remote`] naming the lowest failing rank and its message.
    /// Needs no ULFM.
    pub fn agree_ok<T, E: std::fmt::Display>(&self, local: std::result::Result<T, E>) -> Result<T> {
        match local {
            Ok(v) => self.fail(agree_on_pending(&self.all, self.rank, None)).map(|()| v),
            Err(e) => {
                let msg = e.to_string();
                self.fail(agree_on_pending(&self.all, self.rank, Some(&msg)))
                    .and(Err(Error::Remote { rank: self.rank, message: msg }))
            }
        }
    }
}

/// `Ok` if a received message filled its buffer (`got` of `expected`
/// elements from grid process `from`); otherwise the sender's idea of the
/// data differs from the receiver's, which no repair can mend.
fn whole_message(got: usize, expected: usize, from: (i32, i32), tag: i32) -> Result<()> {
    if got == expected {
        return Ok(());
    }
    Err(Error::Unrecoverable {
        reason: format!(
            "a message from grid process ({}, {}) with tag {tag:#x} holds {got} elements where {expected} were expected",
            from.0, from.1
        ),
    })
}
