//! `ftla chol` (plain `pdpotrf`, `pdpotrs`): a real job's report, a matrix
//! that is not positive definite reported with ScaLAPACK's INFO, and the
//! arguments refused before anything is launched.

mod common;

use common::ftla;
use ftla_bench::report::FactorReport;

fn json_of(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("ftla-chol-{name}-{}.json", std::process::id()))
}

fn read(path: &std::path::Path) -> FactorReport {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let _ = std::fs::remove_file(path);
    serde_json::from_str(&text).unwrap()
}

#[test]
fn factors_and_solves_with_scalapacks_residuals() {
    let json = json_of("ok");
    let j = json.display().to_string();
    let args = ["chol", "--grid", "2x2", "--n", "300", "--nb", "32", "--solve", "--nrhs", "2", "--check", "--json", &j];
    let out = ftla(&args);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = read(&json);
    assert!(r.ok && r.info.is_none(), "{r:?}");
    assert!(r.residual.value().is_some_and(|x| x < 16.0), "{r:?}");
    assert!(r.solve_residual.is_some_and(|x| x < 16.0) && r.nrhs == Some(2), "{r:?}");
    assert!(r.gflops > 0.0 && out.stdout.contains("solve (pdpotrs)"), "{}", out.stdout);
}

#[test]
fn a_matrix_that_is_not_positive_definite_is_reported_with_its_info() {
    let json = json_of("minor");
    let j = json.display().to_string();
    // (Uniform entries in [−0.5, 0.5): the first minor that is not
    // positive definite is of order 1 or 2 for this seed.)
    let args = ["chol", "--grid", "1x2", "--n", "200", "--nb", "16", "--matrix", "uniform", "--check", "--json", &j];
    let out = ftla(&args);
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    let r = read(&json);
    let info = r.info.expect("INFO in the report");
    assert!(!r.ok && (1..=2).contains(&info) && r.gflops.is_nan(), "{r:?}");
    let said = format!("the leading minor of order {info} is not positive definite");
    assert!(out.stdout.contains(&said), "{}", out.stdout);
    // Not square: refused before launching.
    let out = ftla(&["chol", "--grid", "1x2", "--n", "200", "--m", "100"]);
    assert_eq!(out.code, Some(2), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("chol factors a square matrix, got 100x200"), "{}", out.stderr);
}
