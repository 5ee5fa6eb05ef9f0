// Event creation on the simulated API server through both groups, validated as kubernetes
// pkg/apis/core/validation/events.go validates it.
import { afterAll, describe, expect, test } from "bun:test";
import { call } from "../../sim/apiserver/driver.ts";
import { startApiServer } from "../../sim/apiserver/index.ts";

const sim = await startApiServer();
afterAll(() => sim.stop());

const NEW = "/apis/events.k8s.io/v1/namespaces/apps/events";
const CORE = "/api/v1/namespaces/apps/events";
let n = 0;

function newEvent(over: Record<string, unknown> = {}) {
  return {
    apiVersion: "events.k8s.io/v1",
    kind: "Event",
    metadata: { name: `api.${(++n).toString(16).padStart(16, "0")}` },
    eventTime: "2025-01-02T03:04:05.123456Z",
    reportingController: "image-refresh.io/image-refresh",
    reportingInstance: "image-refresh-29012345-x7k2p",
    action: "Refresh",
    reason: "ImageRefreshed",
    type: "Normal",
    note: "pinned api to sha256:abc",
    regarding: { apiVersion: "apps/v1", kind: "Deployment", namespace: "apps", name: "api" },
    ...over,
  };
}

const post = (path: string, body: unknown) =>
  call(sim, path, { method: "POST", contentType: "application/json", body });

describe("events.k8s.io/v1", () => {
  test("a valid Event is created: 201 with server fields, visible in sim.events", async () => {
    const e = newEvent();
    const r = await post(NEW, e);
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({ ...e, metadata: { name: e.metadata.name, namespace: "apps" } });
    expect(typeof r.json.metadata.resourceVersion).toBe("string");
    expect(r.json.metadata.uid).toBeTruthy();
    expect(sim.events.at(-1)).toEqual(r.json);
    const list = await call(sim, NEW);
    expect(
      list.json.items.some((i: { metadata: { name: string } }) => i.metadata.name === e.metadata.name),
    ).toBe(true);
  });

  test("generateName yields a name with a random suffix", async () => {
    const r = await post(NEW, newEvent({ metadata: { generateName: "api." } }));
    expect(r.status).toBe(201);
    expect(r.json.metadata.name).toMatch(/^api\.[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  });

  const invalidCases: Array<[string, Record<string, unknown>, string, string]> = [
    ["missing eventTime", { eventTime: undefined }, "eventTime", "eventTime: Required value"],
    ["a bad type", { type: "Info" }, "type", 'type: Invalid value: "": has invalid value: Info'],
    [
      "no reportingController",
      { reportingController: "" },
      "reportingController",
      "reportingController: Required value",
    ],
    [
      "no reportingInstance",
      { reportingInstance: "" },
      "reportingInstance",
      "reportingInstance: Required value",
    ],
    ["no action", { action: "" }, "action", "action: Required value"],
    ["no reason", { reason: "" }, "reason", "reason: Required value"],
    [
      "a reason over 128 characters",
      { reason: "r".repeat(129) },
      "reason",
      'reason: Invalid value: "": can have at most 128 characters',
    ],
    [
      "a note over 1024 characters",
      { note: "n".repeat(1025) },
      "message",
      'message: Invalid value: "": can have at most 1024 characters',
    ],
    [
      "deprecatedCount set",
      { deprecatedCount: 1 },
      "deprecatedCount",
      'deprecatedCount: Invalid value: "": needs to be unset',
    ],
    [
      "deprecatedSource set",
      { deprecatedSource: { component: "x" } },
      "deprecatedSource",
      'deprecatedSource: Invalid value: "": needs to be unset',
    ],
    [
      "an invalid name",
      { metadata: { name: "Bad_Name" } },
      "metadata.name",
      'metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain',
    ],
    [
      "no regarding namespace outside default",
      { regarding: { kind: "Deployment", name: "api" } },
      "involvedObject.namespace",
      'involvedObject.namespace: Invalid value: "": does not match event.namespace',
    ],
  ];
  for (const [name, over, field, message] of invalidCases) {
    test(`${name} is 422 Invalid naming ${field}`, async () => {
      const before = sim.events.length;
      const e = newEvent(over);
      const r = await post(NEW, e);
      expect(r.status).toBe(422);
      expect(r.json).toMatchObject({
        kind: "Status",
        status: "Failure",
        reason: "Invalid",
        code: 422,
        details: { group: "events.k8s.io", kind: "Event" },
      });
      expect(r.json.message).toStartWith(
        `Event.events.k8s.io "${(e.metadata as { name: string }).name}" is invalid: ${message}`,
      );
      expect(r.json.details.causes.map((c: { field: string }) => c.field)).toEqual([field]);
      expect(sim.events.length).toBe(before);
    });
  }

  test("several problems are listed together", async () => {
    const e = newEvent({ action: "", reason: "" });
    const r = await post(NEW, e);
    expect(r.json.message).toBe(
      `Event.events.k8s.io "${e.metadata.name}" is invalid: [action: Required value, reason: Required value]`,
    );
  });

  test("eventTime must have exactly six fractional digits (MicroTime)", async () => {
    const r = await post(NEW, newEvent({ eventTime: "2025-01-02T03:04:05.123Z" }));
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ reason: "BadRequest", code: 400 });
  });

  test("a namespace that differs from the URL is a 400", async () => {
    const e = newEvent();
    const r = await post(NEW, { ...e, metadata: { ...e.metadata, namespace: "other" } });
    expect(r.status).toBe(400);
    expect(r.json.message).toBe(
      "the namespace of the provided object does not match the namespace sent on the request",
    );
  });

  test("a duplicate name is 409 AlreadyExists", async () => {
    const e = newEvent();
    expect((await post(NEW, e)).status).toBe(201);
    const r = await post(NEW, e);
    expect(r.status).toBe(409);
    expect(r.json).toMatchObject({
      reason: "AlreadyExists",
      message: `events.events.k8s.io "${e.metadata.name}" already exists`,
      details: { name: e.metadata.name, group: "events.k8s.io", kind: "events" },
    });
  });
});

