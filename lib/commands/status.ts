// `image-refresh status [IMAGE...]`: what an operator paged at 3 a.m. needs on one screen. Reads,
// never writes: the tick's own observation and plan (status-report.ts), printed as text (status-format.ts)
// or JSON, narrowed to the images named.

import { writeStdout } from "../output.ts";
import { workloadAttributes } from "../workload.ts";
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
  const s = rt.config.state;
  const attrs = workloadAttributes(s);
  return rt.telemetry.command("image-refresh status", attrs, async (root) => {
    let report: StatusReport;
    try {
      report = await buildReport(rt, named);
    } catch (err) {
      rt.log.error(`cannot read the state object: ${(err as Error).message}`);
      root.setError("state_unreadable");
      return 1;
    }
    root.setAttributes({
      "image_refresh.status.verdicts": report.images.map((i) => `${i.key}=${i.verdict.outcome}`).join(","),
    });
    writeStdout(json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
    return 0;
  });
}
