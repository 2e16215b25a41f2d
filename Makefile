# sparkbench — the README's two commands are `make run` and `make test`.
SHELL := /bin/bash
GO ?= go
TAGS := migrated_fynedo
BIN := bin/sparkbench
# Tests that need llama.cpp fail (rather than skip) when it is missing under make.
export SPARKBENCH_REQUIRE_LLAMA ?= 1

.PHONY: all setup system llama models build run test test-short bench fuzz fault-matrix soak mutate install-test lint clean

all: build

## setup: install whatever is missing (Debian packages, llama.cpp prefix, generated models); idempotent
setup: system llama models

system:
	@bash scripts/setup-system.sh

llama:
	@bash scripts/install-llama.sh --quiet >/dev/null && echo "llama.cpp: $$(bash scripts/install-llama.sh --quiet)"

## models: the committed tiny models are checked; the medium one and its Q8_0, Q4_0 and Q4_K_M
## variants (the build's llama-quantize; testdata/models/QUANTIZED.json) are made when missing
models:
	@if [ ! -f testdata/models/medium-llama-f16.gguf ] || [ ! -f testdata/models/medium-llama-q4_k_m.gguf ]; then \
		$(GO) run ./cmd/mkmodel -out testdata/models -medium -quantize; fi

build:
	$(GO) build -tags $(TAGS) -o $(BIN) ./cmd/sparkbench

## run: set up, build, open the window
run: setup build
	./$(BIN)

## test: the whole suite with the race detector; window tests start their own Xvfb. The
## output is plain go test's, then the count of skipped tests and why (scripts/testsummary);
## pipefail keeps go test's exit status
test: setup
	$(GO) vet -tags $(TAGS) ./...
	$(GO) vet -tags $(TAGS),aabench ./cmd/sparkbench/
	$(GO) build -o bin/testsummary ./scripts/testsummary
	set -o pipefail; $(GO) test -race -tags $(TAGS) -timeout 30m -json ./... | bin/testsummary

test-short:
	$(GO) test -tags $(TAGS) -short ./...

## bench: every benchmark, as a table
bench: setup
	@bash scripts/bench.sh
	@bash scripts/bench-transparency.sh

## fuzz: each fuzz target for FUZZTIME (default 2m)
FUZZTIME ?= 2m
fuzz:
	$(GO) test -run XXX -fuzz FuzzRead -fuzztime $(FUZZTIME) ./runner/gguf
	$(GO) test -run XXX -fuzz FuzzClassifyLog -fuzztime $(FUZZTIME) ./runner
	$(GO) test -run XXX -fuzz FuzzLineSplitter -fuzztime $(FUZZTIME) ./runner
	$(GO) test -run XXX -fuzz FuzzSSEReader -fuzztime $(FUZZTIME) ./runner/loadgen
	$(GO) test -tags $(TAGS) -run XXX -fuzz '^FuzzDecodePlan$$' -fuzztime $(FUZZTIME) ./app/study
	$(GO) test -tags $(TAGS) -run XXX -fuzz '^FuzzDecodePlan$$' -fuzztime $(FUZZTIME) ./app/capacity
	$(GO) test -tags $(TAGS) -run XXX -fuzz '^FuzzDecodePlan$$' -fuzztime $(FUZZTIME) ./app/quant
	$(GO) test -run XXX -fuzz '^FuzzEscape$$' -fuzztime $(FUZZTIME) ./app/textsafe
	$(GO) test -run XXX -fuzz '^FuzzParseHosts$$' -fuzztime $(FUZZTIME) ./runner/remote
	$(GO) test -tags $(TAGS) -run XXX -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./app/fleet
	$(GO) test -run XXX -fuzz '^FuzzDecodeStrict$$' -fuzztime $(FUZZTIME) ./runner/jsonlex
	for f in $$($(GO) test -list 'Fuzz.*' ./runner/benchfmt | grep ^Fuzz); do \
	  $(GO) test -run XXX -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s -parallel 1 ./runner/benchfmt || exit 1; done

## mutate: mutation testing (gremlins) of the decision packages: gates, verdicts, selection and
## stopping rules; one row per package (efficacy target 90%, coverage 80%); not part of `make test`
mutate:
	@bash scripts/mutate.sh $(MUTATE_PKGS)

## fault-matrix: run and count the bad-input and fault cases (make test runs them too)
fault-matrix: setup
	@bash scripts/fault-matrix.sh

## soak: PROCS processes (default 8) running, exporting, verifying and annotating studies on one
## notebook for DURATION seconds (default 120); then the notebook must verify, with no leg or
## verdict recorded twice; not part of `make test`
soak: setup
	@bash scripts/soak-notebook.sh

install-test:
	bash scripts/test-install-llama.sh

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet -tags $(TAGS) ./...

clean:
	rm -rf bin
