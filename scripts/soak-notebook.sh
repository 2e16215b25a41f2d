#!/usr/bin/env bash
# soak-notebook.sh: a concurrency soak of one notebook (issue 30). PROCS processes (default 8)
# of the built binary, for DURATION seconds (default 120), each in a loop of `study run`,
# `receipt`, `notebook verify`, `finding add` (and now and then `study register` of a new
# plan) on a few small throughput studies of the tiny model. Every command's outcome is
# classified: done; refused precisely (another process runs the study: named by pid and since
# when); a run left incomplete by the CV gate on a loaded machine (said, with the leg); anything
# else is UNCLASSIFIED and printed. Afterwards: `notebook verify` must say intact, no plan leg
# attempt is recorded twice, no two legs of one study overlap in time, no prediction's verdict
# is journaled twice, no run lease is left held. Prints the counts; exit 1 when any check fails
# or any outcome is unclassified. Needs the llama.cpp prefix (make llama), the tiny model
# (testdata/models) and sqlite3 (read-only counts). Not part of `make test`: `make soak`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
PROCS=${PROCS:-8}
DURATION=${DURATION:-120}
STUDIES=${STUDIES:-3}
BENCH_DELAY=${BENCH_DELAY:-1} # seconds each measurement waits first: runs overlap more
command -v sqlite3 >/dev/null || { echo "soak: needs the sqlite3 command (apt-get install sqlite3) for the read-only counts" >&2; exit 2; }
model="$root/testdata/models/tiny-llama-f32.gguf"
[ -f "$model" ] || { echo "soak: $model is missing: make models" >&2; exit 2; }
llama=${SPARKBENCH_LLAMA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sparkbench/llama.cpp/bin}
[ -x "$llama/llama-bench" ] || { echo "soak: no llama-bench in $llama: make llama, or set SPARKBENCH_LLAMA_DIR" >&2; exit 2; }

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
bin="$work/sparkbench"
go build -tags migrated_fynedo -o "$bin" ./cmd/sparkbench
mkdir -p "$work/llama" "$work/out" "$work/receipts"
cat >"$work/llama/llama-bench" <<EOF
#!/bin/sh
case " \$* " in *" -m "*) sleep $BENCH_DELAY ;; esac
exec "$llama/llama-bench" "\$@"
EOF
chmod +x "$work/llama/llama-bench"
ln -s "$llama/llama-server" "$work/llama/llama-server"
export SPARKBENCH_NOTEBOOK="$work/notebook.db" SPARKBENCH_LLAMA_DIR="$work/llama" XDG_DATA_HOME="$work/data"
sha=$(sha256sum "$model" | cut -d' ' -f1)

# plan NAME DEPTHS: a small throughput plan of the tiny model.
plan() {
  local f="$work/plan-$1.json"
  cat >"$f" <<EOF
{"schema": "sparkbench.throughput/v1", "name": "$1",
 "models": [{"id": "tiny", "path": "$model", "sha256": "$sha"}],
 "axes": {"depths": $2, "n_prompt": [64], "n_gen": [32], "reps": 2, "threads": [1]},
 "split": "per_depth", "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1}, "bandwidth": {"gbs": 20},
 "predictions": [
  {"id": "P1", "text": "tiny tg at d0", "kind": "band", "about": {"figure": "cell", "model": "tiny", "test": "tg", "depth": 0}, "lo": 1},
  {"id": "P2", "text": "where does tiny tg cross 1e9?", "kind": "question", "about": {"figure": "crossing_depth", "model": "tiny", "test": "tg", "line": 1e9}}]}
EOF
  echo "$f"
}
for i in $(seq 1 "$STUDIES"); do
  "$bin" study register "$(plan "soak $i" "[0, 64, 128]")" >/dev/null 2>&1
done
seq 1 "$STUDIES" >"$work/ids"

busy_re='is being run by another process: process [0-9]+ has been running study [0-9]+ since [0-9T:.Z-]+ \(it holds the study.s run lease\); wait for that run to end, or stop it \(kill -INT [0-9]+\)$'

# classify VERB CODE OUTFILE ERRFILE: one word for the outcome.
classify() {
  local verb=$1 code=$2 out=$3 err=$4
  if grep -qiE 'database is locked|database table is locked|SQLITE_BUSY' "$out" "$err"; then echo "UNCLASSIFIED"; return; fi
  case "$verb:$code" in
    run:0) grep -q ' complete: ' "$out" && echo done || echo UNCLASSIFIED ;;
    run:1)
      if [ "$(wc -l <"$err")" = 1 ] && grep -qE "^sparkbench study run: study $busy_re" "$err"; then echo refused-busy
      elif grep -q "^sparkbench study run: study [0-9]* incomplete: " "$err"; then echo incomplete-cv
      else echo UNCLASSIFIED; fi ;;
    receipt:0 | verify:0 | finding:0 | register:0) echo done ;;
    *) echo UNCLASSIFIED ;;
  esac
}

