# b3 — build, run and test. `make test` is what CI runs (see .ci/run).
GO            ?= go
STATICCHECK   ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
GOBIN         := $(shell $(GO) env GOPATH)/bin
TEST_TIMEOUT  ?= 20m

.PHONY: all build run test fmt-check vet cross staticcheck unit tools bench clean

all: build

build:
	$(GO) build -o bin/b3 ./cmd/b3

run:
	$(GO) run ./cmd/b3 server

# test: everything CI checks, in order of cheapness.
test: tools fmt-check vet cross staticcheck unit

# tools installs what the tests need and the machine may lack.
tools:
	@sh scripts/install-test-tools.sh

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# cross: b3 builds where a word or a syscall field differs from amd64's
# (32-bit, big-endian) and for the other common servers.
cross:
	GOOS=linux GOARCH=386 $(GO) build ./...
	GOOS=linux GOARCH=arm64 $(GO) build ./...
	GOOS=linux GOARCH=s390x $(GO) build ./...

staticcheck:
	@test -x $(GOBIN)/staticcheck || $(GO) install $(STATICCHECK)
	$(GOBIN)/staticcheck ./...

unit:
	$(GO) test -race -timeout $(TEST_TIMEOUT) ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./internal/...

clean:
	rm -rf bin
