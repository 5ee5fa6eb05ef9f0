// Mutation testing with StrykerJS (issue 6). There is no Bun test-runner plugin, so the
// `command` runner reruns `bun test` on the unit tests of one area for every mutant: keep those
// tests pure and fast (no sockets, no compiled binary), or a run takes hours.
//
//   npm run mutation                             # the decision core (default)
//   STRYKER_AREA=clients npm run mutation        # the pure parts of the registry client
//   STRYKER_AREA=schema npm run mutation         # the boundary helpers (lib/issues.ts) and config rules
//
// StrykerJS is pinned to 9.x: 10 (and its Babel 8) want Node >= 22, and `npm ci` must be quiet on
// the Node 20 the README asks for. The script runs it under Bun all the same:
//   bun node_modules/@stryker-mutator/core/bin/stryker.js run
//
// Not run in CI (minutes, not seconds); reports land in reports/mutation/<area>.html.
const bun = "node_modules/.bin/bun test --timeout 20000";

const AREAS = {
  core: {
    mutate: [
      "lib/tick/plan.ts",
      "lib/annotations.ts",
      "lib/kube/settled.ts",
      "lib/config.ts",
      "lib/duration.ts",
      "lib/outcomes.ts",
    ],
    tests: [
      "lib/tick/plan.test.ts",
      "lib/tick/plan.more.test.ts",
      "lib/annotations.test.ts",
      "lib/config.test.ts",
      "lib/config.more.test.ts",
      "lib/duration.more.test.ts",
      "lib/outcomes.more.test.ts",
      "lib/kube/settled.test.ts",
      "lib/kube/settled.more.test.ts",
      // tests/properties/plan.property.test.ts is left out: seconds per run, and a random input
      // would make a mutant's verdict change from one run to the next.
    ],
  },
  // What every boundary's zod/mini schema parses with; the config suites exercise it through a real schema.
  schema: {
    mutate: ["lib/issues.ts"],
    tests: ["lib/issues.test.ts", "lib/config.test.ts", "lib/config.more.test.ts"],
  },
  clients: {
    mutate: ["lib/registry/challenge.ts", "lib/registry/reference.ts", "lib/registry/credentials.ts"],
    tests: [
      "lib/registry/challenge.test.ts",
      "lib/registry/challenge.more.test.ts",
      "lib/registry/reference.test.ts",
      "lib/registry/reference.more.test.ts",
      "lib/registry/credentials.test.ts",
      "lib/registry/credentials.more.test.ts",
    ],
  },
};

const area = process.env.STRYKER_AREA ?? "core";
const chosen = AREAS[area];
if (!chosen)
  throw new Error(
    `Cannot use STRYKER_AREA: current value is "${area}", expected ${Object.keys(AREAS).join(", ")}`,
  );

// Paths are relative so the command works inside Stryker's sandbox copy. `bun test` fails on a
// path that does not exist, so only test files that exist are named.
const { existsSync } = await import("node:fs");
const tests = chosen.tests.filter((t) => existsSync(t));

export default {
  $schema: "./node_modules/@stryker-mutator/core/schema/stryker-schema.json",
  mutate: chosen.mutate,
  testRunner: "command",
  commandRunner: { command: `${bun} ${tests.map((t) => `./${t}`).join(" ")}` },
  coverageAnalysis: "off",
  concurrency: 2,
  timeoutMS: 10000,
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: `reports/mutation/${area}.html` },
  jsonReporter: { fileName: `reports/mutation/${area}.json` },
  tempDirName: ".stryker-tmp",
  // Stryker rewrites tsconfig.json's references through the TypeScript JS API, which TypeScript
  // 7 (the native compiler) no longer has; Bun needs no tsconfig for these tests, so skip it.
  tsconfigFile: "tsconfig.stryker-unused.json",
  cleanTempDir: true,
  // The sandbox holds only what these unit tests import (lib/; node_modules is linked). A full
  // copy is slower and breaks on files that come and go while it is made (bun build's temp files).
  ignorePatterns: ["/*", "!/lib", "!/package.json", "!/bunfig.toml", "!/tsconfig.json"],
  thresholds: { high: 90, low: 85, break: null },
};
