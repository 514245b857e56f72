//! The region's call gate (`recovery::gate`, through which every C ABI
//! call enters the status log): one verdict per call. A real `mpiexec
//! --with-ft ulfm` launch of the `call-gate` binary on a 2x2 grid, with a
//! hard timeout.

use std::process::Command;

#[test]
fn a_call_through_the_gate_agrees_once_like_its_driver_and_refuses_alike_everywhere() {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_call-gate"));
    cmd.args(["--refuse-on", "2"]).env_remove("FTLA_KILL");
    let out = harness::launch(cmd);
    let all = format!("{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.code, Some(0), "{all}");
    let lines = harness::rank_lines(&out.stdout, "RANK ");
    assert_eq!(lines.iter().map(|&(r, _)| r).collect::<Vec<_>>(), [0, 1, 2, 3], "{all}");
    let mut direct = None;
    for &(r, line) in &lines {
        let field = |k: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{k}=")))
                .unwrap_or_else(|| panic!("rank {r}: no {k}= in {line}\n{all}"))
                .to_string()
        };
        // The gate adds no agreement to the driver's (its verdict is the
        // driver's), and the factors are the direct call's.
        let d: u64 = field("direct").parse().unwrap();
        assert!(d >= 3, "rank {r}: a QR of 6 steps agrees more than {d} times\n{all}");
        assert_eq!(field("gate"), d.to_string(), "rank {r}\n{all}");
        assert_eq!(*direct.get_or_insert(d), d, "every process agrees as often\n{all}");
        assert_eq!(field("r"), "same", "rank {r}\n{all}");
        // Refused by grid rank 2's own check: one agreement everywhere, the
        // driver's verdict on the processes whose checks passed, and the
        // same error.
        assert!(line.contains("refused=1:"), "rank {r}: {line}\n{all}");
        assert!(line.contains("refused by this process's check"), "rank {r}: {line}\n{all}");
        // A plain routine: its verdict and whether every process came
        // through it.
        assert_eq!(field("plain"), "2", "rank {r}\n{all}");
    }
    let errors: Vec<&str> =
        lines.iter().map(|(_, l)| l.split("refused=1:").nth(1).unwrap().split(" plain=").next().unwrap()).collect();
    assert!(errors.iter().all(|e| *e == errors[0]), "the same error everywhere: {errors:?}");
}
