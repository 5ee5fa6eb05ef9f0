// Fault rules shared by the simulated API server and registry: which request gets which
// misbehaviour, for how many requests. Matching is kept here so both servers count alike.

export type Fault =
  | {
      type: "status";
      code: number;
      reason?: string;
      message?: string;
      retryAfter?: number;
      plainText?: boolean;
    }
  | { type: "hang" }
  | { type: "delay"; ms: number }
  /**
   * The TCP connection is destroyed before any response byte. Note that Bun's fetch (like
   * client-go) retries an idempotent GET once when a reused keep-alive connection dies, so
   * `times: 1` on a GET is usually invisible to the client; non-GET requests are not retried.
   */
  | { type: "reset" }
  /**
   * API server only: the request is carried out (a write lands), then the connection is
   * destroyed instead of the answer, as when a network path dies between the two.
   */
  | { type: "lost" }
  | { type: "malformed" }
  /** Watch only: answer 200 and send one in-stream ERROR event carrying a 410 Expired Status. */
  | { type: "expired" }
  /**
   * API server only: answer 200 with headers, then never a byte until the client leaves, as a
   * proxy that buffers chunked responses does to a watch (its events would come at the end).
   */
  | { type: "silent" };

export interface FaultRule {
  /** Upper-case HTTP method; absent matches every method. */
  method?: string;
  /**
   * A string matches the URL path exactly. A RegExp is tried against the path and against
   * path + query string, so `/watch=1/` can single out watches of a collection.
   */
  path: string | RegExp;
  /** How many matching requests get the fault; absent means every one from now on. */
  times?: number;
  fault: Fault;
}

/** The rules of one server. `add` stores a copy, so the countdown never mutates the caller's rule. */
export class FaultSet {
  readonly rules: FaultRule[] = [];

  add(rule: FaultRule): void {
    this.rules.push({ ...rule });
  }

  clear(): void {
    this.rules.length = 0;
  }

  /** The first live rule matching the request, consuming one of its `times`. */
  take(method: string, path: string, search = ""): Fault | undefined {
    return matchFault(this.rules, method, path, search);
  }
}

function matches(rule: FaultRule, method: string, path: string, search: string): boolean {
  if (rule.method && rule.method.toUpperCase() !== method.toUpperCase()) return false;
  if (typeof rule.path === "string") return rule.path === path;
  rule.path.lastIndex = 0; // a /g or /y RegExp would otherwise remember its last position
  if (rule.path.test(path)) return true;
  rule.path.lastIndex = 0;
  return search !== "" && rule.path.test(`${path}${search}`);
}

/**
 * Finds the first rule (in insertion order) that matches, counts its `times` down and drops
 * it from `rules` once used up, so an exhausted rule can never match again.
 */
export function matchFault(rules: FaultRule[], method: string, path: string, search = ""): Fault | undefined {
  const i = rules.findIndex((r) => (r.times ?? 1) > 0 && matches(r, method, path, search));
  const rule = rules[i];
  if (!rule) return undefined;
  if (rule.times !== undefined) {
    rule.times -= 1;
    if (rule.times <= 0) rules.splice(i, 1);
  }
  return rule.fault;
}
