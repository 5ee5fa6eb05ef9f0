// The shipped manifests, rendered exactly as `kubectl apply -k` would render them, checked
// offline: schema (unknown fields rejected), least-privilege RBAC derived from the config they
// carry, a Job deadline that outlasts every rollout wait, and the pod's security posture.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Config } from "../../lib/config.ts";
import { describeWith, needTool } from "../support/tools.ts";
import {
  cronJobOf,
  expectedPermissions,
  grantedPermissions,
  K8S,
  type K8sObject,
  minimumDeadline,
  render,
  shippedConfig,
} from "./checks.ts";
import { SCHEMAS } from "./schemas.ts";

// Every block renders the manifests with kubectl while tests are collected.
const describe = describeWith(needTool("kubectl", { apt: "kubernetes-client" }));

const KUSTOMIZATIONS = ["base", "examples/two-deployments-and-daemonset"];

function schemaErrors(o: K8sObject): string[] {
  const schema = SCHEMAS[`${o.apiVersion}/${o.kind}`];
  if (!schema) return [`${o.apiVersion}/${o.kind} is not a kind we ship`];
  const r = schema.safeParse(o);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
}

function serviceAccountOf(objects: K8sObject[]) {
  const job = cronJobOf(objects);
  return {
    namespace: job.metadata.namespace ?? "default",
    name: job.spec.jobTemplate.spec.template.spec.serviceAccountName ?? "default",
  };
}

