#!/usr/bin/env bash
# Time to the same precision with process-level intervals on both sides (issue 31): on the
# medium model, tg16 and pp64 at depths 0 and 256 (one thread), in processes of 3 repetitions,
# PAIRS pairs (default 10) in alternating order of an adaptive study to ±PREC (default 0.15;
# 3 to MAXP processes, default 10) and a study run to FIXEDP processes (default 15), whose
# first n rounds are a fixed plan of n processes. Prints each pair, how often a fixed plan of n processes met the
# precision in every cell and its median time, and the adaptive plan's median time over that of
# the fixed plan that meets it as often. Needs the llama.cpp prefix and the medium model (make
# llama models). Several minutes; on a shared machine the figures carry its noise.
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-10}
MAXP=${MAXP:-10}
FIXEDP=${FIXEDP:-15}
PREC=${PREC:-0.15}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
SPARKBENCH_ADAPTIVE_BENCH=1 SPARKBENCH_ADAPTIVE_PAIRS="$PAIRS" SPARKBENCH_ADAPTIVE_MAXP="$MAXP" SPARKBENCH_ADAPTIVE_PREC="$PREC" SPARKBENCH_ADAPTIVE_FIXEDP="$FIXEDP" \
  SPARKBENCH_ADAPTIVE_OUT="$out" SPARKBENCH_REQUIRE_LLAMA=1 go test -tags migrated_fynedo -count=1 -timeout 60m \
  -run '^TestAdaptiveTimeToPrecision$' -v ./cmd/sparkbench/ >&2 || status=$?
cat "$out"
exit ${status:-0}
