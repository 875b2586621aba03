#!/usr/bin/env bash
# Junction on kind, the way a cluster runs it: the image built from the root Dockerfile and loaded
# into the nodes, the chart installed with the operator, the software UPF and the UE agent
# DaemonSet, config/samples applied (hack/kind/objects), and a wait until the UPF is Ready and
# every session Programmed.
#
#   hack/kind.sh up      # or: make kind-up     (needs a running Docker engine)
#   hack/kind.sh down    # or: make kind-down
#
# What it does not do yet: user traffic. The software UPF pod has no P4 ports here (kind has no
# Multus), so the UE agents build their TUNs and sockets but no packet reaches the UPF and their
# AgentReady stays False; `make run` is where traffic flows. Wiring it needs the UPF's ports on
# extra Docker networks shared with the worker nodes (docker network connect), as README.md says.
set -euo pipefail
cd "$(dirname "$0")/.."

cluster=${KIND_CLUSTER:-junction}
image=${IMAGE:-ghcr.io/junction-atsss/junction:kind}
context=kind-$cluster
action=${1:-up}

if ! command -v docker >/dev/null || ! docker info >/dev/null 2>&1; then
  echo "kind needs a running Docker engine (docker info failed)" >&2
  exit 1
fi
hack/tools.sh kind kubectl helm kustomize
kind=bin/kind kubectl="bin/kubectl --context $context" helm=bin/helm

case $action in
  down)
    $kind delete cluster --name "$cluster"
    exit 0 ;;
  up) ;;
  *)
    echo "usage: $0 up|down" >&2
    exit 2 ;;
esac

if ! $kind get clusters | grep -qx "$cluster"; then
  $kind create cluster --name "$cluster" --config hack/kind/cluster.yaml --wait 2m
fi

docker build -t "$image" --build-arg VERSION=kind --build-arg REVISION="$(git rev-parse HEAD)" .
$kind load docker-image "$image" --name "$cluster"

# The pipeline ConfigMap holds p4c's P4Info; the software UPF needs no device config.
$helm upgrade --install junction charts/junction --kube-context "$context" \
  -n junction-system --create-namespace \
  --set image.repository="${image%:*}" --set image.tag="${image##*:}" --set image.pullPolicy=Never \
  --set softupf.enabled=true --set ueAgent.enabled=true \
  --set pipeline.create=true --set-file pipeline.p4info=p4/p4info.txtpb \
  --wait --timeout 5m

bin/kustomize build hack/kind/objects | $kubectl apply -f -
$kubectl -n junction-system wait --for=condition=Ready userplanefunction/edge-upf-1 --timeout=3m
$kubectl -n junction-system wait --for=condition=Programmed atssssessions --all --timeout=3m
$kubectl -n junction-system wait --for=condition=Ready steeringpolicies --all --timeout=1m
$kubectl get junction -n junction-system -o wide
cat <<HINTS

Junction runs in kind cluster $cluster:
  kubectl --context $context get junction -A
  kubectl --context $context -n junction-system logs deploy/junction-operator
  kubectl --context $context -n junction-system logs ds/junction-ue-agent
  hack/kind.sh down
HINTS
