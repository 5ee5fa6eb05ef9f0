// The compiled binary against the simulated API server, with its registry settings pointing at
// a real registry: one Deployment per image (container "app" on <host>/<repo>:stable), the
// first of them the state object.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type SimApiServer, startApiServer } from "../../../sim/apiserver/index.ts";
import { type RunResult, runBinary } from "../../support/binary.ts";

export const TAG = "stable";
export const PREFIX = "image-refresh.io";

export interface RealImage {
  key: string;
  repository: string;
}

export interface RegistrySettings {
  host: string;
  endpoint: string;
  /** CAs the binary trusts besides the API server's; absent = only the API server's. */
  trustPem?: string;
  /** Basic credentials, written to a dockerconfigjson keyed by `credentialsHost` (default host). */
  creds?: { user: string; password: string };
  credentialsHost?: string;
  token?: { realm: string; service?: string };
  /** A cloud's workload identity instead of a pull secret. */
  auth?: "aws" | "gcp" | "azure";
  /** The binary's environment besides the CA (e.g. the AWS_* variables a pod would have). */
  env?: Record<string, string>;
  /** A top-level verify policy: the public key files builds must be signed with. */
  verify?: { keys: string[] };
}

export interface RealWorld {
  api: SimApiServer;
  run(): Promise<RunResult>;
  /** The digest recorded for image `key`, if any. */
  recorded(key: string): string | undefined;
  /** The live image of image `key`'s Deployment. */
  image(key: string): string;
  stop(): Promise<void>;
}

function configFor(images: RealImage[], reg: RegistrySettings, dockerConfig?: string) {
  return {
    tag: TAG,
    registry: {
      host: reg.host,
      endpoint: reg.endpoint,
      insecure: reg.endpoint.startsWith("http:"),
      ...(dockerConfig ? { dockerConfigJson: dockerConfig } : {}),
      ...(reg.token ? { token: reg.token } : {}),
      ...(reg.auth ? { auth: reg.auth } : {}),
    },
    namespace: "apps",
    store: { namespace: "image-refresh", name: "image-refresh-state" },
    ...(reg.verify ? { verify: reg.verify } : {}),
    maxRefreshAttempts: 3,
    maxSkipTicks: 3,
    rolloutTimeout: "5s",
    requestTimeout: "3s",
    // Rollouts are verified, as by default, only for less long.
    verifyFor: "200ms",
    images: images.map((i) => ({
      repository: i.repository,
      key: i.key,
      targets: [{ kind: "Deployment", name: i.key, container: "app" }],
    })),
  };
}

export async function startRealWorld(images: RealImage[], reg: RegistrySettings): Promise<RealWorld> {
  const api = await startApiServer({ stepMs: 5 });
  api.ensureNamespace("image-refresh");
  for (const i of images) {
    api.addWorkload({
      kind: "Deployment",
      namespace: "apps",
      name: i.key,
      replicas: 1,
      containers: [{ name: "app", image: `${reg.host}/${i.repository}:${TAG}` }],
    });
  }
  const dir = mkdtempSync(join(tmpdir(), "ir-real-world-"));
  const caPath = join(dir, "ca.pem");
  writeFileSync(caPath, `${api.caPem}\n${reg.trustPem ?? ""}`);
  writeFileSync(join(dir, "kubeconfig"), api.kubeconfig());
  let dockerConfig: string | undefined;
  if (reg.creds) {
    dockerConfig = join(dir, "dockerconfig.json");
    const auth = Buffer.from(`${reg.creds.user}:${reg.creds.password}`).toString("base64");
    writeFileSync(dockerConfig, JSON.stringify({ auths: { [reg.credentialsHost ?? reg.host]: { auth } } }));
  }
  writeFileSync(join(dir, "config.json"), JSON.stringify(configFor(images, reg, dockerConfig)));
  const state = (): Record<string, string> => {
    const data: Record<string, string> = api.getConfigMap("image-refresh", "image-refresh-state")?.data ?? {};
    return Object.fromEntries(Object.entries(data).map(([k, v]) => [`${PREFIX}/${k}`, v]));
  };
  return {
    api,
    run: () =>
      runBinary(["tick", "--config", join(dir, "config.json"), "--kubeconfig", join(dir, "kubeconfig")], {
        env: { NODE_EXTRA_CA_CERTS: caPath, ...reg.env },
        timeoutMs: 60_000,
      }),
    recorded: (key) => state()[`${PREFIX}/last-refreshed-${key}-digest`],
    image: (key) => api.getObject("Deployment", "apps", key).spec.template.spec.containers[0].image,
    async stop() {
      await api.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
