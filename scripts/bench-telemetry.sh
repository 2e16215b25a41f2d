#!/usr/bin/env bash
# Telemetry benchmarks (docs/telemetry.md): the sampler's CPU cost at 100 ms (share of one
# core, against the same process idle), then the transparency of sampling: the same
# llama-bench leg through the runner with the sampler on and off, interleaved A/B pairs on the
# tiny and the medium generated model, beside an A/A control (off vs off). PAIRS (default 20)
# sets the pairs per model. Needs the llama.cpp binaries and the models (make llama models).
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-20}
go test -count=1 -run XXX -bench '^BenchmarkSamplerCPU$' -benchtime "${COST_ITERS:-10}x" ./runner/telemetry/live/ 2>/dev/null | grep -E '^Benchmark|^ok'
out=$(mktemp)
trap 'rm -f "$out"' EXIT
SPARKBENCH_TELEMETRY_TRANSPARENCY=1 SPARKBENCH_TRANSPARENCY_PAIRS="$PAIRS" SPARKBENCH_TRANSPARENCY_OUT="$out" \
  SPARKBENCH_REQUIRE_LLAMA=1 go test -count=1 -timeout 60m -run '^TestTelemetryTransparency$' -v ./runner/ >&2 || status=$?
cat "$out"
exit ${status:-0}
