// One simulated API server per test file, seeded with one workload of each kind, with its faults
// and request log cleared before each test and every server stopped after the file.
import { afterAll, beforeEach } from "bun:test";
import { seedOneOfEachKind, serverPool } from "../../sim/apiserver/driver.ts";
import type { startApiServer } from "../../sim/apiserver/index.ts";

export async function seededServer(opts?: Parameters<typeof startApiServer>[0]) {
  const pool = serverPool();
  afterAll(() => pool.stopAll());
  const sim = await pool.fresh(opts);
  seedOneOfEachKind(sim);
  beforeEach(() => {
    sim.faults.clear();
    sim.clearLog();
  });
  /** Another server, stopped with the file's. */
  return { sim, fresh: pool.fresh };
}
