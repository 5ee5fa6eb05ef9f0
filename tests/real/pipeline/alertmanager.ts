// A real Alertmanager (peers/alertmanager's, built by peers/build.sh) run with k8s/monitoring/alertmanager.yaml
// as shipped, but for its durations (compressed like the rules) and its receiver's URL (a webhook
// receiver this test runs on 127.0.0.1, which keeps every notification it is sent). Clustering is
// off (no gossip port); the process ends with the test like the pipeline's (pipeline.ts spawn).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { scaled } from "./compress.ts";
import { MONITORING } from "./configs.ts";
import { freePort, spawn, until } from "./pipeline.ts";

export const SHIPPED_ALERTMANAGER = join(MONITORING, "alertmanager.yaml");

/** One webhook call as Alertmanager sends it (the fields the test reads), with when it arrived. */
export interface Notification {
  at: number;
  status: "firing" | "resolved";
  groupLabels: Record<string, string>;
  alerts: Array<{
    status: "firing" | "resolved";
    labels: Record<string, string>;
    annotations: Record<string, string>;
  }>;
}

/** An alert as Alertmanager's API v2 lists it: whether it is active or suppressed, and by what. */
export interface AmAlert {
  labels: Record<string, string>;
  status: { state: "active" | "suppressed" | "unprocessed"; inhibitedBy: string[]; silencedBy: string[] };
  fingerprint: string;
}

export interface Alertmanager {
  /** host:port, for Prometheus' alerting section. */
  target: string;
  notifications: Notification[];
  alerts(): Promise<AmAlert[]>;
  stop(): Promise<void>;
}

// biome-ignore lint/suspicious/noExplicitAny: an Alertmanager config is free-form YAML
type Doc = any;

/** The shipped config with its route's durations compressed and every receiver sent to `url`. */
export function alertmanagerConfig(url: string, shipped = readFileSync(SHIPPED_ALERTMANAGER, "utf8")): Doc {
  const c = Bun.YAML.parse(shipped) as Doc;
  for (const k of ["group_wait", "group_interval", "repeat_interval"]) c.route[k] = scaled(c.route[k]);
  for (const r of c.receivers) for (const w of r.webhook_configs ?? []) w.url = url;
  return c;
}

function receiver(notifications: Notification[]) {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const body = (await req.json()) as Omit<Notification, "at">;
      notifications.push({ at: Date.now(), ...body });
      return new Response("ok");
    },
  });
}

export async function startAlertmanager(bin: string): Promise<Alertmanager> {
  const notifications: Notification[] = [];
  const hook = receiver(notifications);
  const dir = mkdtempSync(join(tmpdir(), "image-refresh-alertmanager-"));
  const config = join(dir, "alertmanager.json");
  writeFileSync(config, JSON.stringify(alertmanagerConfig(`http://127.0.0.1:${hook.port}/alerts`), null, 2));
  const port = await freePort();
  const target = `127.0.0.1:${port}`;
  const log = join(dir, "alertmanager");
  const proc = spawn(
    bin,
    [
      `--config.file=${config}`,
      `--storage.path=${join(dir, "data")}`,
      `--web.listen-address=${target}`,
      "--cluster.listen-address=",
      "--log.level=warn",
    ],
    log,
  );
  const api = `http://${target}/api/v2`;
  await until("Alertmanager", () => fetch(`${api}/status`).then((r) => r.ok), proc, log);
  return {
    target,
    notifications,
    alerts: () => fetch(`${api}/alerts`).then((r) => r.json() as Promise<AmAlert[]>),
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
      hook.stop(true);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
