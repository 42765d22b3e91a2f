# The Go SDK's example skills (sdk/, testdata/skills/go*/src). Included by
# the Makefile. `make skills` rebuilds the committed modules;
# sdk.TestSkillsBuild checks that they equal a fresh build.

GO ?= go
SDK_SKILLS := gohello gokv
SDK_SKILL_MODULES := $(foreach s,$(SDK_SKILLS),testdata/skills/$(s)/modules/$(s).wasm)

.PHONY: skills sdk-force

skills: $(SDK_SKILL_MODULES) ## Build the Go SDK's example skills (testdata/skills/go*/modules)

# A WASI reactor (-buildmode=c-shared: an _initialize export, no start
# function), without paths, VCS stamp or symbol names, so that the same
# sources and Go release give the same bytes. Then the post-link step
# sdk/cmd/wasm-table-max gives the function table, which Go's linker
# leaves without a maximum, one equal to its minimum: the verifier's audit
# refuses a table without a maximum, and Go never grows its table. It is
# deterministic, so the module stays reproducible. Always run: go build
# knows what changed.
$(SDK_SKILL_MODULES): testdata/skills/%.wasm: sdk-force
	GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 $(GO) build -buildmode=c-shared -trimpath -buildvcs=false -ldflags=-s \
		-o $@ ./testdata/skills/$(firstword $(subst /, ,$*))/src
	$(GO) run ./sdk/cmd/wasm-table-max -o $@ $@

sdk-force:
