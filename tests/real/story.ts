// One real cluster, one registry and one namespace for a story file: workloads applied with the
// real kubectl and rolled out, a config written per step, the compiled binary run as admin (or
// through a proxy's kubeconfig), and the workloads read back.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimRegistry, startRegistry } from "../../sim/registry.ts";
import { generateTls } from "../../sim/tls.ts";
import { type Cluster, startCluster } from "./cluster.ts";
import { ok } from "./kubectl.ts";
import { list, namespace } from "./manifests.ts";
import { type Ran, run, type TickEnv } from "./tick.ts";

type Obj = Record<string, unknown>;

export interface Story {
  c: Cluster;
  reg: SimRegistry;
  ns: string;
  t: TickEnv;
  /** `<registry>/<ns>/<repo>:stable`, the floating tag. */
  tag(repo: string): string;
  pin(repo: string, digest: string): string;
  /** Writes the config; `images` are repositories under `<ns>/`, each with one Deployment of that name. */
  config(c: Obj): void;
  /** The binary, as admin unless `kubeconfig` is given. */
  tick(args?: string[], kubeconfig?: string): Promise<Ran>;
  /** The first container's image of `kind/name` (kind plural, e.g. deployments). */
  image(name: string, kind?: string): Promise<string>;
  rolledOut(name: string, kind?: string): Promise<void>;
  stop(): Promise<void>;
}

/** A config for `repos`, each the image of the Deployment of that name, its store the ConfigMap `store` in the story's namespace. */
export function storyConfig(
  s: Pick<Story, "reg" | "ns">,
  store: string,
  repos: string[],
  extra: Obj = {},
): Obj {
  return {
    tag: "stable",
    registry: { host: s.reg.host },
    store: { namespace: s.ns, name: store },
    rolloutTimeout: "60s",
    requestTimeout: "5s",
    // Every rollout is verified, as by default, only for less long.
    verifyFor: "2s",
    images: repos.map((r) => ({
      repository: `${s.ns}/${r}`,
      targets: [{ kind: "Deployment", namespace: s.ns, name: r, container: r }],
    })),
    ...extra,
  };
}

export async function startStory(
  ns: string,
  workloads: (s: Story) => Obj[],
  opts?: Parameters<typeof startCluster>[0],
): Promise<Story> {
  const c = await startCluster(opts);
  const reg = await startRegistry({
    tls: generateTls({ ca: { certPem: c.cp.caPem, keyPem: c.cp.caKeyPem } }),
  });
  const t: TickEnv = {
    kubeconfig: c.cp.adminKubeconfig,
    config: join(c.cp.dir, `${ns}-config.json`),
    caPath: c.cp.caPath,
    env: { LOG_FORMAT: "json", IMAGE_REFRESH_DEBUG: "1" },
  };
  const s: Story = {
    c,
    reg,
    ns,
    t,
    tag: (repo) => `${reg.host}/${ns}/${repo}:stable`,
    pin: (repo, digest) => `${reg.host}/${ns}/${repo}@${digest}`,
    config: (cfg) => writeFileSync(t.config, JSON.stringify(cfg)),
    tick: (args, kubeconfig) => run(kubeconfig ? { ...t, kubeconfig } : t, args),
    image: async (name, kind = "deployments") =>
      (await c.cp.admin.get(`/apis/apps/v1/namespaces/${ns}/${kind}/${name}`)).spec.template.spec
        .containers[0].image,
    rolledOut: async (name, kind = "deployment") => {
      await ok(
        c.kubectl(["rollout", "status", `${kind}/${name}`, "-n", ns, "--timeout=90s"]),
        `rollout ${name}`,
      );
    },
    stop: async () => {
      await reg.stop();
      await c.stop();
    },
  };
  try {
    const items = workloads(s);
    await ok(
      c.kubectl(["apply", "-f", "-"], { stdin: list([namespace(ns), ...items]) }),
      "apply the workloads",
    );
  } catch (e) {
    await s.stop();
    throw e;
  }
  return s;
}

/** The log lines of a tick whose message contains `text`. */
export function logged(r: Ran, text: string): Array<Record<string, unknown>> {
  return r.lines.filter((l) => String(l.msg).includes(text));
}

/** An image's verdict from the tick's last line, e.g. "paused (kubectl-set)". */
export function verdictOf(r: Ran, key: string): string {
  const last = String(r.lines.findLast((l) => l.outcome !== undefined)?.msg ?? "");
  return last.match(new RegExp(`(?:: |; )${key}: ([^;]+)`))?.[1] ?? `no verdict for ${key} in ${last}`;
}
