#!/usr/bin/env bash
# Several "nodes" on one machine, for real multi-node jobs and the loss of
# a node (needs root and iproute2). Each node is a network namespace with
# its own address on a bridge, and its processes get their own hostname
# (a UTS namespace), so PRRTE starts one daemon per node; a node is lost
# when every process in it, its daemon included, is SIGKILLed at once.
#
#   scripts/netns-nodes.sh up N [SLOTS]  create nodes ftn1..ftnN; prints the
#                                        launcher arguments (FTLA_MPIEXEC_ARGS)
#   scripts/netns-nodes.sh hosts K...    launcher arguments for nodes K... only
#   scripts/netns-nodes.sh kill K        lose node K: SIGKILL all its processes;
#                                        the node stays down (no daemon starts
#                                        there again, as on a dead host)
#   scripts/netns-nodes.sh down          remove the nodes
#
# Addresses 10.200.0.0/24 on bridge ftbr0 (.1 this machine, .1K node K).
# The nodes share this machine's file system, as nodes share a parallel
# file system.
set -euo pipefail
dir=${FTLA_NETNS_DIR:-${TMPDIR:-/tmp}/ftla-netns}
args() { # the launcher arguments for hostfile $1
  echo "--hostfile $1 --prtemca plm_ssh_agent $dir/agent --prtemca prte_do_not_resolve 1 --map-by node"
}
case "${1:-}" in
up)
  n=${2:?N}; slots=${3:-2}; mkdir -p "$dir"
  ip link show ftbr0 >/dev/null 2>&1 || {
    ip link add ftbr0 type bridge; ip addr add 10.200.0.1/24 dev ftbr0; ip link set ftbr0 up
  }
  : > "$dir/hosts"; rm -f "$dir"/ftn*.down
  for k in $(seq 1 "$n"); do
    if ! ip netns list | grep -qw "ftn$k"; then
      ip netns add "ftn$k"
      ip link add "vh$k" type veth peer name "vn$k"
      ip link set "vh$k" master ftbr0; ip link set "vh$k" up
      ip link set "vn$k" netns "ftn$k"
      ip netns exec "ftn$k" ip addr add "10.200.0.1$k/24" dev "vn$k"
      ip netns exec "ftn$k" ip link set "vn$k" up
      ip netns exec "ftn$k" ip link set lo up
    fi
    echo "ftn$k slots=$slots" >> "$dir/hosts"
  done
  # PRRTE's ssh stand-in: run the daemon's command in the node's namespaces.
  cat > "$dir/agent" <<'AGENT'
#!/bin/bash
while [[ ${1:-} == -* ]]; do shift; done
host=$1; shift
if [ -e "$(dirname "$0")/$host.down" ]; then
  echo "ssh: connect to host $host port 22: No route to host" >&2; exit 255
fi
exec ip netns exec "$host" unshare --uts bash -c "hostname $host; $*"
AGENT
  chmod +x "$dir/agent"
  args "$dir/hosts"
  ;;
hosts)
  shift; f="$dir/hosts-$(echo "$@" | tr ' ' -)"
  : > "$f"
  for k in "$@"; do grep "^ftn$k " "$dir/hosts" >> "$f"; done
  args "$f"
  ;;
kill)
  k=${2:?K}; touch "$dir/ftn$k.down"; pids=$(ip netns pids "ftn$k" || true)
  [ -n "$pids" ] && kill -9 $pids
  echo "node ftn$k lost: $(echo $pids | wc -w) processes SIGKILLed"
  ;;
down)
  for ns in $(ip netns list | awk '{print $1}' | grep '^ftn[0-9]*$' || true); do
    k=${ns#ftn}; ip netns pids "$ns" | xargs -r kill -9 || true
    ip netns del "$ns"; ip link del "vh$k" 2>/dev/null || true
  done
  ip link del ftbr0 2>/dev/null || true; rm -rf "$dir"
  ;;
*) sed -n '2,16p' "$0"; exit 2 ;;
esac
