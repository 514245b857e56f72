#!/usr/bin/env bash
# The full fault matrix of pdgeqrf_ft, pdgetrf_ft, pdpotrf_ft and
# pdcg_ft, and of the solves on the protected factors (pdgetrs_ft,
# pdpotrs_ft, pdgels_ft): on 2x2 and 2x3 grids, every rank killed at an
# early, a middle and the last step (CG: iteration), in each of the
# operation's phases (QR and Cholesky: panel, bcast, update, commit; LU:
# panel, bcast, swap, update, commit; CG: matvec, dot, commit),
# and before the checksums exist (args, encode: the call restarts), through
# a spawn and through a hot spare; each run must finish with ScaLAPACK's
# residual checks passing and consistent checksums (CG: converged in the
# failure-free run's number of iterations).
# LU and Cholesky run with --solve and QR with --lstsq: every run also checks the
# solve's residual, and the same ranks are killed in the solve at its
# early, middle and last step in each of its phases (getrs: swap at the
# interchanges' step 0, then bcast, update, commit; gels: bcast, update,
# commit; potrs: bcast, update, commit), before B's checksums (args,
# encode: the job solves again with the kept factors) and, for LU and
# Cholesky, between the factorization and the solve
# (app:0, met at the solve's start: solved again too).
# On grids of several process rows, every pair of ranks of different rows
# is killed at once at the early step in each phase, and the first one's
# replacement again at the middle step (then in the solve, the second's).
# Every launch has a hard timeout. Prints one line per run and "N passed,
# N failed" at the end; exit code 1 if any run failed.
# LU also runs on 1x3, where the owner of the next panel factors it while
# the step's agreement runs (one process row only).
#   scripts/fault-matrix.sh                # QR on 2x2, 2x3; LU on 2x2, 2x3, 1x3; CG and Cholesky on 2x2, 2x3
#   scripts/fault-matrix.sh qr 2x2         # one operation, one grid (200 runs; lu 2x2: 224)
#   scripts/fault-matrix.sh lu             # one operation, its grids
# FTLA_LAYOUT=rotating (and FTLA_CHECKSUMS=F, default 1) runs every case on
# the rotating checksum layout (default: reverse-neighbor); with F ≥ 2 the
# cases also kill every pair of ranks of one process row at once, at every
# step and phase and every point of the solve (both rebuilt in one repair):
#   FTLA_LAYOUT=rotating FTLA_CHECKSUMS=2 scripts/fault-matrix.sh qr 1x4
# FTLA_RECOVERY=shrink runs every case with --recovery shrink and spawning
# refused (FTLA_TEST_REFUSE_SPAWN=1): without a spare each loss inside a
# call shrinks the grid (2x3 → 2x2, 2x2 → 1x3, two at once → the grid
# the survivors fill) and the run must end right on it; with one, the
# spare takes a single loss and two at once shrink; a loss before the
# checksums exist or between the factorization and the solve shrinks the
# grid there and the call starts again on it, and so does one in QR's
# factorization that no spare takes (--lstsq: pdgels_ft's factorization
# keeps its grid, B not being protected yet). The follow-up kill of a
# replacement is left out:
#   FTLA_RECOVERY=shrink scripts/fault-matrix.sh lu 2x3
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$here/scripts/setup.sh"
cargo build --release --quiet --manifest-path "$here/Cargo.toml" -p ftla-bench || exit 1
ftla="$here/target/release/ftla"
ops=(qr lu cg chol)
case "${1:-}" in qr | lu | cg | chol) ops=("$1"); shift ;; esac
given=("$@")
layout=(--layout "${FTLA_LAYOUT:-reverse-neighbor}")
if [ "${FTLA_LAYOUT:-}" = rotating ]; then layout+=(--checksums "${FTLA_CHECKSUMS:-1}"); fi
recovery=(--recovery "${FTLA_RECOVERY:-inplace}")
shrinking=false
if [ "${FTLA_RECOVERY:-}" = shrink ]; then shrinking=true; export FTLA_TEST_REFUSE_SPAWN=1; fi
pass=0; fail=0
tmp=$(mktemp -d)
# One run: RANKS (comma-separated) killed at POINT, checked against what
# the JSON must show (uses op, grid, spares, shape, extra, same).
run_case() {
  local ranks=$1 point=$2 kill="" expect
  local r; for r in ${ranks//,/ }; do kill+="${kill:+,}$r@$point"; done
  case "$point" in
    0:args | 0:encode | *:0:args | *:0:encode | app:0) expect='r["restarts"] == 1' ;;
    *) local mode=shrink; [ "$spares" -gt 0 ] && [[ $ranks != *,* ]] && mode=spare
      if $shrinking && [ "$op" = qr ] && [ $mode = shrink ] && [[ $point != gels:* ]]; then
        # (pdgels_ft's factorization keeps its grid: the call starts
        # again on a smaller one.)
        expect="r['restarts'] == 1 and r['final_grid'] is not None"
      else
        expect="[x[\"ranks\"] for x in r[\"recoveries\"]] == [[$ranks]]"
        $shrinking && expect+=" and [x['mode'] for x in r['recoveries']] == ['$mode']"
      fi ;;
  esac
  run_kills "$kill" "$expect"
}

