// Bad API objects end to end, against the compiled binary: a truncated body, a huge or
// garbled annotation. Each must end the tick with its exit code and one clear line naming the
// object, never a stack trace, and never a write it could not justify.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PREFIX, STATE_PATH, startWorld, type World, writes } from "../world.ts";

const k = (name: string) => `${PREFIX}/${name}`;
const PROXY_PATH = "/apis/apps/v1/namespaces/apps/deployments/api-proxy";
const STACK = /\n\s+at .*(:\d+:\d+|\(native\))/;

let w: World;
beforeAll(async () => {
  w = await startWorld();
  expect((await w.run()).code).toBe(0); // first observation, so later pushes are changes
});
afterAll(async () => {
  await w?.stop();
});

interface Case {
  name: string;
  setup(w: World): void;
  undo(w: World): void;
  code: number;
  says: RegExp;
  writesNothing: boolean;
}

const HUGE = 200_000;
const cases: Case[] = [
  {
    name: "a truncated state object body",
    setup: (w) => w.api.faults.add({ method: "GET", path: STATE_PATH, fault: { type: "malformed" } }),
    undo: (w) => w.api.faults.clear(),
    code: 1,
    says: /error: .*deployment apps\/api/i,
    writesNothing: true,
  },
  {
    name: "a truncated target body while a refresh is due",
    setup: (w) => {
      w.registry.push("myorg/api", "stable");
      w.api.faults.add({ method: "GET", path: PROXY_PATH, fault: { type: "malformed" } });
    },
    undo: (w) => w.api.faults.clear(),
    code: 1,
    says: /held: .*api-proxy/,
    writesNothing: true,
  },
  {
    // the push of the case above is still due: it was held
    name: "a huge attempt counter while a refresh is due",
    setup: (w) =>
      w.api.setAnnotations("Deployment", "apps", "api", { [k("refresh-attempt")]: "9".repeat(HUGE) }),
    undo: (w) => w.api.setAnnotations("Deployment", "apps", "api", { [k("refresh-attempt")]: null }),
    code: 1,
    says: /held: .*not a count.*rearm/,
    writesNothing: true,
  },
  {
    name: "a huge skip streak on an unsettled state object",
    setup: (w) => {
      w.api.setMode("Deployment", "apps", "api", "unsettled");
      w.api.setAnnotations("Deployment", "apps", "api", {
        [k("refresh-skip-streak")]: `x${"7".repeat(HUGE)}`,
      });
    },
    undo: (w) => {
      w.api.setAnnotations("Deployment", "apps", "api", { [k("refresh-skip-streak")]: null });
      w.api.setMode("Deployment", "apps", "api", "healthy");
    },
    code: 1,
    says: /error: .*refresh-skip-streak.*not a count/,
    writesNothing: true,
  },
];

describe("malformed API objects end to end", () => {
  for (const tc of cases) {
    test(tc.name, async () => {
      tc.setup(w);
      w.api.clearLog();
      try {
        const r = await w.run();
        if (process.env.SHOW_STDERR) console.log(r.stderr);
        expect(r.code).toBe(tc.code);
        expect(r.stderr).toMatch(tc.says);
        expect(r.stderr).not.toMatch(STACK);
        // The bad value is quoted at most in part: a log line stays readable.
        for (const line of r.stderr.split("\n")) expect(line.length).toBeLessThan(2_000);
        if (tc.writesNothing) expect(writes(w.api)).toEqual([]);
      } finally {
        tc.undo(w);
      }
    });
  }
});
