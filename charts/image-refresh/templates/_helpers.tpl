{{/*
Names. Without overrides every object is called image-refresh (as in the kustomize base)
when the release is called image-refresh; otherwise <release>-image-refresh.
*/}}
{{- define "image-refresh.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "image-refresh.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "image-refresh.labels" -}}
app.kubernetes.io/name: {{ include "image-refresh.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/* The store: image-refresh's own ConfigMap, by default in the release's namespace. */}}
{{- define "image-refresh.storeNamespace" -}}
{{- dig "store" "namespace" "" .Values.config | default .Release.Namespace -}}
{{- end -}}

{{- define "image-refresh.storeName" -}}
{{- dig "store" "name" "" .Values.config | default "image-refresh-state" -}}
{{- end -}}

{{/* The targets' default namespace, as the program fills it in: namespace, else state's, else the store's. */}}
{{- define "image-refresh.defaultNamespace" -}}
{{- $c := .Values.config -}}
{{- dig "namespace" "" $c | default (dig "state" "namespace" "" $c) | default (include "image-refresh.storeNamespace" .) -}}
{{- end -}}

{{/*
What the Roles grant, from the config, as JSON: namespace -> {resource: [names]} for the targets
of every image that is not pinned (get, patch, list, watch: the rollout wait lists and watches
by name), the legacy state object where it is not a target (get, patch), and the namespaces
where Events are created and pods listed and watched (the targets': Events are about the workloads
they concern, and their pods verify a rollout and show a regression). A pinned image's targets are
never read or patched, so they get nothing.
*/}}
{{- define "image-refresh.rbacPlan" -}}
{{- $c := .Values.config -}}
{{- $def := include "image-refresh.defaultNamespace" . -}}
{{- $resources := dict "Deployment" "deployments" "DaemonSet" "daemonsets" "StatefulSet" "statefulsets" -}}
{{- $targets := dict -}}
{{- range $c.images -}}
{{- if not .pinned -}}
{{- range .targets -}}
{{- $ns := .namespace | default $def -}}
{{- $byResource := get $targets $ns | default dict -}}
{{- $r := get $resources .kind -}}
{{- $_ := set $byResource $r (append (get $byResource $r | default list) .name | uniq) -}}
{{- $_ := set $targets $ns $byResource -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $state := dict -}}
{{- with $c.state -}}
{{- $r := get $resources .kind -}}
{{- $named := get (get $targets .namespace | default dict) $r | default list -}}
{{- if not (has .name $named) -}}
{{- $_ := set $state .namespace (dict $r (list .name)) -}}
{{- end -}}
{{- end -}}
{{- $events := keys $targets -}}
{{- $namespaces := concat (keys $targets) (keys $state) $events | uniq | sortAlpha -}}
{{- toJson (dict "namespaces" $namespaces "targets" $targets "state" $state "events" ($events | uniq | sortAlpha) "pods" ($events | uniq | sortAlpha)) -}}
{{- end -}}

{{/* Milliseconds of a duration as the config writes it (500ms, 15s, 10m, 1h30m). */}}
{{- define "image-refresh.durationMs" -}}
{{- $ms := 0 -}}
{{- $units := dict "h" 3600000 "m" 60000 "s" 1000 "ms" 1 -}}
{{- range regexFindAll "[0-9]+(ms|h|m|s)" . -1 -}}
{{- $n := regexFind "^[0-9]+" . | atoi -}}
{{- $u := regexReplaceAll "^[0-9]+" . "" -}}
{{- $ms = add $ms (mul $n (get $units $u)) -}}
{{- end -}}
{{- $ms -}}
{{- end -}}

{{/*
The Job's deadline: above workloads x (rolloutTimeout + verifyFor), twice with onFailure: revert
(the wait forward and the wait back, each verified), plus 300 s for the reads, writes and telemetry flush, so Kubernetes
never kills a tick that is still inside its own rollout deadlines.
*/}}
{{- define "image-refresh.activeDeadlineSeconds" -}}
{{- $c := .Values.config -}}
{{- $def := include "image-refresh.defaultNamespace" . -}}
{{- $workloads := dict -}}
{{- range $c.images -}}
{{- if not .pinned -}}
{{- range .targets -}}
{{- $_ := set $workloads (printf "%s/%s/%s" (.namespace | default $def) .kind .name) true -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $waits := eq ($c.onFailure | default "revert") "revert" | ternary 2 1 -}}
{{- $ms := add (include "image-refresh.durationMs" ($c.rolloutTimeout | default "10m") | atoi) (include "image-refresh.durationMs" ($c.verifyFor | default "2m") | atoi) -}}
{{- $needed := add (div (add (mul (len $workloads) $waits $ms) 999) 1000) 300 -}}
{{- with .Values.activeDeadlineSeconds -}}
{{- if lt (int .) (int $needed) -}}
{{- fail (printf "activeDeadlineSeconds %v does not cover %d workloads x %d waits x (rolloutTimeout + verifyFor) + 300 s = %d s: raise it or leave it empty" . (len $workloads) $waits $needed) -}}
{{- end -}}
{{- . -}}
{{- else -}}
{{- $needed -}}
{{- end -}}
{{- end -}}
