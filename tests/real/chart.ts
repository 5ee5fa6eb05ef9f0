// A small Helm chart written by the test: one Deployment whose name, container and image come
// from values, so `helm upgrade` with the same values re-renders the floating tag.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const DEPLOYMENT = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Values.name }}
  labels: { app: {{ .Values.name }} }
spec:
  replicas: 1
  selector: { matchLabels: { app: {{ .Values.name }} } }
  template:
    metadata:
      labels: { app: {{ .Values.name }} }
    spec:
      terminationGracePeriodSeconds: 5
      containers:
        - name: {{ .Values.name }}
          image: {{ .Values.image | quote }}
`;

/** Writes the chart under `dir`; returns its path. */
export function writeChart(dir: string): string {
  const chart = join(dir, "web-chart");
  mkdirSync(join(chart, "templates"), { recursive: true });
  writeFileSync(join(chart, "Chart.yaml"), "apiVersion: v2\nname: web\nversion: 0.1.0\n");
  writeFileSync(join(chart, "values.yaml"), 'name: web\nimage: "example.test/web:1"\n');
  writeFileSync(join(chart, "templates", "deployment.yaml"), DEPLOYMENT);
  return chart;
}

/** The managers (with operation) of managedFields entries that own `container`'s image. */
export function imageOwners(
  obj: {
    metadata: { managedFields?: Array<{ manager: string; operation: string; fieldsV1?: unknown }> };
  },
  container: string,
): string[] {
  const key = `k:{"name":"${container}"}`;
  return (obj.metadata.managedFields ?? [])
    .filter((e) => {
      // biome-ignore lint/suspicious/noExplicitAny: fieldsV1 is a free-form trie
      const f = e.fieldsV1 as any;
      return f?.["f:spec"]?.["f:template"]?.["f:spec"]?.["f:containers"]?.[key]?.["f:image"] !== undefined;
    })
    .map((e) => `${e.manager}/${e.operation}`);
}
