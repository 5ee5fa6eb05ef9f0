// Traces on a real tracing backend: the compiled binary plays the lockout story (three failed
// attempts, the third of which reaches the lockout and says so, a tick held by the lockout, a
// rearm, a refresh, another failed attempt and its reset), exporting to
// the real Collector run with k8s/monitoring/otel-collector.yaml, whose traces pipeline sends them
// to a real Jaeger v2 (peers/jaeger). The story is then found the way the shipped dashboard's
// traces panel asks for it (dashboard.ts jaegerSearch: its service, operation and tags, as
// Grafana's Jaeger data source sends them) by image and outcome, and its ticks are linked in
// Jaeger: held tick -> third attempt -> second -> first, and the reset -> the attempt it ends.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { needPeers as needRealPeers } from "../peers.ts";
import { jaegerSearch } from "./dashboard.ts";
import { bookOf } from "./identity.ts";
import { type Installation, startInstallation } from "./installations.ts";
import { type Jaeger, type JaegerSpan, type JaegerTrace, startJaeger } from "./jaeger.ts";
import { needPeers } from "./peers.ts";
import { type Pipeline, startPipeline } from "./pipeline.ts";

const FILE = "tests/real/pipeline/jaeger.test.ts";
const peers = needPeers(FILE);
const missingJaeger = needRealPeers(["jaeger"], FILE);
const IMAGE = "node-agent";
const TRACEPARENT = `refresh-attempt-traceparent-${IMAGE}`;

const badBuild = (i: Installation) => {
  const bad = i.world.registry.push("myorg/node-agent", "stable", { multiArch: true });
  i.world.api.failImages("DaemonSet", "agents", "node-agent", [
    `${i.world.registry.host}/myorg/node-agent@${bad}`,
  ]);
};
const fixed = (i: Installation) => i.world.api.failImages("DaemonSet", "agents", "node-agent", []);

