#!/bin/sh
# Builds the real peers the test tier runs against (kube-apiserver, kube-controller-manager,
# kubectl, etcd, helm v3 and v4, kube-state-metrics, Jaeger v2, cosign,
# Alertmanager and amtool; and for the node tier kubelet,
# kube-scheduler, kube-proxy and the pause binary) from the pinned Go modules beside this script, into a cache
# keyed by each module's go.sum, so a second run builds nothing. Prints one line per module:
# "<module> <directory holding its binaries>".
#
#   sh peers/build.sh            # every module
#   sh peers/build.sh kube       # only peers/kube
#   sh peers/build.sh --cached   # build nothing; exit 4 unless every module is built
#
# The committed go.sum pins every module's hash, so the checksum database is never asked
# (a module missing from go.sum fails the build under -mod=readonly instead of being fetched
# unverified). GOTOOLCHAIN=local keeps Go from downloading another toolchain.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cache=${IMAGE_REFRESH_PEERS_CACHE:-$HOME/.cache/image-refresh/peers}

# module directory -> "binary=package" pairs. A package path ending in /vN would otherwise
# name its binary after the element before it (etcd's main package builds as "server").
binaries() {
  case $1 in
    kube) echo "etcd=go.etcd.io/etcd/server/v3 kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver" \
               "kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager kubectl=k8s.io/kubernetes/cmd/kubectl" ;;
    helm3) echo "helm=helm.sh/helm/v3/cmd/helm" ;;
    helm4) echo "helm=helm.sh/helm/v4/cmd/helm" ;;
    ksm) echo "kube-state-metrics=k8s.io/kube-state-metrics/v2" ;;
    jaeger) echo "jaeger=github.com/jaegertracing/jaeger/cmd/jaeger" ;;
    cosign) echo "cosign=github.com/sigstore/cosign/v3/cmd/cosign" ;;
    alertmanager) echo "alertmanager=github.com/prometheus/alertmanager/cmd/alertmanager" \
                       "amtool=github.com/prometheus/alertmanager/cmd/amtool" ;;
    # The node's binaries: a module of its own, because they need modules the control plane's
    # go.sum lacks, and adding them there would move peers/kube's cache key.
    node) echo "kubelet=k8s.io/kubernetes/cmd/kubelet kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler" \
               "kube-proxy=k8s.io/kubernetes/cmd/kube-proxy" ;;
    *) echo "Cannot build peer module $1: known modules are kube, helm3, helm4, ksm, jaeger, cosign, alertmanager, node" >&2; exit 2 ;;
  esac
}

# Version stamps the official build writes (hack/lib/version.sh); without them kube-apiserver
# reports v0.0.0-master and kubectl warns about version skew.
ldflags() {
  v=$(required_version "$1" k8s.io/kubernetes)
  helm=$(required_version "$1" "helm.sh/helm/v[34]")
  flags="-s -w"; major=
  if [ -n "$v" ]; then
    minor=$(echo "$v" | cut -d. -f2)
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      flags="$flags -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
    done
  fi
  if [ -n "$helm" ]; then
    major=$(echo "$helm" | cut -d. -f1)
    flags="$flags -X helm.sh/helm/$major/internal/version.version=$helm"
  fi
  ksm=$(required_version "$1" k8s.io/kube-state-metrics/v2)
  if [ -n "$ksm" ]; then
    # As its Makefile stamps it: kube-state-metrics --version and its build_info metric.
    flags="$flags -X github.com/prometheus/common/version.Version=$ksm"
    flags="$flags -X k8s.io/kube-state-metrics/v2/pkg/app.ClientGoVersion=$(required_version "$1" k8s.io/client-go)"
  fi
  if [ "$1" = alertmanager ]; then
    am=$(required_version "$1" github.com/prometheus/alertmanager)
    # As promu stamps it: alertmanager --version, amtool --version and alertmanager_build_info.
    flags="$flags -X github.com/prometheus/common/version.Version=${am#v}"
  fi
  if [ "$major" = v3 ]; then
    # helm v3's Makefile also stamps the Kubernetes version its client-go is from; without it
    # Capabilities.KubeVersion (template, lint) falls back to v1.20. helm v4 derives it itself.
    kminor=$(required_version "$1" k8s.io/client-go | cut -d. -f2)
    for p in pkg/lint/rules pkg/chartutil; do
      flags="$flags -X helm.sh/helm/v3/$p.k8sVersionMajor=1 -X helm.sh/helm/v3/$p.k8sVersionMinor=$kminor"
    done
  fi
  echo "$flags"
}

# The version a module requires, e.g. "v1.36.3", from "require m v" or a require block's "m v".
required_version() {
  sed -n "s#^\(require\)\?\s*$2 \(v[0-9.]*\)\( //.*\)\?\$#\2#p" "$here/$1/go.mod" | head -1
}

# The sandbox ("pause") container's program, as the kubernetes module's build/pause/Makefile
# compiles it: a static C binary, stamped with the module's version. The node tier packs it into
# the image containerd starts every pod's sandbox from.
build_pause() {
  if ! command -v gcc >/dev/null 2>&1; then
    echo "Cannot build pause: gcc is not on PATH (apt-get install gcc libc6-dev)" >&2; exit 3
  fi
  src=$(cd "$here/node" && GOTOOLCHAIN=local GOFLAGS="-mod=readonly" go list -m -f '{{.Dir}}' k8s.io/kubernetes)
  echo "building node/pause ($src/build/pause/linux/pause.c)" >&2
  gcc -Os -Wall -Werror -static -DVERSION="$(required_version node k8s.io/kubernetes)" \
    -o "$1/pause" "$src/build/pause/linux/pause.c"
}

build_one() {
  mod=$1
  binaries "$mod" >/dev/null
  key=$(sha256sum "$here/$mod/go.sum" | cut -c1-16)
  out="$cache/$mod-$key"
  if [ -f "$out/.complete" ]; then echo "$mod $out"; return; fi
  if [ "$cached_only" = 1 ]; then echo "$mod is not built (expected in $out)" >&2; exit 4; fi
  tmp="$out.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$tmp"
  for pair in $(binaries "$mod"); do
    name=${pair%%=*}; pkg=${pair#*=}
    echo "building $mod/$name ($pkg)" >&2
    (cd "$here/$mod" && CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" \
      go build -trimpath -tags=selinux,notest -ldflags "$(ldflags "$mod")" -o "$tmp/$name" "$pkg")
  done
  if [ "$mod" = node ]; then build_pause "$tmp"; fi
  touch "$tmp/.complete"
  rm -rf "$out"; mv "$tmp" "$out"
  echo "$mod $out"
}

cached_only=0
if [ "${1:-}" = --cached ]; then cached_only=1; shift; fi
if [ "$cached_only" = 0 ] && ! command -v go >/dev/null 2>&1; then
  echo "Cannot build the real peers: go is not on PATH (install Go >= 1.26 from https://go.dev/dl)" >&2
  exit 3
fi
mods=${*:-kube helm3 helm4 ksm jaeger cosign alertmanager node}
for m in $mods; do build_one "$m"; done
