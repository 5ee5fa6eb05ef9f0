// Fuzzing API objects as the server (or a proxy in front of it) might send them: parseWorkload
// returns a Workload or throws WorkloadParseError, and rolloutStatus never throws on anything
// parseWorkload accepted, so a strange object fails the tick with a message, not a stack trace.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { parseWorkload, WORKLOAD_KINDS, type WorkloadKind, WorkloadParseError } from "./objects.ts";
import { rolloutStatus } from "./settled.ts";

const RUNS = Number(process.env.FUZZ_RUNS ?? 400);
const KINDS: WorkloadKind[] = [...WORKLOAD_KINDS];

const num = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: -2, max: 5 }) },
  { weight: 1, arbitrary: fc.jsonValue() },
  { weight: 1, arbitrary: fc.constant(undefined) },
);
const maybe = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined, freq: 4 });
const container = fc.record(
  { name: fc.oneof(fc.string(), fc.jsonValue()), image: fc.oneof(fc.string(), fc.jsonValue()) },
  { requiredKeys: [] },
);

const workload = fc.record(
  {
    kind: fc.oneof(fc.constantFrom(...KINDS), fc.jsonValue()),
    metadata: fc.record(
      {
        name: fc.oneof(fc.constant("api"), fc.jsonValue()),
        namespace: fc.oneof(fc.constant("apps"), fc.jsonValue()),
        generation: num,
        resourceVersion: fc.oneof(fc.constant("12"), fc.jsonValue()),
        annotations: fc.oneof(
          fc.dictionary(fc.string(), fc.string()),
          fc.dictionary(fc.string(), fc.jsonValue()),
          fc
            .integer({ min: 1_000, max: 200_000 })
            .map((n) => ({ "image-refresh.io/refresh-attempt": "9".repeat(n) })),
          fc.constant(null),
        ),
      },
      { requiredKeys: [] },
    ),
    spec: fc.record(
      {
        replicas: num,
        updateStrategy: maybe(
          fc.record(
            {
              type: fc.oneof(fc.constantFrom("RollingUpdate", "OnDelete"), fc.jsonValue()),
              rollingUpdate: maybe(fc.record({ partition: num })),
            },
            { requiredKeys: [] },
          ),
        ),
        template: fc.oneof(
          fc.record({
            spec: fc.record(
              {
                containers: fc.array(container, { maxLength: 3 }),
                initContainers: maybe(fc.array(container, { maxLength: 2 })),
              },
              { requiredKeys: [] },
            ),
          }),
          fc.jsonValue(),
        ),
      },
      { requiredKeys: [] },
    ),
    status: fc.oneof(
      fc.record(
        {
          observedGeneration: num,
          replicas: num,
          updatedReplicas: num,
          readyReplicas: num,
          availableReplicas: num,
          currentReplicas: num,
          desiredNumberScheduled: num,
          updatedNumberScheduled: num,
          numberAvailable: num,
          updateRevision: fc.oneof(fc.string(), fc.jsonValue()),
          currentRevision: fc.oneof(fc.string(), fc.jsonValue()),
          conditions: fc.oneof(
            fc.array(
              fc.record(
                {
                  type: fc.constantFrom("Progressing", "Available"),
                  status: fc.constant("True"),
                  reason: fc.oneof(fc.constant("ProgressDeadlineExceeded"), fc.string(), fc.jsonValue()),
                },
                { requiredKeys: ["type", "status"] },
              ),
            ),
            fc.jsonValue(),
          ),
        },
        { requiredKeys: [] },
      ),
      fc.jsonValue(),
    ),
  },
  { requiredKeys: [] },
);

/** Well-formed objects with random rollout state: the messy generator above almost never parses,
 * and only what parses reaches rolloutStatus. Small counts and both strategies, so every verdict
 * (settled, waiting, deadline, non-RollingUpdate error) comes up. */
