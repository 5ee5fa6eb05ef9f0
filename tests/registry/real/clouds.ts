// Local stand-ins for Google's and Microsoft's identity endpoints, written from their published
// protocol documents (each field and status below is cited where it is checked or answered), for
// tests/registry/clouds.e2e.test.ts. Each binds 127.0.0.1, records what it was asked, answers a
// refusal when told to, and stops by itself after two minutes.

export interface Asked {
  method: string;
  path: string;
  search: string;
  headers: Headers;
  form: Record<string, string>;
}

export interface StandIn {
  url: string;
  /** host:port, for GCE_METADATA_HOST. */
  host: string;
  asked: Asked[];
  /** Answer the next requests with the documented refusal. */
  refuse: boolean;
  stop(): void;
}

function serve(answer: (q: Asked, self: StandIn) => Response | Promise<Response>): StandIn {
  const self: StandIn = { url: "", host: "", asked: [], refuse: false, stop: () => {} };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const text = req.method === "POST" ? await req.text() : "";
      const json = (req.headers.get("content-type") ?? "").includes("json");
      const form = json || !text ? {} : Object.fromEntries(new URLSearchParams(text));
      const q = { method: req.method, path: url.pathname, search: url.search, headers: req.headers, form };
      if (json && text) Object.assign(q.form, { json: text });
      self.asked.push(q);
      return answer(q, self);
    },
  });
  const guard = setTimeout(() => server.stop(true), 120_000);
  guard.unref();
  self.url = `http://127.0.0.1:${server.port}`;
  self.host = `127.0.0.1:${server.port}`;
  self.stop = () => {
    clearTimeout(guard);
    server.stop(true);
  };
  return self;
}

export interface GoogleSecrets {
  /** What the metadata server and generateAccessToken hand out: the registry's password. */
  accessToken: string;
  /** The subject token in credential_source.file. */
  subjectToken: string;
  /** What STS hands out for it. */
  federatedToken: string;
  audience: string;
  serviceAccount: string;
}

/**
 * Google's side, one server for the three endpoints:
 * - the metadata server (https://cloud.google.com/compute/docs/access/authenticate-workloads#applications):
 *   GET /computeMetadata/v1/instance/service-accounts/default/token with `Metadata-Flavor: Google`
 *   answers `{"access_token","expires_in","token_type":"Bearer"}`; a request without the header,
 *   or an endpoint refused by the instance's settings, is 403 Forbidden, an unknown one 404
 *   (https://cloud.google.com/compute/docs/troubleshooting/troubleshoot-metadata-server,
 *   "Troubleshoot server codes").
 * - Security Token Service (https://cloud.google.com/iam/docs/reference/sts/rest/v1/TopLevel/token,
 *   and AIP-4117 https://google.aip.dev/auth/4117 for the file-sourced credential): POST /v1/token,
 *   form fields grant_type `urn:ietf:params:oauth:grant-type:token-exchange`, audience (the
 *   provider's full resource name), scope, requested_token_type
 *   `urn:ietf:params:oauth:token-type:access_token`, subject_token, subject_token_type; answers
 *   `{"access_token","issued_token_type","token_type":"Bearer","expires_in"}`; a refused subject
 *   token is an OAuth 2.0 error (RFC 6749 section 5.2: 400, `{"error":"invalid_grant","error_description"}`).
 * - IAM Credentials generateAccessToken
 *   (https://cloud.google.com/iam/docs/reference/credentials/rest/v1/projects.serviceAccounts/generateAccessToken):
 *   POST /v1/projects/-/serviceAccounts/{email}:generateAccessToken, Bearer the federated token,
 *   JSON body `{"scope":[...]}` (required, at least one); answers `{"accessToken","expireTime"}`;
 *   without iam.serviceAccounts.getAccessToken on the account, Google's error
 *   `{"error":{"code":403,"message","status":"PERMISSION_DENIED"}}`.
 */
export function startGoogle(s: GoogleSecrets): StandIn {
  return serve((q, self) => {
    if (q.path === "/computeMetadata/v1/instance/service-accounts/default/token") {
      if (q.headers.get("metadata-flavor") !== "Google" || self.refuse)
        return new Response("Forbidden", { status: 403 });
      return Response.json({ access_token: s.accessToken, expires_in: 3599, token_type: "Bearer" });
    }
    if (q.path === "/v1/token" && q.method === "POST") return sts(q, s);
    const impersonate = `/v1/projects/-/serviceAccounts/${s.serviceAccount}:generateAccessToken`;
    if (decodeURIComponent(q.path) === impersonate && q.method === "POST") {
      const bearer = q.headers.get("authorization");
      const scope = (JSON.parse(q.form.json ?? "{}") as { scope?: string[] }).scope ?? [];
      if (self.refuse || bearer !== `Bearer ${s.federatedToken}` || scope.length === 0)
        // A server that quotes what it was given: the test sees whether the product scrubs it.
        return Response.json(
          {
            error: {
              code: 403,
              message: `Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist). Presented token: ${bearer?.replace(/^Bearer /, "")}`,
              status: "PERMISSION_DENIED",
            },
          },
          { status: 403 },
        );
      return Response.json({
        accessToken: s.accessToken,
        expireTime: new Date(Date.now() + 3600_000).toISOString(),
      });
    }
    return new Response("Not Found", { status: 404 });
  });
}

