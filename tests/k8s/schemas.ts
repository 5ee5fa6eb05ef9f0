// Offline schemas for the kinds we ship, written by hand: the npm package that carries the
// Kubernetes schemas (kubernetes-models) is 25 MB over 27 packages and accepts unknown fields,
// and an unknown field is exactly what a typo in a manifest produces. Every object here is
// strict, so `restartPolice: Never` fails instead of being silently dropped by the API server.
// Fields follow the Kubernetes v1.32 API reference; only fields we use or an operator would
// plausibly add are listed, and adding one is a deliberate act.
import { z } from "zod";

const dns1123Label = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "not a DNS-1123 label")
  .max(63);
const dns1123Subdomain = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, "not a DNS-1123 subdomain")
  .max(253);
const quantity = z.union([
  z.string().regex(/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[numkMGTPE]|[KMGTPE]i)?$/, "not a quantity"),
  z.number(),
]);
const stringMap = z.record(z.string(), z.string());
const int32 = z.int().min(-2147483648).max(2147483647);

const objectMeta = z.strictObject({
  name: dns1123Subdomain,
  namespace: dns1123Label.optional(),
  labels: stringMap.optional(),
  annotations: stringMap.optional(),
});
const templateMeta = z.strictObject({ labels: stringMap.optional(), annotations: stringMap.optional() });

export const namespace = z.strictObject({
  apiVersion: z.literal("v1"),
  kind: z.literal("Namespace"),
  metadata: objectMeta,
});

export const serviceAccount = z.strictObject({
  apiVersion: z.literal("v1"),
  kind: z.literal("ServiceAccount"),
  metadata: objectMeta,
  automountServiceAccountToken: z.boolean().optional(),
  imagePullSecrets: z.array(z.strictObject({ name: dns1123Subdomain })).optional(),
});

export const configMap = z.strictObject({
  apiVersion: z.literal("v1"),
  kind: z.literal("ConfigMap"),
  metadata: objectMeta,
  data: stringMap.optional(),
  binaryData: stringMap.optional(),
  immutable: z.boolean().optional(),
});

