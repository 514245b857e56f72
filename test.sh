#!/usr/bin/env bash
# Runs every test of the project: unit tests, multi-rank integration
# tests that launch real `mpiexec --with-ft ulfm` jobs, SIGKILL ranks and
# check the repaired results (each launch has a hard timeout), and a short
# soak: random kills, double kills and kills during repairs, none of which
# may hang or give a wrong answer.
# Sets up what it needs first (scripts/setup.sh, idempotent).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
scripts/setup.sh
echo "== format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "== tests"
cargo test --workspace --quiet 2>&1
echo "== soak (short; the long one: ftla soak --runs 100 --seed S)"
cargo run --quiet -p ftla-bench -- soak --runs 12 --seed 20261123
cargo run --quiet -p ftla-bench -- soak --op lu --runs 6 --seed 20261123
cargo run --quiet -p ftla-bench -- soak --op cg --runs 6 --seed 20261123
cargo run --quiet -p ftla-bench -- soak --op lu --recovery cof --runs 4 --seed 20261123
