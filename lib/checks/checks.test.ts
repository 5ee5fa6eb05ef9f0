// The compiled checks give zod's answer: the same verdict and the same output (defaults filled,
// absent keys absent) for documents near the valid ones, field by field; the committed files are
// what the generator writes; a schema the compiler does not know fails the generation.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import fc from "fast-check";
import * as z from "zod/mini";
import { generatedChecks } from "../../scripts/gen-checks.ts";
import { configSchema } from "../config-schema.ts";
import { configMapSchema } from "../kube/configmaps.ts";
import { kubeconfigSchemas } from "../kube/kubeconfig.ts";
import { managedFieldsSchema } from "../kube/managed-fields.ts";
import { workloadSchema } from "../kube/objects.ts";
import { podSchema } from "../kube/pods.ts";
import { tokenResponseSchema } from "../registry/auth.ts";
import { dockerConfigSchemas } from "../registry/credentials.ts";
import {
  checkConfig,
  checkConfigMap,
  checkDockerCfg,
  checkDockerConfig,
  checkKubeconfig,
  checkManagedFields,
  checkPod,
  checkTokenResponse,
  checkWorkload,
} from "./checks.generated.ts";
import { compileChecks } from "./compile.ts";
import { FAIL } from "./fail.ts";
import * as refinements from "./refinements.ts";

const RUNS = Number(process.env.FUZZ_RUNS ?? 3000);

const CONFIG = {
  tag: "stable",
  registry: {
    host: "registry.example:5000",
    endpoint: "https://registry.example:5000",
    insecure: false,
    dockerConfigJson: "/etc/pull/.dockerconfigjson",
    token: { realm: "https://auth.example/token", service: "registry" },
  },
  namespace: "apps",
  store: { namespace: "image-refresh", name: "image-refresh-state" },
  state: { kind: "Deployment", namespace: "apps", name: "api" },
  annotationPrefix: "image-refresh.io",
  maxRefreshAttempts: 3,
  maxSkipTicks: 8,
  maxUnresolvedTicks: 8,
  rolloutTimeout: "10m",
  requestTimeout: "15s",
  onFailure: "revert",
  reconcile: "repin",
  minimumAge: "0s",
  images: [
    {
      repository: "myorg/api",
      key: "api",
      pinned: false,
      targets: [{ kind: "Deployment", namespace: "apps", name: "api", container: "api" }],
    },
  ],
};

const KUBECONFIG = {
  "current-context": "dev",
  clusters: [
    {
      name: "dev",
      cluster: {
        server: "https://127.0.0.1:6443",
        "certificate-authority": "ca.crt",
        "certificate-authority-data": "Zm9v",
        "insecure-skip-tls-verify": false,
      },
    },
  ],
  users: [
    {
      name: "me",
      user: {
        token: "t",
        tokenFile: "/t",
        "client-certificate": "c",
        "client-certificate-data": "Yw==",
        "client-key": "k",
        "client-key-data": "aw==",
        exec: { command: "x" },
        "auth-provider": { name: "gcp" },
      },
    },
  ],
  contexts: [{ name: "dev", context: { cluster: "dev", user: "me", namespace: "apps" } }],
};

const MANAGED_FIELDS = [
  {
    manager: "kubectl-client-side-apply",
    operation: "Update",
    apiVersion: "apps/v1",
    time: "2026-11-30T10:00:00Z",
    fieldsType: "FieldsV1",
    fieldsV1: {
      "f:spec": { "f:template": { "f:spec": { "f:containers": { 'k:{"name":"api"}': { "f:image": {} } } } } },
    },
  },
  {
    manager: "kube-controller-manager",
    operation: "Update",
    subresource: "status",
    fieldsV1: { "f:status": {} },
  },
];

const CONFIG_MAP = {
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "image-refresh-state", namespace: "image-refresh", resourceVersion: "42", uid: "u" },
  data: { "refresh-attempt-api": "1", "last-refreshed-api-digest": `sha256:${"a".repeat(64)}` },
};

