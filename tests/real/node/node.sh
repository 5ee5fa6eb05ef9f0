#!/bin/sh
# The node: containerd, kube-proxy and the kubelet, run inside the cluster's network namespace
# under `unshare --mount --propagation private`, so that what they write to the host stays in
# this mount namespace and vanishes with it:
#  - the kernel settings the kubelet sets (vm.overcommit_memory, kernel.panic, ...) land on files
#    bind-mounted over them here, not on the host's;
#  - /run, /var/lib and /var/log get a tmpfs of their own, so the paths the kubelet, containerd,
#    runc and the CNI plugins hard-code (/var/lib/kubelet, /run/containerd, /run/netns,
#    /var/lib/cni, /var/log/containers, /run/xtables.lock) are never created on the host.
# The cgroups the kubelet and runc create are on the host's cgroupfs (no namespace for those):
# all of them live under one directory named for this cluster, removed on the way out.
#
#   sh node.sh <state dir> <cgroup name> <kubelet> <kube-proxy> <node kubeconfig> <node name> <node ip> <test pid>
#
# On TERM or INT (the watchdog's, or the test's stop) it tears everything down and writes
# <state dir>/node.down when done; when the test process is gone (nobody is left to remove the
# state directory) it removes the directory instead. With "teardown" as a ninth argument it only
# tears down.
S=$1; CG=$2; KUBELET=$3; PROXY=$4; KUBECONFIG=$5; NAME=$6; IP=$7; OWNER=$8
SOCK=$S/containerd.sock

alive() { st=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null); [ -n "$st" ] && [ "$st" != Z ]; }

# Stops the process whose pid is in $S/$1.pid: TERM, up to 5 s, then KILL.
stop() {
  [ -f "$S/$1.pid" ] || return 0
  p=$(cat "$S/$1.pid"); kill "$p" 2>/dev/null
  i=0; while alive "$p" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  kill -9 "$p" 2>/dev/null; rm -f "$S/$1.pid"
}

# Every process in this cluster's cgroups, on every hierarchy (the containers and their shims).
cgroup_pids() { find /sys/fs/cgroup/*/"$CG" -name cgroup.procs -exec cat {} + 2>/dev/null; }

teardown() {
  # Also the handler of a failed start, which runs under set -e: no step here may end it early.
  set +e; trap - EXIT
  stop kubelet
  # Every process in the cluster's cgroups (the containers and their pause processes), then the
  # shims of this containerd, found by its socket on their command line.
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    pids=$(cgroup_pids | sort -u)
    [ -z "$pids" ] && break
    kill -9 $pids 2>/dev/null; sleep 0.3
  done
  for d in /proc/[0-9]*; do
    case "$(tr '\0' ' ' 2>/dev/null < "$d/cmdline")" in
      *containerd-shim*"-address $SOCK "*) kill -9 "${d#/proc/}" 2>/dev/null ;;
    esac
  done
  stop kube-proxy
  stop containerd
  # Deepest first; a cgroup whose last task just exited may refuse rmdir for a moment.
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    for h in /sys/fs/cgroup/*/"$CG"; do
      [ -d "$h" ] && find "$h" -depth -type d -exec rmdir {} + 2>/dev/null
    done
    [ -z "$(ls -d /sys/fs/cgroup/*/"$CG" 2>/dev/null)" ] && break
    sleep 0.3
  done
  # The containers' files: their mounts (overlay roots, shm, projected volumes) exist in this
  # mount namespace only, but here they would keep rm from removing them.
  awk -v d="$S/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do
    umount -l "$m"
  done
  rm -rf "$S/containerd"
  touch "$S/node.down"
  if ! kill -0 "$OWNER" 2>/dev/null; then
    # The control plane's peers are stopping by their watchdogs too: let them go first. The
    # pattern is read from a file named relative to the directory, so that no grep names the
    # directory on its own command line.
    cd "$S" && printf '%s\n' "$S" > owner-dir
    for _ in $(seq 1 50); do
      grep -l -F -f owner-dir /proc/[0-9]*/cmdline > others 2>/dev/null
      grep -q -v -x -e "/proc/$$/cmdline" others || break
      sleep 0.2
    done
    cd / && rm -rf "$S"
  fi
}

if [ "${9:-}" = teardown ]; then teardown; exit 0; fi
# On TERM the watchdog's `timeout` signals this whole process group and kills it 5 s later: the
# teardown runs in a session of its own so that it finishes (it stays in these namespaces).
trap 'trap - EXIT; trap "" TERM INT; setsid sh "$0" "$@" teardown > "$S/teardown.log" 2>&1 < /dev/null & exit 143' TERM INT

# These machines mount cgroup v1 (plus the unified hierarchy beside it); on a cgroup v2 host the
# globs below would create the cluster's directory inside every top-level cgroup.
if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
  echo "node.sh: cgroup v2 hosts are not supported yet (this tier was built on cgroup v1)" >&2
  touch "$S/node.down"
  exit 1
fi

# A step of the start that fails tears down what the steps before it made.
trap 'teardown' EXIT
set -e
for kv in vm/overcommit_memory=1 vm/panic_on_oom=0 kernel/panic=10 kernel/panic_on_oops=1 \
  kernel/keys/root_maxkeys=1000000 kernel/keys/root_maxbytes=25000000; do
  k=${kv%%=*}; f=$S/sysctl/$(echo "$k" | tr / _)
  cat "/proc/sys/$k" > "$f"; mount --bind "$f" "/proc/sys/$k"
done
for d in /run /var/lib /var/log; do mount -t tmpfs -o mode=0755 tmpfs "$d"; done
for h in /sys/fs/cgroup/*/; do mkdir -p "$h$CG"; done

containerd --config "$S/containerd.toml" > "$S/containerd.log" 2>&1 &
echo $! > "$S/containerd.pid"
t0=$(date +%s)
until timeout 2 ctr -a "$SOCK" version >/dev/null 2>&1; do
  if [ $(($(date +%s) - t0)) -gt 30 ]; then
    echo "containerd did not start in 30 s:" >&2; tail -5 "$S/containerd.log" >&2; exit 1
  fi
  sleep 0.1
done
"$PROXY" --config="$S/kube-proxy.yaml" --v=1 > "$S/kube-proxy.log" 2>&1 &
echo $! > "$S/kube-proxy.pid"
"$KUBELET" --config="$S/kubelet/config.yaml" --kubeconfig="$KUBECONFIG" --root-dir="$S/kubelet/root" \
  --cert-dir="$S/kubelet/pki" --hostname-override="$NAME" --node-ip="$IP" --v=1 > "$S/kubelet.log" 2>&1 &
echo $! > "$S/kubelet.pid"
set +e
trap - EXIT
touch "$S/node.up"
# `wait` returns early when a signal arrives, so the trap runs at once.
while :; do wait; sleep 1; done
