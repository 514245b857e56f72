//! Where a call's time goes on this process: seconds per part of the work
//! (panel, broadcasts, row interchanges, trailing update, checksum
//! encoding, commit, the wait in agreements, checkpoints, recoveries) and,
//! when asked, its timeline.
//!
//! A recorder per thread, off unless [`start`] turned it on: the drivers
//! mark what they do ([`enter`], or a [`part`] guard for a piece of work
//! inside another), which costs a thread-local check when it is off. The
//! time between two marks goes to the first; so the parts sum to the time
//! from [`start`] to [`stop`].

use std::cell::RefCell;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::record::Phase;

/// A part of a call's work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Part {
    /// Before the work: argument checks and the verdict.
    Args,
    /// The encoding of the checksums.
    Encode,
    /// Panel factorizations.
    Panel,
    /// Row interchanges.
    Swap,
    /// Broadcasts of panels and block rows.
    Bcast,
    /// The trailing update (with its checksum columns, in the
    /// fault-tolerant drivers).
    Update,
    /// Matrix-vector products.
    Matvec,
    /// Inner products reduced over the grid.
    Dot,
    /// Checksum bookkeeping outside the encoding and the update: the
    /// left-factor sums of finished panels.
    Checksums,
    /// The local commit of a step (and the final checks).
    Commit,
    /// Waiting in a step's agreement for the other processes.
    Wait,
    /// Periodic checkpoints.
    Checkpoint,
    /// Recoveries after a failure (repair, rebuild, restore).
    Recovery,
    /// Anything else (the solve's right-hand side, the copies at the end).
    Other,
}

impl Part {
    /// Every part, in report order.
    pub const ALL: [Part; 14] = [
        Part::Args,
        Part::Encode,
        Part::Panel,
        Part::Swap,
        Part::Bcast,
        Part::Update,
        Part::Matvec,
        Part::Dot,
        Part::Checksums,
        Part::Commit,
        Part::Wait,
        Part::Checkpoint,
        Part::Recovery,
        Part::Other,
    ];

    /// Its name in reports and traces.
    pub fn name(self) -> &'static str {
        match self {
            Part::Args => "args",
            Part::Encode => "encode",
            Part::Panel => "panel",
            Part::Swap => "swap",
            Part::Bcast => "bcast",
            Part::Update => "update",
            Part::Matvec => "matvec",
            Part::Dot => "dot",
            Part::Checksums => "checksums",
            Part::Commit => "commit",
            Part::Wait => "wait",
            Part::Checkpoint => "checkpoint",
            Part::Recovery => "recovery",
            Part::Other => "other",
        }
    }

    fn index(self) -> usize {
        Part::ALL.iter().position(|&p| p == self).unwrap_or(Part::ALL.len() - 1)
    }
}

impl From<Phase> for Part {
    fn from(p: Phase) -> Part {
        match p {
            Phase::Args => Part::Args,
            Phase::Encode => Part::Encode,
            Phase::Panel => Part::Panel,
            Phase::Swap => Part::Swap,
            Phase::Bcast => Part::Bcast,
            Phase::Update => Part::Update,
            Phase::Matvec => Part::Matvec,
            Phase::Dot => Part::Dot,
            Phase::Commit => Part::Commit,
        }
    }
}

/// One stretch of a timeline: a part, the step it was in, and when
/// (microseconds since the Unix epoch, so that the processes of one
/// machine share a clock).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    pub part: Part,
    pub step: u64,
    pub start_us: f64,
    pub duration_us: f64,
}

/// What a recording gave.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Profile {
    /// Seconds per part, in [`Part::ALL`]'s order (parts never entered
    /// are left out).
    pub seconds: Vec<(Part, f64)>,
    /// The recording's wall time, seconds.
    pub wall_s: f64,
    /// The timeline, when [`start`] asked for it.
    pub spans: Vec<Span>,
}

struct Recorder {
    started: Instant,
    seconds: [f64; Part::ALL.len()],
    current: (Part, u64, Instant),
    spans: Option<Vec<Span>>,
}

impl Recorder {
    /// Closes the current stretch at `now` and opens `(part, step)`.
    fn switch(&mut self, part: Part, step: u64, now: Instant) {
        let (p, s, since) = self.current;
        let d = now.duration_since(since).as_secs_f64();
        self.seconds[p.index()] += d;
        if let Some(spans) = self.spans.as_mut() {
            if d > 0.0 {
                spans.push(Span { part: p, step: s, start_us: epoch_us(since), duration_us: d * 1e6 });
            }
        }
        self.current = (part, step, now);
    }
}

