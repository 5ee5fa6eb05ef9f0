// metadata.managedFields on the simulated API server, as kube-apiserver keeps them for Update
// operations (apimachinery pkg/util/managedfields/internal): the manager's name, the entry shape
// and order, FieldsV1, how ownership moves, resets, untracked objects, and the controller's
// own entries. The product reads them with lib/kube/managed-fields.ts, used here as the reader.
import { afterAll, describe, expect, test } from "bun:test";
import { imageOwners, lastOwner } from "../../lib/kube/managed-fields.ts";
import { objectPath, readWatch } from "../../sim/apiserver/driver.ts";
import { compare, decodeFields, encodeFields } from "../../sim/apiserver/fieldset.ts";
import { type AddWorkload, startApiServer, type WorkloadKind } from "../../sim/apiserver/index.ts";
import { managerOrUserAgent } from "../../sim/apiserver/managed-fields.ts";

// A pinned clock, so a test can tell a time that moved from one that did not (whole seconds).
let clock = Date.parse("2026-03-01T10:00:00Z");
const tick = (s = 5) => {
  clock += s * 1000;
};
const at = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
const sim = await startApiServer({ stepMs: 5, now: () => new Date(clock) });
afterAll(() => sim.stop());

const SMP = "application/strategic-merge-patch+json";
const PIN = `myorg/app@sha256:${"a".repeat(64)}`;
// biome-ignore lint/suspicious/noExplicitAny: managedFields entries as the API returns them
type Entry = any;

let n = 0;
function fresh(o: Partial<AddWorkload> = {}) {
  const kind: WorkloadKind = o.kind ?? "Deployment";
  const name = `mf${++n}`;
  sim.addWorkload({
    kind,
    namespace: "apps",
    name,
    containers: [
      { name: "app", image: "myorg/app:1" },
      { name: "sidecar", image: "myorg/sidecar:1" },
    ],
    initContainers: [{ name: "init", image: "myorg/init:1" }],
    ...o,
  });
  const get = () => sim.getObject(kind, "apps", name);
  const mf = (): Entry[] => get().metadata.managedFields ?? [];
  return {
    kind,
    name,
    path: objectPath(kind, "apps", name),
    get,
    mf,
    /** The main-resource entry of a manager (Update, apps/v1). */
    entry: (manager: string): Entry | undefined => mf().find((e) => e.manager === manager && !e.subresource),
    managers: () => mf().map((e) => (e.subresource ? `${e.manager}/${e.subresource}` : e.manager)),
    owner: (c = "app", list: "containers" | "initContainers" = "containers") =>
      imageOwners(mf(), c, list).map((x) => x.manager),
  };
}

const IMAGE = (c: string, list = "containers") => [
  "f:spec",
  "f:template",
  "f:spec",
  `f:${list}`,
  `k:{"name":"${c}"}`,
  "f:image",
];
const ANNOTATION = (k: string) => ["f:metadata", "f:annotations", `f:${k}`];

function owns(e: Entry | undefined, path: string[]): boolean {
  let node = e?.fieldsV1;
  for (const pe of path) node = node?.[pe];
  return node !== undefined;
}

async function patchAs(
  path: string,
  body: unknown,
  o: { fieldManager?: string; userAgent?: string } = {},
): Promise<{ status: number; json: Entry }> {
  const query = o.fieldManager === undefined ? "" : `?fieldManager=${encodeURIComponent(o.fieldManager)}`;
  const headers: Record<string, string> = { authorization: `Bearer ${sim.token}`, "content-type": SMP };
  if (o.userAgent !== undefined) headers["user-agent"] = o.userAgent;
  const res = await fetch(`${sim.url}${path}${query}`, {
    method: "PATCH",
    headers,
    body: JSON.stringify(body),
    tls: { ca: sim.caPem },
  });
  return { status: res.status, json: await res.json() };
}

const imagePatch = (image: string, c = "app") => ({
  spec: { template: { spec: { containers: [{ name: c, image }] } } },
});

