# Every target works from a fresh clone: scripts/deps installs what the machine lacks.
MODULES := $(shell go list -f '{{.Dir}}' -m)
GO_TEST_FLAGS ?= -count=1 -timeout 20m
CONTROLLER_GEN := sigs.k8s.io/controller-tools/cmd/controller-gen@v0.17.3

.PHONY: run test bench soak lint deps testbed generate images

## run: the whole mesh on this machine (embedded broker, local Postgres under ./.data, simulator), on :8080
# Built and exec'd rather than go run, which exits 1 on Ctrl-C whatever the program returns: make
# would report the clean stop as an error.
## MEMORY is its budget (default 2GiB), the Go soft limit's base
run: deps
	go build -o bin/devstack ./tools/cmd/devstack && exec ./bin/devstack $(if $(MEMORY),-memory $(MEMORY))

## test: everything CI runs
test: deps testbed lint
	go test $(GO_TEST_FLAGS) $(addsuffix /...,$(MODULES))

## bench: the performance figures of the closing notes (ratios against baselines measured in the same run)
bench: deps testbed
	go test -run '^$$' -bench . -benchtime 1x -timeout 60m -v ./tools/bench/

## soak: the fault loops of tools/faults (Postgres restores and immediate stops, replicas joining, killed
## and leaving) for SOAK_ROUNDS rounds each instead of make test's few, and make run live for
## SOAK_LIVE once caught up with its backfill, under its memory budget, no growth allowed
SOAK_ROUNDS ?= 20
SOAK_LIVE ?= 30m
soak: deps
	TIDEMARK_SOAK_ROUNDS=$(SOAK_ROUNDS) go test -count=1 -timeout 180m -v ./tools/faults/
	TIDEMARK_DEVSTACK_SOAK=$(SOAK_LIVE) go test -count=1 -timeout 60m -v -run TestMakeRunStaysInItsBudget ./tools/devstack/

## lint: gofmt and go vet over every module of the workspace, and the CRD as the Go types generate it
lint:
	@tmp=$$(mktemp -d) && cd operator && GOWORK=off go run $(CONTROLLER_GEN) crd:crdVersions=v1 paths=./api/... \
		output:crd:artifacts:config=$$tmp && diff -r $$tmp config/crd >/dev/null \
		|| { echo "operator/config/crd is stale: run make generate"; rm -rf $$tmp; exit 1; }; rm -rf $$tmp
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	go vet $(addsuffix /...,$(MODULES))

deps:
	@scripts/deps

## images: one OCI image layout per deployable under dist/images, built without a Docker daemon: an
## index of an image per platform (PLATFORMS, amd64 and arm64 by default), each with its SBOM; VERSION
## and REVISION are stamped
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
PLATFORMS ?= linux/amd64,linux/arm64
images:
	go run ./tools/cmd/images -out dist/images -version $(VERSION) -revision $(REVISION) -platforms $(PLATFORMS)

## testbed: the real kube-apiserver, etcd, kubectl, MinIO and helm that tests start, under .tools/bin
testbed:
	@scripts/testbed

## generate: the ExportJob CRD and deep-copy code from the Go types in operator/api, then what follows
## from the deployables' declarations (tools/deploy): the chart's mesh table, CRD copy, values schema and
## README, and the Dockerfile
generate:
	cd operator && GOWORK=off go run $(CONTROLLER_GEN) object paths=./api/... crd:crdVersions=v1 \
		output:crd:artifacts:config=config/crd
	go run ./tools/cmd/deploygen
	go run ./tools/cmd/chaingen