const WORKLOAD = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: {
    name: "api",
    namespace: "apps",
    generation: 4,
    resourceVersion: "1234",
    uid: "u-1",
    annotations: { "deployment.kubernetes.io/revision": "4" },
    managedFields: MANAGED_FIELDS,
  },
  spec: {
    replicas: 2,
    paused: false,
    updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition: 0 } },
    template: {
      spec: {
        containers: [{ name: "api", image: "myorg/api@sha256:aa", ports: [{ containerPort: 80 }] }],
        initContainers: [{ name: "init", image: "busybox" }],
      },
    },
  },
  status: {
    observedGeneration: 4,
    replicas: 2,
    updatedReplicas: 2,
    readyReplicas: 2,
    availableReplicas: 2,
    currentReplicas: 2,
    updateRevision: "r4",
    currentRevision: "r4",
    desiredNumberScheduled: 2,
    updatedNumberScheduled: 2,
    numberAvailable: 2,
    conditions: [
      { type: "Available", status: "True", reason: "MinimumReplicasAvailable", message: "ok" },
      {
        type: "Progressing",
        status: "True",
        reason: "NewReplicaSetAvailable",
        lastUpdateTime: "2026-11-30T10:00:00Z",
        lastTransitionTime: null,
      },
    ],
  },
};

/** A pod of a rollout as the kubelet shows it: one container crashing, one waiting on its pull. */
const POD = {
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name: "api-7c9f-x2k4p",
    uid: "p-1",
    labels: { app: "api", "pod-template-hash": "7c9f" },
    deletionTimestamp: null,
    ownerReferences: [{ kind: "ReplicaSet", name: "api-7c9f" }],
  },
  spec: {
    containers: [
      { name: "api", image: "myorg/api@sha256:bb", ports: [{ containerPort: 80 }] },
      { name: "sidecar", image: "envoy:1" },
    ],
  },
  status: {
    phase: "Running",
    conditions: [
      { type: "Ready", status: "False", reason: "ContainersNotReady" },
      { type: "PodScheduled", status: "True" },
    ],
    containerStatuses: [
      {
        name: "api",
        image: "myorg/api@sha256:bb",
        ready: false,
        restartCount: 3,
        state: { waiting: { reason: "CrashLoopBackOff", message: "back-off 40s" } },
        lastState: { terminated: { reason: "Error", exitCode: 1, finishedAt: "2026-12-05T10:00:00Z" } },
      },
      { name: "sidecar", image: "envoy:1", ready: true, restartCount: 0, state: { running: {} } },
    ],
  },
};

type Path = Array<string | number>;

/** Every path of a document, objects' keys and arrays' indexes alike. */
function paths(v: unknown, at: Path = []): Path[] {
  if (v === null || typeof v !== "object") return [at];
  const entries = Array.isArray(v) ? v.map((x, i) => [i, x] as const) : Object.entries(v);
  return [at, ...entries.flatMap(([k, x]) => paths(x, [...at, k]))];
}

// Values near the rules: empty and edge strings, durations, URLs, numbers at the bounds.
const NEAR = fc.constantFrom<unknown>(
  "",
  "a",
  "A",
  "-a",
  "a-",
  "a.b",
  "a_b",
  "x".repeat(63),
  "x".repeat(64),
  "x".repeat(254),
  "0s",
  "0",
  "10m",
  "1h30m",
  "500ms",
  "2d",
  "10",
  "https://x",
  "http://x/y",
  "https://u:p@x",
  "https://x y",
  "ftp://x",
  "https:x",
  "myorg/api",
  "myorg/api:tag",
  "Deployment",
  "deployment",
  "keep",
  "report",
  0,
  1,
  -1,
  1.5,
  1_000_000,
  1_000_001,
  Number.MAX_SAFE_INTEGER + 1,
  true,
  false,
  null,
  [],
  {},
);

/** The document with one path replaced, deleted, or given an extra key. */
function mutated(base: unknown): fc.Arbitrary<unknown> {
  const all = paths(base);
  const change = fc.oneof(
    fc.record({ op: fc.constant("set" as const), value: fc.oneof(NEAR, fc.jsonValue({ maxDepth: 2 })) }),
    fc.record({ op: fc.constant("delete" as const) }),
    fc.record({ op: fc.constant("extra" as const), key: fc.constantFrom("extra", "__proto__", "name") }),
  );
  return fc
    .array(fc.record({ path: fc.constantFrom(...all), change }), { minLength: 1, maxLength: 3 })
    .map((edits) => {
      let doc: unknown = structuredClone(base);
      for (const { path, change } of edits) doc = edit(doc, path, change);
      return doc;
    });
}

