// The rendered Roles bound to a ServiceAccount, and the variants of each with one verb of one
// rule removed, named by the permission they take away ("list apps/deployments in apps").
import type { K8sObject } from "../../lib/manifests.ts";
import type { Api } from "./api.ts";

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
}

export type Role = K8sObject & { rules?: Rule[] };

interface Binding {
  subjects?: Array<{ kind: string; name: string; namespace?: string }>;
  roleRef: { kind: string; name: string };
}

export interface Variant {
  name: string;
  /** "verb group/resource in namespace", as the audit log names a denied request. */
  permission: string;
  role: K8sObject;
  original: K8sObject;
}

/** The Roles that RoleBindings in the rendering bind to `sa`. */
export function boundRoles(objects: readonly K8sObject[], sa: { namespace: string; name: string }): Role[] {
  const out: Role[] = [];
  for (const o of objects) {
    if (o.kind !== "RoleBinding") continue;
    const b = o as unknown as Binding;
    const ours = (b.subjects ?? []).some(
      (s) => s.kind === "ServiceAccount" && s.name === sa.name && s.namespace === sa.namespace,
    );
    if (!ours || b.roleRef.kind !== "Role") continue;
    const role = objects.find(
      (r) =>
        r.kind === "Role" &&
        r.metadata.name === b.roleRef.name &&
        r.metadata.namespace === o.metadata.namespace,
    );
    if (!role)
      throw new Error(
        `RoleBinding ${o.metadata.namespace}/${o.metadata.name} names a Role that is not rendered`,
      );
    out.push(role as Role);
  }
  return out;
}

/** One variant per verb of each rule (per resource, when a rule names several). */
export function withoutVerb(role: Role): Variant[] {
  const ns = role.metadata.namespace ?? "default";
  const out: Variant[] = [];
  (role.rules ?? []).forEach((rule, i) => {
    for (const verb of rule.verbs)
      for (const resource of rule.resources ?? []) {
        const group = rule.apiGroups?.[0] ?? "";
        const rest = (rule.resources ?? []).filter((r) => r !== resource);
        const trimmed: Rule[] = [
          { ...rule, verbs: rule.verbs.filter((v) => v !== verb), resources: [resource] },
        ];
        if (rest.length) trimmed.push({ ...rule, resources: rest });
        const rules = (role.rules ?? []).flatMap((r, j) =>
          j === i ? trimmed.filter((x) => x.verbs.length) : [r],
        );
        const permission = `${verb} ${group}/${resource} in ${ns}`;
        out.push({
          name: `Role ${ns}/${role.metadata.name} without ${permission}`,
          permission,
          role: { ...role, rules },
          original: role,
        });
      }
  });
  return out;
}

/** Every (verb, group, resource, name) a Role grants, one per resourceName (or none). */
function grants(role: Role): Array<{ verb: string; group: string; resource: string; name?: string }> {
  return (role.rules ?? []).flatMap((r) =>
    r.verbs.flatMap((verb) =>
      (r.resources ?? []).flatMap((resource) =>
        (r.resourceNames?.length ? r.resourceNames : [undefined]).map((name) => ({
          verb,
          group: r.apiGroups?.[0] ?? "",
          resource,
          ...(name ? { name } : {}),
        })),
      ),
    ),
  );
}

/**
 * Waits until the real authorizer (asked with SubjectAccessReviews) agrees with `role` for every
 * grant of `original`: allowed where `role` still grants it, denied where it does not. The RBAC
 * authorizer reads Roles from an informer, so a Role just written takes a moment to count.
 */
export async function rbacSettled(admin: Api, user: string, role: Role, original: Role): Promise<void> {
  const ns = role.metadata.namespace ?? "default";
  const key = (g: { verb: string; group: string; resource: string; name?: string }) => JSON.stringify(g);
  const kept = new Set(grants(role).map(key));
  const deadline = Date.now() + 20_000;
  for (const g of grants(original)) {
    for (;;) {
      const review = {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        spec: { user, resourceAttributes: { namespace: ns, ...g } },
      };
      const r = await admin.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
        body: review,
      });
      if ((r.body?.status?.allowed === true) === kept.has(key(g))) break;
      if (Date.now() > deadline)
        throw new Error(`Cannot see Role ${ns}/${role.metadata.name} take effect for ${key(g)}`);
      await Bun.sleep(100);
    }
  }
}
