// RBAC for the simulated API server, as kube-apiserver decides it: request attributes derived
// from the URL alone (apiserver endpoints/request/requestinfo.go), matched against the rules
// bound to the caller (plugin/pkg/auth/authorizer/rbac RuleAllows), and the real Forbidden
// Status (responsewriters/errors.go forbiddenMessage + apimachinery errors.NewForbidden).
// Off unless rules are set, so every other test keeps an all-powerful token.
import { failure, type Status } from "./status.ts";

/** One PolicyRule as granted in a namespace (a RoleBinding) or everywhere (no namespace). */
export interface RbacRule {
  /** The RoleBinding's namespace; absent means cluster-wide, as through a ClusterRoleBinding. */
  namespace?: string;
  apiGroups: string[];
  resources: string[];
  resourceNames?: string[];
  verbs: string[];
}

export interface RbacPolicy {
  /** As the authenticator names the caller, e.g. `system:serviceaccount:ns:name`. */
  user: string;
  rules: RbacRule[];
}

export type RequestAttributes =
  | {
      resourceRequest: true;
      verb: string;
      apiGroup: string;
      resource: string;
      subresource: string;
      namespace: string;
      name: string;
    }
  | { resourceRequest: false; verb: string; path: string };

// requestinfo.go: APIPrefixes {api, apis}, of which "api" has no group segment.
const SPECIAL_VERBS = new Set(["proxy", "watch"]);
const NAMESPACE_SUBRESOURCES = new Set(["status", "finalize"]);
const METHOD_VERBS: Record<string, string> = {
  POST: "create",
  GET: "get",
  HEAD: "get",
  PUT: "update",
  PATCH: "patch",
  DELETE: "delete",
};

/** The attributes kube-apiserver authorizes a request by; `query` is the raw search string. */
export function requestAttributes(method: string, path: string, query: string): RequestAttributes {
  const nonResource = { resourceRequest: false as const, verb: method.toLowerCase(), path };
  let parts = path.split("/").filter((p) => p !== "");
  const prefix = parts[0];
  if (parts.length < 3 || (prefix !== "api" && prefix !== "apis")) return nonResource;
  parts = parts.slice(1);
  let apiGroup = "";
  if (prefix === "apis") {
    if (parts.length < 3) return nonResource;
    apiGroup = parts[0] as string;
    parts = parts.slice(1);
  }
  parts = parts.slice(1); // the version
  let verb = METHOD_VERBS[method.toUpperCase()] ?? "";
  if (SPECIAL_VERBS.has(parts[0] ?? "") && parts.length >= 2) {
    verb = parts[0] as string;
    parts = parts.slice(1);
  }
  let namespace = "";
  if (parts[0] === "namespaces" && parts.length > 1) {
    namespace = parts[1] as string;
    if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2] as string)) parts = parts.slice(2);
  }
  const resource = parts[0] ?? "";
  let name = parts[1] ?? "";
  const subresource = parts.length >= 3 && verb !== "proxy" ? (parts[2] as string) : "";
  const params = new URLSearchParams(query);
  if (!name && verb === "get") {
    verb = isWatch(params.get("watch")) ? "watch" : "list";
    name = selectedName(params.get("fieldSelector")) ?? "";
  }
  if (!name && verb === "delete") verb = "deletecollection";
  return { resourceRequest: true, verb, apiGroup, resource, subresource, namespace, name };
}

/** apimachinery's string→bool conversion: only `false` (any case) and `0` are false. */
function isWatch(value: string | null): boolean {
  return value !== null && !["false", "0"].includes(value.toLowerCase());
}

/**
 * fields.Selector.RequiresExactMatch("metadata.name") after fields.ParseSelector: the value of
 * a `metadata.name=` (or `==`) term, even beside other terms (terms are sorted, the first
 * wins); never of `!=`. A selector that does not parse names nothing, and requestinfo.go
 * ignores a name that is not a valid path segment.
 */
export function selectedName(selector: string | null): string | undefined {
  const terms = splitTerms(selector ?? "")
    .sort()
    .filter((t) => t !== "");
  let found: string | undefined;
  for (const term of terms) {
    // splitTerm: the first position where an operator starts, trying != then == then =.
    const m = /^(.*?)(!=|==|=)(.*)$/s.exec(term);
    if (!m) return undefined;
    const [, key, op, raw] = m as unknown as [string, string, string, string];
    const value = unescapeValue(raw);
    if (value === undefined) return undefined;
    if (found === undefined && key === "metadata.name" && op !== "!=") found = value;
  }
  return found !== undefined && validSegment(found) ? found : undefined;
}

