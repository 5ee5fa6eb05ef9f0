// Credentials echoed back by a server never reach stderr or an exported span, nor an error message
// or a log line. A fake API server plays a proxy, a webhook and a gateway that quote the request's
// Authorization header or the raw token in each kind of body; a fake registry quotes the Basic
// credentials, the password and the Bearer token in its error bodies, an HTML page and a challenge
// header. Each case runs the compiled binary with an OTLP collector attached.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Collector, startCollector } from "../../sim/collector.ts";
import { runBinary } from "../support/binary.ts";
import { startWorld, type World } from "../support/world.ts";

// Shaped like the real things: a service-account JWT, a registry password, a registry token.
const KUBE_TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJlLXNlY3JldA";
const OPAQUE_TOKEN = "kube-opaque-token-7f3a9c";
const USER = "robot";
const PASSWORD = "p4ss-w0rd-secret";
const BASIC = Buffer.from(`${USER}:${PASSWORD}`).toString("base64");
const REG_TOKEN = "regtoken-0a1b2c3d4e5f";

const dir = mkdtempSync(join(tmpdir(), "image-refresh-scrub-"));
let collector: Collector;
beforeAll(() => {
  collector = startCollector();
});
afterAll(async () => {
  await collector.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Everything a run let out: stderr, stdout and every exported span and metric. */
async function leaked(run: () => Promise<{ stderr: string; stdout: string }>): Promise<string> {
  collector.spans.length = 0;
  collector.metrics.length = 0;
  const r = await run();
  return `${r.stderr}\n${r.stdout}\n${JSON.stringify(collector.spans)}\n${JSON.stringify(collector.metrics)}`;
}

/** `told`: the echo is quoted (redacted) in what the run says; false where the client never quotes that body. */
function expectClean(text: string, secrets: string[], told = true): void {
  for (const s of secrets)
    expect({ secret: s, found: text.includes(s) }).toEqual({ secret: s, found: false });
  // The echo did arrive and was told, redacted: a test that never saw the echo proves nothing.
  if (told) expect(text).toContain("[redacted]");
}

type Echo = (auth: string) => Response;
const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
const status = (code: number, reason: string, message: string) =>
  json(code, { kind: "Status", apiVersion: "v1", status: "Failure", reason, message, code });

describe("the API server echoes the bearer token", () => {
  const CASES: Array<[string, string, Echo]> = [
    [
      "a 401 Status quoting the header",
      KUBE_TOKEN,
      (a) => status(401, "Unauthorized", `rejected Authorization: ${a}`),
    ],
    [
      "a webhook's 403 Status quoting the raw token",
      OPAQUE_TOKEN,
      (a) =>
        status(
          403,
          "Forbidden",
          `admission webhook "guard" denied the request from ${a.slice(7)} (caller token)`,
        ),
    ],
    [
      "a gateway's 502 HTML listing headers",
      KUBE_TOKEN,
      (a) =>
        new Response(`<html><body><h1>502</h1><pre>authorization: ${a}\nuser-agent: x</pre></body></html>`, {
          status: 502,
        }),
    ],
    [
      "a 503 plain-text body with the token alone",
      OPAQUE_TOKEN,
      (a) => new Response(`upstream refused token=${a.slice(7)}`, { status: 503 }),
    ],
    [
      "a 400 Status with the header as JSON",
      KUBE_TOKEN,
      (a) => status(400, "BadRequest", JSON.stringify({ headers: { Authorization: a } })),
    ],
  ];
  for (const [label, token, echo] of CASES)
    test(label, async () => {
      const api = Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        fetch: (req) => echo(req.headers.get("authorization") ?? ""),
      });
      try {
        const kubeconfig = join(dir, "kubeconfig");
        writeFileSync(
          kubeconfig,
          `apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{ name: c, cluster: { server: "http://127.0.0.1:${api.port}" } }]\nusers: [{ name: u, user: { token: "${token}" } }]\ncontexts: [{ name: c, context: { cluster: c, user: u } }]\n`,
        );
        const config = join(dir, "config.json");
        writeFileSync(
          config,
          JSON.stringify({
            tag: "stable",
            registry: { host: "127.0.0.1:1", insecure: true, endpoint: "http://127.0.0.1:1" },
            namespace: "apps",
            store: { namespace: "image-refresh" },
            images: [
              { repository: "myorg/api", targets: [{ kind: "Deployment", name: "api", container: "api" }] },
            ],
          }),
        );
        const out = await leaked(() =>
          runBinary(["tick", "--config", config, "--kubeconfig", kubeconfig], {
            env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, REQUEST_TIMEOUT: "2s" },
          }),
        );
        expectClean(out, [token]);
      } finally {
        await api.stop(true);
      }
    });
});

