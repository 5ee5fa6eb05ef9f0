// The configuration file, validated as a whole before anything else happens (SPEC
// "Configuration"). Every bad field is reported by its path; no network call is made first.

import { parseDuration } from "./duration.ts";
import { repeatsHost } from "./registry/reference.ts";
import {
  array,
  atLeast,
  atMost,
  boolean,
  formatPath,
  type Infer,
  integer,
  map,
  maxLength,
  minItems,
  minLength,
  oneOf,
  optional,
  parse,
  pattern,
  strictObject,
  string,
  urlWithoutCredentials,
  withDefault,
} from "./schema.ts";

export const WORKLOAD_KINDS = ["Deployment", "DaemonSet", "StatefulSet"] as const;
export type WorkloadKind = (typeof WORKLOAD_KINDS)[number];

export class ConfigError extends Error {
  override name = "ConfigError";
  constructor(
    /** What is wrong in one line, e.g. "Invalid configuration in /etc/image-refresh/config.yaml". */
    readonly headline: string,
    readonly problems: string[] = [],
  ) {
    super(problems.length ? `${headline}:\n${problems.map((p) => `  - ${p}`).join("\n")}` : headline);
  }
}

// DNS-1123 names and annotation-name segments, as the API server validates them.
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
const REPOSITORY = /^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(\/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$/;
// An image key names annotations (`refresh-attempt-<key>`, `last-refreshed-<key>-digest`):
// at most 32 of these characters keeps every derived name a valid annotation name segment.
const IMAGE_KEY = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const IMAGE_KEY_MAX = 32;

const duration = map(string(), (s) => {
  const ms = parseDuration(s);
  return ms === undefined || ms === 0
    ? { problem: `not a duration: "${s}" (use e.g. 500ms, 15s, 10m, 1h)` }
    : ms;
});
const name = string(maxLength(253), pattern(DNS_SUBDOMAIN, "must be a lowercase DNS-1123 name"));
const namespace = string(maxLength(63), pattern(DNS_LABEL, "must be a lowercase DNS-1123 label"));
const kind = oneOf(WORKLOAD_KINDS);
const HTTP = ["http:", "https:"];
const count = integer(atLeast(1), atMost(1_000_000));
const flag = withDefault(boolean, false);

const target = strictObject({
  kind,
  namespace: optional(namespace),
  name,
  container: string(maxLength(63), pattern(DNS_LABEL, "must be a lowercase DNS-1123 label")),
});
const image = strictObject({
  repository: string(pattern(REPOSITORY, "must be a repository path such as myorg/api")),
  key: optional(
    string(maxLength(IMAGE_KEY_MAX), pattern(IMAGE_KEY, "must be lowercase letters, digits and '-'")),
  ),
  pinned: flag,
  targets: array(target, minItems(1)),
});

const registry = strictObject({
  // A DNS name (at most 253 characters) and an optional port.
  host: string(
    maxLength(259),
    pattern(/^[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?$/, "must be a registry host such as docker.io"),
  ),
  endpoint: optional(urlWithoutCredentials(HTTP, "put them in dockerConfigJson")),
  insecure: flag,
  dockerConfigJson: optional(string(minLength(1))),
  // The Bearer token endpoint, when known in advance: saves the challenge probe on every tick.
  token: optional(
    strictObject({
      realm: urlWithoutCredentials(HTTP, "put them in dockerConfigJson"),
      service: optional(string(minLength(1))),
    }),
  ),
});
const annotationPrefix = withDefault(
  string(maxLength(253), pattern(DNS_SUBDOMAIN, "must be a DNS subdomain")),
  "image-refresh.io",
);
const images = array(image, minItems(1));

const schema = strictObject({
  tag: string(pattern(TAG, "must be a valid image tag")),
  registry,
  state: strictObject({ kind, namespace, name }),
  annotationPrefix,
  maxRefreshAttempts: withDefault(count, 3),
  maxSkipTicks: withDefault(count, 8),
  maxUnresolvedTicks: withDefault(count, 8),
  rolloutTimeout: withDefault(duration, 600_000),
  requestTimeout: withDefault(duration, 15_000),
  images,
});

export interface Target {
  kind: WorkloadKind;
  namespace: string;
  name: string;
  container: string;
}
export interface ImageConfig {
  repository: string;
  key: string;
  pinned: boolean;
  targets: Target[];
}
export interface Config {
  tag: string;
  registry: {
    host: string;
    endpoint?: string;
    insecure: boolean;
    dockerConfigJson?: string;
    /** Where to ask for a Bearer token without probing the registry first. */
    token?: { realm: string; service?: string };
  };
  state: { kind: WorkloadKind; namespace: string; name: string };
  annotationPrefix: string;
  maxRefreshAttempts: number;
  maxSkipTicks: number;
  maxUnresolvedTicks: number;
  rolloutTimeoutMs: number;
  requestTimeoutMs: number;
  images: ImageConfig[];
}

const ENV_OVERRIDES: Array<[string, string, (v: string) => unknown]> = [
  ["IMAGE_TAG", "tag", (v) => v],
  ["MAX_REFRESH_ATTEMPTS", "maxRefreshAttempts", numberOrText],
  ["MAX_SKIP_TICKS", "maxSkipTicks", numberOrText],
  ["MAX_UNRESOLVED_TICKS", "maxUnresolvedTicks", numberOrText],
  ["ROLLOUT_TIMEOUT", "rolloutTimeout", (v) => v],
  ["REQUEST_TIMEOUT", "requestTimeout", (v) => v],
];

function numberOrText(v: string): unknown {
  return /^[0-9]+$/.test(v) ? Number(v) : v;
}

/** Parses and validates configuration text (YAML or JSON) with the environment's overrides. */
export function parseConfig(
  text: string,
  env: Record<string, string | undefined>,
  source = "config",
): Config {
  let raw: unknown;
  try {
    raw = Bun.YAML.parse(text);
  } catch (err) {
    throw new ConfigError(`Cannot parse ${source}: ${(err as Error).message}`);
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw new ConfigError(`Cannot use ${source}: it must be a mapping of settings`);
  }
  const doc: Record<string, unknown> = { ...(raw as Record<string, unknown>) };
  const fromEnv = new Map<string, string>();
  for (const [envName, field, convert] of ENV_OVERRIDES) {
    const v = env[envName];
    if (v !== undefined && v !== "") {
      doc[field] = convert(v);
      fromEnv.set(field, envName);
    }
  }
  const result = parse(schema, doc);
  if (result.ok) {
    const config = finish(result.value);
    const problems = checksAcross(config.images, config.annotationPrefix, config.registry);
    if (problems.length) throw new ConfigError(`Invalid configuration in ${source}`, problems);
    return config;
  }
  const problems = result.issues.map((i) => {
    const path = formatPath(i.path);
    const via = fromEnv.get(String(i.path[0]));
    return `${path}${via ? ` (from env ${via})` : ""}: ${i.message}`;
  });
  // Every bad field at once: the checks across fields run on whatever parts are valid.
  problems.push(...crossFieldProblems(doc));
  throw new ConfigError(`Invalid configuration in ${source}`, problems);
}

export { formatPath };

/** Keys and target namespaces filled in from their defaults. */
function normalise(list: Infer<typeof images>, stateNamespace: string): ImageConfig[] {
  return list.map((img) => ({
    repository: img.repository,
    key: img.key ?? (img.repository.split("/").pop() as string),
    pinned: img.pinned,
    targets: img.targets.map((t) => ({ ...t, namespace: t.namespace ?? stateNamespace })),
  }));
}

function finish(c: Infer<typeof schema>): Config {
  return {
    tag: c.tag,
    registry: c.registry,
    state: c.state,
    annotationPrefix: c.annotationPrefix,
    maxRefreshAttempts: c.maxRefreshAttempts,
    maxSkipTicks: c.maxSkipTicks,
    maxUnresolvedTicks: c.maxUnresolvedTicks,
    rolloutTimeoutMs: c.rolloutTimeout,
    requestTimeoutMs: c.requestTimeout,
    images: normalise(c.images, c.state.namespace),
  };
}

/** The checks across fields; a part that is not valid on its own (undefined) is skipped. */
function checksAcross(
  list: ImageConfig[],
  prefix: string | undefined,
  reg: Config["registry"] | undefined,
): string[] {
  return [
    ...(prefix !== undefined ? crossChecks(list, prefix) : []),
    ...(reg !== undefined ? registryChecks(reg, list) : []),
  ];
}

/**
 * When the document as a whole is invalid: the checks across fields on whichever parts are
 * valid on their own, so a bad state.kind does not hide a duplicate image key.
 */
function crossFieldProblems(doc: Record<string, unknown>): string[] {
  const imgs = parse(images, doc.images);
  const reg = parse(registry, doc.registry);
  const prefix = parse(annotationPrefix, doc.annotationPrefix);
  const ns = parse(namespace, (doc.state as { namespace?: unknown } | undefined)?.namespace);
  const list = imgs.ok ? normalise(imgs.value, ns.ok ? ns.value : "") : [];
  return checksAcross(list, prefix.ok ? prefix.value : undefined, reg.ok ? reg.value : undefined);
}

// Checks that span fields: duplicate keys would share one digest annotation, and one container
// claimed by two images would be re-imaged back and forth on every tick.
function crossChecks(images: ImageConfig[], _prefix: string): string[] {
  const problems: string[] = [];
  const keys = new Map<string, number>();
  const containers = new Map<string, string>();
  images.forEach((img, i) => {
    const prev = keys.get(img.key);
    if (prev !== undefined)
      problems.push(`images[${i}].key: "${img.key}" is already used by images[${prev}]`);
    keys.set(img.key, i);
    // A key derived from the repository is held to the same rule as one written out.
    if (img.key.length > IMAGE_KEY_MAX || !IMAGE_KEY.test(img.key))
      problems.push(
        `images[${i}].key: "${img.key}" (derived from the repository) must be at most ${IMAGE_KEY_MAX} lowercase letters, digits and '-'; set key explicitly`,
      );
    img.targets.forEach((t, j) => {
      const id = `${t.kind}/${t.namespace}/${t.name}/${t.container}`;
      const owner = containers.get(id);
      if (owner) problems.push(`images[${i}].targets[${j}]: container ${id} is already a target of ${owner}`);
      containers.set(id, `images[${i}]`);
    });
  });
  return problems;
}

// Registry settings that are each valid alone but not together; the registry client would
// otherwise find them only mid-tick, after the state object was read.
function registryChecks(r: Config["registry"], images: ImageConfig[]): string[] {
  const problems: string[] = [];
  const plain = "is plain http; set registry.insecure: true to allow it";
  if (r.endpoint?.startsWith("http:") && !r.insecure) problems.push(`registry.endpoint: ${plain}`);
  // Credentials go to the token endpoint: plain http needs the same opt-in as the registry's.
  if (r.token?.realm.startsWith("http:") && !r.insecure) problems.push(`registry.token.realm: ${plain}`);
  images.forEach((img, i) => {
    if (repeatsHost(r.host, img.repository))
      problems.push(
        `images[${i}].repository: "${img.repository}" repeats the registry host; write the host in registry.host only`,
      );
  });
  return problems;
}

export const DEFAULT_CONFIG_PATH = "/etc/image-refresh/config.yaml";

/** Reads the configuration named by --config, $IMAGE_REFRESH_CONFIG or the default path. */
export function loadConfig(
  flag: string | undefined,
  env: Record<string, string | undefined>,
  readFile: (path: string) => string,
): Config {
  const path = flag ?? env.IMAGE_REFRESH_CONFIG ?? DEFAULT_CONFIG_PATH;
  let text: string;
  try {
    text = readFile(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(
      `Cannot read config ${path}: ${code === "ENOENT" ? "no such file" : (err as Error).message}`,
    );
  }
  return parseConfig(text, env, path);
}
