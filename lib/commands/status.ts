// `image-refresh status [IMAGE...]`: what an operator paged at 3 a.m. needs on one screen. Reads,
// never writes: the tick's own observation and plan (status-report.ts), printed as text (status-format.ts)
// or JSON, narrowed to the images named.

import { exitCodeFor, type Outcome } from "../outcomes.ts";
import { writeStdout } from "../output.ts";
import { baseAttrs } from "../tick/index.ts";
import { checkImageKeys } from "./rearm.ts";
import type { Runtime } from "./runtime.ts";
import { formatReport } from "./status-format.ts";
import { buildReport, type StatusReport } from "./status-report.ts";

export async function statusCommand(
  rt: Runtime,
  json: boolean,
  named: readonly string[] = [],
): Promise<number> {
  checkImageKeys(rt.config, named);
  const attrs = baseAttrs({ ctx: rt });
  return rt.telemetry.command("image-refresh status", attrs, async (root) => {
    let report: StatusReport;
    try {
      report = await buildReport(rt, named);
      if (rt.anonymousBecause) report.anonymousRegistry = rt.anonymousBecause;
    } catch (err) {
      rt.log.error(`cannot read the store: ${(err as Error).message}`);
      root.setError("store_unreadable");
      return 1;
    }
    root.setAttributes({
      "image_refresh.status.verdicts": report.images.map((i) => `${i.key}=${i.verdict.outcome}`).join(","),
    });
    writeStdout(json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
    return statusExit(report);
  });
}

/**
 * Like `kubectl rollout status`, usable as a check: 1 when the next tick's verdict for a printed
 * image exits 1, or when its last attempt's build was seen to fail and its count still stands (a
 * failed rollout is a finding, as the tick that saw it exited 1, until a success resets it).
 */
export function statusExit(report: StatusReport): 0 | 1 {
  const exits = report.images.map((i) =>
    i.lastAttempt?.failed ? 1 : exitCodeFor(i.verdict.outcome as Outcome),
  );
  return exits.includes(1) ? 1 : 0;
}
