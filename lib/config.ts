// The configuration file, validated as a whole before anything else happens. Every bad field is reported by its path; no network call is made first.

import type * as z from "zod/mini";
import { checkConfig } from "./checks/checks.generated.ts";
import {
  type ConfigSchema,
  configSchema,
  configSchemas,
  DNS_LABEL,
  IMAGE_KEY,
  KEY_RULE,
} from "./config-schema.ts";
import { parseDuration } from "./duration.ts";
import { formatPath, type Parsed, parse, parseChecked } from "./issues.ts";
import { registryHostKey, repeatsHost } from "./registry/reference.ts";
import { mark } from "./startup-timing.ts";
import type { WorkloadKind } from "./workload.ts";
import { parseYaml, YamlError } from "./yaml.ts";

export { configSchema, DEFAULT_STORE_NAME, IMAGE_KEY, KEY_RULE } from "./config-schema.ts";
export { WORKLOAD_KINDS, type WorkloadKind } from "./workload.ts";

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

mark("config-module");

export interface Target {
  kind: WorkloadKind;
  namespace: string;
  name: string;
  container: string;
}
/** A registry as configured, at the top level or for one image. */
export interface RegistryConfig {
  host: string;
  endpoint?: string;
  insecure: boolean;
  dockerConfigJson?: string;
  /**
   * A cloud's workload identity instead of a pull secret (aws: ECR through IRSA or EKS Pod
   * Identity; gcp: a Google access token; azure: an ACR refresh token through AKS workload identity).
   */
  auth?: "none" | "aws" | "gcp" | "azure";
  /** Where to ask for a Bearer token without probing the registry first. */
  token?: { realm: string; service?: string };
}
export interface ImageConfig {
  repository: string;
  key: string;
  /** The floating tag followed: the image's own, else the top-level one. */
  tag: string;
  /** The registry resolved against and written into pins: the image's own, else the top-level one. */
  registry: RegistryConfig;
  pinned: boolean;
  /** The signature policy in force for this image (its own, else the top-level one); none: not verified. */
  verify?: VerifyPolicy;
  targets: Target[];
}
/** Roll out only builds whose signature verifies with one of these public keys (PEM file paths). */
export interface VerifyPolicy {
  keys: string[];
  /** Where the policy comes from, as `status` says it. */
  from: "top-level" | "image";
}
export interface Config {
  /** The top-level tag: every image's that names none. */
  tag: string;
  /** The top-level registry: every image's that names none. */
  registry: RegistryConfig;
  /** The targets' default namespace, when the file sets one. */
  namespace?: string;
  /** image-refresh's own ConfigMap; `namespace` undefined means the pod's (see storeRef). */
  store: { namespace?: string; name: string };
  /** Legacy: the workload whose annotations held the bookkeeping before the store (migrated from). */
  state?: { kind: WorkloadKind; namespace: string; name: string };
  annotationPrefix: string;
  maxRefreshAttempts: number;
  maxSkipTicks: number;
  /** Ticks an image's digest may stay unresolved before it is a finding. */
  maxUnresolvedTicks: number;
  rolloutTimeoutMs: number;
  requestTimeoutMs: number;
  /** What a failed rollout leaves behind. */
  onFailure: "revert" | "keep";
  /** What a tag re-rendered over a pin gets. */
  reconcile: "repin" | "report";
  /** How long this installation must have seen a build before it rolls out; 0 for at once. */
  minimumAgeMs: number;
  /** How long a rollout's new pods must stay Ready, without a restart, before it succeeded; 0 for at once. */
  verifyForMs: number;
  /** How long after its verification a build whose pods fail still counts as a failed rollout. */
  regressionWindowMs: number;
  /** How many groups of images that share no workload roll out at once. */
  parallelism: number;
  /** The top-level signature policy (each image carries the one in force for it). */
  verify?: { keys: string[] };
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
    raw = parseYaml(text);
  } catch (err) {
    if (!(err instanceof YamlError)) throw err;
    // A key given twice is a bad field like any other.
    if (err.problems.length) throw new ConfigError(`Invalid configuration in ${source}`, err.problems);
    throw new ConfigError(`Cannot parse ${source}: ${err.message}`);
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw new ConfigError(`Cannot use ${source}: it must be a mapping of settings`);
  }
  mark("config-parsed");
  const doc: Record<string, unknown> = { ...(raw as Record<string, unknown>) };
  const fromEnv = new Map<string, string>();
  for (const [envName, field, convert] of ENV_OVERRIDES) {
    const v = env[envName];
    if (v !== undefined && v !== "") {
      doc[field] = convert(v);
      fromEnv.set(field, envName);
    }
  }
  const result = checked(doc);
  mark("config-checked");
  if (result.ok) {
    const config = finish(result.value);
    const problems = checksAcross(config.images, config.registry, result.value.images);
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

type Checked = z.output<ConfigSchema>;

const checked = (doc: Record<string, unknown>): Parsed<Checked> =>
  parseChecked(checkConfig, configSchema, doc);

/** Keys, tags, registries, signature policies and target namespaces filled in from their defaults. */
function normalise(
  list: Checked["images"],
  stateNamespace: string | undefined,
  top: { tag: string; registry: RegistryConfig; verify?: Checked["verify"] },
): ImageConfig[] {
  return list.map((img) => ({
    repository: img.repository,
    key: img.key ?? (img.repository.split("/").pop() as string),
    tag: img.tag ?? top.tag,
    registry: img.registry ?? top.registry,
    pinned: img.pinned,
    ...policyOf(img.verify, top.verify),
    targets: img.targets.map((t) => ({ ...t, namespace: t.namespace ?? stateNamespace ?? "" })),
  }));
}

/** An image's own policy wins over the top-level one; `false` turns it off for that image. */
function policyOf(
  own: Checked["images"][number]["verify"],
  top: Checked["verify"],
): { verify?: VerifyPolicy } {
  if (own === false) return {};
  if (own) return { verify: { keys: own.keys, from: "image" } };
  return top ? { verify: { keys: top.keys, from: "top-level" } } : {};
}

/** A duration the schema's pattern accepted, in milliseconds. */
const ms = (text: string): number => parseDuration(text) as number;

function finish(c: Checked): Config {
  return {
    tag: c.tag,
    registry: c.registry,
    ...(c.namespace !== undefined ? { namespace: c.namespace } : {}),
    store: c.store,
    ...(c.state ? { state: c.state } : {}),
    annotationPrefix: c.annotationPrefix,
    maxRefreshAttempts: c.maxRefreshAttempts,
    maxSkipTicks: c.maxSkipTicks,
    maxUnresolvedTicks: c.maxUnresolvedTicks,
    rolloutTimeoutMs: ms(c.rolloutTimeout),
    requestTimeoutMs: ms(c.requestTimeout),
    onFailure: c.onFailure,
    reconcile: c.reconcile,
    minimumAgeMs: ms(c.minimumAge),
    verifyForMs: ms(c.verifyFor),
    regressionWindowMs: ms(c.regressionWindow),
    parallelism: c.parallelism,
    ...(c.verify ? { verify: c.verify } : {}),
    images: normalise(c.images, c.namespace ?? c.state?.namespace ?? c.store.namespace, c),
  };
}

/**
 * The checks across fields; a part that is not valid on its own (undefined) is skipped. `given`
 * is the images as written, to tell an image's own registry from the top-level one it inherits.
 */
function checksAcross(
  list: ImageConfig[],
  reg: Config["registry"] | undefined,
  given: ReadonlyArray<{ registry?: RegistryConfig }>,
): string[] {
  return [
    ...crossChecks(list),
    ...(reg !== undefined ? registryChecks(reg, "registry") : []),
    ...imageRegistryChecks(list, reg, given),
  ];
}

/**
 * When the document as a whole is invalid: the checks across fields on whichever parts are
 * valid on their own, so a bad state.kind does not hide a duplicate image key.
 */
function crossFieldProblems(doc: Record<string, unknown>): string[] {
  const { images, registry, namespace } = configSchemas();
  const imgs = parse(images, doc.images);
  const reg = parse(registry, doc.registry);
  const store = (doc.store as { namespace?: unknown } | undefined)?.namespace;
  const given = doc.namespace ?? (doc.state as { namespace?: unknown } | undefined)?.namespace ?? store;
  const ns = parse(namespace, given);
  // A default that is given but invalid was named already; the targets are not said to lack one.
  const fallback = ns.ok ? ns.value : given === undefined ? undefined : "-";
  const top = reg.ok ? reg.value : undefined;
  const tag = typeof doc.tag === "string" ? doc.tag : "";
  // Without a valid top-level registry, an image that names none is checked against none.
  const list = imgs.ok ? normalise(imgs.value, fallback, { tag, registry: top ?? NO_REGISTRY }) : [];
  return checksAcross(list, top, imgs.ok ? imgs.value : []);
}

// Checks that span fields: duplicate keys would share one digest annotation, and one container
// claimed by two images would be re-imaged back and forth on every tick. A key written in the
// file was checked by the schema; one derived from the repository is checked here.
function crossChecks(images: ImageConfig[]): string[] {
  const problems: string[] = [];
  const keys = new Map<string, number>();
  const containers = new Map<string, string>();
  images.forEach((img, i) => {
    const prev = keys.get(img.key);
    if (prev !== undefined)
      problems.push(`images[${i}].key: "${img.key}" is already used by images[${prev}]`);
    keys.set(img.key, i);
    if (!IMAGE_KEY.test(img.key))
      problems.push(
        `images[${i}].key: the default key ${JSON.stringify(img.key)} (the repository's last segment) ${KEY_RULE}; set key explicitly`,
      );
    img.targets.forEach((t, j) => {
      if (t.namespace === "")
        problems.push(
          `images[${i}].targets[${j}].namespace: not set, and there is no default (set namespace at the top, or store.namespace)`,
        );
      const id = `${t.kind}/${t.namespace}/${t.name}/${t.container}`;
      const owner = containers.get(id);
      if (owner) problems.push(`images[${i}].targets[${j}]: container ${id} is already a target of ${owner}`);
      containers.set(id, `images[${i}]`);
    });
  });
  return problems;
}

// Registry settings that are each valid alone but not together; the registry client would
// otherwise find them only mid-tick, after the state object was read. `at` is the field's path.
function registryChecks(r: RegistryConfig, at: string): string[] {
  const problems: string[] = [];
  const plain = `is plain http; set ${at}.insecure: true to allow it`;
  if (r.endpoint?.startsWith("http:") && !r.insecure) problems.push(`${at}.endpoint: ${plain}`);
  // Credentials go to the token endpoint: plain http needs the same opt-in as the registry's.
  if (r.token?.realm.startsWith("http:") && !r.insecure) problems.push(`${at}.token.realm: ${plain}`);
  // One source of credentials per registry: which one was refused must never be a guess.
  if (r.auth && r.auth !== "none" && r.dockerConfigJson)
    problems.push(
      `${at}.auth: ${r.auth} takes this registry's credentials from ${CLOUD_SOURCE[r.auth]}; remove ${at}.dockerConfigJson`,
    );
  return problems;
}

const CLOUD_SOURCE = {
  aws: "ECR",
  gcp: "the pod's Google identity",
  azure: "the pod's Azure workload identity",
} as const;

/** Stands in for a top-level registry that is itself invalid (already named), so nothing repeats it. */
const NO_REGISTRY: RegistryConfig = { host: "", insecure: false };

/**
 * Each image's own registry on its own, its repository against its registry's host, and one
 * registry per host: the per-registry rules (the first HEAD alone, a 429, its Retry-After, the
 * remembered challenge, one token request) are kept per host, so two ways to reach one host would
 * split one quota in two.
 */
function imageRegistryChecks(
  images: ImageConfig[],
  top: RegistryConfig | undefined,
  given: ReadonlyArray<{ registry?: RegistryConfig }>,
): string[] {
  const problems: string[] = [];
  const byHost = new Map<string, { at: string; registry: RegistryConfig }>();
  if (top) byHost.set(registryHostKey(top.host), { at: "registry", registry: top });
  images.forEach((img, i) => {
    const own = given[i]?.registry !== undefined;
    const at = own ? `images[${i}].registry` : "registry";
    if (own) problems.push(...registryChecks(img.registry, at));
    if (img.registry.host && repeatsHost(img.registry.host, img.repository))
      problems.push(
        `images[${i}].repository: "${img.repository}" repeats the registry host; write the host in ${at}.host only`,
      );
    if (!own || !img.registry.host) return;
    const host = registryHostKey(img.registry.host);
    const first = byHost.get(host);
    if (!first) byHost.set(host, { at, registry: img.registry });
    else if (!Bun.deepEquals(first.registry, img.registry))
      problems.push(
        `${at}: host ${img.registry.host} is configured differently in ${first.at}; give one host the same settings everywhere (or leave them out to use the top-level registry)`,
      );
  });
  return problems;
}

export const DEFAULT_CONFIG_PATH = "/etc/image-refresh/config.yaml";
export const POD_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/**
 * The store's namespace and name: the configured namespace, else the pod's (read from its
 * service-account namespace file). Outside a pod with no namespace configured there is no
 * telling where the CronJob keeps its book, and guessing could write a second one: an error.
 */
export function storeRef(
  config: Config,
  readFile: (path: string) => string,
): { namespace: string; name: string } {
  if (config.store.namespace) return { namespace: config.store.namespace, name: config.store.name };
  let pod = "";
  try {
    pod = readFile(POD_NAMESPACE_FILE).trim();
  } catch {
    // not in a pod
  }
  if (!DNS_LABEL.test(pod))
    throw new ConfigError(
      `Invalid configuration: store.namespace is not set and this is not a pod (no ${POD_NAMESPACE_FILE}); set store.namespace to the namespace the CronJob runs in`,
    );
  return { namespace: pod, name: config.store.name };
}

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
