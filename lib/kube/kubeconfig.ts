// Resolves where the API server is and how to authenticate, the way kubectl and client-go do:
// --kubeconfig, then $KUBECONFIG, then in-cluster, then ~/.kube/config. Everything is read and
// validated here, once; the HTTP layer only ever sees a typed Connection.
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";
import type * as z from "zod/mini";
import { decodeBase64Utf8 } from "../base64.ts";
import { checkKubeconfig } from "../checks/checks.generated.ts";
import { formatPath, lazy, parseChecked, urlWithoutCredentials } from "../issues.ts";
import { mark } from "../startup-timing.ts";
import { KubeconfigError } from "./errors.ts";
import { type ExecConfig, parseExecConfig } from "./exec.ts";

export interface Connection {
  server: string;
  caPem?: string;
  insecureSkipTlsVerify: boolean;
  token?: string;
  /** Re-read on every request: projected service-account tokens rotate. */
  tokenFile?: string;
  clientCertPem?: string;
  clientKeyPem?: string;
  /** A credential plugin (humans' kubeconfigs only), run by the HTTP layer when a request needs it. */
  exec?: ExecConfig;
  namespace?: string;
}

export interface ResolveOptions {
  kubeconfigFlag?: string;
  env: Record<string, string | undefined>;
  readFile?: (p: string) => string;
  homeDir?: string;
  /** --context: a context other than the kubeconfig's current-context. */
  context?: string;
}

export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

const readUtf8 = (p: string) => readFileSync(p, "utf8");

export function resolveConnection(opts: ResolveOptions): Connection {
  const readFile = opts.readFile ?? readUtf8;
  const context = opts.context;
  if (opts.kubeconfigFlag) return fromKubeconfigFile(opts.kubeconfigFlag, readFile, context);
  const list = (opts.env.KUBECONFIG ?? "").split(":").filter((p) => p !== "");
  if (list.length > 0) {
    // Merged as client-go merges it: files that do not exist are skipped, one that exists but
    // does not parse is an error.
    const loaded = list.flatMap((path) => {
      const text = tryRead(path, readFile);
      return text === undefined ? [] : [loadFile(text, path)];
    });
    if (loaded.length === 0)
      throw new KubeconfigError(`Cannot read kubeconfig: no file of KUBECONFIG exists (${list.join(", ")})`);
    const where = loaded.length === 1 ? (loaded[0] as LoadedFile).path : `KUBECONFIG (${list.join(", ")})`;
    return connectionFrom(merge(loaded, where), readFile, context);
  }
  // As client-go: a context named on the command line is a kubeconfig's, so it skips in-cluster.
  if (!context && (opts.env.KUBERNETES_SERVICE_HOST || opts.env.KUBERNETES_SERVICE_PORT)) {
    return inCluster(opts.env, readFile);
  }
  const home = opts.homeDir ?? opts.env.HOME ?? homedir();
  const path = join(home, ".kube", "config");
  const text = tryRead(path, readFile);
  if (text === undefined) {
    throw new KubeconfigError(
      `Cannot find a cluster: no --kubeconfig, no KUBECONFIG, not in a cluster and no ${path}`,
    );
  }
  return parseKubeconfig(text, { path, readFile, context });
}

/** os.homedir(), with node:os loaded only when HOME is unset: importing it costs a start-up about 0.15 ms. */
function homedir(): string {
  return (require("node:os") as typeof import("node:os")).homedir();
}

function tryRead(path: string, readFile: (p: string) => string): string | undefined {
  try {
    return readFile(path);
  } catch {
    return undefined;
  }
}

function fromKubeconfigFile(path: string, readFile: (p: string) => string, context?: string): Connection {
  const text = tryRead(path, readFile);
  if (text === undefined) throw new KubeconfigError(`Cannot read kubeconfig ${path}: file not readable`);
  return parseKubeconfig(text, { path, readFile, context });
}

function inCluster(env: Record<string, string | undefined>, readFile: (p: string) => string): Connection {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw new KubeconfigError(
      "Cannot load in-cluster configuration: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must both be set",
    );
  }
  const hostPart = host.includes(":") ? `[${host}]` : host; // IPv6 literal, like net.JoinHostPort
  const tokenFile = `${SERVICE_ACCOUNT_DIR}/token`;
  if (!tryRead(tokenFile, readFile)?.trim()) {
    throw new KubeconfigError(`Cannot load in-cluster configuration: ${tokenFile} is missing or empty`);
  }
  const caPem = tryRead(`${SERVICE_ACCOUNT_DIR}/ca.crt`, readFile);
  const namespace =
    env.POD_NAMESPACE || tryRead(`${SERVICE_ACCOUNT_DIR}/namespace`, readFile)?.trim() || "default";
  return { server: `https://${hostPart}:${port}`, caPem, insecureSkipTlsVerify: false, tokenFile, namespace };
}