describe("the manager's name (apiserver create.go managerOrUserAgent)", () => {
  const cases: Array<[string, string | undefined, string | undefined, string]> = [
    ["fieldManager wins over the User-Agent", "image-refresh", "Bun/1.3.0", "image-refresh"],
    [
      "client-go's UA: the binary's name",
      undefined,
      "kubectl/v1.32.4 (linux/amd64) kubernetes/59526cd",
      "kubectl",
    ],
    [
      "a controller's /name suffix is dropped",
      undefined,
      "kube-controller-manager/v1.32.0 (linux/amd64) kubernetes/x/system:serviceaccount:kube-system:deployment-controller",
      "kube-controller-manager",
    ],
    ["Bun's fetch without fieldManager", undefined, "Bun/1.3.0", "Bun"],
    ["an empty fieldManager falls back to the UA", "", "image-refresh/0.1.0 (linux)", "image-refresh"],
    ["no slash: the whole UA, spaces kept", undefined, "my tool", "my tool"],
    ["non-printables are dropped", undefined, "a\tb\u0000c\u007fd/1", "abcd"],
    ["cut at 128 bytes", undefined, "x".repeat(200), "x".repeat(128)],
    ["cut at 128 bytes, never inside a character", undefined, `${"x".repeat(127)}é`, "x".repeat(127)],
    ["no UA at all", undefined, undefined, ""],
  ];
  for (const [name, fm, ua, want] of cases) test(name, () => expect(managerOrUserAgent(fm, ua)).toBe(want));

  test("over HTTPS: ?fieldManager= names the entry; without it the User-Agent does", async () => {
    const a = fresh();
    expect((await patchAs(a.path, imagePatch(PIN), { fieldManager: "image-refresh" })).status).toBe(200);
    expect(a.owner()).toEqual(["image-refresh"]);
    const b = fresh();
    await patchAs(b.path, imagePatch(PIN), { userAgent: "image-refresh/0.1.0 (linux/amd64)" });
    expect(b.owner()).toEqual(["image-refresh"]);
    const c = fresh();
    await patchAs(c.path, imagePatch(PIN)); // Bun's own User-Agent
    expect(c.owner()).toEqual(["Bun"]);
  });

  test("an invalid fieldManager is 422 Invalid PatchOptions, and nothing is written", async () => {
    const w = fresh();
    const rv = w.get().metadata.resourceVersion;
    for (const fieldManager of ["x".repeat(129), "bad\u0001name"]) {
      const r = await patchAs(w.path, imagePatch(PIN), { fieldManager });
      expect(r.status).toBe(422);
      expect(r.json).toMatchObject({
        reason: "Invalid",
        details: { group: "meta.k8s.io", kind: "PatchOptions" },
      });
      expect(r.json.details.causes[0].field).toBe("fieldManager");
    }
    expect(w.get().metadata.resourceVersion).toBe(rv);
  });
});

