// Fault matrix: every request a tick makes × the ways a server misbehaves, each cell a fresh
// world where exactly that request misbehaves, asserting SPEC's outcome and exit code and the
// reliability invariants (see invariants() in scene.ts). Cells run three at a time: most of a
// cell is waiting on a timeout, so this keeps the file well under three minutes on two cores.
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { World } from "../world.ts";
import { expected, FAULT_NAMES, FAULTS, type FaultName, ROWS, type Row } from "./matrix-rows.ts";
import { budgetMs, inject, invariants, k, limiter, makeScene, outcomeOf, patched } from "./scene.ts";
import { run } from "./spawn.ts";

type Column = FaultName | "none";
const COLUMNS: Column[] = ["none", ...FAULT_NAMES];
const cells = new Map<string, string>();
const slot = limiter(3);
// SPEC "Precise rules": these outcomes exit 0, every other one exits 1.
const exitCodeFor = (o: string) =>
  ["noop", "recorded", "refreshed", "skipped", "locked_out"].includes(o) ? 0 : 1;

async function runCell(row: Row, column: Column) {
  const rolloutMs = row.rolloutMs ?? 2000;
  const s = await makeScene(row.scenario, (c) => (c.rolloutTimeout = `${rolloutMs}ms`));
  try {
    if (row.slowProxy) s.w.api.setMode("Deployment", "apps", "api-proxy", "slow", { slowMs: 400 });
    if (column !== "none")
      inject(s.w, { ...row.target, times: row.target.read ? undefined : 1 }, FAULTS[column]);
    const started = Date.now();
    const r = await run(s.w);
    const elapsed = Date.now() - started;
    const outcome = outcomeOf(r);
    const violations = invariants(s, outcome, elapsed, budgetMs(rolloutMs));
    const hit = column === "none" || fired(s.w, row);
    const writes = s.w.api.log.filter((e) => e.method !== "GET").map((e) => `${e.method} ${e.path}`);
    return { r, outcome, elapsed, violations, hit, after: s.w.ours(), patched: patched(s.w), writes };
  } finally {
    await s.w.stop();
  }
}

/** A fault that never fired proves nothing: the request it was meant for must have been made. */
function fired(w: World, row: Row): boolean {
  const { method, path, skip = 0 } = row.target;
  const log: Array<{ method: string; path: string; query: Record<string, unknown> }> =
    row.target.server === "api" ? w.api.log : w.registry.log;
  const hits = log.filter((e) => {
    if (e.method !== method) return false;
    if (typeof path === "string") return e.path === path;
    const search = new URLSearchParams(e.query as Record<string, string>).toString();
    return path.test(e.path) || path.test(`${e.path}?${search}`);
  });
  return hits.length > skip;
}

describe("fault matrix", () => {
  for (const row of ROWS) {
    for (const column of COLUMNS) {
      const want = column === "none" ? row.healthy : expected(row, column);
      if (!want) {
        cells.set(`${row.name}|${column}`, "—");
        continue;
      }
      test.concurrent(
        `${row.name} × ${column}: ${want.outcome}`,
        () =>
          slot(async () => {
            const c = await runCell(row, column);
            const problems = [...c.violations];
            if (!c.hit) problems.push("the fault never fired");
            if (c.outcome !== want.outcome) problems.push(`outcome ${c.outcome}, want ${want.outcome}`);
            if (c.r.code !== exitCodeFor(want.outcome)) problems.push(`exit ${c.r.code}`);
            const attempt = c.after[k("refresh-attempt")] ?? null;
            if (want.attempt !== undefined && attempt !== want.attempt) problems.push(`attempt ${attempt}`);
            if (want.patched !== undefined && c.patched.join() !== want.patched.join())
              problems.push(`patched [${c.patched}], want [${want.patched}]`);
            if (want.noWrites && c.writes.length) problems.push(`wrote ${c.writes}`);
            cells.set(`${row.name}|${column}`, `${c.r.code} ${c.outcome} ${problems.length ? "✗" : "✓"}`);
            expect(problems, `${row.name} × ${column} (${c.elapsed} ms)\n${c.r.stderr}`).toEqual([]);
          }),
        120_000,
      );
    }
  }
});

afterAll(() => {
  const head = `| request | ${COLUMNS.join(" | ")} |`;
  const rule = `| --- | ${COLUMNS.map(() => "---").join(" | ")} |`;
  const lines = ROWS.map(
    (row) => `| ${row.name} | ${COLUMNS.map((c) => cells.get(`${row.name}|${c}`) ?? "?").join(" | ")} |`,
  );
  const table = [head, rule, ...lines].join("\n");
  console.log(`\nFault matrix (cell: exit code, outcome, ✓ = every invariant held)\n\n${table}\n`);
  if (process.env.WRITE_MATRIX === "1") writeFileSync(join(import.meta.dir, "MATRIX.md"), `${table}\n`);
});
