#!/usr/bin/env bash
# test-install-llama.sh: end-to-end test of scripts/install-llama.sh in a temporary prefix.
#  (a) install, (b) an idempotent re-run must take < 2 s, (c) `--force` rebuilds are SIGKILLed
#  (whole process group) at several points and the previous prefix must still work after each,
#  (d) a final rebuild completes and prunes leftovers, (e) the binaries run a tiny llama-bench.
# The .deb download cache is shared with the default prefix (offline after the first download);
# the prefix lives in a mktemp folder under the cache folder and is removed at the end.
# Prints "N passed, M failed"; exits non-zero on any failure.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
installer=$here/install-llama.sh
model=$repo/../shared/llama-samples/reference-tiny.gguf
cache_home=${XDG_CACHE_HOME:-$HOME/.cache}
unset SPARKBENCH_LLAMA_PREFIX

mkdir -p "$cache_home/sparkbench"
tmp=$(mktemp -d "$cache_home/sparkbench/test-install-llama.XXXXXX")
prefix=$tmp/llama.cpp
bgpid=""
cleanup() {
  if [ -n "$bgpid" ]; then kill -KILL -- "-$bgpid" 2>/dev/null || true; fi
  rm -rf -- "$tmp"
}
trap cleanup EXIT

passed=0
failed=0
pass() { passed=$((passed + 1)); printf 'PASS  %s\n' "$*"; }
fail() { failed=$((failed + 1)); printf 'FAIL  %s\n' "$*"; }
note() { printf '      %s\n' "$*"; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# prefix_ok LABEL: the prefix's tools run (llama-bench --help rc 0, llama-server prints a version)
prefix_ok() {
  local label=$1 ver
  if ! "$prefix/bin/llama-bench" --help >/dev/null 2>&1; then
    fail "$label: llama-bench --help failed"; return 1
  fi
  if ! ver=$("$prefix/bin/llama-server" --version 2>&1) || [[ $ver != *"version: "* ]]; then
    fail "$label: llama-server --version printed no version"; return 1
  fi
  pass "$label: prefix works ($(printf '%s\n' "$ver" | grep -m1 '^version: '))"
}

echo "test prefix: $prefix"

# --- (a) first install -------------------------------------------------------------------
t0=$(now)
if out=$(timeout 600 "$installer" --prefix "$prefix" 2>"$tmp/run1.log"); then
  pass "install exits 0 in $(elapsed "$t0") s"
else
  fail "install failed:"; sed 's/^/      /' "$tmp/run1.log"
  printf '%d passed, %d failed\n' "$passed" "$((failed + 1))"; exit 1
fi
if [ "$out" = "$prefix/bin" ]; then pass "stdout is exactly the bin folder"; else fail "stdout was '$out', expected '$prefix/bin'"; fi
prefix_ok "after install" || true
if [ -L "$prefix" ] && [ -f "$prefix/VERSIONS.txt" ]; then
  pass "prefix is a symlink to $(readlink "$prefix") with VERSIONS.txt"
else
  fail "prefix is not a symlink with VERSIONS.txt"
fi
real=$(cd "$prefix" && pwd -P)
if command -v readelf >/dev/null 2>&1; then
  dyn=$(readelf -d "$prefix/bin/llama-server")
  interp=$(readelf -l "$prefix/bin/llama-server" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
  if grep -q "(RPATH).*\[$real/lib\]" <<<"$dyn" && ! grep -q RUNPATH <<<"$dyn"; then
    pass "llama-server has RPATH $real/lib (no RUNPATH)"
  else
    fail "llama-server's dynamic section lacks RPATH $real/lib: $(grep -E 'R(UN)?PATH' <<<"$dyn")"
  fi
  if [ "$interp" = "$real/lib/ld-linux-x86-64.so.2" ] || [[ $interp == "$real/lib/ld-linux-"* ]]; then
    pass "llama-server's interpreter is $interp"
  else
    fail "llama-server's interpreter is '$interp'"
  fi
fi
if compgen -G "$prefix/bin/libggml-cpu-*.so" >/dev/null; then
  pass "$(find "$prefix/bin/" -name 'libggml-cpu-*.so' | wc -l) CPU backends next to the tools"
else
  fail "no libggml-cpu-*.so in $prefix/bin"
fi
note "prefix size: $(du -sh "$real" | cut -f1)"

# --- (b) idempotent re-run -----------------------------------------------------------------
t0=$(now)
out=$("$installer" --prefix "$prefix" 2>"$tmp/run2.log") || { fail "second run failed"; sed 's/^/      /' "$tmp/run2.log"; }
t2=$(elapsed "$t0")
if awk -v t="$t2" 'BEGIN { exit !(t < 2.0) }'; then pass "second run took $t2 s (< 2 s)"; else fail "second run took $t2 s (>= 2 s)"; fi
if [ "$out" = "$prefix/bin" ] && [ ! -s "$tmp/run2.log" ]; then
  pass "second run: stdout is the bin folder, stderr is empty"
else
  fail "second run printed '$out' / stderr: $(head -c 300 "$tmp/run2.log")"
fi

# --- options -----------------------------------------------------------------------------
if "$installer" --help 2>/dev/null | grep -q -- '--upgrade'; then pass "--help exits 0 and documents --upgrade"; else fail "--help"; fi
rc=0; "$installer" --bogus >/dev/null 2>&1 || rc=$?
if [ "$rc" = 2 ]; then pass "unknown flag exits 2"; else fail "unknown flag exited $rc"; fi

# --- offline rebuild from the cached .debs (a copy of the cache, an unreachable mirror) --------
default_cache=${SPARKBENCH_LLAMA_CACHE:-$cache_home/sparkbench/llama-apt}
if [ -f "$default_cache/debs/manifest" ]; then
  mkdir -p "$tmp/offline-cache/debs"
  cp -p "$default_cache/debs/"* "$tmp/offline-cache/debs/"
  t0=$(now)
  if out=$(SPARKBENCH_LLAMA_CACHE=$tmp/offline-cache SPARKBENCH_LLAMA_MIRROR=http://127.0.0.1:9/debian \
           timeout 300 "$installer" --prefix "$tmp/offline/llama.cpp" --quiet 2>"$tmp/offline.log") \
     && [ "$out" = "$tmp/offline/llama.cpp/bin" ] && "$out/llama-server" --version >/dev/null 2>&1; then
    pass "offline build from cached .debs (unreachable mirror) in $(elapsed "$t0") s"
  else
    fail "offline build from cached .debs:"; sed 's/^/      /' "$tmp/offline.log"
  fi
  rm -rf -- "$tmp/offline" "$tmp/offline-cache"
else
  note "skip offline build: no $default_cache/debs/manifest"
fi

# --- (c) SIGKILL mid-rebuild ---------------------------------------------------------------
# Time one complete --force rebuild, then kill later ones at fractions of that time.
t0=$(now)
if timeout 600 "$installer" --prefix "$prefix" --force >/dev/null 2>"$tmp/force.log"; then
  tforce=$(elapsed "$t0")
  pass "--force rebuild (from cached .debs) in $tforce s"
else
  tforce=5
  fail "--force rebuild failed:"; sed 's/^/      /' "$tmp/force.log"
fi
prefix_ok "after --force" || true

kill_points=()
for frac in 0.05 0.15 0.3 0.45 0.6 0.75 0.85 0.95 0.98 1.0 1.03; do
  kill_points+=("$(awk -v t="$tforce" -v f="$frac" 'BEGIN { printf "%.2f", t * f }')")
done
kill_points+=(1 3)
for delay in "${kill_points[@]}"; do
  before=$(readlink "$prefix")
  : >"$tmp/kill.log"
  setsid "$installer" --prefix "$prefix" --force >/dev/null 2>"$tmp/kill.log" &
  bgpid=$!
  sid=$bgpid   # setsid: the installer leads its own session and process group
  sleep "$delay"
  if kill -0 "$bgpid" 2>/dev/null; then
    kill -KILL -- "-$bgpid" 2>/dev/null || kill -KILL "$bgpid" 2>/dev/null || true
    state="killed"
  else
    state="had already finished"
  fi
  wait "$bgpid" 2>/dev/null || true
  bgpid=""
  phase=$(grep -v '^ ' "$tmp/kill.log" | tail -n 1 | cut -c1-90)
  after=$(readlink "$prefix")
  if [ "$before" = "$after" ]; then flip="prefix unchanged"; else flip="prefix flipped to the new build"; fi
  note "kill after ${delay}s: $state; $flip; last progress: ${phase:-none}"
  survivors=""
  for _ in 1 2 3 4 5 6 7 8 9 10; do   # children of a killed group become zombies, then vanish
    survivors=$(ps -e -o sid=,pid=,stat=,comm= | awk -v s="$sid" '$1 == s && $3 !~ /^Z/')
    [ -n "$survivors" ] || break
    sleep 0.2
  done
  if [ -n "$survivors" ]; then fail "kill after ${delay}s: installer processes survived: $survivors"; fi
  prefix_ok "kill after ${delay}s" || true
done

# --- (d) a final run completes and cleans up -----------------------------------------------
t0=$(now)
if out=$(timeout 600 "$installer" --prefix "$prefix" --force 2>"$tmp/final.log") && [ "$out" = "$prefix/bin" ]; then
  pass "final --force run completes in $(elapsed "$t0") s"
else
  fail "final run failed:"; sed 's/^/      /' "$tmp/final.log"
fi
prefix_ok "after final run" || true
leftovers=$(find "$tmp" -maxdepth 1 -name '.llama.cpp*' ! -path "$(cd "$prefix" && pwd -P)" | wc -l)
if [ "$leftovers" = 0 ]; then pass "no leftover build folders or links"; else fail "$leftovers leftover build folders: $(ls -a "$tmp")"; fi
t0=$(now)
"$installer" --prefix "$prefix" >/dev/null 2>&1 || true
t3=$(elapsed "$t0")
if awk -v t="$t3" 'BEGIN { exit !(t < 2.0) }'; then pass "re-run after rebuild took $t3 s"; else fail "re-run after rebuild took $t3 s"; fi

# --- concurrent runs: the second waits for the lock, both succeed ---------------------------
"$installer" --prefix "$prefix" --force >"$tmp/c1.out" 2>"$tmp/c1.log" &
c1=$!
"$installer" --prefix "$prefix" --force >"$tmp/c2.out" 2>"$tmp/c2.log" &
c2=$!
rc1=0; wait "$c1" || rc1=$?
rc2=0; wait "$c2" || rc2=$?
if [ "$rc1" = 0 ] && [ "$rc2" = 0 ] && [ "$(cat "$tmp/c1.out")" = "$prefix/bin" ] && [ "$(cat "$tmp/c2.out")" = "$prefix/bin" ]; then
  pass "two concurrent --force runs both succeed (serialised by the lock)"
else
  fail "concurrent runs: rc $rc1/$rc2"; tail -n 5 "$tmp/c1.log" "$tmp/c2.log" | sed 's/^/      /'
fi
prefix_ok "after concurrent runs" || true
leftovers=$(find "$tmp" -maxdepth 1 -name '.llama.cpp*' ! -path "$(cd "$prefix" && pwd -P)" | wc -l)
if [ "$leftovers" = 0 ]; then pass "no leftovers after concurrent runs"; else fail "$leftovers leftovers after concurrent runs"; fi

# --- (e) a tiny bench ----------------------------------------------------------------------
if [ -f "$model" ]; then
  if jsonl=$(cd "$tmp" && timeout 120 "$prefix/bin/llama-bench" -m "$model" -t 1 -p 16 -n 8 -r 1 -o jsonl 2>"$tmp/bench.log"); then
    if [ "$(grep -c '"avg_ts"' <<<"$jsonl")" = 2 ] && grep -q '"n_prompt": 16' <<<"$jsonl" && grep -q '"n_gen": 8' <<<"$jsonl"; then
      pass "llama-bench tiny model: $(grep -o '"n_prompt": [0-9]*, "n_gen": [0-9]*\|"avg_ts": [0-9.]*' <<<"$jsonl" | paste -sd' ')"
    else
      fail "llama-bench jsonl unexpected: $jsonl"
    fi
  else
    fail "llama-bench on the tiny model failed:"; tail -n 5 "$tmp/bench.log" | sed 's/^/      /'
  fi
else
  note "skip tiny bench: $model not found"
fi

printf '%d passed, %d failed\n' "$passed" "$failed"
[ "$failed" = 0 ]
