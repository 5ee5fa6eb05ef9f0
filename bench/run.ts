// `npm run bench`: builds the product (package.json does), compiles the limit script and the
// runtime floor with the same flags, runs sections 1-8 against simulated worlds and section 9
// against the real tier's kube-apiserver (skipped with one line when it is not built), all on
// 127.0.0.1, and prints one markdown report. Benchmarks print; nothing here asserts a time.
//
//   bun bench/run.ts [--quick] [--write] [--only=1,2,3,4,5,6,7,8,9] [--baseline=GIT-REF]
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { apiserverSection } from "./apiserver.ts";
import { buildBaseline } from "./baseline.ts";
import { BINARY, compile, LIMIT_SOURCE, productBuildFlags } from "./clients.ts";
import { distanceSection } from "./distance.ts";
import { type BenchContext, noopSection, scaleSection, telemetrySection } from "./noop.ts";
import { parallelSection } from "./parallel.ts";
import { startupSection } from "./startup.ts";
import { coldStartSection, floorSource, memoryRows, refreshSection } from "./ticks.ts";

interface Options {
  quick: boolean;
  write: boolean;
  only: Set<string>;
  /** A commit whose binary runs beside the current one in sections 1, 2 and 7. */
  baseline?: string;
}

function parseOptions(argv: string[]): Options {
  const o: Options = {
    quick: false,
    write: false,
    only: new Set(["1", "2", "3", "4", "5", "6", "7", "8", "9"]),
  };
  for (const a of argv) {
    if (a === "--quick") o.quick = true;
    else if (a === "--write") o.write = true;
    else if (a.startsWith("--only=")) o.only = new Set(a.slice(7).split(","));
    else if (a.startsWith("--baseline=")) o.baseline = a.slice(11);
    else
      throw new Error(`unknown argument: ${a} (expected --quick, --write, --only=1,2,..., --baseline=REF)`);
  }
  return o;
}

async function version(cmd: string[]): Promise<string> {
  const p = Bun.spawn(cmd, { stdout: "pipe", stderr: "pipe" });
  const out = await new Response(p.stdout).text();
  await p.exited;
  return out.split("\n")[0]?.trim() ?? "?";
}

/** The machine, since every figure below is only meaningful next to it. */
async function machine(): Promise<string[]> {
  const cpuinfo = readFileSync("/proc/cpuinfo", "utf8");
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? cpus()[0]?.model ?? "?";
  const memKb = Number(/^MemTotal:\s*(\d+)/m.exec(readFileSync("/proc/meminfo", "utf8"))?.[1] ?? 0);
  const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  const kubectl = await version(["kubectl", "version", "--client"]);
  const curl = await version(["curl", "--version"]);
  return [
    `- Machine: ${cpus().length} CPUs (\`nproc\`), ${model}, ${(memKb / 1024 / 1024).toFixed(1)} GiB RAM`,
    `- Bun ${Bun.version} (runs the bench and compiled every binary; build flags: \`${productBuildFlags().join(" ")}\`)`,
    `- ${kubectl}; ${curl.split(" ").slice(0, 2).join(" ")}`,
    `- Load average at start: ${load}`,
  ];
}

async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2));
  if (!existsSync(BINARY)) throw new Error(`Cannot run the bench: ${BINARY} is missing; run npm run bench`);
  const started = performance.now();
  const tmp = mkdtempSync(join(tmpdir(), "image-refresh-bench-bin-"));
  const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);
  try {
    log("compiling the limit script and the floor with the product's build flags");
    const ctx: BenchContext = {
      reps: opts.quick ? 5 : 15,
      quick: opts.quick,
      limit: await compile(LIMIT_SOURCE, join(tmp, "limit")),
      limitSource: [process.execPath, LIMIT_SOURCE],
      log,
    };
    if (opts.baseline) {
      log(`compiling the baseline ${opts.baseline}`);
      ctx.baseline = await buildBaseline(opts.baseline, tmp);
    }
    const floor = await compile(floorSource, join(tmp, "floor"));
    const head = await machine();
    const body: string[] = [];
    if (opts.only.has("1")) body.push(...(await noopSection(ctx)));
    if (opts.only.has("2"))
      body.push(...(await coldStartSection(ctx, floor)), ...(await memoryRows(ctx, floor)));
    if (opts.only.has("3")) body.push(...(await refreshSection(ctx)));
    if (opts.only.has("4")) body.push(...(await scaleSection(ctx)));
    if (opts.only.has("5")) body.push(...(await telemetrySection(ctx)));
    if (opts.only.has("6")) body.push(...(await startupSection(ctx, floor)));
    if (opts.only.has("7")) body.push(...(await distanceSection(ctx)));
    if (opts.only.has("8")) body.push(...(await parallelSection(ctx)));
    if (opts.only.has("9")) body.push(...(await apiserverSection(ctx)));
    const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
    const report = [
      `## Benchmarks (\`npm run bench${opts.quick ? " -- --quick" : ""}\`)`,
      "",
      ...head,
      `- Load average at end: ${load}; bench took ${((performance.now() - started) / 1000).toFixed(0)} s`,
      "",
      "Wall times are spawn-to-exit of a fresh process, median (min–max) over repeated runs; the clients",
      "of one table ran in turns in the same run, so compare ratios rather than absolute times.",
      "",
      ...body,
    ].join("\n");
    process.stdout.write(`${report}\n`);
    if (opts.write) {
      writeFileSync(join(import.meta.dir, "RESULTS.md"), `${report}\n`);
      log("wrote bench/RESULTS.md");
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
