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
  ];
  for (const [argv, re] of bad) {
    test(`rejects ${argv.join(" ")}`, () => {
      expect(() => parseArgs(argv)).toThrow(UsageError);
      expect(() => parseArgs(argv)).toThrow(re);
    });
  }
});
