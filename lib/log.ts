// One logger for every module: text lines prefixed [image-refresh], or one JSON object per
// line carrying the active trace and span id. Logs go to stderr; results go to stdout.

import { writeStderr } from "./output.ts";
import type { SpanIds } from "./telemetry.ts";

export type Level = "debug" | "info" | "warn" | "error";
export type Fields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: Fields): void;
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
}

export interface LoggerOptions {
  format: "text" | "json";
  /** Where lines go; stderr by default. */
  write?: (line: string) => void;
  /** Ids of the active span, for correlation. */
  ids?: () => SpanIds | undefined;
  now?: () => Date;
  debug?: boolean;
}

const TEXT_LEVEL: Record<Level, string> = { debug: "DEBUG: ", info: "", warn: "WARNING: ", error: "ERROR: " };

export function createLogger(opts: LoggerOptions): Logger {
  const write = opts.write ?? writeStderr;
  const now = opts.now ?? (() => new Date());
  const emit = (level: Level, msg: string, fields: Fields = {}) => {
    if (level === "debug" && !opts.debug) return;
    if (opts.format === "json") {
      const ids = opts.ids?.();
      const record = {
        time: now().toISOString(),
        level,
        msg,
        trace_id: ids?.traceId,
        span_id: ids?.spanId,
        ...fields,
      };
      write(`${JSON.stringify(record)}\n`);
    } else {
      write(`[image-refresh] ${TEXT_LEVEL[level]}${msg}${formatFields(fields)}\n`);
    }
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
  };
}

function formatFields(fields: Fields): string {
  let out = "";
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue;
    const s = typeof v === "string" ? v : JSON.stringify(v);
    out += ` ${k}=${/[\s"=]/.test(s) ? JSON.stringify(s) : s}`;
  }
  return out;
}

/** A logger that keeps lines in memory, for unit tests. */
export function memoryLogger(): Logger & { lines: Array<{ level: Level; msg: string; fields: Fields }> } {
  const lines: Array<{ level: Level; msg: string; fields: Fields }> = [];
  const push =
    (level: Level) =>
    (msg: string, fields: Fields = {}) =>
      void lines.push({ level, msg, fields });
  return { lines, debug: push("debug"), info: push("info"), warn: push("warn"), error: push("error") };
}
