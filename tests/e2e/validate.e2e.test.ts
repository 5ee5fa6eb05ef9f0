// `image-refresh validate`, run as users run it: the compiled binary on a config, and on the
// output of `kubectl kustomize` for every shipped overlay, then on overlays broken one way each.
// biome-ignore-all lint/suspicious/noExplicitAny: rendered objects edited on purpose are free-form JSON
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseManifests } from "../../lib/manifests.ts";
import { K8S, renderText } from "../k8s/checks.ts";
import { runBinary } from "../support/binary.ts";
import { needTool } from "../support/tools.ts";

const dir = mkdtempSync(join(tmpdir(), "image-refresh-validate-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every directory under k8s/ with a kustomization.yaml. */
function overlays(at = K8S, rel = ""): string[] {
  const here = readdirSync(at, { withFileTypes: true });
  const own = here.some((e) => e.name === "kustomization.yaml") ? [rel] : [];
  return [
    ...own,
    ...here
      .filter((e) => e.isDirectory())
      .flatMap((e) => overlays(join(at, e.name), rel ? `${rel}/${e.name}` : e.name)),
  ];
}

// A missing kubectl is one printed line and a skip on a laptop, a failure in CI (tests/support/tools.ts).
const withKubectl = test.skipIf(needTool("kubectl", { apt: "kubernetes-client" }));

function write(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe("validate, config only", () => {
  test("a shipped config is valid: exit 0, the verdict on stdout", async () => {
    const r = await runBinary(["validate", "--config", join(K8S, "base", "config.yaml")]);
    expect(r).toMatchObject({ code: 0, stderr: "" });
    expect(r.stdout).toBe(`${join(K8S, "base", "config.yaml")}: valid (1 images, 1 workloads)\n`);
  });
  test("a bad config exits 2 naming every bad field", async () => {
    const path = write(
      "bad.yaml",
      "tag: stable\nregistry: { host: docker.io }\nstate: { kind: Job, namespace: a, name: b }\nrolloutTimeout: 10\nimages: []\n",
    );
    const r = await runBinary(["validate", "--config", path]);
    expect(r.code).toBe(2);
    expect(r.stdout).toContain("state.kind: Invalid option");
    expect(r.stdout).toContain(
      "rolloutTimeout: Invalid input: expected string, received number; durations are strings such as 10m",
    );
    expect(r.stdout).toContain("images: Too small");
  });
  test("an image's own tag and registry are checked like the top-level ones, each named by its path", async () => {
    const path = write(
      "per-image.yaml",
      [
        "tag: stable",
        "registry: { host: docker.io }",
        "store: { namespace: image-refresh }",
        "namespace: apps",
        "images:",
        "  - repository: myorg/api",
        "    tag: v2",
        "    registry: { host: ghcr.io }",
        "    targets: [{ kind: Deployment, name: api, container: api }]",
        "  - repository: myorg/agent",
        "    tag: .v2",
        "    registry: { host: r.example, endpoint: 'http://r.example' }",
        "    targets: [{ kind: Deployment, name: agent, container: agent }]",
        "",
      ].join("\n"),
    );
    const r = await runBinary(["validate", "--config", path]);
    expect(r.code).toBe(2);
    expect(r.stdout).toContain("images[1].tag: must be a valid image tag");
    const ok = write(
      "per-image-ok.yaml",
      (await Bun.file(path).text())
        .replace("tag: .v2", "tag: v2")
        .replace("endpoint: 'http://r.example'", "insecure: true, endpoint: 'http://r.example'"),
    );
    const good = await runBinary(["validate", "--config", ok]);
    expect(good).toMatchObject({ code: 0, stderr: "" });
    const plain = write("per-image-plain.yaml", (await Bun.file(ok).text()).replace("insecure: true, ", ""));
    const bad = await runBinary(["validate", "--config", plain]);
    expect(bad.code).toBe(2);
    expect(bad.stdout).toContain(
      "images[1].registry.endpoint: is plain http; set images[1].registry.insecure: true to allow it",
    );
  });
  test("$IMAGE_REFRESH_CONFIG is read as a tick reads it", async () => {
    const r = await runBinary(["validate"], { env: { IMAGE_REFRESH_CONFIG: join(dir, "missing.yaml") } });
    expect(r.code).toBe(2);
    expect(r.stdout).toContain(`Cannot read config ${join(dir, "missing.yaml")}: no such file`);
  });
});

describe("validate --manifests on every shipped overlay", () => {
  const all = overlays();
  test("there are overlays to check", () => expect(all).toContain("examples/two-deployments-and-daemonset"));
  // The base is not an installation: it renders the placeholder image on purpose.
  for (const overlay of all.filter((o) => o !== "base"))
    withKubectl(`k8s/${overlay}: exit 0`, async () => {
      const path = write(`${overlay.replaceAll("/", "-")}.yaml`, renderText(overlay));
      const r = await runBinary(["validate", "--manifests", path]);
      expect({ code: r.code, stdout: r.stdout }).toEqual({
        code: 0,
        stdout: expect.stringContaining("the Roles grant exactly what the config needs"),
      });
    });
});

withKubectl("k8s/base itself: exit 2, its CronJob still runs the placeholder image", async () => {
  const r = await runBinary(["validate", "--manifests", write("base.yaml", renderText("base"))]);
  expect(r.code).toBe(2);
  expect(r.stdout).toContain(
    "CronJob image-refresh: container image-refresh still runs the placeholder image image-refresh:set-me",
  );
});

type Obj = Record<string, any>;
const EXAMPLE = "examples/two-deployments-and-daemonset";

/** The example overlay's render, changed by `edit`, written as JSON documents (JSON is YAML). */
function broken(name: string, edit: (objects: Obj[]) => void): string {
  const objects = parseManifests(renderText(EXAMPLE)) as Obj[];
  edit(objects);
  return write(`${name}.yaml`, objects.map((o) => JSON.stringify(o)).join("\n---\n"));
}
const role = (objects: Obj[], ns: string) =>
  objects.find((o) => o.kind === "Role" && o.metadata.namespace === ns) as Obj;
const job = (objects: Obj[]) => objects.find((o) => o.kind === "CronJob") as Obj;
/** Removes the Role's rule on `resource`. */
const drop = (r: Obj, resource: string) =>
  r.rules.splice(
    r.rules.findIndex((x: { resources: string[] }) => x.resources.includes(resource)),
    1,
  );

describe("validate --manifests on broken overlays", () => {
  const CASES: Array<[string, (o: Obj[]) => void, string]> = [
    [
      "no watch",
      (o) => (role(o, "agents").rules[0].verbs = ["get", "patch", "list"]),
      "RBAC does not grant watch on daemonsets.apps/node-agent in namespace agents",
    ],
    [
      "no Events",
      (o) => drop(role(o, "apps"), "events"),
      "RBAC does not grant create on events.events.k8s.io in namespace apps",
    ],
    [
      "no Events where the DaemonSet is",
      (o) => drop(role(o, "agents"), "events"),
      "RBAC does not grant create on events.events.k8s.io in namespace agents",
    ],
    [
      "no pods",
      (o) => drop(role(o, "apps"), "pods"),
      "RBAC does not grant list, watch on pods in namespace apps",
    ],
    [
      "no create of the store",
      (o) => role(o, "image-refresh").rules.shift(),
      "RBAC does not grant create on configmaps in namespace image-refresh",
    ],
    [
      // Real RBAC never matches a create by resourceNames: its URL names no object.
      "the store's create limited by name",
      (o) => (role(o, "image-refresh").rules[0].resourceNames = ["image-refresh-state"]),
      "RBAC does not grant create on configmaps in namespace image-refresh",
    ],
    [
      "the store under another name",
      (o) => (role(o, "image-refresh").rules[1].resourceNames = ["other"]),
      "RBAC does not grant get, patch on configmaps/image-refresh-state in namespace image-refresh",
    ],
    [
      "every configmap readable",
      (o) => delete role(o, "image-refresh").rules[1].resourceNames,
      "RBAC grants more than this config needs: get, patch on configmaps in namespace image-refresh",
    ],
    [
      "an extra name",
      (o) => role(o, "apps").rules[0].resourceNames.push("db"),
      "RBAC grants more than this config needs: get, list, patch, watch on deployments.apps/db in namespace apps",
    ],
    [
      "no resourceNames",
      (o) => delete role(o, "agents").rules[0].resourceNames,
      "RBAC grants more than this config needs: get, list, patch, watch on daemonsets.apps in namespace agents",
    ],
    [
      "delete",
      (o) => role(o, "apps").rules[0].verbs.push("delete"),
      "RBAC grants more than this config needs: delete on deployments.apps/api in namespace apps",
    ],
    [
      "a ClusterRoleBinding",
      (o) =>
        o.push(
          {
            apiVersion: "rbac.authorization.k8s.io/v1",
            kind: "ClusterRole",
            metadata: { name: "read" },
            rules: [{ apiGroups: [""], resources: ["secrets"], verbs: ["get"] }],
          },
          {
            apiVersion: "rbac.authorization.k8s.io/v1",
            kind: "ClusterRoleBinding",
            metadata: { name: "read" },
            subjects: [{ kind: "ServiceAccount", name: "image-refresh", namespace: "image-refresh" }],
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "read" },
          },
        ),
      "RBAC grants more than this config needs: get on secrets in every namespace",
    ],
    [
      "a binding to another account",
      (o) =>
        ((
          o.find((x) => x.kind === "RoleBinding" && x.metadata.namespace === "agents") as Obj
        ).subjects[0].name = "other"),
      "RBAC does not grant get, list, patch, watch on daemonsets.apps/node-agent in namespace agents",
    ],
    [
      "a short deadline",
      (o) => (job(o).spec.jobTemplate.spec.activeDeadlineSeconds = 2400),
      "CronJob image-refresh: activeDeadlineSeconds 2400 does not cover ceil(2 groups / parallelism 4) × 2 workloads (the longest group) × 2 waits (onFailure: revert) × (rolloutTimeout 600s + verifyFor 120s) + 120s = 3000s",
    ],
    [
      "no deadline",
      (o) => delete job(o).spec.jobTemplate.spec.activeDeadlineSeconds,
      "activeDeadlineSeconds (unset) does not cover",
    ],
    [
      "a longer rollout timeout from the pod's env",
      (o) =>
        job(o).spec.jobTemplate.spec.template.spec.containers[0].env.push({
          name: "ROLLOUT_TIMEOUT",
          value: "15m",
        }),
      "activeDeadlineSeconds 3180 does not cover ceil(2 groups / parallelism 4) × 2 workloads (the longest group) × 2 waits (onFailure: revert) × (rolloutTimeout 900s + verifyFor 120s) + 120s = 4200s",
    ],
    [
      "parallelism 1: the groups one after another",
      (o) => {
        const cm = o.find(
          (x) => x.kind === "ConfigMap" && typeof x.data?.["config.yaml"] === "string",
        ) as Obj;
        cm.data["config.yaml"] = cm.data["config.yaml"].replace("parallelism: 4", "parallelism: 1");
      },
      "activeDeadlineSeconds 3180 does not cover ceil(2 groups / parallelism 1) × 2 workloads (the longest group) × 2 waits (onFailure: revert) × (rolloutTimeout 600s + verifyFor 120s) + 120s = 5880s",
    ],
    [
      "the placeholder image left in",
      (o) => (job(o).spec.jobTemplate.spec.template.spec.containers[0].image = "image-refresh:set-me"),
      "still runs the placeholder image image-refresh:set-me; set your own build in the overlay's images:",
    ],
    [
      "a binding to a missing Role",
      (o) => o.splice(o.indexOf(role(o, "agents")), 1),
      "a binding names Role agents/image-refresh, which the manifests do not hold",
    ],
  ];
  for (const [label, edit, want] of CASES)
    withKubectl(`${label}: exit 2, saying ${JSON.stringify(want.slice(0, 40))}…`, async () => {
      const r = await runBinary(["validate", "--manifests", broken(label.replaceAll(" ", "-"), edit)]);
      expect(r.code).toBe(2);
      expect(r.stdout).toContain(want);
    });

  withKubectl("a config given with --config is checked against the manifests", async () => {
    const r = await runBinary([
      "validate",
      "--config",
      join(K8S, "base", "config.yaml"),
      "--manifests",
      write("ex.yaml", renderText(EXAMPLE)),
    ]);
    expect(r.code).toBe(2);
    expect(r.stdout).toContain(
      "RBAC does not grant get, list, patch, watch on deployments.apps/app in namespace default",
    );
  });
  test("a manifests file that does not exist exits 2 naming it", async () => {
    const r = await runBinary(["validate", "--manifests", join(dir, "none.yaml")]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe(`Cannot check ${join(dir, "none.yaml")}: no such file\n`);
  });
});

describe("validate, the verify policy's keys", () => {
  const config = (keys: string[]) =>
    write("verify.json", JSON.stringify({ ...JSON.parse(JSON.stringify(baseConfig())), verify: { keys } }));
  const baseConfig = () => ({
    tag: "stable",
    registry: { host: "docker.io" },
    namespace: "apps",
    store: { namespace: "image-refresh", name: "image-refresh-state" },
    images: [{ repository: "myorg/api", targets: [{ kind: "Deployment", name: "api", container: "api" }] }],
  });

  test("a key file here that is not a public key: exit 2 naming the field and the file", async () => {
    const bad = write("bad.pub", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n");
    const r = await runBinary(["validate", "--config", config([bad])]);
    expect(r.code).toBe(2);
    expect(r.stdout).toContain(`verify.keys[0]: ${bad}: not an ECDSA P-256, Ed25519 or RSA public key`);
  });

  test("a key file that is not here (the CronJob's mount) is said and left to the tick", async () => {
    const r = await runBinary(["validate", "--config", config(["/etc/image-refresh/keys/release.pub"])]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("/etc/image-refresh/keys/release.pub: not here, so not checked");
  });
});
