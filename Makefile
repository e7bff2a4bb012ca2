# bridle: build, test and benchmark. `make test` is what CI runs (.ci/run).
GO      ?= go
BIN     ?= bin/bridle
EDITORS := $(wildcard editors/nvim/run-tests.sh editors/vscode/run-tests.sh)

.PHONY: all build dist vsix test test-go test-editors tools lint bench bench-context demo clean

all: build

build:
	$(GO) build -o $(BIN) .

# Every test: Go (unit, end to end against the real binary, the ACP SDK
# client in Node), then the editors' suites in the real editors.
test: tools lint test-go test-editors

# Installs what the tests need when run as root; otherwise names what is
# missing and stops.
tools:
	@scripts/ensure-test-tools

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './editors/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@# The release ships macOS and Windows binaries: their code and tests
	@# must build too (Windows arm64 cannot run here: it is built and vetted).
	GOOS=darwin GOARCH=arm64 $(GO) vet ./...
	GOOS=windows GOARCH=amd64 $(GO) vet ./...
	GOOS=windows GOARCH=arm64 $(GO) vet ./...
	GOOS=windows GOARCH=arm64 $(GO) build -o /dev/null .

test-go: build
	@# The end-to-end package runs the binary, gopls and Wine: more than go
	@# test's default 10 minutes on a loaded 2-core machine.
	BRIDLE_BIN=$(CURDIR)/$(BIN) $(GO) test -race -count=1 -timeout 30m ./...

test-editors: build
	@for s in $(EDITORS); do \
		echo "== $$s"; BRIDLE_BIN=$(CURDIR)/$(BIN) $$s || exit 1; \
	done

# Speed and memory targets (figures and commands in docs/benchmarks.md).
bench: tools build
	BRIDLE_BIN=$(CURDIR)/$(BIN) $(GO) test -timeout 90m -run '^$$' -bench . -benchmem ./...

# The context window's fidelity benchmark: 200 randomized long
# sessions through the real session loop, checked against the exact
# tokenizer. SEED and SESSIONS override the defaults.
SEED     ?= 1
SESSIONS ?= 200
bench-context:
	$(GO) test -count=1 -timeout 60m -run '^TestFidelity$$' -v ./internal/ctxbench \
		-args -sessions $(SESSIONS) -seed $(SEED) -max-iterations 150

# The release: static binaries for linux, macOS and Windows (x86_64,
# aarch64) as reproducible .tar.gz (.zip with bridle.exe for Windows),
# SHA256SUMS, and the ACP registry entry agent.json with icon.svg, held to
# the registry CI's rules, in dist/ (internal/dist; TestDist checks them).
dist:
	$(GO) run ./internal/dist -out dist

# The VS Code extension for linux, macOS and Windows (x64, arm64): one
# .vsix per platform with that platform's static bridle inside (the
# binaries of make dist; bridle.exe for win32; editors/vscode/vsix.mjs),
# reproducible, in dist/. Install one with
# `code --install-extension dist/bridle-vscode-VERSION-PLATFORM.vsix`.
vsix:
	@[ -x editors/vscode/node_modules/.bin/vsce ] || (cd editors/vscode && npm ci --no-audit --no-fund --loglevel=error)
	GO=$(GO) node editors/vscode/vsix.mjs --out dist

demo:
	$(GO) run . demo

clean:
	rm -rf bin dist