worker() {
  local w=$1 end=$2 i=0 verb id code
  while [ "$(date +%s)" -lt "$end" ]; do
    i=$((i + 1))
    id=$(shuf -n1 "$work/ids")
    local o="$work/out/$w.$i.out" e="$work/out/$w.$i.err"
    case $(((w + i) % 9)) in
      0 | 1 | 2 | 3) verb=run; "$bin" study run "$id" >"$o" 2>"$e" && code=0 || code=$? ;;
      4 | 5) verb=receipt; "$bin" receipt "$id" --out "$work/receipts/$w.$i" >"$o" 2>"$e" && code=0 || code=$? ;;
      6) verb=verify; "$bin" notebook verify >"$o" 2>"$e" && code=0 || code=$? ;;
      7) verb=finding; "$bin" finding add "$id" --text "soak worker $w note $i" >"$o" 2>"$e" && code=0 || code=$? ;;
      8)
        if [ $((i % 3)) = 0 ]; then
          verb=register; "$bin" study register "$(plan "soak $w-$i" "[0, 128]")" >"$o" 2>"$e" && code=0 || code=$?
          [ "$code" = 0 ] && sed -n 's/^study \([0-9]*\) .*/\1/p' "$o" | head -1 >>"$work/ids"
        else
          verb=verify; "$bin" notebook verify >"$o" 2>"$e" && code=0 || code=$?
        fi ;;
    esac
    local c
    c=$(classify "$verb" "$code" "$o" "$e")
    echo "$verb $c" >>"$work/outcomes.$w"
    if [ "$c" = UNCLASSIFIED ]; then
      { echo "--- worker $w: $verb (exit $code)"; cat "$o" "$e"; } >>"$work/unclassified"
    fi
    rm -f "$o" "$e"
    rm -rf "$work/receipts/$w.$i"
  done
}

echo "soak: $PROCS processes for ${DURATION}s on one notebook ($STUDIES studies to start with; each measurement waits ${BENCH_DELAY}s first)"
start=$(date +%s)
end=$((start + DURATION))
for w in $(seq 1 "$PROCS"); do worker "$w" "$end" & done
wait
echo "soak: ran for $(($(date +%s) - start))s"

status=0
echo "outcomes (verb, outcome, count):"
cat "$work"/outcomes.* | sort | uniq -c | awk '{printf "  %-9s %-14s %d\n", $2, $3, $1}'
if [ -s "$work/unclassified" ]; then
  echo "UNCLASSIFIED outcomes:"; head -60 "$work/unclassified"; status=1
fi
"$bin" notebook verify >"$work/verify" 2>&1 || { echo "notebook verify FAILED:"; cat "$work/verify"; status=1; }
grep -q intact "$work/verify" && echo "notebook verify: $(grep -m1 intact "$work/verify")"
q() { sqlite3 -readonly "$SPARKBENCH_NOTEBOOK" "$1"; }
studies=$(q "SELECT COUNT(*) FROM studies")
legs=$(q "SELECT COUNT(*) FROM legs")
dup_legs=$(q "SELECT COUNT(*) FROM (SELECT 1 FROM legs WHERE json_extract(detail_json, '$.plan_leg') IS NOT NULL
  GROUP BY study_id, json_extract(detail_json, '$.plan_leg'), json_extract(detail_json, '$.role'), json_extract(detail_json, '$.attempt') HAVING COUNT(*) > 1)")
overlaps=$(q "SELECT COUNT(*) FROM legs a JOIN legs b ON a.study_id = b.study_id AND a.id < b.id
  AND b.started_at < COALESCE(a.ended_at, '9999') AND a.started_at < COALESCE(b.ended_at, '9999')")
verdicts=$(q "SELECT COUNT(*) FROM journal WHERE kind = 'verdict'")
dup_verdicts=$(q "SELECT COUNT(*) FROM (SELECT 1 FROM journal WHERE kind = 'verdict' GROUP BY study_id, json_extract(payload, '$.key') HAVING COUNT(*) > 1)")
runs=$(q "SELECT COUNT(*) FROM journal WHERE kind = 'study.run'")
findings=$(q "SELECT COUNT(*) FROM findings")
receipts=$(q "SELECT COUNT(*) FROM receipts")
leases=$(q "SELECT COUNT(*) FROM run_leases")
takeovers=$(q "SELECT COUNT(*) FROM journal WHERE kind = 'lease.taken_over'")
echo "notebook: $studies studies, $legs legs, $runs study.run entries, $verdicts verdicts, $findings findings, $receipts receipts"
echo "checks: $dup_legs plan leg attempts recorded twice, $overlaps pairs of overlapping legs in one study, $dup_verdicts predictions with two verdicts, $leases leases left held, $takeovers leases taken over"
[ "$dup_legs" = 0 ] && [ "$overlaps" = 0 ] && [ "$dup_verdicts" = 0 ] && [ "$leases" = 0 ] && [ "$takeovers" = 0 ] || status=1
[ "$status" = 0 ] && echo "soak: PASS" || echo "soak: FAIL"
exit "$status"
