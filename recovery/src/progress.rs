//! Where a long run is: a progress line (step k of n, the fraction of the
//! flops done, Gflop/s so far, the time left, the recoveries so far), fed
//! by the step marks of the [`crate::profile`] recorder.
//!
//! Two styles, as the launcher's stderr asks ([`Style::from_env`]): on a
//! terminal a live line, a new one at most every half second after the
//! first second (the launcher draws each over the last); elsewhere one line
//! each time the run passes a tenth of its flops, as HPL prints its
//! fraction lines, once the run has taken two seconds (short runs stay
//! silent). Every line starts with [`PREFIX`].

use std::time::{Duration, Instant};

use crate::profile::Part;

/// The start of every progress line (the launcher recognises them by it),
/// and the variable that says which style the ranks use: `live`, `lines`
/// or `off` (set by the launcher: `live` when its stderr is a terminal,
/// `off` with `--quiet`).
pub use blacs_ft::launch::{PROGRESS_PREFIX as PREFIX, PROGRESS_VAR as STYLE_VAR};

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// A line every half second, which the launcher draws over the last.
    Live,
    /// A line per tenth of the flops.
    Lines,
}

impl Style {
    /// The style [`STYLE_VAR`] names (`None` for `off`); `lines` when it
    /// is unset or empty (a job started by hand).
    pub fn from_env() -> Option<Style> {
        match std::env::var(STYLE_VAR).as_deref() {
            Ok("off") => None,
            Ok("live") => Some(Style::Live),
            _ => Some(Style::Lines),
        }
    }
}

/// What a run's progress is measured against.
pub struct Plan {
    /// Steps of the run (`None`: not known ahead, as CG's iterations).
    pub steps: Option<u64>,
    /// The flops done once `k` steps are done (with `steps`).
    pub flops_done: Box<dyn Fn(u64) -> f64>,
    /// The flops of the whole run.
    pub flops: f64,
    /// How it is shown.
    pub style: Style,
}

/// A run's progress, as its recorder sees it.
pub(crate) struct Progress {
    plan: Plan,
    started: Instant,
    /// Steps done (the highest step entered).
    done: u64,
    recoveries: u32,
    in_recovery: bool,
    last_line: Option<Instant>,
    /// Tenths of the flops already said (lines).
    tenths_said: u64,
}

/// Runs shorter than this say nothing in the lines style.
const QUIET_FOR: Duration = Duration::from_secs(2);
/// The live line's first appearance and its refresh.
const LIVE_AFTER: Duration = Duration::from_secs(1);
const LIVE_EVERY: Duration = Duration::from_millis(500);
/// Without a fraction (CG), a line this often in the lines style.
const LINES_EVERY: Duration = Duration::from_secs(10);

impl Progress {
    pub(crate) fn new(plan: Plan, started: Instant) -> Progress {
        Progress { plan, started, done: 0, recoveries: 0, in_recovery: false, last_line: None, tenths_said: 0 }
    }

    /// The recorder switched to `part` of `step` at `now`: prints the
    /// line that is due, if one is.
    pub(crate) fn observe(&mut self, part: Part, step: u64, now: Instant) {
        if let Some(line) = self.advance(part, step, now) {
            eprintln!("{PREFIX}{line}");
        }
    }

    /// [`Progress::observe`]'s bookkeeping: the line due, if any.
    fn advance(&mut self, part: Part, step: u64, now: Instant) -> Option<String> {
        let recovering = part == Part::Recovery;
        if recovering && !self.in_recovery {
            self.recoveries += 1;
        }
        self.in_recovery = recovering;
        // (A later call of the run, a solve, counts its steps from 0: the
        // factorization's count stays.)
        if step <= self.done {
            return None;
        }
        self.done = self.plan.steps.map_or(step, |n| step.min(n));
        let line = self.line_due(now)?;
        self.last_line = Some(now);
        Some(line)
    }

    /// The line to print at `now`, if one is due.
    fn line_due(&mut self, now: Instant) -> Option<String> {
        let elapsed = now.duration_since(self.started);
        let since_last = self.last_line.map_or(elapsed, |t| now.duration_since(t));
        let fraction = self.fraction();
        let due = match (self.plan.style, fraction) {
            (Style::Live, _) => elapsed >= LIVE_AFTER && since_last >= LIVE_EVERY,
            (Style::Lines, Some(f)) => {
                let tenths = (f * 10.0).floor() as u64;
                let passed = tenths > self.tenths_said;
                self.tenths_said = self.tenths_said.max(tenths);
                passed && elapsed >= QUIET_FOR
            }
            (Style::Lines, None) => elapsed >= QUIET_FOR && since_last >= LINES_EVERY,
        };
        due.then(|| self.describe(elapsed, fraction))
    }

