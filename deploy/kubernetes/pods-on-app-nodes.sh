#!/bin/sh
# The rbmemtrace DaemonSet's pods (as pod/NAME, one a line) on the nodes that run the pods of
# an app, for `rbmemtrace fleet --hosts-from` (docs/deploy.md, "One-shot diagnosis"):
#   deploy/kubernetes/pods-on-app-nodes.sh NAMESPACE SELECTOR     e.g. shop app=web
set -eu
[ $# -eq 2 ] || { echo "usage: $0 NAMESPACE SELECTOR (e.g. shop app=web)" >&2; exit 2; }
nodes=$(kubectl get pods -n "$1" -l "$2" --field-selector=status.phase=Running \
	-o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u)
[ -n "$nodes" ] || { echo "no running pod in namespace $1 matches $2" >&2; exit 1; }
for node in $nodes; do
	kubectl get pods -n rbmemtrace -l app.kubernetes.io/name=rbmemtrace \
		--field-selector="spec.nodeName=$node,status.phase=Running" -o name
done
