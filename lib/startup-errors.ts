// How a usage or configuration error is told (exit 2), before a logger exists: in the log format
// the user asked for, so a JSON log pipeline gets JSON, and in text with every line prefixed
// [image-refresh]. Imported only on that path: `version` never loads it.
import { createLogger } from "./log.ts";
import { writeStderr } from "./output.ts";
import { noopTelemetry } from "./telemetry.ts";

export type LogFormat = "text" | "json";

/**
 * The format as parseArgs and LOG_FORMAT would give it, read from the raw command line because
 * the error may be that the command line does not parse. Anything but "json" is text.
 */
export function startupLogFormat(
  argv: readonly string[],
  env: Record<string, string | undefined>,
): LogFormat {
  let flag: string | undefined;
  argv.forEach((a, i) => {
    if (a === "--log-format") flag = argv[i + 1];
    else if (a.startsWith("--log-format=")) flag = a.slice("--log-format=".length);
  });
  return (flag ?? env.LOG_FORMAT) === "json" ? "json" : "text";
}

interface Told {
  /** One line saying what is wrong. */
  headline: string;
  /** Each bad field, when there are several. */
  problems?: readonly string[];
  /** Point at --help (command-line mistakes). */
  hint?: boolean;
}

const HINT = "Run image-refresh --help for usage.";

export function reportStartupError(told: Told, format: LogFormat, write = writeStderr): void {
  const [headline = "", ...rest] = told.headline.split("\n");
  const problems = [...rest.map((l) => l.trim()).filter((l) => l !== ""), ...(told.problems ?? [])];
  if (format === "json") {
    const ids = noopTelemetry().activeIds();
    const log = createLogger({ format, write, ids: () => ids });
    log.error(headline, {
      problems: problems.length ? problems : undefined,
      hint: told.hint ? HINT : undefined,
    });
    return;
  }
  write(`[image-refresh] ERROR: ${headline}${problems.length ? ":" : ""}\n`);
  for (const p of problems) write(`[image-refresh]   - ${p}\n`);
  if (told.hint) write(`[image-refresh] ${HINT}\n`);
}
