#!/usr/bin/env bash
# Builds Prometheus 3.x (github.com/prometheus/prometheus v0.316.0 = 3.16.0, pinned in
# prometheus/go.mod) into the peers cache, keyed by the hash of prometheus/go.sum, and prints the
# binary's path; builds nothing when it is cached. Not part of test:real (the pipeline tier runs
# Debian's Prometheus 2.42 by default); run the tier on this one with
#   IMAGE_REFRESH_PROMETHEUS=$(peers/otel/build-prometheus.sh) npm run test:real
# Without the builtinassets tag the web UI is not embedded; the HTTP API the tests use is complete.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
key=$(sha256sum "$here/prometheus/go.sum" | cut -c1-16)
dir="${IMAGE_REFRESH_PEERS_CACHE:-$HOME/.cache/image-refresh/peers}/prometheus-$key"
bin="$dir/prometheus"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
command -v go >/dev/null 2>&1 || { echo "otel/build-prometheus.sh: install Go (https://go.dev/dl)" >&2; exit 1; }
mkdir -p "$dir"
echo "otel/build-prometheus.sh: building Prometheus into $dir (about 10-20 minutes on 2 cores)" >&2
start=$(date +%s)
(cd "$here/prometheus" && GOFLAGS=-mod=readonly GOSUMDB=off CGO_ENABLED=0 \
  nice -n 10 go build -trimpath -ldflags "-s -w" -o "$bin.tmp" github.com/prometheus/prometheus/cmd/prometheus)
mv "$bin.tmp" "$bin"
echo "otel/build-prometheus.sh: built in $(( $(date +%s) - start )) s, $(du -h "$bin" | cut -f1)" >&2
echo "$bin"