const STEPS: Array<{ name: string; args?: string[]; before?: (i: Installation) => void }> = [
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
let dir: string | undefined;
let jaeger: Jaeger;
let inst: Installation;
/** The attempt traceparent the store held after each step: `{traceId}-{spanId}`. */
const stored = new Map<string, string>();
const found = new Map<string, JaegerTrace[]>();

/** The dashboard panel's search for IMAGE and `outcome`, sent to the real Jaeger. */
const search = (outcome: string) =>
  jaeger.api<JaegerTrace[]>(jaegerSearch({ service: "image-refresh", image: IMAGE, outcome }));

const root = (t: JaegerTrace | undefined): JaegerSpan | undefined =>
  t?.spans.find(
    (s) => s.operationName === "image-refresh tick" && !s.references.some((r) => r.refType === "CHILD_OF"),
  );
const id = (s: JaegerSpan | undefined) => (s ? `${s.traceID}-${s.spanID}` : "missing");
const links = (s: JaegerSpan | undefined) =>
  (s?.references ?? []).filter((r) => r.refType === "FOLLOWS_FROM").map((r) => `${r.traceID}-${r.spanID}`);
const events = (s: JaegerSpan | undefined) =>
  (s?.logs ?? []).flatMap((l) => l.fields.filter((f) => f.key === "event").map((f) => String(f.value)));
const tag = (s: JaegerSpan | undefined, key: string) => s?.tags.find((t) => t.key === key)?.value;

describe.skipIf(!peers || missingJaeger)(
  "the lockout story in a real Jaeger, found as the dashboard asks",
  () => {
    beforeAll(async () => {
      if (!peers || missingJaeger) return;
      dir = mkdtempSync(join(tmpdir(), "image-refresh-jaeger-"));
      jaeger = await startJaeger(dir);
      p = await startPipeline(peers, [], { traces: jaeger.otlpGrpc });
      inst = await startInstallation("story-jaeger", "http/protobuf", () => p.otlpUrl);
      for (const step of STEPS) {
        step.before?.(inst);
        await inst.command(step.args ?? ["tick"]);
        const tp = bookOf(inst.world, inst.name)[TRACEPARENT];
        if (tp) stored.set(step.name, tp.split("-").slice(1, 3).join("-"));
      }
      // The Collector batches and Jaeger indexes: wait until the last tick's trace is found.
      const deadline = Date.now() + 30_000;
      for (;;) {
        for (const o of ["failed", "locked_out", "refreshed"]) found.set(o, await search(o).catch(() => []));
        const resets = (found.get("refreshed") ?? []).filter((t) => events(root(t)).includes("reset"));
        const enough = (found.get("failed")?.length ?? 0) >= 3 && (found.get("locked_out")?.length ?? 0) >= 2;
        if (enough && resets.length >= 2) break;
        if (Date.now() > deadline) break;
        await Bun.sleep(300);
      }
    }, 180_000);

    afterAll(async () => {
      await inst?.world.stop();
      await p?.stop();
      await jaeger?.peer.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test("the failed attempts are found by image and outcome failed, each an attempt of the image", () => {
      const failed = found.get("failed") ?? [];
      // The third failure reaches maxRefreshAttempts: that tick is locked_out, not failed.
      expect(failed.length).toBe(3);
      for (const t of failed) {
        expect(tag(root(t), "image_refresh.outcome")).toBe("failed");
        expect(events(root(t))).toContain("attempt");
        expect(events(root(t))).not.toContain("lockout");
      }
      // Each one is a trace the store pointed at after that attempt.
      const ids = new Set(failed.map((t) => id(root(t))));
      for (const s of ["flap 1", "flap 2", "flap again"]) expect(ids.has(stored.get(s) ?? "")).toBe(true);
    });

    test("the lockout is found by image and outcome locked_out, on the attempt that reached it and the tick it held, linked back through every attempt", () => {
      const locked = (found.get("locked_out") ?? []).map(root);
      expect(locked.length).toBe(2);
      // The attempt that reached the lockout announces it on its own tick.
      const reached = locked.find((s) => id(s) === stored.get("flap 3"));
      expect(events(reached)).toEqual(["attempt", "revert", "lockout"]);
      // The next tick touches nothing and says the lockout again.
      const held = locked.find((s) => s !== reached);
      expect(events(held)).toEqual(["lockout"]);
      const byId = new Map(
        [...(found.get("failed") ?? []).map(root), ...locked].map((s) => [id(s), s] as const),
      );
      // held -> flap 3 -> flap 2 -> flap 1, each link to a trace the searches found.
      const chain: string[] = [];
      let at = links(held);
      while (at.length === 1 && byId.has(at[0] as string)) {
        chain.push(at[0] as string);
        at = links(byId.get(at[0] as string));
      }
      expect(at).toEqual([]);
      expect(chain).toEqual(["flap 3", "flap 2", "flap 1"].map((k) => stored.get(k) ?? `no ${k}`));
    });

    test("the reset is found by image and outcome refreshed, linked to the attempt it ends", () => {
      const resets = (found.get("refreshed") ?? []).map(root).filter((s) => events(s).includes("reset"));
      // The refresh after the rearm starts a new story (no link); the reset after "flap again" ends one.
      expect(resets.map((r) => links(r).join(" ")).sort()).toEqual(
        ["", stored.get("flap again") ?? "none"].sort(),
      );
    });

    test("the dashboard's query is a Jaeger search by service, operation and the image and outcome tags", () => {
      const q = new URL(
        `http://x${jaegerSearch({ service: "image-refresh", image: IMAGE, outcome: "locked_out" })}`,
      );
      expect(Object.fromEntries(q.searchParams)).toEqual({
        service: "image-refresh",
        operation: "image-refresh tick",
        tags: JSON.stringify({ "image_refresh.image": IMAGE, "image_refresh.outcome": "locked_out" }),
        limit: "20",
      });
    });
  },
);
