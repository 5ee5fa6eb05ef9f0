// `auth: gcp`: a Google access token used as the registry's Basic credentials
// `oauth2accesstoken:<token>`, as Artifact Registry and Container Registry document for
// `docker login`. The token comes, as Google's client libraries find it:
// - from a workload-identity credential file (GOOGLE_APPLICATION_CREDENTIALS naming an
//   `external_account` configuration): the subject token in `credential_source.file` exchanged at
//   `token_url` (Security Token Service, OAuth 2.0 token exchange), then, when the file names
//   `service_account_impersonation_url`, exchanged for that service account's token (IAM
//   Credentials generateAccessToken);
// - else from the metadata server (GKE's, with Workload Identity Federation for GKE): GET
//   /computeMetadata/v1/instance/service-accounts/default/token with `Metadata-Flavor: Google`,
//   at GCE_METADATA_HOST when set.
// The token lives in memory for this tick; every secret of the exchange is scrubbed from any text.

import { awsRequest as identityRequest } from "./aws/request.ts";
import { RegistryError } from "./errors.ts";
import type { HttpContext } from "./http.ts";
import {
  type CloudLogin,
  type CloudSource,
  identityUrl,
  jsonField,
  oauthError,
  readTokenFile,
  refusedStatus,
} from "./identity-parts.ts";

export const GCP_USERNAME = "oauth2accesstoken";
const SCOPE = "https://www.googleapis.com/auth/cloud-platform";
const READER = "roles/artifactregistry.reader on the repositories";

export async function gcpLogin(ctx: HttpContext, src: CloudSource): Promise<CloudLogin> {
  const file = src.env.GOOGLE_APPLICATION_CREDENTIALS;
  const got = file ? await externalAccount(ctx, src) : await metadataToken(ctx, src);
  const origin = `the access token of ${got.identity} (auth: gcp), which needs ${READER}`;
  return {
    credentials: { username: GCP_USERNAME, password: got.token, origin },
    secrets: [...got.secrets, got.token],
  };
}

interface GoogleToken {
  token: string;
  /** Who the token is for, for messages. */
  identity: string;
  /** Secrets used on the way (the subject token, the STS token). */
  secrets: string[];
}

async function metadataToken(ctx: HttpContext, src: CloudSource): Promise<GoogleToken> {
  const host = src.env.GCE_METADATA_HOST || "metadata.google.internal";
  const identity = "the pod's Google service account (the metadata server's default)";
  // The metadata server speaks plain http by design (link-local, or GKE's node-local server).
  const url = URL.parse(`http://${host}/computeMetadata/v1/instance/service-accounts/default/token`);
  if (!url) throw new RegistryError("network", `auth: gcp: GCE_METADATA_HOST ${host} is not a host`);
  const what = `the GCP metadata server's token for ${identity}`;
  const headers = new Headers({ "Metadata-Flavor": "Google", Accept: "application/json" });
  const res = await identityRequest(ctx, { method: "GET", url, headers, what }, []);
  if (res.status !== 200) {
    const refused = refusedStatus(res.status);
    throw new RegistryError(
      refused ? "forbidden" : "server_error",
      `GCP refused ${what} (${res.status}: ${oauthError(res.body)})${refused ? ": annotate the Kubernetes ServiceAccount with iam.gke.io/gcp-service-account naming a Google service account that grants it roles/iam.workloadIdentityUser (or grant the ServiceAccount's principal access directly)" : ""}`,
      { status: res.status },
    );
  }
  return { token: jsonField(res.body, "access_token", what), identity, secrets: [] };
}

interface ExternalAccount {
  type?: unknown;
  audience?: unknown;
  subject_token_type?: unknown;
  token_url?: unknown;
  service_account_impersonation_url?: unknown;
  credential_source?: { file?: unknown; format?: { type?: unknown; subject_token_field_name?: unknown } };
}

/** The credential file: subject token → STS → (the service account's token, when it names one). */
async function externalAccount(ctx: HttpContext, src: CloudSource): Promise<GoogleToken> {
  const cfg = credentialFile(src, src.env.GOOGLE_APPLICATION_CREDENTIALS as string);
  const subject = subjectToken(src, cfg);
  const federated = await stsExchange(ctx, { cfg, subject, insecure: src.insecure });
  const impersonate = cfg.service_account_impersonation_url;
  if (typeof impersonate !== "string")
    return {
      token: federated,
      identity: `the federated principal of ${cfg.audience}`,
      secrets: [subject, federated],
    };
  return impersonation(ctx, { raw: impersonate, insecure: src.insecure, subject, federated });
}

