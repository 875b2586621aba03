#!/usr/bin/env bash
# Builds every tool the project needs into ./bin, pinned, from the Go module proxy
# (and Debian packages for the data-plane tools). A tool whose stamp matches its pinned
# version is not rebuilt, so a second run takes seconds.
#
#   hack/tools.sh [tool...]      tools: controller-gen kustomize helm gotestsum promtool envtest kubectl kind
#                                       flux-crds foreign-crds wireguard-go dataplane tshark p4tools
#                                       (default: controller-gen kustomize helm gotestsum promtool envtest)
#   hack/tools.sh envtest-path   prints the directory to use as KUBEBUILDER_ASSETS
#
# dataplane is what the network-namespace testbed runs besides Junction: wireguard-go (built
# here) with wg to configure it, iperf3, mptcpize (Linux MPTCP, the baseline), ethtool, ping and
# socat (the kind data plane's echo check, hack/kind/dataplane.sh, tested here). The
# Debian packages are installed with apt-get only when their command is missing, so it needs
# root the first time only.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/bin"
mkdir -p "$bin"

# Pinned versions. Every one builds with the machine's Go (GOTOOLCHAIN=local, Go 1.26).
CONTROLLER_GEN_VERSION=v0.18.0
KUSTOMIZE_VERSION=v5.8.2        # its latest needs a newer Go than some machines have
HELM_VERSION=v3.18.6
GOTESTSUM_VERSION=v1.12.3
# promtool checks and unit-tests the chart's alerting rules (test/chart); a large build (cold: ~8
# min on 2 cores), cached like the others.
PROMTOOL_VERSION=v0.316.0
KIND_VERSION=v0.33.0            # hack/kind.sh only (needs Docker)
KUBE_VERSION=v1.33.13           # kube-apiserver; every staging module is published at v0.33.13
ETCD_VERSION=v3.5.21
# Flux's CRDs, against which test/chart validates gitops/flux: the controllers of one Flux release,
# at the versions its github.com/fluxcd/flux2/v2 go.mod names. Each controller's root module zip
# holds its repository's config/crd/bases. v2.9.5 is the newest flux2 the proxy serves, and the
# newer helm-controller v1.7 is there as its api/ submodule only (its root module is refused).
FLUX_VERSION=v2.9.5
FLUX_CONTROLLERS=(source-controller@v1.9.5 kustomize-controller@v1.9.5 helm-controller@v1.6.4)
FLUX_CRDS=("${FLUX_CONTROLLERS[@]/#/github.com/fluxcd/}")
FLUX_CRDS=("${FLUX_CRDS[@]/%/:config/crd/bases/*.yaml}")
# The CRDs of the kinds the chart makes besides its own, which test/chart installs it against:
# the Prometheus Operator's monitors and rules, and cert-manager's certificates and issuers. Each
# is module@version:the files in its module zip.
CHART_FOREIGN_CRDS=(
  github.com/prometheus-operator/prometheus-operator@v0.85.0:example/prometheus-operator-crd/monitoring.coreos.com_{servicemonitors,podmonitors,prometheusrules}.yaml
  github.com/cert-manager/cert-manager@v1.21.2:deploy/crds/cert-manager.io_{certificates,issuers}.yaml
)
# wireguard-go has no tagged release on the Go module proxy, only pseudo-versions; this one (its
# go.mod: go 1.23.1) is the newest there.
WIREGUARD_GO_VERSION=v0.0.0-20260522210424-ecfc5a8d5446

# Debian packages of the data-plane tools, each with the command that shows it is installed.
# wireguard-tools gives wg, which configures wireguard-go through its UAPI socket
# (/var/run/wireguard/<interface>.sock) as it would the kernel module.
DATAPLANE_PACKAGES=(iperf3:iperf3 mptcpize:mptcpize ethtool:ethtool wireguard-tools:wg iputils-ping:ping socat:socat)

envtest_dir="$bin/k8s/$KUBE_VERSION-etcd-$ETCD_VERSION"

log() { printf '[tools] %s\n' "$*" >&2; }

# fresh NAME VERSION: true when bin/NAME was built from VERSION.
fresh() { [[ -x "$bin/$1" && "$(cat "$bin/.$1.version" 2>/dev/null)" == "$2" ]]; }
stamp() { echo "$2" >"$bin/.$1.version"; }

