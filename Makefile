# The documented build: one static binary with no libc dependency
# (CGO_ENABLED=0), paths trimmed, version and VCS revision stamped (see
# 'clrdiag --version'). cmd/clrdiag's test checks that the result is static.
BIN ?= bin/clrdiag
GOFLAGS_BUILD := -trimpath -buildvcs=auto

.PHONY: build install test
build:
	CGO_ENABLED=0 go build $(GOFLAGS_BUILD) -o $(BIN) ./cmd/clrdiag
install:
	CGO_ENABLED=0 go install $(GOFLAGS_BUILD) ./cmd/clrdiag
test:
	bash scripts/test.sh
