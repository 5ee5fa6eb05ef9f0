// The store client over real HTTPS against the simulated API server: NotFound is an empty book,
// the answer's Date is the clock, a create or patch that lost a race is a conflict (never an
// overwrite), and every other failure keeps the server's reason and message.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { type SimApiServer, startApiServer } from "../../sim/apiserver/index.ts";
import { recordingTelemetry } from "../../tests/support/recording-telemetry.ts";
import { ApiError } from "../kube/errors.ts";
import { createKubeClient } from "../kube/workloads.ts";
import { memoryLogger } from "../log.ts";
import { setField } from "./change.ts";
import { readStore, writeStore } from "./store.ts";

let sim: SimApiServer;
const NOW = new Date("2026-12-01T12:00:00Z");
beforeAll(async () => {
  sim = await startApiServer({ now: () => NOW });
  sim.ensureNamespace("image-refresh");
});
afterAll(() => sim.stop());
beforeEach(() => {
  sim.faults.clear();
  sim.clearLog();
});

const KEYS = ["api", "web"];
const api = () =>
  createKubeClient(
    { server: sim.url, caPem: sim.caPem, insecureSkipTlsVerify: false, token: sim.token },
    {
      requestTimeoutMs: 500,
      signal: new AbortController().signal,
      telemetry: recordingTelemetry(),
      log: memoryLogger(),
    },
  ).configMaps;
let n = 0;
const fresh = () => ({ namespace: "image-refresh", name: `store-${++n}` });

describe("the store client", () => {
  test("NotFound is an empty book; the clock is the API server's Date", async () => {
    const r = await readStore(api(), fresh(), KEYS);
    expect(r.book.resourceVersion).toBeUndefined();
    expect(r.book.images.api?.attempt).toEqual({ kind: "absent" });
    expect(r.date).toBe(NOW.toUTCString());
  });

  test("the first write creates; a second creator from the same empty book gets a conflict", async () => {
    const ref = fresh();
    const { book } = await readStore(api(), ref, KEYS);
    const one = await writeStore(api(), ref, book, setField("api", "attempt", 1));
    expect(one.kind).toBe("written");
    const two = await writeStore(api(), ref, book, setField("api", "attempt", 1));
    expect(two).toMatchObject({ kind: "conflict", reason: "AlreadyExists" });
    const again = await readStore(api(), ref, KEYS);
    expect(again.book.images.api?.attempt).toEqual({ kind: "trusted", value: 1, raw: "1" });
  });

  test("two writers racing on a store that does not exist: exactly one create wins", async () => {
    const ref = fresh();
    const { book } = await readStore(api(), ref, KEYS);
    const results = await Promise.all([
      writeStore(api(), ref, book, setField("api", "attempt", 1)),
      writeStore(api(), ref, book, setField("web", "attempt", 1)),
    ]);
    expect(results.map((r) => r.kind).sort()).toEqual(["conflict", "written"]);
    expect(Object.keys(sim.getConfigMap(ref.namespace, ref.name).data)).toHaveLength(1);
  });

  test("a patch decided on an old resourceVersion is a conflict, and the store keeps the other write", async () => {
    const ref = fresh();
    const { book } = await readStore(api(), ref, KEYS);
    const made = await writeStore(api(), ref, book, setField("api", "attempt", 1));
    if (made.kind !== "written") throw new Error("not written");
    const theirs = await writeStore(api(), ref, made.book, setField("api", "attempt", 2));
    expect(theirs.kind).toBe("written");
    const mine = await writeStore(api(), ref, made.book, setField("api", "attempt", 5));
    expect(mine).toMatchObject({ kind: "conflict", reason: "Conflict" });
    expect(sim.getConfigMap(ref.namespace, ref.name).data).toEqual({ "refresh-attempt-api": "2" });
    const patches = sim.log.filter((e) => e.method === "PATCH");
    expect(patches.map((p) => p.contentType)).toEqual([
      "application/merge-patch+json",
      "application/merge-patch+json",
    ]);
    expect(JSON.parse(patches[0]?.body ?? "{}").metadata.resourceVersion).toBe(made.book.resourceVersion);
  });

  test("a change of nothing sends nothing", async () => {
    const ref = fresh();
    const { book } = await readStore(api(), ref, KEYS);
    sim.clearLog();
    expect(await writeStore(api(), ref, book, { "refresh-attempt-api": null })).toEqual({
      kind: "unchanged",
    });
    expect(sim.log).toEqual([]);
  });

  const failures = [
    { name: "Forbidden", fault: { type: "status", code: 403 } as const, reason: "Forbidden" },
    {
      name: "an internal error",
      fault: { type: "status", code: 500, reason: "" } as const,
      reason: "Unknown",
    },
    { name: "a timeout", fault: { type: "hang" } as const, reason: "Timeout" },
  ];
  for (const f of failures)
    test(`a read that fails with ${f.name} is an ApiError naming the store`, async () => {
      const ref = fresh();
      sim.faults.add({ path: `/api/v1/namespaces/image-refresh/configmaps/${ref.name}`, fault: f.fault });
      const e = await readStore(api(), ref, KEYS).catch((x) => x);
      expect(e).toBeInstanceOf(ApiError);
      expect((e as ApiError).reason).toBe(f.reason);
      expect((e as ApiError).message).toStartWith(
        `Cannot GET ConfigMap image-refresh/${ref.name}: ${f.reason}`,
      );
    });
});
