// The workload vocabulary: the distinct targets a tick reads.
import { describe, expect, test } from "bun:test";
import { config, shareProxy } from "../tests/support/plan-tables.ts";
import { distinctTargets } from "./workload.ts";

describe("distinctTargets", () => {
  test("every target of every image that is not pinned, each workload once, on every settled tick", () => {
    const all = ["api", "api-proxy", "node-agent"];
    expect(distinctTargets(config(), "unpinned").map((r) => r.name)).toEqual(all);
    const pinned = config((c) => (c.images[0].pinned = true));
    expect(distinctTargets(pinned, "unpinned").map((r) => r.name)).toEqual(["node-agent"]);
    expect(distinctTargets(config(shareProxy), "unpinned").map((r) => r.name)).toEqual(all);
  });
});
