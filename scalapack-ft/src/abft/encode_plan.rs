//! Who sums what in the encoding of one group's checksum (see
//! [`super::encode`]): pure layout logic, the same on every process.

use checksum::{LayoutError, ReverseNeighborLayout};

/// One process's part in the sum of group `g`: the holders of its pair
/// each sum half of the group's members, then swap their halves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GroupSums {
    /// This process's member of the group (its first local column), if any.
    pub member: Option<usize>,
    /// On a holder of the pair: the first local column of its copy.
    pub copy: Option<usize>,
    /// On a holder: the process column of the other holder.
    pub other_holder: usize,
    /// On a holder: the process columns whose members it adds to its half,
    /// ascending.
    pub receives_from: Vec<usize>,
    /// On a process that is not a holder and holds a member: the holder
    /// it sends it to.
    pub sends_to: Option<usize>,
}

impl GroupSums {
    /// Process column `mycol`'s part in group `g`'s sum; `local_start`
    /// gives the first local column of an extended block column this
    /// process holds.
    ///
    /// The process columns that hold a member but no copy are split
    /// between the two holders alternately in ascending order, so the
    /// halves differ by one member at most.
    pub fn plan(
        layout: &ReverseNeighborLayout,
        g: usize,
        mycol: usize,
        local_start: impl Fn(usize) -> Option<usize>,
    ) -> Result<GroupSums, LayoutError> {
        let q = layout.q();
        let members = layout.group_members(g)?;
        let pair = layout.pair_block_cols(g)?;
        let holders = layout.pair_process_cols(g)?;
        // Each member column except the holders', with the holder it goes to.
        let senders = members.clone().map(|bc| bc % q).filter(|c| !holders.contains(c));
        let mut senders: Vec<usize> = senders.collect();
        senders.sort_unstable();
        let goes_to = |i: usize| holders[i % 2];
        let mine = holders.iter().position(|&c| c == mycol);
        Ok(GroupSums {
            member: members.clone().find(|bc| bc % q == mycol).and_then(&local_start),
            copy: mine.and_then(|h| local_start(pair[h])),
            other_holder: mine.map_or(mycol, |h| holders[1 - h]),
            receives_from: senders.iter().enumerate().filter(|&(i, _)| goes_to(i) == mycol).map(|(_, &c)| c).collect(),
            sends_to: senders.iter().position(|&c| c == mycol).map(goes_to),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every member is summed exactly once into exactly one half, each
    /// half on a holder, and the holders swap with each other.
    #[test]
    fn every_member_lands_in_exactly_one_half() {
        for q in 2..=7 {
            for nbc in [1, q - 1, q, q + 1, 3 * q + 2] {
                let layout = ReverseNeighborLayout::new(8, nbc * 4, 4, 1, q).unwrap();
                for g in 0..layout.groups() {
                    let holders = layout.pair_process_cols(g).unwrap();
                    let plans: Vec<GroupSums> = (0..q).map(|c| GroupSums::plan(&layout, g, c, Some).unwrap()).collect();
                    let mut summed = vec![0; q];
                    for (c, p) in plans.iter().enumerate() {
                        let holder = holders.contains(&c);
                        assert_eq!(p.copy.is_some(), holder, "q={q} g={g} c={c}");
                        if holder {
                            assert_eq!(p.sends_to, None);
                            assert_eq!(plans[p.other_holder].other_holder, c, "the holders swap with each other");
                            summed[c] += usize::from(p.member.is_some());
                            for &s in &p.receives_from {
                                assert_eq!(plans[s].sends_to, Some(c), "q={q} g={g}: {s} sends where it is received");
                                summed[s] += 1;
                            }
                        } else {
                            assert!(p.receives_from.is_empty());
                            assert_eq!(p.sends_to.is_some(), p.member.is_some(), "q={q} g={g} c={c}");
                        }
                    }
                    for (c, &n) in summed.iter().enumerate() {
                        assert_eq!(n, usize::from(plans[c].member.is_some()), "q={q} g={g} c={c}");
                    }
                    let halves = holders.map(|h| plans[h].receives_from.len());
                    assert!(halves[0].abs_diff(halves[1]) <= 1, "q={q} g={g}: {halves:?}");
                }
            }
        }
    }
}
