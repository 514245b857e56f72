//! Point-to-point sends that run while their sender goes on computing,
//! inside a scope that completes every one of them before it returns.
//!
//! A blocking send of a large message holds its sender until the receiver
//! has copied it (a rendezvous); a sender with more to compute and send
//! then idles while the receiver copies, and the receiver idles while the
//! sender computes. Sends started here let both work at once.

use crate::comm::Element;
use crate::error::Result;
use crate::ffi::Handle;
use crate::grid::Grid;
use std::collections::VecDeque;
use std::marker::PhantomData;

/// One started send: its request, and its buffer when it owns it.
struct Started<T> {
    req: Handle,
    owned: Option<Vec<T>>,
}

/// The sends of one [`Grid::with_sends`] scope. A borrowed buffer stays
/// borrowed until the scope ends; an owned one comes back, once sent,
/// through [`Sends::buffer`].
pub struct Sends<'a, T: Element> {
    grid: &'a Grid,
    started: VecDeque<Started<T>>,
    sent: Vec<Vec<T>>,
    in_flight: usize,
    /// Invariant in `'a`: a scope cannot be handed buffers that live
    /// shorter than it.
    _buffers: PhantomData<std::cell::Cell<&'a [T]>>,
}

impl<'a, T: Element> Sends<'a, T> {
    /// Starts sending `buf` to the process at (`row`, `col`); `buf` stays
    /// borrowed until the scope ends.
    pub fn send(&mut self, buf: &'a [T], row: i32, col: i32, tag: i32) -> Result<()> {
        self.start(buf, None, row, col, tag)
    }

    /// Starts sending an owned buffer to the process at (`row`, `col`);
    /// [`Sends::buffer`] hands it out again once it is sent.
    pub fn send_owned(&mut self, buf: Vec<T>, row: i32, col: i32, tag: i32) -> Result<()> {
        // (A Vec's heap buffer does not move when the Vec does.)
        // SAFETY: the slice is the owned Vec's heap buffer, which lives in
        // `started` (never resized) until the request has completed.
        let view = unsafe { std::slice::from_raw_parts(buf.as_ptr(), buf.len()) };
        self.start(view, Some(buf), row, col, tag)
    }

    /// An empty buffer of at least `capacity` to fill and send: one that
    /// was sent already (its capacity kept), else a new one.
    pub fn buffer(&mut self, capacity: usize) -> Result<Vec<T>> {
        // Buffers come back in the order they were sent; only those whose
        // send has completed are reused (no waiting here).
        while let Some(oldest) = self.started.front_mut() {
            if oldest.owned.is_none() || !self.grid.fail(self.grid.comm_all().test_request(&mut oldest.req))? {
                break;
            }
            let done = self.started.pop_front().expect("front exists");
            self.sent.extend(done.owned);
        }
        let mut buf = self.sent.pop().unwrap_or_default();
        buf.clear();
        buf.reserve(capacity);
        Ok(buf)
    }

    fn start(&mut self, buf: &[T], owned: Option<Vec<T>>, row: i32, col: i32, tag: i32) -> Result<()> {
        // Bounded: the oldest sends complete before more start (the
        // receiver takes them in order), which also bounds the memory
        // held by owned buffers.
        while self.started.len() >= self.in_flight {
            self.complete_oldest()?;
        }
        let Some(dest) = self.grid.peer(row, col)? else {
            // (A position this process also plays: posted at once.)
            self.grid.post(buf, row, col, tag);
            self.sent.extend(owned);
            return Ok(());
        };
        // SAFETY: `buf` is either borrowed for 'a, which outlives the scope
        // (every send completes before `with_sends` returns, or in `Drop`),
        // or the heap buffer of `owned`, kept in `started` until then.
        let req = self.grid.fail(unsafe { self.grid.comm_all().isend(buf, dest, tag) })?;
        self.started.push_back(Started { req, owned });
        Ok(())
    }

    fn complete_oldest(&mut self) -> Result<()> {
        let Some(mut oldest) = self.started.pop_front() else { return Ok(()) };
        let done = self.grid.comm_all().complete(&mut oldest.req);
        // A send that failed has completed (with its error): its buffer
        // is free either way.
        self.sent.extend(oldest.owned);
        self.grid.fail(done)
    }

    /// Completes every send; the first error, if any.
    fn finish(&mut self) -> Result<()> {
        let mut first = Ok(());
        while !self.started.is_empty() {
            if let Err(e) = self.complete_oldest() {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }
}

impl<T: Element> Drop for Sends<'_, T> {
    /// Sends still started here (their scope is unwinding) must not outlive
    /// their buffers: the grid is revoked, which completes them (with an
    /// error) whether or not their receiver is still listening, and they
    /// are waited for.
    fn drop(&mut self) {
        if !self.started.is_empty() {
            self.grid.revoke_all();
            let _ = self.finish();
        }
    }
}

impl Grid {
    /// Runs `f` with a set of sends that proceed while it computes, at most
    /// `in_flight` (≥ 1) at a time; every send has completed when this
    /// returns.
    ///
    /// # Fault tolerance
    /// A process failure met by a send surfaces as a process-failure error
    /// and revokes the grid, as for [`Grid::send`]. When `f` fails with sends
    /// still in flight, the grid is revoked first (with ULFM; without it
    /// they are waited for), so that none of them can wait for a receiver
    /// that no longer expects it.
    /// (`f`'s error type is the caller's, so that a caller's own errors and
    /// the grid's both pass through.)
    pub fn with_sends<'a, T: Element, R, E: From<crate::Error>>(
        &'a self,
        in_flight: usize,
        f: impl FnOnce(&mut Sends<'a, T>) -> std::result::Result<R, E>,
    ) -> std::result::Result<R, E> {
        let mut sends = Sends {
            grid: self,
            started: VecDeque::new(),
            sent: Vec::new(),
            in_flight: in_flight.max(1),
            _buffers: PhantomData,
        };
        // On an error, `Drop` revokes the grid of the sends still in
        // flight and completes them.
        let out = f(&mut sends)?;
        sends.finish().map(|()| out).map_err(E::from)
    }
}
