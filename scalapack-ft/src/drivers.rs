//! The catalogue of the fault-tolerant routines: what every layer needs
//! to know about one — its names, its phases, its step count, what it
//! protects — written once, next to the routines, and read by the C ABI,
//! the `ftla` tool (its help, kill-point checks, soak and fault matrix)
//! and the tests. Nothing outside a routine's module spells its names or
//! its step formula again.
//!
//! A new fault-tolerant routine adds its [`Driver`] here and to
//! [`CATALOGUE`] (docs/architecture.md, "Adding a fault-tolerant
//! driver").

use crate::abft::Relations;
use recovery::protocol::Phase;

/// How many steps of the step-commit protocol a routine takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepCount {
    /// `per_block` steps for each block of min(M, N) (NB wide), then
    /// `extra` more (LU's solve: its row interchanges).
    Blocks { per_block: u64, extra: u64 },
    /// One per iteration (CG: step 0 the initial residual): known when
    /// the iteration converges.
    Iterations,
}

impl StepCount {
    /// The steps for an M×N problem in NB blocks (`None` for
    /// [`StepCount::Iterations`]).
    pub fn of(self, m: usize, n: usize, nb: usize) -> Option<u64> {
        match self {
            StepCount::Blocks { per_block, extra } => Some(per_block * m.min(n).div_ceil(nb.max(1)) as u64 + extra),
            StepCount::Iterations => None,
        }
    }
}

/// What ftla knows about one fault-tolerant routine.
#[derive(Debug, PartialEq, Eq)]
pub struct Driver {
    /// Its name in the status log, in errors and in reports (`pdgetrf_ft`).
    pub routine: &'static str,
    /// Its operation in kill points (`R@lu:STEP:PHASE`) and in the
    /// recovery records of a region.
    pub kill_op: &'static str,
    /// Its C symbol (`pdgetrf_ft_`), when the C ABI has it.
    pub c_symbol: Option<&'static str>,
    /// The phases of each of its steps, in order (the commit follows
    /// them; `args` and `encode` come once, before step 0).
    pub step_phases: &'static [Phase],
    /// Its steps, from the problem's shape.
    pub steps: StepCount,
    /// What its checksums protect, in a few words.
    pub protects: &'static str,
    /// Which entries of the matrix it factors or protects its checksums
    /// cover (what sizes their sums: [`crate::abft::FtWorkspace`]'s `*_of`
    /// constructors take it).
    pub relations: Relations,
}

impl Driver {
    /// Every phase a kill point of this routine may name, in the order a
    /// call meets them: `args`, `encode`, its step phases, `commit`.
    pub fn phases(&self) -> Vec<Phase> {
        [Phase::Args, Phase::Encode]
            .into_iter()
            .chain(self.step_phases.iter().copied())
            .chain([Phase::Commit])
            .collect()
    }

    /// `panel, bcast, update, commit` (the step phases and the commit).
    pub fn step_phase_names(&self) -> String {
        self.step_phases.iter().chain(&[Phase::Commit]).map(|p| p.name()).collect::<Vec<_>>().join(", ")
    }

    /// The routine whose kill points are named `op`.
    pub fn by_kill_op(op: &str) -> Option<&'static Driver> {
        CATALOGUE.iter().copied().find(|d| d.kill_op == op)
    }

    /// The routine called `routine` in the status log.
    pub fn by_routine(routine: &str) -> Option<&'static Driver> {
        CATALOGUE.iter().copied().find(|d| d.routine == routine)
    }
}

/// `pdgeqrf_ft`: the QR factorization.
pub const PDGEQRF_FT: Driver = Driver {
    routine: "pdgeqrf_ft",
    kill_op: "qr",
    c_symbol: Some("pdgeqrf_ft_"),
    step_phases: &[Phase::Panel, Phase::Bcast, Phase::Update],
    steps: StepCount::Blocks { per_block: 1, extra: 0 },
    protects: "A as it is factored (R and V), and tau",
    relations: Relations::Whole,
};

/// `pdgetrf_ft`: the LU factorization with partial pivoting.
pub const PDGETRF_FT: Driver = Driver {
    routine: "pdgetrf_ft",
    kill_op: "lu",
    c_symbol: Some("pdgetrf_ft_"),
    step_phases: &[Phase::Panel, Phase::Bcast, Phase::Swap, Phase::Update],
    steps: StepCount::Blocks { per_block: 1, extra: 0 },
    protects: "A as it is factored (L and U), and the pivots",
    relations: Relations::Whole,
};

/// `pdcg_ft`: conjugate gradients.
pub const PDCG_FT: Driver = Driver {
    routine: "pdcg_ft",
    kill_op: "cg",
    c_symbol: Some("pdcg_ft_"),
    step_phases: &[Phase::Matvec, Phase::Dot],
    steps: StepCount::Iterations,
    protects: "A; the iterates are replicated along the process rows",
    relations: Relations::Whole,
};

