# Stockade. `make` lists the targets.

GO        ?= go
BIN       := bin
FUZZTIME  ?= 10s
STATE_DIR ?= $(CURDIR)/.run/state
export CGO_ENABLED := 0

include sdk.mk

.DEFAULT_GOAL := help
.PHONY: help build run test test-deps bench fuzz lint check

help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-10s %s\n", $$1, $$2}'

build: ## Build the five binaries into bin/
	$(GO) build -trimpath -o $(BIN)/ ./cmd/...

run: build ## Start the whole system in the foreground (single-user, embedded configuration)
	$(BIN)/stockaded --single-user --state-dir $(STATE_DIR)

test-deps: ## Install what the tests need when missing (bubblewrap; wabt for the WASM fixtures' check), from Debian's packages
	@missing=""; \
	command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
	command -v wat2wasm >/dev/null 2>&1 || missing="$$missing wabt"; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing"; \
		if [ "$$(id -u)" -eq 0 ]; then apt-get update -qq && apt-get install -y -qq $$missing; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq $$missing; fi; \
	fi

test: test-deps ## Install what the tests need, then run every test (fuzz seed corpora included)
	$(GO) vet ./...
	GOOS=darwin $(GO) build ./...
	STOCKADE_ESCAPE_STRICT=1 $(GO) test -count=1 -timeout 10m ./...

bench: build ## Run the benchmarks (the figures reported in docs and closing notes)
	$(GO) test -run '^$$' -bench . -benchtime 300x ./cmd/stockaded
	$(GO) test -run '^$$' -bench . $$($(GO) list ./... | grep -v /cmd/stockaded)

fuzz: ## Run every fuzz target for FUZZTIME (default 10s) each
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== $$pkg $$f"; \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

lint: ## gofmt, go vet, and builds for macOS and arm64
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	GOOS=darwin $(GO) vet ./...
	GOARCH=arm64 $(GO) build ./...

check: lint test ## lint, then test; with the race detector when cgo can be had
	@if command -v gcc >/dev/null 2>&1; then CGO_ENABLED=1 $(GO) test -race -count=1 ./ipc/... ./broker/... ./executor/... ./verifier/... ./client/...; fi