# go_install NAME PACKAGE VERSION [LDFLAGS]: bin/NAME, whatever the package's own binary name
# (wireguard-go's module installs as "wireguard"). Built aside, so a failed build leaves no
# half-written bin/NAME; the link flags are part of what the cache stamp records.
go_install() {
  local name=$1 pkg=$2 version=$3 ldflags=${4:-} tmp
  local key="$version${ldflags:+ $ldflags}"
  fresh "$name" "$key" && return 0
  log "building $name $version"
  tmp=$(mktemp -d "$bin/.build.XXXXXX")
  if ! GOBIN="$tmp" go install -ldflags "$ldflags" "$pkg@$version"; then
    rm -rf "$tmp"
    return 1
  fi
  mv "$tmp"/* "$bin/$name"
  rmdir "$tmp"
  stamp "$name" "$key"
}

# helm_ldflags: the link flags of Helm's own release build (its Makefile): the version, and the
# Kubernetes version of the client-go it is built with, which `helm template` and `helm lint`
# assume without --kube-version (unset: 1.20, which the chart refuses).
helm_ldflags() {
  local gomod minor
  gomod=$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  minor=$(awk '$1 == "k8s.io/client-go" { sub(/^v0\./, "", $2); sub(/\..*/, "", $2); print $2 }' "$gomod")
  [[ -n $minor ]] || { log "helm $HELM_VERSION: no k8s.io/client-go in its go.mod"; return 1; }
  local f="-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    f+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$minor"
  done
  echo "$f"
}

