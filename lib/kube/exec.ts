// kubeconfig `users[].user.exec` credential plugins, run the way client-go runs them
// (plugin/pkg/client/auth/exec/exec.go): for a human's EKS, GKE, AKS or OIDC kubeconfig. The
// CronJob's in-cluster configuration never names one, so the tick itself never starts a process.
// Messages reuse client-go's texts so they can be searched; a plugin's stdout (it holds the
// token) never enters one.

import { isAbsolute, resolve } from "node:path";
import { encodeBase64Utf8 } from "../base64.ts";
import { lazy } from "../issues.ts";
import { KubeconfigError } from "./errors.ts";

const API_VERSIONS = ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"] as const;
type ApiVersion = (typeof API_VERSIONS)[number];
type InteractiveMode = "Never" | "IfAvailable" | "Always";

export interface ExecConfig {
  command: string;
  args: string[];
  env: Array<{ name: string; value: string }>;
  apiVersion: ApiVersion;
  installHint?: string;
  interactiveMode: InteractiveMode;
  provideClusterInfo: boolean;
}

/** What `provideClusterInfo` hands the plugin (client-go rest/exec.go ConfigToExecCluster). */
export interface ExecCluster {
  server: string;
  caPem?: string;
  insecureSkipTlsVerify: boolean;
}

export interface ExecCredential {
  token?: string;
  clientCertPem?: string;
  clientKeyPem?: string;
  /** Epoch ms; undefined = valid until the server says 401. */
  expiresAt?: number;
}

// CSI escape sequences (ESC [ … final byte), built from a string so no control character is a literal.
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;?]*[ -/]*[@-~]`, "g");

const rawExec = lazy((z) =>
  z.object({
    command: z.optional(z.string()),
    args: z.optional(z.nullable(z.array(z.string()))),
    env: z.optional(z.nullable(z.array(z.object({ name: z.string(), value: z.string() })))),
    apiVersion: z.optional(z.string()),
    installHint: z.optional(z.string()),
    interactiveMode: z.optional(z.string()),
    provideClusterInfo: z.optional(z.boolean()),
  }),
);

/** Validates `exec` as client-go's clientcmd validation.go and api/v1/defaults.go do. */
export function parseExecConfig(raw: unknown, where: string, kubeconfigPath: string): ExecConfig {
  const bad = (what: string) =>
    new KubeconfigError(`Invalid kubeconfig ${kubeconfigPath}: ${where}: ${what}`);
  const parsed = rawExec().safeParse(raw);
  if (!parsed.success) {
    const fields = parsed.error.issues.map((i) => `${i.path.join(".") || "exec"}: ${i.message}`);
    throw bad(fields.join("; "));
  }
  const e = parsed.data;
  if (!e.command) throw bad("command must be specified for exec plugin");
  const apiVersion = API_VERSIONS.find((v) => v === e.apiVersion);
  if (!apiVersion) throw bad(`exec plugin: invalid apiVersion "${e.apiVersion ?? ""}"`);
  // v1 has no default; v1beta1 defaults to IfAvailable.
  const mode = e.interactiveMode ?? (apiVersion.endsWith("/v1beta1") ? "IfAvailable" : undefined);
  if (mode === undefined) throw bad("interactiveMode must be specified for exec plugin");
  if (mode !== "Never" && mode !== "IfAvailable" && mode !== "Always")
    throw bad(`invalid interactiveMode "${mode}": valid values are Never, IfAvailable, Always`);
  return {
    command: commandPath(e.command, kubeconfigPath),
    args: e.args ?? [],
    env: e.env ?? [],
    apiVersion,
    // ANSI escapes are stripped, as client_config.go does, so a hint cannot repaint a terminal.
    installHint: e.installHint?.replace(ANSI, ""),
    interactiveMode: mode,
    provideClusterInfo: e.provideClusterInfo === true,
  };
}

/** A relative path with a separator resolves against the kubeconfig's directory (loader.go). */
function commandPath(command: string, kubeconfigPath: string): string {
  if (!command.includes("/") || isAbsolute(command)) return command;
  return resolve(kubeconfigPath, "..", command);
}

const output = lazy((z) =>
  z.object({
    apiVersion: z.optional(z.string()),
    kind: z.optional(z.string()),
    status: z.optional(
      z.nullable(
        z.object({
          token: z.optional(z.string()),
          clientCertificateData: z.optional(z.string()),
          clientKeyData: z.optional(z.string()),
          expirationTimestamp: z.optional(z.nullable(z.string())),
        }),
      ),
    ),
  }),
);

/** Decodes the plugin's stdout as one ExecCredential (exec.go refreshCredsLocked). */
export function parseExecOutput(stdout: string, cfg: ExecConfig): ExecCredential {
  const fail = (what: string) => new Error(`exec plugin ${what}`);
  let json: unknown;
  try {
    json = JSON.parse(stdout);
  } catch {
    throw fail("returned output that is not an ExecCredential in JSON");
  }
  const parsed = output().safeParse(json);
  if (!parsed.success || !parsed.data.apiVersion || parsed.data.kind !== "ExecCredential")
    throw fail("returned output that is not an ExecCredential (apiVersion and kind required)");
  const out = parsed.data;
  if (out.apiVersion !== cfg.apiVersion)
    throw fail(
      `is configured to use API version ${cfg.apiVersion}, plugin returned version ${out.apiVersion}`,
    );
  const s = out.status;
  if (!s) throw fail("didn't return a status field");
  const cert = s.clientCertificateData || undefined;
  const key = s.clientKeyData || undefined;
  if (!s.token && !cert && !key) throw fail("didn't return a token or cert/key pair");
  if (Boolean(cert) !== Boolean(key)) throw fail("returned only certificate or key, not both");
  let expiresAt: number | undefined;
  if (s.expirationTimestamp) {
    expiresAt = Date.parse(s.expirationTimestamp);
    if (Number.isNaN(expiresAt)) throw fail("returned an expirationTimestamp that is not RFC 3339");
  }
  return { token: s.token || undefined, clientCertPem: cert, clientKeyPem: key, expiresAt };
}

/** The KUBERNETES_EXEC_INFO value: an ExecCredential with only `spec`. */
export function execInfo(cfg: ExecConfig, cluster: ExecCluster, interactive: boolean): string {
  const spec: Record<string, unknown> = { interactive };
  if (cfg.provideClusterInfo) {
    spec.cluster = {
      server: cluster.server,
      "insecure-skip-tls-verify": cluster.insecureSkipTlsVerify || undefined,
      "certificate-authority-data": cluster.caPem ? encodeBase64Utf8(cluster.caPem) : undefined,
      // No per-cluster plugin config (the client.authentication.k8s.io/exec extension) is read;
      // kubectl sends null for it then, so do we.
      config: null,
    };
  }
  return JSON.stringify({ kind: "ExecCredential", apiVersion: cfg.apiVersion, spec });
}
