GO ?= go
FUZZTIME ?= 20s

.PHONY: build test test-noalloc lint fuzz bench compare loadtest ci faults

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/bidguard ./cmd/bidguard
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/loadtest ./loadtest

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
# scenario needs it (1,000 reloads under traffic).
faults:
	BIDGUARD_FAULTS=1 $(GO) test -count=1 -timeout 20m ./faults/

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./jsonraw/ ./engine/ ./gates/ ./rtb/ ./quarantine/

# The side-by-side comparison on loopback (bench/README.md): direct, bare
# fasthttp proxy, nginx, httputil.ReverseProxy and bidguard, interleaved
# rounds; prints the table, writes bench/out/compare.md and the plots.
# COMPARE_ARGS=-quick for a one-minute run; see bin/benchrun compare -h.
compare: build
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/benchrun ./bench/run
	./bin/benchrun compare $(COMPARE_ARGS)

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
