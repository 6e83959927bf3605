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

.PHONY: all build test deps test-go test-rules lint demo bench docker fmt vet clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/redis-prober

## test: everything CI runs, against real redis-server and Prometheus: the
## default suite on bookworm's Redis 7.0 and Prometheus 2.42, then the matrix
## of newer peers that scripts/peers.sh fetches into PEERS_CACHE.
test: deps-and-helm lint test-go test-rules test-matrix test-fuzz

.PHONY: deps-and-helm
## deps-and-helm: deps and helm side by side: on a fresh machine the apt
## downloads and Prometheus 3.16's build (scripts/peers.sh) overlap Helm's,
## two builds filling each other's idle CPU (docs/performance.md, "CI on a
## fresh machine"). Output comes a target at a time, when it ends.
deps-and-helm:
	@$(MAKE) --no-print-directory -j2 --output-sync=target deps helm

.PHONY: helm
## helm: builds the Helm releases the chart test checks with into their
## cache (a first build is minutes of compiling), by running the chart's
## lint alone: on a fresh machine the build would otherwise run inside
## test-go, beside the timing-bound fault tests of explain (a cold CI run
## failed TestFaultNetwork so). Warm, a few seconds. Cold, the two
## builds beside the peers' took 6 and 9 minutes on 2026-12-07, so the
## test's default 10-minute timeout killed the second: 30m bounds a build,
## not a test.
helm:
	$(GO) test -count=1 -timeout 30m -run '^TestHelmLint$$' ./deploy/helm/

## deps: what the tests need (as root: the Debian packages and the newer
## peers of the matrix; otherwise it names what is missing).
deps:
	@./scripts/test-deps.sh

# vet: macOS on arm64 only (the Macs of today): vetting it type-checks
# every package and test there, which a vet of darwin/amd64 and a build of
# darwin/arm64 did twice over on a fresh machine.
vet:
	@fmt=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$fmt" ]; then echo "gofmt needed: $$fmt"; exit 1; fi
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod or go.sum is not tidy: run go mod tidy (go mod tidy -diff shows what changes)"; exit 1; }
	$(GO) vet ./...
	$(GO) test -count=1 -run TestTreeHasNoMeasuredFigures ./internal/lint/figures/
	GOOS=darwin GOARCH=arm64 $(GO) vet ./...
	GOOS=windows $(GO) build ./...
	GOOS=windows $(GO) vet ./...

# test-go: explain's fault tests after the rest, alone: they measure the
# slow requests of a fault against control windows, and other packages'
# tests compiling and running beside them (two at a time) made the host's
# own run delays a tenth of a fault's slow requests (a cold CI run failed
# TestFaultSlowCommand/eval so, 13 of 130 redis_cpu).
test-go:
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v '/explain$$')
	$(GO) test -race -count=1 -timeout 10m ./explain/

# The newer peers (scripts/peers.sh): outside the clone, so a clean checkout
# does not fetch them again. A missing one fails under CI=true and is skipped
# with a message elsewhere.
PEERS_CACHE ?= $(if $(filter 0,$(shell id -u)),/var/cache/redis-prober-peers,$(HOME)/.cache/redis-prober/peers)
PROMTOOLS   ?= $(or $(shell command -v promtool),promtool)=2.42 $(PEERS_CACHE)/prometheus-3.5/bin/promtool=3.5 \
               $(PEERS_CACHE)/prometheus-3.16/bin/promtool=3.16
# version=binary of each Prometheus the e2e test runs on beside 2.42 (PATH).
PROMETHEUS3 ?= 3.5=$(PEERS_CACHE)/prometheus-3.5/bin/prometheus \
               3.16=$(PEERS_CACHE)/prometheus-3.16/bin/prometheus
# name=binary of each server the server tests run on beside Redis 7.0 (PATH).
SERVERS     ?= redis-8.0=$(PEERS_CACHE)/redis-8.0/bin/redis-server \
               valkey-8.0=$(PEERS_CACHE)/valkey-8.0/bin/valkey-server \
               valkey-8.1=$(PEERS_CACHE)/valkey-8.1/bin/valkey-server \
               valkey-9.1=$(PEERS_CACHE)/valkey-9.1/bin/valkey-server \
               redis-8=$(PEERS_CACHE)/redis-8/bin/redis-server
# The packages whose tests talk to a real server: collectors, the probe and
# the doctor (Redis 8's INFO KEYSIZES beside slow requests).
SERVER_PKGS ?= ./internal/redistest/ ./collector/ ./prober/... ./internal/doctor/
SERVER_RUN  ?= .
# The engine's tests of what differs by server (all of them would add minutes a server).
SERVER_ENGINE_RUN ?= ^TestExplain
# peer BIN WHAT: exit 1 (CI) or say SKIPPING and go on when BIN is missing.
peer = if [ ! -x "$(1)" ]; then \
	if [ "$$CI" = true ]; then echo "$(2): $(1) missing; CI runs scripts/peers.sh first" >&2; exit 1; fi; \
	echo "SKIPPING $(2): $(1) not found; run scripts/peers.sh (as root once) to fetch it"; continue; fi

