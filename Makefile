# ctxcode — see README.md. `make run` and `make test` set up what they need.
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
BIN := bin/ctxcode
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

.PHONY: all setup build run test bench lint clean

all: build

setup:
	@scripts/setup-host.sh

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/ctxcode

# The main job. Until the agent lands, a demo session over testdata/demo.
run: setup build
	$(BIN) exec --data testdata/demo < testdata/demo-session.py

test: setup lint
	$(GO) test -count=1 -timeout 30m ./...

bench: setup
	$(GO) test -run '^$$' -bench . -benchtime 2s ./...

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

clean:
	rm -rf bin