/// `pdgetrs_ft`: the solve with protected LU factors.
pub const PDGETRS_FT: Driver = Driver {
    routine: "pdgetrs_ft",
    kill_op: "getrs",
    c_symbol: Some("pdgetrs_ft_"),
    step_phases: &[Phase::Swap, Phase::Bcast, Phase::Update],
    // (Step 0 the row interchanges, then L's blocks, then U's.)
    steps: StepCount::Blocks { per_block: 2, extra: 1 },
    protects: "B (the factors are read only)",
    relations: Relations::Whole,
};

/// `pdormqr_ft`: Q or Qᵀ of protected QR factors applied to C.
pub const PDORMQR_FT: Driver = Driver {
    routine: "pdormqr_ft",
    kill_op: "ormqr",
    c_symbol: Some("pdormqr_ft_"),
    step_phases: &[Phase::Bcast, Phase::Update],
    steps: StepCount::Blocks { per_block: 1, extra: 0 },
    protects: "C (the factors are read only)",
    relations: Relations::Whole,
};

/// `upper_solve_ft`: the triangular solve with R of protected QR factors.
pub const UPPER_SOLVE_FT: Driver = Driver {
    routine: "upper_solve_ft",
    kill_op: "trsm",
    c_symbol: None,
    step_phases: &[Phase::Bcast, Phase::Update],
    steps: StepCount::Blocks { per_block: 1, extra: 0 },
    protects: "B (R is read only)",
    relations: Relations::Whole,
};

/// `pdgels_ft`: least squares (or the minimum-norm solution) with
/// protected QR factors.
pub const PDGELS_FT: Driver = Driver {
    routine: "pdgels_ft",
    kill_op: "gels",
    c_symbol: Some("pdgels_ft_"),
    step_phases: &[Phase::Bcast, Phase::Update],
    // (Qᵀ's blocks, then R's; or Rᵀ's, then Q's.)
    steps: StepCount::Blocks { per_block: 2, extra: 0 },
    protects: "B (the factors are read only)",
    relations: Relations::Whole,
};

/// `pdpotrf_ft`: the Cholesky factorization (lower).
pub const PDPOTRF_FT: Driver = Driver {
    routine: "pdpotrf_ft",
    kill_op: "potrf",
    c_symbol: Some("pdpotrf_ft_"),
    step_phases: &[Phase::Panel, Phase::Bcast, Phase::Update],
    steps: StepCount::Blocks { per_block: 1, extra: 0 },
    protects: "A's lower triangle as it is factored (L)",
    relations: Relations::LowerTriangle,
};

/// `pdpotrs_ft`: the solve with a protected Cholesky factor.
pub const PDPOTRS_FT: Driver = Driver {
    routine: "pdpotrs_ft",
    kill_op: "potrs",
    c_symbol: Some("pdpotrs_ft_"),
    step_phases: &[Phase::Bcast, Phase::Update],
    // (L's blocks, then Lᵀ's.)
    steps: StepCount::Blocks { per_block: 2, extra: 0 },
    protects: "B (the factor is read only)",
    relations: Relations::Whole,
};

/// Every fault-tolerant routine.
pub const CATALOGUE: [&Driver; 9] = [
    &PDGEQRF_FT,
    &PDGETRF_FT,
    &PDCG_FT,
    &PDGETRS_FT,
    &PDORMQR_FT,
    &UPPER_SOLVE_FT,
    &PDGELS_FT,
    &PDPOTRF_FT,
    &PDPOTRS_FT,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_phases_are_a_steps_own() {
        for (i, a) in CATALOGUE.iter().enumerate() {
            for b in &CATALOGUE[i + 1..] {
                assert!(a.routine != b.routine && a.kill_op != b.kill_op, "{a:?} {b:?}");
                assert!(a.c_symbol.is_none() || a.c_symbol != b.c_symbol, "{a:?} {b:?}");
            }
            let phases = a.phases();
            let mut distinct = phases.clone();
            distinct.sort();
            distinct.dedup();
            assert_eq!(distinct.len(), phases.len(), "{a:?}");
            assert!(a.step_phases.iter().all(|p| !p.before_steps() && *p != Phase::Commit), "{a:?}");
            assert_eq!(Driver::by_kill_op(a.kill_op), Some(*a));
            assert_eq!(Driver::by_routine(a.routine), Some(*a));
        }
    }

    #[test]
    fn step_counts_follow_the_shape() {
        assert_eq!(PDGETRS_FT.steps.of(200, 200, 16), Some(27));
        assert_eq!(PDGELS_FT.steps.of(260, 200, 16), Some(26));
        assert_eq!(PDGEQRF_FT.steps.of(260, 200, 16), Some(13));
        assert_eq!(PDCG_FT.steps.of(400, 400, 16), None);
        assert_eq!(PDGEQRF_FT.step_phase_names(), "panel, bcast, update, commit");
    }
}
