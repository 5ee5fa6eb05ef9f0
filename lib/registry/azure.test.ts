// `auth: azure` without Azure: what is asked of whom, and what a refused identity says. The
// exchange against local endpoints and the reference registry is tests/registry/clouds.e2e.test.ts.
import { describe, expect, test } from "bun:test";
import { type Seen, scriptedFetch } from "../../tests/support/scripted-fetch.ts";
import type { RegistryConfig } from "../config.ts";
import { ACR_USERNAME, azureLogin } from "./azure.ts";

const context = scriptedFetch;

const CLIENT = "11111111-2222-3333-4444-555555555555";
const TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47";
const ENV = {
  AZURE_FEDERATED_TOKEN_FILE: "/var/run/secrets/azure/tokens/azure-identity-token",
  AZURE_CLIENT_ID: CLIENT,
  AZURE_TENANT_ID: TENANT,
  AZURE_AUTHORITY_HOST: "https://login.microsoftonline.com/",
};
const REGISTRY: RegistryConfig = { host: "contoso.azurecr.io", insecure: false };
const readFile = () => "the-federated-token\n";

describe("AKS workload identity to ACR", () => {
  test("Entra's client credentials with the federated token as assertion, then ACR's exchange: the refresh token for the null GUID", async () => {
    const { ctx, seen } = context((r) =>
      r.url.startsWith("https://login.")
        ? Response.json({ token_type: "Bearer", expires_in: 3599, access_token: "entra-access" })
        : Response.json({ refresh_token: "acr-refresh" }),
    );
    const login = await azureLogin(ctx, REGISTRY, { env: ENV, readFile, insecure: false });
    expect([login.credentials.username, login.credentials.password]).toEqual([ACR_USERNAME, "acr-refresh"]);
    expect(login.secrets).toEqual(["the-federated-token", "entra-access", "acr-refresh"]);
    const [entra, acr] = seen as [Seen, Seen];
    expect([entra.method, entra.url]).toEqual([
      "POST",
      `https://login.microsoftonline.com/${TENANT}/oauth2/v2.0/token`,
    ]);
    expect(Object.fromEntries(new URLSearchParams(entra.body))).toEqual({
      client_id: CLIENT,
      scope: "https://containerregistry.azure.net/.default",
      grant_type: "client_credentials",
      client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
      client_assertion: "the-federated-token",
    });
    expect([acr.method, acr.url]).toEqual(["POST", "https://contoso.azurecr.io/oauth2/exchange"]);
    expect(Object.fromEntries(new URLSearchParams(acr.body))).toEqual({
      grant_type: "access_token",
      service: "contoso.azurecr.io",
      tenant: TENANT,
      access_token: "entra-access",
    });
  });

  test("Entra refusing the assertion: names the client id and the federated credential it lacks; no token quoted", async () => {
    const body = {
      error: "invalid_client",
      error_description:
        "AADSTS70021: No matching federated identity record found for presented assertion. Assertion the-federated-token",
      error_codes: [70021],
    };
    const { ctx } = context(() => Response.json(body, { status: 400 }));
    const err = (await azureLogin(ctx, REGISTRY, { env: ENV, readFile, insecure: false }).catch(
      (e) => e,
    )) as {
      reason: string;
      message: string;
    };
    expect(err.reason).toBe("forbidden");
    expect(err.message).toBe(
      `Azure refused a Microsoft Entra token for client id ${CLIENT} in tenant ${TENANT} (400 invalid_client: AADSTS70021: No matching federated identity record found for presented assertion. Assertion [redacted]): the identity ${CLIENT} needs a federated identity credential for this cluster's OIDC issuer and this ServiceAccount (subject system:serviceaccount:<namespace>:<name>, audience api://AzureADTokenExchange)`,
    );
  });

  test("ACR refusing the exchange: names the identity and the role it needs", async () => {
    const { ctx } = context((r) =>
      r.url.startsWith("https://login.")
        ? Response.json({ access_token: "entra-access" })
        : Response.json(
            { errors: [{ code: "UNAUTHORIZED", message: "authentication required" }] },
            { status: 401 },
          ),
    );
    const err = (await azureLogin(ctx, REGISTRY, { env: ENV, readFile, insecure: false }).catch(
      (e) => e,
    )) as Error;
    expect(err.message).toBe(
      `Azure refused ACR's exchange at contoso.azurecr.io of the Entra token of client id ${CLIENT} in tenant ${TENANT} (401 UNAUTHORIZED: authentication required): the identity needs the AcrPull role on contoso.azurecr.io, and the registry must allow Entra authentication`,
    );
  });

  test("no workload identity in the pod: says which variables are missing and how to get them; nothing sent", async () => {
    const { ctx, seen } = context(() => new Response(""));
    const err = await azureLogin(ctx, REGISTRY, {
      env: { AZURE_CLIENT_ID: CLIENT },
      readFile,
      insecure: false,
    }).catch((e) => e);
    expect((err as Error).message).toBe(
      `auth: azure, but the pod has no AZURE_FEDERATED_TOKEN_FILE, AZURE_TENANT_ID: label the pod azure.workload.identity/use: "true" and annotate its ServiceAccount with azure.workload.identity/client-id (AKS workload identity)`,
    );
    expect(seen).toEqual([]);
  });

  test("an authority over plain http to a host that is not local: refused, nothing sent", async () => {
    const { ctx, seen } = context(() => new Response(""));
    const env = { ...ENV, AZURE_AUTHORITY_HOST: "http://login.example.com/" };
    const err = await azureLogin(ctx, REGISTRY, { env, readFile, insecure: false }).catch((e) => e);
    expect((err as Error).message).toContain("is plain http");
    expect(seen).toEqual([]);
  });

  test("bounded by the request timeout and by the tick's own deadline: a timeout naming the endpoint", async () => {
    const hang = (_: unknown, init?: RequestInit) =>
      new Promise<Response>((_, reject) => {
        const signal = init?.signal as AbortSignal;
        if (signal.aborted) reject(signal.reason);
        signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
    const base = context(() => new Response("")).ctx;
    const slow = { ...base, fetch: hang as typeof fetch, requestTimeoutMs: 20 };
    const timedOut = (await azureLogin(slow, REGISTRY, { env: ENV, readFile, insecure: false }).catch(
      (e) => e,
    )) as {
      reason: string;
      message: string;
    };
    expect([timedOut.reason, timedOut.message]).toEqual([
      "timeout",
      `a Microsoft Entra token for client id ${CLIENT} in tenant ${TENANT}: no complete response from login.microsoftonline.com:443 within 20 ms`,
    ]);
    const tick = new AbortController();
    tick.abort();
    const ended = { ...base, fetch: hang as typeof fetch, requestTimeoutMs: 60_000, signal: tick.signal };
    const cut = (await azureLogin(ended, REGISTRY, { env: ENV, readFile, insecure: false }).catch(
      (e) => e,
    )) as {
      reason: string;
    };
    expect(cut.reason).toBe("timeout");
  });
});
