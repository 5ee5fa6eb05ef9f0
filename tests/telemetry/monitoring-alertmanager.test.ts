// k8s/monitoring/alertmanager.yaml against the rules it routes: it groups by installation and
// image, every alert it names exists, and every label an inhibit rule compares
// is one that both its source and its target alerts carry (an `equal` label that one side lacks
// never matches, so the inhibition would silently never happen). The built amtool checks it in
// tests/real/pipeline/amtool.test.ts; the delivery itself is proved on a real Alertmanager in
// tests/real/pipeline/alertmanager.test.ts.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { BASE, baseRules, parseRules, type Rule } from "../../k8s/monitoring/generate.ts";

const DIR = join(import.meta.dir, "..", "..", "k8s", "monitoring");
const config = Bun.YAML.parse(readFileSync(join(DIR, "alertmanager.yaml"), "utf8")) as {
  route: { group_by: string[] };
  inhibit_rules: Array<{ source_matchers: string[]; target_matchers: string[]; equal: string[] }>;
};
const rules = parseRules(baseRules());

/** The alerts an `alertname=~"A|B"` matcher list selects. */
function named(matchers: string[]): Rule[] {
  const m = matchers.map((x) => /^alertname=~"(.+)"$/.exec(x)?.[1]).find(Boolean);
  if (!m) throw new Error(`Cannot read ${matchers.join(", ")}: expected alertname=~"..."`);
  const re = new RegExp(`^(?:${m})$`);
  return rules.filter((r) => re.test(r.alert ?? ""));
}

/** Labels an alert carries: its rule's static labels and the ones its expression keeps (by/on lists, selectors' names). */
function carries(rule: Rule, label: string): boolean {
  if (rule.labels && label in rule.labels) return true;
  const kept = [...rule.expr.matchAll(/\bby \(([^)]*)\)/g)].flatMap((m) => m[1]?.split(/,\s*/) ?? []);
  return kept.includes(label);
}

describe("alertmanager.yaml", () => {
  test("one notification group per alert, installation and image", () => {
    expect(config.route.group_by).toEqual(["alertname", "image_refresh_installation", "image_refresh_image"]);
  });

  test("the failed Jobs' alert is held back while an alert naming the image fires", () => {
    const rule = config.inhibit_rules.find((r) =>
      named(r.target_matchers).some((a) => a.alert === "ImageRefreshTickFailed"),
    );
    expect(named(rule?.source_matchers ?? []).map((a) => a.alert)).toContain("ImageRefreshLockedOut");
  });

  test("every inhibit rule names existing alerts, and each side carries every label it compares", () => {
    expect(BASE.installation).toContain("/");
    for (const r of config.inhibit_rules) {
      const sides = [named(r.source_matchers), named(r.target_matchers)];
      for (const side of sides) expect(side.length).toBeGreaterThan(0);
      for (const label of r.equal)
        for (const a of sides.flat())
          expect({ alert: a.alert, label, carried: carries(a, label) }).toEqual({
            alert: a.alert,
            label,
            carried: true,
          });
    }
  });
});
