// The alert rules follow the installation. rules.yaml is written once, with placeholders where an
// installation's names go; this file renders it for one CronJob (a plain Prometheus rules file, or
// a PrometheusRule for the Prometheus Operator) and writes the Helm chart's template from the same
// text, so the chart, the kustomize path and plain Prometheus cannot drift apart.
import { prometheusSeriesNames } from "../../lib/telemetry/metrics.ts";

/** What rules.yaml leaves open; everything else in it is the same for every installation. */
// biome-ignore-start lint/suspicious/noTemplateCurlyInString: the placeholders are literal text
export const PLACEHOLDERS = {
  namespace: "${NAMESPACE}",
  cronjob: "${CRONJOB}",
  /** The CronJob's name inside a regular expression (its Jobs are `<cronjob>-<n>`). */
  cronjobRe: "${CRONJOB_RE}",
  installation: "${INSTALLATION}",
  runbook: "${RUNBOOK_URL}",
} as const;
// biome-ignore-end lint/suspicious/noTemplateCurlyInString: the placeholders are literal text

type Values = Record<keyof typeof PLACEHOLDERS, string>;

export interface Install {
  /** The CronJob's namespace and name, as kube-state-metrics labels its series. */
  namespace: string;
  cronjob: string;
  /** Its store, `<store namespace>/<store name>`: the product's own series are read for it only. */
  installation: string;
  /**
   * Read every installation's series instead (one Prometheus, one rules file, several stores that
   * export to it: the test tiers); the CronJob's alerts still carry `installation`.
   */
  everyInstallation?: boolean;
  /** Where docs/on-call.md is served; each alert links an anchor of it. */
  runbook: string;
}

/** The runbook's path in this repository: the default of every rendering. */
export const DEFAULT_RUNBOOK = "docs/on-call.md";

/** Longest first, so that a name is never matched by a shorter one that is its prefix. */
const SERIES = [...new Set(prometheusSeriesNames())].sort((a, b) => b.length - a.length);
const SERIES_RE = new RegExp(`\\b(${SERIES.join("|")})(?![a-zA-Z0-9_{])`, "g");

/**
 * Every selector of our own series in an `expr` narrowed to one installation (`matcher` is its
 * label matcher); the annotations' prose is left alone. An expr is its key's line and the lines
 * indented deeper than the key.
 */
export function scopeSeries(text: string, matcher: string): string {
  let exprIndent = -1;
  return text
    .split("\n")
    .map((line) => {
      const indent = line.search(/\S/);
      if (/^\s*expr:/.test(line)) exprIndent = indent;
      else if (exprIndent >= 0 && indent >= 0 && indent <= exprIndent) exprIndent = -1;
      return exprIndent < 0 ? line : line.replace(SERIES_RE, (name) => `${name}{${matcher}}`);
    })
    .join("\n");
}

/** The groups of rules.yaml, from `groups:` on (its header explains the source, not a rendering). */
function groups(source: string): string {
  const at = source.search(/^groups:/m);
  if (at < 0) throw new Error("Cannot render rules.yaml: no top-level groups: key");
  return source.slice(at);
}

function substitute(text: string, values: Values): string {
  let out = text;
  for (const [k, p] of Object.entries(PLACEHOLDERS)) out = out.replaceAll(p, values[k as keyof Values]);
  const left = /\$\{[A-Z_]+\}/.exec(out);
  if (left) throw new Error(`Cannot render rules.yaml: unknown placeholder ${left[0]}`);
  return out;
}

/** A CronJob name as a regular expression inside a PromQL string: `.` escaped, the backslash doubled. */
export const nameRe = (name: string) => name.replaceAll(".", "\\\\.");

/** The plain Prometheus rules file for one installation. */
export function renderRules(source: string, install: Install): string {
  const values = { ...install, cronjobRe: nameRe(install.cronjob) };
  let body = substitute(groups(source), values);
  if (!install.everyInstallation)
    body = scopeSeries(body, `image_refresh_installation="${install.installation}"`);
  const scope = install.everyInstallation ? "every installation" : `installation ${install.installation}`;
  return `# Rendered from k8s/monitoring/rules.yaml for CronJob ${install.namespace}/${install.cronjob}, ${scope}.\n${body}`;
}

const indent = (text: string) =>
  text
    .split("\n")
    .map((l) => (l === "" ? l : `  ${l}`))
    .join("\n");

/** The rules as a PrometheusRule named after the CronJob, in its namespace. */
export function renderPrometheusRule(source: string, install: Install): string {
  const rules = renderRules(source, install);
  const [comment, ...rest] = rules.split("\n");
  return `${comment}
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: ${install.cronjob}
  namespace: ${install.namespace}
  labels:
    app.kubernetes.io/name: image-refresh
    app.kubernetes.io/component: monitoring
spec:
${indent(rest.join("\n"))}`;
}

/** Prometheus' own `{{ $labels.x }}` templates, kept from Helm as raw strings. */
const keepFromHelm = (text: string) => text.replace(/\{\{(.*?)\}\}/g, (m) => `{{\`${m}\`}}`);

export const CHART_TEMPLATE_HEADER = `{{- /*
Generated from k8s/monitoring/rules.yaml by k8s/monitoring/generate.ts; edit rules.yaml and
regenerate. The alerts of k8s/monitoring for this release: kube-state-metrics' series of its own
CronJob and Jobs, and the product's series of its own store. Rendered only when asked for
(monitoring.enabled, or monitoring.prometheusRule.enabled which overrides it) and when the cluster
serves the Prometheus Operator's API.
*/ -}}
`;

/** The chart's templates/prometheusrule.yaml, from rules.yaml. */
export function chartTemplate(source: string): string {
  const helm: Values = {
    namespace: "{{ $namespace }}",
    cronjob: "{{ $cronjob }}",
    cronjobRe: "{{ $cronjobRe }}",
    installation: "{{ $installation }}",
    runbook: "{{ $runbook }}",
  };
  const body = scopeSeries(
    substitute(keepFromHelm(groups(source)), helm),
    'image_refresh_installation="{{ $installation }}"',
  );
  return `${CHART_TEMPLATE_HEADER}{{- $rule := dig "prometheusRule" dict (.Values.monitoring | default dict) -}}
{{- if and (include "image-refresh.monitoringOn" (dict "root" . "part" "prometheusRule")) (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1") -}}
{{- $namespace := .Release.Namespace -}}
{{- $cronjob := include "image-refresh.fullname" . -}}
{{- $cronjobRe := $cronjob | replace "." "\\\\\\\\." -}}
{{- $installation := printf "%s/%s" (include "image-refresh.storeNamespace" .) (include "image-refresh.storeName" .) -}}
{{- $runbook := dig "runbookUrl" "" (.Values.monitoring | default dict) | default "${DEFAULT_RUNBOOK}" -}}
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: {{ $cronjob }}
  namespace: {{ $namespace }}
  labels:
    {{- include "image-refresh.labels" . | nindent 4 }}
    app.kubernetes.io/component: monitoring
    {{- with $rule.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
${indent(body).trimEnd()}
{{- end }}
`;
}