/** Google STS: the OAuth 2.0 token exchange of the subject token for a federated access token. */
async function stsExchange(
  ctx: HttpContext,
  opts: { cfg: ExternalAccount; subject: string; insecure: boolean },
): Promise<string> {
  const { cfg, subject } = opts;
  const audience = cfg.audience as string;
  const tokenUrl = identityUrl(
    typeof cfg.token_url === "string" ? cfg.token_url : "https://sts.googleapis.com/v1/token",
    { what: "auth: gcp: token_url", insecure: opts.insecure },
  );
  const form = new URLSearchParams({
    grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
    audience,
    scope: SCOPE,
    requested_token_type: "urn:ietf:params:oauth:token-type:access_token",
    subject_token: subject,
    subject_token_type: cfg.subject_token_type as string,
  });
  const what = `GCP STS token exchange for workload identity provider ${audience}`;
  const headers = new Headers({
    "Content-Type": "application/x-www-form-urlencoded",
    Accept: "application/json",
  });
  const req = { method: "POST" as const, url: tokenUrl, headers, body: form.toString(), what };
  const res = await identityRequest(ctx, req, [subject]);
  if (res.status !== 200) {
    const refused = refusedStatus(res.status);
    throw new RegistryError(
      refused ? "forbidden" : "server_error",
      `GCP refused ${what} (${res.status} ${oauthError(res.body)})${refused ? ": the provider must trust this cluster's ServiceAccount token issuer and audience, and its attribute condition must admit this ServiceAccount" : ""}`,
      { status: res.status },
    );
  }
  return jsonField(res.body, "access_token", what);
}

/** IAM Credentials generateAccessToken with the federated token as Bearer: the service account's token. */
async function impersonation(
  ctx: HttpContext,
  opts: { raw: string; insecure: boolean; subject: string; federated: string },
): Promise<GoogleToken> {
  const url = identityUrl(opts.raw, {
    what: "auth: gcp: service_account_impersonation_url",
    insecure: opts.insecure,
  });
  const secrets = [opts.subject, opts.federated];
  const account = decodeURIComponent(
    /serviceAccounts\/([^/:]+)/.exec(url.pathname)?.[1] ?? "the service account",
  );
  const identity = `service account ${account}`;
  const what = `GCP generateAccessToken for ${identity}`;
  const headers = new Headers({
    Authorization: `Bearer ${opts.federated}`,
    "Content-Type": "application/json",
    Accept: "application/json",
  });
  const body = JSON.stringify({ scope: [SCOPE] });
  const res = await identityRequest(ctx, { method: "POST", url, headers, body, what }, secrets);
  if (res.status !== 200) {
    const refused = refusedStatus(res.status);
    throw new RegistryError(
      refused ? "forbidden" : "server_error",
      `GCP refused ${what} (${res.status} ${oauthError(res.body)})${refused ? `: the federated principal needs roles/iam.workloadIdentityUser (iam.serviceAccounts.getAccessToken) on ${account}` : ""}`,
      { status: res.status },
    );
  }
  return { token: jsonField(res.body, "accessToken", what), identity, secrets };
}

function credentialFile(src: CloudSource, file: string): ExternalAccount {
  const bad = (why: string) =>
    new RegistryError("unauthorized", `auth: gcp: GOOGLE_APPLICATION_CREDENTIALS ${file} ${why}`);
  let cfg: ExternalAccount;
  try {
    cfg = JSON.parse(src.readFile(file)) as ExternalAccount;
  } catch (err) {
    throw bad(`cannot be read as JSON: ${(err as { code?: string }).code ?? (err as Error).name}`);
  }
  if (cfg?.type !== "external_account")
    throw bad(
      `is not an external_account (workload identity federation) configuration: its type is ${String(cfg?.type)}`,
    );
  if (typeof cfg.audience !== "string" || typeof cfg.subject_token_type !== "string")
    throw bad("names no audience or subject_token_type");
  if (typeof cfg.credential_source?.file !== "string")
    throw bad("has no credential_source.file (only file-sourced credentials are supported)");
  return cfg;
}

/** The subject token: the file's text, or one field of it as JSON (`format.type: json`). */
function subjectToken(src: CloudSource, cfg: ExternalAccount): string {
  const source = cfg.credential_source as {
    file: string;
    format?: { type?: unknown; subject_token_field_name?: unknown };
  };
  const text = readTokenFile(src, source.file, "auth: gcp: the subject token file (credential_source.file)");
  if (source.format?.type !== "json") return text;
  const field = String(source.format.subject_token_field_name ?? "");
  let value: unknown;
  try {
    value = (JSON.parse(text) as Record<string, unknown>)[field];
  } catch {
    value = undefined;
  }
  if (typeof value !== "string" || !value)
    throw new RegistryError(
      "unauthorized",
      `auth: gcp: the subject token file ${source.file} holds no JSON field ${field}`,
    );
  return value;
}
