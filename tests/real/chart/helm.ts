// Helm v3 and v4 as the peers build leaves them (peers/build.sh: `<cache>/helm3-<key>/helm`,
// key = the first 16 hex of sha256(peers/helm3/go.sum)), and the chart rendered by each. Without
// a build the tests skip with one line saying how to get one; with CI set that is a failure.
import { test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { type K8sObject, parseManifests } from "../../../lib/manifests.ts";
import { inCi } from "../../support/tools.ts";

export const ROOT = join(import.meta.dir, "..", "..", "..");
export const CHART = join(ROOT, "charts", "image-refresh");
/** Any version the chart supports; given so Helm v3 and v4 judge the same one. */
export const KUBE_VERSION = "1.34.0";
export const HELMS = ["helm3", "helm4"] as const;
export type HelmModule = (typeof HELMS)[number];

const cache = () =>
  process.env.IMAGE_REFRESH_PEERS_CACHE ?? join(homedir(), ".cache", "image-refresh", "peers");

/** The helm binary of a peers module, or undefined when it has not been built. */
export function helmBinary(mod: HelmModule): string | undefined {
  const sum = join(ROOT, "peers", mod, "go.sum");
  const dirs = existsSync(sum)
    ? [`${mod}-${createHash("sha256").update(readFileSync(sum)).digest("hex").slice(0, 16)}`]
    : // Before this checkout carries peers/: the newest complete build of the module.
      (existsSync(cache()) ? readdirSync(cache()) : [])
        .filter((d) => d.startsWith(`${mod}-`) && existsSync(join(cache(), d, ".complete")))
        .sort((a, b) => statSync(join(cache(), b)).mtimeMs - statSync(join(cache(), a)).mtimeMs);
  const bin = dirs
    .map((d) => join(cache(), d, "helm"))
    .find((p) => existsSync(p) && existsSync(join(p, "..", ".complete")));
  return bin;
}

/** True when a binary is missing: one line outside CI, a failing test inside it. */
export function needHelm(file: string): boolean {
  const missing = HELMS.filter((m) => helmBinary(m) === undefined);
  if (!missing.length) return false;
  const mods = missing.map((m) => `peers/${m}`).join(" and ");
  const line = `skip: ${file} needs helm from ${mods} (npm run test:real builds it; or sh peers/build.sh ${missing.join(" ")}, which needs Go)`;
  if (!inCi()) console.log(line);
  else
    test(`needs ${missing.join(", ")}`, () => {
      throw new Error(`${line}: CI is set, so a missing peer is a failure`);
    });
  return missing.length > 0;
}

export interface HelmRun {
  code: number;
  stdout: string;
  stderr: string;
}

export function helm(mod: HelmModule, args: string[]): HelmRun {
  const bin = helmBinary(mod);
  if (!bin) throw new Error(`Cannot run helm: peers/${mod} is not built`);
  // A home of its own: no user's repositories, plugins or registry logins change the result.
  const home = mkdtempSync(join(tmpdir(), "image-refresh-helm-"));
  try {
    const r = Bun.spawnSync([bin, ...args], {
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: home,
        HELM_CACHE_HOME: join(home, "c"),
        HELM_CONFIG_HOME: join(home, "f"),
        HELM_DATA_HOME: join(home, "d"),
      },
      stdout: "pipe",
      stderr: "pipe",
    });
    return { code: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/** `helm template` of the chart with these values (merged over values.yaml), in namespace image-refresh. */
export function template(
  mod: HelmModule,
  values: Record<string, unknown> = {},
  release = "image-refresh",
): HelmRun {
  const dir = mkdtempSync(join(tmpdir(), "image-refresh-values-"));
  try {
    const file = join(dir, "values.json");
    writeFileSync(file, JSON.stringify(values));
    return helm(mod, [
      "template",
      release,
      CHART,
      "--namespace",
      "image-refresh",
      "--kube-version",
      KUBE_VERSION,
      "-f",
      file,
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function rendered(mod: HelmModule, values: Record<string, unknown> = {}): K8sObject[] {
  const r = template(mod, values);
  if (r.code !== 0) throw new Error(`helm template (${mod}) failed: ${r.stderr}`);
  return parseManifests(r.stdout);
}
