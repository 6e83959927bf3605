# redis-prober — see README.md. `make demo` and `make test` are the two
# commands a newcomer needs.
GO        ?= go
BIN       := redis-prober
PKG       := github.com/redis-prober/redis-prober
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BRANCH    ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)
VPKG      := github.com/prometheus/common/version
LDFLAGS   := -s -w -X $(VPKG).Version=$(VERSION) -X $(VPKG).Revision=$(REVISION) \
             -X $(VPKG).Branch=$(BRANCH) -X $(VPKG).BuildUser=redis-prober \
             -X $(VPKG).BuildDate=$(shell date -u +%Y%m%d-%H:%M:%S)
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build test test-go test-rules lint demo bench docker fmt vet clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/redis-prober

## test: everything CI runs, against real redis-server and Prometheus.
test: vet test-go test-rules test-fuzz

vet:
	@fmt=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$fmt" ]; then echo "gofmt needed: $$fmt"; exit 1; fi
	$(GO) vet ./...

test-go:
	$(GO) test -race -count=1 -timeout 20m ./...

test-rules:
	@if ls alerts/*.yml >/dev/null 2>&1; then \
		promtool check rules alerts/*.yml && promtool test rules alerts/tests/*.yml; \
	else echo "no alert rules yet"; fi

.PHONY: fuzz test-fuzz soak
# Every fuzz target as package:Name; go test -fuzz takes one target at a time.
FUZZ_TARGETS := ./internal/resp:FuzzGuard ./prober:FuzzBurstCodec ./collector:FuzzLabelValue ./internal/safetext:FuzzPrintable ./config:FuzzParse ./engine:FuzzParseAddr ./collector:FuzzParseInfo \
                ./prober:FuzzParseCommands ./prober:FuzzNamespace ./prober:FuzzKeySpec ./prober:FuzzParseMix
FUZZTIME ?= 60s

## fuzz: run every fuzz target for FUZZTIME (default 60s) each; new failures land in testdata/fuzz.
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} ($${t%%:*}) for $(FUZZTIME)"; \
		$(GO) test -run='^$$' -fuzz="^$${t#*:}$$" -fuzztime=$(FUZZTIME) $${t%%:*}; \
	done

## test-fuzz: a few seconds of each fuzz target (make test runs it).
test-fuzz:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$${TEST_FUZZTIME:-3s}

## soak: SOAK (default 10m) of probes at 100/s, bursts, Redis restarts and pauses; prints resource slopes.
soak:
	SOAK=$${SOAK:-10m} ./scripts/soak.sh

.PHONY: dashboards
## dashboards: regenerate dashboards/*.json from the Go code in dashboards/.
dashboards:
	$(GO) run ./dashboards/cmd/generate -out dashboards

lint:
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

## demo: a throwaway redis-server and the prober against it; Ctrl-C stops both.
demo: build
	./scripts/demo.sh

## bench: probe fidelity against a C reference client (its own clock and the
## kernel wire time of its requests), resource use. CONTENTION=1 pins Redis to
## CPU 0 and runs a busy loop beside each client; ROUNDS=, ROUND_SECONDS=,
## RATE=, RESOURCE_SECONDS=, SKIP_BURST=1 (see docs/performance.md).
bench:
	./scripts/bench.sh

## bench-burst: the burst load generator beside redis-benchmark (and memtier).
bench-burst:
	./scripts/bench-burst.sh

.PHONY: bench-scale
## bench-scale: one prober, 200 targets from one config file, at 10 probes/s
## each: CPU, RSS, goroutines, threads, /metrics size, scrape time (protobuf
## and text), schedule delivered, errors (TARGETS=1000, SERVERS=,
## SCALE_SECONDS=, WARMUP_SECONDS=, SCRAPES= to change; see docs/performance.md).
bench-scale:
	./scripts/bench-scale.sh

docker:
	docker build -t $(BIN):$(VERSION) .

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -f $(BIN)
