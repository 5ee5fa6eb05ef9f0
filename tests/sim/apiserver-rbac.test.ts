// RBAC in the simulated API server: the request attributes kube-apiserver derives from a URL
// (requestinfo.go), allow/deny as RuleAllows decides, the exact Forbidden Status, and the real
// kubectl reading those answers as it reads a real server's.
import { beforeEach, describe, expect, test } from "bun:test";
import { call, objectPath, patch } from "../../sim/apiserver/driver.ts";
import { allowed, forbiddenStatus, type RbacRule, requestAttributes } from "../../sim/apiserver/rbac.ts";
import { kubectlFor } from "../support/kubectl.ts";
import { needTool } from "../support/tools.ts";
import { seededServer } from "./apiserver-harness.ts";

const USER = "system:serviceaccount:image-refresh:image-refresh";
const DEP = "/apis/apps/v1/namespaces/apps/deployments";

describe("request attributes", () => {
  const res = (verb: string, over: Record<string, string> = {}) => ({
    resourceRequest: true,
    verb,
    apiGroup: "apps",
    resource: "deployments",
    subresource: "",
    namespace: "apps",
    name: "",
    ...over,
  });
  const cases: Array<[string, string, string, unknown]> = [
    ["GET", `${DEP}/api`, "", res("get", { name: "api" })],
    ["HEAD", `${DEP}/api`, "", res("get", { name: "api" })],
    ["GET", DEP, "", res("list")],
    ["GET", DEP, "?fieldSelector=metadata.name%3Dapi", res("list", { name: "api" })],
    ["GET", DEP, "?fieldSelector=metadata.name%3D%3Dapi", res("list", { name: "api" })],
    ["GET", DEP, "?fieldSelector=metadata.name!%3Dapi", res("list")],
    ["GET", DEP, "?fieldSelector=status.phase%3DRunning", res("list")],
    // RequiresExactMatch finds the name term beside others, as the real server does.
    [
      "GET",
      DEP,
      "?fieldSelector=metadata.namespace%3Dapps,metadata.name%3Dapi",
      res("list", { name: "api" }),
    ],
    ["GET", DEP, "?fieldSelector=metadata.name%3Da/b", res("list")],
    ["GET", DEP, "?fieldSelector=metadata.name%3Da%3Db", res("list")],
    ["GET", DEP, "?labelSelector=app%3Dapi", res("list")],
    ["GET", DEP, "?watch=1&fieldSelector=metadata.name%3Dapi", res("watch", { name: "api" })],
    ["GET", DEP, "?watch=true", res("watch")],
    ["GET", DEP, "?watch=", res("watch")],
    ["GET", DEP, "?watch=0", res("list")],
    ["GET", DEP, "?watch=FALSE", res("list")],
    // A watch parameter on a named GET is still a get.
    ["GET", `${DEP}/api`, "?watch=1", res("get", { name: "api" })],
    ["GET", "/apis/apps/v1/watch/namespaces/apps/deployments/api", "", res("watch", { name: "api" })],
    ["PATCH", `${DEP}/api`, "", res("patch", { name: "api" })],
    ["PATCH", `${DEP}/api/status`, "", res("patch", { name: "api", subresource: "status" })],
    ["PUT", `${DEP}/api`, "", res("update", { name: "api" })],
    ["POST", DEP, "", res("create")],
    ["DELETE", `${DEP}/api`, "", res("delete", { name: "api" })],
    ["DELETE", DEP, "", res("deletecollection")],
    ["GET", "/apis/apps/v1/deployments", "", res("list", { namespace: "" })],
    [
      "POST",
      "/apis/events.k8s.io/v1/namespaces/apps/events",
      "",
      res("create", { apiGroup: "events.k8s.io", resource: "events" }),
    ],
    ["POST", "/api/v1/namespaces/apps/events", "", res("create", { apiGroup: "", resource: "events" })],
    [
      "GET",
      "/api/v1/namespaces/apps",
      "",
      res("get", { apiGroup: "", resource: "namespaces", name: "apps" }),
    ],
    [
      "PUT",
      "/api/v1/namespaces/apps/finalize",
      "",
      res("update", { apiGroup: "", resource: "namespaces", name: "apps", subresource: "finalize" }),
    ],
    ["GET", "/api/v1/namespaces", "", res("list", { apiGroup: "", resource: "namespaces", namespace: "" })],
    ...["/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1", "/version", "/openapi/v3", "/healthz"].map(
      (p): [string, string, string, unknown] => [
        "GET",
        p,
        "",
        { resourceRequest: false, verb: "get", path: p },
      ],
    ),
    ["POST", "/version", "", { resourceRequest: false, verb: "post", path: "/version" }],
  ];
  for (const [method, path, query, want] of cases)
    test(`${method} ${path}${query}`, () => {
      expect(requestAttributes(method, path, query)).toEqual(want as never);
    });
});