// Built on first use: a pod reads no kubeconfig (in-cluster configuration), so its ticks never pay for it.
export const kubeconfigSchemas = lazy((z) => {
  const nonEmpty = z.string().check(z.minLength(1));
  const optionalPath = z.optional(nonEmpty);

  const ClusterSchema = z.object({
    server: urlWithoutCredentials("use a token, tokenFile or client certificate"),
    "certificate-authority": optionalPath,
    "certificate-authority-data": optionalPath,
    "insecure-skip-tls-verify": z.optional(z.boolean()),
  });

  const UserSchema = z.object({
    token: optionalPath,
    tokenFile: optionalPath,
    "client-certificate": optionalPath,
    "client-certificate-data": optionalPath,
    "client-key": optionalPath,
    "client-key-data": optionalPath,
    exec: z.optional(z.unknown()),
    "auth-provider": z.optional(z.unknown()),
  });

  const ContextSchema = z.object({
    cluster: nonEmpty,
    user: z.optional(z.string()),
    namespace: z.optional(z.string()),
  });

  // One file. current-context and contexts may be absent from a file that only adds credentials
  // to a KUBECONFIG list; the merged result must have them.
  const file = z.object({
    "current-context": z.optional(z.string()),
    clusters: z.nullish(z.array(z.object({ name: nonEmpty, cluster: ClusterSchema }))),
    users: z.nullish(z.array(z.object({ name: nonEmpty, user: z.nullish(UserSchema) }))),
    contexts: z.nullish(z.array(z.object({ name: nonEmpty, context: ContextSchema }))),
  });
  return { cluster: ClusterSchema, user: UserSchema, context: ContextSchema, file };
});
type Schemas = ReturnType<typeof kubeconfigSchemas>;
type Cluster = z.output<Schemas["cluster"]>;
type User = z.output<Schemas["user"]>;
type Context = z.output<Schemas["context"]>;

interface Source {
  path: string;
  readFile: (p: string) => string;
}

interface LoadedFile {
  path: string;
  cfg: z.output<Schemas["file"]>;
}

/** A named entry and the file it came from: relative paths in it resolve against that file. */
interface Sourced<T> {
  value: T;
  path: string;
}

interface Merged {
  /** How messages name the configuration: a file, or the KUBECONFIG list. */
  where: string;
  currentContext?: string;
  clusters: Map<string, Sourced<Cluster>>;
  users: Map<string, Sourced<User | undefined>>;
  contexts: Map<string, Context>;
}

function loadFile(text: string, path: string): LoadedFile {
  const value = parseYaml(text, path);
  mark("kubeconfig-parsed");
  const parsed = parseChecked(checkKubeconfig, () => kubeconfigSchemas().file, value);
  mark("kubeconfig-checked");
  if (!parsed.ok) {
    // Field paths and the schema's messages only: values (a token!) never enter the message.
    const fields = parsed.issues.map((i) => `${formatPath(i.path)}: ${i.message}`).join("; ");
    throw new KubeconfigError(`Invalid kubeconfig ${path}: ${fields}`);
  }
  return { path, cfg: parsed.value };
}

/** kubectl's rule for a KUBECONFIG list: the first file to set a value or a name wins. */
function merge(files: readonly LoadedFile[], where: string): Merged {
  const m: Merged = { where, clusters: new Map(), users: new Map(), contexts: new Map() };
  const add = <T>(map: Map<string, T>, name: string, value: T) => {
    if (!map.has(name)) map.set(name, value);
  };
  for (const { path, cfg } of files) {
    m.currentContext ||= cfg["current-context"] || undefined;
    for (const c of cfg.clusters ?? []) add(m.clusters, c.name, { value: c.cluster, path });
    for (const u of cfg.users ?? []) add(m.users, u.name, { value: u.user, path });
    for (const c of cfg.contexts ?? []) add(m.contexts, c.name, c.context);
  }
  return m;
}

export function parseKubeconfig(text: string, src: Source & { context?: string }): Connection {
  return connectionFrom(merge([loadFile(text, src.path)], src.path), src.readFile, src.context);
}