# apt_install PACKAGE:COMMAND...: installs, non-interactively, the Debian packages whose command
# is not found (sbin included, which a non-root PATH may lack); nothing when all are there.
apt_install() {
  local missing=() entry
  for entry in "$@"; do
    PATH="$PATH:/usr/sbin:/sbin" command -v "${entry#*:}" >/dev/null || missing+=("${entry%%:*}")
  done
  [[ ${#missing[@]} -gt 0 ]] || return 0
  apt_get "${missing[@]}"
}

# apt_get PACKAGE...: installs Debian packages non-interactively (root only).
apt_get() {
  if ! command -v apt-get >/dev/null; then
    echo "missing packages: $*; install them with your package manager" >&2
    return 1
  fi
  if [[ $(id -u) -ne 0 ]]; then
    echo "missing Debian packages: $*; run this as root, or: sudo apt-get install $*" >&2
    return 1
  fi
  log "installing Debian packages: $*"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# Without the version stamp the API server reports v0.0.0 and clients refuse some features.
version_ldflags() {
  local minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
  local pkg=k8s.io/component-base/version
  echo "-s -w -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
}

build_envtest() {
  if [[ -x "$envtest_dir/kube-apiserver" && -x "$envtest_dir/etcd" ]]; then return 0; fi
  mkdir -p "$envtest_dir"
  log "building kube-apiserver $KUBE_VERSION (cold: ~4 min, 2.2 GB of memory)"
  (cd "$root/hack/envtest/kube-apiserver" &&
    go build -trimpath -ldflags "$(version_ldflags)" -o "$envtest_dir/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver)
  log "building etcd $ETCD_VERSION"
  (cd "$root/hack/envtest/etcd" &&
    go build -trimpath -ldflags "-s -w" -o "$envtest_dir/etcd.tmp" go.etcd.io/etcd/server/v3)
  mv "$envtest_dir/kube-apiserver.tmp" "$envtest_dir/kube-apiserver"
  mv "$envtest_dir/etcd.tmp" "$envtest_dir/etcd"
  return 0
}

build_kubectl() {
  fresh kubectl "$KUBE_VERSION" && return 0
  log "building kubectl $KUBE_VERSION"
  (cd "$root/hack/envtest/kube-apiserver" &&
    go build -trimpath -ldflags "$(version_ldflags)" -o "$bin/kubectl" k8s.io/kubernetes/cmd/kubectl)
  stamp kubectl "$KUBE_VERSION"
}

# fetch_crds NAME KEY MODULE@VERSION:FILES...: bin/NAME/*.yaml, the files of each module zip
# (its repository's tree) that FILES names, from the module cache, stamped KEY. Collected aside,
# so a failed download leaves no partial directory.
fetch_crds() {
  local name=$1 key=$2 tmp spec module files json dir
  shift 2
  fresh "$name" "$key" && return 0
  log "fetching $name"
  tmp=$(mktemp -d "$bin/.build.XXXXXX")
  for spec in "$@"; do
    module=${spec%%:*} files=${spec#*:}
    if ! json=$(go mod download -json "$module"); then
      log "$module: $json"
      rm -rf "$tmp"
      return 1
    fi
    dir=$(sed -n 's/.*"Dir": "\(.*\)".*/\1/p' <<<"$json")
    # shellcheck disable=SC2086 # files may be a glob
    if ! cp "$dir"/$files "$tmp"/; then
      log "$module: no $files"
      rm -rf "$tmp"
      return 1
    fi
  done
  rm -rf "${bin:?}/$name"
  mv "$tmp" "$bin/$name"
  stamp "$name" "$key"
}

# p4tools: p4c (p4c-bm2-ss, p4test) and BMv2 (simple_switch_grpc) under bin/p4tools, and the Tofino
# compiler (bf-p4c, p4c's open Tofino back end with the bfas assembler) under bin/bf-p4c. No
# package registry ships them; the builds for these machines (Debian 12, x86-64; how they were
# made is in their READMEs) are tarballs in $P4TOOLS or ../shared/p4tools, checked against its
# SHA256SUMS. Elsewhere, build them from the sources at the commits their VERSIONS files name and
# put p4c-bm2-ss, p4test and bf-p4c on the PATH: hack/p4-build.sh uses them from there.
install_p4tools() {
  unpack_p4_tarball p4tools p4c-bm2-ss p4test
  unpack_p4_tarball bf-p4c bf-p4c
}

# unpack_p4_tarball NAME COMMAND...: bin/NAME from NAME-debian12-amd64.tar.xz, unless the
# commands are on the PATH and there is no tarball; then the Debian packages it links against.
unpack_p4_tarball() {
  local name=$1 src=${P4TOOLS:-$root/../shared/p4tools} tarball sum c
  shift
  tarball="$src/$name-debian12-amd64.tar.xz"
  if [[ ! -f "$tarball" ]]; then
    for c in "$@"; do
      command -v "$c" >/dev/null || {
        echo "no $c: neither $tarball (set P4TOOLS to its folder) nor $* on the PATH" >&2
        return 1
      }
    done
    return 0
  fi
  sum=$(awk -v f="$name-debian12-amd64.tar.xz" '$2 == f { print $1 }' "$src/SHA256SUMS" 2>/dev/null)
  [[ -n "$sum" ]] || sum=$(sha256sum "$tarball" | cut -d' ' -f1)
  if [[ "$(cat "$bin/.$name.version" 2>/dev/null)" != "$sum" || ! -x "$bin/$name/bin/$1" ]]; then
    log "unpacking $name from $tarball"
    echo "$sum  $tarball" | sha256sum -c --quiet
    rm -rf "${bin:?}/$name"
    tar -C "$bin" -xJf "$tarball"
    echo "$sum" >"$bin/.$name.version"
  fi
  # The binaries link against Debian packages; install those missing (root, once).
  local pkgs=() p
  while read -r p; do
    [[ -n "$p" ]] && ! dpkg -s "$p" >/dev/null 2>&1 && pkgs+=("$p")
  done < <(tr ' ' '\n' <"$bin/$name/debian-runtime-packages.txt")
  [[ ${#pkgs[@]} -eq 0 ]] || apt_get "${pkgs[@]}"
}

build() {
  case $1 in
    controller-gen) go_install controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen "$CONTROLLER_GEN_VERSION" ;;
    kustomize) go_install kustomize sigs.k8s.io/kustomize/kustomize/v5 "$KUSTOMIZE_VERSION" ;;
    helm) go_install helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION" "$(helm_ldflags)" ;;
    gotestsum) go_install gotestsum gotest.tools/gotestsum "$GOTESTSUM_VERSION" ;;
    promtool) go_install promtool github.com/prometheus/prometheus/cmd/promtool "$PROMTOOL_VERSION" ;;
    kind) go_install kind sigs.k8s.io/kind "$KIND_VERSION" ;;
    kubectl) build_kubectl ;;
    flux-crds) fetch_crds flux-crds "$FLUX_VERSION ${FLUX_CONTROLLERS[*]}" "${FLUX_CRDS[@]}" ;;
    foreign-crds) fetch_crds foreign-crds "${CHART_FOREIGN_CRDS[*]}" "${CHART_FOREIGN_CRDS[@]}" ;;
    envtest) build_envtest ;;
    wireguard-go) go_install wireguard-go golang.zx2c4.com/wireguard "$WIREGUARD_GO_VERSION" "-s -w" ;;
    dataplane) build wireguard-go; apt_install "${DATAPLANE_PACKAGES[@]}" ;;
    # Wireshark's PFCP dissector, an independent decoder of what the N4 endpoint sends (test/operator).
    tshark) apt_install tshark:tshark ;;
    p4tools) install_p4tools ;;
    *) echo "unknown tool: $1" >&2; exit 2 ;;
  esac
}

if [[ ${1:-} == envtest-path ]]; then
  build_envtest
  echo "$envtest_dir"
  exit 0
fi

tools=("$@")
[[ ${#tools[@]} -gt 0 ]] || tools=(controller-gen kustomize helm gotestsum promtool envtest)
for t in "${tools[@]}"; do build "$t"; done
