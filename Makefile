GO ?= go
FUZZTIME ?= 20s

# The version and revision bidguard reports (bidguard version, --version,
# bidguard_build_info, the start-up log line). The Dockerfile takes them as
# build args: make image passes these.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# The Dockerfile's build flags, the same static binary.
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.revision=$(REVISION)

.PHONY: build image test test-noalloc lint fuzz bench compare bench-deps loadtest ci faults faults-deps mutate mutate-sample

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/bidguard ./cmd/bidguard
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/loadtest ./loadtest

# The container image (Dockerfile), stamped like make build.
image:
	docker build --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) -t bidguard:$(VERSION) .

# The README's test command.
test:
	$(GO) test -race -shuffle=on ./...

# Zero-allocation tests carry //go:build !race: run them without -race too.
test-noalloc:
	$(GO) test -run 'Allocs|AllocatesNothing' -count=1 ./...

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# Every native fuzz target, each for FUZZTIME.
fuzz:
	@for pkg in ./audit/ ./capture/ ./jsonraw/ ./engine/ ./gates/ ./rtb/; do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# The whole fault suite (docs/reliability.md), slow scenarios included:
# real serve processes on loopback. The test binary runs without -race (its
# load generator must keep time); the product is race-built where a
# scenario needs it (1,000 reloads under traffic). The Prometheus scenario
# scrapes serve with a real Prometheus: faults-deps installs Debian's
# prometheus package when it is missing (as root, as in CI). Without root
# the other scenarios still run and that one fails saying what to install
# (it runs the same script itself, so it also works when run alone).
faults:
	-./.ci/install-prometheus
	BIDGUARD_FAULTS=1 $(GO) test -count=1 -timeout 20m ./faults/

faults-deps:
	./.ci/install-prometheus

# Mutation testing of one package, for developers on what they change (not
# in CI): which small changes to the code (operators, conditions, boundaries)
# its tests let pass. make mutate PKG=./gates/ [MUTATE_ARGS=--dry-run]. The
# tool, pinned:
#   go install github.com/go-gremlins/gremlins/cmd/gremlins@v0.5.0
# GOFLAGS=-count=1 keeps gremlins' coverage run uncached: each mutant's
# timeout is --timeout-coefficient times that run's time, and a cached run
# takes milliseconds (every mutant would time out). No --test-cpu: v0.5.0
# hands "-cpu 1" to go test as one argument, no test runs and every mutant
# reads KILLED.
PKG ?= ./gates/
GREMLINS ?= $(shell $(GO) env GOPATH)/bin/gremlins
mutate:
	GOFLAGS=-count=1 nice -n 19 $(GREMLINS) unleash --workers 1 --timeout-coefficient 10 $(MUTATE_ARGS) $(PKG)

# A seeded sample of gremlins' mutants of PKG (MUTATE_N of them, drawn with
# MUTATE_SEED), each applied alone through go test -overlay, the tests of
# its package and of PKG run (tools/mutsample): the numbers the README
# quotes. make mutate-sample PKG=./quarantine/ MUTATE_SEED=2711
MUTATE_N ?= 40
MUTATE_SEED ?= 2711
mutate-sample:
	GOFLAGS=-count=1 nice -n 19 $(GREMLINS) unleash --dry-run $(PKG) | nice -n 19 $(GO) run ./tools/mutsample -list - -pkg $(PKG) -n $(MUTATE_N) -seed $(MUTATE_SEED)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./jsonraw/ ./engine/ ./gates/ ./rtb/ ./quarantine/

# The side-by-side comparison on loopback (bench/README.md): direct, bare
# fasthttp proxy, nginx, httputil.ReverseProxy and bidguard, interleaved
# rounds; prints the table, writes bench/out/compare.md and the plots.
# COMPARE_ARGS=-quick for a two-minute run; see bin/benchrun compare -h.
# Without nginx the table says so and leaves it out: make bench-deps.
compare: build
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/benchrun ./bench/run
	./bin/benchrun compare $(COMPARE_ARGS)

# What make compare measures besides bidguard: Debian's nginx, and wrk for
# cross-checks by hand (bench/README.md). Needs root and apt-get.
bench-deps:
	./.ci/apt-install nginx wrk

# The bad-bid mix through bidguard: fails if a bad or late bid reached the
# client. LOADTEST_ARGS: see bin/benchrun badmix -h; scenarios (1,000-bid
# answers, 10,000 seat policies, CTV) in bench/README.md, e.g.
#   make loadtest LOADTEST_ARGS='-rate 50 -bidder-args "-bids 1000 -seats 10000"'
#   bin/loadtest seats -n 10000 -out bench/out/seats10k
#   make loadtest LOADTEST_ARGS='-seats-dir bench/out/seats10k -bidder-args "-seats 10000 -bids 1-20"'
loadtest: build
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/benchrun ./bench/run
	./bin/benchrun badmix $(LOADTEST_ARGS)

ci: lint build test test-noalloc
