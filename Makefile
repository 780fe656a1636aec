# ctxcode — see README.md. `make run` and `make test` set up what they need.
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
BIN := bin/ctxcode
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

.PHONY: all setup build image run test e2e soak bench lint clean

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

# The main job. With a model configured ($OPENAI_API_KEY or $OPENAI_BASE_URL;
# the model name from $CTXCODE_MODEL, which a local server needs), ask it
# QUESTION about the built-in data.
# Without one, bench the offline reference model over every built-in xl task
# in every condition of the ladder (A, B, B0, C, D) into a new run directory
# in the cache folder, print accuracy and cost per condition (the
# harness's cost floor), and write its report (report.md, report.html).
QUESTION ?= How many tasks are blocked?
RUNS ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/ctxcode/runs
run: setup image
	@if [ -n "$$OPENAI_API_KEY$$OPENAI_BASE_URL" ]; then \
	  $(BIN) ask "$(QUESTION)"; \
	else \
	  out="$(RUNS)/reference-xl-$$(date +%Y%m%d-%H%M%S)"; mkdir -p "$(RUNS)"; \
	  echo "make: no OPENAI_API_KEY or OPENAI_BASE_URL set: benching the offline reference model over every built-in task in every condition into $$out"; \
	  $(BIN) bench --model reference --conditions A,B,B0,C,D --tier xl --reps 1 --out "$$out" && \
	  $(BIN) report "$$out"; \
	fi

# Packages run one at a time (-p 1): the sandbox and CLI tests each make
# orphaned containers on purpose and check that a prune removes them, and a
# prune in one package must not race with the other's assertions.
# Then the kernel protocol tests (the Python driver's and the container's)
# run 5 times more: a race that shows one run in ten shows here.
test: setup lint image
	$(GO) test -count=1 -p 1 -timeout 30m ./...
	$(GO) test -count=5 -p 1 -timeout 20m -run 'Python|Shell|Protocol|FreshKernels' ./kernel/ ./sandbox/

# The end-to-end tests on a real Kubernetes cluster: every test named
# TestE2E..., each starting a cluster with internal/clustertest (they skip in
# `make test`). Installs etcd, containerd, runc and the CNI plugins
# (scripts/setup-e2e.sh), builds the kernel image and the Kubernetes binaries
# (e2e/k8s/build.sh, cached in the cache folder: a build takes tens of
# minutes once, seconds after), then runs the tests one package at a time.
e2e: setup image
	@scripts/setup-e2e.sh
	@GO=$(GO) e2e/k8s/build.sh
	CTXCODE_E2E=1 $(GO) test -count=1 -p 1 -timeout 30m -run '^TestE2E' ./...

# The kernel and sandbox suites 10 times in a row with two CPU hogs
# running, then once with -race (scripts/soak.sh; ROUNDS=N for fewer).
soak: setup image
	@GO=$(GO) scripts/soak.sh

bench: setup image
	$(GO) test -run '^$$' -bench . -benchtime 2s ./...

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

clean:
	rm -rf bin
