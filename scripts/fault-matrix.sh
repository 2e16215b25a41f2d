#!/usr/bin/env bash
# fault-matrix.sh: runs the fault matrix — every test named TestFaults…, TestFaultMatrix… or TestKindContract… (bad
# input and faults driven through the real CLI, fake llama.cpp binaries and the real ones) — and
# counts its cases: a case is a test or subtest with no subtests of its own. Each case asserts
# the exit status, the exact message and, where nothing may be written, an unchanged notebook,
# so a passing case is a precise answer and a failing one is wrong or vague.
# `make test` runs the same tests; this script only counts them. Exit 1 when any case fails.
set -euo pipefail
cd "$(dirname "$0")/.."
json=$(mktemp)
trap 'rm -f "$json"' EXIT
rc=0
go test -tags migrated_fynedo -count=1 -json -run '^(TestFaults|TestFaultMatrix|TestKindContract)' ./... >"$json" 2>&1 || rc=$?
awk '
  /"Action":"(pass|fail)"/ && /"Test":"/ {
    t = $0; sub(/.*"Test":"/, "", t); sub(/".*/, "", t)
    a = $0; sub(/.*"Action":"/, "", a); sub(/".*/, "", a)
    p = $0; sub(/.*"Package":"/, "", p); sub(/".*/, "", p)
    key = p " " t; result[key] = a; names[++n] = key
  }
  END {
    for (i = 1; i <= n; i++) { k = names[i]; parent = k; while (sub(/\/[^\/]*$/, "", parent)) hasChild[parent] = 1 }
    for (k in result) {
      if (k in hasChild) continue
      cases++; if (result[k] == "pass") pass++; else { fail++; print "FAIL " k | "sort"; }
      split(k, parts, " "); pkg[parts[1]]++
    }
    close("sort")
    for (p in pkg) printf "  %-40s %d cases\n", p, pkg[p] | "sort"
    close("sort")
    printf "fault matrix: %d cases, %d precise (passed), %d wrong or vague (failed)\n", cases, pass, fail
    printf "%d passed, %d failed\n", pass, fail
  }' "$json"
exit "$rc"