# One run of the kill list KILL; EXPECT is a Python condition on the JSON
# report r.
run_kills() {
  local kill=$1 expect=$2 rc verdict json="$tmp/run.json"
  rm -f "$json"
  "$ftla" "$op" --ft "${layout[@]}" "${recovery[@]}" --grid "$grid" --spares "$spares" "${shape[@]}" \
    --kill "$kill" --check "${extra[@]}" --verify --json "$json" --timeout 120 >"$tmp/out" 2>&1
  rc=$?
  if [ $rc -eq 0 ] && python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r['ok'] and ($expect) and ($same) else 1)" "$json" 2>/dev/null; then
    pass=$((pass + 1)); verdict=ok
  else
    fail=$((fail + 1)); verdict="FAILED (exit $rc)"
    tail -5 "$tmp/out" | sed 's/^/    /'
  fi
  printf '%s %s spares=%s kill %s: %s\n' "$op" "$grid" "$spares" "$kill" "$verdict"
}
for op in "${ops[@]}"; do
steps=(0 6 12); same='True'; solve_points=()
if [ "$op" = qr ]; then
  # 260x200 in 16-blocks: 13 panels, steps 0..12; the solve's 26 steps
  # (Qᵀ's 13 panels, then R's 13 block rows), 0..25.
  shape=(--m 260 --n 200 --nb 16); phases=(panel bcast update commit); extra=(--lstsq); grids=("${given[@]:-2x2 2x3}")
  same="r['lstsq_residual'] is not None"
  for step in 0 13 25; do
    for phase in bcast update commit; do solve_points+=("gels:$step:$phase"); done
  done
  solve_points+=("gels:0:args" "gels:0:encode")
  # (FTLA_QR_PANEL=tsqr|cholqr2|householder: the panel method, default auto.)
  if [ -n "${FTLA_QR_PANEL:-}" ]; then extra+=(--panel "$FTLA_QR_PANEL"); fi
elif [ "$op" = chol ]; then
  # 200x200 in 16-blocks: 13 block columns, steps 0..12; the solve's 26
  # steps (L's 13 block steps, 0..12, then Lᵀ's, 13..25).
  shape=(--n 200 --nb 16); phases=(panel bcast update commit); extra=(--solve); steps=(0 7 12)
  same="r['solve_residual'] is not None"
  for step in 12 25; do
    for phase in bcast update commit; do solve_points+=("potrs:$step:$phase"); done
  done
  solve_points+=("potrs:0:args" "potrs:0:encode" "app:0")
  grids=("${given[@]:-2x2 2x3}")
elif [ "$op" = cg ]; then
  # The 2-D Poisson matrix of 400 points: iterations 1.., the initial
  # residual at step 0; every run must take the failure-free run's count.
  shape=(--n 400 --nb 16); phases=(matvec dot commit); extra=(); grids=("${given[@]:-2x2 2x3}")
  its=$("$ftla" cg --grid 2x2 "${shape[@]}" --timeout 120 | sed -n 's/.* \([0-9]*\) iterations (converged.*/\1/p')
  [ -n "$its" ] || { echo "cg: the failure-free solve did not converge"; exit 1; }
  steps=(1 $((its / 2)) $((its - 1))); same="r['iterations'] == $its"
