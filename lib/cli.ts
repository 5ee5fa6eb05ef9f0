// Command-line parsing by hand: nine commands and nine flags do not earn a dependency.
import { EXIT_USAGE, exitCodeFor, OUTCOMES } from "./outcomes.ts";

export const COMMANDS = [
  "tick",
  "status",
  "rearm",
  "reject",
  "demo",
  "playground",
  "version",
  "schema",
  "validate",
] as const;
/** Commands that take image keys after them. */
const TAKES_IMAGES: ReadonlySet<string> = new Set(["status", "rearm", "reject"]);
export type Command = (typeof COMMANDS)[number];

export interface CliArgs {
  command: Command;
  help: boolean;
  config?: string;
  kubeconfig?: string;
  /** A kubeconfig context other than its current-context. */
  context?: string;
  dryRun: boolean;
  json: boolean;
  logFormat?: "text" | "json";
  /** Image keys named after status, rearm or reject. */
  images: string[];
  /** reject: the build to reject (default: the failed build, else the tag's current digest). */
  digest?: string;
  /** validate: rendered manifests (`kubectl kustomize` output) to check against the config. */
  manifests?: string;
}

/** `reject IMAGE [DIGEST]`: a second word is the digest, in the registry's own form. */
function rejectArgs(args: CliArgs): void {
  if (args.images.length === 2 && /^sha256:[0-9a-f]{64}$/.test(args.images[1] as string))
    args.digest = args.images.pop();
  else if (args.images.length === 2)
    throw new UsageError(`Cannot reject ${args.images[1]}: a DIGEST is sha256: and 64 hex digits`);
  if (args.images.length !== 1)
    throw new UsageError(
      "reject needs exactly one IMAGE (an image key from the config), and optionally a DIGEST",
    );
}

export class UsageError extends Error {
  override name = "UsageError";
}

const VALUE_FLAGS = new Set(["--config", "--kubeconfig", "--context", "--log-format", "--manifests"]);
const BOOL_FLAGS = new Set(["--dry-run", "--json", "--help", "-h", "--version"]);

// The flags each command takes besides --help; any other is an error for that command, so that
// `demo --dry-run` is not believed to be a dry run.
const CLUSTER = ["--config", "--kubeconfig", "--context", "--log-format"];
const TAKES: Record<Command, readonly string[]> = {
  tick: [...CLUSTER, "--dry-run"],
  status: [...CLUSTER, "--json"],
  rearm: [...CLUSTER, "--dry-run"],
  reject: [...CLUSTER, "--dry-run"],
  demo: [],
  playground: ["--config"],
  version: [],
  schema: [],
  validate: ["--config", "--manifests"],
};

export function parseArgs(argv: readonly string[]): CliArgs {
  const args: CliArgs = { command: "tick", help: false, dryRun: false, json: false, images: [] };
  let command: string | undefined;
  const given: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const raw = argv[i] as string;
    const eq = raw.startsWith("--") ? raw.indexOf("=") : -1;
    const flag = eq > 0 ? raw.slice(0, eq) : raw;
    if (VALUE_FLAGS.has(flag) || BOOL_FLAGS.has(flag)) given.push(flag);
    if (VALUE_FLAGS.has(flag)) {
      const value = eq > 0 ? raw.slice(eq + 1) : argv[++i];
      if (value === undefined || value === "") throw new UsageError(`Cannot parse ${flag}: it needs a value`);
      setValue(args, flag, value);
    } else if (BOOL_FLAGS.has(flag)) {
      if (eq > 0) throw new UsageError(`Cannot parse ${flag}: it takes no value`);
      if (flag === "--dry-run") args.dryRun = true;
      else if (flag === "--json") args.json = true;
      else if (flag === "--version") command ??= "version";
      else args.help = true;
    } else if (raw.startsWith("-")) {
      throw new UsageError(`unknown flag: ${flag}`);
    } else if (command === undefined) {
      command = raw;
    } else if (TAKES_IMAGES.has(command)) {
      args.images.push(raw);
    } else {
      throw new UsageError(`unexpected argument: ${raw}`);
    }
  }
  if (command !== undefined) {
    if (command === "help") args.help = true;
    else if (!(COMMANDS as readonly string[]).includes(command))
      throw new UsageError(`unknown command: ${command}`);
    else args.command = command as Command;
  }
  if (!args.help) checkFlags(args.command, given);
  if (args.command === "reject" && !args.help) rejectArgs(args);
  return args;
}

function checkFlags(command: Command, given: readonly string[]): void {
  for (const flag of given) {
    if (flag === "--help" || flag === "-h" || (flag === "--version" && command === "version")) continue;
    if (!TAKES[command].includes(flag)) throw new UsageError(`${command} does not take ${flag}`);
  }
}

function setValue(args: CliArgs, flag: string, value: string): void {
  if (flag === "--config") args.config = value;
  else if (flag === "--kubeconfig") args.kubeconfig = value;
  else if (flag === "--context") args.context = value;
  else if (flag === "--manifests") args.manifests = value;
  else if (value === "text" || value === "json") args.logFormat = value;
  else throw new UsageError(`Cannot parse --log-format: current value is "${value}", expected text or json`);
}

export const HELP = `image-refresh: keep Kubernetes workloads on the newest build of a floating image tag, safely.

Usage:
  image-refresh [tick]                 run one tick (the default command)
  image-refresh status [IMAGE...]      per image: recorded, registry and live digests, counters, verdict, what to do
  image-refresh rearm [IMAGE...]       clear a lockout, a failed build and a rejection (every image when none is named)
  image-refresh reject IMAGE [DIGEST]  "not this build": that digest (default: the failed build, else the tag's current one) never rolls out
  image-refresh demo                   run a scripted scenario against the built-in simulated cluster and registry
  image-refresh playground             simulated cluster and registry seeded from --config, for your own ticks and moves
  image-refresh validate               check the config offline (with --manifests FILE, also rendered manifests)
  image-refresh schema                 print the config's JSON Schema (draft 2020-12)
  image-refresh version                print the version (also --version)

Flags:
  --config FILE          default: $IMAGE_REFRESH_CONFIG, else /etc/image-refresh/config.yaml
  --kubeconfig FILE      default: $KUBECONFIG; with neither, in-cluster config; else ~/.kube/config
  --context NAME         a kubeconfig context other than its current-context
  --dry-run              decide and log everything, write nothing
  --log-format text|json default: $LOG_FORMAT, else text
  --json                 (status) print JSON
  --manifests FILE       (validate) output of kubectl kustomize: RBAC and Job deadline must fit the config
  -h, --help             show this help

IMAGE is an image's key from the config.

Exit codes (a tick exits with its outcome, the most severe verdict of its images; status exits
1 when the next tick's verdict for a printed image would):
${exitCodeLines()}`;

/** The exit codes' lines of HELP, from the outcome table: each outcome under the code it exits with. */
function exitCodeLines(): string {
  const by = (code: 0 | 1) => OUTCOMES.filter((o) => exitCodeFor(o) === code).join(", ");
  return [
    `  0  nothing needs attention: ${by(0)}`,
    `  1  a finding that needs attention: ${by(1)}`,
    `  ${EXIT_USAGE}  usage or configuration error (no network call was made)`,
    "",
  ].join("\n");
}
