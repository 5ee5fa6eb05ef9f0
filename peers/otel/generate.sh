#!/usr/bin/env bash
# Regenerates the Collector's sources (otelcol/: main.go, components.go, go.mod, go.sum) from
# manifest.yaml with the OpenTelemetry Collector builder pinned in builder/go.mod. Run it after
# changing the manifest and commit the result; build.sh compiles the committed sources.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -C builder -o "$tmp/builder" go.opentelemetry.io/collector/cmd/builder
"$tmp/builder" --config manifest.yaml --skip-compilation --skip-strict-versioning=false
