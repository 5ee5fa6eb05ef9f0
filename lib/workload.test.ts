// The workload vocabulary: the distinct targets a tick reads, and the kind table.
import { describe, expect, test } from "bun:test";
import { RESOURCES } from "../sim/apiserver/objects.ts";
import { config, shareProxy } from "../tests/support/plan-tables.ts";
import {
  apiRootOf,
  apiVersionOf,
  distinctTargets,
  nameAttribute,
  WORKLOAD_KIND_TABLE,
  WORKLOAD_KINDS,
} from "./workload.ts";

describe("distinctTargets", () => {
  test("every target of every image that is not pinned, each workload once, on every settled tick", () => {
    const all = ["api", "api-proxy", "node-agent"];
    expect(distinctTargets(config(), "unpinned").map((r) => r.name)).toEqual(all);
    const pinned = config((c) => (c.images[0].pinned = true));
    expect(distinctTargets(pinned, "unpinned").map((r) => r.name)).toEqual(["node-agent"]);
    expect(distinctTargets(config(shareProxy), "unpinned").map((r) => r.name)).toEqual(all);
  });
});

describe("the kind table", () => {
  test("each row's group and resource are the ones the simulated server serves its kind under", () => {
    const ours: string[][] = WORKLOAD_KINDS.map((k) => [
      k,
      WORKLOAD_KIND_TABLE[k].group,
      WORKLOAD_KIND_TABLE[k].plural,
    ]);
    const served = WORKLOAD_KINDS.map((k) => [k, RESOURCES[k].group, RESOURCES[k].plural]);
    expect(ours).toEqual(served);
  });

  test("a Deployment's apiVersion, API root, rollout noun and name attribute", () => {
    const d = WORKLOAD_KIND_TABLE.Deployment;
    expect([
      apiVersionOf("Deployment"),
      apiRootOf("Deployment"),
      d.rolloutNoun,
      nameAttribute("Deployment"),
    ]).toEqual(["apps/v1", "/apis/apps/v1", "deployment", "k8s.deployment.name"]);
  });
});
