// `auth: gcp` and `auth: azure` end to end: the compiled binary, with no pull secret, gets its
// registry credentials from the pod's cloud identity through local stand-ins written from
// Google's and Microsoft's published protocols (tests/registry/real/clouds.ts cites each field and
// status), then uses them against the reference registry (Debian's docker-registry) behind a
// Bearer token issuer that accepts only the credential the cloud's documents prescribe:
// `oauth2accesstoken:<access token>` for Google, `00000000-0000-0000-0000-000000000000:<ACR refresh
// token>` for Azure. Each identity endpoint is asked once per tick for two images; a refused
// identity is a WARNING naming the identity and what it lacks; no token appears in the logs, the
// spans or the store.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { needTools } from "../support/tools.ts";
import {
  type AzureSecrets,
  type GoogleSecrets,
  type StandIn,
  startAcrFront,
  startEntra,
  startGoogle,
} from "./real/clouds.ts";
import { buildImage } from "./real/images.ts";
import { type RealRegistry, startRealRegistry } from "./real/registry.ts";
import { push, rawDigest } from "./real/skopeo.ts";
import { startTokenIssuer, type TokenIssuer } from "./real/token-issuer.ts";
import { type RealWorld, startRealWorld, TAG } from "./real/world.ts";

const FILE = "tests/registry/clouds.e2e.test.ts";
const missing = needTools(
  [
    { tool: "docker-registry", apt: "docker-registry" },
    { tool: "skopeo", apt: "skopeo" },
    { tool: "openssl", apt: "openssl" },
  ],
  FILE,
);

