#!/usr/bin/env bash
# The whole test run, what CI runs (.ci/run) and what the README tells a newcomer to run:
#   1. build the pinned tools and the envtest control plane into ./bin (cached);
#   2. fail if generated code or manifests (deepcopy, CRDs, RBAC) are stale, a Go source is not
#      gofmt-ed, or the P4 program does not compile with p4c (v1model) and bf-p4c (Tofino 2), or
#      what they generate (both P4Infos, docs/tofino.md's resource tables) is stale;
#   3. check that the kustomize overlays (operator, samples, UE agent DaemonSet, kind's objects, the GitOps examples) build;
#   4. go vet, the concurrent packages under the race detector, and every Go test (envtest
#      suites, P4Info check, software UPF, chart, packet vectors on the software UPF and BMv2,
#      the operator against BMv2, the UE agent testbed and its
#      short scenarios in network namespaces when run as root; a scenario that misses its bound runs
#      up to twice more), ending with a summary line of both gotestsum runs.
set -euo pipefail
cd "$(dirname "$0")/.."

# kubectl: test/chart runs it (the printer columns as a user sees them, the README's install steps);
# flux-crds and foreign-crds: test/chart validates the Flux example and installs the chart against them.
hack/tools.sh controller-gen kustomize helm gotestsum promtool envtest kubectl flux-crds foreign-crds
# The namespace testbeds (UE agent, benchmarks) need the data-plane tools, and the N4 check
# tshark; installing Debian packages needs root, which is also what those tests need to run at all.
if [[ $(id -u) == 0 ]]; then
  hack/tools.sh dataplane tshark
  # As root every test can run: one that lacks what it needs fails rather than skips
  # (testenv.Require), whether or not the CI system says it is one.
  export CI=${CI:-true}
fi
KUBEBUILDER_ASSETS=$(hack/tools.sh envtest-path)
export KUBEBUILDER_ASSETS

echo "== generated files are current"
make --no-print-directory verify-generated

echo "== Go sources are gofmt-ed"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [[ -n $unformatted ]]; then
  printf 'not gofmt-ed (run gofmt -w):\n%s\n' "$unformatted"
  exit 1
fi

# bf-p4c takes minutes on one core: the P4 build runs beside the checks that follow, and the
# run waits for it before the tests (which read what it checks).
echo "== the P4 program compiles with p4c (v1model) and bf-p4c (Tofino 2), in the background"
mkdir -p build
hack/p4-build.sh >build/p4-build.log 2>&1 &
p4_build=$!
trap 'kill "$p4_build" 2>/dev/null || true' EXIT

echo "== kustomize overlays build (the GitOps examples' too)"
for overlay in config/default config/default-n4 config/samples ue-daemonset hack/kind/objects gitops/objects gitops/argocd/objects gitops/flux/release; do
  bin/kustomize build "$overlay" >/dev/null
done
# config/default-n4 repeats config/default (namespace, prefix, labels, resources) and adds config/n4.
if ! diff <(grep -v '^#' config/default/kustomization.yaml) \
          <(grep -v '^#\|^components:\|^  - \.\./n4$' config/default-n4/kustomization.yaml); then
  echo "config/default-n4 differs from config/default beyond its N4 component" >&2
  exit 1
fi

echo "== go vet"
go vet ./...

echo "== go test -race (the packages with concurrent data paths)"
go test -race -count=1 ./internal/softupf/... ./internal/linkem ./internal/tun ./internal/ueagent/... \
  ./internal/pathmon ./internal/upfclient ./internal/programmer ./controllers

echo "== the P4 build: both compilers succeeded, what they write is checked in"
if ! wait "$p4_build"; then
  cat build/p4-build.log
  exit 1
fi
grep '^p4-build' build/p4-build.log
echo "p4c warnings: $(grep -c 'warning:' build/p4-build.log) (full output: build/p4-build.log; bf-p4c's: build/p4/bf-p4c.log)"
trap - EXIT

echo "== go test"
# -p 1: packages share 2 cores and some start their own API server or software UPF.
if [[ $# -gt 0 ]]; then
  exec bin/gotestsum --format testname -- -p 1 -count=1 -timeout 30m ./... "$@"
fi
# The UE testbed's scenarios (TestScenario*) measure throughput and steering through links
# emulated in user space, on two shared cores: CPU stolen by the hypervisor shows as a missed
# bound (in CI runs, 12-30% stolen for minutes at a time during the scenarios that failed, and
# 0-2% during their passing reruns; Linux MPTCP beside them kept its rate). Each scenario first
# waits for a quiet CPU (testenv.WaitForQuietCPU) and logs what was stolen while it ran; a download
# that lost more than testenv.StolenLimit is measured again, and a bound on one that lost more
# every time is logged as not judged (testenv.Judged), which the summary counts from
# build/scenarios.json. A scenario that misses a bound runs again on a fresh testbed, up to twice,
# and fails if it misses three times. build/scenario-reruns.txt names what was rerun. Every other
# test runs once.
mkdir -p build
set +e
bin/gotestsum --format testname -- -p 1 -count=1 -timeout 30m -skip '^TestScenario' ./... | tee build/go-test.log
rest=${PIPESTATUS[0]}
echo "== go test: the UE testbed's scenarios"
bin/gotestsum --format testname --packages ./test/ueagent --rerun-fails=2 --rerun-fails-max-failures=3 \
  --rerun-fails-report build/scenario-reruns.txt --jsonfile build/scenarios.json \
  -- -count=1 -timeout 30m -run '^TestScenario' | tee build/scenarios.log
scenarios=${PIPESTATUS[0]}
set -e
reruns=$(grep -c '^' build/scenario-reruns.txt 2>/dev/null || true)
unjudged=$(grep -c 'BOUND NOT JUDGED' build/scenarios.json 2>/dev/null || true)
grep -o 'BOUND NOT JUDGED[^"]*' build/scenarios.json 2>/dev/null | sed 's/\\n$//' || true
echo "== summary: $(grep '^DONE' build/go-test.log | tail -1) (every test but the scenarios: rc $rest);" \
  "scenarios: $(grep '^DONE' build/scenarios.log | tail -1) (rc $scenarios; reruns: ${reruns:-0}, build/scenario-reruns.txt;" \
  "bounds not judged for stolen CPU: ${unjudged:-0})"
[[ $rest == 0 && $scenarios == 0 ]]