describe("creation seeds one entry (addWorkload `manager`)", () => {
  test("default kubectl-client-side-apply: every image, with the item's `.` and f:name", () => {
    const w = fresh();
    const e = w.entry("kubectl-client-side-apply");
    expect(e).toMatchObject({ operation: "Update", apiVersion: "apps/v1", fieldsType: "FieldsV1" });
    expect(e.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(Object.keys(e)).toEqual(["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"]);
    for (const [c, list] of [
      ["app", "containers"],
      ["sidecar", "containers"],
      ["init", "initContainers"],
    ]) {
      const item = e.fieldsV1["f:spec"]["f:template"]["f:spec"][`f:${list}`][`k:{"name":"${c}"}`];
      expect(Object.keys(item).slice(0, 3)).toEqual([".", "f:image", "f:imagePullPolicy"]);
      expect(item["f:name"]).toEqual({});
    }
    expect(w.owner("init", "initContainers")).toEqual(["kubectl-client-side-apply"]);
  });

  test("the Go zero value decides `.`: strategy and containers have none, labels and rollingUpdate do", () => {
    const spec = fresh().entry("kubectl-client-side-apply").fieldsV1["f:spec"];
    expect(spec["."]).toBeUndefined();
    expect(spec["f:selector"]).toEqual({}); // atomic in apps/v1
    expect(spec["f:strategy"]["."]).toBeUndefined();
    expect(spec["f:strategy"]["f:rollingUpdate"]["."]).toEqual({});
    expect(spec["f:template"]["f:metadata"]["f:labels"]).toEqual({ ".": {}, "f:app": {} });
    expect(spec["f:template"]["f:spec"]["f:containers"]["."]).toBeUndefined();
    expect(spec["f:template"]["f:spec"]["f:initContainers"]["."]).toEqual({});
    expect(spec["f:template"]["f:spec"]["f:securityContext"]).toEqual({});
  });

  test("manager: helm seeds a Helm-made workload", () => {
    const w = fresh({ manager: "helm", kind: "StatefulSet" });
    expect(w.managers()).toEqual(["helm", "kube-controller-manager/status"]);
    expect(w.owner()).toEqual(["helm"]);
  });

  test("manager: null leaves none, and later Updates do not start tracking (skipnonapplied.go)", () => {
    const w = fresh({ manager: null });
    expect(w.get().metadata.managedFields).toBeUndefined();
    sim.setImage(w.kind, "apps", w.name, "app", PIN, { manager: "kubectl-set" });
    sim.setAnnotations(w.kind, "apps", w.name, { "x.io/a": "1" }, { manager: "image-refresh" });
    expect(w.get().spec.template.spec.containers[0].image).toBe(PIN);
    expect(w.get().metadata.managedFields).toBeUndefined();
    expect(imageOwners(w.get().metadata.managedFields, "app")).toEqual([]); // "unknown" to the product
  });

  test("server-set fields are nobody's: the DaemonSet template generation", () => {
    const w = fresh({ kind: "DaemonSet" });
    sim.setImage("DaemonSet", "apps", w.name, "app", PIN, { manager: "kubectl-set" });
    const gen = "deprecated.daemonset.template.generation";
    expect(w.get().metadata.annotations[gen]).toBe("2");
    for (const e of w.mf()) expect(owns(e, ANNOTATION(gen))).toBe(false);
  });
});

describe("ownership moves as SMD merge/update.go does for Update", () => {
  test("a changed image moves f:image to the writer, out of every other set", () => {
    const w = fresh({ manager: "helm" });
    sim.setImage(w.kind, "apps", w.name, "app", PIN, { manager: "image-refresh" });
    expect(w.owner()).toEqual(["image-refresh"]);
    expect(owns(w.entry("helm"), IMAGE("app"))).toBe(false);
    expect(owns(w.entry("helm"), [...IMAGE("app").slice(0, -1), "f:name"])).toBe(true); // the rest stays
    expect(w.owner("sidecar")).toEqual(["helm"]);
    // Only what changed: no `.` or f:name for the item that already existed.
    const item = w.entry("image-refresh").fieldsV1["f:spec"]["f:template"]["f:spec"]["f:containers"];
    expect(item).toEqual({ 'k:{"name":"app"}': { "f:image": {} } });
  });

  test("the bookkeeping PATCH (image and annotation, fieldManager=image-refresh) yields one image-refresh entry", async () => {
    const w = fresh({ annotations: { "team.io/owner": "a" } });
    const body = {
      ...imagePatch(PIN),
      metadata: { annotations: { "image-refresh.io/refresh-attempt-api": "1" } },
    };
    await patchAs(w.path, body, { fieldManager: "image-refresh" });
    const e = w.entry("image-refresh");
    expect(e.fieldsV1["f:metadata"]).toEqual({
      "f:annotations": { "f:image-refresh.io/refresh-attempt-api": {} },
    });
    expect(owns(e, IMAGE("app"))).toBe(true);
    expect(owns(w.entry("kubectl-client-side-apply"), ANNOTATION("team.io/owner"))).toBe(true);
  });

  test("the first annotation on an object without any also owns the map itself (`.`)", () => {
    const w = fresh({ kind: "StatefulSet" }); // no controller annotation either
    sim.setAnnotations(w.kind, "apps", w.name, { "x.io/a": "1" }, { manager: "kubectl-annotate" });
    expect(w.entry("kubectl-annotate").fieldsV1["f:metadata"]["f:annotations"]).toEqual({
      ".": {},
      "f:x.io/a": {},
    });
  });

  test("re-sending an identical image moves nothing and bumps no time", () => {
    const w = fresh();
    sim.setImage(w.kind, "apps", w.name, "app", PIN, { manager: "image-refresh" });
    const before = w.get();
    tick();
    sim.setImage(w.kind, "apps", w.name, "app", PIN, { manager: "helm" });
    expect(w.owner()).toEqual(["image-refresh"]);
    expect(w.entry("helm")).toBeUndefined();
    expect(w.get()).toEqual(before); // not even a new resourceVersion
  });

  test("only the writer's time moves, and only when it changed something", () => {
    const w = fresh();
    const created = w.entry("kubectl-client-side-apply").time;
    tick();
    const t1 = at(clock);
    sim.setImage(w.kind, "apps", w.name, "app", PIN, { manager: "kubectl-set" });
    expect(w.entry("kubectl-set").time).toBe(t1);
    expect(w.entry("kubectl-client-side-apply").time).toBe(created); // losing a field is no bump
    tick();
    sim.setImage(w.kind, "apps", w.name, "sidecar", "myorg/sidecar:2", { manager: "kubectl-set" });
    expect(w.entry("kubectl-set").time).toBe(at(clock));
    expect(w.owner()).toEqual(["kubectl-set"]); // the union: its earlier field is still its own
    expect(w.owner("sidecar")).toEqual(["kubectl-set"]);
  });

  test("a manager whose set becomes empty is removed", () => {
    const w = fresh();
    sim.setImage(w.kind, "apps", w.name, "app", PIN, { manager: "kubectl-set" });
    expect(w.managers()).toContain("kubectl-set");
    sim.setImage(w.kind, "apps", w.name, "app", "myorg/app:1", { manager: "helm" });
    expect(w.managers()).not.toContain("kubectl-set");
    expect(w.owner()).toEqual(["helm"]);
  });

  test("a removed field leaves every set; a write that only removed gets no entry and no time", () => {
    const w = fresh({ kind: "StatefulSet" });
    sim.setAnnotations(w.kind, "apps", w.name, { "x.io/a": "1" }, { manager: "image-refresh" });
    tick();
    sim.setAnnotations(w.kind, "apps", w.name, { "x.io/a": null }, { manager: "kubectl-annotate" });
    expect(w.get().metadata.annotations).toBeUndefined();
    expect(w.managers()).not.toContain("image-refresh");
    expect(w.managers()).not.toContain("kubectl-annotate");
  });

  test("setImage names the container it cannot find, and writes nothing", () => {
    const w = fresh();
    const before = w.get();
    expect(() => sim.setImage(w.kind, "apps", w.name, "nope", PIN)).toThrow(
      `Cannot set the image of Deployment apps/${w.name}: no container "nope"`,
    );
    expect(w.get()).toEqual(before);
  });

  test("lastOwner reads a human's change after a Helm upgrade reverted ours", () => {
    const w = fresh({ manager: "helm" });
    sim.setImage(w.kind, "apps", w.name, "app", PIN, { manager: "image-refresh" });
    tick();
    sim.setImage(w.kind, "apps", w.name, "app", "myorg/app:1", { manager: "helm" });
    expect(lastOwner(imageOwners(w.mf(), "app"))).toEqual({
      manager: "helm",
      operation: "Update",
      time: at(clock),
    });
  });
});

describe("entries sent by the client (fieldmanager.go decodeLiveOrNew)", () => {
  for (const reset of [[{}], []]) {
    test(`managedFields: ${JSON.stringify(reset)} resets them, and tracking does not restart`, () => {
      const w = fresh();
      sim.update(w.kind, "apps", w.name, (o) => (o.metadata.managedFields = reset), {
        manager: "kubectl-edit",
      });
      expect(w.get().metadata.managedFields).toBeUndefined();
      sim.setImage(w.kind, "apps", w.name, "app", PIN, { manager: "kubectl-set" });
      expect(w.get().metadata.managedFields).toBeUndefined();
    });
  }

  test("valid entries in the write are the starting point; undecodable ones are ignored for live's", () => {
    const w = fresh();
    const forged = [
      {
        manager: "someone",
        operation: "Update",
        apiVersion: "apps/v1",
        time: "2020-01-01T00:00:00Z",
        fieldsType: "FieldsV1",
        fieldsV1: {
          "f:spec": {
            "f:template": { "f:spec": { "f:containers": { 'k:{"name":"app"}': { "f:image": {} } } } },
          },
        },
      },
    ];
    sim.update(w.kind, "apps", w.name, (o) => (o.metadata.managedFields = forged), { manager: "x" });
    expect(w.mf()).toEqual(forged); // x changed nothing else, so it has no entry
    const live = w.mf();
    const broken = [{ manager: "y", operation: "Update", fieldsType: "FieldsV2", fieldsV1: {} }];
    sim.update(w.kind, "apps", w.name, (o) => (o.metadata.managedFields = broken), { manager: "x" });
    expect(w.mf()).toEqual(live);
  });

  test("serialised order: Apply first, then Update by time (seconds), manager, then subresource", () => {
    const w = fresh({ manager: "zeta" });
    const zeta = w.entry("zeta");
    const apply = {
      ...zeta,
      manager: "kubectl",
      operation: "Apply",
      time: "2030-01-01T00:00:00Z",
      fieldsV1: { "f:spec": { "f:replicas": {} } },
    };
    sim.update(w.kind, "apps", w.name, (o) => (o.metadata.managedFields = [zeta, apply]), { manager: "x" });
    sim.setImage(w.kind, "apps", w.name, "app", PIN, { manager: "alpha" }); // same second as zeta
    tick();
    sim.setImage(w.kind, "apps", w.name, "sidecar", PIN, { manager: "aardvark" });
    expect(w.mf().map((e) => `${e.operation}:${e.manager}`)).toEqual([
      "Apply:kubectl",
      "Update:alpha",
      "Update:zeta",
      "Update:aardvark",
    ]);
  });
});

describe("more than 10 Update entries (capmanagers.go)", () => {
  // Names that sort against their age (u9 is the oldest), so "oldest" cannot pass for "first by name".
  const u = (i: number) => `u${10 - i}`;
  const us = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => u(from + i));

  test("the oldest fold into ancient-changes, which takes the newer time; later ones join it", () => {
    const w = fresh({ kind: "StatefulSet", manager: "creator" }); // creator + kube-controller-manager/status
    const created = at(clock);
    for (let i = 1; i <= 9; i++) {
      tick();
      sim.setAnnotations(w.kind, "apps", w.name, { [`x.io/k${i}`]: "v" }, { manager: u(i) });
    }
    expect(w.managers()).toEqual(["ancient-changes", ...us(1, 9)]);
    const ancient = w.entry("ancient-changes");
    expect(ancient).toMatchObject({ operation: "Update", apiVersion: "apps/v1", time: created });
    expect(ancient.subresource).toBeUndefined();
    expect(Object.keys(ancient.fieldsV1)).toEqual(["f:metadata", "f:spec", "f:status"]); // both merged
    expect(w.owner()).toEqual(["ancient-changes"]);
    tick();
    const t1 = w.entry(u(1)).time;
    sim.setAnnotations(w.kind, "apps", w.name, { "x.io/k10": "v" }, { manager: u(10) });
    expect(w.managers()).toEqual(["ancient-changes", ...us(2, 10)]);
    expect(w.entry("ancient-changes").time).toBe(t1);
    expect(owns(w.entry("ancient-changes"), ANNOTATION("x.io/k1"))).toBe(true);
  });

  test("an existing bucket takes the merge even when it is not the oldest; the oldest stays itself", () => {
    const w = fresh({ kind: "StatefulSet", manager: null });
    const entry = (manager: string, time: string, key: string) => ({
      manager,
      operation: "Update",
      apiVersion: "apps/v1",
      time,
      fieldsType: "FieldsV1",
      fieldsV1: { "f:metadata": { "f:labels": { [`f:${key}`]: {} } } },
    });
    const old = Array.from({ length: 9 }, (_, i) => entry(`o${i}`, `2020-01-0${i + 1}T00:00:00Z`, `k${i}`));
    const bucket = entry("ancient-changes", "2021-01-01T00:00:00Z", "kb");
    sim.update(w.kind, "apps", w.name, (o) => (o.metadata.managedFields = [...old, bucket]), {
      manager: "x",
    });
    sim.setAnnotations(w.kind, "apps", w.name, { "x.io/new": "v" }, { manager: "writer" });
    const managers = w.mf().map((e) => e.manager);
    expect(managers.filter((m) => m === "ancient-changes").length).toBe(1);
    expect(managers).toContain("o0");
    expect(managers).not.toContain("o1");
    expect(owns(w.entry("ancient-changes"), ["f:metadata", "f:labels", "f:k1"])).toBe(true);
    expect(w.entry("ancient-changes").time).toBe("2020-01-02T00:00:00Z");
  });
});

