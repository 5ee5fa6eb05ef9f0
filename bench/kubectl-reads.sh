#!/usr/bin/env bash
# The product's own reads of one no-op tick, done the kubectl way: one kubectl process per API
# read and one curl process per registry request, in the order the product's requests reached
# the simulators, one after the other as a shell script makes them. The bench takes the list
# from a no-op tick of the product itself (bench/clients.ts), so this row follows the product's
# read set as it changes. It compares what it read as the limit does (each image's recorded
# digest with the registry's, each target container with its recorded pin) and prints "noop" or
# "changed <n>". The bench gives it a fresh empty --cache-dir per run, as in a new pod.
#
# Usage: kubectl-reads.sh key=repository...
# Environment: KUBECONFIG CACHE_DIR CA (PEM file) REGISTRY (base URL) PREFIX (legacy annotations)
#              READS (one read a line: "kubectl NAMESPACE RESOURCE/NAME" or "curl METHOD PATH?QUERY")
#              TARGETS (one target a line: key namespace resource/name container)
set -euo pipefail

# One template for both kinds of object the product reads: a ConfigMap's data, a workload's
# annotations and containers, one "d|a|c name=value" line each.
template='{{range $k, $v := .data}}d {{$k}}={{$v}}{{"\n"}}{{end}}'
template+='{{if .metadata.annotations}}{{range $k, $v := .metadata.annotations}}a {{$k}}={{$v}}{{"\n"}}{{end}}{{end}}'
template+='{{if .spec}}{{range .spec.template.spec.containers}}c {{.name}}={{.image}}{{"\n"}}{{end}}{{end}}'
accept="application/vnd.docker.distribution.manifest.v2+json"
accept+=", application/vnd.docker.distribution.manifest.list.v2+json"
accept+=", application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json"

declare -A recorded live digest
token=""
while read -r tool a b; do
  case "$tool" in
  kubectl)
    # NotFound (an empty store) is an answer too: the read was made.
    out=$(kubectl --kubeconfig "$KUBECONFIG" --cache-dir "$CACHE_DIR" -n "$a" get "$b" \
      --ignore-not-found -o "go-template=$template")
    while IFS= read -r line; do
      kind=${line%% *} kv=${line#* }
      case "$kind" in
      d) recorded[${kv%%=*}]=${kv#*=} ;;
      a) [[ ${kv%%=*} == "$PREFIX/"* ]] && { k=${kv%%=*}; : "${recorded[${k#"$PREFIX/"}]:=${kv#*=}}"; } ;;
      c) live[$a/$b/${kv%%=*}]=${kv#*=} ;;
      esac
    done <<<"$out"
    ;;
  curl)
    if [ "$a" = HEAD ]; then
      repo=${b#/v2/} repo=${repo%/manifests/*}
      auth=()
      [ -z "$token" ] || auth=(-H "Authorization: Bearer $token")
      digest[$repo]=$(curl -sS -I --cacert "$CA" "${auth[@]}" -H "Accept: $accept" "$REGISTRY$b" |
        tr -d '\r' | awk -F': ' 'tolower($1) == "docker-content-digest" { print $2 }')
    else
      body=$(curl -sS --cacert "$CA" "$REGISTRY$b")
      t=$(sed -n 's/.*"token":"\([^"]*\)".*/\1/p' <<<"$body")
      [ -z "$t" ] || token=$t
    fi
    ;;
  esac
done <<<"$READS"

changed=0
for image in "$@"; do
  key=${image%%=*} repo=${image#*=}
  [ "${recorded[last-refreshed-$key-digest]:-}" = "${digest[$repo]:-none}" ] || changed=$((changed + 1))
done
while read -r key ns workload container; do
  [ -n "$key" ] || continue
  [[ ${live[$ns/$workload/$container]:-} == *"@${recorded[last-refreshed-$key-digest]:-none}" ]] ||
    changed=$((changed + 1))
done <<<"$TARGETS"
if [ "$changed" -eq 0 ]; then echo noop; else echo "changed $changed"; fi
