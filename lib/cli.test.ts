import { describe, expect, test } from "bun:test";
import { parseArgs, UsageError } from "./cli.ts";

describe("parseArgs", () => {
  const cases: Array<[string[], Partial<ReturnType<typeof parseArgs>>]> = [
    [[], { command: "tick", dryRun: false }],
    [["tick", "--dry-run"], { command: "tick", dryRun: true }],
    [["status", "--json"], { command: "status", json: true }],
    [["--config", "a.yaml", "rearm"], { command: "rearm", config: "a.yaml" }],
    [["--config=b.yaml", "--kubeconfig=k"], { config: "b.yaml", kubeconfig: "k" }],
    [["--log-format", "json"], { logFormat: "json" }],
    [["help"], { help: true }],
    [["demo", "-h"], { command: "demo", help: true }],
    [["--version"], { command: "version" }],
    [["version", "--version"], { command: "version" }],
    [["validate"], { command: "validate" }],
    [["validate", "--config", "c.yaml", "--manifests=m.yaml"], { command: "validate", manifests: "m.yaml" }],
    [["schema"], { command: "schema" }],
    // --help wins over a flag the command does not take: the help says what it takes.
    [["demo", "--dry-run", "--help"], { help: true }],
  ];
  for (const [argv, want] of cases) {
    test(argv.join(" ") || "(none)", () => {
      expect(parseArgs(argv)).toMatchObject(want);
    });
  }
  const bad: Array<[string[], RegExp]> = [
    [["frobnicate"], /unknown command: frobnicate/],
    [["--nope"], /unknown flag: --nope/],
    [["--config"], /--config: it needs a value/],
    [["--log-format", "xml"], /current value is "xml"/],
    [["tick", "extra"], /unexpected argument: extra/],
    [["--dry-run=yes"], /takes no value/],
    [["tick", "--json"], /^tick does not take --json$/],
    [["--json"], /^tick does not take --json$/],
    [["demo", "--dry-run"], /^demo does not take --dry-run$/],
    [["demo", "--config", "c.yaml"], /^demo does not take --config$/],
    [["status", "--dry-run"], /^status does not take --dry-run$/],
    [["rearm", "--json"], /^rearm does not take --json$/],
    [["status", "--manifests", "m.yaml"], /^status does not take --manifests$/],
    [["version", "--config", "c.yaml"], /^version does not take --config$/],
    [["schema", "--kubeconfig", "k"], /^schema does not take --kubeconfig$/],
    [["validate", "--kubeconfig", "k"], /^validate does not take --kubeconfig$/],
    [["validate", "--dry-run"], /^validate does not take --dry-run$/],
    [["tick", "--version"], /^tick does not take --version$/],
    [["--manifests"], /--manifests: it needs a value/],
  ];
  for (const [argv, re] of bad) {
    test(`rejects ${argv.join(" ")}`, () => {
      expect(() => parseArgs(argv)).toThrow(UsageError);
      expect(() => parseArgs(argv)).toThrow(re);
    });
  }
});
