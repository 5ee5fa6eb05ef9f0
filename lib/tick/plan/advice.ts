// What to tell a human whose deploy tool keeps rendering the floating tag over our pin: the one
// setting that makes that tool leave the image field alone. Keyed by the field manager that
// managedFields name. Sources: helm pkg/kube/client.go (v3.21.4: a three-way patch against the live
// object puts every rendered field back; Helm 4 keeps that path for releases made by Helm 3);
// argo-cd docs/user-guide/diffing.md and sync-options.md (ignoreDifferences only changes the
// comparison until RespectIgnoreDifferences=true); Flux kustomize-controller
// docs/spec/v1/kustomizations.md (spec.ignore from v1.9.0, the ssa: Ignore annotation) and
// helm-controller api/v2/helmrelease_types.go (driftDetection.ignore); the digest value of charts
// follows bitnami/charts bitnami/common/templates/_images.tpl.
import { FIELD_MANAGER } from "../../kube/managed-fields.ts";

const ADVICE: Array<[RegExp, string]> = [
  [
    /^helm$/,
    "Helm 3 (and Helm 4 on a release made with client-side apply) puts the chart's image back on every upgrade; put the digest in the chart's values instead (`--set image.digest=<digest>` on charts with a digest value, or `image.tag=<tag>@<digest>`)",
  ],
  [
    /^argocd/,
    `Argo CD re-applies the image from Git on every sync; add \`ignoreDifferences\` for the image field (\`jqPathExpressions: [".spec.template.spec.containers[].image"]\` or \`managedFieldsManagers: [${FIELD_MANAGER}]\`) together with the sync option \`RespectIgnoreDifferences=true\``,
  ],
  [
    /^kustomize-controller$/,
    "Flux re-applies the image at every interval; add `spec.ignore` with the path `/spec/template/spec/containers/<index>/image` (kustomize-controller v1.9 or later), or the annotation `kustomize.toolkit.fluxcd.io/ssa: Ignore`, or let an image policy write the digest to Git",
  ],
  [
    /^helm-controller$/,
    "Flux's helm-controller corrects drift and re-renders on upgrade; turn off drift detection for the image path (`spec.driftDetection.ignore`) and put the digest in the HelmRelease values",
  ],
  [
    /^kubectl(-client-side-apply)?$/,
    "the manifests applied with `kubectl apply` name the tag; put the digest in them (kustomize: `images: [{name: ..., digest: ...}]`)",
  ],
];

/** One sentence for the manager that keeps undoing the pin. */
export function stopUndoingAdvice(manager: string | undefined): string {
  if (manager === undefined)
    return "no field manager is on record for the image field; find what applies this workload and make it write the digest, or set `reconcile: report`";
  for (const [re, advice] of ADVICE) if (re.test(manager)) return advice;
  return `make ${manager} leave the image field alone or write the digest itself, or set \`reconcile: report\``;
}
