// `npm ci` on the oldest Node the README and package.json promise installs without a single
// EBADENGINE warning: every locked package's `engines.node` admits that version. (StrykerJS 10
// with Babel 8 and OpenTelemetry JS 3.x want Node 22; they are pinned to 9.x and 2.12.x. The
// floor, 20.17, is StrykerJS 9's @inquirer prompts'.)
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
const lock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as {
  packages: Record<string, { engines?: { node?: string } | string[]; version?: string }>;
};

/** ">=20.6.0" -> "20.6.0": the oldest Node the project claims. */
const oldest = /^>=\s*(\d+\.\d+\.\d+)$/.exec(pkg.engines.node)?.[1];

test("package.json's engines.node is a plain lower bound, and the README says the same", () => {
  expect(oldest).toBeDefined();
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const [major, minor] = (oldest as string).split(".");
  const says = `Node.js ${major}.${minor} or newer`;
  expect({ says, inReadme: readme.includes(says) }).toEqual({ says, inReadme: true });
});

test("every locked package runs on that Node: npm ci prints no EBADENGINE", () => {
  const refused = Object.entries(lock.packages).flatMap(([path, p]) => {
    const range = !Array.isArray(p.engines) ? p.engines?.node : undefined;
    return range && !Bun.semver.satisfies(oldest as string, range) ? [`${path}@${p.version}: ${range}`] : [];
  });
  expect(refused).toEqual([]);
});
