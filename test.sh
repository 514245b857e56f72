#!/usr/bin/env bash
# Runs the tests of the project. Sets up what it needs first
# (scripts/setup.sh, idempotent).
#
#   ./test.sh          the core tier (CI's): formatting and lints (the full
#                      tier compiled too), unit tests, and every driver and
#                      path once in real multi-rank launches — `mpiexec
#                      --with-ft ulfm` jobs with SIGKILLed ranks, each under
#                      a hard timeout — then short soaks of random kills,
#                      none of which may hang or give a wrong answer
#   ./test.sh --full   the core tier and the full tier: the kill matrices,
#                      the repeated recoveries of every layer (the cargo
#                      feature `full-tests`), the long soaks, and a node
#                      lost for real (scripts/node-loss.sh: needs root and
#                      iproute2)
#
# tests/README.md maps which test covers what; scripts/fault-matrix.sh runs
# the whole fault matrix.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
tier=core
case "${1:-}" in
  --full) tier=full ;;
  "") ;;
  *) echo "usage: ./test.sh [--full]" >&2; exit 2 ;;
esac
started=$SECONDS
# A fresh build compiles every crate once: incremental data would only
# cost time there.
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=0; fi
# The time since the start, for each stage's line.
since() { echo "$(((SECONDS - started) / 60)) min $(((SECONDS - started) % 60)) s"; }
scripts/setup.sh
echo "== format and lints [$(since)]"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --all-features --quiet -- -D warnings
if [ "$tier" = core ]; then
  echo "== tests (core tier) [$(since)]"
  cargo test --workspace --quiet 2>&1
  echo "== soak (short; the long ones: ./test.sh --full) [$(since)]"
  cargo run --quiet -p ftla-bench -- soak --runs 3 --seed 20261123
  cargo run --quiet -p ftla-bench -- soak --op lu --runs 2 --seed 20261123
  cargo run --quiet -p ftla-bench -- soak --op cg --runs 1 --seed 20261123
  cargo run --quiet -p ftla-bench -- soak --op lu --recovery cof --runs 1 --seed 20261123
else
  echo "== tests (core and full tiers) [$(since)]"
  # (Every test binary runs, so that one failure hides no other.)
  cargo test --workspace --all-features --no-fail-fast --quiet 2>&1
  echo "== soaks (long) [$(since)]"
  cargo build --release --quiet -p ftla-bench
  soak="$here/target/release/ftla soak --seed 20261129"
  $soak --runs 40
  $soak --op lu --runs 30
  $soak --op cg --runs 20
  $soak --op lu --recovery cof --runs 12
  $soak --op qr --recovery auto --runs 12
  $soak --op lu --layout rotating --checksums 2 --runs 12
  $soak --op chol --runs 12
  $soak --op lu --recovery shrink --runs 12
  echo "== a node lost for real (network namespaces) [$(since)]"
  scripts/node-loss.sh qr 2048
fi
echo "== $tier tier passed in $(since)"