const small = fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined, freq: 5 });
const wellFormed = fc.record({
  kind: fc.constant(undefined),
  metadata: fc.record({
    name: fc.constant("api"),
    namespace: fc.constant("apps"),
    generation: fc.integer({ min: 1, max: 3 }),
    resourceVersion: fc.constant("12"),
    annotations: fc.option(fc.dictionary(fc.string(), fc.string()), { nil: undefined }),
  }),
  spec: fc.record({
    replicas: small,
    updateStrategy: maybe(
      fc.record(
        {
          type: fc.constantFrom("RollingUpdate", "OnDelete"),
          rollingUpdate: maybe(fc.record({ partition: small })),
        },
        { requiredKeys: [] },
      ),
    ),
    template: fc.constant({ spec: { containers: [{ name: "api", image: "myorg/api:1" }] } }),
  }),
  status: fc.record(
    {
      observedGeneration: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined, freq: 5 }),
      replicas: small,
      updatedReplicas: small,
      readyReplicas: small,
      availableReplicas: small,
      currentReplicas: small,
      desiredNumberScheduled: small,
      updatedNumberScheduled: small,
      numberAvailable: small,
      updateRevision: fc.constantFrom("r1", "r2"),
      currentRevision: fc.constantFrom("r1", "r2"),
      conditions: fc.array(
        fc.record({
          type: fc.constantFrom("Progressing", "Available"),
          status: fc.constantFrom("True", "False"),
          reason: fc.constantFrom("ProgressDeadlineExceeded", "NewReplicaSetAvailable"),
        }),
        { maxLength: 2 },
      ),
    },
    { requiredKeys: [] },
  ),
});

describe("parseWorkload fuzz", () => {
  test("any object: a Workload whose rollout status can be judged, or WorkloadParseError", () => {
    const verdicts = { parsed: 0, done: 0, waiting: 0, error: 0 };
    fc.assert(
      fc.property(
        fc.constantFrom(...KINDS),
        fc.oneof({ weight: 2, arbitrary: wellFormed }, workload, fc.jsonValue()),
        (kind, raw) => {
          let w: ReturnType<typeof parseWorkload>;
          try {
            w = parseWorkload(kind, raw);
          } catch (err) {
            if (!(err instanceof WorkloadParseError)) throw err;
            expect(err.message.startsWith(`Cannot read ${kind}`)).toBe(true);
            expect(err.message.length).toBeLessThan(5_000);
            return;
          }
          verdicts.parsed++;
          const s = rolloutStatus(w);
          expect(typeof s.done).toBe("boolean");
          expect(s.message).toBeString();
          expect(s.message).not.toBe("");
          // An error verdict is never also a settled one.
          if (s.error !== undefined) expect(s.done).toBe(false);
          verdicts[s.error !== undefined ? "error" : s.done ? "done" : "waiting"]++;
        },
      ),
      { numRuns: RUNS },
    );
    // The property above says nothing unless objects parse and every kind of verdict comes up.
    expect(verdicts.parsed).toBeGreaterThan(RUNS / 5);
    expect(Math.min(verdicts.done, verdicts.waiting, verdicts.error)).toBeGreaterThan(0);
  });

  test("a kind that is an object with a non-function toString is a WorkloadParseError (found by this fuzz)", () => {
    expect(() => parseWorkload("Deployment", { kind: { toString: false } })).toThrow(WorkloadParseError);
    expect(() => parseWorkload("Deployment", { kind: { toString: false } })).toThrow('{"toString":false}');
  });

  test("a wrong-typed status number is an error, never a silent 0 that reads as settled", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("observedGeneration", "updatedReplicas", "availableReplicas"),
        fc.oneof(fc.string(), fc.boolean(), fc.double({ noInteger: true })),
        (field, value) => {
          const raw = {
            metadata: { name: "api", namespace: "apps", generation: 2, resourceVersion: "1" },
            spec: { replicas: 1, template: { spec: { containers: [] } } },
            status: {
              observedGeneration: 2,
              replicas: 1,
              updatedReplicas: 1,
              availableReplicas: 1,
              [field]: value,
            },
          };
          expect(() => parseWorkload("Deployment", raw)).toThrow(WorkloadParseError);
        },
      ),
      { numRuns: 100 },
    );
  });
});
