// `auth: aws` against independent implementations: moto's STS, IAM and ECR (PyPI moto[server]),
// and the reference registry (Debian's docker-registry) asking for Basic credentials through an
// htpasswd file that holds what moto's ECR hands out for the account (`AWS:<account>-auth-token`).
// The compiled binary gets no pull secret: it exchanges the pod's web identity token with STS
// (IRSA), or takes the EKS Pod Identity agent's credentials (a stand-in written from the agent's
// protocol: GET the full URI with the token file's content as Authorization), signs ECR
// GetAuthorizationToken with them, and uses the token as the registry's Basic credentials. moto
// checks the signature and the role's policy (its IAM enforcement is on for every request after
// the web identity exchange). Nothing secret may appear in the logs, the spans or the store.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { needTools } from "../support/tools.ts";
import { buildImage } from "./real/images.ts";
import { ACCOUNT, createRole, type Moto, needMoto, startMoto } from "./real/moto.ts";
import { type RealRegistry, startRealRegistry } from "./real/registry.ts";
import { push, rawDigest } from "./real/skopeo.ts";
import { type RealWorld, startRealWorld, TAG } from "./real/world.ts";

const FILE = "tests/registry/aws.e2e.test.ts";
const missing =
  needTools(
    [
      { tool: "docker-registry", apt: "docker-registry" },
      { tool: "skopeo", apt: "skopeo" },
    ],
    FILE,
  ) || needMoto(FILE);

/** What moto's ECR gives the account as the password of `AWS:<password>`. */
const PASSWORD = `${ACCOUNT}-auth-token`;
const REPO = "myorg/private";
const dir = mkdtempSync(join(tmpdir(), "ir-aws-"));
const WEB_TOKEN = `eyJhbGciOiJSUzI1NiJ9.web-identity-${crypto.randomUUID()}.signature`;
const POD_TOKEN = `pod-identity-${crypto.randomUUID()}`;
const tokenFile = join(dir, "web-identity-token");
const podTokenFile = join(dir, "pod-identity-token");
writeFileSync(tokenFile, WEB_TOKEN);
writeFileSync(podTokenFile, POD_TOKEN);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every secret of an exchange that a log line, a span or the store could carry by mistake. */
function secretsIn(text: string, more: readonly string[] = []): string[] {
  const secrets = [WEB_TOKEN, POD_TOKEN, PASSWORD, btoa(`AWS:${PASSWORD}`), ...more];
  const found = secrets.filter((s) => text.includes(s));
  // moto's session tokens and secret keys are not known here; their shapes are.
  if (/FQoGZXIvYXdz|SecretAccessKey|SessionToken/.test(text))
    found.push("an AWS secret key or session token");
  return found;
}

