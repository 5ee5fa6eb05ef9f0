// The chart under the real Helm v3 and v4: `helm lint --strict` and `helm template` clean, the
// values schema compiled and enforced by Helm itself (a bad duration, a typo, a missing field are
// refused before anything renders), the Job deadline computed from the config and a smaller one
// refused, and the Roles rendered from the config's targets exactly as lib/manifests.ts says
// (plus the store's rules, see expected.ts).
import { describe, expect, test } from "bun:test";
import { type Config, parseConfig } from "../../../lib/config.ts";
import {
  configMapText,
  DEADLINE_SLACK_SECONDS,
  grantedPermissions,
  type K8sObject,
  minimumDeadlineSeconds,
} from "../../../lib/manifests.ts";
import { chartPermissions } from "./expected.ts";
import { CHART, HELMS, helm, KUBE_VERSION, needHelm, rendered, template } from "./helm.ts";

const missing = needHelm("tests/real/chart/lint-template.test.ts");

const SA = { namespace: "image-refresh", name: "image-refresh" };
const configOf = (objects: K8sObject[]): Config => parseConfig(configMapText(objects) ?? "", {});
const jobSpec = (objects: K8sObject[]) =>
  (
    objects.find((o) => o.kind === "CronJob") as unknown as {
      spec: { jobTemplate: { spec: { activeDeadlineSeconds: number } } };
    }
  ).spec.jobTemplate.spec;

/** Three images over two Deployments, a DaemonSet in another namespace and a pinned StatefulSet. */
const WIDE = {
  config: {
    state: { kind: "Deployment", namespace: "shop", name: "web" },
    onFailure: "keep",
    rolloutTimeout: "1h30m",
    images: [
      {
        repository: "myorg/web",
        targets: [
          { kind: "Deployment", name: "web", container: "web" },
          { kind: "Deployment", name: "worker", container: "web" },
        ],
      },
      { repository: "myorg/sidecar", targets: [{ kind: "Deployment", name: "web", container: "sidecar" }] },
      {
        repository: "myorg/agent",
        targets: [{ kind: "DaemonSet", namespace: "infra", name: "agent", container: "agent" }],
      },
      {
        repository: "myorg/db",
        pinned: true,
        targets: [{ kind: "StatefulSet", name: "db", container: "db" }],
      },
    ],
  },
};

