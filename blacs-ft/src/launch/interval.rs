//! The interval of periodic checkpoints, as the launcher passes it to
//! every process (`FTLA_CHECKPOINT_EVERY`, `FTLA_MTBF`): one typed value
//! and one way to write and read it.

use std::time::Duration;

/// Periodic checkpoints: every `SECONDS`, or at the interval of Young and
/// Daly, √(2·C·MTBF), from the measured cost C of the first checkpoint and
/// the expected time between failures that end the whole job.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CheckpointInterval {
    /// Every this long (zero: at every commit point).
    Every(Duration),
    /// √(2·C·`mtbf`), C the first checkpoint's cost (the first is taken at
    /// the first commit point).
    YoungDaly { mtbf: Duration },
}

/// `FTLA_MTBF`: hours between failures that end the whole job, with
/// `FTLA_CHECKPOINT_EVERY=auto`.
pub const MTBF_VAR: &str = "FTLA_MTBF";

impl CheckpointInterval {
    /// From `--checkpoint-every` (seconds, fractions allowed, or `auto`)
    /// and `--mtbf` (hours; needed by `auto`, refused otherwise).
    ///
    /// # Errors
    /// The reason, for a message that names the option.
    pub fn parse(every: &str, mtbf_hours: Option<&str>) -> Result<CheckpointInterval, String> {
        let positive = |s: &str, what: &str| {
            s.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0).ok_or_else(|| format!("`{s}`: must be {what}"))
        };
        match (every, mtbf_hours) {
            ("auto", Some(h)) => {
                let h = positive(h, "a number of hours, more than 0")?;
                if h == 0.0 {
                    return Err("the MTBF must be more than 0 hours".into());
                }
                Ok(CheckpointInterval::YoungDaly { mtbf: Duration::from_secs_f64(h * 3600.0) })
            }
            ("auto", None) => Err("`auto` needs the mean time between job-ending failures (--mtbf HOURS)".into()),
            (s, None) => Ok(CheckpointInterval::Every(Duration::from_secs_f64(positive(
                s,
                "a number of seconds, 0 or more, or auto",
            )?))),
            (_, Some(_)) => Err("--mtbf goes with --checkpoint-every auto".into()),
        }
    }

    /// The values of `FTLA_CHECKPOINT_EVERY` and `FTLA_MTBF` that
    /// [`CheckpointInterval::parse`] reads back.
    pub fn to_env(self) -> (String, String) {
        match self {
            CheckpointInterval::Every(d) => (d.as_secs_f64().to_string(), String::new()),
            CheckpointInterval::YoungDaly { mtbf } => ("auto".into(), (mtbf.as_secs_f64() / 3600.0).to_string()),
        }
    }

    /// The interval after a first checkpoint that cost `first`: Young and
    /// Daly's √(2·C·MTBF), or the fixed one.
    pub fn after_first(self, first: Duration) -> Duration {
        match self {
            CheckpointInterval::Every(d) => d,
            CheckpointInterval::YoungDaly { mtbf } => {
                Duration::from_secs_f64((2.0 * first.as_secs_f64() * mtbf.as_secs_f64()).sqrt())
            }
        }
    }

    /// The interval before the first checkpoint (Young and Daly's needs
    /// the first one's cost: at the first commit point).
    pub fn before_first(self) -> Duration {
        match self {
            CheckpointInterval::Every(d) => d,
            CheckpointInterval::YoungDaly { .. } => Duration::ZERO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_read_back_what_they_write_and_refuse_the_rest() {
        for i in [
            CheckpointInterval::Every(Duration::from_millis(500)),
            CheckpointInterval::Every(Duration::ZERO),
            CheckpointInterval::YoungDaly { mtbf: Duration::from_secs(5400) },
        ] {
            let (every, mtbf) = i.to_env();
            let back = CheckpointInterval::parse(&every, Some(mtbf.as_str()).filter(|m| !m.is_empty()));
            assert_eq!(back, Ok(i));
        }
        assert!(CheckpointInterval::parse("auto", None).unwrap_err().contains("--mtbf"));
        assert!(CheckpointInterval::parse("5", Some("2")).is_err());
        assert!(CheckpointInterval::parse("-1", None).is_err());
        assert!(CheckpointInterval::parse("auto", Some("0")).is_err());
        // Young/Daly: √(2 · 2 s · 1 h) = 120 s.
        let yd = CheckpointInterval::YoungDaly { mtbf: Duration::from_secs(3600) };
        assert_eq!(yd.after_first(Duration::from_secs(2)), Duration::from_secs(120));
        assert_eq!(yd.before_first(), Duration::ZERO);
    }
}