type Change = { op: "set"; value: unknown } | { op: "delete" } | { op: "extra"; key: string };

function edit(doc: unknown, path: Path, c: Change): unknown {
  if (path.length === 0) return c.op === "set" ? c.value : doc;
  let at = doc as Record<string | number, unknown>;
  for (const p of path.slice(0, -1)) {
    const next = at?.[p];
    if (next === null || typeof next !== "object") return doc;
    at = next as Record<string | number, unknown>;
  }
  const last = path[path.length - 1] as string | number;
  if (at === null || typeof at !== "object") return doc;
  if (c.op === "set") at[last] = c.value;
  else if (c.op === "delete") delete at[last];
  else {
    const target = at[last];
    if (target !== null && typeof target === "object" && !Array.isArray(target))
      Object.defineProperty(target, c.key, {
        value: "x",
        enumerable: true,
        configurable: true,
        writable: true,
      });
  }
  return doc;
}

function sameAnswer(check: (v: unknown) => unknown, schema: z.ZodMiniType, doc: unknown): void {
  const fast = check(doc);
  const slow = schema.safeParse(doc);
  if (slow.success !== (fast !== FAIL))
    throw new Error(
      `zod ${slow.success ? "accepts" : "refuses"} what the check does not: ${JSON.stringify(doc)}`,
    );
  if (slow.success) expect(fast).toStrictEqual(slow.data);
}

describe("the compiled config check", () => {
  test("accepts the full valid document with zod's output", () => {
    sameAnswer(checkConfig, configSchema(), CONFIG);
    expect(checkConfig(CONFIG)).not.toBe(FAIL);
  });

  test("fills the defaults as zod does, and leaves absent optional keys absent", () => {
    const minimal = { tag: "stable", registry: { host: "docker.io" }, images: CONFIG.images };
    sameAnswer(checkConfig, configSchema(), minimal);
    expect(checkConfig(minimal)).toMatchObject({ maxSkipTicks: 8, store: { name: "image-refresh-state" } });
    expect(Object.keys(checkConfig(minimal) as object)).not.toContain("namespace");
  });

  test("gives zod's verdict and output for documents one to three edits from a valid one", () => {
    fc.assert(
      fc.property(mutated(CONFIG), (doc) => sameAnswer(checkConfig, configSchema(), doc)),
      { numRuns: RUNS },
    );
  });
});

describe("the compiled kubeconfig check", () => {
  test("gives zod's verdict and output for documents one to three edits from a valid one", () => {
    sameAnswer(checkKubeconfig, kubeconfigSchemas().file, KUBECONFIG);
    sameAnswer(checkKubeconfig, kubeconfigSchemas().file, { clusters: null, users: null });
    fc.assert(
      fc.property(mutated(KUBECONFIG), (doc) => sameAnswer(checkKubeconfig, kubeconfigSchemas().file, doc)),
      { numRuns: RUNS },
    );
  });
});

const AUTHS = {
  "registry.example:5000": { auth: "dTpw" },
  "https://index.docker.io/v1/": { username: "u", password: "p", email: "e" },
};

describe("the compiled checks of API objects and registry files", () => {
  const cases: Array<[string, (v: unknown) => unknown, () => z.ZodMiniType, unknown]> = [
    ["a ConfigMap (the store)", checkConfigMap, configMapSchema, CONFIG_MAP],
    ["a workload", checkWorkload, workloadSchema, WORKLOAD],
    ["managedFields", checkManagedFields, managedFieldsSchema, MANAGED_FIELDS],
    ["a pod", checkPod, podSchema, POD],
    ["a pull secret", checkDockerConfig, () => dockerConfigSchemas().wrapped, { auths: AUTHS }],
    ["a legacy .dockercfg", checkDockerCfg, () => dockerConfigSchemas().map, AUTHS],
    [
      "a token answer",
      checkTokenResponse,
      tokenResponseSchema,
      { token: "t", access_token: "a", expires_in: 300 },
    ],
  ];
  for (const [name, check, schema, base] of cases)
    test(`${name}: zod's verdict and output for objects one to three edits from a real one`, () => {
      sameAnswer(check, schema(), base);
      expect(check(base)).not.toBe(FAIL);
      fc.assert(
        fc.property(mutated(base), (doc) => sameAnswer(check, schema(), doc)),
        { numRuns: RUNS },
      );
    });
});