const policyRule = z.strictObject({
  apiGroups: z.array(z.string()),
  resources: z.array(z.string().min(1)),
  resourceNames: z.array(z.string().min(1)).optional(),
  verbs: z
    .array(z.enum(["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]))
    .min(1),
});

export const role = z.strictObject({
  apiVersion: z.literal("rbac.authorization.k8s.io/v1"),
  kind: z.literal("Role"),
  metadata: objectMeta.extend({ namespace: dns1123Label }),
  rules: z.array(policyRule),
});

export const roleBinding = z.strictObject({
  apiVersion: z.literal("rbac.authorization.k8s.io/v1"),
  kind: z.literal("RoleBinding"),
  metadata: objectMeta.extend({ namespace: dns1123Label }),
  subjects: z.array(
    z.strictObject({
      kind: z.enum(["ServiceAccount", "User", "Group"]),
      name: z.string().min(1),
      namespace: dns1123Label.optional(),
      apiGroup: z.string().optional(),
    }),
  ),
  roleRef: z.strictObject({
    apiGroup: z.literal("rbac.authorization.k8s.io"),
    kind: z.enum(["Role", "ClusterRole"]),
    name: z.string().min(1),
  }),
});

const seccompProfile = z.strictObject({
  type: z.enum(["RuntimeDefault", "Localhost", "Unconfined"]),
  localhostProfile: z.string().optional(),
});
const capabilities = z.strictObject({
  add: z.array(z.string()).optional(),
  drop: z.array(z.string()).optional(),
});
const containerSecurityContext = z.strictObject({
  runAsNonRoot: z.boolean().optional(),
  runAsUser: z.int().min(0).optional(),
  runAsGroup: z.int().min(0).optional(),
  readOnlyRootFilesystem: z.boolean().optional(),
  allowPrivilegeEscalation: z.boolean().optional(),
  privileged: z.boolean().optional(),
  capabilities: capabilities.optional(),
  seccompProfile: seccompProfile.optional(),
});
const podSecurityContext = z.strictObject({
  runAsNonRoot: z.boolean().optional(),
  runAsUser: z.int().min(0).optional(),
  runAsGroup: z.int().min(0).optional(),
  fsGroup: z.int().min(0).optional(),
  supplementalGroups: z.array(z.int().min(0)).optional(),
  seccompProfile: seccompProfile.optional(),
});

const keyRef = z.strictObject({ name: z.string(), key: z.string(), optional: z.boolean().optional() });
const envVar = z.strictObject({
  name: z.string().min(1),
  value: z.string().optional(),
  valueFrom: z
    .strictObject({
      configMapKeyRef: keyRef.optional(),
      secretKeyRef: keyRef.optional(),
      fieldRef: z.strictObject({ fieldPath: z.string(), apiVersion: z.string().optional() }).optional(),
    })
    .optional(),
});
const resources = z.strictObject({
  requests: z.partialRecord(z.enum(["cpu", "memory", "ephemeral-storage"]), quantity).optional(),
  limits: z.partialRecord(z.enum(["cpu", "memory", "ephemeral-storage"]), quantity).optional(),
});
const volumeMount = z.strictObject({
  name: dns1123Label,
  mountPath: z.string().startsWith("/"),
  subPath: z.string().optional(),
  readOnly: z.boolean().optional(),
});
const container = z.strictObject({
  name: dns1123Label,
  image: z.string().min(1),
  imagePullPolicy: z.enum(["Always", "IfNotPresent", "Never"]).optional(),
  command: z.array(z.string()).optional(),
  args: z.array(z.string()).optional(),
  env: z.array(envVar).optional(),
  resources: resources.optional(),
  securityContext: containerSecurityContext.optional(),
  volumeMounts: z.array(volumeMount).optional(),
  terminationMessagePolicy: z.enum(["File", "FallbackToLogsOnError"]).optional(),
});
const keyToPath = z.strictObject({ key: z.string(), path: z.string(), mode: z.int().optional() });
const volume = z.strictObject({
  name: dns1123Label,
  configMap: z
    .strictObject({
      name: dns1123Subdomain,
      items: z.array(keyToPath).optional(),
      optional: z.boolean().optional(),
      defaultMode: z.int().optional(),
    })
    .optional(),
  secret: z
    .strictObject({
      secretName: dns1123Subdomain,
      items: z.array(keyToPath).optional(),
      optional: z.boolean().optional(),
      defaultMode: z.int().optional(),
    })
    .optional(),
  emptyDir: z
    .strictObject({ medium: z.enum(["", "Memory"]).optional(), sizeLimit: quantity.optional() })
    .optional(),
});
const podSpec = z.strictObject({
  serviceAccountName: dns1123Subdomain.optional(),
  automountServiceAccountToken: z.boolean().optional(),
  restartPolicy: z.enum(["Always", "OnFailure", "Never"]),
  securityContext: podSecurityContext.optional(),
  containers: z.array(container).min(1),
  volumes: z.array(volume).optional(),
  imagePullSecrets: z.array(z.strictObject({ name: dns1123Subdomain })).optional(),
  nodeSelector: stringMap.optional(),
  priorityClassName: z.string().optional(),
  terminationGracePeriodSeconds: z.int().min(0).optional(),
});

export const cronJob = z.strictObject({
  apiVersion: z.literal("batch/v1"),
  kind: z.literal("CronJob"),
  metadata: objectMeta,
  spec: z.strictObject({
    schedule: z.string().min(1),
    timeZone: z.string().optional(),
    concurrencyPolicy: z.enum(["Allow", "Forbid", "Replace"]).optional(),
    startingDeadlineSeconds: z.int().min(0).optional(),
    suspend: z.boolean().optional(),
    successfulJobsHistoryLimit: int32.min(0).optional(),
    failedJobsHistoryLimit: int32.min(0).optional(),
    jobTemplate: z.strictObject({
      metadata: templateMeta.optional(),
      spec: z.strictObject({
        backoffLimit: int32.min(0).optional(),
        activeDeadlineSeconds: z.int().min(1).optional(),
        ttlSecondsAfterFinished: int32.min(0).optional(),
        template: z.strictObject({ metadata: templateMeta.optional(), spec: podSpec }),
      }),
    }),
  }),
});

export type CronJob = z.infer<typeof cronJob>;
export type Role = z.infer<typeof role>;
export type RoleBinding = z.infer<typeof roleBinding>;

/** The schema for an object's apiVersion/kind; an object of any other kind is not ours to ship. */
export const SCHEMAS: Record<string, z.ZodType> = {
  "v1/Namespace": namespace,
  "v1/ServiceAccount": serviceAccount,
  "v1/ConfigMap": configMap,
  "rbac.authorization.k8s.io/v1/Role": role,
  "rbac.authorization.k8s.io/v1/RoleBinding": roleBinding,
  "batch/v1/CronJob": cronJob,
};
