#!/usr/bin/env bash
# Runs the real sparkbench window under a private Xvfb, on a fresh notebook with the demo
# study, and saves a PNG of each section into OUT (default: screenshots/, not committed):
#   studies.png        the Studies section on the demo study, before it runs
#   demo-run.png       the demo study run in the window (--run-demo): its chart and verdicts
#   notebook.png       the Notebook section after the demo ran (a human verdict and a finding
#                      recorded on it): the journal timeline, newest first, chain verified
#   receipt.png        the Studies section's Receipt tab: the demo study's receipt exported in
#                      the window (Export receipt… into a folder), its charts previewed
#   receipt-text.png   the same preview scrolled to receipt.md, rendered
#   run-live.png       the Studies section while a slower study (the medium model) runs
#   run-done.png       the same study after it finished (chart, verdicts)
#   new-study.png      the New study section
#   bench.png          the Bench section (doctor)
#   models.png         the Models section
#   capacity-live.png  a capacity study (medium model, P x C grid) while it runs: the envelope
#                      grid filling in
#   capacity-done.png  the same study assembled: envelope table, selected point
#   new-capacity.png   the New study section with the capacity kind chosen (empty form)
#   studies-light.png  the Studies list (full names, state badges, filter and sort) in the light
#                      theme (FYNE_THEME=light); the other pictures are the dark default
#   compare.png        the Compare section on the demo and a second run of its plan
#                      (--compare): the shared cells benchstat style; compare-light.png light
#   compare-chart.png  the same comparison's overlaid depth curves (its Charts tab); the chart
#                      follows the window's theme: compare-chart-light.png the same, light
#   find.png           Ctrl+F in the Notebook section, "tiny/d128" typed: the hits
#   journal-entry.png  Enter on the first hit: the entry in the timeline, expanded with its
#                      payload; journal-light.png the same in the light theme
#   about.png          the About box (F1)
#   telemetry-run.png  a tiny study whose plan has a telemetry block, run in the window, its Chart
#                      tab (TELEMETRY_CHART_TAB_XY) scrolled past the throughput chart: the
#                      telemetry timeline (on a machine without sensors it says that no sampler
#                      read power, clock or temperature)
#   bench-machine.png  the Bench section scrolled to its Machine card: the samplers, available
#                      or not and why (as doctor --telemetry), and the live readings line
#   overview.png       the Overview section after the studies above: the machine, the recent
#                      studies, the badge table and constants ladder; overview-light.png light
#   new-capacity-rows.png  the New study section, capacity kind: the model table and the server
#                      configurations as rows of fields; new-capacity-rows-light.png light
#   serving.png        a small serving study (tiny model, Poisson rates and a max-rate search,
#                      run by the CLI) in the Studies section, its Serving tab (SERVING_TAB_XY):
#                      open loop vs closed loop in words, the sweep and search outcome, the probe
#                      table; serving-light.png light
#   capacity-compare.png  the Compare section on two runs of a small capacity plan (the tiny
#                      model): the shared cells with both rates and the per-request statistics
# DEMO_WAIT (default 6) is how long the demo may take in the window (a loaded machine wants more).
# ONLY=window runs the demo, its second run and the pictures from studies-light on (a quicker
# look at the window's newer views).
# The receipt preview is reached only through the window (no flag opens it), so the script
# clicks with xdotool: Export receipt… (RECEIPT_BUTTON_XY), then Open in the folder dialog
# (FOLDER_OPEN_XY), which starts in an empty folder (the file dialog's remembered folder is
# preset); the bundle appearing there is checked, so a click that misses stops the script
# with a message instead of saving a wrong picture. Likewise "Verify the chain"
# (VERIFY_CHAIN_XY) in the Notebook section. Coordinates are for the default 1280x800 window.
# Needs: Xvfb, ImageMagick's import, xwininfo, xdotool (make setup installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-screenshots}
RECEIPT_BUTTON_XY=${RECEIPT_BUTTON_XY:-962 61}
FOLDER_OPEN_XY=${FOLDER_OPEN_XY:-859 566}
VERIFY_CHAIN_XY=${VERIFY_CHAIN_XY:-241 21}
COMPARE_CHART_TAB_XY=${COMPARE_CHART_TAB_XY:-689 177}
TELEMETRY_CHART_TAB_XY=${TELEMETRY_CHART_TAB_XY:-518 218}
SERVING_TAB_XY=${SERVING_TAB_XY:-632 257}
for tool in Xvfb import xwininfo xdotool; do
  command -v "$tool" >/dev/null || { echo "screenshots: $tool is missing; run make setup (or apt-get install xvfb imagemagick x11-utils xdotool)" >&2; exit 2; }
