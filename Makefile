# Every target works from a fresh clone: scripts/deps installs what the machine lacks.
MODULES := $(shell go list -f '{{.Dir}}' -m)
GO_TEST_FLAGS ?= -count=1 -timeout 20m

.PHONY: run test bench lint deps

## run: the whole mesh on this machine (embedded broker, local Postgres under ./.data, simulator), on :8080
run: deps
	go run ./tools/cmd/devstack

## test: everything CI runs
test: deps lint
	go test $(GO_TEST_FLAGS) $(addsuffix /...,$(MODULES))

## bench: the performance figures of the closing notes (ratios against baselines measured in the same run)
bench: deps
	go test -run '^$$' -bench . -benchtime 1x -timeout 60m -v ./tools/bench/

## lint: gofmt and go vet over every module of the workspace
lint:
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	go vet $(addsuffix /...,$(MODULES))

deps:
	@scripts/deps