for (const dir of KUSTOMIZATIONS) {
  describe(`k8s/${dir}`, () => {
    const objects = render(dir);
    const job = cronJobOf(objects);
    const pod = job.spec.jobTemplate.spec.template.spec;
    // Throws (and so fails every test here) when the product would reject the shipped config.
    const config = shippedConfig(objects, pod.containers[0]?.env);

    test("every rendered object matches its Kubernetes schema", () => {
      expect(objects.length).toBeGreaterThan(0);
      for (const o of objects)
        expect({ object: `${o.kind}/${o.metadata.name}`, errors: schemaErrors(o) }).toEqual({
          object: `${o.kind}/${o.metadata.name}`,
          errors: [],
        });
    });

    test("the service account exists where the CronJob runs", () => {
      const sa = serviceAccountOf(objects);
      expect(
        objects.some(
          (o) =>
            o.kind === "ServiceAccount" &&
            o.metadata.name === sa.name &&
            o.metadata.namespace === sa.namespace,
        ),
      ).toBe(true);
    });

    test("RBAC grants exactly what the shipped config.yaml needs", () => {
      const granted = [...grantedPermissions(objects, serviceAccountOf(objects))].sort();
      expect(granted).toEqual([...expectedPermissions(config)].sort());
      // Nothing cluster-wide, and every Role is actually bound (an unbound Role is a stale one).
      expect(objects.filter((o) => o.kind.startsWith("Cluster"))).toEqual([]);
      const roles = objects
        .filter((o) => o.kind === "Role")
        .map((o) => `${o.metadata.namespace}/${o.metadata.name}`);
      const bound = objects
        .filter((o) => o.kind === "RoleBinding")
        .map(
          (o) => `${o.metadata.namespace}/${(o as unknown as { roleRef: { name: string } }).roleRef.name}`,
        );
      expect(roles.sort()).toEqual(bound.sort());
    });

    test("the Job deadline outlasts every rollout wait plus slack", () => {
      const deadline = job.spec.jobTemplate.spec.activeDeadlineSeconds ?? 0;
      expect(deadline).toBeGreaterThan(minimumDeadline(config));
    });

    test("one tick at a time, no retries, no restarts", () => {
      expect(job.spec.concurrencyPolicy).toBe("Forbid");
      expect(job.spec.startingDeadlineSeconds).toBeGreaterThan(0);
      expect(job.spec.jobTemplate.spec.backoffLimit).toBe(0);
      expect(pod.restartPolicy).toBe("Never");
    });

    test("pod and container run unprivileged on a read-only root", () => {
      expect(pod.automountServiceAccountToken).toBe(true);
      expect(pod.securityContext).toMatchObject({
        runAsNonRoot: true,
        runAsUser: 65532,
        seccompProfile: { type: "RuntimeDefault" },
      });
      expect(pod.containers.length).toBe(1);
      for (const c of pod.containers) {
        expect(c.securityContext).toMatchObject({
          runAsNonRoot: true,
          runAsUser: 65532,
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          capabilities: { drop: ["ALL"] },
          seccompProfile: { type: "RuntimeDefault" },
        });
        expect(c.securityContext?.capabilities?.add ?? []).toEqual([]);
        expect(c.resources?.requests?.memory).toBeDefined();
        expect(c.resources?.limits?.memory).toBeDefined();
      }
    });

    test("the container reads the mounted config and carries the OTEL_* placeholders", () => {
      const c = pod.containers[0];
      const env = new Map((c?.env ?? []).map((e) => [e.name, e.value]));
      expect(env.get("IMAGE_REFRESH_CONFIG")).toBe("/etc/image-refresh/config.yaml");
      for (const name of ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_SERVICE_NAME"])
        expect(env.has(name)).toBe(true);
      const mount = c?.volumeMounts?.find((m) => m.mountPath === "/etc/image-refresh/config.yaml");
      const volume = pod.volumes?.find((v) => v.name === mount?.name);
      const cm = objects.find((o) => o.kind === "ConfigMap" && o.metadata.name === volume?.configMap?.name);
      expect(cm).toBeDefined();
      const pull = pod.volumes?.find((v) => v.secret !== undefined);
      expect(pull?.secret?.optional).toBe(true);
    });
  });
}

describe("the checks themselves catch mistakes", () => {
  const objects = render("examples/two-deployments-and-daemonset");
  const config = shippedConfig(objects);

  test("a misspelt field is rejected, not dropped", () => {
    const job = structuredClone(cronJobOf(objects)) as unknown as {
      spec: { jobTemplate: { spec: { template: { spec: Record<string, unknown> } } } };
    };
    job.spec.jobTemplate.spec.template.spec.restartPolice = "Never";
    expect(schemaErrors(job as unknown as K8sObject).join("\n")).toContain("restartPolice");
  });

  test("a bad enum value is rejected", () => {
    const job = structuredClone(cronJobOf(objects));
    (job.spec as { concurrencyPolicy: string }).concurrencyPolicy = "Forbidden";
    expect(schemaErrors(job as unknown as K8sObject).join("\n")).toContain("concurrencyPolicy");
  });

  test("a workload added to config.yaml but not to the Roles is caught", () => {
    const grown: Config = structuredClone(config);
    grown.images[0]?.targets.push({ kind: "StatefulSet", namespace: "apps", name: "db", container: "db" });
    const granted = grantedPermissions(objects, serviceAccountOf(objects));
    expect([...expectedPermissions(grown)].filter((p) => !granted.has(p))).toContain(
      "apps|apps|statefulsets|db|get",
    );
  });

  test("the store's Role: create on configmaps and get/patch on its name, nothing else", () => {
    const expected = expectedPermissions(config);
    expect([...expected].filter((p) => p.includes("configmaps")).sort()).toEqual([
      "image-refresh||configmaps|*|create",
      "image-refresh||configmaps|image-refresh-state|get",
      "image-refresh||configmaps|image-refresh-state|patch",
    ]);
    // Events go where the workloads are, so agents needs them too.
    expect(expected.has("agents|events.k8s.io|events|*|create")).toBe(true);
    const renamed: Config = { ...config, store: { namespace: "image-refresh", name: "other" } };
    const granted = grantedPermissions(objects, serviceAccountOf(objects));
    expect([...expectedPermissions(renamed)].filter((p) => !granted.has(p))).toEqual([
      "image-refresh||configmaps|other|get",
      "image-refresh||configmaps|other|patch",
    ]);
    // Unset, the store namespace is the pod's: the caller must say which.
    const podDefault: Config = { ...config, store: { name: "image-refresh-state" } };
    expect(() => expectedPermissions(podDefault)).toThrow(/store's namespace is unknown/);
    expect(expectedPermissions(podDefault, "image-refresh")).toEqual(expected);
  });

  test("list/watch on the state object alone is more than it needs", () => {
    const stateOnly: Config = { ...config, images: [] };
    expect(expectedPermissions(stateOnly).has("apps|apps|deployments|api|watch")).toBe(false);
    expect(minimumDeadline(stateOnly)).toBeLessThan(minimumDeadline(config));
  });
});

describe("the image each kustomization runs", () => {
  const imageOf = (dir: string) =>
    cronJobOf(render(dir)).spec.jobTemplate.spec.template.spec.containers[0]?.image;
  // Every kustomization under k8s/ other than the base is an overlay: the shipped examples and any
  // a user adds (docs/install-kustomize.md: k8s/overlays/<name>). A user's overlay is judged only
  // by what that page says these tests check: it sets its own image, its RBAC is exact, its
  // deadline covers the waits.
  const overlays = [...new Bun.Glob("**/kustomization.yaml").scanSync(K8S)]
    .map((p) => p.replace(/\/kustomization\.yaml$/, ""))
    .filter((d) => d !== "base");

  test("the base renders the unmistakable image-refresh:set-me, no real-looking image", () => {
    expect(imageOf("base")).toBe("image-refresh:set-me");
  });
  test("there is at least one overlay", () => {
    expect(overlays).toContain("examples/two-deployments-and-daemonset");
  });
  for (const dir of overlays) {
    test(`k8s/${dir} sets its own image: a registry, a name and a tag or digest`, () => {
      const image = imageOf(dir) ?? "";
      expect(image).not.toContain("set-me");
      expect(image).toMatch(/^[a-z0-9.-]+\.[a-z]+(:[0-9]+)?\/[a-z0-9._/-]+(:[\w.-]+|@sha256:[0-9a-f]{64})$/);
    });
    test(`k8s/${dir} keeps the RBAC exact for its config.yaml and the deadline above every wait`, () => {
      const objects = render(dir);
      const job = cronJobOf(objects);
      const config = shippedConfig(objects, job.spec.jobTemplate.spec.template.spec.containers[0]?.env);
      const granted = [...grantedPermissions(objects, serviceAccountOf(objects))].sort();
      expect(granted).toEqual([...expectedPermissions(config)].sort());
      expect(job.spec.jobTemplate.spec.activeDeadlineSeconds ?? 0).toBeGreaterThan(minimumDeadline(config));
    });
  }
  // The shipped examples' own comment lists the namespaces to create first
  // (docs/install-kustomize.md, install step 4): that sentence must stay true. It is documentation
  // of ours, not a rule for a user's overlay.
  for (const dir of overlays.filter((d) => d.startsWith("examples/")))
    test(`k8s/${dir} names every namespace it needs but does not create`, () => {
      const objects = render(dir);
      const created = new Set(objects.filter((o) => o.kind === "Namespace").map((o) => o.metadata.name));
      const used = new Set(objects.map((o) => o.metadata.namespace).filter((n): n is string => Boolean(n)));
      const text = readFileSync(join(K8S, dir, "kustomization.yaml"), "utf8");
      const line = /^# Namespaces that must exist[^:]*:([^(]*)/m.exec(text)?.[1] ?? "";
      const listed = line.split(/[,\s]+/).filter(Boolean);
      expect(listed.sort()).toEqual([...used].filter((n) => !created.has(n)).sort());
    });
});
