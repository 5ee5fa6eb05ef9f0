// Event field limits as kube-apiserver applies them: in UTF-8 bytes (Go's len), not characters.
// The simulator must refuse what a real server refuses, and the product must post what it accepts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call } from "../../sim/apiserver/driver.ts";
import { startApiServer } from "../../sim/apiserver/index.ts";
import { startWorld, type World } from "../support/world.ts";

// kubernetes pkg/apis/core/validation/events.go: `if len(event.Message) > NoteLengthLimit` with
// NoteLengthLimit = 1024. Go's len of a string counts UTF-8 bytes, not characters, so a note of
// 1024 characters that contains "→" (3 bytes) is rejected with 422 by a real API server.
const NOTE_LIMIT_BYTES = 1024;

describe("Events: note limit is 1024 bytes (Go len), not 1024 UTF-16 characters", () => {
  test("sim: an events.k8s.io/v1 Event whose note is 400 characters but 1200 bytes is rejected with 422", async () => {
    const sim = await startApiServer();
    try {
      const note = "→".repeat(400);
      expect(note.length).toBeLessThanOrEqual(NOTE_LIMIT_BYTES);
      expect(Buffer.byteLength(note)).toBeGreaterThan(NOTE_LIMIT_BYTES);
      const r = await call(sim, "/apis/events.k8s.io/v1/namespaces/apps/events", {
        method: "POST",
        contentType: "application/json",
        body: {
          apiVersion: "events.k8s.io/v1",
          kind: "Event",
          metadata: { name: "api.00000000000000a1" },
          eventTime: "2025-01-02T03:04:05.123456Z",
          reportingController: "image-refresh.io/image-refresh",
          reportingInstance: "image-refresh-29012345-x7k2p",
          action: "Refresh",
          reason: "Refreshed",
          type: "Normal",
          note,
          regarding: { apiVersion: "apps/v1", kind: "Deployment", namespace: "apps", name: "api" },
        },
      });
      // A real kube-apiserver answers 422 Invalid ("message: Invalid value: \"\": can have at most 1024 characters").
      expect(r.status).toBe(422);
    } finally {
      await sim.stop();
    }
  });

  describe("product: the Refreshed Event of a many-image refresh", () => {
    let w: World;
    const repos = Array.from({ length: 12 }, (_, i) => `myorg/service-number-${String(i).padStart(2, "0")}`);
    beforeAll(async () => {
      w = await startWorld();
      repos.forEach((repo, i) => {
        w.api.addWorkload({
          kind: "Deployment",
          namespace: "apps",
          name: `svc-${i}`,
          replicas: 1,
          containers: [{ name: "app", image: `${w.registry.host}/${repo}:stable` }],
        });
        w.registry.push(repo, "stable");
      });
      w.writeConfig((c) => {
        c.images = repos.map((repository, i) => ({
          repository,
          targets: [{ kind: "Deployment", name: `svc-${i}`, container: "app" }],
        }));
        c.rolloutTimeout = "5s";
      });
    });
    afterAll(() => w.stop());

    test("posts a note that a real API server accepts (<= 1024 UTF-8 bytes)", async () => {
      expect((await w.run()).code).toBe(0); // first observation: recorded
      for (const repo of repos) w.registry.push(repo, "stable");
      w.api.log.splice(0);
      const r = await w.run();
      expect(r.code).toBe(0);
      expect(r.stderr).toContain("refreshed:");
      const posts = w.api.log.filter((e) => e.method === "POST" && e.path.includes("/events"));
      const refreshed = posts.map((e) => JSON.parse(e.body ?? "{}")).find((e) => e.reason === "Refreshed");
      expect(refreshed).toBeDefined();
      // The note joins "repo → digest" pairs: cut by characters it was 1024 characters, 1044 bytes.
      expect(Buffer.byteLength(refreshed.note as string)).toBeLessThanOrEqual(NOTE_LIMIT_BYTES);
    });
  });
});
