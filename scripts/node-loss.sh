#!/usr/bin/env bash
# The loss of a whole node, for real (needs root and iproute2): a job over
# two "nodes" (network namespaces with a PRRTE daemon each, see
# scripts/netns-nodes.sh) saves periodic checkpoints, and node 1 — every
# process on it, its daemon too — is SIGKILLed mid-run and stays down.
# Open MPI ends the whole job (no process survives to repair or save).
#   1. Under --recovery inplace, ftla says the job was lost (exit code 78)
#      and names its newest checkpoint; node 1's files of it are deleted
#      (its node-local disk is gone with it; the checkpoints hold the
#      checksums, --checkpoint-parity) and the job is resumed by hand on
#      the node that is left, on a smaller grid (1x2): a job on the grid of
#      the save rebuilds the missing files first.
#   2. Under --recovery auto, the launcher finds node 1 down and resumes
#      the job by itself on the largest grid node 2's slots hold (1x2).
# Both must give the failure-free result.
#
#   scripts/node-loss.sh [qr|lu|cg] [N]      (defaults: qr 3072)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
op=${1:-qr}; n=${2:-3072}
nodes="$here/scripts/netns-nodes.sh"
work=$(mktemp -d)
dir="$work/ckpt"
cleanup() { "$nodes" down >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
"$here/scripts/setup.sh" >/dev/null
cargo build --release --quiet -p ftla-bench --manifest-path "$here/Cargo.toml"
ftla="$here/target/release/ftla"
export PATH="$here/.venv/bin:$PATH"
# Node 1 (every process on it, its daemon too) is lost once the job JOB has
# two complete generations; sets `code` to the job's exit code.
lose_node_1() {
  local job=$1
  for _ in $(seq 1 1200); do
    [ -f "$dir/manifest" ] && [ "$(ls -d "$dir"/gen-* 2>/dev/null | wc -l)" -ge 2 ] && break
    kill -0 "$job" 2>/dev/null || break
    sleep 0.1
  done
  "$nodes" kill 1
  code=0; wait "$job" || code=$?
}
"$nodes" down >/dev/null 2>&1 || true
both=$("$nodes" up 2 2)
echo "== $op N=$n on a 2x2 grid over nodes ftn1 and ftn2 (2 slots each; ranks 0 and 2 on ftn1)"
FTLA_MPIEXEC_ARGS="$both" timeout 300 "$ftla" "$op" --ft --grid 2x2 --n "$n" --checkpoint-every 0.5 \
  --checkpoint-parity --checkpoint-dir "$dir" --check >"$work/lost.log" 2>&1 &
lose_node_1 $!
cat "$work/lost.log"
if [ "$code" != 78 ] || ! grep -q "the job was lost" "$work/lost.log"; then
  echo "FAIL: the lost job's exit code is $code (want 78, the job lost with a checkpoint)"; exit 1
fi
gen=$(sed -n 's/.*(generation \([0-9]*\)).*/\1/p' "$work/lost.log" | tail -1)
echo "== node ftn1's disk lost too: $dir/gen-$gen/rank-0.ckpt and rank-2.ckpt deleted"
rm "$dir/gen-$gen/rank-0.ckpt" "$dir/gen-$gen/rank-2.ckpt"
echo "== resumed on node ftn2 alone, a 1x2 grid"
FTLA_MPIEXEC_ARGS="$("$nodes" hosts 2)" timeout 300 "$ftla" "$op" --ft --grid 1x2 --n "$n" --resume "$dir" \
  --check --json "$work/resumed.json" 2>&1 | tee "$work/resumed.log"
grep -q "rebuilding them from its checksums" "$work/resumed.log" || { echo "FAIL: no rebuild of the lost files"; exit 1; }
python3 - "$work/resumed.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"], r
assert r.get("resumed_at_step", 0) > 0, r
print(f"node-loss: resumed at step {r['resumed_at_step']} on {r['grid'][0]}x{r['grid'][1]}: ok")
PY

echo "== again under --recovery auto: the launcher resumes on the node left by itself"
"$nodes" down >/dev/null 2>&1 || true
both=$("$nodes" up 2 2)
rm -rf "$dir"
FTLA_MPIEXEC_ARGS="$both" timeout 300 "$ftla" "$op" --ft --grid 2x2 --n "$n" --checkpoint-every 0.5 \
  --checkpoint-dir "$dir" --recovery auto --check --json "$work/auto.json" >"$work/auto.log" 2>&1 &
lose_node_1 $!
cat "$work/auto.log"
if [ "$code" != 0 ] || ! grep -q "on a 1x2 grid (was 2x2)" "$work/auto.log"; then
  echo "FAIL: the job lost under --recovery auto exited $code (want 0, resumed on 1x2 by the launcher)"; exit 1
fi
python3 - "$work/auto.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"], r
assert r.get("resumed_at_step", 0) > 0, r
assert r["grid"] == [1, 2], r["grid"]
print(f"node-loss: resumed by the launcher at step {r['resumed_at_step']} on 1x2: ok")
PY
