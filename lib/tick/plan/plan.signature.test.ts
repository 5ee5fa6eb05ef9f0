// plan() with a verify policy: a new build rolls out only once its signature verified; a refused
// build holds the image, counts nothing and announces itself once. Whole decisions, one table.
import { expect } from "bun:test";
import {
  ann,
  both,
  type Case,
  D,
  helm,
  newApi,
  REFRESH_API,
  roll,
  runCases,
  shareProxy,
  write,
} from "../../../tests/support/plan-tables.ts";
import type { SignatureVerdict } from "../../signature/reader.ts";
import type { Observed } from "../model.ts";

const policy = (c: any) => (c.verify = { keys: ["/etc/image-refresh/keys/release.pub"] });
const signature =
  (verdict: SignatureVerdict, digest = D("c")) =>
  (o: Observed) => {
    o.signatures = { ...o.signatures, api: { digest, verdict } };
  };
const verified = signature({
  status: "verified",
  format: "simple-signing",
  key: "release.pub",
  reason: "ok",
});
const unsigned = signature({ status: "unsigned", reason: "no signature" });
const invalid = signature({
  status: "signature_invalid",
  reason: "simple-signing: signed for another digest",
});
const unreadable = signature({ status: "unreadable", reason: "GET answered 503" });
const refusedEvent = {
  type: "event" as const,
  eventType: "Warning" as const,
  reason: "BuildRefused" as const,
  note: expect.stringMatching(/refused.*publisher.*cosign verify --key/) as never,
  image: "api",
};
const rest = REFRESH_API.slice(1);
const rendered = (o: Observed) => {
  for (const [id, name] of [
    ["Deployment/apps/api", "api"],
    ["Deployment/apps/api-proxy", "proxy"],
  ] as const) {
    const w = o.workloads?.[id];
    if (!w?.found) throw new Error(id);
    w.images[name] = "myorg/api:stable";
    w.owners = { ...w.owners, [name]: [helm] };
  }
};
const REPIN_API = `docker.io/myorg/api@${D("a")}`;

const cases: Case[] = [
  {
    name: "no policy: a new build rolls out without a signature",
    o: newApi,
    outcome: "refreshed",
    actions: REFRESH_API,
  },
  {
    name: "policy, not checked yet: held for the check (the tick's first plan), nothing written",
    c: policy,
    o: newApi,
    outcome: "held",
    images: { api: "held/signature_unchecked", "node-agent": "noop/unchanged" },
    actions: [],
  },
  {
    name: "verified: rolls out, the verified digest written with the count",
    c: policy,
    o: both(newApi, verified),
    outcome: "refreshed",
    actions: [write({ attempts: { api: 1 }, change: { "verified-api-signature": D("c") } }), ...rest],
  },
  {
    name: "remembered as verified: rolls out with no signature observed",
    c: policy,
    o: both(newApi, (o) => ann(o, "verified-api-signature", D("c"))),
    outcome: "refreshed",
    actions: REFRESH_API,
  },
  {
    name: "a verdict for another digest does not count: checked again",
    c: policy,
    o: both(newApi, signature({ status: "verified", format: "bundle", key: "k", reason: "" }, D("d"))),
    outcome: "held",
    images: { api: "held/signature_unchecked", "node-agent": "noop/unchanged" },
    actions: [],
  },
  {
    name: "unsigned: held, nothing counted, one Warning Event and the refusal remembered",
    c: policy,
    o: both(newApi, unsigned),
    outcome: "held",
    reason: "unsigned",
    images: { api: "held/unsigned", "node-agent": "noop/unchanged" },
    actions: [write({ change: { "refused-api-signature": D("c") } }), refusedEvent],
  },
  {
    name: "signature invalid: held with its reason",
    c: policy,
    o: both(newApi, invalid),
    outcome: "held",
    reason: "signature_invalid",
    actions: [write({ change: { "refused-api-signature": D("c") } }), refusedEvent],
  },
  {
    name: "the same refused build on a later tick: held, no second Event, nothing written",
    c: policy,
    o: both(newApi, invalid, (o) => ann(o, "refused-api-signature", D("c"))),
    outcome: "held",
    reason: "signature_invalid",
    actions: [],
  },
  {
    name: "signed after its refusal: rolls out, the refusal forgotten",
    c: policy,
    o: both(newApi, verified, (o) => ann(o, "refused-api-signature", D("c"))),
    outcome: "refreshed",
    actions: [
      write({
        attempts: { api: 1 },
        change: { "verified-api-signature": D("c"), "refused-api-signature": null },
      }),
      ...rest,
    ],
  },
  {
    name: "unreadable: held, no Event, nothing remembered",
    c: policy,
    o: both(newApi, unreadable),
    outcome: "held",
    reason: "signature_unreadable",
    actions: [],
  },
  {
    name: "a locked-out image is locked out before any signature is asked for",
    c: policy,
    o: both(
      newApi,
      (o) => ann(o, "refresh-attempt-api", "3"),
      (o) => ann(o, "refresh-flap-detected-api", "3"),
    ),
    outcome: "locked_out",
    actions: [],
  },
  {
    name: "the image's own verify: false turns the top-level policy off",
    c: (c) => {
      policy(c);
      c.images[0].verify = false;
    },
    o: newApi,
    outcome: "refreshed",
    actions: REFRESH_API,
  },
  {
    name: "a refused build holds the image sharing its workload",
    c: (c) => {
      shareProxy(c);
      c.images[0].verify = { keys: ["/k.pub"] };
    },
    o: both(newApi, unsigned, (o) => {
      o.digests = { ...o.digests, "node-agent": { ok: true, digest: D("e") } };
    }),
    outcome: "held",
    images: { api: "held/unsigned", "node-agent": "held/shared_workload" },
    actions: [write({ change: { "refused-api-signature": D("c") } }), { ...refusedEvent }],
  },
  {
    name: "adoption: the re-pin of a build not yet verified waits for its signature",
    c: policy,
    o: rendered,
    outcome: "held",
    images: { api: "held/signature_unchecked", "node-agent": "noop/unchanged" },
    actions: [],
  },
  {
    name: "adoption of a verified build: re-pinned",
    c: policy,
    o: both(rendered, signature({ status: "verified", format: "bundle", key: "k", reason: "" }, D("a"))),
    outcome: "refreshed",
    actions: [
      write({
        attempts: { api: 1 },
        repins: ["api"],
        change: { "repin-streak-api": "1", "verified-api-signature": D("a") },
      }),
      roll("api", [["api", REPIN_API]], ["api"]),
      roll("api-proxy", [["proxy", REPIN_API]], ["api"]),
      { type: "reset", counts: { api: 1 } },
      { type: "pin-restored", images: ["api"] },
    ],
  },
];

runCases(cases);