else
  # 200x200 in 16-blocks: 13 panels, steps 0..12; a uniform matrix, so
  # that the pivots interchange rows (a diagonally dominant one would not).
  # The middle step is odd: on one process row it completes the previous
  # step's deferred update, whose panel a repair has sent again.
  shape=(--n 200 --nb 16 --matrix uniform); phases=(panel bcast swap update commit); extra=(--solve)
  steps=(0 7 12)
  same="r['solve_residual'] is not None"
  # The solve's 27 steps: 0 the row interchanges, 1..13 L's blocks,
  # 14..26 U's.
  solve_points=("getrs:0:swap" "getrs:0:commit")
  for step in 13 26; do
    for phase in bcast update commit; do solve_points+=("getrs:$step:$phase"); done
  done
  solve_points+=("getrs:0:args" "getrs:0:encode" "app:0")
  grids=("${given[@]:-2x2 2x3 1x3}")
fi
for grid in ${grids[*]}; do
  p=${grid%x*}; q=${grid#*x}; n=$((p * q))
  for spares in 0 1; do
    for ((rank = 0; rank < n; rank++)); do
      # STEP:PHASE, and what the JSON must show: the rebuilt rank, or a restart.
      points=()
      for step in "${steps[@]}"; do
        for phase in "${phases[@]}"; do points+=("$step:$phase"); done
      done
      points+=("0:args" "0:encode" ${solve_points[@]+"${solve_points[@]}"})
      for point in "${points[@]}"; do
        run_case "$rank" "$point"
      done
    done
    # Pairs of ranks of different process rows, killed at once (one spawn
    # of two replacements without a spare), then one of their
    # replacements: at a later step in the same phase, and in the solve.
    for ((a = 0; a < n; a++)); do
      for ((b = a + 1; b < n; b++)); do
        [ $((a / q)) -ne $((b / q)) ] || continue
        for phase in "${phases[@]}"; do
          if $shrinking; then
            if [ "$op" = qr ]; then
              run_kills "$a@${steps[0]}:$phase,$b@${steps[0]}:$phase" "r['restarts'] == 1 and r['final_grid'] is not None"
            else
              run_kills "$a@${steps[0]}:$phase,$b@${steps[0]}:$phase" \
                "[(x['ranks'], x['mode']) for x in r['recoveries']] == [([$a, $b], 'shrink')]"
            fi
            continue
          fi
          run_kills "$a@${steps[0]}:$phase,$b@${steps[0]}:$phase,$a@${steps[1]}:$phase/1" \
            "[x['ranks'] for x in r['recoveries']] == [[$a, $b], [$a]]"
        done
        if [ ${#solve_points[@]} -gt 0 ] && ! $shrinking; then
          later=${solve_points[$(( ${#solve_points[@]} / 2 ))]}
          run_kills "$a@${steps[1]}:update,$b@${steps[1]}:update,$b@$later/1" \
            "[x['ranks'] for x in r['recoveries']] == [[$a, $b], [$b]]"
        fi
      done
    done
    # Pairs of ranks of one process row, killed at once (F ≥ 2), in the
    # factorization and in the solve (B's checksums are in the factors'
    # layout).
    # (Not under shrink, which rebuilds one lost process per row.)
    if [ "${FTLA_LAYOUT:-}" = rotating ] && [ "${FTLA_CHECKSUMS:-1}" -ge 2 ] && ! $shrinking; then
      for ((a = 0; a < n; a++)); do
        for ((b = a + 1; b < n && b / q == a / q; b++)); do
          for step in "${steps[@]}"; do
            for phase in "${phases[@]}"; do run_case "$a,$b" "$step:$phase"; done
          done
          for point in ${solve_points[@]+"${solve_points[@]}"}; do run_case "$a,$b" "$point"; done
        done
      done
    fi
  done
done
done
rm -rf "$tmp"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
