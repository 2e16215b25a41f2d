#!/usr/bin/env bash
# mutate.sh: mutation testing of the packages that hold sparkbench's judgement — gates,
# verdicts, selection and stopping rules — with gremlins (installed from the Go module proxy
# when missing). Each mutant is a changed comparison, sign or operator; a mutant that no test
# kills ("lived") is a decision no test holds. Prints one row per package: killed, lived, not
# covered, test efficacy (killed / (killed + lived)) and mutator coverage ((killed + lived) /
# all). Not part of `make test` (minutes per package on 2 cores).
#
#   scripts/mutate.sh [PKG ...]      default: the decision packages below
#
# Scope: in each decision package only the files that decide are mutated (the gates,
# verdicts, selection and stopping rules named in scope() below); rendering, orchestration
# and the run subpackages (caprun, quantrun, studyrun, energyrun) are left out, and the
# excluded files are printed. A package not in scope() is mutated whole.
# Environment: GREMLINS (the binary), MUTATE_OUT (a folder for each package's JSON and log),
# MUTATE_WORKERS (mutants tested at once, default 1), MUTATE_TIMEOUT_COEFFICIENT (default 60),
# MUTATE_EFFICACY / MUTATE_COVERAGE (thresholds; a package below either fails the run).
set -euo pipefail
cd "$(dirname "$0")/.."
version=v0.6.0
gremlins=${GREMLINS:-$(go env GOPATH)/bin/gremlins}
if ! [ -x "$gremlins" ] || ! "$gremlins" --version >/dev/null 2>&1; then
  echo "mutate: installing gremlins $version" >&2
  GOFLAGS= go install "github.com/go-gremlins/gremlins/cmd/gremlins@$version"
fi
pkgs=("$@")
if [ ${#pkgs[@]} -eq 0 ]; then
  pkgs=(./app/capacity ./app/quant ./app/study ./app/analysis ./app/energy)
fi
# scope PKG: the files (relative to the package folder) whose mutants count; empty = all.
scope() {
  case "${1#./}" in
    app/capacity) echo devicegate.go selection.go serving_sustain.go serving_validity.go serving_metrics.go metrics.go predict.go evidence.go ;;
    app/quant) echo select.go handoff.go predict.go validate.go plan.go size.go ;;
    app/study) echo legstatus.go compare.go compare_aa.go adaptive.go predict.go predict_stats.go predict_of.go results.go kvcheck.go ;;
    app/analysis) echo adaptive.go benchcmp.go figures.go planner.go stats.go ;;
    app/energy) echo energy.go figures.go gates.go rows.go span.go ;;
    *) echo ;;
  esac
}
# excludes PKG: one -E flag per Go file under PKG that is not in its scope.
excludes() {
  local want=" $(scope "$1") " f
  [ "$want" = "  " ] && return 0
  ( cd "$1" && find . -name '*.go' ! -name '*_test.go' | sed 's#^\./##' | sort ) | while read -r f; do
    case "$want" in *" $f "*) ;; *) printf -- '-E\n^%s$\n' "$(printf '%s' "$f" | sed 's/[.]/\\./g')" ;; esac
  done
}
out=${MUTATE_OUT:-$(mktemp -d)}
mkdir -p "$out"
eff_min=${MUTATE_EFFICACY:-90}
cov_min=${MUTATE_COVERAGE:-80}
printf '%-16s %7s %6s %12s %9s %9s %9s %8s\n' package killed lived not_covered timed_out efficacy coverage time
fail=0
for p in "${pkgs[@]}"; do
  name=$(echo "$p" | sed 's#^\./##; s#/#_#g')
  mapfile -t ex < <(excludes "$p")
  [ ${#ex[@]} -gt 0 ] && echo "mutate: $p: mutating $(scope "$p"); $(( ${#ex[@]} / 2 )) files left out" >&2
  start=$(date +%s)
  # The timeout is the coefficient times the package's test time, which for a pure package is
  # milliseconds next to the build: a small coefficient times every mutant out (app/quant: all
  # 236 with 5). One worker by default (the box has 2 cores; a loaded one times tests out). Not --test-cpu:
  # with it, gremlins 0.6.0 counts every mutant as killed (a mutant that lives, such as `x > 0`
  # as `x >= 0` under a test that only tries 5 and -5, was reported killed).
  if ! "$gremlins" unleash --tags migrated_fynedo --workers "${MUTATE_WORKERS:-1}" --timeout-coefficient "${MUTATE_TIMEOUT_COEFFICIENT:-60}" \
      ${ex[@]+"${ex[@]}"} -o "$out/$name.json" "$p" >"$out/$name.log" 2>&1; then
    echo "mutate: gremlins failed on $p (log: $out/$name.log)" >&2
    fail=1
    continue
  fi
  secs=$(( $(date +%s) - start ))
  killed=$(sed -n 's/^Killed: \([0-9]*\), Lived: \([0-9]*\), Not covered: \([0-9]*\)$/\1/p' "$out/$name.log")
  lived=$(sed -n 's/^Killed: \([0-9]*\), Lived: \([0-9]*\), Not covered: \([0-9]*\)$/\2/p' "$out/$name.log")
  nc=$(sed -n 's/^Killed: \([0-9]*\), Lived: \([0-9]*\), Not covered: \([0-9]*\)$/\3/p' "$out/$name.log")
  tout=$(sed -n 's/^Timed out: \([0-9]*\), .*$/\1/p' "$out/$name.log")
  eff=$(sed -n 's/^Test efficacy: \([0-9.]*\)%$/\1/p' "$out/$name.log")
  cov=$(sed -n 's/^Mutator coverage: \([0-9.]*\)%$/\1/p' "$out/$name.log")
  printf '%-16s %7s %6s %12s %9s %8s%% %8s%% %7ss\n' "${p#./}" "${killed:-?}" "${lived:-?}" "${nc:-?}" "${tout:-?}" "${eff:-?}" "${cov:-?}" "$secs"
  # A timed-out mutant was not judged: the run says so and fails rather than pass it over.
  if [ -z "$eff" ] || [ -z "$cov" ] || [ "${tout:-1}" != 0 ] || awk -v e="$eff" -v c="$cov" -v em="$eff_min" -v cm="$cov_min" 'BEGIN{exit !(e < em || c < cm)}'; then
    fail=1
  fi
done
echo "mutate: logs and JSON in $out; lived mutants: grep LIVED $out/*.log" >&2
if [ "$fail" -ne 0 ]; then
  echo "mutate: below the targets (efficacy >= $eff_min%, coverage >= $cov_min%), mutants timed out (not judged), or gremlins failed" >&2
  exit 1
fi