describe("the controller's writes stay out of the main entries", () => {
  test("a rollout's status writes and the revision annotation are kube-controller-manager/status, as the real UpdateStatus files them", async () => {
    const w = fresh();
    sim.setImage(w.kind, "apps", w.name, "app", PIN, { manager: "image-refresh" });
    const mainOf = () => w.mf().filter((e) => e.manager !== "kube-controller-manager");
    const before = mainOf();
    for (let i = 0; i < 100 && w.get().status.updatedReplicas !== 1; i++) await Bun.sleep(10);
    await Bun.sleep(50);
    expect(w.get().metadata.annotations["deployment.kubernetes.io/revision"]).toBe("2");
    expect(mainOf()).toEqual(before);
    const kcm = w.mf().filter((e) => e.manager === "kube-controller-manager");
    expect(kcm.map((e) => e.subresource ?? "")).toEqual(["status"]);
    expect(Object.keys(kcm[0].fieldsV1)).toEqual(["f:metadata", "f:status"]);
    expect(kcm[0].fieldsV1["f:metadata"]).toEqual({
      "f:annotations": { ".": {}, "f:deployment.kubernetes.io/revision": {} },
    });
    expect(kcm[0].fieldsV1["f:status"]["f:conditions"]['k:{"type":"Available"}']["."]).toEqual({});
    expect(w.owner()).toEqual(["image-refresh"]);
  });

  test("GET, LIST and watch events carry them", async () => {
    const w = fresh();
    const path = objectPath("Deployment", "apps");
    const res = await fetch(`${sim.url}${path}?fieldSelector=metadata.name=${w.name}`, {
      headers: { authorization: `Bearer ${sim.token}` },
      tls: { ca: sim.caPem },
    });
    const list = (await res.json()) as Entry;
    expect(list.items[0].metadata.managedFields).toEqual(w.mf());
    const watched = await readWatch(sim, `${path}?watch=true&fieldSelector=metadata.name=${w.name}`, {
      until: (evs) => evs.length > 0,
    });
    expect(watched.events[0]?.object.metadata.managedFields).toEqual(w.mf());
    const r = await fetch(`${sim.url}${w.path}`, {
      headers: { authorization: `Bearer ${sim.token}` },
      tls: { ca: sim.caPem },
    });
    expect(((await r.json()) as Entry).metadata.managedFields).toEqual(w.mf());
  });
});