done
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

demoid=$("$bin" demo | sed -n 's/^demo study \([0-9]*\).*/\1/p' | head -1)
[ -n "$demoid" ] || { echo "screenshots: could not register the demo study" >&2; exit 1; }

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

open_app() { # open_app NAME ARGS...: start the window with ARGS and wait for it to map
  local name=$1; shift
  "$bin" "$@" >"$work/$name.log" 2>&1 &
  app_pid=$!
  for _ in $(seq 1 100); do
    xwininfo -root -tree 2>/dev/null | grep -q '"sparkbench"' && return 0
    sleep 0.2
  done
  echo "screenshots: the window did not open for $name; its log:" >&2
  cat "$work/$name.log" >&2
  exit 1
}
capture() { import -window root "$OUT/$1.png"; echo "$OUT/$1.png"; }
close_app() { kill "$app_pid" 2>/dev/null || true; wait "$app_pid" 2>/dev/null || true; }
click() { xdotool mousemove $1 click 1; } # click "X Y"

shot() { # shot NAME SECONDS ARGS...: open the window with ARGS, wait, capture
  local name=$1 wait=$2; shift 2
  open_app "$name" "$@"
  sleep "$wait"
  capture "$name"
  close_app
}

keys() { # keys KEY...: xdotool key presses in the app's window
  local win; win=$(xdotool search --sync --onlyvisible --pid "$app_pid" 2>/dev/null | head -1)
  xdotool windowfocus --sync "$win" 2>/dev/null || true
  for k in "$@"; do xdotool key --window "$win" "$k"; sleep 0.4; done
}

if [ "${ONLY:-}" != window ]; then
shot studies 3 --section studies
fi
shot demo-run "${DEMO_WAIT:-6}" --section studies --run-demo
demo_state=$("$bin" study show "$demoid")
case "${demo_state%%$'\n'*}" in
  *": complete"*) ;;
  *) echo "screenshots: the demo study did not complete in the window:" >&2; echo "$demo_state" >&2; exit 1 ;;
esac

# The notebook after the demo ran, with a human verdict and a finding recorded on it.
"$bin" verdict "$demoid" --prediction P3 --human NOTE \
  --why "the MoE model crosses 10000 t/s before the dense one; tiny random-weight models, so only the shape matters" >/dev/null
"$bin" finding add "$demoid" --text "generation falls faster with depth than prompt processing on both tiny models" \
  --leg tiny/d256 --leg moe/d256 --prediction P2 --prediction P3 >/dev/null
if [ "${ONLY:-}" != window ]; then
open_app notebook --section notebook
sleep 3
click "$VERIFY_CHAIN_XY"
sleep 2
capture notebook
close_app

