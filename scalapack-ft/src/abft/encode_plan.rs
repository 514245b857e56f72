//! Who sums what in the encoding of one group's checksums (see
//! [`super::encode`]): pure layout logic, the same on every process.

use checksum::{ChecksumLayout, LayoutError};

/// One process's part in the sums of group `g`. Each checksum `i` is
/// summed by the process columns that hold its replicas: each replica's
/// holder sums its share of the members (weighted by `w_{i,J}`), and two
/// replicas (the reverse-neighboring pair) then swap their halves.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct GroupSums {
    /// This process's member of the group (its first local column), if any.
    pub member: Option<usize>,
    /// The member's position in the group (the weights' column).
    pub position: usize,
    /// On a holder of a replica: its checksum, the first local column of
    /// its copy, and the weight of its own member (if it holds one).
    pub copy: Option<HeldCopy>,
    /// On a holder: the process column of the other replica of its
    /// checksum, whose half it swaps with its own.
    pub other_holder: Option<usize>,
    /// On a holder: the process columns whose members it adds to its
    /// share, ascending, with their weights in its checksum.
    pub receives_from: Vec<(usize, f64)>,
    /// The holders this process's member goes to, one per checksum that
    /// it does not hold itself, in checksum order.
    pub sends_to: Vec<usize>,
}

/// The checksum replica a holder writes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct HeldCopy {
    /// Checksum index `i`.
    pub index: usize,
    /// First local column of the replica.
    pub local_col: usize,
    /// `w_{i,J}` of the holder's own member `J` (unused without one).
    pub own_weight: f64,
}

impl GroupSums {
    /// Process column `mycol`'s part in group `g`'s sums; `local_start`
    /// gives the first local column of an extended block column this
    /// process holds.
    ///
    /// The member columns that hold no replica of a checksum are split
    /// between its replicas alternately in ascending order, so the halves
    /// differ by one member at most.
    pub fn plan(
        layout: &ChecksumLayout,
        g: usize,
        mycol: usize,
        local_start: impl Fn(usize) -> Option<usize>,
    ) -> Result<GroupSums, LayoutError> {
        let q = layout.q();
        let members = layout.group_members(g)?;
        let my_member = members.clone().find(|bc| bc % q == mycol);
        let position = my_member.map_or(0, |bc| bc - members.start);
        let mut plan = GroupSums {
            member: my_member.and_then(&local_start),
            position,
            copy: None,
            other_holder: None,
            receives_from: Vec::new(),
            sends_to: Vec::new(),
        };
        for i in 0..layout.checksums() {
            let replicas = layout.replica_block_cols(g, i)?;
            let holders: Vec<usize> = replicas.iter().map(|e| e % q).collect();
            // Each member column except the holders', with the holder it goes to.
            let mut senders: Vec<usize> = members.clone().map(|bc| bc % q).filter(|c| !holders.contains(c)).collect();
            senders.sort_unstable();
            let goes_to = |k: usize| holders[k % holders.len()];
            if let Some(h) = holders.iter().position(|&c| c == mycol) {
                let weight = |c: usize| {
                    let bc = members.clone().find(|bc| bc % q == c).unwrap_or(members.start);
                    layout.weight(i, bc - members.start)
                };
                plan.copy = local_start(replicas[h]).map(|local_col| HeldCopy {
                    index: i,
                    local_col,
                    own_weight: layout.weight(i, position),
                });
                plan.other_holder = (holders.len() > 1).then(|| holders[1 - h]);
                plan.receives_from = senders
                    .iter()
                    .enumerate()
                    .filter(|&(k, _)| goes_to(k) == mycol)
                    .map(|(_, &c)| (c, weight(c)))
                    .collect();
            } else if let Some(k) = senders.iter().position(|&c| c == mycol) {
                plan.sends_to.push(goes_to(k));
            }
        }
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use checksum::LayoutKind;

    /// Every member is summed exactly once into exactly one share of each
    /// checksum, each share on a holder, and replicas swap with each other.
    #[test]
    fn every_member_lands_in_exactly_one_share_of_each_checksum() {
        let kinds =
            [LayoutKind::ReverseNeighbor, LayoutKind::Rotating { checksums: 1 }, LayoutKind::Rotating { checksums: 2 }];
        for kind in kinds {
            for q in 3..=7 {
                for nbc in [1, q - 1, q, q + 1, 3 * q + 2] {
                    let layout = ChecksumLayout::new(kind, 8, nbc * 4, 4, 1, q).unwrap();
                    for g in 0..layout.groups() {
                        let plans: Vec<GroupSums> =
                            (0..q).map(|c| GroupSums::plan(&layout, g, c, Some).unwrap()).collect();
                        for i in 0..layout.checksums() {
                            let holders: Vec<usize> =
                                layout.replica_block_cols(g, i).unwrap().iter().map(|e| e % q).collect();
                            let mut summed = vec![0; q];
                            for &h in &holders {
                                let p = &plans[h];
                                assert_eq!(p.copy.map(|c| c.index), Some(i), "{kind} q={q} g={g}");
                                if let Some(o) = p.other_holder {
                                    assert_eq!(plans[o].other_holder, Some(h), "replicas swap with each other");
                                }
                                summed[h] += usize::from(p.member.is_some());
                                for &(s, _) in &p.receives_from {
                                    assert!(plans[s].sends_to.contains(&h), "{kind} q={q} g={g}: {s} sends to {h}");
                                    summed[s] += 1;
                                }
                            }
                            for (c, &n) in summed.iter().enumerate() {
                                assert_eq!(n, usize::from(plans[c].member.is_some()), "{kind} q={q} g={g} c={c}");
                            }
                            if holders.len() == 2 {
                                let halves = [0, 1].map(|k| plans[holders[k]].receives_from.len());
                                assert!(halves[0].abs_diff(halves[1]) <= 1, "q={q} g={g}: {halves:?}");
                            }
                        }
                        for (c, p) in plans.iter().enumerate() {
                            let held = usize::from(p.copy.is_some());
                            let want = if p.member.is_some() { layout.checksums() - held } else { 0 };
                            assert_eq!(p.sends_to.len(), want, "{kind} q={q} g={g} c={c}");
                        }
                    }
                }
            }
        }
    }
}
