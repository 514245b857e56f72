//! Start-up shared by the MPI subcommands: join the grid (a spare parks and
//! leaves when released), and the bookkeeping after a repair that lets a
//! replacement catch up with the survivors.

use blacs_ft::{Grid, GridOptions, Injector, Joined, RepairMode, RepairReport, Runtime, Scope};

/// A process that holds a grid rank.
pub struct Session {
    pub rt: Runtime,
    pub grid: Box<Grid>,
}

/// Joins a `p`×`q` grid; spares park inside and end the process when
/// released. Start-up errors end the process with a message.
pub fn start(p: i32, q: i32, injector: Injector) -> Session {
    let mut rt = match Runtime::init() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ftla: MPI start-up failed: {e}");
            std::process::exit(1);
        }
    };
    let joined = rt.world_dup().and_then(|comm| Grid::join(&mut rt, comm, p, q, GridOptions { injector }));
    match joined {
        Ok(Joined::Active(grid)) => Session { rt, grid },
        Ok(Joined::Released) => rt.finish(0),
        Err(e) => {
            eprintln!("ftla: cannot build the {p}x{q} grid: {e}");
            rt.finish(1)
        }
    }
}

impl Session {
    /// Ends the job: releases spares, records the outcome (grid rank 0), and
    /// finishes MPI within bounded time.
    pub fn finish(self, ok: bool, detail: &str) -> ! {
        if self.grid.rank() == 0 {
            blacs_ft::launch::write_status(ok, detail);
        }
        self.grid.close();
        self.rt.finish(if ok { 0 } else { 1 })
    }
}

/// Per-repair record, the same on every rank once agreed.
#[derive(Clone, Debug, PartialEq)]
pub struct RepairRecord {
    pub mode: RepairMode,
    pub killed: Vec<i32>,
    pub detect_ms: f64,
    pub revoke_ms: f64,
    pub shrink_ms: f64,
    pub spawn_ms: f64,
    pub merge_ms: f64,
    pub split_ms: f64,
    /// Detection plus repair.
    pub total_ms: f64,
}

const FIELDS: usize = 7;

impl RepairRecord {
    fn times(&self) -> [f64; FIELDS] {
        [self.detect_ms, self.revoke_ms, self.shrink_ms, self.spawn_ms, self.merge_ms, self.split_ms, self.total_ms]
    }

    /// One JSON object with the names of `ftla repair --json`.
    pub fn to_json(&self) -> crate::json::Json {
        use crate::json::Json;
        Json::obj([
            ("mode", Json::from(self.mode.as_str())),
            ("killed", Json::Arr(self.killed.iter().map(|&r| Json::Int(r as i64)).collect())),
            ("detect_ms", Json::ms(self.detect_ms)),
            ("revoke_ms", Json::ms(self.revoke_ms)),
            ("shrink_ms", Json::ms(self.shrink_ms)),
            ("spawn_ms", Json::ms(self.spawn_ms)),
            ("merge_ms", Json::ms(self.merge_ms)),
            ("split_ms", Json::ms(self.split_ms)),
            ("total_ms", Json::ms(self.total_ms)),
        ])
    }

    /// `detect 25.1 revoke 0.0 ... total 1119.0 ms`.
    pub fn breakdown(&self) -> String {
        let spawn = if self.mode == RepairMode::Spare { "hand-over" } else { "spawn" };
        format!(
            "detect {:.1}, revoke {:.1}, shrink {:.1}, {spawn} {:.1}, merge {:.1}, split {:.1} = {:.1} ms",
            self.detect_ms, self.revoke_ms, self.shrink_ms, self.spawn_ms, self.merge_ms, self.split_ms, self.total_ms
        )
    }
}

/// Collective, run by survivors right after [`Grid::recover`] (with their
/// report and the detection time they measured) and by a replacement as its
/// first act (with `None`). Every rank returns the same record: the
/// element-wise maximum of the survivors' times (the critical path), their
/// repair mode and the killed ranks.
pub fn agree_on_repair(grid: &Grid, local: Option<(&RepairReport, f64)>) -> blacs_ft::Result<RepairRecord> {
    let n = grid.size() as usize;
    // times, mode code, killed flags
    let mut v = vec![0.0f64; FIELDS + 1 + n];
    if let Some((r, detect)) = local {
        let t = [detect, r.revoke_ms, r.shrink_ms, r.spawn_ms, r.merge_ms, r.split_ms, detect + r.total_ms];
        v[..FIELDS].copy_from_slice(&t);
        v[FIELDS] = match r.mode {
            RepairMode::Spawn => 2.0,
            RepairMode::Spare => 1.0,
            RepairMode::NoLoss => 0.0,
        };
        for &k in &r.killed {
            if let Some(f) = v.get_mut(FIELDS + 1 + k as usize) {
                *f = 1.0;
            }
        }
    }
    grid.max(Scope::All, &mut v)?;
    let mode = match v[FIELDS] as i32 {
        2 => RepairMode::Spawn,
        1 => RepairMode::Spare,
        _ => RepairMode::NoLoss,
    };
    let killed = (0..n).filter(|&r| v[FIELDS + 1 + r] > 0.5).map(|r| r as i32).collect();
    Ok(RepairRecord {
        mode,
        killed,
        detect_ms: v[0],
        revoke_ms: v[1],
        shrink_ms: v[2],
        spawn_ms: v[3],
        merge_ms: v[4],
        split_ms: v[5],
        total_ms: v[6],
    })
}

/// Collective: everybody adopts the largest step counter and the longest
/// history of records (a replacement starts with 0 and none).
pub fn sync_progress(grid: &Grid, step: &mut i64, history: &mut Vec<RepairRecord>) -> blacs_ft::Result<()> {
    let mut s = [*step, history.len() as i64];
    grid.max(Scope::All, &mut s)?;
    *step = s[0];
    let want = s[1] as usize;
    // The lowest rank that has the full history sends it.
    let mut holder = [if history.len() == want { grid.rank() as i64 } else { i64::MAX }];
    grid.min(Scope::All, &mut holder)?;
    let mut flat = vec![0.0f64; want * (FIELDS + 1 + grid.size() as usize)];
    if grid.rank() as i64 == holder[0] {
        let w = FIELDS + 1 + grid.size() as usize;
        for (i, r) in history.iter().enumerate() {
            let row = &mut flat[i * w..(i + 1) * w];
            row[..FIELDS].copy_from_slice(&r.times());
            row[FIELDS] = if r.mode == RepairMode::Spawn { 2.0 } else { 1.0 };
            for &k in &r.killed {
                row[FIELDS + 1 + k as usize] = 1.0;
            }
        }
    }
    grid.broadcast(Scope::All, &mut flat, holder[0] as i32)?;
    let w = FIELDS + 1 + grid.size() as usize;
    *history = flat
        .chunks_exact(w)
        .map(|row| RepairRecord {
            mode: if row[FIELDS] > 1.5 { RepairMode::Spawn } else { RepairMode::Spare },
            killed: (0..grid.size()).filter(|&k| row[FIELDS + 1 + k as usize] > 0.5).collect(),
            detect_ms: row[0],
            revoke_ms: row[1],
            shrink_ms: row[2],
            spawn_ms: row[3],
            merge_ms: row[4],
            split_ms: row[5],
            total_ms: row[6],
        })
        .collect();
    Ok(())
}

/// Median of `xs` (0 for none).
pub fn median(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(super::median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(super::median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(super::median(&[]), 0.0);
    }
}