/** Commas that no backslash escapes separate the terms (fields/selector.go splitTerms). */
function splitTerms(s: string): string[] {
  if (s === "") return [];
  const out: string[] = [];
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === "\\") i++;
    else if (s[i] === ",") {
      out.push(s.slice(start, i));
      start = i + 1;
    }
  }
  out.push(s.slice(start));
  return out;
}

function unescapeValue(v: string): string | undefined {
  let out = "";
  for (let i = 0; i < v.length; i++) {
    const c = v[i];
    if (c !== "\\") {
      if (c === "," || c === "=") return undefined;
      out += c;
      continue;
    }
    const next = v[++i];
    if (next !== "\\" && next !== "," && next !== "=") return undefined;
    out += next;
  }
  return out;
}

const validSegment = (n: string): boolean =>
  n !== "" && n !== "." && n !== ".." && !n.includes("/") && !n.includes("%");

// What every authenticated user may do (bootstrap policy, bound to system:authenticated):
// `get` on system:discovery's URLs (a superset of system:public-info-viewer's), and
// system:basic-user's self reviews.
const PUBLIC_URLS = [
  ...["/livez", "/readyz", "/healthz", "/version", "/version/"],
  ...["/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*"],
];
const BASIC_USER: RbacRule[] = [
  {
    apiGroups: ["authorization.k8s.io"],
    resources: ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
    verbs: ["create"],
  },
  { apiGroups: ["authentication.k8s.io"], resources: ["selfsubjectreviews"], verbs: ["create"] },
];

const matches = (list: string[] | undefined, value: string): boolean =>
  !!list && (list.includes("*") || list.includes(value));

function resourceMatches(rule: RbacRule, resource: string, subresource: string): boolean {
  const combined = subresource ? `${resource}/${subresource}` : resource;
  return rule.resources.some(
    (r) => r === "*" || r === combined || (subresource !== "" && r === `*/${subresource}`),
  );
}

/** RuleAllows plus the binding's scope: a Role's rules apply in its namespace only. */
export function ruleAllows(rule: RbacRule, a: RequestAttributes): boolean {
  if (!a.resourceRequest) return false;
  if (rule.namespace !== undefined && rule.namespace !== a.namespace) return false;
  return (
    matches(rule.verbs, a.verb) &&
    matches(rule.apiGroups, a.apiGroup) &&
    resourceMatches(rule, a.resource, a.subresource) &&
    (!rule.resourceNames?.length || rule.resourceNames.includes(a.name))
  );
}

function nonResourceAllowed(a: Extract<RequestAttributes, { resourceRequest: false }>): boolean {
  if (a.verb !== "get") return false;
  return PUBLIC_URLS.some((u) => (u.endsWith("*") ? a.path.startsWith(u.slice(0, -1)) : a.path === u));
}

export function allowed(rules: RbacRule[], a: RequestAttributes): boolean {
  if (!a.resourceRequest) return nonResourceAllowed(a);
  return [...BASIC_USER, ...rules].some((r) => ruleAllows(r, a));
}

/** The 403 kube-apiserver answers: errors.NewForbidden around forbiddenMessage, no reason suffix. */
export function forbiddenStatus(a: RequestAttributes, user: string): Status {
  if (!a.resourceRequest)
    return failure(403, `forbidden: User "${user}" cannot ${a.verb} path "${a.path}"`, "Forbidden", {});
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const scope = a.namespace ? `in the namespace "${a.namespace}"` : "at the cluster scope";
  const why = `User "${user}" cannot ${a.verb} resource "${resource}" in API group "${a.apiGroup}" ${scope}`;
  const qualified = a.apiGroup ? `${a.resource}.${a.apiGroup}` : a.resource;
  const subject = a.name ? `${qualified} "${a.name}"` : qualified;
  // Status details drop empty fields on the wire: no group for core, no name for a collection.
  const details = {
    ...(a.name ? { name: a.name } : {}),
    ...(a.apiGroup ? { group: a.apiGroup } : {}),
    kind: a.resource,
  };
  return failure(403, `${subject} is forbidden: ${why}`, "Forbidden", details);
}

/** The Forbidden answer for a request the policy does not allow, else undefined. */
export function authorize(
  policy: RbacPolicy,
  req: { method: string; path: string; search: string },
): Status | undefined {
  const a = requestAttributes(req.method, req.path, req.search);
  return allowed(policy.rules, a) ? undefined : forbiddenStatus(a, policy.user);
}