# The receipt preview: Export receipt… on the demo study (shown by default), into an empty
# folder that the folder dialog opens on.
mkdir -p "$work/receipts"
# Its own preferences (defaults, plus the dialog's remembered folder), so nothing is merged.
mkdir -p "$work/config-receipt/fyne/dev.sparkbench.app"
printf '{"fyne:fileDialogLastFolder": "file://%s"}\n' "$work/receipts" > "$work/config-receipt/fyne/dev.sparkbench.app/preferences.json"
XDG_CONFIG_HOME="$work/config-receipt" open_app receipt --section studies
sleep 4
click "$RECEIPT_BUTTON_XY"
sleep 2
click "$FOLDER_OPEN_XY"
for _ in $(seq 1 150); do
  ls "$work"/receipts/*/receipt.md >/dev/null 2>&1 && break
  sleep 0.2
done
if ! ls "$work"/receipts/*/receipt.md >/dev/null 2>&1; then
  capture receipt-failed >&2
  echo "screenshots: no receipt was exported: the clicks at RECEIPT_BUTTON_XY=\"$RECEIPT_BUTTON_XY\" (Export receipt…) and FOLDER_OPEN_XY=\"$FOLDER_OPEN_XY\" (Open) missed; see $OUT/receipt-failed.png and set them" >&2
  exit 1
