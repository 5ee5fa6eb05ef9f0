// `image-refresh playground --config FILE`: the simulated cluster and registry (sim/), seeded
// from the user's own config, left running so that the user runs real ticks against it from
// another terminal and makes the moves they want to see (a new build, a build that flaps or
// hangs, a human's `kubectl set image`, a Helm re-render), typed one per line on stdin. Stops on
// Ctrl-C (SIGINT), SIGTERM or `quit`, removing the directory it wrote. Loaded only by this
// command (a chunk of its own), so the simulators cost a tick nothing.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { startApiServer } from "../../sim/apiserver/index.ts";
import * as moves from "../../sim/playground.ts";
import { type Playground, seedPlayground } from "../../sim/playground.ts";
import { startRegistry } from "../../sim/registry.ts";
import { generateTls } from "../../sim/tls.ts";
import type { CliArgs } from "../cli.ts";
import { type Config, ConfigError, DEFAULT_CONFIG_PATH, loadConfig } from "../config.ts";
import { formatDuration } from "../duration.ts";
import { writeStdout } from "../output.ts";
import { reportStartupError, startupLogFormat } from "../startup-errors.ts";
import { parseYaml } from "../yaml.ts";

/** Rollouts in the simulator take about 100 ms; a user's 10m would make a failed one wait 10 minutes. */
export const PLAYGROUND_ROLLOUT_TIMEOUT_MS = 10_000;
/** A user's 2m verification would make every playground tick wait minutes; 5 s shows the same. */
export const PLAYGROUND_VERIFY_FOR_MS = 5_000;
/** The namespace the kubeconfig's context names: where image-refresh itself would run. */
const OWN_NAMESPACE = "image-refresh";

const out = (text: string) => writeStdout(`${text}\n`);

type Move = { usage: string; help: string; run: (p: Playground, a: string[]) => string };

/** The moves, one row each: what the user types, what it does. */
const MOVES: Record<string, Move> = {
  publish: {
    usage: "publish IMAGE",
    help: "push a new build of the image's repository under the tag",
    run: (p, a) => moves.publish(p, a[0]),
  },
  flap: {
    usage: "flap WORKLOAD",
    help: "the next build published for it never becomes available (the old one does)",
    run: (p, a) => moves.flap(p, a[0]),
  },
  crash: {
    usage: "crash WORKLOAD [SECONDS]",
    help: "the next build published for it becomes Ready, then crashes SECONDS later (default 2): inside verifyFor, the tick that rolls it out reverts it",
    run: (p, a) => moves.crash(p, a[0], a[1], 2),
  },
  "crash-later": {
    usage: "crash-later WORKLOAD [SECONDS]",
    help: "the same, SECONDS later (default 30): past verifyFor, a later tick reverts it as a regression",
    run: (p, a) => moves.crash(p, a[0], a[1], 30),
  },
  hang: {
    usage: "hang WORKLOAD",
    help: "from now on its rollouts never finish, not even back",
    run: (p, a) => moves.hang(p, a[0]),
  },
  heal: {
    usage: "heal WORKLOAD",
    help: "healthy rollouts again, no bad build",
    run: (p, a) => moves.heal(p, a[0]),
  },
  "set-image": {
    usage: "set-image WORKLOAD CONTAINER=IMAGE",
    help: "`kubectl set image` as a human (field manager kubectl-set)",
    run: (p, a) => moves.setImage(p, a[0], a[1]),
  },
  rerender: {
    usage: "rerender IMAGE",
    help: "`helm upgrade` renders the floating tag over every target of the image",
    run: (p, a) => moves.rerender(p, a[0]),
  },
  show: { usage: "show", help: "every workload's images and rollout status", run: (p) => moves.show(p) },
  help: { usage: "help", help: "this list", run: () => movesHelp() },
  quit: { usage: "quit", help: "stop the playground (as Ctrl-C does)", run: () => "" },
};

function movesHelp(): string {
  const width = Math.max(...Object.values(MOVES).map((m) => m.usage.length));
  const lines = Object.values(MOVES).map((m) => `  ${m.usage.padEnd(width)}  ${m.help}`);
  return [
    ...lines,
    "  IMAGE is an image's key (or repository); WORKLOAD is [namespace/]kind/name, e.g. deployment/api",
  ].join("\n");
}

/**
 * The user's config pointed at the simulated registry: the top-level registry and each image's
 * own (pinned references keep each registry's host; no credentials, no token endpoint).
 */
