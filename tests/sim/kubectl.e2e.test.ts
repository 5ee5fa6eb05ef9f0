// The real kubectl (Go's strict TLS verifier, client-go's watch and patch code) against the
// simulated API server. Where the two disagree, the simulator is wrong.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ControllerMode, startApiServer, type WorkloadKind } from "../../sim/apiserver/index.ts";
import { KUBECTL, kubectlFor } from "../support/kubectl.ts";
import { needTool } from "../support/tools.ts";

const noKubectl = needTool("kubectl", { apt: "kubernetes-client" });

const sim = await startApiServer({ stepMs: 20 });
afterAll(() => sim.stop());
const kubectl = kubectlFor(sim, "sim-kubectl-");
const dir = mkdtempSync(join(tmpdir(), "sim-kubectl-other-"));

const RESOURCE: Record<WorkloadKind, string> = {
  Deployment: "deployment",
  DaemonSet: "daemonset",
  StatefulSet: "statefulset",
};
let n = 0;
function fresh(kind: WorkloadKind, mode: ControllerMode = "healthy") {
  const name = `k${++n}`;
  sim.addWorkload({
    kind,
    namespace: "apps",
    name,
    mode,
    replicas: 2,
    containers: [
      { name: "app", image: "myorg/app:1" },
      { name: "sidecar", image: "myorg/sidecar:1" },
    ],
    initContainers: [{ name: "init", image: "myorg/init:1" }],
  });
  return { name, ref: `${RESOURCE[kind]}/${name}`, get: () => sim.getObject(kind, "apps", name) };
}

const KINDS: WorkloadKind[] = ["Deployment", "DaemonSet", "StatefulSet"];

