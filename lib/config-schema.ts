// The configuration's zod schema: the one statement of which files are valid. `image-refresh
// schema` prints it as JSON Schema; lib/checks/checks.generated.ts is compiled from it (a tick's
// happy path runs that, and builds these zod schemas only to say what is wrong with a file).
import { durationPattern, parseDuration } from "./duration.ts";
import { lazy, matching, urlWithoutCredentials } from "./issues.ts";
import { mark } from "./startup-timing.ts";
import { WORKLOAD_KINDS } from "./workload.ts";
import { zod } from "./zod.ts";

// DNS-1123 names and annotation-name segments, as the API server validates them.
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
const REPOSITORY = /^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(\/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$/;
// Every annotation name derived from a key (refresh-attempt-<key>, last-refreshed-<key>-digest,
// ...) stays a valid name segment of at most 63 characters.
export const IMAGE_KEY = /^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$/;
export const KEY_RULE =
  "must be at most 32 characters of a-z, 0-9 and '-', starting and ending with a letter or digit";

const DURATION_HINT = "durations are strings such as 10m, 90s, 1h30m or 2d";

/**
 * A duration, as text; `zero` allows 0s (minimumAge, verifyFor). finish() reads it as milliseconds:
 * a transform in the schema would bring three more zod types (pipe, transform, prefault) onto
 * a tick's start-up for one function call.
 */
function duration(durations: Durations, fallback: string, zero = false) {
  return zod()._default(zero ? durations.orZero : durations.positive, fallback);
}
type Durations = { positive: ReturnType<typeof durationText>; orZero: ReturnType<typeof durationText> };

function durationText(zero: boolean) {
  const z = zod();
  const text = z.string({
    error: (iss) =>
      typeof iss.input === "number"
        ? `Invalid input: expected string, received number; ${DURATION_HINT}`
        : undefined,
  });
  // A pattern rather than a refinement, so that the JSON Schema carries the same rule.
  return text.check(
    z.regex(durationPattern(!zero), {
      error: (iss) =>
        parseDuration(String(iss.input)) === 0
          ? `must be a positive duration: ${JSON.stringify(iss.input)} is zero`
          : `not a duration: ${JSON.stringify(iss.input)} (use e.g. 500ms, 15s, 10m, 1h, 2d)`,
    }),
  );
}

/** `parallelism`: a whole number of groups, at least 1, with a message that says so for 0, -2 or 1.5. */
function groupsAtOnce() {
  const z = zod();
  const rule =
    "must be a whole number of image groups rolling out at once, at least 1 (1: one workload at a time)";
  const error = (iss: { input?: unknown }) => `${rule}: ${JSON.stringify(iss.input)}`;
  return z.int({ error }).check(z.gte(1, { error }), z.lte(1000, { error: "must be at most 1000" }));
}

export const DEFAULT_STORE_NAME = "image-refresh-state";

/** `myorg/web:stable` is the commonest mistake here: say what to drop rather than only the rule. */
function repositoryProblem(input: unknown): string {
  const rule = "must be a repository path such as myorg/api";
  const text = typeof input === "string" ? input : "";
  const at = text.search(/[:@][^/]*$/);
  if (at <= 0 || !REPOSITORY.test(text.slice(0, at))) return rule;
  const what = text[at] === "@" ? "a digest" : "a tag";
  return `${rule}, without ${what}: drop "${text.slice(at)}" (the tag followed is the image's own tag, else the top-level tag)`;
}

/**
 * The schemas, built on first use: building them is most of what validating a file costs, and a
 * valid file is accepted by the compiled check without them.
 */
export const configSchemas = lazy((z) => {
  // Each zod instance runs its constructors when built, so a schema that several fields share is
  // built once: the same rule, the same JSON Schema.
  const DURATIONS = { positive: durationText(false), orZero: durationText(true) };
  const name = matching(DNS_SUBDOMAIN, "must be a lowercase DNS-1123 name", z.maxLength(253));
  const label = matching(DNS_LABEL, "must be a lowercase DNS-1123 label", z.maxLength(63));
  const namespace = label;
  const kind = z.enum(WORKLOAD_KINDS);
  const positive = z.int().check(z.gte(1), z.lte(1_000_000));
  const count = (fallback: number) => z._default(positive, fallback);
  const nonEmpty = z.string().check(z.minLength(1));
  const flag = z._default(z.boolean(), false);

  const target = z.strictObject({
    kind,
    namespace: z.optional(namespace),
    name,
    container: label,
  });
  // Public keys (PEM files) a build's signature must verify with before it rolls out.
  const verify = z.strictObject({ keys: z.array(nonEmpty).check(z.minLength(1)) });
  const CREDENTIALS_HINT = "put them in dockerConfigJson";
  const url = urlWithoutCredentials(CREDENTIALS_HINT);
  const registry = z.strictObject({
    // A DNS name (at most 253 characters) and an optional port.
    host: matching(/^[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?$/, "must be a registry host such as docker.io"),
    endpoint: z.optional(url),
    insecure: flag,
    dockerConfigJson: z.optional(nonEmpty),
    // A cloud's workload identity instead of a pull secret: aws asks ECR for a token with the
    // pod's IRSA or EKS Pod Identity credentials, gcp uses a Google access token (metadata server
    // or workload-identity credential file), azure exchanges the AKS federated token for an ACR
    // refresh token (none, the default: the pull secret, if any).
    auth: z.optional(z.enum(["none", "aws", "gcp", "azure"])),
    // The Bearer token endpoint, when known in advance: saves the challenge probe on every tick.
    token: z.optional(
      z.strictObject({
        realm: url,
        service: z.optional(nonEmpty),
      }),
    ),
  });
  const tag = matching(TAG, "must be a valid image tag");
  // An image's own tag and registry, when it has them; else the top-level ones.
  const image = z.strictObject({
    repository: z.string().check(z.regex(REPOSITORY, { error: (iss) => repositoryProblem(iss.input) })),
    key: z.optional(matching(IMAGE_KEY, KEY_RULE)),
    tag: z.optional(tag),
    registry: z.optional(registry),
    pinned: flag,
    // This image's own policy: false turns the top-level one off for it.
    verify: z.optional(z.union([z.literal(false), verify])),
    targets: z.array(target).check(z.minLength(1)),
  });
  const annotationPrefix = z._default(
    matching(DNS_SUBDOMAIN, "must be a DNS subdomain", z.maxLength(253)),
    "image-refresh.io",
  );
  const images = z.array(image).check(z.minLength(1));
  // The namespace is left to the runtime when unset: the pod's own (its service-account namespace
  // file), so the CronJob needs no copy of it, while a laptop's copy of the config names it.
  const store = z._default(
    z.strictObject({ namespace: z.optional(namespace), name: z._default(name, DEFAULT_STORE_NAME) }),
    { name: DEFAULT_STORE_NAME },
  );

  const config = z.strictObject({
    tag,
    registry,
    namespace: z.optional(namespace),
    store,
    // Legacy: the workload whose annotations held the bookkeeping before the store; read to migrate.
    state: z.optional(z.strictObject({ kind, namespace, name })),
    annotationPrefix,
    maxRefreshAttempts: count(3),
    maxSkipTicks: count(8),
    maxUnresolvedTicks: count(8),
    rolloutTimeout: duration(DURATIONS, "10m"),
    requestTimeout: duration(DURATIONS, "15s"),
    onFailure: z._default(z.enum(["revert", "keep"]), "revert"),
    reconcile: z._default(z.enum(["repin", "report"]), "repin"),
    minimumAge: duration(DURATIONS, "0s", true),
    // 0s keeps the instant judgement of `kubectl rollout status`.
    verifyFor: duration(DURATIONS, "2m", true),
    regressionWindow: duration(DURATIONS, "1h"),
    // Groups of images that share no workload rolling out at once; 1 rolls out one workload at a time.
    parallelism: z._default(groupsAtOnce(), 4),
    verify: z.optional(verify),
    images,
  });
  mark("config-schema");
  return { config, images, registry, namespace };
});

/** The configuration file's schema; `image-refresh schema` prints it as JSON Schema. */
export const configSchema = () => configSchemas().config;
export type ConfigSchema = ReturnType<typeof configSchema>;
