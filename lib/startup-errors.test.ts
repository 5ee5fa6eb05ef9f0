import { describe, expect, test } from "bun:test";
import { reportStartupError, startupLogFormat } from "./startup-errors.ts";

describe("startupLogFormat", () => {
  const ROWS: Array<[string[], Record<string, string>, "text" | "json"]> = [
    [[], {}, "text"],
    [[], { LOG_FORMAT: "json" }, "json"],
    [["--log-format", "json"], {}, "json"],
    [["--log-format=json"], {}, "json"],
    [["--log-format", "text"], { LOG_FORMAT: "json" }, "text"],
    [["--log-format", "yaml"], {}, "text"],
    [["tick", "--log-format"], { LOG_FORMAT: "json" }, "json"],
  ];
  for (const [argv, env, want] of ROWS)
    test(`${JSON.stringify(argv)} ${JSON.stringify(env)} → ${want}`, () =>
      expect(startupLogFormat(argv, env)).toBe(want));
});

describe("reportStartupError", () => {
  const told = { headline: "Invalid configuration in c.yaml", problems: ["tag: bad", "state.kind: bad"] };

  test("text: a headline, one prefixed line per problem, the hint only when asked", () => {
    const lines: string[] = [];
    reportStartupError(told, "text", (l) => void lines.push(l));
    reportStartupError({ headline: "unknown flag: --x", hint: true }, "text", (l) => void lines.push(l));
    expect(lines.join("")).toBe(
      "[image-refresh] ERROR: Invalid configuration in c.yaml:\n" +
        "[image-refresh]   - tag: bad\n" +
        "[image-refresh]   - state.kind: bad\n" +
        "[image-refresh] ERROR: unknown flag: --x\n" +
        "[image-refresh] Run image-refresh --help for usage.\n",
    );
  });

  test("json: one object with the problems as a field and correlation ids", () => {
    const lines: string[] = [];
    reportStartupError(told, "json", (l) => void lines.push(l));
    expect(lines).toHaveLength(1);
    const o = JSON.parse(lines[0] as string);
    expect(o).toMatchObject({ level: "error", msg: told.headline, problems: told.problems });
    expect(o.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(o.span_id).toMatch(/^[0-9a-f]{16}$/);
    expect(o.hint).toBeUndefined();
  });

  test("a message of several lines becomes a headline and problems", () => {
    const lines: string[] = [];
    reportStartupError({ headline: "first\n  second\n\nthird" }, "text", (l) => void lines.push(l));
    expect(lines.join("")).toBe(
      "[image-refresh] ERROR: first:\n[image-refresh]   - second\n[image-refresh]   - third\n",
    );
  });
});