.PHONY: test-matrix test-e2e-matrix test-servers
test-matrix: test-e2e-matrix test-servers

## test-rules: the rules and their tests on every promtool (alerts/*.yml
## and the fallback alternatives in alerts/fallback/). The tests in
## alerts/tests/promtool3/ feed native histograms (promtool 2.47+ syntax),
## so promtool 2.x runs only alerts/tests/*.yml.
RULES        = $(wildcard alerts/*.yml) $(wildcard alerts/fallback/*.yml)
RULE_TESTS_2 = $(wildcard alerts/tests/*.yml)
RULE_TESTS_3 = $(RULE_TESTS_2) $(wildcard alerts/tests/promtool3/*.yml)
test-rules:
	@set -e; for pt in $(PROMTOOLS); do bin=$${pt%=*}; ver=$${pt##*=}; \
		$(call peer,$$bin,promtool $$ver); \
		case $$ver in 2.*) tests="$(RULE_TESTS_2)";; *) tests="$(RULE_TESTS_3)";; esac; \
		echo "promtool $$ver: check rules $(RULES)"; \
		$$bin check rules $(RULES) >/dev/null; \
		echo "promtool $$ver: test rules $$tests"; \
		$$bin test rules $$tests; \
	done

## test-e2e-matrix: the dashboard and rule e2e tests, and promtest's own,
## on Prometheus 3.5 and 3.16 (test-go ran them on 2.42). promtest asks each
## for native histograms the way it needs: the feature flag before 3.9,
## scrape_native_histograms: true from 3.8.
test-e2e-matrix:
	@set -e; for pb in $(PROMETHEUS3); do ver=$${pb%%=*}; bin=$${pb#*=}; \
		$(call peer,$$bin,e2e on Prometheus $$ver); \
		echo "e2e on $$($$bin --version 2>&1 | sed -n 1p)"; \
		PROMETHEUS_BIN=$$bin $(GO) test -count=1 -timeout 10m ./internal/promtest/ ./internal/e2e/; \
	done

## test-servers: the collector and probe tests on each newer server (test-go
## ran them on Redis 7.0).
test-servers:
	@set -e; for sv in $(SERVERS); do name=$${sv%%=*}; bin=$${sv#*=}; \
		$(call peer,$$bin,server tests on $$name); \
		echo "server tests on $$name: $$($$bin --version)"; \
		REDIS_SERVER_BIN=$$bin REDIS_SERVER_VERSION=$${name#*-} $(GO) test -race -count=1 -timeout 10m -run '$(SERVER_RUN)' $(SERVER_PKGS); \
		REDIS_SERVER_BIN=$$bin REDIS_SERVER_VERSION=$${name#*-} $(GO) test -race -count=1 -timeout 5m -run '$(SERVER_ENGINE_RUN)' ./engine/; \
	done

.PHONY: fuzz test-fuzz soak
# Every fuzz target as package:Name; go test -fuzz takes one target at a time.
FUZZ_TARGETS := ./internal/resp:FuzzGuard ./prober/burst:FuzzBurstCodec ./collector:FuzzLabelValue ./internal/safetext:FuzzPrintable ./config:FuzzParse ./engine:FuzzParseAddr ./internal/redisinfo:FuzzParse ./collector:FuzzInfoFields \
                ./prober:FuzzParseCommands ./prober:FuzzNamespace ./prober/burst:FuzzKeySpec ./prober/burst:FuzzParseMix
FUZZTIME ?= 60s

## fuzz: run every fuzz target for FUZZTIME (default 60s) each; new failures land in testdata/fuzz.
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} ($${t%%:*}) for $(FUZZTIME)"; \
		$(GO) test -run='^$$' -fuzz="^$${t#*:}$$" -fuzztime=$(FUZZTIME) $${t%%:*}; \
	done

## test-fuzz: 2,000 inputs of each fuzz target (make test runs it). A count,
## not a duration: Go 1.26's fuzz coordinator can report a spurious "context
## deadline exceeded" when a duration -fuzztime ends on a busy host
## (go.dev/issue/75804, fixed in Go 1.27); a count has no deadline to race.
test-fuzz:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$${TEST_FUZZTIME:-2000x}

## soak: SOAK (default 10m) of probes at 100/s, bursts, Redis restarts and pauses; prints resource slopes.
soak:
	SOAK=$${SOAK:-10m} ./scripts/soak.sh

.PHONY: dashboards
## dashboards: regenerate dashboards/*.json from the Go code in dashboards/.
dashboards:
	$(GO) run ./dashboards/cmd/generate -out dashboards

## lint: vet, then staticcheck with staticcheck.conf (make test runs it).
lint: vet
	$(GO) run $(STATICCHECK) ./...

## demo: a throwaway redis-server and the prober against it; Ctrl-C stops both.
## The build says what it does: a first one is a minute or two of compiling.
demo:
	@./scripts/build.sh $(BIN) -trimpath -ldflags '$(LDFLAGS)'
	./scripts/demo.sh

## bench: probe fidelity against a C reference client (its own clock and the
## kernel wire time of its requests), resource use. CONTENTION=1 pins Redis to
## CPU 0 and runs a busy loop beside each client; ROUNDS=, ROUND_SECONDS=,
## RATE=, RESOURCE_SECONDS=, RESOURCE_SCRAPE= (seconds between scrapes of the
## resource window, 0: none), SKIP_BURST=1 (see docs/performance.md).
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

.PHONY: bench-ab
## bench-ab: a bench script run on several builds in interleaved rounds, each
## build from its own worktree (VARIANTS="REV REV:--flag,..." ROUNDS=3
## SCRIPT=bench-scale.sh, plus that script's knobs; see scripts/bench-ab.sh).
bench-ab:
	./scripts/bench-ab.sh $${SCRIPT:-bench-scale.sh}

.PHONY: bench-exposition
## bench-exposition: each hand-written part of internal/exposition against
## client_golang's own (gathering, protobuf encoding, the /metrics handler) at
## 100 and 1,000 targets: one test binary run ROUNDS times (5), so A and B
## interleave, then the median and range of each figure and theirs/ours of
## the medians (BENCHTIME=1s, BENCH=. to change).
bench-exposition:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	go test -c -o "$$tmp/exposition.test" ./internal/exposition; \
	for i in $$(seq $${ROUNDS:-5}); do \
		echo "round $$i of $${ROUNDS:-5}"; \
		(cd internal/exposition && "$$tmp/exposition.test" -test.run '^$$' -test.bench "$${BENCH:-.}" \
			-test.benchtime "$${BENCHTIME:-1s}" -test.count 1) | grep '^Benchmark' | tee -a "$$tmp/out.txt"; \
	done; \
	awk ' \
	function median(k,   n, i, j, t, a) { \
		n = split(vals[k], a, " "); \
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t } \
		lo[k] = a[1]; hi[k] = a[n]; cnt[k] = n; \
		return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 } \
	{ name = $$1; sub(/-[0-9]+$$/, "", name); \
	  for (i = 3; i < NF; i += 2) { k = name SUBSEP $$(i+1); \
		if (!(k in vals)) order[++nk] = k; vals[k] = vals[k] " " $$i } } \
	END { printf "\n%-42s %-14s %14s %27s %3s\n", "benchmark", "unit", "median", "range", "n"; \
	  for (x = 1; x <= nk; x++) { k = order[x]; split(k, p, SUBSEP); med[k] = median(k); \
		printf "%-42s %-14s %14.6g %13.6g-%-13.6g %3d\n", p[1], p[2], med[k], lo[k], hi[k], cnt[k] } \
	  printf "\n%-42s %-14s %10s\n", "theirs/ours (medians)", "unit", "ratio"; \
	  for (x = 1; x <= nk; x++) { k = order[x]; split(k, p, SUBSEP); if (p[1] !~ /Ours\//) continue; \
		for (o = 1; o <= 3; o++) { other = p[1]; sub(/Ours/, (o == 1 ? "Registry" : o == 2 ? "Expfmt" : "Promhttp"), other); \
		  ko = other SUBSEP p[2]; if ((ko in med) && med[k] > 0) printf "%-42s %-14s %10.2f\n", other, p[2], med[ko] / med[k] } } }' "$$tmp/out.txt"

.PHONY: release
## release: VERSION=X.Y.Z (required): the release tarballs of every platform,
## the packaged Helm chart and sha256sums.txt into DIST (default dist/), in
## promu's layout (see scripts/release.sh).
DIST ?= dist
release:
	@case "$(origin VERSION)" in command*|environment*) ;; \
		*) echo "make release needs VERSION, e.g. make release VERSION=0.1.0" >&2; exit 2;; esac
	VERSION='$(VERSION)' DIST='$(DIST)' LDFLAGS='$(LDFLAGS)' ./scripts/release.sh

## docker: the image for this host's platform; a multi-arch image is
## docker buildx build --platform linux/amd64,linux/arm64 with the same args.
docker:
	docker build --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) \
		--build-arg BRANCH=$(BRANCH) -t $(BIN):$(VERSION) .

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -f $(BIN)
