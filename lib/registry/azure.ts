// `auth: azure`: AKS workload identity to an Azure Container Registry, in the steps Microsoft
// documents:
// 1. The pod's federated token (the projected ServiceAccount token in AZURE_FEDERATED_TOKEN_FILE)
//    is the client assertion of an OAuth 2.0 client credentials request to Microsoft Entra ID
//    (AZURE_AUTHORITY_HOST/AZURE_TENANT_ID/oauth2/v2.0/token, client AZURE_CLIENT_ID, scope
//    https://containerregistry.azure.net/.default): an Entra access token.
// 2. ACR's `POST /oauth2/exchange` (grant_type=access_token, service, tenant, access_token) turns
//    it into an ACR refresh token.
// 3. The refresh token is the password, with the null GUID as the user name, for the registry's
//    token endpoint: the registry's own challenge and token request do the rest.
// The tokens live in memory for this tick; every one is scrubbed from any text.
import type { RegistryConfig } from "../config.ts";
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
import { registryEndpoint } from "./reference.ts";

/** The user name that tells ACR the password is an ACR refresh token. */
export const ACR_USERNAME = "00000000-0000-0000-0000-000000000000";
const SCOPE = "https://containerregistry.azure.net/.default";
const ENV = ["AZURE_FEDERATED_TOKEN_FILE", "AZURE_CLIENT_ID", "AZURE_TENANT_ID"] as const;

export async function azureLogin(
  ctx: HttpContext,
  registry: RegistryConfig,
  src: CloudSource,
): Promise<CloudLogin> {
  const missing = ENV.filter((k) => !src.env[k]);
  if (missing.length)
    throw new RegistryError(
      "unauthorized",
      `auth: azure, but the pod has no ${missing.join(", ")}: label the pod azure.workload.identity/use: "true" and annotate its ServiceAccount with azure.workload.identity/client-id (AKS workload identity)`,
    );
  const client = src.env.AZURE_CLIENT_ID as string;
  const tenant = src.env.AZURE_TENANT_ID as string;
  const identity = `client id ${client} in tenant ${tenant}`;
  const federated = readTokenFile(
    src,
    src.env.AZURE_FEDERATED_TOKEN_FILE as string,
    "auth: azure: the federated token file (AZURE_FEDERATED_TOKEN_FILE)",
  );
  const entra = await entraToken(ctx, src, { client, tenant, identity, federated });
  const secrets = [federated, entra];
  const refresh = await acrExchange(ctx, registry, { tenant, identity, entra, secrets });
  const origin = `the ACR refresh token of ${identity} (auth: azure), which needs the AcrPull role on the registry`;
  return {
    credentials: { username: ACR_USERNAME, password: refresh, origin },
    secrets: [...secrets, refresh],
  };
}

interface Who {
  client: string;
  tenant: string;
  identity: string;
  federated: string;
}

/** Entra ID's client credentials grant with the federated token as the client assertion. */
async function entraToken(ctx: HttpContext, src: CloudSource, who: Who): Promise<string> {
  const authority = (src.env.AZURE_AUTHORITY_HOST || "https://login.microsoftonline.com/").replace(
    /\/+$/,
    "",
  );
  const url = identityUrl(`${authority}/${encodeURIComponent(who.tenant)}/oauth2/v2.0/token`, {
    what: "auth: azure: AZURE_AUTHORITY_HOST",
    insecure: src.insecure,
  });
  const form = new URLSearchParams({
    client_id: who.client,
    scope: SCOPE,
    grant_type: "client_credentials",
    client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
    client_assertion: who.federated,
  });
  const what = `a Microsoft Entra token for ${who.identity}`;
  const headers = new Headers({
    "Content-Type": "application/x-www-form-urlencoded",
    Accept: "application/json",
  });
  const res = await identityRequest(ctx, { method: "POST", url, headers, body: form.toString(), what }, [
    who.federated,
  ]);
  if (res.status !== 200) {
    const refused = refusedStatus(res.status);
    throw new RegistryError(
      refused ? "forbidden" : "server_error",
      `Azure refused ${what} (${res.status} ${oauthError(res.body)})${refused ? `: the identity ${who.client} needs a federated identity credential for this cluster's OIDC issuer and this ServiceAccount (subject system:serviceaccount:<namespace>:<name>, audience api://AzureADTokenExchange)` : ""}`,
      { status: res.status },
    );
  }
  return jsonField(res.body, "access_token", what);
}

/** ACR's exchange of the Entra token for its refresh token, at the registry's own host. */
async function acrExchange(
  ctx: HttpContext,
  registry: RegistryConfig,
  opts: { tenant: string; identity: string; entra: string; secrets: string[] },
): Promise<string> {
  const endpoint = registryEndpoint(registry.host, registry.endpoint);
  const url = identityUrl(`${endpoint}/oauth2/exchange`, {
    what: "auth: azure: the registry's exchange",
    insecure: registry.insecure,
  });
  const form = new URLSearchParams({
    grant_type: "access_token",
    service: registry.host,
    tenant: opts.tenant,
    access_token: opts.entra,
  });
  const what = `ACR's exchange at ${registry.host} of the Entra token of ${opts.identity}`;
  const headers = new Headers({
    "Content-Type": "application/x-www-form-urlencoded",
    Accept: "application/json",
  });
  const res = await identityRequest(
    ctx,
    { method: "POST", url, headers, body: form.toString(), what },
    opts.secrets,
  );
  if (res.status !== 200) {
    const refused = refusedStatus(res.status);
    throw new RegistryError(
      refused ? "forbidden" : "server_error",
      `Azure refused ${what} (${res.status} ${oauthError(res.body)})${refused ? `: the identity needs the AcrPull role on ${registry.host}, and the registry must allow Entra authentication` : ""}`,
      { status: res.status },
    );
  }
  return jsonField(res.body, "refresh_token", what);
}
