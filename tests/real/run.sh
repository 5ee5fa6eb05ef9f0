#!/bin/sh
# npm run test:real: the real tier. Builds the peers that are missing (peers/build.sh; nothing
# when they are cached), the product binary, then runs every test under tests/real/. Without Go
# and without built peers it skips with one line, or fails when CI is set: a tier that did not
# run is not a pass.
set -eu
cd "$(dirname "$0")/../.."

ci() { case "$(echo "${CI:-}" | tr 'A-Z' 'a-z')" in "" | 0 | false) return 1 ;; *) return 0 ;; esac; }

if ! command -v go >/dev/null 2>&1 && ! sh peers/build.sh --cached >/dev/null 2>&1; then
  line="skip: the real tier (tests/real) needs Go >= 1.26 to build its peers (install Go from https://go.dev/dl)"
  if ci; then echo "$line: CI is set, so this is a failure" >&2; exit 1; fi
  echo "$line"
  exit 0
fi
if command -v go >/dev/null 2>&1; then
  nice -n 10 sh peers/build.sh
  nice -n 10 bash peers/otel/build.sh
fi
bun run build
# bunfig.toml keeps tests/real out of a plain `bun test`; a pattern given here replaces it.
exec bun test --path-ignore-patterns='node_modules/**' --timeout 600000 tests/real "$@"