fi
sleep 2
xdotool key Tab; sleep 0.3; xdotool key space # dismiss "Receipt written" (OK is its only focusable)
sleep 1
capture receipt
# Scroll the preview past its charts (each about 485 px; a wheel step scrolls about 25 px).
charts=$(ls "$work"/receipts/*/plots/*.png 2>/dev/null | wc -l)
xdotool mousemove 800 600 click --repeat $(( charts * 20 )) --delay 30 5
sleep 1
capture receipt-text
close_app

shot run-live 4 --section studies --run "$id"
shot run-done 25 --section studies --run "$id"
shot new-study 3 --section new
shot bench 4 --section bench
shot models 4 --section models
shot capacity-live 8 --section studies --run "$capid"
shot capacity-done 60 --section studies --run "$capid"
shot new-capacity 3 --section new --new-kind capacity
fi

# The window's newer views. A second run of the demo's plan, to compare with the first.
demodir="$XDG_DATA_HOME/sparkbench/demo"
jq --arg dir "$demodir" '.name = "sparkbench demo, second run" | .models |= map(.path = ($dir + "/" + .path))' \
  "$demodir/demo-study.json" > "$work/demo-again.json"
again=$("$bin" study register "$work/demo-again.json" | sed -n 's/^study \([0-9]*\).*/\1/p' | head -1)
[ -n "$again" ] || { echo "screenshots: could not register the demo's second run" >&2; exit 1; }
"$bin" study run "$again" >/dev/null || { echo "screenshots: the demo's second run failed" >&2; exit 1; }
FYNE_THEME=light shot studies-light 3 --section studies
shot compare 6 --compare "$demoid,$again"
FYNE_THEME=light shot compare-light 6 --compare "$demoid,$again"
open_app compare-chart --compare "$demoid,$again"
sleep 5
click "$COMPARE_CHART_TAB_XY"
sleep 2
capture compare-chart
close_app
FYNE_THEME=light open_app compare-chart-light --compare "$demoid,$again"
sleep 5
click "$COMPARE_CHART_TAB_XY"
sleep 2
capture compare-chart-light
close_app
for theme in dark light; do
  name=journal-entry; [ "$theme" = light ] && name=journal-light
  FYNE_THEME=$theme open_app "$name" --section notebook
  sleep 3
  keys ctrl+f
  xdotool type --delay 40 "tiny/d128 finished"
  sleep 1
  [ "$theme" = dark ] && capture find
  keys Return
  sleep 1
  capture "$name"
  close_app
done
open_app about --section bench
sleep 3
keys F1
sleep 1
capture about
close_app

# A study whose plan has a telemetry block, run in the window (docs/telemetry.md).
cat > "$work/telemetry.json" <<JSON
{"schema": "sparkbench.throughput/v1", "name": "tiny model with telemetry (screenshots)",
 "models": [{"id": "tiny", "path": "$PWD/testdata/models/tiny-llama-f32.gguf",
             "sha256": "$(sha256sum testdata/models/tiny-llama-f32.gguf | cut -d' ' -f1)"}],
 "axes": {"depths": [0, 128, 256], "n_prompt": [64], "n_gen": [32], "reps": 3, "threads": [1]},
 "split": "per_depth", "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1},
 "telemetry": {"interval_ms": 100}}
JSON
telid=$("$bin" study register "$work/telemetry.json" | sed -n 's/^study \([0-9]*\).*/\1/p' | head -1)
[ -n "$telid" ] || { echo "screenshots: could not register the telemetry study" >&2; exit 1; }
open_app telemetry-run --section studies --run "$telid"
sleep "${DEMO_WAIT:-6}"
click "$TELEMETRY_CHART_TAB_XY"
sleep 2
xdotool mousemove 800 600 click --repeat 18 --delay 30 5 # past the throughput chart
sleep 2
capture telemetry-run
close_app
open_app bench-machine --section bench
sleep 4
xdotool mousemove 800 500 click --repeat 12 --delay 30 5
sleep 1
capture bench-machine
close_app

# The newer views: the overview, the capacity form's rows, a serving study, a capacity comparison.
for theme in dark light; do
  sfx=""; [ "$theme" = light ] && sfx=-light
  FYNE_THEME=$theme shot "overview$sfx" 4 --section overview
  FYNE_THEME=$theme shot "new-capacity-rows$sfx" 3 --section new --new-kind capacity
done
tiny="$PWD/testdata/models/tiny-llama-f32.gguf"
tinysum=$(sha256sum "$tiny" | cut -d' ' -f1)
smallcap() { # smallcap NAME EXTRA-JSON: a small capacity plan on the tiny model
  cat <<JSON
{"schema": "sparkbench.capacity/v1", "name": "$1",
 "candidates": [{"id": "tiny", "label": "tiny f32", "model": {"path": "$tiny", "sha256": "$tinysum"}, "server_flags": ["-t", "1"]}],
 "slots": [1], "clients": [1, 2], "passes": ["forward"], "warmups": 1, "measured": 4, "n_predict": 16, "ctx_per_slot": 512,
 "prompt_plan": {"path": "prompts.json", "sha256": "$(sha256sum "$work/prompts.json" | cut -d' ' -f1)"},
 "limits": {"ttft_ms_p95_max": 60000, "e2e_ms_p95_max": 60000, "peak_rss_mib_max": 4096}$2}
JSON
}
smallcap "tiny serving under Poisson arrivals (screenshots)" ', "serving": {"arrival": {"process": "poisson", "seed": 3}, "rates": [4, 8], "search": {"lo": 4, "hi": 64, "tolerance": 0.5, "max_probes": 3}, "requests": 8, "warmups": 1, "slo": {"ttft_ms": 2000, "tpot_ms": 200}}' > "$work/serving.json"
servid=$("$bin" capacity register "$work/serving.json" | sed -n 's/^study \([0-9]*\).*/\1/p' | head -1)
[ -n "$servid" ] && "$bin" capacity run "$servid" >/dev/null || { echo "screenshots: the serving study did not run" >&2; exit 1; }
for theme in dark light; do
  sfx=""; [ "$theme" = light ] && sfx=-light
  FYNE_THEME=$theme open_app "serving$sfx" --study "$servid"
  sleep 4
  click "$SERVING_TAB_XY"
  sleep 3
  capture "serving$sfx"
  close_app
done
for n in 1 2; do
  smallcap "tiny capacity run $n (screenshots)" "" > "$work/cap$n.json"
  cid=$("$bin" capacity register "$work/cap$n.json" | sed -n 's/^study \([0-9]*\).*/\1/p' | head -1)
  [ -n "$cid" ] && "$bin" capacity run "$cid" >/dev/null || { echo "screenshots: capacity run $n failed" >&2; exit 1; }
  eval "cap$n=$cid"
done
shot capacity-compare 6 --compare "$cap1,$cap2"
