#!/usr/bin/env bash
# Runs every Go benchmark of the project (each package that has one) and prints a table:
# package, benchmark, iterations, ns/op and every custom metric (rows/s, bytes/op, …).
# BENCHTIME (default 1x for heavy ones is set per benchmark; here default "1s") and COUNT
# are passed to go test. Scripted whole-command comparisons (A/B runs) add their own tables.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCHTIME=${BENCHTIME:-1s}
COUNT=${COUNT:-1}
BENCH=${BENCH:-.}
mapfile -t pkgs < <(grep -rl --include='*_test.go' '^func Benchmark' . | xargs -n1 dirname | sort -u)
if [ ${#pkgs[@]} -eq 0 ]; then
  echo "bench: no benchmarks found" >&2
  exit 1
fi
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
status=0
go test -tags migrated_fynedo -run '^$' -bench "$BENCH" -benchtime "$BENCHTIME" -count "$COUNT" -benchmem "${pkgs[@]}" | tee "$raw" >&2 || status=$?
echo
printf '%-28s %-44s %12s %16s  %s\n' package benchmark iterations ns/op "other metrics"
awk '
  /^pkg: / { pkg = $2; sub(/^sparkbench\//, "", pkg) }
  /^Benchmark/ {
    name = $1; sub(/-[0-9]+$/, "", name)
    extra = ""
    for (i = 5; i + 1 <= NF; i += 2) extra = extra sprintf("%s %s  ", $i, $(i+1))
    printf "%-28s %-44s %12s %16s  %s\n", pkg, name, $2, $3, extra
  }' "$raw"
exit $status
