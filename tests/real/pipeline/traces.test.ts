// Traces through the real Collector: the compiled binary exports its spans over OTLP/HTTP, once as
// protobuf and once as JSON, to a Collector run with k8s/monitoring/otel-collector.yaml, whose
// traces pipeline sends them over OTLP/gRPC (its otlp_grpc exporter) to a second Collector that
// prints what it receives (debug exporter). The lockout story must be visible there as span
// links: attempt <- attempt <- attempt <- lockout, the rearm linked to the story it ends; and a
// reset that follows a failed attempt is linked to that attempt.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bookOf, installationText } from "./identity.ts";
import { type Installation, type Protocol, startInstallation } from "./installations.ts";
import { needPeers } from "./peers.ts";
import { type Pipeline, startPipeline } from "./pipeline.ts";
import { type SinkSpan, sinkSpans } from "./sink.ts";

const peers = needPeers("tests/real/pipeline/traces.test.ts");
const PROTOCOLS: Protocol[] = ["http/protobuf", "http/json"];

interface Step {
  name: string;
  args?: string[];
  before?: (i: Installation) => void;
}

const badBuild = (i: Installation) => {
  const bad = i.world.registry.push("myorg/node-agent", "stable", { multiArch: true });
  i.world.api.failImages("DaemonSet", "agents", "node-agent", [
    `${i.world.registry.host}/myorg/node-agent@${bad}`,
  ]);
};
const fixed = (i: Installation) => i.world.api.failImages("DaemonSet", "agents", "node-agent", []);

const STEPS: Step[] = [
  { name: "first observation" },
  { name: "flap 1", before: badBuild },
  { name: "flap 2" },
  { name: "flap 3" },
  { name: "lockout" },
  { name: "rearm", args: ["rearm"] },
  { name: "refresh after rearm", before: fixed },
  { name: "flap again", before: badBuild },
  { name: "reset", before: fixed },
];

let p: Pipeline;
const inst = new Map<Protocol, Installation>();
/** Per protocol, per step: the root span the sink received, and the attempt traceparent stored after it. */
const roots = new Map<Protocol, Map<string, SinkSpan>>();
const stored = new Map<Protocol, Map<string, string | undefined>>();
let all: SinkSpan[] = [];

const rootsOf = (spans: SinkSpan[], instance: string) =>
  spans.filter((s) => s.instance === instance && s.parentId === "" && s.name.startsWith("image-refresh "));

async function story(protocol: Protocol, i: Installation) {
  const mine = new Map<string, string | undefined>();
  for (const step of STEPS) {
    step.before?.(i);
    await i.command(step.args ?? ["tick"]);
    mine.set(step.name, bookOf(i.world, i.name)["refresh-attempt-traceparent-node-agent"]);
  }
  stored.set(protocol, mine);
}

describe.skipIf(!peers)("traces through the real Collector", () => {
  beforeAll(async () => {
    if (!peers) return;
    p = await startPipeline(peers);
    for (const protocol of PROTOCOLS)
      inst.set(protocol, await startInstallation(`story-${protocol.slice(5)}`, protocol, () => p.otlpUrl));
    await Promise.all(PROTOCOLS.map((pr) => story(pr, inst.get(pr) as Installation)));
    // The batch processor and the gRPC hop take a moment; wait until every root has arrived.
    const deadline = Date.now() + 20_000;
    for (;;) {
      all = sinkSpans(p.sinkOutput());
      const complete = PROTOCOLS.every(
        (pr) => rootsOf(all, installationText((inst.get(pr) as Installation).name)).length >= STEPS.length,
      );
      if (complete || Date.now() > deadline) break;
      await Bun.sleep(200);
    }
    for (const pr of PROTOCOLS) {
      const found = rootsOf(all, installationText((inst.get(pr) as Installation).name));
      roots.set(pr, new Map(STEPS.map((s, k) => [s.name, found[k] as SinkSpan])));
    }
  }, 120_000);

  afterAll(async () => {
    await Promise.all([...inst.values()].map((i) => i.world.stop()));
    await p?.stop();
  });

  const ref = (s: SinkSpan | undefined) => ({
    traceId: s?.traceId ?? "missing",
    spanId: s?.spanId ?? "missing",
  });

  test.each(PROTOCOLS)(
    "%s: every process's spans arrive, one trace per process, HTTP spans under each root",
    (pr) => {
      const i = inst.get(pr) as Installation;
      expect(
        i.runs.map((r) => r.stderr).filter((e) => /telemetry|export/i.test(e) && /cannot|fail/i.test(e)),
      ).toEqual([]);
      const mine = roots.get(pr) as Map<string, SinkSpan>;
      expect(STEPS.map((s) => mine.get(s.name)?.name)).toEqual(
        STEPS.map((s) => (s.args?.[0] === "rearm" ? "image-refresh rearm" : "image-refresh tick")),
      );
      expect(new Set([...mine.values()].map((s) => s.traceId)).size).toBe(STEPS.length);
      for (const root of mine.values())
        expect(
          all.filter((s) => s.traceId === root.traceId && s.parentId === root.spanId).length,
        ).toBeGreaterThan(0);
    },
  );

  test.each(PROTOCOLS)("%s: the lockout story is one chain of span links, ended by the rearm", (pr) => {
    const r = (name: string) => (roots.get(pr) as Map<string, SinkSpan>).get(name);
    const links = Object.fromEntries(STEPS.map((s) => [s.name, r(s.name)?.links]));
    expect(links).toEqual({
      "first observation": [],
      "flap 1": [],
      "flap 2": [ref(r("flap 1"))],
      "flap 3": [ref(r("flap 2"))],
      lockout: [ref(r("flap 3"))],
      rearm: [ref(r("flap 3"))],
      // The rearm removed the stored traceparent: the refresh after it begins a new story.
      "refresh after rearm": [],
      "flap again": [],
      reset: [ref(r("flap again"))],
    });
    const events = Object.fromEntries(STEPS.map((s) => [s.name, r(s.name)?.events]));
    expect(events).toMatchObject({
      "flap 1": ["attempt", "revert"],
      "flap 2": ["attempt", "revert"],
      // The third failure reaches maxRefreshAttempts and announces the lockout on its own tick;
      // the next tick touches nothing and says it again.
      "flap 3": ["attempt", "revert", "lockout"],
      lockout: ["lockout"],
      rearm: ["rearm"],
      "refresh after rearm": ["attempt", "reset"],
      reset: ["attempt", "reset"],
    });
    // What the links point at is what each attempt tick stored next to its count.
    const s = stored.get(pr) as Map<string, string | undefined>;
    const f3 = r("flap 3");
    expect(s.get("flap 3")).toBe(`00-${f3?.traceId}-${f3?.spanId}-01`);
    expect(r("flap 2")?.attributes["image_refresh.outcome"]).toBe("failed");
    expect(r("flap 3")?.attributes["image_refresh.outcome"]).toBe("locked_out");
    expect(r("lockout")?.attributes["image_refresh.outcome"]).toBe("locked_out");
  });
});
