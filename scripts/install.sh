#!/usr/bin/env bash
# Installs ftla for C, C++ and Fortran programs under PREFIX:
#
#   PREFIX/bin/ftla                        the CLI (`ftla launch` runs programs)
#   PREFIX/lib/libftla.so, libftla.a       the C ABI (capi/)
#   PREFIX/include/ftla.h                  its header
#   PREFIX/include/ftla.f90                its Fortran module (source: compile
#                                          it with the program)
#   PREFIX/lib/pkgconfig/ftla.pc           pkg-config --cflags --libs ftla
#   PREFIX/lib/cmake/ftla/ftlaConfig.cmake find_package(ftla): the imported
#                         targets ftla::ftla (libftla.so) and
#                         ftla::ftla_static (libftla.a); ftlaConfigVersion.cmake
#
# Usage: scripts/install.sh [--profile PROFILE | --from DIR] PREFIX
#
#   --profile PROFILE  the cargo profile to build (default: release);
#   --from DIR         install what is already built in DIR, a cargo profile
#                      directory such as target/release (libftla.so and
#                      libftla.a from DIR/deps or DIR, the ftla binary from
#                      DIR), without building.
#
# libftla.so is linked against one MPI (the Open MPI with ULFM in .venv/
# that scripts/setup.sh installs, or the one MPICC/FTLA_MPICC named at the
# build) and OpenBLAS; it finds that MPI through its own RPATH. ftla.pc and
# ftla::ftla hand a program the same libraries, with the same RPATH: a
# program that calls MPI or LAPACK itself must use those (a second MPI or
# BLAS in one process does not work). They are read from the built
# library (its DT_NEEDED and RPATH); the static library's system libraries
# are the Rust standard library's (rustc --print native-static-libs).
# docs/install.md shows how to build against the installed files.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() { echo "usage: scripts/install.sh [--profile PROFILE | --from DIR] PREFIX" >&2; exit 2; }
log() { echo "[install] $*" >&2; }

profile=release
from=
prefix=
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) [ $# -ge 2 ] || usage; profile=$2; shift 2 ;;
    --from) [ $# -ge 2 ] || usage; from=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "install.sh: unknown option $1" >&2; usage ;;
    *) [ -z "$prefix" ] || usage; prefix=$1; shift ;;
  esac
done
[ -n "$prefix" ] || usage

if [ -z "$from" ]; then
  # cargo's `dev` profile builds into target/debug, every other into
  # target/NAME.
  case "$profile" in
    dev|debug) profile=dev; profile_dir=debug ;;
    *) profile_dir=$profile ;;
  esac
  log "building ftla-capi and the ftla binary (cargo profile $profile)"
  (cd "$here" && cargo build --quiet --profile "$profile" -p ftla-capi --lib)
  (cd "$here" && cargo build --quiet --profile "$profile" -p ftla-bench --bin ftla)
  from=${CARGO_TARGET_DIR:-$here/target}/$profile_dir
fi
[ -d "$from" ] || { echo "install.sh: no directory $from" >&2; exit 1; }
from=$(cd "$from" && pwd)

# A dependency's cdylib and staticlib stay in deps/; a package built on
# its own is also copied one up.
built() {
  local f
  for f in "$from/deps/$1" "$from/$1"; do
    if [ -f "$f" ]; then echo "$f"; return; fi
  done
  echo "install.sh: no $1 in $from or $from/deps (build ftla-capi first)" >&2
  exit 1
}
so=$(built libftla.so)
archive=$(built libftla.a)
bin=$from/ftla
[ -x "$bin" ] || { echo "install.sh: no ftla binary in $from (cargo build -p ftla-bench --bin ftla)" >&2; exit 1; }

mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' "$here/Cargo.toml")
[ -n "$version" ] || { echo "install.sh: no version in $here/Cargo.toml" >&2; exit 1; }

# What libftla.so was linked against: its RPATH (the MPI's library
# directories) and its DT_NEEDED libraries, but for the C runtime's own.
dynamic=$(readelf -d "$so")
rpath=$(sed -n 's/.*(\(RPATH\|RUNPATH\)).*\[\(.*\)\]/\2/p' <<<"$dynamic" | tr ':' ' ')
needed=$(sed -n 's/.*(NEEDED).*\[lib\([^.]*\)\.so.*\]/\1/p' <<<"$dynamic" | { grep -vxE 'c|gcc_s' || true; } | tr '\n' ' ')
# The Rust standard library's system libraries, for libftla.a.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
std_libs=$(echo '' | "${RUSTC:-rustc}" --crate-type staticlib --crate-name probe --print native-static-libs \
  -o "$probe/libprobe.a" - 2>&1 | sed -n 's/.*native-static-libs: //p')
[ -n "$std_libs" ] || { echo "install.sh: rustc --print native-static-libs printed nothing" >&2; exit 1; }

# pkg-config: -L/-rpath for the MPI's directories, -l for every library.
pc_deps=""
for d in $rpath; do pc_deps+="-L$d -Wl,-rpath,$d "; done
for l in $needed; do pc_deps+="-l$l "; done
# CMake: a library in the MPI's directories by its path (CMake then puts
# the directory in the program's RPATH), the others by name.
cmake_deps=""
for l in $needed; do
  path=$l
  for d in $rpath; do
    if [ -e "$d/lib$l.so" ]; then path=$d/lib$l.so; break; fi
  done
  cmake_deps+="${cmake_deps:+;}$path"
done
cmake_static_deps=$cmake_deps
for l in $std_libs; do cmake_static_deps+=";${l#-l}"; done

log "installing ftla $version from $from into $prefix"
install -d "$prefix/bin" "$prefix/lib/pkgconfig" "$prefix/lib/cmake/ftla" "$prefix/include"
install -m 755 "$bin" "$prefix/bin/ftla"
install -m 755 "$so" "$prefix/lib/libftla.so"
install -m 644 "$archive" "$prefix/lib/libftla.a"
install -m 644 "$here/capi/include/ftla.h" "$here/capi/include/ftla.f90" "$prefix/include/"

# Templates: @NAME@ replaced by its value (sed's special characters in
# the value escaped).
fill() {
  local args=() kv
  for kv in "PREFIX=$prefix" "VERSION=$version" "VERSION_MAJOR=${version%%.*}" "PC_LIBS=${pc_deps% }" \
    "PC_LIBS_PRIVATE=$std_libs" "CMAKE_LINK_LIBRARIES=$cmake_deps" \
    "CMAKE_STATIC_LINK_LIBRARIES=$cmake_static_deps"; do
    args+=(-e "s|@${kv%%=*}@|$(sed 's/[|&\\]/\\&/g' <<<"${kv#*=}")|g")
  done
  sed "${args[@]}" "$here/capi/pkg/$1" >"$2"
}
fill ftla.pc.in "$prefix/lib/pkgconfig/ftla.pc"
fill ftlaConfig.cmake.in "$prefix/lib/cmake/ftla/ftlaConfig.cmake"
fill ftlaConfigVersion.cmake.in "$prefix/lib/cmake/ftla/ftlaConfigVersion.cmake"
log "done: PKG_CONFIG_PATH=$prefix/lib/pkgconfig, or CMAKE_PREFIX_PATH=$prefix"
