// What a dashboard reads from one tick of the compiled binary, per outcome and per OTLP encoding:
// the root span and its outcome, span events and links, HTTP and rollout child spans, the tick's
// counter increments and its gauges as the tick left the store.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import type { Outcome } from "../../lib/outcomes.ts";
import { settled, waitFor } from "../../sim/apiserver/driver.ts";
import { type Collector, childrenOf, rootSpan, startCollector, sumOf } from "../../sim/collector.ts";
import { PREFIX, STORE_PATH, startWorld, type World, writes } from "../support/world.ts";
import {
  COUNTERS,
  type Exported,
  gauges,
  IMAGE_GAUGES,
  INSTALLATION_ATTRS,
  imageGauges,
  PROTOCOLS,
  runWith,
  secrets,
  useRegistryCredentials,
} from "./e2e.ts";

const k = (name: string) => `${PREFIX}/${name}`;
const EARLIER = { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331" };
const EARLIER_TP = `00-${EARLIER.traceId}-${EARLIER.spanId}-01`;

interface Scenario {
  outcome: Outcome;
  /** Puts the world where the tick under test finds it; earlier ticks run without telemetry. */
  arrange(w: World): Promise<void>;
  code: 0 | 1;
  counters: Partial<Record<(typeof COUNTERS)[number], number>>;
  /**
   * Per image: attempt_count, locked_out, paused, unresolved_streak, skip_streak, frozen
   * (undefined = must not be emitted); `verified` = last_verified_timestamp emitted.
   */
  images: Record<
    string,
    {
      attempt_count?: number;
      skip_streak?: number;
      frozen?: number;
      locked_out?: number;
      paused?: number;
      unresolved_streak?: number;
      verified: boolean;
    }
  >;
  events: string[];
  links: Array<{ traceId: string; spanId: string }>;
  /** One rollout.wait per re-imaged workload: its name and result ("timeout" for the flap). */
  rollouts: string[];
  /** One `revert` child span per workload patched back, with its own rollout.wait's result. */
  reverts?: string[];
  registry: boolean;
}

/** An image's gauges on a quiet tick: every one of them emitted, at 0. */
const QUIET = {
  attempt_count: 0,
  locked_out: 0,
  paused: 0,
  unresolved_streak: 0,
  skip_streak: 0,
  frozen: 0,
} as const;

async function recorded(w: World) {
  expect((await w.run()).code).toBe(0);
}

const SCENARIOS: Scenario[] = [
  {
    outcome: "recorded",
    arrange: async () => {},
    code: 0,
    counters: {},
    images: {
      api: { ...QUIET, verified: false },
      "node-agent": { ...QUIET, verified: false },
    },
    events: [],
    links: [],
    rollouts: [],
    registry: true,
  },
  {
    outcome: "noop",
    arrange: recorded,
    code: 0,
    counters: {},
    images: {
      api: { ...QUIET, verified: true },
      "node-agent": { ...QUIET, verified: true },
    },
    events: [],
    links: [],
    rollouts: [],
    registry: true,
  },
  {
    // A second attempt after a failed one: links to the tick that wrote attempt 1.
    outcome: "refreshed",
    arrange: async (w) => {
      await recorded(w);
      w.setBook({
        [k("refresh-attempt-api")]: "1",
        [k("refresh-attempt-traceparent-api")]: EARLIER_TP,
      });
      w.registry.push("myorg/api", "stable");
    },
    code: 0,
    counters: { "image_refresh.attempts": 1, "image_refresh.resets": 1 },
    images: {
      api: { ...QUIET, verified: false },
      "node-agent": { ...QUIET, verified: true },
    },
    events: ["attempt", "reset"],
    links: [EARLIER],
    rollouts: ["api ok", "api-proxy ok"],
    registry: true,
  },
  {
    // Only the image whose target does not settle waits; the other goes on and asks the registry.
    outcome: "skipped",
    arrange: async (w) => {
      await recorded(w);
      w.api.setMode("Deployment", "apps", "api", "unsettled");
    },
    code: 0,
    counters: { "image_refresh.skips": 1 },
    images: {
      api: { ...QUIET, skip_streak: 1, verified: false },
      "node-agent": { ...QUIET, verified: true },
    },
    events: [],
    links: [],
    rollouts: [],
    registry: true,
  },
  {
    outcome: "frozen",
    arrange: async (w) => {
      await recorded(w);
      w.setBook({ "skip-streak-api": "2" });
      w.api.setMode("Deployment", "apps", "api", "unsettled");
    },
    code: 1,
    counters: { "image_refresh.skips": 1 },
    images: {
      api: { ...QUIET, skip_streak: 3, frozen: 1, verified: false },
      "node-agent": { ...QUIET, verified: true },
    },
    events: ["freeze"],
    links: [],
    rollouts: [],
    registry: true,
  },
  {
    outcome: "locked_out",
    arrange: async (w) => {
      await recorded(w);
      w.setBook({
        [k("refresh-attempt-api")]: "3",
        [k("refresh-attempt-traceparent-api")]: EARLIER_TP,
      });
      w.registry.push("myorg/api", "stable");
    },
    // A lockout needs a human: every tick it holds exits 1, so the Job fails too.
    code: 1,
    counters: { "image_refresh.lockouts": 1 },
    images: {
      api: { ...QUIET, attempt_count: 3, locked_out: 1, verified: false },
      "node-agent": { ...QUIET, verified: true },
    },
    events: ["lockout"],
    links: [EARLIER],
    rollouts: [],
    registry: true,
  },
  {
    // An untrusted counter has no honest value, so attempt_count is left out rather than faked.
    outcome: "held",
    arrange: async (w) => {
      await recorded(w);
      w.setBook({ [k("refresh-attempt-api")]: "2abc" });
      w.registry.push("myorg/api", "stable");
    },
    code: 1,
    counters: {},
    images: {
      // Nor has "locked out": the count that decides it is unknown.
      api: { paused: 0, unresolved_streak: 0, skip_streak: 0, frozen: 0, verified: false },
      "node-agent": { ...QUIET, verified: true },
    },
    events: [],
    links: [],
    rollouts: [],
    registry: true,
  },
  {
    outcome: "failed",
    arrange: async (w) => {
      await recorded(w);
      // A bad build: it never becomes available, and the revert to the old one settles.
      const bad = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
      w.api.failImages("DaemonSet", "agents", "node-agent", [`${w.registry.host}/myorg/node-agent@${bad}`]);
    },
    code: 1,
    counters: { "image_refresh.attempts": 1, "image_refresh.reverts": 1 },
    images: {
      api: { ...QUIET, verified: true },
      "node-agent": { ...QUIET, attempt_count: 1, verified: false },
    },
    events: ["attempt", "revert"],
    links: [],
    rollouts: ["node-agent timeout"],
    // The wait back is a child of its revert span, not of the root.
    reverts: ["node-agent ok"],
    registry: true,
  },
  {
    // A repository the registry does not know: never a quiet noop, and its streak is a gauge.
    outcome: "unresolved",
    arrange: async (w) => {
      await recorded(w);
      w.registry.faults.add({ path: /node-agent\/manifests/, fault: { type: "status", code: 404 } });
    },
    code: 0,
    counters: {},
    images: {
      api: { ...QUIET, verified: true },
      "node-agent": { ...QUIET, unresolved_streak: 1, verified: false },
    },
    events: [],
    links: [],
    rollouts: [],
    registry: true,
  },
  {
    outcome: "stale",
    arrange: async (w) => {
      await recorded(w);
      w.setBook({ [k("unresolved-streak-node-agent")]: "7" });
      w.registry.faults.add({ path: /node-agent\/manifests/, fault: { type: "status", code: 404 } });
    },
    code: 1,
    counters: {},
    images: {
      api: { ...QUIET, verified: true },
      "node-agent": { ...QUIET, unresolved_streak: 8, verified: false },
    },
    events: ["stale"],
    links: [],
    rollouts: [],
    registry: true,
  },
  {
    outcome: "paused",
    arrange: async (w) => {
      await recorded(w);
      const bad = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
      w.setBook({ [k("rejected-node-agent-digest")]: bad });
    },
    code: 0,
    counters: {},
    images: {
      api: { ...QUIET, verified: true },
      "node-agent": { ...QUIET, paused: 1, verified: false },
    },
    events: ["pause"],
    links: [],
    rollouts: [],
    registry: true,
  },
  {
    outcome: "error",
    arrange: async (w) => {
      w.api.faults.add({ method: "GET", path: STORE_PATH, fault: { type: "status", code: 403 } });
    },
    code: 1,
    counters: {},
    // The store is unknown: no gauge claims it is fine.
    images: {},
    events: [],
    links: [],
    rollouts: [],
    registry: false,
  },
];

let w: World;
beforeEach(async () => {
  w = await startWorld();
  useRegistryCredentials(w);
});
afterEach(async () => {
  await w.stop();
});
let c: Collector;
beforeAll(() => {
  c = startCollector();
});
afterAll(async () => {
  await c.stop();
});

function expectTickMetrics(e: Exported, s: Scenario) {
  for (const name of COUNTERS)
    expect({ name, n: sumOf(e, name) }).toEqual({ name, n: s.counters[name] ?? 0 });
  expect(sumOf(e, "image_refresh.ticks")).toBe(1);
  expect(sumOf(e, "image_refresh.ticks", { "image_refresh.outcome": s.outcome })).toBe(1);
  // Counters and histograms are deltas: each process adds its own increments to one series.
  for (const m of e.metrics.filter((m) => m.type !== "gauge"))
    expect({ name: m.name, t: m.temporality }).toEqual({ name: m.name, t: "delta" });
  for (const m of e.metrics.filter((m) => m.type === "sum")) expect(m.monotonic).toBe(true);
  for (const p of e.metrics.flatMap((m) => m.points)) expect(p.attributes).toMatchObject(INSTALLATION_ATTRS);
  const success = gauges(e)["image_refresh.last_success_timestamp"];
  const perImage = imageGauges(e);
  const want = Object.fromEntries(
    Object.entries(s.images).map(([key, v]) => {
      const { verified, ...rest } = v;
      const named = Object.fromEntries(Object.entries(rest).map(([n, x]) => [`image_refresh.${n}`, x]));
      const ts = perImage[key]?.["image_refresh.last_verified_timestamp"];
      if (verified) expect(ts).toBeGreaterThanOrEqual(e.startedS);
      else expect(ts).toBeUndefined();
      return [key, verified ? { ...named, "image_refresh.last_verified_timestamp": ts } : named];
    }),
  );
  expect(perImage).toEqual(want);
  // Per-image series carry the image's key and repository.
  for (const m of e.metrics.filter((m) => (IMAGE_GAUGES as readonly string[]).includes(m.name)))
    for (const p of m.points) expect(String(p.attributes["container.image.name"])).toStartWith("myorg/");
  // Only ticks that exit 0 count as a success for the "no recent success" alert.
  if (s.code === 0) {
    expect(success).toBeGreaterThanOrEqual(e.startedS);
    expect(success).toBeLessThanOrEqual(e.endedS);
  } else expect(success).toBeUndefined();
  // A tick that read its store reports every image, zeros included; one that could not reports
  // no gauge at all, not even an installation-wide one (a 0 would resolve a lockout alert).
  if (s.outcome === "error") expect(e.metrics.filter((m) => m.type === "gauge")).toEqual([]);
  else expect(Object.keys(perImage).sort()).toEqual(["api", "node-agent"]);
}

function expectSpans(e: Exported, s: Scenario, leaked: string[]) {
  const root = rootSpan(e);
  expect(root.kind).toBe("internal");
  expect(root.attributes).toMatchObject({ ...INSTALLATION_ATTRS, "image_refresh.outcome": s.outcome });
  expect(root.status.code).toBe(s.code === 0 ? "unset" : "error");
  expect(root.events.map((ev) => ev.name)).toEqual(s.events);
  expect(root.links).toEqual(s.links);
  const children = childrenOf(e, root);
  const waits = children.filter((x) => x.name === "rollout.wait");
  const named = (a: Record<string, unknown>) => a["k8s.deployment.name"] ?? a["k8s.daemonset.name"];
  const reverts = children.filter((x) => x.name === "revert");
  expect(
    reverts.flatMap((r) =>
      childrenOf(e, r)
        .filter((x) => x.name === "rollout.wait")
        .map((x) => `${named(x.attributes)} ${x.attributes["image_refresh.rollout.result"]}`),
    ),
  ).toEqual(s.reverts ?? []);
  expect(waits.map((x) => `${named(x.attributes)} ${x.attributes["image_refresh.rollout.result"]}`)).toEqual(
    s.rollouts,
  );
  for (const x of waits)
    expect(x.status.code).toBe(x.attributes["image_refresh.rollout.result"] === "ok" ? "unset" : "error");
  // Every span of the tick hangs off this root; none leaks into another trace.
  expect(e.spans.every((x) => x.traceId === root.traceId)).toBe(true);
  const http = e.spans.filter((x) => x.kind === "client");
  const state = http.find((x) => x.name === "GET" && String(x.attributes["url.full"]).endsWith(STORE_PATH));
  expect(state?.parentSpanId).toBe(root.spanId);
  expect(http.some((x) => x.name === "HEAD")).toBe(s.registry);
  for (const x of http) {
    expect(["GET", "HEAD", "PATCH", "POST"]).toContain(x.name);
    const a = x.attributes;
    expect({
      name: x.name,
      method: a["http.request.method"],
      status: typeof a["http.response.status_code"],
    }).toEqual({ name: x.name, method: x.name, status: "number" });
    expect(a["server.address"]).toBe("127.0.0.1");
    expect(new URL(String(a["url.full"])).username).toBe("");
    expect(x.status.code).toBe((a["http.response.status_code"] as number) >= 400 ? "error" : "unset");
  }
  const everything = JSON.stringify([e.spans, e.metrics]);
  for (const secret of leaked) expect(everything.includes(secret)).toBe(false);
}

describe.each(PROTOCOLS)("one tick over %s", (protocol) => {
  test.each(SCENARIOS.map((s) => [s.outcome, s] as const))("%s", async (_, s) => {
    await s.arrange(w);
    const e = await runWith(w, c, protocol);
    expect({ code: e.code, stderr: e.stderr }).toMatchObject({ code: s.code });
    const contentType = protocol === "http/json" ? "application/json" : "application/x-protobuf";
    expect(c.requests.at(-1)?.contentType).toBe(contentType);
    for (const x of [...e.spans, ...e.metrics])
      expect(x.resource).toMatchObject({
        "service.name": "image-refresh",
        "service.instance.id": "image-refresh/image-refresh-state",
      });
    const leaked = secrets(w);
    // The registry answered with bearer tokens, so the leak check has real values to look for.
    if (s.registry) expect(leaked.length).toBeGreaterThan(3);
    expectSpans(e, s, leaked);
    expectTickMetrics(e, s);
  });
});

test("status is one trace: a root span named for the command over every read, with the verdict", async () => {
  await recorded(w);
  const e = await runWith(w, c, "http/protobuf", ["status"]);
  expect(e.code).toBe(0);
  const roots = e.spans.filter((s) => s.parentSpanId === "");
  expect(roots.map((s) => s.name)).toEqual(["image-refresh status"]);
  const root = roots[0] as (typeof roots)[number];
  expect(root.attributes).toMatchObject({
    ...INSTALLATION_ATTRS,
    "image_refresh.status.verdicts": "api=noop,node-agent=noop",
  });
  const reads = e.spans.filter((s) => s.parentSpanId === root.spanId);
  expect(reads.length).toBeGreaterThan(1);
  // It reads the cluster and asks the registry for the digest now; it writes nothing.
  expect(new Set(reads.map((s) => s.name))).toEqual(new Set(["GET", "HEAD"]));
  // status counts nothing: the tick metrics belong to ticks.
  expect(e.metrics).toEqual([]);
});

test("a dry run exports its spans, marked as a dry run, and no metrics", async () => {
  await recorded(w);
  w.setBook({ [k("refresh-attempt-api")]: "1" });
  w.registry.push("myorg/api", "stable");
  w.api.clearLog();
  const e = await runWith(w, c, "http/protobuf", ["tick", "--dry-run"]);
  expect(e.code).toBe(0);
  expect(writes(w.api).filter((x) => !x.startsWith("POST"))).toEqual([]);
  expect(rootSpan(e).attributes["image_refresh.dry_run"]).toBe(true);
  // Nothing was attempted, reset or changed: counting it would raise alerts and move gauges.
  expect(e.metrics).toEqual([]);
});

test("each verification is a rollout.verify span; a regression is a span event and a counter", async () => {
  w.writeConfig((x) => (x.verifyFor = "300ms"));
  await recorded(w);
  const bad = w.registry.push("myorg/api", "stable");
  w.api.failImages("Deployment", "apps", "api-proxy", [`${w.registry.host}/myorg/api@${bad}`], {
    crashAfterMs: 1000,
  });
  const rolled = await runWith(w, c, "http/protobuf");
  expect(rolled.code).toBe(0);
  const verified = rolled.spans
    .filter((x) => x.name === "rollout.verify")
    .map((x) => `${x.attributes["k8s.deployment.name"]} ${x.attributes["image_refresh.verify.result"]}`);
  expect(verified).toEqual(["api ok", "api-proxy ok"]);
  expect(sumOf(rolled, "image_refresh.regressions")).toBe(0);
  await waitFor(w.api, "Deployment", "apps", "api-proxy", (o) => !settled(o), 5000);
  const e = await runWith(w, c, "http/protobuf");
  expect(e.code).toBe(1);
  const root = rootSpan(e);
  expect(root.events.map((ev) => ev.name)).toEqual(["attempt", "regressed"]);
  expect(root.events[1]?.attributes).toMatchObject({
    "image_refresh.image": "api",
    "image_refresh.attempt": 1,
  });
  expect(sumOf(e, "image_refresh.regressions", { "image_refresh.image": "api" })).toBe(1);
  expect(sumOf(e, "image_refresh.attempts", { "image_refresh.image": "api" })).toBe(1);
  // The way back is verified too.
  expect(e.spans.filter((x) => x.name === "rollout.verify").length).toBe(2);
}, 30_000);