function sts(q: Asked, s: GoogleSecrets): Response {
  const f = q.form;
  const ok =
    f.grant_type === "urn:ietf:params:oauth:grant-type:token-exchange" &&
    f.requested_token_type === "urn:ietf:params:oauth:token-type:access_token" &&
    f.subject_token_type === "urn:ietf:params:oauth:token-type:jwt" &&
    f.audience === s.audience &&
    f.scope === "https://www.googleapis.com/auth/cloud-platform" &&
    f.subject_token === s.subjectToken;
  if (!ok)
    return Response.json(
      {
        error: "invalid_grant",
        error_description: "The audience in the ID Token does not match the expected audience.",
      },
      { status: 400 },
    );
  return Response.json({
    access_token: s.federatedToken,
    issued_token_type: "urn:ietf:params:oauth:token-type:access_token",
    token_type: "Bearer",
    expires_in: 3600,
  });
}

export interface AzureSecrets {
  federatedToken: string;
  clientId: string;
  tenantId: string;
  /** What Entra hands out. */
  entraToken: string;
}

/**
 * Microsoft Entra ID's token endpoint, the client credentials grant with a federated credential
 * (https://learn.microsoft.com/entra/identity-platform/v2-oauth2-client-creds-grant-flow,
 * "Third case: Access token request with a federated credential"): POST /{tenant}/oauth2/v2.0/token,
 * form fields client_id, scope (the resource's `.default`; here
 * `https://containerregistry.azure.net/.default`), client_assertion_type
 * `urn:ietf:params:oauth:client-assertion-type:jwt-bearer`, client_assertion (the Kubernetes token),
 * grant_type `client_credentials`; answers `{"token_type":"Bearer","expires_in","access_token"}`;
 * an error is 400 Bad Request with `{"error","error_description","error_codes",...}` ("Error
 * response"); AADSTS70021 is "No matching federated identity record found for presented assertion".
 */
export function startEntra(s: AzureSecrets): StandIn {
  return serve((q, self) => {
    const f = q.form;
    const ok =
      q.method === "POST" &&
      q.path === `/${s.tenantId}/oauth2/v2.0/token` &&
      f.client_id === s.clientId &&
      f.scope === "https://containerregistry.azure.net/.default" &&
      f.client_assertion_type === "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" &&
      f.client_assertion === s.federatedToken &&
      f.grant_type === "client_credentials";
    if (!ok || self.refuse)
      return Response.json(
        {
          error: "invalid_client",
          error_description: `AADSTS70021: No matching federated identity record found for presented assertion. Assertion: ${f.client_assertion}\r\nTrace ID: 255d1aef-8c98-452f-ac51-23d051240864`,
          error_codes: [70021],
        },
        { status: 400 },
      );
    return Response.json({ token_type: "Bearer", expires_in: 3599, access_token: s.entraToken });
  });
}

/**
 * The registry host of an Azure Container Registry, from ACR's "AAD-OAuth" document
 * (https://github.com/Azure/acr/blob/main/docs/AAD-OAuth.md): `POST /oauth2/exchange` with form
 * fields grant_type `access_token`, service (the registry's name), tenant, access_token (the Entra
 * token) answers 200 `{"refresh_token"}`; the refresh token is then the password of the null GUID
 * `00000000-0000-0000-0000-000000000000` ("Authenticating docker with an ACR refresh token"), which
 * the registry's token endpoint (its Bearer realm, `/oauth2/token` on the same host) takes as Basic
 * credentials. Here `/oauth2/token` is forwarded to the test's token issuer (which checks that Basic
 * pair and signs what distribution verifies) and `/v2/` to the reference registry.
 */
export function startAcrFront(opts: {
  /** The registry's name, which the exchange's `service` must be. */
  service: () => string;
  tenantId: string;
  entraToken: string;
  refreshToken: string;
  issuerRealm: string;
  registry: () => string;
}): StandIn {
  return serve(async (q, self) => {
    if (q.path === "/oauth2/exchange" && q.method === "POST") {
      const f = q.form;
      if (
        self.refuse ||
        f.grant_type !== "access_token" ||
        f.service !== opts.service() ||
        f.tenant !== opts.tenantId ||
        f.access_token !== opts.entraToken
      )
        return Response.json(
          { errors: [{ code: "UNAUTHORIZED", message: "authentication required" }] },
          { status: 401 },
        );
      return Response.json({ refresh_token: opts.refreshToken });
    }
    return forward(q, q.path === "/oauth2/token" ? opts.issuerRealm : `${opts.registry()}${q.path}`);
  });
}

async function forward(q: Asked, target: string): Promise<Response> {
  const headers = new Headers(q.headers);
  headers.delete("host");
  const res = await fetch(`${target}${q.search}`, {
    method: q.method,
    headers,
    redirect: "manual",
    signal: AbortSignal.timeout(10_000),
  });
  const out = new Headers(res.headers);
  out.delete("content-encoding"); // fetch has already decoded the body
  return new Response(q.method === "HEAD" ? null : await res.arrayBuffer(), {
    status: res.status,
    headers: out,
  });
}