describe("the registry echoes Basic credentials, the password and its token", () => {
  let w: World;
  beforeAll(async () => {
    w = await startWorld();
  });
  afterAll(() => w.stop());

  type RegistryEcho = { token?: Echo; head?: Echo };
  // The last field: whether the message quotes the body. The registry client quotes only a
  // distribution-spec JSON error body and a challenge's error; an HTML or text page is named by
  // its status alone, so there the check is that nothing leaks.
  const CASES: Array<[string, RegistryEcho, string[], boolean?]> = [
    [
      "the token endpoint's 401 error body quoting the header and the password",
      {
        token: (a) =>
          json(401, {
            errors: [{ code: "UNAUTHORIZED", message: `bad credentials ${a} (password ${PASSWORD})` }],
          }),
      },
      [BASIC, PASSWORD],
    ],
    [
      "the token endpoint's 502 HTML page listing headers",
      {
        token: (a) =>
          new Response(`<html><pre>Authorization: ${a}\nX-Forwarded-For: 10.0.0.1</pre></html>`, {
            status: 502,
          }),
      },
      [BASIC],
      false,
    ],
    [
      "the token endpoint's 403 with user:password in plain text",
      { token: () => new Response(`denied ${USER}:${PASSWORD}`, { status: 403 }) },
      [PASSWORD, `${USER}:${PASSWORD}`],
      false,
    ],
    [
      "a HEAD's 401 challenge header quoting the bearer token",
      {
        head: (a) =>
          new Response(null, {
            status: 401,
            headers: { "www-authenticate": `Bearer realm="x",error="invalid_token ${a.slice(7)}"` },
          }),
      },
      [REG_TOKEN],
    ],
    [
      "a HEAD's 401 with the whole Authorization value as the error",
      {
        head: (a) =>
          new Response(null, { status: 401, headers: { "www-authenticate": `Bearer error="${a}"` } }),
      },
      [REG_TOKEN],
    ],
  ];
  for (const [label, echo, secrets, told] of CASES)
    test(label, async () => {
      const reg = Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        fetch(req): Response {
          const url = new URL(req.url);
          const auth = req.headers.get("authorization") ?? "";
          if (url.pathname === "/v2/")
            return new Response(null, {
              status: 401,
              headers: {
                "www-authenticate": `Bearer realm="http://127.0.0.1:${reg.port}/token",service="echo"`,
              },
            });
          if (url.pathname === "/token")
            return echo.token ? echo.token(auth) : json(200, { token: REG_TOKEN });
          return echo.head ? echo.head(auth) : new Response(null, { status: 404 });
        },
      });
      try {
        const creds = join(w.dir, "dockerconfig.json");
        writeFileSync(
          creds,
          JSON.stringify({ auths: { [`127.0.0.1:${reg.port}`]: { username: USER, password: PASSWORD } } }),
        );
        w.writeConfig((c) => {
          c.registry = {
            host: `127.0.0.1:${reg.port}`,
            endpoint: `http://127.0.0.1:${reg.port}`,
            insecure: true,
            dockerConfigJson: creds,
          };
        });
        const out = await leaked(() => w.run([], { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }));
        expectClean(out, secrets, told);
      } finally {
        await reg.stop(true);
      }
    });
});