describe("fieldset.ts: SMD's compare and FieldsV1", () => {
  test("added, modified and removed leaves; an added map or item is itself a member", () => {
    const c = compare(
      { spec: { a: 1, b: { x: 1 }, list: [1] } },
      { spec: { a: 2, c: { y: 1 }, list: [2], containers: [{ name: "n", image: "i" }] } },
    );
    const show = (s: Set<string>) => [...s].map((p) => p.split("\u0000").join(".")).sort();
    expect(show(c.modified)).toEqual(["f:spec.f:a", "f:spec.f:list"]); // an atomic list is one leaf
    expect(show(c.added)).toEqual([
      "f:spec.f:c",
      "f:spec.f:c.f:y",
      "f:spec.f:containers",
      'f:spec.f:containers.k:{"name":"n"}',
      'f:spec.f:containers.k:{"name":"n"}.f:image',
      'f:spec.f:containers.k:{"name":"n"}.f:name',
    ]);
    expect(show(c.removed)).toEqual(["f:spec.f:b", "f:spec.f:b.f:x"]);
  });

  test("ports are keyed by containerPort and protocol, in order of their values", () => {
    const ports = (ps: number[]) => ({
      spec: { ports: ps.map((p) => ({ containerPort: p, protocol: "TCP" })) },
    });
    const c = compare({ spec: {} }, ports([10, 9]));
    const trie = encodeFields(c.added) as Entry;
    expect(Object.keys(trie["f:spec"]["f:ports"])).toEqual([
      ".",
      'k:{"containerPort":9,"protocol":"TCP"}',
      'k:{"containerPort":10,"protocol":"TCP"}',
    ]);
  });

  test("encode and decode are inverse", () => {
    const trie = { "f:metadata": { "f:annotations": { ".": {}, "f:a": {} } }, "f:spec": { "f:x": {} } };
    const set = decodeFields(trie);
    expect(set && encodeFields(set)).toEqual(trie);
    expect(decodeFields({ "f:a": "not a trie" })).toBeUndefined();
    expect(decodeFields({ nonsense: {} })).toBeUndefined();
  });
});
