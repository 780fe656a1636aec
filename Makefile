# ctxcode — see README.md. `make run` and `make test` set up what they need.
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
BIN := bin/ctxcode
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

.PHONY: all setup build image run test bench lint clean

all: build

setup:
	@scripts/setup-host.sh

# A static binary: the Go kernel runs it inside containers of any image.
build:
	CGO_ENABLED=0 $(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/ctxcode

# The kernel image, built offline when Docker is reachable and it is missing.
image: build
	@if docker info >/dev/null 2>&1; then $(BIN) sandbox build; \
	else echo "make: Docker is not reachable: no kernel image (Docker tests skip, or fail in CI)"; fi

# The main job. Until the agent lands: generate the xl dataset once, list its
# graded tasks, and run a demo session over it, in the Docker sandbox when
# Docker is reachable, on this host otherwise.
DEMO := .cache/pm-xl-1
run: setup image
	@test -f $(DEMO)/manifest.json || $(BIN) data gen --tier xl --seed 1 --out $(DEMO)
	$(BIN) tasks --data $(DEMO) | head -8
	@if docker info >/dev/null 2>&1; then sb=docker; else sb=local; fi; \
	$(BIN) exec --sandbox $$sb --data $(DEMO) < testdata/demo-session.py

# Packages run one at a time (-p 1): the sandbox and CLI tests each make
# orphaned containers on purpose and check that a prune removes them, and a
# prune in one package must not race with the other's assertions.
test: setup lint image
	$(GO) test -count=1 -p 1 -timeout 30m ./...

bench: setup image
	$(GO) test -run '^$$' -bench . -benchtime 2s ./...

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

clean:
	rm -rf bin
