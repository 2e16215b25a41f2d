#!/usr/bin/env bash
# Remote-leg overhead (docs/fleet.md): the same short llama-bench leg through the runner
# locally and over ssh -tt on a loopback sshd host, interleaved pairs with an A/A control
# (local vs local). PAIRS (default 20) sets the pairs. Needs the llama.cpp binaries, the models
# and openssh-server (make setup).
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-20}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
SPARKBENCH_BENCH_REMOTE=1 SPARKBENCH_REMOTE_PAIRS="$PAIRS" SPARKBENCH_REMOTE_OUT="$out" \
  SPARKBENCH_REQUIRE_LLAMA=1 go test -count=1 -timeout 30m -run '^TestRemoteLegOverhead$' -v ./runner/remote/ >&2 || status=$?
cat "$out"
exit ${status:-0}
