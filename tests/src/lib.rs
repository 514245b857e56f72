//! Shared by the test drivers in `src/`: their command-line pieces.

/// Parses a process grid `PxQ` (P, Q ≥ 1).
pub fn parse_grid(v: &str) -> Result<(i32, i32), String> {
    let bad = || format!("wants PxQ with P, Q ≥ 1, got `{v}`");
    let (p, q) = v.split_once(['x', 'X']).ok_or_else(bad)?;
    let (p, q): (i32, i32) = (p.parse().map_err(|_| bad())?, q.parse().map_err(|_| bad())?);
    if p < 1 || q < 1 {
        return Err(bad());
    }
    Ok((p, q))
}