/** Pods built from scratch: each field present, or (one time in ten) absent, null or of another type. */
const anyOf = <T>(arb: fc.Arbitrary<T>) =>
  fc.oneof(
    { arbitrary: arb, weight: 9 },
    { arbitrary: fc.constantFrom<unknown>(undefined, null, "", 0, -1, 1.5, true, [], {}), weight: 1 },
  );
const text = fc.constantFrom("", "a", "Ready", "True", "False", "CrashLoopBackOff", "Pending");
const GENERATED_POD = fc.record(
  {
    metadata: anyOf(
      fc.record(
        {
          name: anyOf(text),
          uid: anyOf(text),
          labels: anyOf(fc.dictionary(text, anyOf(text), { maxKeys: 3 })),
          deletionTimestamp: anyOf(text),
        },
        { requiredKeys: [] },
      ),
    ),
    spec: anyOf(
      fc.record({
        containers: anyOf(
          fc.array(anyOf(fc.record({ name: anyOf(text), image: anyOf(text) }, { requiredKeys: [] })), {
            maxLength: 3,
          }),
        ),
      }),
    ),
    status: anyOf(
      fc.record(
        {
          phase: anyOf(text),
          conditions: anyOf(
            fc.array(anyOf(fc.record({ type: anyOf(text), status: anyOf(text), reason: anyOf(text) })), {
              maxLength: 3,
            }),
          ),
          containerStatuses: anyOf(
            fc.array(
              anyOf(
                fc.record(
                  {
                    name: anyOf(text),
                    image: anyOf(text),
                    ready: anyOf(fc.boolean()),
                    restartCount: anyOf(fc.integer({ min: -1, max: 5 })),
                    state: anyOf(fc.record({ waiting: anyOf(fc.record({ reason: anyOf(text) })) })),
                    lastState: anyOf(
                      fc.record({
                        terminated: anyOf(
                          fc.record(
                            { reason: anyOf(text), exitCode: anyOf(fc.integer()), finishedAt: anyOf(text) },
                            { requiredKeys: [] },
                          ),
                        ),
                      }),
                    ),
                  },
                  { requiredKeys: [] },
                ),
              ),
              { maxLength: 3 },
            ),
          ),
        },
        { requiredKeys: [] },
      ),
    ),
  },
  { requiredKeys: [] },
);

describe("the compiled pod check", () => {
  test("gives zod's verdict and output for pods built from scratch, valid and not", () => {
    let accepted = 0;
    fc.assert(
      fc.property(GENERATED_POD, (doc) => {
        sameAnswer(checkPod, podSchema(), doc);
        if (checkPod(doc) !== FAIL) accepted++;
      }),
      { numRuns: RUNS },
    );
    // Not a test of refusals alone: a share of the generated pods is valid.
    expect(accepted).toBeGreaterThan(RUNS / 50);
  });
});

describe("the compiler", () => {
  test("the committed module is what scripts/gen-checks.ts writes (run it after changing a schema)", () => {
    for (const [path, text] of generatedChecks()) expect(readFileSync(path, "utf8")).toBe(text);
  });

  test("refuses a schema it cannot compile rather than guessing", () => {
    const cases: z.ZodMiniType[] = [
      z.tuple([z.string()]),
      z.string().check(z.refine((s) => s.length > 2)),
      z.string().check(z.regex(/a/g)),
      z._default(z.string(), () => String(Math.random())),
      z.looseObject({ a: z.string() }),
    ];
    for (const s of cases)
      expect(() => compileChecks({ X: s }, refinements)).toThrow(/not supported|JSON value/);
  });
});