describe.skipIf(noKubectl)("kubectl get", () => {
  for (const kind of KINDS) {
    test(`${kind}: get -o json returns the stored object over verified TLS`, async () => {
      const w = fresh(kind);
      const r = await kubectl("get", w.ref, "-o", "json", "--show-managed-fields");
      expect(r.err).toBe("");
      expect(r.code).toBe(0);
      expect(JSON.parse(r.out)).toEqual(w.get());
      // Without the flag kubectl drops managedFields client-side; nothing else differs.
      const { managedFields, ...metadata } = w.get().metadata;
      expect(managedFields.length).toBeGreaterThan(0);
      const plain = await kubectl("get", w.ref, "-o", "json");
      expect(JSON.parse(plain.out)).toEqual({ ...w.get(), metadata });
    });
  }

  test("a missing object is kubectl's NotFound text", async () => {
    const r = await kubectl("get", "deployment/nope", "-o", "json");
    expect(r.code).toBe(1);
    expect(r.err).toContain('Error from server (NotFound): deployments.apps "nope" not found');
  });

  test("a wrong token is rejected as Unauthorized", async () => {
    const bad = join(dir, "bad-kubeconfig");
    writeFileSync(bad, sim.kubeconfig({ token: "wrong" }));
    const p = Bun.spawn(
      [KUBECTL, "--kubeconfig", bad, "--cache-dir", mkdtempSync(join(dir, "c-")), "get", "deployment/x"],
      {
        stdin: "ignore", // with a terminal, kubectl would prompt for a username after a 401
        stdout: "pipe",
        stderr: "pipe",
      },
    );
    const [err, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
    expect(code).not.toBe(0);
    // What kubectl 1.32 prints against a real server too: discovery fails first with the 401.
    expect(err).toContain(
      "error: You must be logged in to the server (the server has asked for the client to provide credentials)",
    );
  });
});

describe.skipIf(noKubectl)("kubectl annotate", () => {
  for (const kind of KINDS) {
    test(`${kind}: set, overwrite, remove`, async () => {
      const w = fresh(kind);
      const gen = w.get().metadata.generation;
      expect((await kubectl("annotate", w.ref, "image-refresh.io/refresh-attempt=1")).code).toBe(0);
      expect(w.get().metadata.annotations["image-refresh.io/refresh-attempt"]).toBe("1");
      const refused = await kubectl("annotate", w.ref, "image-refresh.io/refresh-attempt=2");
      expect(refused.code).not.toBe(0); // kubectl itself refuses to overwrite without --overwrite
      expect(
        (await kubectl("annotate", "--overwrite", w.ref, "image-refresh.io/refresh-attempt=2")).code,
      ).toBe(0);
      expect(w.get().metadata.annotations["image-refresh.io/refresh-attempt"]).toBe("2");
      expect((await kubectl("annotate", w.ref, "image-refresh.io/refresh-attempt-")).code).toBe(0);
      expect(w.get().metadata.annotations?.["image-refresh.io/refresh-attempt"]).toBeUndefined();
      // Three annotation writes: generation +3 on a Deployment, unchanged on the others.
      expect(w.get().metadata.generation).toBe(kind === "Deployment" ? gen + 3 : gen);
    });
  }
});

describe.skipIf(noKubectl)("kubectl set image and rollout restart", () => {
  for (const kind of KINDS) {
    test(`${kind}: set image changes only the named containers (init included)`, async () => {
      const w = fresh(kind);
      const r = await kubectl(
        "set",
        "image",
        w.ref,
        `app=myorg/app@sha256:${"a".repeat(64)}`,
        "init=myorg/init:2",
      );
      expect(r.err).toBe("");
      expect(r.out).toContain("image updated");
      const spec = w.get().spec.template.spec;
      expect(spec.containers.map((c: { image: string }) => c.image)).toEqual([
        `myorg/app@sha256:${"a".repeat(64)}`,
        "myorg/sidecar:1",
      ]);
      expect(spec.initContainers[0].image).toBe("myorg/init:2");
      expect(w.get().metadata.generation).toBe(2);
    });

    test(`${kind}: rollout restart stamps restartedAt on the template`, async () => {
      const w = fresh(kind);
      const r = await kubectl("rollout", "restart", w.ref);
      expect(r.code).toBe(0);
      expect(r.out).toContain("restarted");
      expect(w.get().spec.template.metadata.annotations["kubectl.kubernetes.io/restartedAt"]).toMatch(
        /^\d{4}-\d\d-\d\dT/,
      );
      expect(w.get().metadata.generation).toBe(2);
    });
  }

  test("set image for an unknown container fails client-side, with no PATCH", async () => {
    const w = fresh("Deployment");
    sim.clearLog();
    const r = await kubectl("set", "image", w.ref, "nope=x:1");
    expect(r.code).not.toBe(0);
    expect(r.err).toContain('unable to find container named "nope"');
    expect(sim.log.filter((e) => e.method === "PATCH")).toEqual([]);
  });
});

describe.skipIf(noKubectl)("kubectl rollout status", () => {
  const success: Record<WorkloadKind, RegExp> = {
    Deployment: /deployment "k\d+" successfully rolled out/,
    DaemonSet: /daemon set "k\d+" successfully rolled out/,
    StatefulSet: /partitioned roll out complete: 2 new pods have been updated/,
  };
  for (const kind of KINDS) {
    test(`${kind} healthy: waits through the rollout, exits 0 with the success text`, async () => {
      const w = fresh(kind);
      expect((await kubectl("set", "image", w.ref, "app=myorg/app:2")).code).toBe(0);
      const r = await kubectl("rollout", "status", w.ref, "--timeout=10s");
      expect(r.err).toBe("");
      expect(r.code).toBe(0);
      expect(r.out).toMatch(success[kind]);
    });

    test(`${kind} flap: times out`, async () => {
      const w = fresh(kind, "flap");
      expect((await kubectl("set", "image", w.ref, "app=myorg/app:2")).code).toBe(0);
      const r = await kubectl("rollout", "status", w.ref, "--timeout=2s");
      expect(r.code).not.toBe(0);
      expect(r.err).toContain("timed out waiting for the condition");
      expect(r.out).toContain("Waiting for");
    });
  }

  test("Deployment deadline: fails with `exceeded its progress deadline`", async () => {
    const w = fresh("Deployment", "deadline");
    expect((await kubectl("set", "image", w.ref, "app=myorg/app:2")).code).toBe(0);
    const r = await kubectl("rollout", "status", w.ref, "--timeout=10s");
    expect(r.code).toBe(1);
    expect(r.err).toContain(`error: deployment "${w.name}" exceeded its progress deadline`);
  });

  test("unsettled without any change: kubectl waits and times out", async () => {
    const w = fresh("Deployment");
    sim.setMode("Deployment", "apps", w.name, "unsettled");
    const r = await kubectl("rollout", "status", w.ref, "--timeout=1s");
    expect(r.code).not.toBe(0);
    expect(r.out).toContain(`Waiting for deployment "${w.name}" rollout to finish`);
  });

  test("a deleted object ends the watch with kubectl's error", async () => {
    const w = fresh("Deployment", "flap");
    expect((await kubectl("set", "image", w.ref, "app=myorg/app:2")).code).toBe(0);
    setTimeout(() => sim.deleteObject("Deployment", "apps", w.name), 1000);
    const r = await kubectl("rollout", "status", w.ref, "--timeout=10s");
    expect(r.code).not.toBe(0);
    expect(r.err).toContain("object has been deleted");
  });
});
