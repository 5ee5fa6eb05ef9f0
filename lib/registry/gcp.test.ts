// `auth: gcp` without Google: what is asked of whom, and what a refused identity says. The
// exchange against local endpoints and the reference registry is tests/registry/clouds.e2e.test.ts.
import { describe, expect, test } from "bun:test";
import { type Seen, scriptedFetch } from "../../tests/support/scripted-fetch.ts";
import { GCP_USERNAME, gcpLogin } from "./gcp.ts";

const context = scriptedFetch;

const SA = "puller@my-project.iam.gserviceaccount.com";
const AUDIENCE =
  "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/k8s/providers/cluster";
const CREDS = {
  type: "external_account",
  audience: AUDIENCE,
  subject_token_type: "urn:ietf:params:oauth:token-type:jwt",
  token_url: "https://sts.googleapis.com/v1/token",
  service_account_impersonation_url: `https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/${SA}:generateAccessToken`,
  credential_source: { file: "/var/run/secrets/tokens/gcp-token", format: { type: "text" } },
};
const files =
  (creds: object = CREDS) =>
  (path: string) => {
    if (path === "/creds.json") return JSON.stringify(creds);
    if (path === "/var/run/secrets/tokens/gcp-token") return "the-subject-token\n";
    throw Object.assign(new Error("no such file"), { code: "ENOENT" });
  };

describe("the metadata server", () => {
  test("GET the default account's token with Metadata-Flavor: Google, at GCE_METADATA_HOST; the token is the password of oauth2accesstoken", async () => {
    const { ctx, seen } = context(() =>
      Response.json({ access_token: "ya29.meta", expires_in: 3599, token_type: "Bearer" }),
    );
    const login = await gcpLogin(ctx, {
      env: { GCE_METADATA_HOST: "127.0.0.1:8080" },
      readFile: files(),
      insecure: false,
    });
    expect([login.credentials.username, login.credentials.password]).toEqual([GCP_USERNAME, "ya29.meta"]);
    expect(login.secrets).toEqual(["ya29.meta"]);
    expect(seen.map((r) => [r.method, r.url, r.headers.get("metadata-flavor")])).toEqual([
      ["GET", "http://127.0.0.1:8080/computeMetadata/v1/instance/service-accounts/default/token", "Google"],
    ]);
  });

  test("without GCE_METADATA_HOST: metadata.google.internal", async () => {
    const { ctx, seen } = context(() => Response.json({ access_token: "ya29.meta" }));
    await gcpLogin(ctx, { env: {}, readFile: files(), insecure: false });
    expect(seen[0]?.url).toBe(
      "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token",
    );
  });

  test("refused (403): a forbidden WARNING naming the account and the annotation it needs", async () => {
    const { ctx } = context(() => new Response("Forbidden", { status: 403 }));
    const err = (await gcpLogin(ctx, { env: {}, readFile: files(), insecure: false }).catch((e) => e)) as {
      reason: string;
      message: string;
    };
    expect(err.reason).toBe("forbidden");
    expect(err.message).toStartWith(
      "GCP refused the GCP metadata server's token for the pod's Google service account (the metadata server's default) (403: Forbidden): annotate the Kubernetes ServiceAccount with iam.gke.io/gcp-service-account",
    );
  });
});

