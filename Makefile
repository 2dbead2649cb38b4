.PHONY: build install test
build:
	go build -o bin/clrdiag ./cmd/clrdiag
install:
	go install ./cmd/clrdiag
test:
	bash scripts/test.sh