    /// The fraction of the flops done (`None` without a step count).
    fn fraction(&self) -> Option<f64> {
        let _ = self.plan.steps?;
        (self.plan.flops > 0.0).then(|| ((self.plan.flops_done)(self.done) / self.plan.flops).clamp(0.0, 1.0))
    }

    fn describe(&self, elapsed: Duration, fraction: Option<f64>) -> String {
        let secs = elapsed.as_secs_f64();
        let recoveries = match self.recoveries {
            1 => "1 recovery".to_string(),
            n => format!("{n} recoveries"),
        };
        match (self.plan.steps, fraction) {
            (Some(n), Some(f)) => {
                let rate = (self.plan.flops_done)(self.done) / secs.max(1e-9) / 1e9;
                let left = if f > 0.0 { format!("about {} left", short(secs * (1.0 - f) / f)) } else { "…".into() };
                format!(
                    "step {} of {n}, {:.0} % of the flops, {rate:.1} Gflop/s, {} so far, {left}, {recoveries}",
                    self.done,
                    100.0 * f,
                    short(secs)
                )
            }
            _ => format!("step {}, {} so far, {recoveries}", self.done, short(secs)),
        }
    }
}

/// `4.2 s`, `3 min 5 s`.
fn short(s: f64) -> String {
    if s < 60.0 {
        format!("{s:.1} s")
    } else {
        format!("{} min {:.0} s", (s / 60.0).floor(), s % 60.0)
    }
}

/// The flops done after `k` panels of a right-looking factorization of an
/// `m`×`n` matrix in panels of `nb` columns, given the flop count of a
/// whole one (`flops(m, n)`): all of it minus what the trailing matrix
/// still needs.
pub fn panel_flops_done(m: usize, n: usize, nb: usize, k: u64, flops: impl Fn(usize, usize) -> f64) -> f64 {
    let gone = (k as usize).saturating_mul(nb);
    flops(m, n) - flops(m.saturating_sub(gone), n.saturating_sub(gone))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lu(m: usize, n: usize) -> f64 {
        let (m, n) = (m as f64, n as f64);
        m * n * n - n * n * n / 3.0
    }

    fn plan(style: Style) -> Plan {
        Plan {
            steps: Some(10),
            flops_done: Box::new(|k| panel_flops_done(1000, 1000, 100, k, lu)),
            flops: lu(1000, 1000),
            style,
        }
    }

    #[test]
    fn the_flops_done_grow_to_the_whole_factorization() {
        assert_eq!(panel_flops_done(1000, 1000, 100, 0, lu), 0.0);
        assert_eq!(panel_flops_done(1000, 1000, 100, 10, lu), lu(1000, 1000));
        // The first panel's step carries the most work.
        let first = panel_flops_done(1000, 1000, 100, 1, lu);
        let last = lu(1000, 1000) - panel_flops_done(1000, 1000, 100, 9, lu);
        assert!(first > 10.0 * last, "{first} {last}");
    }

    #[test]
    fn lines_say_each_tenth_once_and_only_after_the_quiet_start() {
        let t0 = Instant::now();
        let mut p = Progress::new(plan(Style::Lines), t0);
        // Within the quiet start: the tenths pass silently.
        assert_eq!(p.advance(Part::UPDATE, 1, t0 + Duration::from_millis(100)), None);
        let late = t0 + Duration::from_secs(3);
        let line = p.advance(Part::UPDATE, 2, late).expect("a line after the quiet start");
        assert!(line.starts_with("step 2 of 10, 49 % of the flops"), "{line}");
        assert!(line.ends_with("0 recoveries"), "{line}");
        // The same step again, or a step within the same tenth: nothing.
        assert_eq!(p.advance(Part::UPDATE, 2, late), None);
        assert_eq!(p.advance(Part::Recovery, 2, late), None);
        let line = p.advance(Part::UPDATE, 3, late + Duration::from_millis(1)).expect("the next tenth");
        assert!(line.contains("1 recovery"), "{line}");
        // A later call (a solve) counts from 0: no line, the count stays.
        assert_eq!(p.advance(Part::UPDATE, 1, late + Duration::from_secs(1)), None);
        assert_eq!(p.done, 3);
    }

    #[test]
    fn the_live_line_comes_after_a_second_and_at_most_twice_a_second() {
        let t0 = Instant::now();
        let mut p = Progress::new(plan(Style::Live), t0);
        assert_eq!(p.advance(Part::UPDATE, 1, t0 + Duration::from_millis(500)), None);
        assert!(p.advance(Part::UPDATE, 2, t0 + Duration::from_millis(1100)).is_some());
        assert_eq!(p.advance(Part::UPDATE, 3, t0 + Duration::from_millis(1300)), None);
        let line = p.advance(Part::UPDATE, 4, t0 + Duration::from_millis(1700)).expect("half a second later");
        assert!(line.contains("step 4 of 10") && line.contains("left"), "{line}");
    }
}
