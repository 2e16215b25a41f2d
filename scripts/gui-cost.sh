#!/usr/bin/env bash
# GUI cost: the window's own CPU while a study runs with live charts. Starts the real app
# under a private Xvfb on a fresh notebook, runs a study of about DURATION seconds on the
# medium generated model (--run), and samples /proc/PID/stat of the app process (utime +
# stime, children excluded: llama-bench is not counted) from the first leg to the end.
# Prints the average as a percentage of one core. Target: <= 3%.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-60}
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
# About 2.5 s per depth leg here (5 reps of pp128 + tg64 on the medium model): scale depths to DURATION.
n=$(( DURATION * 10 / 25 )); [ "$n" -lt 4 ] && n=4
depths=$(seq -s, 0 64 $(( (n - 1) * 64 )))
cat > "$work/plan.json" <<JSON
{"schema": "sparkbench.throughput/v1", "name": "gui cost",
 "models": [{"id": "medium", "path": "$PWD/testdata/models/medium-llama-f16.gguf",
             "sha256": "$(sha256sum testdata/models/medium-llama-f16.gguf | cut -d' ' -f1)"}],
 "axes": {"depths": [$depths], "n_prompt": [128], "n_gen": [64], "reps": 5, "threads": [1]},
 "split": "per_depth", "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1}}
JSON
id=$("$bin" study register "$work/plan.json" | sed -n 's/^study \([0-9]*\).*/\1/p' | head -1)
"$bin" --section studies --run "$id" >"$work/app.log" 2>&1 &
app_pid=$!
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$app_pid/stat"; }
# wait for the first leg (llama-bench a child of the app)
for _ in $(seq 1 200); do pgrep -P "$app_pid" -x llama-bench >/dev/null && break; sleep 0.1; done
t0=$(date +%s.%N); c0=$(ticks)
while :; do
  sleep 1
  kill -0 "$app_pid" 2>/dev/null || break
  # the run is over when no llama-bench has been seen for 3 s
  if ! pgrep -P "$app_pid" -x llama-bench >/dev/null; then
    idle=$(( ${idle:-0} + 1 )); [ "$idle" -ge 3 ] && break
  else idle=0; fi
done
t1=$(date +%s.%N); c1=$(ticks)
awk -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v hz="$hz" -v legs="$n" 'BEGIN {
  cpu = (c1 - c0) / hz; wall = t1 - t0
  printf "gui cost: %.2f s of CPU over %.1f s of a %d-leg study with live charts = %.2f%% of one core (app process only, children excluded)\n", cpu, wall, legs, 100 * cpu / wall }'