export function playgroundConfigText(text: string, config: Config, registryUrl: string): string {
  const doc = { ...(parseYaml(text) as Record<string, unknown>) };
  const onSimulator = (given: unknown) => {
    const {
      dockerConfigJson: _c,
      token: _t,
      insecure: _i,
      auth: _a,
      ...registry
    } = given as Record<string, unknown>;
    return { ...registry, endpoint: registryUrl };
  };
  doc.registry = onSimulator(doc.registry);
  if (Array.isArray(doc.images))
    doc.images = doc.images.map((img: Record<string, unknown>) =>
      img?.registry ? { ...img, registry: onSimulator(img.registry) } : img,
    );
  doc.tag = config.tag;
  if (config.rolloutTimeoutMs > PLAYGROUND_ROLLOUT_TIMEOUT_MS)
    doc.rolloutTimeout = formatDuration(PLAYGROUND_ROLLOUT_TIMEOUT_MS);
  if (config.verifyForMs > PLAYGROUND_VERIFY_FOR_MS) doc.verifyFor = formatDuration(PLAYGROUND_VERIFY_FOR_MS);
  return `# Written by image-refresh playground: your config, with the registry's endpoint on the simulator.\n${Bun.YAML.stringify(doc, null, 2)}\n`;
}

export async function playgroundCommand(args: CliArgs, argv: readonly string[]): Promise<number> {
  const path = args.config ?? process.env.IMAGE_REFRESH_CONFIG ?? DEFAULT_CONFIG_PATH;
  let config: Config;
  let text: string;
  try {
    config = loadConfig(path, process.env, (p) => readFileSync(p, "utf8"));
    text = readFileSync(path, "utf8");
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    reportStartupError(
      { headline: err.headline, problems: err.problems },
      startupLogFormat(argv, process.env),
    );
    return 2;
  }
  const tls = generateTls();
  const [api, registry] = await Promise.all([startApiServer({ tls, stepMs: 20 }), startRegistry({ tls })]);
  const dir = mkdtempSync(join(tmpdir(), "image-refresh-playground-"));
  try {
    const p = seedPlayground(config, api, registry);
    writeFileSync(join(dir, "kubeconfig"), api.kubeconfig({ namespace: OWN_NAMESPACE }));
    writeFileSync(join(dir, "ca.pem"), tls.caPem);
    writeFileSync(join(dir, "config.yaml"), playgroundConfigText(text, config, registry.url));
    out(banner(p, { path, dir, apiUrl: api.url }));
    await serve(p);
    out("playground stopped");
    return 0;
  } finally {
    await Promise.all([api.stop(), registry.stop()]);
    rmSync(dir, { recursive: true, force: true });
  }
}

function banner(p: Playground, o: { path: string; dir: string; apiUrl: string }): string {
  const c = p.config;
  const tagOf = (repo: string) => c.images.find((i) => i.repository === repo)?.tag ?? c.tag;
  const builds = [...p.firstBuilds].map(([repo, digest]) => `  ${repo}:${tagOf(repo)} -> ${digest}`);
  const capped = c.rolloutTimeoutMs > PLAYGROUND_ROLLOUT_TIMEOUT_MS;
  const first = p.workloads[0];
  const container = first ? [...first.containers.keys()][0] : "app";
  return [
    `image-refresh playground: a simulated cluster and registry seeded from ${o.path}`,
    `  files:    ${o.dir} (kubeconfig, ca.pem, config.yaml; removed when the playground stops)`,
    `  cluster:  ${o.apiUrl}`,
    `  registry: ${p.registry.url}, named ${c.registry.host} in pinned references`,
    ...(capped
      ? [
          `  rolloutTimeout ${formatDuration(c.rolloutTimeoutMs)} is ${formatDuration(PLAYGROUND_ROLLOUT_TIMEOUT_MS)} here: simulated rollouts take a fraction of a second`,
        ]
      : []),
    "",
    "First builds (the tag points at them):",
    ...builds,
    "",
    "Workloads (their containers name the tag, as a fresh `helm install` renders it):",
    moves.show(p).replace(/^/gm, "  "),
    "",
    "Run ticks from another terminal:",
    `  export NODE_EXTRA_CA_CERTS=${o.dir}/ca.pem KUBECONFIG=${o.dir}/kubeconfig IMAGE_REFRESH_CONFIG=${o.dir}/config.yaml`,
    "  image-refresh tick          # also: image-refresh status, image-refresh tick --dry-run, rearm, reject",
    ...(first
      ? [
          `  kubectl -n ${first.namespace} set image ${first.kind.toLowerCase()}/${first.name} ${container}=${c.registry.host}/other:1   # the real kubectl works too`,
        ]
      : []),
    "",
    "Moves (type one per line here):",
    movesHelp(),
    "",
    "playground ready; Ctrl-C stops it",
  ].join("\n");
}

/** Reads moves from stdin until `quit`, SIGINT or SIGTERM. A closed stdin leaves it running. */
function serve(p: Playground): Promise<void> {
  return new Promise((resolve) => {
    const rl = createInterface({ input: process.stdin, terminal: false });
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      rl.close();
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
    rl.on("line", (line) => {
      const [name, ...rest] = line.trim().split(/\s+/);
      if (!name) return;
      if (name === "quit" || name === "exit") return stop();
      const move = MOVES[name];
      if (!move) return out(`unknown move ${JSON.stringify(name)}; type help`);
      try {
        out(move.run(p, rest));
      } catch (err) {
        out(`cannot ${name}: ${(err as Error).message}`);
      }
    });
  });
}
