// Fault matrix: every request a tick makes × the ways a server misbehaves, each cell a fresh world
// where exactly that request misbehaves, asserting the documented outcome and exit code and the
// reliability invariants (see invariants() in scene.ts). Cells run three at a time: most of a cell
// is waiting on a timeout, so this keeps the file well under three minutes on two cores.
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { World } from "../support/world.ts";
import { type Expect, expected, FAULT_NAMES, FAULTS, type FaultName, ROWS, type Row } from "./matrix-rows.ts";
import {
  budgetMs,
  exitCodeFor,
  inject,
  invariants,
  k,
  limiter,
  makeScene,
  outcomeOf,
  patched,
  verdictsOf,
} from "./scene.ts";
import { run } from "./spawn.ts";

type Column = FaultName | "none";
const COLUMNS: Column[] = ["none", ...FAULT_NAMES];
const cells = new Map<string, string>();
const slot = limiter(3);

async function runCell(row: Row, column: Column) {
  const rolloutMs = row.rolloutMs ?? 2000;
  const s = await makeScene(row.scenario, (c) => (c.rolloutTimeout = `${rolloutMs}ms`));
  try {
    if (row.slowProxy) s.w.api.setMode("Deployment", "apps", "api-proxy", "slow", { slowMs: 400 });
    if (row.remembered) {
      const url = s.w.registry.url;
      s.w.setBook({
        [k(`registry-challenge-${s.w.registry.host.replace(":", "_")}`)]:
          `${url} Bearer realm="${url}/token",service="sim-registry"`,
      });
      s.before = s.w.ours();
    }
    if (column !== "none")
      inject(s.w, { ...row.target, times: row.target.read ? undefined : 1 }, FAULTS[column]);
    const started = Date.now();
    const r = await run(s.w);
    const elapsed = Date.now() - started;
    const outcome = outcomeOf(r);
    const violations = invariants(s, r, elapsed, budgetMs(rolloutMs));
    const hit = column === "none" || fired(s.w, row);
    const writes = s.w.api.log.filter((e) => e.method !== "GET").map((e) => `${e.method} ${e.path}`);
    const verdicts = verdictsOf(r);
    return {
      r,
      outcome,
      verdicts,
      elapsed,
      violations,
      hit,
      after: s.w.ours(),
      patched: patched(s.w),
      writes,
    };
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

/** The per-image store keys a cell expects after the tick, each named when it differs. */
function bookProblems(want: Expect, after: Record<string, string>): string[] {
  const problems: string[] = [];
  const check = (name: string, v: string | null) => {
    if ((after[name] ?? null) !== v) problems.push(`${name} = ${after[name] ?? null}, want ${v}`);
  };
  for (const [key, v] of Object.entries(want.attempts ?? {})) check(k(`refresh-attempt-${key}`), v);
  for (const [key, v] of Object.entries(want.streaks ?? {})) check(k(`unresolved-streak-${key}`), v);
  for (const [key, v] of Object.entries(want.skips ?? {})) check(k(`skip-streak-${key}`), v);
  for (const [key, set] of Object.entries(want.markers ?? {}))
    if ((after[k(`refresh-flap-detected-${key}`)] !== undefined) !== set)
      problems.push(`refresh-flap-detected-${key} ${set ? "absent" : "set"}, want ${set ? "set" : "absent"}`);
  return problems;
}

/**
 * The scene's groups: api's workloads move together, node-agent shares none with them. Groups
 * roll out side by side, so only each group's own order is fixed (config order, and a revert's).
 */
const GROUPS = [["api", "api-proxy"], ["node-agent"]];
function sameInEachGroup(got: readonly string[], want: readonly string[]): boolean {
  return GROUPS.every(
    (g) => got.filter((n) => g.includes(n)).join() === want.filter((n) => g.includes(n)).join(),
  );
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
            problems.push(...bookProblems(want, c.after));
            for (const [key, v] of Object.entries(want.verdicts ?? {}))
              if (c.verdicts[key] !== v) problems.push(`${key}: ${c.verdicts[key]}, want ${v}`);
            if (want.patched !== undefined && !sameInEachGroup(c.patched, want.patched))
              problems.push(`patched [${c.patched}], want [${want.patched}] (in each group's order)`);
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
  const legend =
    "Each cell: exit code, outcome, ✓ when every image's verdict and counters are as the rules say and " +
    "every invariant held, per image, read from the store's writes (no workload patched for an image " +
    "before that image's count + 1 is persisted in the store; an unresolved image's streak counted or the tick failed; a changed digest recorded " +
    "only after that image's targets settled; its reset before and independent of its digest write; the " +
    "tick's outcome its most severe image verdict; a failed streak clear does not stop the tick; a no-op " +
    "writes nothing but streak removals; the process ends within its deadline). Reads fail on every try, writes once; — = " +
    "does not apply. Generated by tests/reliability/matrix.e2e.test.ts (WRITE_MATRIX=1).";
  console.log(`\nFault matrix\n\n${legend}\n\n${table}\n`);
  // A filtered run (-t) leaves cells unknown; only a whole matrix is written.
  if (process.env.WRITE_MATRIX === "1" && !table.includes("| ? "))
    writeFileSync(join(import.meta.dir, "MATRIX.md"), `# Fault matrix\n\n${legend}\n\n${table}\n`);
});
