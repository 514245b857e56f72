#!/usr/bin/env bash
# The full fault matrix of pdgeqrf_ft: on 2x2 and 2x3 grids, every rank
# killed at an early, a middle and the last step, in each phase (panel,
# bcast, update, commit), and before the checksums exist (args, encode: the
# call restarts), through a spawn and through a hot spare; each run must finish
# with ScaLAPACK's residual checks passing and consistent checksums. Every
# launch has a hard timeout. Prints one line per run and "N passed, N
# failed" at the end; exit code 1 if any run failed.
#   scripts/fault-matrix.sh            # both grids (280 runs)
#   scripts/fault-matrix.sh 2x2        # one grid
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$here/scripts/setup.sh"
cargo build --release --quiet --manifest-path "$here/Cargo.toml" -p ftla-bench || exit 1
ftla="$here/target/release/ftla"
grids=("${@:-2x2 2x3}")
# 260x200 in 16-blocks: 13 panels, steps 0..12.
shape=(--m 260 --n 200 --nb 16)
steps=(0 6 12)
phases=(panel bcast update commit)
pass=0; fail=0
tmp=$(mktemp -d)
for grid in ${grids[*]}; do
  p=${grid%x*}; q=${grid#*x}; n=$((p * q))
  for spares in 0 1; do
    for ((rank = 0; rank < n; rank++)); do
      # STEP:PHASE, and what the JSON must show: the rebuilt rank, or a restart.
      points=()
      for step in "${steps[@]}"; do
        for phase in "${phases[@]}"; do points+=("$step:$phase"); done
      done
      points+=("0:args" "0:encode")
      for point in "${points[@]}"; do
        json="$tmp/run.json"; rm -f "$json"
        "$ftla" qr --ft --grid "$grid" --spares "$spares" "${shape[@]}" --kill "$rank@$point" \
          --check --verify --json "$json" --timeout 120 >"$tmp/out" 2>&1
        rc=$?
        case "$point" in
          0:args | 0:encode) expect='r["restarts"] == 1' ;;
          *) expect="[x[\"ranks\"] for x in r[\"recoveries\"]] == [[$rank]]" ;;
        esac
        if [ $rc -eq 0 ] && python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r['ok'] and ($expect) else 1)" "$json" 2>/dev/null; then
          pass=$((pass + 1)); verdict=ok
        else
          fail=$((fail + 1)); verdict="FAILED (exit $rc)"
          tail -5 "$tmp/out" | sed 's/^/    /'
        fi
        printf '%s spares=%s kill %s@%s: %s\n' "$grid" "$spares" "$rank" "$point" "$verdict"
      done
    done
  done
done
rm -rf "$tmp"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
