#!/bin/sh
# Mutation testing of the decision core and of the registry client's pure parts, one after the
# other (two runs at once would share .stryker-tmp/). StrykerJS 9.x (10 needs Node >= 22), run
# under Bun. Reports: reports/mutation/{core,clients}.html. Not run in CI: minutes, not seconds.
set -eu
cd "$(dirname "$0")/.."
areas="${*:-core schema clients}"
for area in $areas; do
  echo "== mutation testing: $area"
  STRYKER_AREA="$area" node_modules/.bin/bun node_modules/@stryker-mutator/core/bin/stryker.js run
done