describe.skipIf(missing)("the chart under Helm v3 and v4", () => {
  for (const mod of HELMS)
    test(`${mod}: serviceAccount.annotations land on the ServiceAccount (each cloud's identity), podLabels on the pod (Azure's); none by default`, () => {
      const sa = (objects: K8sObject[]) =>
        objects.find((o) => o.kind === "ServiceAccount") as unknown as {
          metadata: { annotations?: unknown };
        };
      const podLabels = (objects: K8sObject[]) =>
        (
          objects.find((o) => o.kind === "CronJob") as unknown as {
            spec: { jobTemplate: { spec: { template: { metadata: { labels: Record<string, string> } } } } };
          }
        ).spec.jobTemplate.spec.template.metadata.labels;
      for (const annotations of [
        { "eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/image-refresh-ecr-pull" },
        { "iam.gke.io/gcp-service-account": "image-refresh@my-project.iam.gserviceaccount.com" },
        { "azure.workload.identity/client-id": "11111111-2222-3333-4444-555555555555" },
      ])
        expect(sa(rendered(mod, { serviceAccount: { annotations } })).metadata.annotations).toEqual(
          annotations,
        );
      const azure = { "azure.workload.identity/use": "true" };
      expect(podLabels(rendered(mod, { podLabels: azure }))).toMatchObject(azure);
      expect(sa(rendered(mod)).metadata.annotations).toBeUndefined();
    });
  for (const mod of HELMS) {
    test(`${mod}: helm lint --strict is clean`, () => {
      const r = helm(mod, ["lint", "--strict", CHART, "--kube-version", KUBE_VERSION]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout + r.stderr).not.toMatch(/\[(WARNING|ERROR)\]/);
      expect(r.stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    });

    test(`${mod}: helm template is clean, and the Roles grant exactly what the config needs`, () => {
      for (const values of [{}, WIDE]) {
        const r = template(mod, values);
        expect(r.code, r.stderr).toBe(0);
        expect(r.stderr).toBe("");
        const objects = rendered(mod, values);
        const config = configOf(objects);
        expect([...grantedPermissions(objects, SA)].sort()).toEqual(
          chartPermissions(config, "image-refresh"),
        );
        expect(objects.filter((o) => o.kind.startsWith("Cluster"))).toEqual([]);
        // The rule of the kustomize base: ceil(groups / parallelism) x the longest group's workloads
        // x waits x (rolloutTimeout + verifyFor) + 300 s.
        expect(jobSpec(objects).activeDeadlineSeconds).toBe(
          minimumDeadlineSeconds(config) - DEADLINE_SLACK_SECONDS + 300,
        );
      }
    });

    test(`${mod}: the pinned StatefulSet gets nothing; the keep mode waits once per workload`, () => {
      const objects = rendered(mod, WIDE);
      const granted = [...grantedPermissions(objects, SA)];
      expect(granted.filter((p) => p.includes("statefulsets"))).toEqual([]);
      // Two groups (web and sidecar share web, with worker; agent), db pinned: ceil(2 / 4) round
      // x 2 workloads x 1 wait (onFailure: keep) x (5400 s + verifyFor 120 s) + 300 s.
      expect(jobSpec(objects).activeDeadlineSeconds).toBe(2 * 5520 + 300);
      // One group at a time: two rounds.
      const serial = { config: { ...WIDE.config, parallelism: 1 } };
      expect(jobSpec(rendered(mod, serial)).activeDeadlineSeconds).toBe(2 * 2 * 5520 + 300);
      expect(jobSpec(rendered(mod, serial)).activeDeadlineSeconds).toBe(
        minimumDeadlineSeconds(configOf(rendered(mod, serial))) - DEADLINE_SLACK_SECONDS + 300,
      );
    });

    test(`${mod}: the values schema is Helm's check too`, () => {
      const bad: Array<[Record<string, unknown>, RegExp]> = [
        [{ config: { rolloutTimeout: "0s" } }, /rolloutTimeout/],
        [{ config: { rolloutTimeout: "10 minutes" } }, /rolloutTimeout/],
        [{ config: { maxRefreshAttempt: 3 } }, /maxRefreshAttempt/],
        [
          {
            config: { images: [{ repository: "myorg/app", targets: [{ kind: "Deployment", name: "app" }] }] },
          },
          /container/,
        ],
        [{ schedulle: "* * * * *" }, /schedulle/],
      ];
      for (const [values, field] of bad) {
        const r = template(mod, values);
        expect(r.code, JSON.stringify(values)).not.toBe(0);
        expect(r.stderr).toMatch(/schema/);
        expect(r.stderr).toMatch(field);
      }
      expect(template(mod, { config: { rolloutTimeout: "1h30m", minimumAge: "0s" } }).code).toBe(0);
    });

    test(`${mod}: an activeDeadlineSeconds below the rollout waits is refused`, () => {
      const r = template(mod, { activeDeadlineSeconds: 600 });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(
        "activeDeadlineSeconds 600 does not cover ceil(1 groups / parallelism 4) x 1 workloads (the longest group) x 2 waits x (rolloutTimeout + verifyFor) + 300 s = 1740 s",
      );
      expect(jobSpec(rendered(mod, { activeDeadlineSeconds: 4000 })).activeDeadlineSeconds).toBe(4000);
    });

    test(`${mod}: the store's rules are a Role of their own in the release's namespace`, () => {
      const objects = rendered(mod, {});
      const store = objects.filter((o) => o.metadata.name === "image-refresh-store");
      expect(store.map((o) => `${o.kind} ${o.metadata.namespace}`).sort()).toEqual([
        "Role image-refresh",
        "RoleBinding image-refresh",
      ]);
      expect((store.find((o) => o.kind === "Role") as unknown as { rules: unknown }).rules).toEqual([
        { apiGroups: [""], resources: ["configmaps"], verbs: ["create"] },
        {
          apiGroups: [""],
          resources: ["configmaps"],
          resourceNames: ["image-refresh-state"],
          verbs: ["get", "patch"],
        },
      ]);
    });
  }
});
