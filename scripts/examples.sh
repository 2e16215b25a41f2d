#!/usr/bin/env bash
# examples.sh: runs each shipped example as the README says — `sparkbench run PLAN` (registered
# in a fresh notebook), `sparkbench receipt NAME --out DIR`, `sparkbench verify DIR` — N times
# and counts the runs in which all three succeeded. An example that fails on the machine it
# ships for is a defect (issue 29): run this beside `make test` to check it under load.
#
#   scripts/examples.sh [-n N] [EXAMPLE ...]   default: every local example, N=5
# The examples that need bench hosts over ssh (fleet-tiny, rpc-topology, capacity-rpc-topology)
# are run by the tests against loopback sshd hosts (cmd/sparkbench fleet and rpc tests), not here.
# Environment: SPARKBENCH (the binary; built when unset), EXAMPLES_OUT (a folder kept for logs).
set -euo pipefail
cd "$(dirname "$0")/.."
n=5
if [ "${1:-}" = "-n" ]; then n=$2; shift 2; fi
examples=("$@")
if [ ${#examples[@]} -eq 0 ]; then
  examples=(demo adaptive-reps quant-ladder serving-poisson serving-prompt-set serving-shared-prefix serving-multi-turn)
fi
out=${EXAMPLES_OUT:-$(mktemp -d)}
mkdir -p "$out"
sb=${SPARKBENCH:-}
if [ -z "$sb" ]; then
  sb=$out/sparkbench
  go build -tags migrated_fynedo -o "$sb" ./cmd/sparkbench
fi
# name PLAN: the plan's "name" (the strict decoder is the program's; this only reads it).
name() { sed -n 's/^  "name": "\(.*\)",$/\1/p' "$1" | head -1; }
printf '%-24s %5s %5s %9s\n' example runs ok median_s
fail=0
for ex in "${examples[@]}"; do
  ok=0
  times=()
  for i in $(seq 1 "$n"); do
    dir=$out/$ex/$i
    rm -rf "$dir"; mkdir -p "$dir"
    export SPARKBENCH_NOTEBOOK=$dir/notebook.db
    start=$(date +%s)
    if [ "$ex" = demo ]; then
      run=("$sb" demo --run); study=1
    else
      plan=docs/examples/$ex.json
      run=("$sb" run "$plan"); study=$(name "$plan")
    fi
    if "${run[@]}" >"$dir/run.log" 2>&1 &&
       "$sb" receipt "$study" --out "$dir/receipt" >"$dir/receipt.log" 2>&1 &&
       "$sb" verify "$dir/receipt" >"$dir/verify.log" 2>&1; then
      ok=$((ok + 1)); echo "$ex $i: ok" >>"$out/runs.txt"
    else
      echo "$ex $i: FAILED (logs: $dir)" | tee -a "$out/runs.txt" >&2
    fi
    times+=($(( $(date +%s) - start )))
  done
  med=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
  printf '%-24s %5d %5d %9s\n' "$ex" "$n" "$ok" "$med"
  [ "$ok" -eq "$n" ] || fail=1
done
echo "examples: logs in $out" >&2
exit "$fail"
