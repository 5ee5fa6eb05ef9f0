// What a refused workload write means for the operator. The API server refuses a patch before it
// changes anything when RBAC forbids it (403), the object is gone (404) or the patch is invalid
// (422, which is also how a failed JSON-patch `test` comes back): none of that is the build's
// fault, so the tick holds the image and says what to fix. For a 403 that is the verb, resource
// and Role to grant, read from the Status message kube-apiserver sends
// (`... is forbidden: User "system:serviceaccount:ns:sa" cannot patch resource "deployments" in
// API group "apps" in the namespace "apps"`).
import { ApiError } from "./errors.ts";

/** The codes of a write refused before anything changed. */
export const REFUSED_CODES = [403, 404, 422] as const;

export function isRefusal(err: unknown): err is ApiError {
  return err instanceof ApiError && (REFUSED_CODES as readonly number[]).includes(err.code);
}

export interface Forbidden {
  user?: string;
  verb: string;
  resource: string;
  group: string;
  namespace?: string;
}

const FORBIDDEN =
  /User "([^"]*)" cannot ([a-z]+) resource "([^"]+)" in API group "([^"]*)"(?: in the namespace "([^"]+)")?/;

/** The parts of kube-apiserver's Forbidden message; undefined when it is worded otherwise. */
export function parseForbidden(message: string): Forbidden | undefined {
  const m = FORBIDDEN.exec(message);
  if (!m) return undefined;
  const [, user, verb = "", resource = "", group = "", namespace] = m;
  return { user, verb, resource, group, ...(namespace ? { namespace } : {}) };
}

/**
 * The Role that grants it. The chart and the kustomize base give the ServiceAccount and the
 * Role in each target namespace the same name (image-refresh, or the Helm release's fullname),
 * so the ServiceAccount the API server names is the best guess at the Role's name.
 */
function roleOf(f: Forbidden, fallbackNamespace: string): string {
  const sa = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(f.user ?? "");
  const ns = f.namespace ?? fallbackNamespace;
  const name = sa?.[2] ?? "image-refresh";
  const who = sa ? ` to the ServiceAccount ${sa[1]}/${sa[2]}` : f.user ? ` to ${f.user}` : "";
  return `the Role ${ns}/${name}, which the chart and the kustomize base bind${who}`;
}

/** One sentence: what the API server refused and what to do about it. */
export function explainRefusal(err: ApiError, namespace: string): string {
  const what = `the API server refused the patch (${err.reason} ${err.code}: ${err.statusMessage || "no message"})`;
  if (err.code === 403) {
    const f = parseForbidden(err.statusMessage);
    if (!f) return `${what}; grant image-refresh \`patch\` on its target workloads in ${namespace}`;
    const resource = f.group ? `${f.resource}.${f.group}` : f.resource;
    return `${what}; grant \`${f.verb}\` on ${resource} in ${f.namespace ?? namespace}: add it to ${roleOf(f, namespace)}`;
  }
  if (err.code === 404) return `${what}; the workload is gone: restore it, or take it out of the config`;
  return `${what}; the workload changed since it was read (a container renamed or reordered) or the patch is invalid for it: check it against the config`;
}
