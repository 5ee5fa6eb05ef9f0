#!/usr/bin/env bun
// Entry point: parse the command line, then hand over to the command. Heavy modules are
// imported lazily so that `version`, `--help` and a tick with telemetry off start fast.
import { HELP, parseArgs, UsageError } from "./lib/cli.ts";
import { VERSION } from "./lib/version.ts";

async function main(argv: readonly string[]): Promise<number> {
  let args: ReturnType<typeof parseArgs>;
  try {
    args = parseArgs(argv);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`[image-refresh] ${err.message}\n\n${HELP}`);
      return 2;
    }
    throw err;
  }
  if (args.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (args.command === "version") {
    process.stdout.write(`image-refresh ${VERSION}\n`);
    return 0;
  }
  process.stderr.write(`[image-refresh] command ${args.command} is not built yet\n`);
  return 1;
}

process.exitCode = await main(process.argv.slice(2));
