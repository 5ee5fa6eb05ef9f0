// `image-refresh validate [--config FILE] [--manifests FILE]`: the config checked offline, as a
// tick would check it; with the rendered manifests (`kubectl kustomize overlay > m.yaml`), also
// that the Roles bound to the CronJob's service account grant exactly what this config needs and
// that the Job's deadline covers the rollout waits (lib/manifests.ts). No network; results on
// stdout; exit 0 when all is well, 2 otherwise (a configuration error).
import { readFileSync } from "node:fs";
import type { CliArgs } from "../cli.ts";
import { type Config, ConfigError, loadConfig, parseConfig } from "../config.ts";
import {
  configMapText,
  cronJobOf,
  deadlineRule,
  type K8sObject,
  ManifestError,
  manifestProblems,
  parseManifests,
} from "../manifests.ts";
import { EXIT_USAGE } from "../outcomes.ts";
import { writeStdout } from "../output.ts";
import { loadPolicyKeys } from "../signature/policy.ts";

type Env = Record<string, string | undefined>;
const out = (line: string) => writeStdout(`${line}\n`);

export async function validateCommand(
  args: CliArgs,
  env: Env,
  readFile = (p: string) => readFileSync(p, "utf8"),
): Promise<number> {
  try {
    const objects = args.manifests === undefined ? undefined : readManifests(args.manifests, readFile);
    const { config, source } = configFor(args, env, objects, readFile);
    await checkKeys(config, readFile);
    out(`${source}: valid (${config.images.length} images, ${workloads(config)} workloads)`);
    if (objects === undefined) return 0;
    const problems = manifestProblems(config, objects);
    if (problems.length) return fail(`${args.manifests} does not fit ${source}`, problems);
    const deadline = cronJobOf(objects).spec.jobTemplate.spec.activeDeadlineSeconds;
    out(
      `${args.manifests}: the Roles grant exactly what the config needs; activeDeadlineSeconds ${deadline} covers ${deadlineRule(config)}`,
    );
    return 0;
  } catch (err) {
    if (err instanceof ConfigError) return fail(err.headline, err.problems);
    if (err instanceof ManifestError) return fail(`Cannot check ${args.manifests}: ${err.message}`, []);
    throw err;
  }
}

/**
 * The verify policy's key files, as a tick reads them: one that is here must be a usable public
 * key (else exit 2); one that is not here (the CronJob's mounted path, seen from a laptop) is
 * said and left to the tick.
 */
async function checkKeys(config: Config, readFile: (p: string) => string): Promise<void> {
  const paths = new Set(config.images.flatMap((i) => i.verify?.keys ?? []));
  const here = (p: string) => {
    try {
      readFile(p);
      return true;
    } catch {
      return false;
    }
  };
  const absent = [...paths].filter((p) => !here(p));
  for (const p of absent)
    out(`${p}: not here, so not checked (the tick reads it where the CronJob mounts it)`);
  const onlyHere = {
    ...config,
    images: config.images.map((i) =>
      i.verify ? { ...i, verify: { ...i.verify, keys: i.verify.keys.filter(here) } } : i,
    ),
  };
  await loadPolicyKeys(onlyHere, readFile);
}

function fail(headline: string, problems: readonly string[]): number {
  out(problems.length ? `${headline}:` : headline);
  for (const p of problems) out(`  - ${p}`);
  return EXIT_USAGE;
}

function readManifests(path: string, readFile: (p: string) => string): K8sObject[] {
  let text: string;
  try {
    text = readFile(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ManifestError(code === "ENOENT" ? "no such file" : (err as Error).message);
  }
  try {
    return parseManifests(text);
  } catch (err) {
    if (err instanceof ManifestError) throw err;
    throw new ManifestError(`not YAML (${(err as Error).message})`);
  }
}

/**
 * The config named by --config or $IMAGE_REFRESH_CONFIG; with neither, the one the manifests
 * carry in a ConfigMap, read with the CronJob container's environment as the pod would read it.
 */
function configFor(
  args: CliArgs,
  env: Env,
  objects: K8sObject[] | undefined,
  readFile: (p: string) => string,
): { config: Config; source: string } {
  const named = args.config ?? env.IMAGE_REFRESH_CONFIG;
  const carried = objects && configMapText(objects);
  if (named !== undefined || objects === undefined || carried === undefined)
    return {
      config: loadConfig(args.config, env, readFile),
      source: named ?? "/etc/image-refresh/config.yaml",
    };
  const container = cronJobOf(objects).spec.jobTemplate.spec.template.spec.containers[0];
  const podEnv = Object.fromEntries((container?.env ?? []).map((e) => [e.name, e.value]));
  const source = `the config.yaml in ${args.manifests}`;
  return { config: parseConfig(carried, podEnv, source), source };
}

function workloads(config: Config): number {
  return new Set(config.images.flatMap((i) => i.targets.map((t) => `${t.kind}/${t.namespace}/${t.name}`)))
    .size;
}
