// JSON Patch (RFC 6902) on the simulated API server, with the evanphx/json-patch v4 quirks
// and the generic 422 that apiserver handlers/patch.go answers for any failed operation (the
// engine's message discarded; kubernetes/kubernetes#79210).
import { afterAll, describe, expect, test } from "bun:test";
import { patch, workloadMaker } from "../../sim/apiserver/driver.ts";
import { startApiServer } from "../../sim/apiserver/index.ts";

const sim = await startApiServer({ stepMs: 5 });
afterAll(() => sim.stop());

const JSONP = "application/json-patch+json";
/** A fresh workload per test so tests never see each other's writes. */
const fresh = workloadMaker(sim);

describe("JSON patch (RFC 6902, evanphx v4)", () => {
  const invalid = {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message: "the server rejected our request due to an error in our request",
    reason: "Invalid",
    details: {},
    code: 422,
  };
  // biome-ignore lint/suspicious/noExplicitAny: reads decoded API JSON
  const ok: Array<[string, unknown[], (o: any) => unknown, unknown]> = [
    [
      "add of an escaped annotation key",
      [{ op: "add", path: "/metadata/annotations/x.io~1a", value: "1" }],
      (o) => o.metadata.annotations["x.io/a"],
      "1",
    ],
    [
      "~0 and ~1 unescape in that order",
      [{ op: "add", path: "/metadata/annotations/a~01b", value: "v" }],
      (o) => o.metadata.annotations["a~1b"],
      "v",
    ],
    [
      "replace of a container image after a test of its name",
      [
        { op: "test", path: "/spec/template/spec/containers/0/name", value: "app" },
        { op: "replace", path: "/spec/template/spec/containers/0/image", value: "myorg/app:9" },
      ],
      (o) => o.spec.template.spec.containers[0].image,
      "myorg/app:9",
    ],
    [
      "remove",
      [{ op: "remove", path: "/metadata/annotations/keep.io~1x" }],
      (o) => o.metadata.annotations?.["keep.io/x"],
      undefined,
    ],
    [
      "move",
      [{ op: "move", from: "/metadata/annotations/keep.io~1x", path: "/metadata/annotations/moved" }],
      (o) => [o.metadata.annotations.moved, o.metadata.annotations["keep.io/x"]],
      ["1", undefined],
    ],
    [
      "copy",
      [{ op: "copy", from: "/metadata/annotations/keep.io~1x", path: "/metadata/annotations/copied" }],
      (o) => o.metadata.annotations.copied,
      "1",
    ],
    [
      "add with - appends",
      [{ op: "add", path: "/spec/template/spec/containers/-", value: { name: "new", image: "n:1" } }],
      (o) => o.spec.template.spec.containers.length,
      3,
    ],
    [
      "test of a missing member with null passes",
      [
        { op: "test", path: "/metadata/annotations/missing", value: null },
        { op: "add", path: "/metadata/annotations/t", value: "1" },
      ],
      (o) => o.metadata.annotations.t,
      "1",
    ],
    [
      "replace of a missing member acts as add (v4 quirk)",
      [{ op: "replace", path: "/metadata/annotations/fresh", value: "1" }],
      (o) => o.metadata.annotations.fresh,
      "1",
    ],
  ];
  for (const [name, ops, read, want] of ok) {
    test(name, async () => {
      const w = fresh("Deployment", { "keep.io/x": "1" });
      const r = await patch(sim, w.path, JSONP, ops);
      expect(r.status).toBe(200);
      expect(read(r.json)).toEqual(want);
    });
  }

  const failing: Array<[string, unknown[]]> = [
    ["a failed test", [{ op: "test", path: "/metadata/annotations/keep.io~1x", value: "2" }]],
    [
      "a test of the resourceVersion (422, not 409)",
      [{ op: "test", path: "/metadata/resourceVersion", value: "1" }],
    ],
    ["add below a missing parent", [{ op: "add", path: "/metadata/labels/nope/x", value: "1" }]],
    ["remove of a missing key", [{ op: "remove", path: "/metadata/annotations/missing" }]],
    [
      "an index out of range",
      [{ op: "replace", path: "/spec/template/spec/containers/7/image", value: "x" }],
    ],
    ["an unknown op", [{ op: "frobnicate", path: "/metadata" }]],
  ];
  for (const [name, ops] of failing) {
    test(`${name} is a 422 with the generic body and changes nothing`, async () => {
      const w = fresh("Deployment", { "keep.io/x": "1" });
      const before = w.get();
      const r = await patch(sim, w.path, JSONP, ops);
      expect(r.status).toBe(422);
      expect(r.json).toEqual(invalid);
      expect(w.get()).toEqual(before);
    });
  }

  test("a body that is not an array of operations is a 400", async () => {
    const w = fresh();
    const r = await patch(sim, w.path, JSONP, { op: "add" });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({
      reason: "BadRequest",
      message: "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
    });
    expect((await patch(sim, w.path, JSONP, "[")).status).toBe(400);
  });
});
