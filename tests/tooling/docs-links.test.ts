// The docs' links lead somewhere. Every relative markdown link in README.md, ARCHITECTURE.md and
// docs/*.md names a file or folder of the repository, and every `#anchor` (in the same page or
// another) names a heading of that page, by GitHub's rules for heading ids: lower case, every
// character but letters, digits, spaces, `-` and `_` dropped, each space a `-`, and a repeated
// heading `-1`, `-2`, ... Links inside code (fenced blocks, backticks) are text, not links.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");
const DOCS = [
  "README.md",
  "ARCHITECTURE.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

/** The text outside fenced code blocks and inline code, line for line. */
function prose(text: string): string {
  return text
    .replace(/^( {0,3})(`{3,}|~{3,})[^\n]*\n[\s\S]*?^ {0,3}\2[^\n]*$/gm, "")
    .replace(/(`+)[\s\S]*?\1/g, "");
}

/** GitHub's id for a heading's text. */
export function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // a link's text stays, its target goes
    .replace(/<[^>]+>/g, "")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** Every id a page's headings (and explicit `<a id|name="…">` anchors) give, repeats numbered. */
export function anchors(text: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  const code = text.replace(/^( {0,3})(`{3,}|~{3,})[^\n]*\n[\s\S]*?^ {0,3}\2[^\n]*$/gm, "");
  for (const m of code.matchAll(/^ {0,3}#{1,6}[ \t]+(.*?)[ \t#]*$/gm)) {
    const base = slug(m[1] as string);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of code.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) out.add(m[1] as string);
  return out;
}

/** Each relative link's target (`path#anchor`, `#anchor` or `path`) in a page's prose. */
export function relativeLinks(text: string): string[] {
  return [...prose(text).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)]
    .map((m) => m[1] as string)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/** The broken links of one page, as messages; `read` gives another page's text by its path. */
export function brokenLinks(doc: string, text: string, read: (path: string) => string | undefined): string[] {
  const out: string[] = [];
  for (const target of relativeLinks(text)) {
    const hash = target.indexOf("#");
    const path = hash < 0 ? target : target.slice(0, hash);
    const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
    const file = path === "" ? doc : normalize(join(dirname(doc), decodeURIComponent(path)));
    if (path !== "" && (file.startsWith("..") || !existsSync(join(ROOT, file)))) {
      out.push(`${doc}: ${target}: ${file} does not exist`);
      continue;
    }
    if (anchor === undefined) continue;
    const page = file === doc ? text : read(file);
    if (page === undefined)
      out.push(`${doc}: ${target}: #${anchor} points into ${file}, which has no headings`);
    else if (!anchors(page).has(anchor)) out.push(`${doc}: ${target}: ${file} has no heading #${anchor}`);
  }
  return out;
}

const readDoc = (path: string) =>
  path.endsWith(".md") && existsSync(join(ROOT, path)) ? readFileSync(join(ROOT, path), "utf8") : undefined;

test("every relative link in README.md, ARCHITECTURE.md and docs/ leads to a file and a heading that exist", () => {
  let links = 0;
  const broken = DOCS.flatMap((doc) => {
    const text = readFileSync(join(ROOT, doc), "utf8");
    links += relativeLinks(text).length;
    return brokenLinks(doc, text, readDoc);
  });
  expect(links).toBeGreaterThan(50); // the docs really were read
  expect(broken).toEqual([]);
});

describe("the link rules", () => {
  test("GitHub's heading ids", () => {
    expect(slug("Signed builds only: `verify`")).toBe("signed-builds-only-verify");
    expect(slug("In the cluster, as the CronJob's ServiceAccount")).toBe(
      "in-the-cluster-as-the-cronjobs-serviceaccount",
    );
    expect(slug("Workloads after uninstalling: pinned, and how to put them back on the tag")).toBe(
      "workloads-after-uninstalling-pinned-and-how-to-put-them-back-on-the-tag",
    );
    expect(slug("2. The namespace and, if your registry needs one, the pull secret")).toBe(
      "2-the-namespace-and-if-your-registry-needs-one-the-pull-secret",
    );
    expect(slug("Build for linux/amd64 (one OCI index)")).toBe("build-for-linuxamd64-one-oci-index");
    expect(slug("A — B_c")).toBe("a--b_c");
    expect([...anchors("# Upgrade\n\n## Upgrade\n\n```sh\n# not a heading\n```\n### Upgrade\n")]).toEqual([
      "upgrade",
      "upgrade-1",
      "upgrade-2",
    ]);
  });

  test("links in prose are read; code, absolute URLs and links inside backticks are not", () => {
    const text = [
      'See [a](docs/a.md#x), [b](#y), ![c](img/c.png "title") and [web](https://example.com/z).',
      "`[not](a-link.md)`",
      "```md",
      "[also not](b.md)",
      "```",
    ].join("\n");
    expect(relativeLinks(text)).toEqual(["docs/a.md#x", "#y", "img/c.png"]);
  });

  test("a missing file, a missing heading and a heading of the page itself are told apart", () => {
    const pages: Record<string, string> = { "docs/on-call.md": "# On call\n\n## Alerts\n" };
    const text = [
      "[ok](on-call.md#alerts) [self](#here) [gone](no-such-page.md) [nohead](on-call.md#no-such-heading)",
      "[up](../README.md#quick-start) [out](../../elsewhere.md)",
      "",
      "## Here",
    ].join("\n");
    const read = (p: string) => pages[p] ?? (p === "README.md" ? "## Quick start\n" : undefined);
    expect(brokenLinks("docs/x.md", text, read).map((m) => m.split(": ")[1])).toEqual([
      "no-such-page.md",
      "on-call.md#no-such-heading",
      "../../elsewhere.md",
    ]);
  });
});
