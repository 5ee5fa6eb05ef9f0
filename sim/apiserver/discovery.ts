// Legacy (unaggregated) discovery documents. kubectl asks for aggregated discovery first
// and falls back to these when the answer is plain application/json, as with older servers.
import { RESOURCES } from "./objects.ts";

const WORKLOAD_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
const EVENT_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

const NAMESPACES = {
  name: "namespaces",
  singularName: "namespace",
  namespaced: false,
  kind: "Namespace",
  verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
  shortNames: ["ns"],
};

function groupVersion(name: string, version: string) {
  const gv = { groupVersion: `${name}/${version}`, version };
  return { name, versions: [gv], preferredVersion: gv };
}

const CONFIGMAPS = {
  name: "configmaps",
  singularName: "configmap",
  namespaced: true,
  kind: "ConfigMap",
  verbs: ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
  shortNames: ["cm"],
};

const event = (shortNames: boolean) => ({
  name: "events",
  singularName: "event",
  namespaced: true,
  kind: "Event",
  verbs: EVENT_VERBS,
  ...(shortNames ? { shortNames: ["ev"] } : {}),
});

function appsResources() {
  return Object.values(RESOURCES).flatMap((r) => [
    {
      name: r.plural,
      singularName: r.singular,
      namespaced: true,
      kind: r.kind,
      verbs: WORKLOAD_VERBS,
      shortNames: r.shortNames,
      categories: ["all"],
    },
    {
      name: `${r.plural}/status`,
      singularName: "",
      namespaced: true,
      kind: r.kind,
      verbs: ["get", "patch", "update"],
    },
  ]);
}

/** The discovery document for `path`, or undefined when the path is not a discovery path. */
export function discovery(path: string, serverAddress: string): unknown {
  switch (path) {
    case "/api":
      return {
        kind: "APIVersions",
        versions: ["v1"],
        serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }],
      };
    case "/apis":
      return {
        kind: "APIGroupList",
        apiVersion: "v1",
        groups: [groupVersion("apps", "v1"), groupVersion("events.k8s.io", "v1")],
      };
    case "/api/v1":
      return {
        kind: "APIResourceList",
        groupVersion: "v1",
        resources: [CONFIGMAPS, event(true), NAMESPACES],
      };
    case "/apis/apps":
      return { kind: "APIGroup", apiVersion: "v1", ...groupVersion("apps", "v1") };
    case "/apis/apps/v1":
      return {
        kind: "APIResourceList",
        apiVersion: "v1",
        groupVersion: "apps/v1",
        resources: appsResources(),
      };
    case "/apis/events.k8s.io":
      return { kind: "APIGroup", apiVersion: "v1", ...groupVersion("events.k8s.io", "v1") };
    case "/apis/events.k8s.io/v1":
      return {
        kind: "APIResourceList",
        apiVersion: "v1",
        groupVersion: "events.k8s.io/v1",
        resources: [event(false)],
      };
    case "/version":
      return {
        major: "1",
        minor: "32",
        gitVersion: "v1.32.0-image-refresh-sim",
        gitCommit: "0000000000000000000000000000000000000000",
        gitTreeState: "clean",
        buildDate: "2025-01-01T00:00:00Z",
        goVersion: "go1.23.0",
        compiler: "gc",
        platform: "linux/amd64",
      };
    default:
      return undefined;
  }
}
