#!/usr/bin/env bash
# The reads of one no-op tick as the earlier shell implementation made them: kubectl rollout
# status on the state object, one kubectl get per annotation read, and per image a token request
# and a manifest HEAD with curl; then, as that shell would if it read the live spec,
# one kubectl get of each distinct target workload, whose target containers must name their
# image's recorded pin. It writes nothing (a no-op tick writes nothing either) and prints "noop"
# or "changed <n>". The bench gives it a fresh empty --cache-dir per run, as in a new pod.
#
# Usage: kubectl-way.sh key=repository...
# Environment: KUBECONFIG CACHE_DIR NAMESPACE STATE (e.g. deployment/api) PREFIX REGISTRY
#              SERVICE (token service) CA (PEM file) TAG
#              TARGETS (one target a line: key namespace kind/name container)
set -euo pipefail

k() { kubectl --kubeconfig "$KUBECONFIG" --cache-dir "$CACHE_DIR" -n "$NAMESPACE" "$@"; }
# jsonpath needs the dots of the annotation key escaped.
annotation() { k get "$STATE" -o "jsonpath={.metadata.annotations.${PREFIX//./\\.}/$1}"; }

k rollout status "$STATE" --timeout=60s >/dev/null
attempt=$(annotation refresh-attempt)
flap=$(annotation refresh-flap-detected)
streak=$(annotation refresh-skip-streak)
traceparent=$(annotation refresh-attempt-traceparent)
: "$attempt$flap$streak$traceparent" # read as the shell job did; a no-op tick only needs them read

accept="application/vnd.docker.distribution.manifest.v2+json"
accept+=", application/vnd.docker.distribution.manifest.list.v2+json"
accept+=", application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json"
changed=0
declare -A pin
for image in "$@"; do
  key=${image%%=*}
  repo=${image#*=}
  recorded=$(annotation "last-refreshed-$key-digest")
  pin[$key]=$recorded
  token=$(curl -fsS --cacert "$CA" "$REGISTRY/token?service=$SERVICE&scope=repository:$repo:pull" |
    sed -n 's/.*"token":"\([^"]*\)".*/\1/p')
  digest=$(curl -fsS -I --cacert "$CA" -H "Authorization: Bearer $token" -H "Accept: $accept" \
    "$REGISTRY/v2/$repo/manifests/$TAG" | tr -d '\r' |
    awk -F': ' 'tolower($1) == "docker-content-digest" { print $2 }')
  [ "$recorded" = "$digest" ] || changed=$((changed + 1))
done
declare -A live
while read -r key ns workload container; do
  [ -n "$key" ] || continue
  if [ -z "${live[$ns/$workload]+set}" ]; then
    live[$ns/$workload]=$(kubectl --kubeconfig "$KUBECONFIG" --cache-dir "$CACHE_DIR" -n "$ns" \
      get "$workload" -o 'jsonpath={range .spec.template.spec.containers[*]}{.name}={.image}{"\n"}{end}')
  fi
  image=$(printf '%s\n' "${live[$ns/$workload]}" | awk -F= -v c="$container" '$1 == c { print $2 }')
  [[ $image == *"@${pin[$key]}" ]] || changed=$((changed + 1))
done <<<"$TARGETS"
if [ "$changed" -eq 0 ]; then echo noop; else echo "changed $changed"; fi
