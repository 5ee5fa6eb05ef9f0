// Fuzzing the kubeconfig boundary: any document yields a Connection or a KubeconfigError (exit
// 2), never another exception, and no error message ever carries the token it was handed.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { KubeconfigError } from "./errors.ts";
import { parseKubeconfig, resolveConnection } from "./kubeconfig.ts";

const RUNS = Number(process.env.FUZZ_RUNS ?? 400);
const TOKEN = "fuzz-secret-TOKEN-7c1d";
const PEM = Buffer.from("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").toString("base64");

const readFile = (p: string) => {
  if (p === "/kube/token") return TOKEN;
  throw Object.assign(new Error(`ENOENT: ${p}`), { code: "ENOENT" });
};

function check(text: string): void {
  try {
    parseKubeconfig(text, { path: "/kube/config", readFile });
  } catch (err) {
    if (!(err instanceof KubeconfigError)) throw new Error(`threw ${String(err)} for ${text.slice(0, 200)}`);
    expect(err.message).not.toContain(TOKEN);
  }
}

/** A kubeconfig where any part may be missing, mistyped or odd; the token is always present. */
const doc = fc.record(
  {
    "current-context": fc.oneof(fc.constant("c"), fc.jsonValue()),
    clusters: fc.oneof(
      fc.constant([
        { name: "k", cluster: { server: "https://127.0.0.1:6443", "certificate-authority-data": PEM } },
      ]),
      fc.array(
        fc.record({
          name: fc.jsonValue(),
          cluster: fc.dictionary(
            fc.constantFrom(
              "server",
              "certificate-authority",
              "certificate-authority-data",
              "insecure-skip-tls-verify",
            ),
            fc.jsonValue(),
          ),
        }),
      ),
      fc.jsonValue(),
    ),
    users: fc.oneof(
      fc.constant([{ name: "u", user: { token: TOKEN } }]),
      fc.array(
        fc.record({
          name: fc.constantFrom("u", "v"),
          user: fc.record(
            {
              token: fc.oneof(fc.constant(TOKEN), fc.jsonValue()),
              exec: fc.jsonValue(),
              "client-key-data": fc.oneof(fc.constant(TOKEN), fc.string()),
              tokenFile: fc.constantFrom("/kube/token", "rel", ""),
            },
            { requiredKeys: [] },
          ),
        }),
      ),
    ),
    contexts: fc.oneof(
      fc.constant([{ name: "c", context: { cluster: "k", user: "u" } }]),
      fc.array(
        fc.record({
          name: fc.constantFrom("c", "d"),
          context: fc.record(
            {
              cluster: fc.oneof(fc.constant("k"), fc.jsonValue()),
              user: fc.oneof(fc.constantFrom("u", "nobody"), fc.jsonValue()),
              namespace: fc.jsonValue(),
            },
            { requiredKeys: [] },
          ),
        }),
      ),
      fc.jsonValue(),
    ),
  },
  { requiredKeys: [] },
);

/** Documents that get past the structural checks: the context, cluster and user always resolve,
 * so the cluster and user settings are really read. The token (or its base64) sits in every
 * value of the user entry that is not a file name; only these stages can leak it, and the random
 * documents above almost never reach them. */
/** Mostly the valid value, sometimes the token where a PEM belongs. */
const pemOrToken = fc.oneof(
  { weight: 4, arbitrary: fc.constant(PEM) },
  fc.constantFrom(TOKEN, Buffer.from(TOKEN).toString("base64")),
);
const resolving = fc.record({
  cluster: fc.record(
    {
      server: fc.constantFrom("https://127.0.0.1:6443", "http://10.0.0.1"),
      "certificate-authority-data": pemOrToken,
      "certificate-authority": fc.constantFrom("/kube/ca.pem", "ca.pem"),
      "insecure-skip-tls-verify": fc.boolean(),
    },
    { requiredKeys: ["server", "certificate-authority-data"] },
  ),
  user: fc.record(
    {
      token: fc.constant(TOKEN),
      tokenFile: fc.constantFrom("/kube/token", "rel"),
      "client-certificate-data": pemOrToken,
      "client-key-data": pemOrToken,
      exec: fc.constant({ command: TOKEN, args: [TOKEN] }),
      "auth-provider": fc.constant({ name: "oidc", config: { "id-token": TOKEN } }),
    },
    { requiredKeys: [] },
  ),
});

describe("kubeconfig fuzz", () => {
  test("random documents: a Connection or a KubeconfigError without the token", () => {
    fc.assert(
      fc.property(doc, (d) => check(JSON.stringify(d))),
      { numRuns: RUNS },
    );
  });

  test("documents that resolve: a Connection or a KubeconfigError without the token", () => {
    const seen = { connections: 0, errors: 0 };
    fc.assert(
      fc.property(resolving, ({ cluster, user }) => {
        const d = {
          "current-context": "c",
          clusters: [{ name: "k", cluster }],
          users: [{ name: "u", user }],
          contexts: [{ name: "c", context: { cluster: "k", user: "u" } }],
        };
        try {
          parseKubeconfig(JSON.stringify(d), { path: "/kube/config", readFile });
          seen.connections++;
        } catch (err) {
          if (!(err instanceof KubeconfigError)) throw err;
          seen.errors++;
          expect(err.message).not.toContain(TOKEN);
          expect(err.message).not.toContain(Buffer.from(TOKEN).toString("base64"));
        }
      }),
      { numRuns: RUNS },
    );
    // Both outcomes must come up, or the property checked nothing past the schema.
    expect(Math.min(seen.connections, seen.errors)).toBeGreaterThan(RUNS / 20);
  });

  test("random text, including text that carries the token, never leaks it", () => {
    const text = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc
        .tuple(fc.string({ maxLength: 40 }), fc.string({ maxLength: 40 }))
        .map(([a, b]) => `${a}token: ${TOKEN}${b}`),
      fc.tuple(fc.string({ maxLength: 40 })).map(([a]) => `users: [{name: u, user: {token: "${TOKEN}", ${a}`),
    );
    fc.assert(fc.property(text, check), { numRuns: RUNS });
  });

  test("resolveConnection with random environments only throws KubeconfigError", () => {
    const env = fc.record(
      {
        KUBECONFIG: fc.constantFrom("", ":", "/nope", "/kube/token", "/nope:/kube/token"),
        KUBERNETES_SERVICE_HOST: fc.constantFrom("", "10.0.0.1", "::1"),
        KUBERNETES_SERVICE_PORT: fc.constantFrom("", "443"),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(env, fc.constantFrom(undefined, "/nope", "/kube/token"), (e, flag) => {
        try {
          resolveConnection({ env: e, kubeconfigFlag: flag, readFile, homeDir: "/home/none" });
        } catch (err) {
          if (!(err instanceof KubeconfigError)) throw err;
          expect(err.message).not.toContain(TOKEN);
        }
      }),
      { numRuns: RUNS },
    );
  });
});
