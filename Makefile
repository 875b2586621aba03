# Junction. `make help` lists the targets. Tools are built by hack/tools.sh into ./bin (git-ignored).

BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
KUSTOMIZE := $(BIN)/kustomize
GOTESTSUM := $(BIN)/gotestsum

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(CONTROLLER_GEN) $(KUSTOMIZE) $(GOTESTSUM):
	hack/tools.sh $(notdir $@)

.PHONY: tools
tools: ## Build every tool and the envtest control plane into ./bin.
	hack/tools.sh

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

# The chart's copies: its CRDs, the operator's rules and the UE agent's objects (one source each,
# config/ and ue-daemonset/; verify-generated fails when a copy drifts).
CHART_FILES := charts/junction/files

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Regenerate CRDs and RBAC from the kubebuilder markers, and the chart's copies.
	$(CONTROLLER_GEN) crd rbac:roleName=manager-role paths=./api/... paths=./controllers/... \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	rm -f charts/junction/crds/*.yaml && cp config/crd/bases/*.yaml charts/junction/crds/
	cp config/rbac/role.yaml $(CHART_FILES)/manager-role.yaml
	for f in service_account role role_binding daemonset; do cp ue-daemonset/$$f.yaml $(CHART_FILES)/ue-agent-$$f.yaml; done

.PHONY: verify-generated
verify-generated: generate manifests ## Fail when committed generated files are stale.
	@git diff --exit-code -- api config/crd config/rbac charts/junction/crds $(CHART_FILES) || \
		{ echo "generated files are stale: run 'make generate manifests' and commit the result" >&2; exit 1; }
	@test -z "$$(git status --porcelain -- api config/crd config/rbac charts/junction/crds $(CHART_FILES))" || \
		{ git status --porcelain -- api config/crd config/rbac charts/junction/crds $(CHART_FILES); echo "untracked generated files: commit them" >&2; exit 1; }

.PHONY: run
run: ## Run everything on this machine: API server, software UPF, operator, samples; as root, UE traffic too (Ctrl-C stops).
	hack/tools.sh envtest kubectl
	if [ "$$(id -u)" = 0 ]; then hack/tools.sh dataplane; fi
	go run ./hack/local

.PHONY: p4
p4: ## Compile the P4 program with p4c (both profiles) and write p4c's P4Info to p4/p4info.txtpb.
	hack/p4-build.sh --write

.PHONY: test
test: ## Run every test (what CI runs): generated files, unit, envtest, data plane.
	hack/test.sh

# SCENARIO picks one (Handover, Aggregation, SmallestDelay, Redundant, Priority, Reorder); empty: all. docs/results.md has the
# last results.
SCENARIO ?=
.PHONY: scenarios
scenarios: ## As root: the paper's evaluation at full length (SCENARIO=Handover|Aggregation|SmallestDelay|Redundant|Priority|Reorder); CSV and PNG in build/results.
	hack/tools.sh envtest dataplane
	JUNCTION_SCENARIO=full KUBEBUILDER_ASSETS=$$(hack/tools.sh envtest-path) \
		go test ./test/ueagent -run 'TestScenario$(SCENARIO)' -count=1 -v -timeout 30m

.PHONY: bench-targets
bench-targets: ## As root: the software UPF beside BMv2 (pps, latency at 10 kpps, P4Runtime writes), a table.
	hack/tools.sh p4tools
	go test ./test/vectors -run '^$$' -bench Targets -benchtime 1x -count=1

.PHONY: bench-path
bench-path: ## As root: one TCP flow through a UE agent session vs wireguard-go vs kernel routing (a table).
	hack/tools.sh envtest dataplane
	KUBEBUILDER_ASSETS=$$(hack/tools.sh envtest-path) go test ./test/ueagent -run '^$$' -bench Path -benchtime 1x -count=1
