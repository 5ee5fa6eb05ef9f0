#!/usr/bin/env bun
// Entry point: parse the command line, then hand over to the command. Heavy modules are
// imported lazily so that `version`, `--help` and a tick with telemetry off start fast.
import { type CliArgs, type Command, HELP, parseArgs, UsageError } from "./lib/cli.ts";
import type { Runtime } from "./lib/commands/runtime.ts";
import { EXIT_USAGE } from "./lib/outcomes.ts";
import { writeStdout } from "./lib/output.ts";
import { mark, writeMarks } from "./lib/startup-timing.ts";
import { VERSION } from "./lib/version.ts";

const FLUSH_BUDGET_MS = 5000;
mark("entry");

async function main(argv: readonly string[]): Promise<number> {
  let args: CliArgs;
  try {
    args = parseArgs(argv);
  } catch (err) {
    if (err instanceof UsageError) return startupError(argv, { headline: err.message, hint: true });
    throw err;
  }
  if (args.help) {
    writeStdout(HELP);
    return 0;
  }
  const run = RUNS[args.command];
  return "alone" in run ? run.alone(args, argv) : clusterCommand(args, argv, run.onCluster);
}

/**
 * How each command runs: on its own, or on the cluster with a runtime (config, kube client,
 * telemetry). A Record over every command, so a command added to the CLI without a row here does
 * not compile: nothing falls through to a tick by default.
 */
const RUNS: Record<
  Command,
  | { alone: (args: CliArgs, argv: readonly string[]) => Promise<number> }
  | { onCluster: (rt: Runtime, args: CliArgs) => Promise<number> }
> = {
  version: {
    alone: async () => {
      writeStdout(`image-refresh ${VERSION}\n`);
      return 0;
    },
  },
  demo: { alone: async (args) => (await import("./lib/commands/demo.ts")).demoCommand(args) },
  playground: {
    alone: async (args, argv) => (await import("./lib/commands/playground.ts")).playgroundCommand(args, argv),
  },
  schema: { alone: async () => (await import("./lib/commands/schema.ts")).schemaCommand() },
  validate: {
    alone: async (args) => (await import("./lib/commands/validate.ts")).validateCommand(args, process.env),
  },
  tick: {
    onCluster: async (rt, args) => {
      const { tickCommand } = await import("./lib/commands/tick.ts");
      mark("tick-imported");
      return tickCommand(rt, args.dryRun);
    },
  },
  status: {
    onCluster: async (rt, args) =>
      (await import("./lib/commands/status.ts")).statusCommand(rt, args.json, args.images),
  },
  rearm: {
    onCluster: async (rt, args) =>
      (await import("./lib/commands/rearm.ts")).rearmCommand(rt, args.dryRun, args.images),
  },
  reject: {
    onCluster: async (rt, args) =>
      (await import("./lib/commands/reject.ts")).rejectCommand(rt, args.dryRun, args.images, args.digest),
  },
};

/** A usage or configuration error: told in the requested log format, exit 2. */
async function startupError(
  argv: readonly string[],
  told: { headline: string; problems?: readonly string[]; hint?: boolean },
): Promise<number> {
  const { reportStartupError, startupLogFormat } = await import("./lib/startup-errors.ts");
  reportStartupError(told, startupLogFormat(argv, process.env));
  return EXIT_USAGE;
}

async function clusterCommand(
  args: CliArgs,
  argv: readonly string[],
  onCluster: (rt: Runtime, args: CliArgs) => Promise<number>,
): Promise<number> {
  const { createRuntime, startConnecting } = await import("./lib/commands/runtime.ts");
  const { ConfigError } = await import("./lib/config.ts");
  const { KubeconfigError } = await import("./lib/kube/errors.ts");
  mark("imported");
  let rt: Awaited<ReturnType<typeof createRuntime>>;
  try {
    rt = await createRuntime(args, { env: process.env });
  } catch (err) {
    if (err instanceof ConfigError)
      return startupError(argv, { headline: err.headline, problems: err.problems });
    if (err instanceof UsageError) return startupError(argv, { headline: err.message, hint: true });
    if (err instanceof KubeconfigError) return startupError(argv, { headline: err.message });
    throw err;
  }
  if (args.command === "tick") startConnecting(rt, process.env);
  // SIGTERM is what activeDeadlineSeconds and a node drain send: end the wait, take the
  // failure path, flush telemetry, exit.
  const stop = (signal: string) => rt.controller.abort(new Error(`received ${signal}`));
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
  let code: number;
  try {
    code = await onCluster(rt, args);
  } catch (err) {
    // An unknown IMAGE is found once the config is loaded, before any request: a usage error.
    if (err instanceof UsageError) {
      await rt.telemetry.shutdown(FLUSH_BUDGET_MS);
      return startupError(argv, { headline: err.message, hint: true });
    }
    rt.log.error(`unexpected error: ${(err as Error).message}`);
    code = 1;
  }
  await rt.telemetry.shutdown(FLUSH_BUDGET_MS);
  return code;
}

// process.exit() rather than waiting for the event loop to drain: a lingering keep-alive socket
// or timer must never hold a CronJob pod open after the outcome is decided and flushed.
const argv = process.argv.slice(2);
main(argv).then(
  (code) => {
    mark("exit");
    writeMarks();
    process.exit(code);
  },
  async (err: Error) => {
    const { reportStartupError, startupLogFormat } = await import("./lib/startup-errors.ts");
    reportStartupError({ headline: `unexpected error: ${err.message}` }, startupLogFormat(argv, process.env));
    process.exit(1);
  },
);