const IMAGES = [
  { key: "api", repository: "myorg/api" },
  { key: "worker", repository: "myorg/worker" },
];
const dir = mkdtempSync(join(tmpdir(), "ir-clouds-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const id = () => crypto.randomUUID().replaceAll("-", "");

const SA = "puller@my-project.iam.gserviceaccount.com";
const GOOGLE: GoogleSecrets = {
  accessToken: `ya29.c.${id()}`,
  subjectToken: `eyJhbGciOiJSUzI1NiJ9.gke-subject-${id()}.sig`,
  federatedToken: `ya29.d.federated-${id()}`,
  audience:
    "//iam.googleapis.com/projects/123456789/locations/global/workloadIdentityPools/k8s/providers/cluster",
  serviceAccount: SA,
};
const AZURE: AzureSecrets = {
  federatedToken: `eyJhbGciOiJSUzI1NiJ9.aks-federated-${id()}.sig`,
  clientId: "11111111-2222-3333-4444-555555555555",
  tenantId: "72f988bf-86f1-41af-91ab-2d7cd011db47",
  entraToken: `eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.entra-${id()}.sig`,
};
const REFRESH = `eyJhbGciOiJSUzI1NiJ9.acr-refresh-${id()}.sig`;
const NULL_GUID = "00000000-0000-0000-0000-000000000000";

/** Every token of both exchanges, in each form a log line, a span or the store could carry it. */
function secretsIn(text: string): string[] {
  const tokens = [
    GOOGLE.accessToken,
    GOOGLE.subjectToken,
    GOOGLE.federatedToken,
    AZURE.federatedToken,
    AZURE.entraToken,
    REFRESH,
    btoa(`oauth2accesstoken:${GOOGLE.accessToken}`),
    btoa(`${NULL_GUID}:${REFRESH}`),
  ];
  return tokens.filter((t) => text.includes(t));
}

const spans = (stderr: string) =>
  stderr
    .split("\n")
    .filter((l) => l.startsWith('{"otel":"span"'))
    .map((l) => JSON.parse(l) as { name: string; attributes: Record<string, unknown> });

interface Cloud {
  issuer: TokenIssuer;
  reg: RealRegistry;
  want: Map<string, string>;
}

/** The reference registry behind a token issuer that takes one Basic pair; both images pushed with it. */
async function privateRegistry(
  user: string,
  password: string,
  realm?: (issuer: TokenIssuer) => string,
): Promise<Cloud> {
  const issuer = startTokenIssuer({ basic: { user, password } });
  const reg = await startRealRegistry({
    auth: {
      type: "token",
      realm: realm?.(issuer) ?? issuer.realm,
      service: issuer.service,
      issuer: issuer.issuer,
      certPem: issuer.certPem,
    },
  });
  const want = new Map<string, string>();
  const access = { creds: { user, password } };
  for (const i of IMAGES) {
    await push(buildImage("oci", `clouds ${user} ${i.key}`), `${reg.host}/${i.repository}:${TAG}`, access);
    want.set(i.key, await rawDigest(`${reg.host}/${i.repository}:${TAG}`, access));
  }
  issuer.requests.length = 0;
  return { issuer, reg, want };
}

function store(w: RealWorld): string {
  return JSON.stringify(w.api.getConfigMap("image-refresh", "image-refresh-state")?.data ?? {});
}

const recorded = (w: RealWorld) => new Map(IMAGES.map((i) => [i.key, w.recorded(i.key) ?? ""]));

describe.skipIf(missing)("auth: gcp, against Google's protocol and the reference registry", () => {
  let cloud: Cloud;
  let google: StandIn;
  let w: RealWorld | undefined;
  beforeAll(async () => {
    google = startGoogle(GOOGLE);
    cloud = await privateRegistry("oauth2accesstoken", GOOGLE.accessToken);
  }, 120_000);
  afterAll(async () => {
    await w?.stop();
    await cloud?.reg.stop();
    cloud?.issuer.stop();
    google?.stop();
  });

  const world = async (env: Record<string, string>) => {
    await w?.stop();
    google.asked.length = 0;
    google.refuse = false;
    cloud.issuer.requests.length = 0;
    w = await startRealWorld(IMAGES, {
      host: cloud.reg.host,
      endpoint: cloud.reg.endpoint,
      auth: "gcp",
      env: { OTEL_TRACES_EXPORTER: "console", OTEL_METRICS_EXPORTER: "none", LOG_FORMAT: "json", ...env },
    });
    return w;
  };

  test("the metadata server's token as oauth2accesstoken: both images recorded, one token asked, nothing secret anywhere", async () => {
    const w = await world({ GCE_METADATA_HOST: google.host });
    const r = await w.run();
    expect({ code: r.code, stderr: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, stderr: "" });
    expect(recorded(w)).toEqual(cloud.want);
    expect(google.asked.map((q) => [q.method, q.path, q.headers.get("metadata-flavor")])).toEqual([
      ["GET", "/computeMetadata/v1/instance/service-accounts/default/token", "Google"],
    ]);
    expect(cloud.issuer.requests.map((q) => q.authorization)).toEqual([
      `Basic ${btoa(`oauth2accesstoken:${GOOGLE.accessToken}`)}`,
    ]);
    const toGoogle = spans(r.stderr).filter(
      (s) =>
        s.attributes["server.address"] === "127.0.0.1" &&
        String(s.attributes["url.full"]).includes("computeMetadata"),
    );
    expect(toGoogle.map((s) => s.attributes["http.response.status_code"])).toEqual([200]);
    expect(secretsIn(`${r.stdout}\n${r.stderr}\n${store(w)}`)).toEqual([]);
  }, 90_000);

  test("a workload-identity credential file: subject token to STS, STS's token to generateAccessToken, each asked once; recorded", async () => {
    const subjectFile = join(dir, "gcp-subject-token");
    writeFileSync(subjectFile, GOOGLE.subjectToken);
    const credentials = join(dir, "gcp-credentials.json");
    writeFileSync(
      credentials,
      JSON.stringify({
        type: "external_account",
        audience: GOOGLE.audience,
        subject_token_type: "urn:ietf:params:oauth:token-type:jwt",
        token_url: `${google.url}/v1/token`,
        service_account_impersonation_url: `${google.url}/v1/projects/-/serviceAccounts/${SA}:generateAccessToken`,
        credential_source: { file: subjectFile, format: { type: "text" } },
      }),
    );
    const w = await world({ GOOGLE_APPLICATION_CREDENTIALS: credentials });
    const r = await w.run();
    expect({ code: r.code, stderr: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, stderr: "" });
    expect(recorded(w)).toEqual(cloud.want);
    expect(google.asked.map((q) => [q.method, decodeURIComponent(q.path)])).toEqual([
      ["POST", "/v1/token"],
      ["POST", `/v1/projects/-/serviceAccounts/${SA}:generateAccessToken`],
    ]);
    expect(secretsIn(`${r.stdout}\n${r.stderr}\n${store(w)}`)).toEqual([]);
  }, 90_000);

  test("the metadata server refusing the pod: a WARNING naming the account and the annotation it needs; unresolved", async () => {
    const w = await world({ GCE_METADATA_HOST: google.host, LOG_FORMAT: "text" });
    google.refuse = true;
    const r = await w.run();
    expect(r.code).toBe(0);
    const line = r.stderr.split("\n").find((l) => l.includes("cannot resolve")) ?? "";
    expect(line).toContain("WARNING");
    expect(line).toContain(
      "GCP refused the GCP metadata server's token for the pod's Google service account (the metadata server's default) (403: Forbidden): annotate the Kubernetes ServiceAccount with iam.gke.io/gcp-service-account",
    );
    expect(r.stderr).toContain("api: unresolved 1/8 (forbidden)");
    expect(google.asked.length).toBe(1);
    expect(cloud.issuer.requests).toEqual([]);
  }, 90_000);

  test("a token the registry refuses: the WARNING says whose token it was and the role it needs, not a pull secret", async () => {
    const other = startGoogle({ ...GOOGLE, accessToken: `ya29.other-${id()}` });
    try {
      const w = await world({ GCE_METADATA_HOST: other.host, LOG_FORMAT: "text" });
      const r = await w.run();
      expect(r.code).toBe(0);
      const line = r.stderr.split("\n").find((l) => l.includes("cannot resolve")) ?? "";
      expect(line).toContain("WARNING");
      expect(line).toContain(
        "the token endpoint answered 401: it refused the access token of the pod's Google service account (the metadata server's default) (auth: gcp), which needs roles/artifactregistry.reader on the repositories",
      );
      expect(line).not.toContain("dockerconfigjson");
      expect(`${r.stdout}\n${r.stderr}\n${store(w)}`).not.toContain("ya29.other-");
    } finally {
      other.stop();
    }
  }, 90_000);

  test("the service account refusing the federated principal: a WARNING naming it and the role it lacks; unresolved; nothing secret", async () => {
    const subjectFile = join(dir, "gcp-subject-token");
    writeFileSync(subjectFile, GOOGLE.subjectToken);
    const credentials = join(dir, "gcp-credentials.json");
    const w = await world({ GOOGLE_APPLICATION_CREDENTIALS: credentials, LOG_FORMAT: "text" });
    google.refuse = true;
    const r = await w.run();
    expect(r.code).toBe(0);
    const line = r.stderr.split("\n").find((l) => l.includes("cannot resolve")) ?? "";
    expect(line).toContain("WARNING");
    expect(line).toContain(
      `GCP refused GCP generateAccessToken for service account ${SA} (403 PERMISSION_DENIED`,
    );
    expect(line).toContain(
      `needs roles/iam.workloadIdentityUser (iam.serviceAccounts.getAccessToken) on ${SA}`,
    );
    expect(r.stderr).toContain("api: unresolved 1/8 (forbidden)");
    expect(r.stderr).toContain("worker: unresolved 1/8 (forbidden)");
    // Refused once for the registry, not once per image.
    expect(google.asked.filter((q) => q.path.endsWith(":generateAccessToken")).length).toBe(1);
    expect(cloud.issuer.requests).toEqual([]);
    expect(secretsIn(`${r.stdout}\n${r.stderr}\n${store(w)}`)).toEqual([]);
  }, 90_000);
});

describe.skipIf(missing)("auth: azure, against Microsoft's protocol and the reference registry", () => {
  let cloud: Cloud;
  let entra: StandIn;
  let acr: StandIn;
  let w: RealWorld | undefined;
  beforeAll(async () => {
    entra = startEntra(AZURE);
    let upstream = "";
    // The ACR host: its exchange and token endpoint beside the registry API, as ACR serves them.
    const front = (issuer: TokenIssuer) => {
      acr = startAcrFront({
        service: () => cloud.reg.host,
        tenantId: AZURE.tenantId,
        entraToken: AZURE.entraToken,
        refreshToken: REFRESH,
        issuerRealm: issuer.realm,
        registry: () => upstream,
      });
      return `${acr.url}/oauth2/token`;
    };
    cloud = await privateRegistry(NULL_GUID, REFRESH, front);
    upstream = cloud.reg.endpoint;
  }, 120_000);
  afterAll(async () => {
    await w?.stop();
    await cloud?.reg.stop();
    cloud?.issuer.stop();
    entra?.stop();
    acr?.stop();
  });

  const world = async (env: Record<string, string>) => {
    await w?.stop();
    const tokenFile = join(dir, "azure-identity-token");
    writeFileSync(tokenFile, AZURE.federatedToken);
    for (const s of [entra, acr]) {
      s.asked.length = 0;
      s.refuse = false;
    }
    cloud.issuer.requests.length = 0;
    w = await startRealWorld(IMAGES, {
      host: cloud.reg.host,
      endpoint: acr.url,
      auth: "azure",
      env: {
        AZURE_FEDERATED_TOKEN_FILE: tokenFile,
        AZURE_CLIENT_ID: AZURE.clientId,
        AZURE_TENANT_ID: AZURE.tenantId,
        AZURE_AUTHORITY_HOST: `${entra.url}/`,
        OTEL_TRACES_EXPORTER: "console",
        OTEL_METRICS_EXPORTER: "none",
        LOG_FORMAT: "json",
        ...env,
      },
    });
    return w;
  };

  test("Entra token, ACR exchange, the refresh token for the null GUID: both images recorded, each asked once, nothing secret", async () => {
    const w = await world({});
    const r = await w.run();
    expect({ code: r.code, stderr: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, stderr: "" });
    expect(recorded(w)).toEqual(cloud.want);
    expect(entra.asked.map((q) => [q.method, q.path])).toEqual([
      ["POST", `/${AZURE.tenantId}/oauth2/v2.0/token`],
    ]);
    const exchanges = acr.asked.filter((q) => q.path === "/oauth2/exchange");
    expect(exchanges.map((q) => q.form.service)).toEqual([cloud.reg.host]);
    expect(cloud.issuer.requests.map((q) => q.authorization)).toEqual([
      `Basic ${btoa(`${NULL_GUID}:${REFRESH}`)}`,
    ]);
    expect(secretsIn(`${r.stdout}\n${r.stderr}\n${store(w)}`)).toEqual([]);
  }, 90_000);

  test("ACR refusing the exchange: a WARNING naming the client id and the role it needs; unresolved; nothing secret", async () => {
    const w = await world({ LOG_FORMAT: "text" });
    acr.refuse = true;
    const r = await w.run();
    expect(r.code).toBe(0);
    const line = r.stderr.split("\n").find((l) => l.includes("cannot resolve")) ?? "";
    expect(line).toContain("WARNING");
    expect(line).toContain(
      `Azure refused ACR's exchange at ${cloud.reg.host} of the Entra token of client id ${AZURE.clientId} in tenant ${AZURE.tenantId} (401 UNAUTHORIZED: authentication required): the identity needs the AcrPull role on ${cloud.reg.host}`,
    );
    expect(r.stderr).toContain("worker: unresolved 1/8 (forbidden)");
    expect(cloud.issuer.requests).toEqual([]);
    expect(secretsIn(`${r.stdout}\n${r.stderr}\n${store(w)}`)).toEqual([]);
  }, 90_000);

  test("Entra refusing the federated token: a WARNING naming the client id and the federated credential it lacks; unresolved; nothing secret", async () => {
    const w = await world({ LOG_FORMAT: "text" });
    entra.refuse = true;
    const r = await w.run();
    expect(r.code).toBe(0);
    const line = r.stderr.split("\n").find((l) => l.includes("cannot resolve")) ?? "";
    expect(line).toContain("WARNING");
    expect(line).toContain(
      `Azure refused a Microsoft Entra token for client id ${AZURE.clientId} in tenant ${AZURE.tenantId} (400 invalid_client: AADSTS70021`,
    );
    expect(line).toContain(
      "needs a federated identity credential for this cluster's OIDC issuer and this ServiceAccount",
    );
    expect(r.stderr).toContain("api: unresolved 1/8 (forbidden)");
    expect(entra.asked.length).toBe(1);
    expect(acr.asked.filter((q) => q.path === "/oauth2/exchange")).toEqual([]);
    expect(secretsIn(`${r.stdout}\n${r.stderr}\n${store(w)}`)).toEqual([]);
  }, 90_000);
});
