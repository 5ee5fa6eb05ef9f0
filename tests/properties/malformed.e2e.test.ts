// Bad API objects end to end, against the compiled binary: a truncated body, a huge or
// garbled value in the store. Each must end the tick with its exit code, a last line giving every
// image's verdict and one clear line naming the object, never a stack trace, and never a write
// it could not justify.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { parseWorkload } from "../../lib/kube/objects.ts";
import { rolloutStatus } from "../../lib/kube/settled.ts";
import { STATE_PATH, STORE_PATH, startWorld, type World, writes } from "../support/world.ts";

/** Store keys carry no prefix (setBook drops one if given). */
const k = (name: string) => name;
const PROXY_PATH = "/apis/apps/v1/namespaces/apps/deployments/api-proxy";
const NODE_AGENT_MANIFEST = "/v2/myorg/node-agent/manifests/stable";

/** Waits (bounded) until Deployment apps/api is settled by kubectl's rules. */
async function settled(w: World): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (rolloutStatus(parseWorkload("Deployment", w.api.getObject("Deployment", "apps", "api"))).done) return;
    await Bun.sleep(10);
  }
  throw new Error("Deployment apps/api did not settle within 2 s");
}
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
  setup(w: World): void | Promise<void>;
  undo(w: World): void;
  code: number;
  /** Every pattern must match stderr: the image's own line and the tick's last line. */
  says: RegExp[];
  writesNothing: boolean;
  /** Store keys no write of the tick may touch. */
  untouched?: string[];
}

const HUGE = 200_000;
const cases: Case[] = [
  {
    // the store unreadable: the tick cannot know any count, so it touches nothing
    name: "a truncated store body",
    setup: (w) => w.api.faults.add({ method: "GET", path: STORE_PATH, fault: { type: "malformed" } }),
    undo: (w) => w.api.faults.clear(),
    code: 1,
    says: [/error: .*ConfigMap image-refresh\/image-refresh-state/],
    writesNothing: true,
  },
  {
    name: "a truncated body of a target (Deployment apps/api)",
    setup: (w) => w.api.faults.add({ method: "GET", path: STATE_PATH, fault: { type: "malformed" } }),
    undo: (w) => w.api.faults.clear(),
    code: 1,
    says: [/ERROR: .*Deployment apps\/api: Cannot GET Deployment apps\/api: /],
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
    says: [
      // A target that cannot be read holds its image, due or not.
      /ERROR: api cannot be checked, so none of its workloads is touched: Deployment apps\/api-proxy: .*response is not JSON/,
      /held: api: held; node-agent: noop/,
    ],
    writesNothing: true,
  },
  {
    // the push of the case above is still due: it was held
    name: "a huge attempt counter in the store while a refresh is due",
    setup: (w) => w.setBook({ [k("refresh-attempt-api")]: "9".repeat(HUGE) }),
    undo: (w) => w.setBook({ [k("refresh-attempt-api")]: null }),
    code: 1,
    says: [/refresh-attempt-api is .*not a count.*rearm api/, /held: api: held; node-agent: noop/],
    writesNothing: true,
  },
  {
    // the settled guard is per image: api's target does not settle, node-agent goes on
    name: "a huge skip streak on an image whose target does not settle",
    setup: (w) => {
      w.api.setMode("Deployment", "apps", "api", "unsettled");
      w.setBook({
        [k("skip-streak-api")]: `x${"7".repeat(HUGE)}`,
      });
    },
    undo: (w) => {
      w.setBook({ [k("skip-streak-api")]: null });
      w.api.setMode("Deployment", "apps", "api", "healthy");
    },
    code: 1,
    says: [/skip-streak-api is .*not a count/, /error: api: error; node-agent: noop/],
    writesNothing: true,
  },
  {
    // api's push is still due: an untrusted streak of another image holds back only that image
    name: "a huge unresolved streak on an image the registry cannot resolve, beside a due refresh",
    setup: async (w) => {
      await settled(w); // the case above left Deployment apps/api rolling out
      w.registry.faults.add({
        method: "HEAD",
        path: NODE_AGENT_MANIFEST,
        fault: { type: "status", code: 404 },
      });
      w.setBook({
        [k("unresolved-streak-node-agent")]: `x${"7".repeat(HUGE)}`,
      });
    },
    undo: (w) => {
      w.registry.faults.clear();
      w.setBook({ [k("unresolved-streak-node-agent")]: null });
    },
    code: 1,
    says: [/unresolved-streak-node-agent is .*not a count/, /error: api: refreshed; node-agent: error/],
    writesNothing: false,
    untouched: [k("unresolved-streak-node-agent")],
  },
];

describe("malformed API objects end to end", () => {
  for (const tc of cases) {
    test(tc.name, async () => {
      await tc.setup(w);
      w.api.clearLog();
      try {
        const r = await w.run();
        if (process.env.SHOW_STDERR) console.log(r.stderr);
        expect(r.code).toBe(tc.code);
        for (const says of tc.says) expect(r.stderr).toMatch(says);
        expect(r.stderr).not.toMatch(STACK);
        // The bad value is quoted at most in part: a log line stays readable.
        for (const line of r.stderr.split("\n")) expect(line.length).toBeLessThan(2_000);
        if (tc.writesNothing) expect(writes(w.api)).toEqual([]);
        for (const name of tc.untouched ?? [])
          for (const e of w.api.log.filter((x) => x.method !== "GET"))
            expect(e.body ?? "").not.toContain(name);
      } finally {
        tc.undo(w);
      }
    });
  }
});