describe("core/v1", () => {
  const coreEvent = (over: Record<string, unknown> = {}) => ({
    apiVersion: "v1",
    kind: "Event",
    metadata: { name: `api.core${++n}` },
    involvedObject: { apiVersion: "apps/v1", kind: "Deployment", namespace: "apps", name: "api" },
    reason: "ImageRefreshed",
    message: "pinned",
    type: "Normal",
    source: { component: "image-refresh" },
    firstTimestamp: "2025-01-02T03:04:05Z",
    lastTimestamp: "2025-01-02T03:04:05Z",
    count: 1,
    ...over,
  });

  test("an old-style Event (no eventTime) only needs consistent namespaces", async () => {
    const r = await post(CORE, coreEvent());
    expect(r.status).toBe(201);
    expect(sim.events.at(-1)).toMatchObject({ apiVersion: "v1", reason: "ImageRefreshed" });
  });

  test("an involvedObject in another namespace is 422", async () => {
    const r = await post(
      CORE,
      coreEvent({ involvedObject: { kind: "Deployment", namespace: "other", name: "api" } }),
    );
    expect(r.status).toBe(422);
    expect(r.json.message).toContain(
      'involvedObject.namespace: Invalid value: "other": does not match event.namespace',
    );
    expect(r.json.details.group).toBeUndefined();
  });

  test("with eventTime set, reportingComponent (the core name) becomes mandatory", async () => {
    const r = await post(
      CORE,
      coreEvent({ eventTime: "2025-01-02T03:04:05.000000Z", action: "Refresh", reportingInstance: "x" }),
    );
    expect(r.status).toBe(422);
    expect(r.json.message).toMatch(/^Event "api\.core\d+" is invalid: reportingComponent: Required value$/);
  });
});
