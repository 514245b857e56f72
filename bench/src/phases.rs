//! Where a run's time goes (`recovery::profile`): the text line and the
//! JSON's `phases_s` from grid rank 0's recording, and `--trace FILE`,
//! every rank's timeline in the Chrome trace format; and where a long run
//! is (`recovery::progress`), on grid rank 0.

use blacs_ft::{Grid, Scope};
use recovery::profile::{Part, Profile, Span};
use std::collections::BTreeMap;
use std::path::Path;

/// Starts this rank's recording (`--trace`: with its timeline) and, on
/// grid rank 0 unless the launcher said `off` (`--quiet`), the progress
/// line of the factorization of `a` (or CG's iterations).
pub fn start_recording(grid: &Grid, a: &crate::problem::FactorJob) {
    let plan = (grid.rank() == 0).then(recovery::progress::Style::from_env).flatten().map(|style| {
        let (m, n, nb, op) = (a.m, a.n, a.nb, a.op);
        let steps = (op != ftla_bench::report::Op::Cg).then(|| m.min(n).div_ceil(nb.max(1)) as u64);
        recovery::progress::Plan {
            steps,
            flops_done: Box::new(move |k| recovery::progress::panel_flops_done(m, n, nb, k, |m, n| op.flops(m, n))),
            flops: op.flops(m, n),
            style,
        }
    });
    recovery::profile::start_with_progress(a.trace.is_some(), plan);
}

/// Seconds per part, by name (to 0.1 ms), for the JSON.
pub fn seconds_by_name(p: &Profile) -> BTreeMap<String, f64> {
    by_name(p.seconds.iter().copied())
}

/// Seconds per part, by name (to 0.1 ms).
pub fn by_name(parts: impl IntoIterator<Item = (Part, f64)>) -> BTreeMap<String, f64> {
    parts.into_iter().map(|(part, s)| (part.name().to_string(), (s * 1e4).round() / 1e4)).collect()
}

/// `time per part (grid rank 0): update 2.41 s (79 %), panel 0.30 s (10 %),
/// … of 3.05 s`, the largest first.
pub fn line(p: &Profile) -> String {
    let mut parts = p.seconds.clone();
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    let total = p.wall_s.max(1e-12);
    let list: Vec<String> =
        parts.iter().map(|&(part, s)| format!("{} {s:.3} s ({:.0} %)", part.name(), 100.0 * s / total)).collect();
    format!("time per part (grid rank 0): {} of {:.3} s", list.join(", "), p.wall_s)
}

/// Collective: every rank's timeline (`mine`, this rank's) written by
/// grid rank 0 to `path` in the Chrome trace format (`traceEvents`, one
/// complete event per stretch, `pid` the grid rank, `tid` 0, times in
/// microseconds from the earliest stretch), which Perfetto and
/// `chrome://tracing` open.
///
/// # Errors
/// A grid error (the same on every rank), or on rank 0 the file not
/// written.
pub fn write_trace(grid: &Grid, mine: &[Span], path: &Path) -> Result<(), String> {
    let count = grid.allgather(Scope::All, &[mine.len() as i64]).map_err(|x| x.to_string())?;
    let most = count.iter().copied().max().unwrap_or(0) as usize;
    // Four numbers a stretch (part, step, start, duration), padded to the
    // longest timeline.
    let mut flat = Vec::with_capacity(4 * most);
    for s in mine {
        flat.extend([s.part.index() as f64, s.step as f64, s.start_us, s.duration_us]);
    }
    flat.resize(4 * most, 0.0);
    let all = grid.allgather(Scope::All, &flat).map_err(|x| x.to_string())?;
    if grid.rank() != 0 {
        return Ok(());
    }
    let origin = (0..count.len())
        .flat_map(|r| (0..count[r] as usize).map(move |i| 4 * (r * most + i) + 2))
        .map(|k| all[k])
        .fold(f64::INFINITY, f64::min);
    let mut events = Vec::new();
    for (rank, &n) in count.iter().enumerate() {
        for i in 0..n as usize {
            let v = &all[4 * (rank * most + i)..4 * (rank * most + i) + 4];
            let part = Part::at(v[0] as usize);
            events.push(serde_json::json!({
                "name": part.name(),
                "cat": "ftla",
                "ph": "X",
                "ts": ((v[2] - origin) * 10.0).round() / 10.0,
                "dur": (v[3] * 10.0).round() / 10.0,
                "pid": rank,
                "tid": 0,
                "args": { "step": v[1] as u64 },
            }));
        }
    }
    for rank in 0..count.len() {
        events.push(serde_json::json!({
            "name": "process_name", "ph": "M", "pid": rank, "tid": 0,
            "args": { "name": format!("grid rank {rank}") },
        }));
    }
    let text = serde_json::to_string(&serde_json::json!({ "traceEvents": events, "displayTimeUnit": "ms" }))
        .map_err(|x| x.to_string())?;
    std::fs::write(path, text).map_err(|x| format!("--trace {}: {x}", path.display()))
}
