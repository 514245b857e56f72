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

use crate::progress::{Plan, Progress};
use crate::record::Phase;

/// A part of a call's work: one of the phases of the step-commit
/// protocol ([`Phase`]: args, encode, panel, swap, bcast, update, matvec,
/// dot, commit), or work the phases do not name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Part {
    /// The work of a phase (the trailing update counts its checksum
    /// columns, in the fault-tolerant drivers; commit, a step's local
    /// commit and the final checks).
    Step(Phase),
    /// Checksum bookkeeping outside the encoding and the update: the
    /// left-factor sums of finished panels.
    Checksums,
    /// Waiting in a step's agreement for the other processes.
    Wait,
    /// Periodic checkpoints.
    Checkpoint,
    /// Recoveries after a failure (repair, rebuild, restore).
    Recovery,
    /// Anything else (the solve's right-hand side, the copies at the end).
    Other,
}

/// The parts that are not a phase, in report order after the phases.
const BEYOND_PHASES: [Part; 5] = [Part::Checksums, Part::Wait, Part::Checkpoint, Part::Recovery, Part::Other];

/// Parts in all.
const PARTS: usize = Phase::ALL.len() + BEYOND_PHASES.len();

impl Part {
    pub const ARGS: Part = Part::Step(Phase::Args);
    pub const ENCODE: Part = Part::Step(Phase::Encode);
    pub const PANEL: Part = Part::Step(Phase::Panel);
    pub const SWAP: Part = Part::Step(Phase::Swap);
    pub const BCAST: Part = Part::Step(Phase::Bcast);
    pub const UPDATE: Part = Part::Step(Phase::Update);
    pub const COMMIT: Part = Part::Step(Phase::Commit);

    /// Every part, in report order: the phases, then the others.
    pub fn all() -> impl Iterator<Item = Part> {
        Phase::ALL.into_iter().map(Part::Step).chain(BEYOND_PHASES)
    }

    /// Its name in reports and traces (a phase's is the phase's).
    pub fn name(self) -> &'static str {
        match self {
            Part::Step(p) => p.name(),
            Part::Checksums => "checksums",
            Part::Wait => "wait",
            Part::Checkpoint => "checkpoint",
            Part::Recovery => "recovery",
            Part::Other => "other",
        }
    }

    /// Its place in [`Part::all`] (no search: a mark on every phase).
    pub fn index(self) -> usize {
        match self {
            // (Phase is declared in the order of Phase::ALL.)
            Part::Step(p) => p as usize,
            other => Phase::ALL.len() + BEYOND_PHASES.iter().position(|&q| q == other).unwrap_or(0),
        }
    }

    /// The part at `index` of [`Part::all`] (`Other` past the end).
    pub fn at(index: usize) -> Part {
        Part::all().nth(index).unwrap_or(Part::Other)
    }
}

impl From<Phase> for Part {
    fn from(p: Phase) -> Part {
        Part::Step(p)
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
    /// Seconds per part, in [`Part::all`]'s order (parts never entered
    /// are left out).
    pub seconds: Vec<(Part, f64)>,
    /// The recording's wall time, seconds.
    pub wall_s: f64,
    /// The timeline, when [`start`] asked for it.
    pub spans: Vec<Span>,
}

struct Recorder {
    started: Instant,
    seconds: [f64; PARTS],
    current: (Part, u64, Instant),
    spans: Option<Vec<Span>>,
    progress: Option<Progress>,
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
        if let Some(p) = self.progress.as_mut() {
            p.observe(part, step, now);
        }
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
    start_with_progress(timeline, None);
}

/// [`start`], and (`progress`) a progress line fed by the step marks
/// ([`crate::progress`]).
pub fn start_with_progress(timeline: bool, progress: Option<Plan>) {
    let now = Instant::now();
    RECORDER.with(|r| {
        *r.borrow_mut() = Some(Recorder {
            started: now,
            seconds: [0.0; PARTS],
            current: (Part::Other, 0, now),
            spans: timeline.then(Vec::new),
            progress: progress.map(|plan| Progress::new(plan, now)),
        })
    });
}

/// Ends the recording and returns it (`None` when none was started).
pub fn stop() -> Option<Profile> {
    let now = Instant::now();
    RECORDER.with(|r| {
        let mut rec = r.borrow_mut().take()?;
        rec.switch(Part::Other, 0, now);
        let seconds = Part::all().map(|p| (p, rec.seconds[p.index()])).filter(|&(_, s)| s > 0.0).collect();
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
    fn every_part_has_its_own_place_and_name() {
        let all: Vec<Part> = Part::all().collect();
        assert_eq!(all.len(), PARTS);
        for (i, p) in all.iter().enumerate() {
            assert_eq!((p.index(), Part::at(i)), (i, *p), "{p:?}");
        }
        let mut names: Vec<&str> = all.iter().map(|p| p.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), PARTS);
        assert_eq!(Part::from(Phase::Update).name(), "update");
    }

    #[test]
    fn the_parts_sum_to_the_recording_and_guards_give_back_the_part_around_them() {
        assert_eq!(stop(), None);
        enter(Part::PANEL, 0); // (not recording: nothing)
        start(true);
        enter(Part::PANEL, 0);
        std::thread::sleep(Duration::from_millis(20));
        {
            let _g = part(Part::BCAST, None);
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(10));
        enter(Part::UPDATE, 1);
        std::thread::sleep(Duration::from_millis(20));
        let p = stop().expect("a recording");
        let s = |part: Part| p.seconds.iter().find(|&&(q, _)| q == part).map_or(0.0, |&(_, s)| s);
        assert!(s(Part::PANEL) >= 0.029 && s(Part::BCAST) >= 0.009 && s(Part::UPDATE) >= 0.019, "{p:?}");
        let sum: f64 = p.seconds.iter().map(|&(_, s)| s).sum();
        assert!((sum - p.wall_s).abs() < 1e-6, "{p:?}");
        // Panel, bcast, panel again, update (and the instant before the first mark).
        let parts: Vec<(Part, u64)> =
            p.spans.iter().filter(|s| s.part != Part::Other).map(|s| (s.part, s.step)).collect();
        assert_eq!(parts, [(Part::PANEL, 0), (Part::BCAST, 0), (Part::PANEL, 0), (Part::UPDATE, 1)], "{p:?}");
        assert!(p.spans.windows(2).all(|w| w[0].start_us <= w[1].start_us + 1.0), "{p:?}");
        assert_eq!(stop(), None);
    }
}
