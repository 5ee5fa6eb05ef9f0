// Who owns a container's image in managedFields: shapes as kube-apiserver serialises them
// (FieldsV1 per apimachinery pkg/apis/meta/v1/fieldsv1.go and structured-merge-diff
// fieldpath/serialize.go; argo-cd controller/testdata/live-deployment.yaml is a real one).
import { expect, test } from "bun:test";
import { annotationOwners, FIELD_MANAGER, imageOwners, lastOwner } from "./managed-fields.ts";

const image = (name: string, extra: Record<string, unknown> = {}) => ({
  "f:spec": {
    "f:template": {
      "f:spec": {
        "f:containers": { [`k:{"name":"${name}"}`]: { ".": {}, "f:image": {}, ...extra } },
      },
    },
  },
});
const entry = (manager: string, fieldsV1: unknown, more: Record<string, unknown> = {}) => ({
  manager,
  operation: "Update",
  apiVersion: "apps/v1",
  time: "2026-12-01T10:00:00Z",
  fieldsType: "FieldsV1",
  fieldsV1,
  ...more,
});

test("the manager whose set holds f:image of the named container owns it", () => {
  const mf = [
    entry("kube-controller-manager", { "f:status": { "f:replicas": {} } }, { subresource: "status" }),
    entry("helm", image("sidecar")),
    entry("kubectl-set", image("api"), { time: "2026-12-01T11:00:00Z" }),
  ];
  expect(imageOwners(mf, "api")).toEqual([
    { manager: "kubectl-set", operation: "Update", time: "2026-12-01T11:00:00Z" },
  ]);
  expect(imageOwners(mf, "sidecar").map((o) => o.manager)).toEqual(["helm"]);
  expect(imageOwners(mf, "other")).toEqual([]);
});

test("owning the list item's existence is not owning its image", () => {
  const mf = [
    entry("kubectl-client-side-apply", {
      "f:spec": {
        "f:template": { "f:spec": { "f:containers": { 'k:{"name":"api"}': { ".": {}, "f:name": {} } } } },
      },
    }),
  ];
  expect(imageOwners(mf, "api")).toEqual([]);
});

test("init containers are their own list", () => {
  const mf = [
    entry("helm", {
      "f:spec": {
        "f:template": { "f:spec": { "f:initContainers": { 'k:{"name":"migrate"}': { "f:image": {} } } } },
      },
    }),
  ];
  expect(imageOwners(mf, "migrate")).toEqual([]);
  expect(imageOwners(mf, "migrate", "initContainers").map((o) => o.manager)).toEqual(["helm"]);
});

test("an atomic containers list (no item keys) is owned as a whole", () => {
  const mf = [
    entry("rollouts-controller", { "f:spec": { "f:template": { "f:spec": { "f:containers": {} } } } }),
  ];
  expect(imageOwners(mf, "api").map((o) => o.manager)).toEqual(["rollouts-controller"]);
});

test("shared Apply ownership lists every owner; the newest is the one a human reads", () => {
  const mf = [
    entry("helm", image("api"), { operation: "Apply", time: "2026-12-01T09:00:00Z" }),
    entry(FIELD_MANAGER, image("api"), { operation: "Apply", time: "2026-12-01T12:00:00Z" }),
  ];
  const owners = imageOwners(mf, "api");
  expect(owners.map((o) => o.manager)).toEqual(["helm", FIELD_MANAGER]);
  expect(lastOwner(owners)?.manager).toBe(FIELD_MANAGER);
  expect(lastOwner([])).toBeUndefined();
});

test("absent, reset or malformed managedFields name nobody, never a guess", () => {
  for (const mf of [undefined, null, [], [{}], "x", [{ manager: 3 }], [entry("x", "not a trie")]])
    expect(imageOwners(mf, "api")).toEqual([]);
  // A key whose JSON does not parse is skipped, not thrown.
  const bad = [
    entry("x", { "f:spec": { "f:template": { "f:spec": { "f:containers": { "k:{bad": {} } } } } }),
  ];
  expect(imageOwners(bad, "api")).toEqual([]);
  // Key fields in another spelling order still match by name.
  const spaced = [
    entry("kubectl-edit", {
      "f:spec": {
        "f:template": { "f:spec": { "f:containers": { 'k:{ "name" : "api" }': { "f:image": {} } } } },
      },
    }),
  ];
  expect(imageOwners(spaced, "api").map((o) => o.manager)).toEqual(["kubectl-edit"]);
});

test("an annotation is owned by the last manager that changed its value, as a rollout undo does", () => {
  const annotations = (...names: string[]) => ({
    "f:metadata": { "f:annotations": { ".": {}, ...Object.fromEntries(names.map((n) => [`f:${n}`, {}])) } },
  });
  const digest = "image-refresh.io/last-refreshed-api-digest";
  const mf = [
    entry(FIELD_MANAGER, annotations("image-refresh.io/last-refreshed-node-agent-digest")),
    entry("kube-controller-manager", annotations("deployment.kubernetes.io/revision")),
    entry("kubectl", { ...annotations(digest), ...image("api") }, { time: "2026-12-01T12:00:00Z" }),
  ];
  const agent = "image-refresh.io/last-refreshed-node-agent-digest";
  expect(annotationOwners(mf, [digest, agent])).toEqual({
    [digest]: [{ manager: "kubectl", operation: "Update", time: "2026-12-01T12:00:00Z" }],
    [agent]: [{ manager: FIELD_MANAGER, operation: "Update", time: "2026-12-01T10:00:00Z" }],
  });
  // Owning the annotations map itself ("."), or another key, is not owning this one.
  expect(annotationOwners([entry("helm", annotations("other"))], [digest])).toEqual({ [digest]: [] });
  expect(annotationOwners(undefined, [digest])).toEqual({ [digest]: [] });
});
