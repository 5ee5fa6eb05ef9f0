// `image-refresh tick`: one tick, bounded by its own deadline and ended early by SIGTERM.
import { exitCodeFor } from "../outcomes.ts";
import { runTick } from "../tick/index.ts";
import { type Runtime, tickBudgetMs } from "./runtime.ts";

export async function tickCommand(rt: Runtime, dryRun: boolean): Promise<number> {
  const budget = tickBudgetMs(rt.config);
  const timer = setTimeout(
    () => rt.controller.abort(new Error(`the tick ran past its deadline of ${budget} ms`)),
    budget,
  );
  try {
    const result = await runTick(rt.tickContext(dryRun));
    return exitCodeFor(result.outcome);
  } finally {
    clearTimeout(timer);
  }
}
