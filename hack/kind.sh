#!/usr/bin/env bash
# Junction on kind, the way a cluster runs it: the image built from the root Dockerfile and loaded
# into the nodes, the chart installed with the operator, the software UPF and the UE agent
# DaemonSet (hack/kind/values.yaml), config/samples and the gNB emulator applied
# (hack/kind/objects), the user plane wired on the nodes (hack/kind/dataplane.sh: VXLAN links
# from the UE nodes to the core node, whose namespaces hold the UPF's ports, the gNB, the WiFi
# gateway with carol's fixed line and its W-AGF, and a data network), a wait until the UPF is
# Ready and every session Programmed, and traffic: a line through alice's, bob's and carol's
# sessions to the data network and back (carol's 5G and fixed line, over N3 through the W-AGF).
#
#   hack/kind.sh up      # or: make kind-up     (needs a running Docker engine)
#   hack/kind.sh down    # or: make kind-down
#
# Not run on the machines this was written on (no Docker engine there); test/ueagent's
# TestKindDataplane runs hack/kind/dataplane.sh on namespaces standing in for the nodes, with
# the processes given these pods' flags, and test/chart installs the chart and these objects.
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
core=$cluster-worker3
# The samples' ue-node-a, ue-node-b and ue-node-c (objects/ names them for the default cluster
# name); lines: whether a node's wlan0 is a fixed line to the W-AGF (carol's 5G-RG).
ue_nodes=("$cluster-worker" "$cluster-worker2" "$cluster-worker4")
lines=(no no yes)

# dataplane NODE ARGS...: hack/kind/dataplane.sh on a node, as root in its own namespaces.
dataplane() { local node=$1; shift; docker exec -i "$node" bash -s -- "$@" <hack/kind/dataplane.sh; }
node_ip() { $kubectl get node "$1" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}'; }

# The core node's namespaces first: the software UPF's pod opens its ports in jx-upf.
if ! docker exec "$core" test -e /run/netns/jx-upf; then
  ips=()
  for i in "${!ue_nodes[@]}"; do
    addr=$(node_ip "${ue_nodes[$i]}")
    if [[ ${lines[$i]} == yes ]]; then addr+=/line; fi
    ips+=("$addr")
  done
  dataplane "$core" core "${ips[@]}"
fi

docker build -t "$image" --build-arg VERSION=kind --build-arg REVISION="$(git rev-parse HEAD)" .
$kind load docker-image "$image" --name "$cluster"

# The UE agents and the software UPF need the privileged Pod Security level (charts/junction/README.md).
$kubectl create namespace junction-system --dry-run=client -o yaml | $kubectl apply -f -
$kubectl label namespace junction-system pod-security.kubernetes.io/enforce=privileged --overwrite

# The pipeline ConfigMap holds p4c's P4Info; the software UPF needs no device config.
$helm upgrade --install junction charts/junction --kube-context "$context" \
  -n junction-system --create-namespace -f hack/kind/values.yaml \
  --set image.repository="${image%:*}" --set image.tag="${image##*:}" --set image.pullPolicy=Never \
  --set pipeline.create=true --set-file pipeline.p4info=p4/p4info.txtpb \
  --wait --timeout 5m

# The samples and the gNB emulator, with the image just loaded (an overlay in the git-ignored
# build/: kustomize takes no absolute paths).
mkdir -p build/kind
cat >build/kind/kustomization.yaml <<OVERLAY
resources: [../../hack/kind/objects]
images: [{name: junction, newName: ${image%:*}, newTag: ${image##*:}}]
OVERLAY
bin/kustomize build build/kind | $kubectl apply -f -

# Each UE node gets its sessions' UE addresses on ran0 and wlan0, as its modem and WiFi would.
mas="$kubectl -n junction-system get atssssessions"
for i in "${!ue_nodes[@]}"; do
  n=${ue_nodes[$i]}
  if ! docker exec "$n" ip link show ran0 >/dev/null 2>&1; then
    on="?(@.spec.ue.nodeName==\"$n\")"
    a3=$($mas -o jsonpath="{range .items[$on]}{.spec.accessLegs.threeGPP.ueAddress},{end}")
    aw=$($mas -o jsonpath="{range .items[$on]}{.spec.accessLegs.nonThreeGPP.ueAddress},{end}")
    dataplane "$n" ue "$(node_ip "$core")" "$i" "$a3" "$aw"
    if [[ ${lines[$i]} == yes ]]; then dataplane "$core" line "$aw"; fi
  fi
done

$kubectl -n junction-system wait --for=condition=Ready userplanefunction/edge-upf-1 --timeout=3m
$kubectl -n junction-system wait --for=condition=Programmed atssssessions --all --timeout=3m
$kubectl -n junction-system wait --for=condition=Ready steeringpolicies --all --timeout=1m
# Traffic: alice's, bob's and carol's agents Ready, then a line through each of their sessions.
$kubectl -n junction-system wait --for=condition=AgentReady atssssession/alice-internet atssssession/bob-internet atssssession/carol-branch --timeout=3m
dataplane "${ue_nodes[0]}" check "$($mas alice-internet -o jsonpath='{.spec.sessionAddress}')"
dataplane "${ue_nodes[1]}" check "$($mas bob-internet -o jsonpath='{.spec.sessionAddress}')"
dataplane "${ue_nodes[2]}" check "$($mas carol-branch -o jsonpath='{.spec.sessionAddress}')"
$kubectl get junction -n junction-system -o wide
cat <<HINTS

Junction runs in kind cluster $cluster:
  kubectl --context $context get junction -A -o wide
  kubectl --context $context -n junction-system logs deploy/junction-operator
  kubectl --context $context -n junction-system logs ds/junction-ue-agent
  docker exec -i ${ue_nodes[0]} bash -s -- check 10.60.0.1 < hack/kind/dataplane.sh
  hack/kind.sh down
HINTS
