#!/usr/bin/env bash
# Builds the test Collector from the committed sources in otelcol/ (see generate.sh) into the peers
# cache, keyed by the hash of otelcol/go.sum, and prints the binary's path. Builds nothing when the
# binary is cached. The build needs the Go module proxy only: go.sum is committed, so GOSUMDB is off.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
key=$(sha256sum "$here/otelcol/go.sum" | cut -c1-16)
dir="${IMAGE_REFRESH_PEERS_CACHE:-$HOME/.cache/image-refresh/peers}/otelcol-$key"
bin="$dir/otelcol"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
command -v go >/dev/null 2>&1 || { echo "otel/build.sh: install Go (https://go.dev/dl) to build the Collector" >&2; exit 1; }
mkdir -p "$dir"
echo "otel/build.sh: building the Collector into $dir (several minutes on 2 cores)" >&2
start=$(date +%s)
(cd "$here/otelcol" && GOFLAGS=-mod=readonly GOSUMDB=off CGO_ENABLED=0 \
  nice -n 10 go build -trimpath -ldflags "-s -w" -o "$bin.tmp" .)
mv "$bin.tmp" "$bin"
echo "otel/build.sh: built in $(( $(date +%s) - start )) s, $(du -h "$bin" | cut -f1)" >&2
echo "$bin"
