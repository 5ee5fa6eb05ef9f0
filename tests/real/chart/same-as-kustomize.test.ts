// The chart and the kustomize base render the same RBAC and the same CronJob for the same
// config: k8s/base and the example overlay are rendered with kubectl, their config.yaml and
// image are handed to the chart as values, and Helm v3 and v4 render it. Compared:
// - the config: the chart's ConfigMap carries a config.yaml the program reads as the same config;
// - RBAC as permissions (lib/manifests.ts notation, bound to the CronJob's service account): the
//   chart grants exactly what the kustomize manifests grant, plus the ConfigMap store's rules
//   (expected.ts: create on configmaps and get/patch on image-refresh-state in the release's
//   namespace, and create on events in every target namespace), and nothing else; while the base
//   already grants those, the plus adds nothing;
// - RBAC as objects: the same Roles and RoleBindings (kind, namespace, name, subjects, roleRef),
//   the chart's image-refresh-store pair aside; labels are Helm's bookkeeping and not compared;
// - the CronJob: the whole object, except metadata.labels, the pod template's labels other than
//   app.kubernetes.io/name, its annotations (the config checksum), and the config volume's
//   ConfigMap name (kustomize appends a content hash, the chart does not need one).
import { describe, expect, test } from "bun:test";
import { parseConfig } from "../../../lib/config.ts";
import {
  configMapText,
  cronJobOf,
  grantedPermissions,
  type K8sObject,
  serviceAccountOf,
} from "../../../lib/manifests.ts";
import { render } from "../../k8s/checks.ts";
import { needTool } from "../../support/tools.ts";
import { eventPermissions, storePermissions } from "./expected.ts";
import { HELMS, needHelm, rendered } from "./helm.ts";

const noKubectl = needTool("kubectl", { apt: "kubernetes-client" });
const missing = needHelm("tests/real/chart/same-as-kustomize.test.ts") || noKubectl;

// biome-ignore lint/suspicious/noExplicitAny: rendered objects are free-form JSON
type Obj = any;

function containerOf(job: Obj): Obj {
  return job.spec.jobTemplate.spec.template.spec.containers[0];
}

/** The values that make the chart render what the kustomization renders. */
function valuesFor(objects: K8sObject[]): Record<string, unknown> {
  const ref: string = containerOf(objects.find((o) => o.kind === "CronJob")).image;
  const cut = ref.lastIndexOf(":");
  return {
    image: { repository: ref.slice(0, cut), tag: ref.slice(cut + 1) },
    config: Bun.YAML.parse(configMapText(objects) ?? ""),
  };
}

function permissions(objects: K8sObject[]): string[] {
  return [...grantedPermissions(objects, serviceAccountOf(cronJobOf(objects)))].sort();
}

function rbacObjects(objects: K8sObject[]): Obj[] {
  return objects
    .filter((o) => (o.kind === "Role" || o.kind === "RoleBinding") && !o.metadata.name.endsWith("-store"))
    .map((o: Obj) => ({
      kind: o.kind,
      namespace: o.metadata.namespace,
      name: o.metadata.name,
      subjects: o.subjects,
      roleRef: o.roleRef,
    }))
    .sort((a, b) => `${a.kind}/${a.namespace}`.localeCompare(`${b.kind}/${b.namespace}`));
}

function comparableJob(objects: K8sObject[]): Obj {
  const job = structuredClone(objects.find((o) => o.kind === "CronJob")) as Obj;
  delete job.metadata.labels;
  const pod = job.spec.jobTemplate.spec.template;
  pod.metadata = { labels: { "app.kubernetes.io/name": pod.metadata.labels["app.kubernetes.io/name"] } };
  for (const v of pod.spec.volumes) if (v.configMap) v.configMap.name = "<the config ConfigMap>";
  return job;
}

const cases = [
  { dir: "base", kustomize: "base" },
  { dir: "examples/two-deployments-and-daemonset", kustomize: "examples/two-deployments-and-daemonset" },
];

describe.skipIf(missing)("the chart renders what the kustomize manifests render", () => {
  for (const c of cases)
    for (const mod of HELMS)
      describe(`k8s/${c.dir} and ${mod}`, () => {
        const ours = missing ? [] : render(c.kustomize);
        const chart = missing ? [] : rendered(mod, valuesFor(ours));
        const config = () => parseConfig(configMapText(ours) ?? "", {});

        test("the same config", () => {
          expect(parseConfig(configMapText(chart) ?? "", {})).toEqual(config());
        });

        test("the same permissions, plus the store's rules and nothing else", () => {
          const plus = [...storePermissions("image-refresh"), ...eventPermissions(config())];
          expect(permissions(chart)).toEqual([...new Set([...permissions(ours), ...plus])].sort());
        });

        test("the same Roles and RoleBindings, the store's pair aside", () => {
          expect(rbacObjects(chart)).toEqual(rbacObjects(ours));
          expect(
            chart
              .filter((o) => o.metadata.name.endsWith("-store"))
              .map((o) => o.kind)
              .sort(),
          ).toEqual(["Role", "RoleBinding"]);
        });

        test("the same CronJob", () => {
          expect(comparableJob(chart)).toEqual(comparableJob(ours));
        });

        test("the same ServiceAccount", () => {
          const sa = (objects: K8sObject[]) =>
            objects
              .filter((o) => o.kind === "ServiceAccount")
              .map((o) => `${o.metadata.namespace}/${o.metadata.name}`);
          expect(sa(chart)).toEqual(sa(ours));
        });
      });
});
