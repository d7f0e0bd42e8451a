GO ?= go
FUZZTIME ?= 20s

.PHONY: build test test-noalloc lint fuzz bench ci

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/bidguard ./cmd/bidguard

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
	@for pkg in ./jsonraw/ ./engine/ ./gates/ ./rtb/; do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./jsonraw/ ./engine/ ./gates/ ./rtb/

ci: lint build test test-noalloc
