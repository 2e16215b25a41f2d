#!/usr/bin/env bash
# Runs the real sparkbench window under a private Xvfb, on a fresh notebook with the demo
# study, and saves a PNG of each section into OUT (default: screenshots/, not committed):
#   studies.png      the Studies section on the demo study, before it runs
#   run-live.png     the Studies section while a slower study (the medium model) runs
#   run-done.png     the same study after it finished (chart, verdicts)
#   new-study.png    the New study section
#   bench.png        the Bench section (doctor)
#   models.png       the Models section
#   capacity-live.png  a capacity study (medium model, P x C grid) while it runs: the envelope
#                      grid filling in
#   capacity-done.png  the same study assembled: envelope table, selected point
#   new-capacity.png   the New study section with the capacity kind chosen (empty form)
# Needs: Xvfb, ImageMagick's import, xwininfo (make setup installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-screenshots}
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'kill ${app_pid:-0} ${xvfb_pid:-0} 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
export SPARKBENCH_NOTEBOOK="$work/notebook.db" XDG_DATA_HOME="$work/data" XDG_CONFIG_HOME="$work/config"
make -s build models >/dev/null
bin=./bin/sparkbench

display=:$((90 + RANDOM % 100))
Xvfb "$display" -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
xvfb_pid=$!
export DISPLAY=$display
sleep 1

# A slower study on the medium model, so a screenshot can catch it running.
cat > "$work/medium.json" <<JSON
{"schema": "sparkbench.throughput/v1", "name": "medium model depth curve (screenshots)",
 "models": [{"id": "medium", "path": "$PWD/testdata/models/medium-llama-f16.gguf",
             "sha256": "$(sha256sum testdata/models/medium-llama-f16.gguf | cut -d' ' -f1)"}],
 "axes": {"depths": [0, 256, 512, 1024], "n_prompt": [128], "n_gen": [64], "reps": 5, "threads": [1]},
 "split": "per_depth", "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1},
 "predictions": [{"id": "P1", "text": "medium tg at d0 above 100 t/s", "kind": "band",
   "about": {"figure": "cell", "model": "medium", "test": "tg", "depth": 0}, "lo": 100}]}
JSON
"$bin" demo >/dev/null
id=$("$bin" study register "$work/medium.json" | sed -n 's/^study \([0-9]*\).*/\1/p' | head -1)
[ -n "$id" ] || { echo "screenshots: could not register the medium study" >&2; exit 1; }

# A capacity study on the medium model: 2 passes x P {1,2,4} x C {1,2,4}.
printf '%s\n' '{"schema": "sparkbench.prompts/v1", "prefix": "Request {n}. ", "body": "Write a short story about a lighthouse keeper."}' > "$work/prompts.json"
cat > "$work/capacity.json" <<JSON
{"schema": "sparkbench.capacity/v1", "name": "medium model slots x clients (screenshots)",
 "candidates": [{"id": "medium", "label": "medium f16", "model": {"path": "$PWD/testdata/models/medium-llama-f16.gguf",
   "sha256": "$(sha256sum testdata/models/medium-llama-f16.gguf | cut -d' ' -f1)"}, "server_flags": ["-t", "1"]}],
 "slots": [1, 2, 4], "clients": [1, 2, 4], "warmups": 1, "measured": 4, "n_predict": 32, "ctx_per_slot": 512,
 "prompt_plan": {"path": "prompts.json", "sha256": "$(sha256sum "$work/prompts.json" | cut -d' ' -f1)"},
 "limits": {"ttft_ms_p95_max": 1500, "e2e_ms_p95_max": 8000, "peak_rss_mib_max": 2048},
 "predictions": [{"id": "P1", "text": "more slots gain at least 20%", "kind": "band",
   "about": {"figure": "selected_gain", "candidate": "medium"}, "lo": 0.2}]}
JSON
capid=$("$bin" capacity register "$work/capacity.json" | sed -n 's/^study \([0-9]*\).*/\1/p' | head -1)
[ -n "$capid" ] || { echo "screenshots: could not register the capacity study" >&2; exit 1; }

shot() { # shot NAME SECONDS ARGS...: open the window with ARGS, wait, capture
  local name=$1 wait=$2; shift 2
  "$bin" "$@" >"$work/$name.log" 2>&1 &
  app_pid=$!
  for _ in $(seq 1 100); do
    xwininfo -root -tree 2>/dev/null | grep -q '"sparkbench"' && break
    sleep 0.2
  done
  sleep "$wait"
  import -window root "$OUT/$name.png"
  kill "$app_pid" 2>/dev/null || true
  wait "$app_pid" 2>/dev/null || true
  echo "$OUT/$name.png"
}

shot studies 3 --section studies
shot run-live 4 --section studies --run "$id"
shot run-done 25 --section studies --run "$id"
shot new-study 3 --section new
shot bench 4 --section bench
shot models 4 --section models
shot capacity-live 8 --section studies --run "$capid"
shot capacity-done 60 --section studies --run "$capid"
shot new-capacity 3 --section new --new-kind capacity