// The shipped example's Roles, as the RoleBindings grant them.
const RULES: RbacRule[] = [
  {
    namespace: "apps",
    apiGroups: ["apps"],
    resources: ["deployments"],
    resourceNames: ["api", "api-proxy"],
    verbs: ["get", "patch", "list", "watch"],
  },
  { namespace: "apps", apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create"] },
  {
    namespace: "agents",
    apiGroups: ["apps"],
    resources: ["daemonsets"],
    resourceNames: ["node-agent"],
    verbs: ["get", "patch", "list", "watch"],
  },
];

describe("allow and deny", () => {
  const named = "?fieldSelector=metadata.name%3Dapi";
  const cases: Array<[string, string, string, RbacRule[], boolean]> = [
    ["GET", `${DEP}/api`, "", RULES, true],
    ["PATCH", `${DEP}/api-proxy`, "", RULES, true],
    ["GET", `${DEP}/other`, "", RULES, false],
    ["PUT", `${DEP}/api`, "", RULES, false],
    ["DELETE", `${DEP}/api`, "", RULES, false],
    ["GET", DEP, named, RULES, true],
    ["GET", DEP, `${named}&watch=1`, RULES, true],
    // Name-restricted list/watch rules need the name in a field selector.
    ["GET", DEP, "", RULES, false],
    ["GET", DEP, "?watch=1", RULES, false],
    ["GET", DEP, "?labelSelector=app%3Dapi", RULES, false],
    // A Role grants in its own namespace only.
    ["GET", "/apis/apps/v1/namespaces/agents/deployments/api", "", RULES, false],
    ["GET", "/apis/apps/v1/deployments", named, RULES, false],
    ["GET", "/apis/apps/v1/namespaces/agents/daemonsets/node-agent", "", RULES, true],
    ["GET", "/apis/apps/v1/namespaces/apps/daemonsets/node-agent", "", RULES, false],
    // Subresources are resources of their own.
    ["PATCH", `${DEP}/api/status`, "", RULES, false],
    // Events: create in the state object's namespace only, in the granted group only.
    ["POST", "/apis/events.k8s.io/v1/namespaces/apps/events", "", RULES, true],
    ["POST", "/apis/events.k8s.io/v1/namespaces/agents/events", "", RULES, false],
    ["POST", "/api/v1/namespaces/apps/events", "", RULES, false],
    ["GET", "/apis/events.k8s.io/v1/namespaces/apps/events", "", RULES, false],
    // Discovery is open to every authenticated user; other non-resource URLs are not.
    ["GET", "/apis/apps/v1", "", [], true],
    ["GET", "/version", "", [], true],
    ["GET", "/metrics", "", [], false],
    ["POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "", [], true],
    // Wildcards.
    [
      "DELETE",
      `${DEP}/x`,
      "",
      [{ namespace: "apps", apiGroups: ["*"], resources: ["*"], verbs: ["*"] }],
      true,
    ],
    [
      "GET",
      "/api/v1/namespaces/x/pods",
      "",
      [{ apiGroups: ["*"], resources: ["*"], verbs: ["get", "list"] }],
      true,
    ],
    ["GET", "/api/v1/nodes", "", [{ apiGroups: [""], resources: ["*"], verbs: ["list"] }], true],
    [
      "PATCH",
      `${DEP}/api/status`,
      "",
      [{ apiGroups: ["apps"], resources: ["*/status"], verbs: ["patch"] }],
      true,
    ],
    ["PATCH", `${DEP}/api`, "", [{ apiGroups: ["apps"], resources: ["*/status"], verbs: ["patch"] }], false],
    ["GET", `${DEP}/api`, "", [{ apiGroups: [""], resources: ["deployments"], verbs: ["get"] }], false],
    [
      "GET",
      `${DEP}/api`,
      "",
      [{ apiGroups: ["apps"], resources: ["deployments"], resourceNames: [], verbs: ["get"] }],
      true,
    ],
  ];
  for (const [method, path, query, rules, want] of cases)
    test(`${want ? "allows" : "denies"} ${method} ${path}${query}${rules === RULES ? "" : ` with ${JSON.stringify(rules)}`}`, () => {
      expect(allowed(rules, requestAttributes(method, path, query))).toBe(want);
    });
});

describe("the Forbidden Status", () => {
  const status = (method: string, path: string, query = "") =>
    forbiddenStatus(requestAttributes(method, path, query), USER);
  const cases: Array<[string, string, string, { message: string; details: object }]> = [
    [
      "PATCH",
      `${DEP}/api`,
      "",
      {
        message: `deployments.apps "api" is forbidden: User "${USER}" cannot patch resource "deployments" in API group "apps" in the namespace "apps"`,
        details: { name: "api", group: "apps", kind: "deployments" },
      },
    ],
    [
      "GET",
      DEP,
      "",
      {
        message: `deployments.apps is forbidden: User "${USER}" cannot list resource "deployments" in API group "apps" in the namespace "apps"`,
        details: { group: "apps", kind: "deployments" },
      },
    ],
    [
      "GET",
      DEP,
      "?watch=1&fieldSelector=metadata.name%3Dweb",
      {
        message: `deployments.apps "web" is forbidden: User "${USER}" cannot watch resource "deployments" in API group "apps" in the namespace "apps"`,
        details: { name: "web", group: "apps", kind: "deployments" },
      },
    ],
    [
      "POST",
      "/api/v1/namespaces/agents/events",
      "",
      {
        message: `events is forbidden: User "${USER}" cannot create resource "events" in API group "" in the namespace "agents"`,
        details: { kind: "events" },
      },
    ],
    [
      "POST",
      "/apis/events.k8s.io/v1/namespaces/agents/events",
      "",
      {
        message: `events.events.k8s.io is forbidden: User "${USER}" cannot create resource "events" in API group "events.k8s.io" in the namespace "agents"`,
        details: { group: "events.k8s.io", kind: "events" },
      },
    ],
    [
      "PATCH",
      `${DEP}/api/status`,
      "",
      {
        message: `deployments.apps "api" is forbidden: User "${USER}" cannot patch resource "deployments/status" in API group "apps" in the namespace "apps"`,
        details: { name: "api", group: "apps", kind: "deployments" },
      },
    ],
    [
      "GET",
      "/api/v1/nodes",
      "",
      {
        message: `nodes is forbidden: User "${USER}" cannot list resource "nodes" in API group "" at the cluster scope`,
        details: { kind: "nodes" },
      },
    ],
    ["GET", "/metrics", "", { message: `forbidden: User "${USER}" cannot get path "/metrics"`, details: {} }],
  ];
  for (const [method, path, query, want] of cases)
    test(`${method} ${path}${query}`, () => {
      expect(status(method, path, query)).toEqual({
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        reason: "Forbidden",
        code: 403,
        ...want,
      } as never);
    });
});

const { sim } = await seededServer({ stepMs: 20 });
beforeEach(() => sim.setRbac({ user: USER, rules: RULES }));

describe("over HTTPS", () => {
  const api = objectPath("Deployment", "apps", "api");
  const db = objectPath("StatefulSet", "apps", "db");

  test("an allowed request is served as without RBAC", async () => {
    const r = await call(sim, api);
    expect(r.status).toBe(200);
    expect(r.json.metadata.name).toBe("api");
  });

  test("a denied request gets the Status as JSON and is logged with its 403", async () => {
    const r = await patch(sim, db, "application/merge-patch+json", { metadata: { labels: { a: "b" } } });
    expect(r.status).toBe(403);
    expect(r.headers.get("content-type")).toBe("application/json");
    expect(r.json).toEqual(forbiddenStatus(requestAttributes("PATCH", db, ""), USER) as never);
    expect(r.json.message).toBe(
      `statefulsets.apps "db" is forbidden: User "${USER}" cannot patch resource "statefulsets" in API group "apps" in the namespace "apps"`,
    );
    expect(sim.log.map((e) => [e.method, e.path, e.status])).toEqual([["PATCH", db, 403]]);
    expect(sim.getObject("StatefulSet", "apps", "db").metadata.labels?.a).toBeUndefined();
  });

  test("a named watch is allowed, an unnamed one is not", async () => {
    const named = await call(sim, `${DEP}?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Dapi`);
    expect(named.status).toBe(200);
    const all = await call(sim, `${DEP}?watch=1&timeoutSeconds=1`);
    expect(all.status).toBe(403);
    expect(all.json.message).toStartWith("deployments.apps is forbidden:");
  });

  test("authentication comes first: a wrong token is 401, not 403", async () => {
    const r = await call(sim, db, { token: "wrong" });
    expect(r.status).toBe(401);
  });

  test("a denied request does not consume the fault meant for the server behind the filter", async () => {
    sim.faults.add({ path: db, times: 1, fault: { type: "status", code: 503 } });
    expect((await call(sim, db)).status).toBe(403);
    sim.setRbac(undefined);
    expect((await call(sim, db)).status).toBe(503);
    expect((await call(sim, db)).status).toBe(200);
  });

  test("discovery stays open with no rules at all", async () => {
    sim.setRbac({ user: USER, rules: [] });
    for (const p of ["/api", "/api/v1", "/apis", "/apis/apps/v1", "/apis/events.k8s.io/v1"])
      expect([p, (await call(sim, p)).status]).toEqual([p, 200]);
    expect((await call(sim, api)).status).toBe(403);
  });
});

const noKubectl = needTool("kubectl", { apt: "kubernetes-client" });
describe.skipIf(noKubectl)("kubectl against the RBAC-enforcing simulator", () => {
  const kubectl = kubectlFor(sim, "sim-rbac-kubectl-");

  test("get of a granted name succeeds", async () => {
    const r = await kubectl("get", "deployment", "api", "-n", "apps", "-o", "name");
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(r.out.trim()).toBe("deployment.apps/api");
  });

  test("a list without a name is kubectl's Forbidden error", async () => {
    const r = await kubectl("get", "deployments", "-n", "apps");
    expect(r.code).toBe(1);
    expect(r.err).toContain(
      `Error from server (Forbidden): deployments.apps is forbidden: User "${USER}" cannot list resource "deployments" in API group "apps" in the namespace "apps"`,
    );
  });

  test("a name outside resourceNames is kubectl's Forbidden error", async () => {
    const r = await kubectl("get", "statefulset", "db", "-n", "apps");
    expect(r.code).toBe(1);
    expect(r.err).toContain(
      `Error from server (Forbidden): statefulsets.apps "db" is forbidden: User "${USER}" cannot get resource "statefulsets" in API group "apps" in the namespace "apps"`,
    );
  });

  test("rollout status needs only the named list and watch the Role grants", async () => {
    const r = await kubectl("rollout", "status", "deployment/api", "-n", "apps", "--timeout=20s");
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(r.out).toContain('deployment "api" successfully rolled out');
    const reads = sim.log.filter((e) => e.path.startsWith(DEP)).map((e) => e.status);
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.every((s) => s === 200)).toBe(true);
  });
});