describe("a workload-identity credential file", () => {
  test("subject token to STS (token exchange), STS's token to generateAccessToken as Bearer; every token a secret", async () => {
    const { ctx, seen } = context((r) =>
      r.url.startsWith("https://sts.")
        ? Response.json({
            access_token: "sts-federated",
            issued_token_type: "urn:ietf:params:oauth:token-type:access_token",
            token_type: "Bearer",
            expires_in: 3600,
          })
        : Response.json({ accessToken: "ya29.impersonated", expireTime: "2026-12-05T09:00:00Z" }),
    );
    const env = { GOOGLE_APPLICATION_CREDENTIALS: "/creds.json" };
    const login = await gcpLogin(ctx, { env, readFile: files(), insecure: false });
    expect(login.credentials.password).toBe("ya29.impersonated");
    expect(login.credentials.origin).toContain(`service account ${SA}`);
    expect(login.secrets).toEqual(["the-subject-token", "sts-federated", "ya29.impersonated"]);
    const [sts, iam] = seen as [Seen, Seen];
    expect([sts.method, sts.url, iam.method, iam.url]).toEqual([
      "POST",
      CREDS.token_url,
      "POST",
      CREDS.service_account_impersonation_url,
    ]);
    expect(Object.fromEntries(new URLSearchParams(sts.body))).toEqual({
      grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
      audience: AUDIENCE,
      scope: "https://www.googleapis.com/auth/cloud-platform",
      requested_token_type: "urn:ietf:params:oauth:token-type:access_token",
      subject_token: "the-subject-token",
      subject_token_type: "urn:ietf:params:oauth:token-type:jwt",
    });
    expect(iam.headers.get("authorization")).toBe("Bearer sts-federated");
    expect(JSON.parse(iam.body)).toEqual({ scope: ["https://www.googleapis.com/auth/cloud-platform"] });
  });

  test("no impersonation URL: the federated token itself", async () => {
    const { ctx, seen } = context(() => Response.json({ access_token: "sts-federated" }));
    const { service_account_impersonation_url: _, ...direct } = CREDS;
    const env = { GOOGLE_APPLICATION_CREDENTIALS: "/creds.json" };
    const login = await gcpLogin(ctx, { env, readFile: files(direct), insecure: false });
    expect([seen.length, login.credentials.password]).toEqual([1, "sts-federated"]);
  });

  test("the service account refusing the federated principal: names it and the role it lacks; no token quoted", async () => {
    const denied = {
      error: {
        code: 403,
        status: "PERMISSION_DENIED",
        message:
          "Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist). sts-federated",
      },
    };
    const { ctx } = context((r) =>
      r.url.startsWith("https://sts.")
        ? Response.json({ access_token: "sts-federated" })
        : Response.json(denied, { status: 403 }),
    );
    const env = { GOOGLE_APPLICATION_CREDENTIALS: "/creds.json" };
    const err = (await gcpLogin(ctx, { env, readFile: files(), insecure: false }).catch((e) => e)) as Error;
    expect(err.message).toBe(
      `GCP refused GCP generateAccessToken for service account ${SA} (403 PERMISSION_DENIED: Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist). [redacted]): the federated principal needs roles/iam.workloadIdentityUser (iam.serviceAccounts.getAccessToken) on ${SA}`,
    );
  });

  test("STS refusing the subject token (400 invalid_grant): names the provider and what it must trust; nothing more asked", async () => {
    const body = {
      error: "invalid_grant",
      error_description: "The audience in the ID Token does not match the expected audience.",
    };
    const { ctx, seen } = context(() => Response.json(body, { status: 400 }));
    const env = { GOOGLE_APPLICATION_CREDENTIALS: "/creds.json" };
    const err = (await gcpLogin(ctx, { env, readFile: files(), insecure: false }).catch((e) => e)) as {
      reason: string;
      message: string;
    };
    expect(err.reason).toBe("forbidden");
    expect(err.message).toBe(
      `GCP refused GCP STS token exchange for workload identity provider ${AUDIENCE} (400 invalid_grant: The audience in the ID Token does not match the expected audience.): the provider must trust this cluster's ServiceAccount token issuer and audience, and its attribute condition must admit this ServiceAccount`,
    );
    expect(seen.length).toBe(1);
  });

  test("a JSON subject token file: the named field", async () => {
    const { ctx, seen } = context(() => Response.json({ access_token: "sts-federated" }));
    const { service_account_impersonation_url: _, ...direct } = CREDS;
    const json = {
      ...direct,
      credential_source: { file: "/t.json", format: { type: "json", subject_token_field_name: "id_token" } },
    };
    const readFile = (p: string) =>
      p === "/creds.json" ? JSON.stringify(json) : JSON.stringify({ id_token: "from-json" });
    await gcpLogin(ctx, {
      env: { GOOGLE_APPLICATION_CREDENTIALS: "/creds.json" },
      readFile,
      insecure: false,
    });
    expect(new URLSearchParams(seen[0]?.body).get("subject_token")).toBe("from-json");
  });

  test("a file that is not an external_account, or not file-sourced: said before any request", async () => {
    const { ctx, seen } = context(() => new Response(""));
    const env = { GOOGLE_APPLICATION_CREDENTIALS: "/creds.json" };
    const key = await gcpLogin(ctx, {
      env,
      readFile: files({ type: "service_account" }),
      insecure: false,
    }).catch((e) => e);
    expect((key as Error).message).toContain("is not an external_account");
    const url = { ...CREDS, credential_source: { url: "http://169.254.169.254/token" } };
    const byUrl = await gcpLogin(ctx, { env, readFile: files(url), insecure: false }).catch((e) => e);
    expect((byUrl as Error).message).toContain("has no credential_source.file");
    expect(seen).toEqual([]);
  });

  test("a token_url over plain http to a host that is not local: refused, nothing sent", async () => {
    const { ctx, seen } = context(() => new Response(""));
    const env = { GOOGLE_APPLICATION_CREDENTIALS: "/creds.json" };
    const plain = { ...CREDS, token_url: "http://sts.example.com/v1/token" };
    const err = await gcpLogin(ctx, { env, readFile: files(plain), insecure: false }).catch((e) => e);
    expect((err as Error).message).toContain("is plain http");
    expect(seen).toEqual([]);
  });
});
