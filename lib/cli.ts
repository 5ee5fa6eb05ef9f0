// Command-line parsing by hand: five commands and five flags do not earn a dependency.

export const COMMANDS = ["tick", "status", "rearm", "demo", "version", "schema"] as const;
export type Command = (typeof COMMANDS)[number];

export interface CliArgs {
  command: Command;
  help: boolean;
  config?: string;
  kubeconfig?: string;
  dryRun: boolean;
  json: boolean;
  logFormat?: "text" | "json";
}

export class UsageError extends Error {
  override name = "UsageError";
}

const VALUE_FLAGS = new Set(["--config", "--kubeconfig", "--log-format"]);
const BOOL_FLAGS = new Set(["--dry-run", "--json", "--help", "-h"]);

export function parseArgs(argv: readonly string[]): CliArgs {
  const args: CliArgs = { command: "tick", help: false, dryRun: false, json: false };
  let command: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const raw = argv[i] as string;
    const eq = raw.startsWith("--") ? raw.indexOf("=") : -1;
    const flag = eq > 0 ? raw.slice(0, eq) : raw;
    if (VALUE_FLAGS.has(flag)) {
      const value = eq > 0 ? raw.slice(eq + 1) : argv[++i];
      if (value === undefined || value === "") throw new UsageError(`Cannot parse ${flag}: it needs a value`);
      setValue(args, flag, value);
    } else if (BOOL_FLAGS.has(flag)) {
      if (eq > 0) throw new UsageError(`Cannot parse ${flag}: it takes no value`);
      if (flag === "--dry-run") args.dryRun = true;
      else if (flag === "--json") args.json = true;
      else args.help = true;
    } else if (raw.startsWith("-")) {
      throw new UsageError(`unknown flag: ${flag}`);
    } else if (command === undefined) {
      command = raw;
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
  return args;
}

function setValue(args: CliArgs, flag: string, value: string): void {
  if (flag === "--config") args.config = value;
  else if (flag === "--kubeconfig") args.kubeconfig = value;
  else if (value === "text" || value === "json") args.logFormat = value;
  else throw new UsageError(`Cannot parse --log-format: current value is "${value}", expected text or json`);
}

export const HELP = `image-refresh: keep Kubernetes workloads on the newest build of a floating image tag, safely.

Usage:
  image-refresh [tick]   run one tick (the default command)
  image-refresh status   print the recorded digests, counters and lockout state (--json for scripts)
  image-refresh rearm    clear a lockout: remove the attempt counter and flap marker
  image-refresh demo     run a scripted scenario against the built-in simulated cluster and registry
  image-refresh schema   print the config's JSON Schema (draft 2020-12)
  image-refresh version  print the version

Flags:
  --config FILE          default: $IMAGE_REFRESH_CONFIG, else /etc/image-refresh/config.yaml
  --kubeconfig FILE      default: $KUBECONFIG; with neither, in-cluster config; else ~/.kube/config
  --dry-run              decide and log everything, write nothing
  --log-format text|json default: $LOG_FORMAT, else text
  --json                 (status) print JSON
  -h, --help             show this help

Exit codes: 0 done or deliberately held, 1 a finding that needs attention, 2 usage or configuration error.
`;
