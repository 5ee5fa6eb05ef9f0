// Label selectors as the apiserver parses them (apimachinery labels.Parse): `k=v`, `k==v`, `k!=v`,
// `k`, `!k`, `k in (a,b)`, `k notin (a,b)`, comma-separated, all of them must hold.
import type { JsonObject } from "./patch.ts";

/** Splits on the commas between requirements, not those inside a set's parentheses. */
function requirements(selector: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < selector.length; i++) {
    const ch = selector[i];
    if (ch === "(") depth++;
    else if (ch === ")") depth--;
    else if (ch === "," && depth === 0) {
      out.push(selector.slice(start, i));
      start = i + 1;
    }
  }
  out.push(selector.slice(start));
  return out.map((t) => t.trim()).filter((t) => t !== "");
}

function holds(term: string, labels: JsonObject): boolean {
  const set = /^([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term);
  if (set) {
    const values = (set[3] ?? "").split(",").map((v) => v.trim());
    const has = (set[1] ?? "") in labels && values.includes(String(labels[set[1] ?? ""]));
    return set[2] === "in" ? has : !has;
  }
  if (term.startsWith("!")) return !(term.slice(1) in labels);
  const ne = /^([^!=]+)!=(.*)$/.exec(term);
  if (ne) return labels[ne[1] ?? ""] !== ne[2];
  const [k = "", v] = term.split(/==|=/);
  return v === undefined ? k in labels : labels[k] === v;
}

export function labelsMatch(obj: JsonObject, selector: string | undefined): boolean {
  if (!selector) return true;
  const labels = ((obj.metadata as JsonObject).labels ?? {}) as JsonObject;
  return requirements(selector).every((term) => holds(term, labels));
}
