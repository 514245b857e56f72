#!/usr/bin/env bash
# Ours vs the distribution's ScaLAPACK, in one run: alternates `ftla qr|lu|chol`
# and `ftla baseline scalapack qr|lu|chol` REPS times on the same grid, N and NB
# (same OpenBLAS kernel: whatever OPENBLAS_CORETYPE this command sees),
# checks residuals on every run, and prints the median Gflop/s of each side
# and their ratio. The size is N (square) or MxN (QR: M rows, N columns;
# lu and chol want a square matrix);
# arguments after REPS go to ours only (e.g. --panel tsqr). FTLA=PATH runs
# that ftla (built with the distribution's ScaLAPACK set up) instead of
# setting up and building this checkout's.
#   scripts/bench-vs-scalapack.sh qr 1x2 4096 64 5
#   scripts/bench-vs-scalapack.sh qr 2x1 131072x256 64 5 --panel auto
#   scripts/bench-vs-scalapack.sh chol 2x2 4096 64 5
# (On a CPU that the distribution's OpenBLAS does not recognise, it falls
# back to a slow generic kernel: then name the CPU's kernel for both sides,
# e.g. OPENBLAS_CORETYPE=Zen on AVX2 AMD parts; every report names the
# kernel it ran.)
# ftla offers its large arrays transparent huge pages; ScaLAPACK's driver
# allocates with plain malloc, as its users usually do. BASELINE_HUGE_PAGES=1
# gives the driver's arrays huge pages too (glibc >= 2.35's
# glibc.malloc.hugetlb=1 tunable, for the baseline's runs only), for a
# comparison on equal footing.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
op=${1:?qr|lu|chol}; grid=${2:?PxQ}; size=${3:?N or MxN}; nb=${4:?NB}; reps=${5:-5}
shift $(($# < 5 ? $# : 5))
ours_extra=("$@")
# Both sides factor the same matrix: the baseline takes ours' seed (ftla's
# default, or the --seed given to ours).
seed=2026
for ((i = 0; i < ${#ours_extra[@]}; i++)); do
  [[ ${ours_extra[i]} == --seed ]] && seed=${ours_extra[i + 1]:-$seed}
  [[ ${ours_extra[i]} == --seed=* ]] && seed=${ours_extra[i]#--seed=}
done
case $op in
  qr | lu | chol) ;;
  *) echo "$0: unknown operation \`$op' (qr|lu|chol)" >&2; exit 2 ;;
esac
if [[ $size == *x* ]]; then
  m=${size%x*}; n=${size#*x}
else
  m=$size; n=$size
fi
if [ -n "${FTLA:-}" ]; then
  ftla=$FTLA # an ftla already built (no set-up, no build)
else
  "$here/scripts/setup.sh" --scalapack
  cargo build --release --quiet --manifest-path "$here/Cargo.toml" -p ftla-bench
  ftla="$here/target/release/ftla"
fi
base_env=()
base_label=ScaLAPACK
if [ "${BASELINE_HUGE_PAGES:-0}" = 1 ]; then
  base_env=(GLIBC_TUNABLES=glibc.malloc.hugetlb=1)
  base_label="ScaLAPACK (huge pages)"
fi
out=$(mktemp -d)
for ((i = 1; i <= reps; i++)); do
  "$ftla" "$op" --grid "$grid" --m "$m" --n "$n" --nb "$nb" --check --json "$out/ours-$i.json" --timeout 600 \
    "${ours_extra[@]}" >/dev/null
  env "${base_env[@]}" "$ftla" baseline scalapack "$op" --grid "$grid" --m "$m" --n "$n" --nb "$nb" --seed "$seed" --json "$out/base-$i.json" \
    --timeout 600 >/dev/null
done
python3 - "$out" "$reps" "$base_label" <<'PY'
import json, statistics, sys
d, reps, base_label = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def load(side):
    runs = [json.load(open(f"{d}/{side}-{i}.json")) for i in range(1, reps + 1)]
    bad = [r for r in runs if not r.get("ok")]
    if bad:
        sys.exit(f"{side}: a run failed its checks: {bad[0]}")
    return runs
ours, base = load("ours"), load("base")
g = lambda runs: statistics.median(r["gflops"] for r in runs)
o, b = g(ours), g(base)
r0 = ours[0]
print(f"{r0['command']} grid {r0['grid'][0]}x{r0['grid'][1]} M {r0['m']} N {r0['n']} NB {r0['nb']} kernel {r0['blas_kernel']}/{base[0]['blas_kernel']}: "
      f"ours median {o:.1f} Gflop/s {[round(r['gflops'],1) for r in ours]}, "
      f"{base_label} median {b:.1f} Gflop/s {[round(r['gflops'],1) for r in base]}, ratio {o/b:.2f}, "
      f"residual max {max(r['residual'] for r in ours):.3f} / {max(r['residual'] for r in base):.3f}, "
      f"load average {open('/proc/loadavg').read().split()[0]}")
PY
rm -rf "$out"
