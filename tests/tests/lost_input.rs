//! A lost input is refused in Rust on every process: a real `mpiexec
//! --with-ft ulfm` launch of the `lost-input` binary (2x2 grid, a process
//! SIGKILLed between the factorization and the solve: LU, and QR's
//! pdormqr and solve with R) with a hard timeout.

use std::process::Command;

#[test]
fn factors_a_replacement_did_not_receive_are_refused_by_the_solve_on_every_process() {
    // LU through a spawn and a hot spare; QR (pdormqr, then the solve with
    // R) through a spawn.
    for &(op, spares) in harness::cases!([("lu", "0"), ("qr", "0"), ("lu", "1")], core = 1) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lost-input"));
        cmd.args(["--kill", "2", "--op", op, "--spares", spares, "--timeout", "120"]).env_remove("FTLA_KILL");
        let out = harness::launch(cmd);
        assert!(out.stderr.contains("injecting SIGKILL into grid rank 2"), "{}", out.stderr);
        for r in 0..4 {
            // Only the replacement of grid rank 2 lost its part of the
            // factors; the solve refuses them everywhere, and factoring
            // again gives the right x.
            let (tag, lost) = if r == 2 { (" replacement", true) } else { ("", false) };
            let want = format!("RANK {r}{tag} lost={lost} solve=input-lost(A,rank=2) resolve=ok x=correct\n");
            assert!(out.stdout.contains(&want), "{op}, spares {spares}: {want}\n{}\n{}", out.stdout, out.stderr);
        }
        assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    }
}