function parseYaml(text: string, path: string): unknown {
  try {
    return Bun.YAML.parse(text);
  } catch (e) {
    throw new KubeconfigError(`Invalid kubeconfig ${path}: not YAML or JSON (${(e as Error).message})`);
  }
}

function connectionFrom(m: Merged, readFile: (p: string) => string, override?: string): Connection {
  const ctxName = override ?? m.currentContext;
  if (!ctxName) throw new KubeconfigError(`Invalid kubeconfig ${m.where}: current-context is not set`);
  const ctx = m.contexts.get(ctxName);
  if (!ctx && override !== undefined) throw unknownContext(m, override);
  if (!ctx)
    throw new KubeconfigError(
      `Invalid kubeconfig ${m.where}: current-context "${ctxName}" not found in contexts`,
    );
  const cluster = m.clusters.get(ctx.cluster);
  if (!cluster) {
    throw new KubeconfigError(
      `Invalid kubeconfig ${m.where}: cluster "${ctx.cluster}" of context "${ctxName}" not found in clusters`,
    );
  }
  const entry = ctx.user ? m.users.get(ctx.user) : undefined;
  if (ctx.user && !entry) {
    throw new KubeconfigError(
      `Invalid kubeconfig ${m.where}: user "${ctx.user}" of context "${ctxName}" not found in users`,
    );
  }
  return {
    ...clusterSettings(cluster.value, { path: cluster.path, readFile }),
    ...userSettings(entry?.value ?? {}, { path: entry?.path ?? cluster.path, readFile }, ctx.user ?? ""),
    namespace: ctx.namespace || undefined,
  };
}

function unknownContext(m: Merged, name: string): KubeconfigError {
  const known = [...m.contexts.keys()];
  const list = known.length ? known.map((k) => `"${k}"`).join(", ") : "none";
  return new KubeconfigError(
    `Cannot use --context "${name}": no such context in kubeconfig ${m.where} (known contexts: ${list})`,
  );
}

function clusterSettings(
  c: Cluster,
  src: Source,
): Pick<Connection, "server" | "caPem" | "insecureSkipTlsVerify"> {
  const caPem = pemFrom(c, "certificate-authority", src);
  return {
    server: c.server.replace(/\/+$/, ""),
    caPem,
    insecureSkipTlsVerify: c["insecure-skip-tls-verify"] === true,
  };
}

function userSettings(u: User, src: Source, name: string): Partial<Connection> {
  if (u["auth-provider"] && !u.token && !u.tokenFile) {
    throw new KubeconfigError(
      `Invalid kubeconfig ${src.path}: users[${name}].user.auth-provider is not supported; use a token, tokenFile, client certificate or exec plugin`,
    );
  }
  const clientCertPem = pemFrom(u, "client-certificate", src);
  const clientKeyPem = pemFrom(u, "client-key", src);
  if (Boolean(clientCertPem) !== Boolean(clientKeyPem)) {
    throw new KubeconfigError(
      `Invalid kubeconfig ${src.path}: users[${name}].user needs both client-certificate and client-key`,
    );
  }
  const tokenFile = u.tokenFile ? resolvePath(u.tokenFile, src) : undefined;
  // As client-go: a token or certificate in the kubeconfig wins; the plugin is then not run.
  const exec =
    u.exec && !u.token && !tokenFile && !clientCertPem
      ? parseExecConfig(u.exec, `users[${name}].user.exec`, src.path)
      : undefined;
  return { token: u.token, tokenFile, clientCertPem, clientKeyPem, exec };
}

type PemKey = "certificate-authority" | "client-certificate" | "client-key";

/** `<key>-data` (base64 PEM) wins over `<key>` (a file), as in client-go. */
function pemFrom(obj: Partial<Record<PemKey | `${PemKey}-data`, string>>, key: PemKey, src: Source) {
  const data = obj[`${key}-data`];
  if (data !== undefined) {
    const pem = decodeBase64Utf8(data);
    if (!pem.includes("-----BEGIN")) {
      throw new KubeconfigError(`Invalid kubeconfig ${src.path}: ${key}-data is not base64-encoded PEM`);
    }
    return pem;
  }
  const file = obj[key];
  if (file === undefined) return undefined;
  const path = resolvePath(file, src);
  const text = tryRead(path, src.readFile);
  if (text === undefined)
    throw new KubeconfigError(`Invalid kubeconfig ${src.path}: ${key} file ${path} is not readable`);
  return text;
}

function resolvePath(p: string, src: Source): string {
  return isAbsolute(p) ? p : resolve(dirname(src.path), p);
}