thread_local! {
    static RECORDER: RefCell<Option<Recorder>> = const { RefCell::new(None) };
}

/// The microseconds since the Unix epoch of `t`.
fn epoch_us(t: Instant) -> f64 {
    let now = Instant::now();
    let wall = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64() * 1e6);
    wall - now.duration_since(t).as_secs_f64() * 1e6
}

/// Starts recording on this thread (`timeline`: keep every stretch too),
/// in [`Part::Other`] until the first mark. A recording in progress is
/// dropped.
pub fn start(timeline: bool) {
    let now = Instant::now();
    RECORDER.with(|r| {
        *r.borrow_mut() = Some(Recorder {
            started: now,
            seconds: [0.0; Part::ALL.len()],
            current: (Part::Other, 0, now),
            spans: timeline.then(Vec::new),
        })
    });
}

/// Ends the recording and returns it (`None` when none was started).
pub fn stop() -> Option<Profile> {
    let now = Instant::now();
    RECORDER.with(|r| {
        let mut rec = r.borrow_mut().take()?;
        rec.switch(Part::Other, 0, now);
        let seconds = Part::ALL.iter().map(|&p| (p, rec.seconds[p.index()])).filter(|&(_, s)| s > 0.0).collect();
        Some(Profile {
            seconds,
            wall_s: now.duration_since(rec.started).as_secs_f64(),
            spans: rec.spans.unwrap_or_default(),
        })
    })
}

/// From now on this process does `part` (of step `step`).
pub fn enter(part: Part, step: u64) {
    RECORDER.with(|r| {
        if let Some(rec) = r.borrow_mut().as_mut() {
            rec.switch(part, step, Instant::now());
        }
    });
}

/// From now on this process works on step `step` (of the same part).
pub fn at_step(step: u64) {
    RECORDER.with(|r| {
        if let Some(rec) = r.borrow_mut().as_mut() {
            let part = rec.current.0;
            rec.switch(part, step, Instant::now());
        }
    });
}

/// The part being recorded and its step (`None` when not recording).
fn current() -> Option<(Part, u64)> {
    RECORDER.with(|r| r.borrow().as_ref().map(|rec| (rec.current.0, rec.current.1)))
}

/// Records `part` until the guard is dropped, then what was being
/// recorded before: for a piece of work inside another (a broadcast inside
/// a panel's step).
#[must_use = "the part ends when the guard is dropped"]
pub struct PartGuard {
    before: Option<(Part, u64)>,
}

/// See [`PartGuard`]; `step` is that of the work around it when recording.
pub fn part(part: Part, step: Option<u64>) -> PartGuard {
    let before = current();
    if let Some((_, s)) = before {
        enter(part, step.unwrap_or(s));
    }
    PartGuard { before }
}

impl Drop for PartGuard {
    fn drop(&mut self) {
        if let Some((p, s)) = self.before {
            enter(p, s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_parts_sum_to_the_recording_and_guards_give_back_the_part_around_them() {
        assert_eq!(stop(), None);
        enter(Part::Panel, 0); // (not recording: nothing)
        start(true);
        enter(Part::Panel, 0);
        std::thread::sleep(Duration::from_millis(20));
        {
            let _g = part(Part::Bcast, None);
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(10));
        enter(Part::Update, 1);
        std::thread::sleep(Duration::from_millis(20));
        let p = stop().expect("a recording");
        let s = |part: Part| p.seconds.iter().find(|&&(q, _)| q == part).map_or(0.0, |&(_, s)| s);
        assert!(s(Part::Panel) >= 0.029 && s(Part::Bcast) >= 0.009 && s(Part::Update) >= 0.019, "{p:?}");
        let sum: f64 = p.seconds.iter().map(|&(_, s)| s).sum();
        assert!((sum - p.wall_s).abs() < 1e-6, "{p:?}");
        // Panel, bcast, panel again, update (and the instant before the first mark).
        let parts: Vec<(Part, u64)> =
            p.spans.iter().filter(|s| s.part != Part::Other).map(|s| (s.part, s.step)).collect();
        assert_eq!(parts, [(Part::Panel, 0), (Part::Bcast, 0), (Part::Panel, 0), (Part::Update, 1)], "{p:?}");
        assert!(p.spans.windows(2).all(|w| w[0].start_us <= w[1].start_us + 1.0), "{p:?}");
        assert_eq!(stop(), None);
    }
}