describe.skipIf(missing)("auth: aws, against moto and the reference registry", () => {
  let reg: RealRegistry;
  let want: string;
  let moto: Moto | undefined;
  let w: RealWorld | undefined;
  let agent: ReturnType<typeof Bun.serve> | undefined;
  beforeAll(async () => {
    reg = await startRealRegistry({ auth: { type: "basic", user: "AWS", password: PASSWORD } });
    const access = { creds: { user: "AWS", password: PASSWORD } };
    await push(buildImage("oci", "aws"), `${reg.host}/${REPO}:${TAG}`, access);
    want = await rawDigest(`${reg.host}/${REPO}:${TAG}`, access);
  }, 120_000);
  afterAll(async () => {
    await reg?.stop();
  });
  afterEach(async () => {
    await w?.stop();
    await moto?.stop();
    await agent?.stop(true);
    w = moto = agent = undefined;
  });

  const world = (env: Record<string, string>) =>
    startRealWorld([{ key: "private", repository: REPO }], {
      host: reg.host,
      endpoint: reg.endpoint,
      auth: "aws",
      env: {
        AWS_REGION: "eu-west-1",
        AWS_ENDPOINT_URL: (moto as Moto).endpoint,
        OTEL_TRACES_EXPORTER: "console",
        OTEL_METRICS_EXPORTER: "none",
        LOG_FORMAT: "json",
        ...env,
      },
    });
  const store = () => JSON.stringify(w?.api.getConfigMap("image-refresh", "image-refresh-state")?.data ?? {});
  const spans = (stderr: string) =>
    stderr
      .split("\n")
      .filter((l) => l.startsWith('{"otel":"span"'))
      .map((l) => JSON.parse(l) as { name: string; attributes: Record<string, unknown> });

  test("IRSA: the web identity token to STS, its keys to ECR, the token to the registry: recorded, nothing secret anywhere", async () => {
    moto = await startMoto();
    const role = await createRole(moto, "puller", ["ecr:GetAuthorizationToken", "ecr:BatchGetImage"]);
    await moto.enforce(1);
    w = await world({ AWS_ROLE_ARN: role, AWS_WEB_IDENTITY_TOKEN_FILE: tokenFile });
    const r = await w.run();
    expect({ code: r.code, stderr: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, stderr: "" });
    expect(w.recorded("private")).toBe(want);
    const port = Number(new URL(moto.endpoint).port);
    const toMoto = spans(r.stderr).filter((s) => s.attributes["server.port"] === port);
    expect(toMoto.map((s) => [s.name, s.attributes["http.response.status_code"]])).toEqual([
      ["POST", 200],
      ["POST", 200],
    ]);
    expect(secretsIn(`${r.stdout}\n${r.stderr}`)).toEqual([]);
    expect(secretsIn(store())).toEqual([]);
  }, 60_000);

  test("a role that lacks ecr:GetAuthorizationToken: a WARNING naming the role and what it lacks, the image unresolved", async () => {
    moto = await startMoto();
    const role = await createRole(moto, "nopull", []);
    await moto.enforce(1);
    w = await world({ AWS_ROLE_ARN: role, AWS_WEB_IDENTITY_TOKEN_FILE: tokenFile, LOG_FORMAT: "text" });
    const r = await w.run();
    expect(r.code).toBe(0);
    const line = r.stderr.split("\n").find((l) => l.includes("cannot resolve")) ?? "";
    expect(line).toContain("WARNING");
    expect(line).toContain(`AWS refused ECR GetAuthorizationToken for role ${role}`);
    expect(line).toContain("ecr:GetAuthorizationToken");
    expect(r.stderr).toContain("private: unresolved 1/8 (forbidden)");
    expect(w.recorded("private")).toBeUndefined();
    expect(secretsIn(`${r.stdout}\n${r.stderr}${store()}`)).toEqual([]);
  }, 60_000);

  test("EKS Pod Identity: the agent's credentials (for the pod's token only) sign ECR's request: recorded", async () => {
    moto = await startMoto();
    const role = await createRole(moto, "pod-puller", ["ecr:GetAuthorizationToken"]);
    const keys = await moto.assumeRole(role);
    await moto.enforce(0);
    agent = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (req) =>
        req.headers.get("authorization") === POD_TOKEN && new URL(req.url).pathname === "/v1/credentials"
          ? Response.json({
              ...keys,
              AccountId: ACCOUNT,
              Expiration: new Date(Date.now() + 3600_000).toISOString(),
            })
          : Response.json({ message: "Service account token cannot be empty" }, { status: 400 }),
    });
    w = await world({
      AWS_CONTAINER_CREDENTIALS_FULL_URI: `http://127.0.0.1:${agent.port}/v1/credentials`,
      AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: podTokenFile,
    });
    const r = await w.run();
    expect({ code: r.code, stderr: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, stderr: "" });
    expect(w.recorded("private")).toBe(want);
    expect(secretsIn(`${r.stdout}\n${r.stderr}${store()}`, [keys.SecretAccessKey, keys.Token])).toEqual([]);
  }, 60_000);

  test("the agent refusing the pod's token: a WARNING saying so and where to look, the image unresolved", async () => {
    moto = await startMoto();
    agent = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => Response.json({ message: "Service account token cannot be validated" }, { status: 403 }),
    });
    w = await world({
      AWS_CONTAINER_CREDENTIALS_FULL_URI: `http://127.0.0.1:${agent.port}/v1/credentials`,
      AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: podTokenFile,
      LOG_FORMAT: "text",
    });
    const r = await w.run();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("the EKS Pod Identity agent refused the pod's token (403");
    expect(r.stderr).toContain("pod identity association");
    expect(r.stderr).toContain("private: unresolved 1/8 (forbidden)");
  }, 60_000);
});
