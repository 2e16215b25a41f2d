#!/usr/bin/env bash
# test-install-llama.sh: end-to-end test of scripts/install-llama.sh in a temporary prefix.
#  (a) install, (b) an idempotent re-run must take < 2 s, (c) `--force` rebuilds are SIGKILLed
#  (whole process group) at several points and the previous prefix must still work after each,
#  (d) a final rebuild completes and prunes leftovers, (e) the binaries run a tiny llama-bench,
#  (f) --full adds the extra tools and the Vulkan/RPC backends (rebuilding the cpu prefix),
#  (g) a host library other than the Vulkan loader is refused, (h) a host without a Vulkan
#  loader still gets a working prefix.
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
# The sections below build a cpu prefix first and add the rest with --full; the installer's
# default (full) is checked in (f) by a run without this variable.
export SPARKBENCH_LLAMA_COMPONENTS=cpu

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

# --- (f) --full: extra tools, Vulkan and RPC backends ----------------------------------------
# The cpu prefix above lacks them, so the fast path must rebuild it (new .debs from the mirror
# once, the cached ones reused).
full_tools=(llama-server llama-bench llama-cli llama-completion llama-quantize llama-batched-bench
            llama-perplexity llama-imatrix llama-fit-params llama-gguf-split llama-tokenize ggml-rpc-server)
t0=$(now)
if out=$(timeout 600 "$installer" --prefix "$prefix" --full 2>"$tmp/full.log") && [ "$out" = "$prefix/bin" ]; then
  pass "--full on the cpu prefix rebuilds it in $(elapsed "$t0") s ($(grep -c 'building in' "$tmp/full.log") build)"
else
  fail "--full failed:"; sed 's/^/      /' "$tmp/full.log"
fi
real=$(cd "$prefix" && pwd -P)
vk_expected=0
if grep -q '^vulkan: included' "$prefix/VERSIONS.txt"; then vk_expected=1; fi
want_files=("${full_tools[@]}" libggml-rpc.so)
[ "$vk_expected" = 1 ] && want_files+=(libggml-vulkan.so)
missing=""
for f in "${want_files[@]}"; do [ -f "$prefix/bin/$f" ] || missing+=" $f"; done
if [ -z "$missing" ]; then pass "--full: bin/ holds ${#want_files[@]} tools and backends"; else fail "--full: missing in bin/:$missing"; fi
if command -v readelf >/dev/null 2>&1; then
  bad=""
  for f in "${want_files[@]}"; do
    [ -f "$prefix/bin/$f" ] || continue
    readelf -d "$prefix/bin/$f" | grep -q "(RPATH).*\[$real/lib\]" || bad+=" $f(rpath)"
    if [[ $f != lib* ]]; then
      readelf -l "$prefix/bin/$f" | grep -q "interpreter: $real/lib/ld-linux" || bad+=" $f(interpreter)"
    fi
  done
  if [ -z "$bad" ]; then pass "--full: every tool and backend is patched (RPATH, interpreter)"; else fail "--full: not patched:$bad"; fi
fi
bad=""
for t in "${full_tools[@]}"; do
  case "$t" in
    llama-quantize) args=(--help); want="usage: " ;;   # exits 1 on --help
    ggml-rpc-server) args=(--help); want="Usage: " ;;
    *) args=(--version); want="version: " ;;
  esac
  o=$(timeout 60 "$prefix/bin/$t" "${args[@]}" 2>&1 </dev/null) || [ "$t" = llama-quantize ] || bad+=" $t(rc)"
  [[ $o == *"$want"* ]] || bad+=" $t(output)"
done
if [ -z "$bad" ]; then pass "--full: each of ${#full_tools[@]} tools runs --version/--help"; else fail "--full: tools failing:$bad"; fi
bad=""
for p in llama.cpp-tools-extra libggml0-backend-vulkan libggml0-backend-rpc; do
  grep -q "^$p " "$prefix/VERSIONS.txt" || bad+=" $p"
done
for f in ggml-rpc-server llama-batched-bench libggml-rpc.so; do
  grep -q "  bin/$f\$" "$prefix/VERSIONS.txt" || bad+=" sha256:$f"
done
grep -q '^components: full$' "$prefix/VERSIONS.txt" || bad+=" components"
if [ -z "$bad" ]; then pass "--full: VERSIONS.txt lists the new packages, hashes and '$(grep '^vulkan:' "$prefix/VERSIONS.txt")'"; else fail "--full: VERSIONS.txt lacks:$bad"; fi
if lb=$("$prefix/bin/llama-bench" --help 2>&1) && grep -q "loaded RPC backend from $real/bin/" <<<"$lb"; then
  pass "--full: the RPC backend loads from bin/"
else
  fail "--full: no 'loaded RPC backend from $real/bin/'"
fi
if [ "$vk_expected" = 1 ] && compgen -G '/usr/share/vulkan/icd.d/lvp_icd.*.json' >/dev/null; then
  devs=$(GGML_VK_VISIBLE_DEVICES=0 timeout 60 "$prefix/bin/llama-bench" --list-devices 2>/dev/null || true)
  if grep -q '^  Vulkan0: ' <<<"$devs"; then
    pass "--full: with GGML_VK_VISIBLE_DEVICES=0 --list-devices shows $(grep -m1 '^  Vulkan0: ' <<<"$devs" | cut -c3-)"
  else
    fail "--full: no Vulkan0 with GGML_VK_VISIBLE_DEVICES=0: $devs"
  fi
else
  note "skip Vulkan device check: no Vulkan backend or no Mesa lavapipe driver (scripts/setup-system.sh installs libvulkan1 mesa-vulkan-drivers)"
fi
t0=$(now)
out=$("$installer" --prefix "$prefix" --full 2>"$tmp/full2.log") || true
t4=$(elapsed "$t0")
if [ "$out" = "$prefix/bin" ] && [ ! -s "$tmp/full2.log" ] && awk -v t="$t4" 'BEGIN { exit !(t < 2.0) }'; then
  pass "--full re-run takes the fast path ($t4 s, stderr empty)"
else
  fail "--full re-run: $t4 s, stderr: $(head -c 300 "$tmp/full2.log")"
fi
t0=$(now)
out=$("$installer" --prefix "$prefix" 2>"$tmp/full3.log") || true
if [ "$out" = "$prefix/bin" ] && [ ! -s "$tmp/full3.log" ] && [ -f "$prefix/bin/libggml-rpc.so" ]; then
  pass "a plain (cpu) run keeps the full prefix ($(elapsed "$t0") s)"
else
  fail "a plain run after --full rebuilt or failed: $(head -c 300 "$tmp/full3.log")"
fi
# the default is full: a run with no option and no SPARKBENCH_LLAMA_COMPONENTS takes the full
# prefix's fast path, and --help says so
out=$(env -u SPARKBENCH_LLAMA_COMPONENTS "$installer" --prefix "$prefix" 2>"$tmp/full4.log") || true
if [ "$out" = "$prefix/bin" ] && [ ! -s "$tmp/full4.log" ] \
   && env -u SPARKBENCH_LLAMA_COMPONENTS "$installer" --help 2>/dev/null | grep -q -- '--full .*the default'; then
  pass "the default components are full (fast path on the full prefix; --help says so)"
else
  fail "default components: out '$out', stderr: $(head -c 300 "$tmp/full4.log")"
fi

# --- (g) a foreign host library is still refused ------------------------------------------------
# A fake sid package whose library needs the host's libvulkan.so.1 (accepted only for
# libggml-vulkan.so) and another host library; built from a copy of the cache, offline.
triplet=$(gcc -print-multiarch 2>/dev/null || true)
if command -v gcc >/dev/null 2>&1 && [ -n "$triplet" ] && [ -f "$default_cache/debs/manifest" ]; then
  fk=$tmp/foreign
  mkdir -p "$fk/pkg/DEBIAN" "$fk/pkg/usr/lib/$triplet" "$fk/cache/debs"
  hostlibs=()
  for l in libvulkan.so.1 libxcb.so.1 libexpat.so.1; do
    for d in "/usr/lib/$triplet" "/lib/$triplet"; do
      if [ -e "$d/$l" ]; then hostlibs+=("$d/$l"); break; fi
    done
  done
  echo 'int sb_foreign(void) { return 1; }' >"$fk/f.c"
  if [ ${#hostlibs[@]} -gt 0 ] \
     && gcc -shared -fPIC -o "$fk/pkg/usr/lib/$triplet/libsbforeign.so.1" -Wl,-soname,libsbforeign.so.1 \
          -Wl,--no-as-needed "$fk/f.c" "${hostlibs[@]}" 2>"$tmp/gcc.log"; then
    printf 'Package: sparkbench-test-foreign\nVersion: 1\nArchitecture: %s\nMaintainer: test <t@example.invalid>\nSection: libs\nDescription: test\n' \
      "$(dpkg --print-architecture)" >"$fk/pkg/DEBIAN/control"
    dpkg-deb -b "$fk/pkg" "$fk/cache/debs/sparkbench-test-foreign_1.deb" >/dev/null 2>&1
    cp -p "$default_cache/debs/"* "$fk/cache/debs/"
    printf 'sparkbench-test-foreign 1 %s sparkbench-test-foreign_1.deb\n' \
      "$(sha256sum <"$fk/cache/debs/sparkbench-test-foreign_1.deb" | cut -d' ' -f1)" >>"$fk/cache/debs/manifest"
    rc=0
    out=$(SPARKBENCH_LLAMA_CACHE=$fk/cache SPARKBENCH_LLAMA_MIRROR=http://127.0.0.1:9/debian \
          SPARKBENCH_LLAMA_EXTRA_PACKAGES=sparkbench-test-foreign \
          timeout 300 "$installer" --prefix "$fk/llama.cpp" --full 2>"$tmp/foreign.log") || rc=$?
    bad=""
    for l in "${hostlibs[@]}"; do
      grep -q "$(basename "$l") (needed by libsbforeign.so.1, found only on the host" "$tmp/foreign.log" || bad+=" $(basename "$l")"
    done
    if [ "$rc" != 0 ] && [ -z "$out" ] && [ -z "$bad" ] && [ ! -e "$fk/llama.cpp" ]; then
      pass "host libraries refused for a non-Vulkan library: $(for l in "${hostlibs[@]}"; do printf '%s ' "$(basename "$l")"; done)(rc $rc, no prefix)"
    else
      fail "foreign host library: rc $rc, stdout '$out', not named:$bad"; grep -v '^ *$' "$tmp/foreign.log" | tail -n 8 | sed 's/^/      /'
    fi
  else
    note "skip foreign-library check: could not build the test library ($(head -c 200 "$tmp/gcc.log"))"
  fi
  rm -rf -- "$fk"
else
  note "skip foreign-library check: needs gcc and $default_cache/debs/manifest"
fi

# --- (h) a host without a Vulkan loader still gets a working prefix ------------------------------
# Simulated in a private mount namespace (root only): the loader is replaced by a 32-bit ELF
# (skipped by ld.so) and ld.so.cache rebuilt without it.
vklib=$(readlink -f "/usr/lib/$triplet/libvulkan.so.1" 2>/dev/null || true)
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1 && [ -n "$triplet" ] && [ -f "$vklib" ] \
   && unshare -m true 2>/dev/null; then
  nv=$tmp/novk
  mkdir -p "$nv"
  cp "$vklib" "$nv/vk32" && printf '\001' | dd of="$nv/vk32" bs=1 seek=4 conv=notrunc 2>/dev/null
  rc=0
  unshare -m bash -c '
    set -e
    mount --bind "$1/vk32" "$2"
    ldconfig -C "$1/ld.so.cache"
    mount --bind "$1/ld.so.cache" /etc/ld.so.cache
    out=$(timeout 300 "$3" --prefix "$1/llama.cpp" --full 2>"$1/build.log")
    [ "$out" = "$1/llama.cpp/bin" ]
    grep "^vulkan: left out" "$1/llama.cpp/VERSIONS.txt" >"$1/status"
    [ ! -e "$1/llama.cpp/bin/libggml-vulkan.so" ]
    "$1/llama.cpp/bin/llama-bench" --help >/dev/null 2>&1
    t0=$(date +%s%N); "$3" --prefix "$1/llama.cpp" --full >/dev/null 2>"$1/rerun.log"; t1=$(date +%s%N)
    [ ! -s "$1/rerun.log" ] && [ $(( (t1 - t0) / 1000000 )) -lt 2000 ]
  ' _ "$nv" "$vklib" "$installer" >"$nv/ns.log" 2>&1 || rc=$?
  if [ "$rc" = 0 ]; then
    pass "no Vulkan loader: a working CPU+RPC prefix, Vulkan left out, re-run takes the fast path"
  else
    fail "no Vulkan loader (rc $rc):"; cat "$nv/ns.log" "$nv/build.log" "$nv/rerun.log" 2>/dev/null | tail -n 10 | sed 's/^/      /'
  fi
  if [ "$rc" = 0 ] && out=$(timeout 300 "$installer" --prefix "$nv/llama.cpp" --full 2>/dev/null) \
     && [ -f "$out/libggml-vulkan.so" ]; then
    pass "the loader back: the next run rebuilds with the Vulkan backend"
  elif [ "$rc" = 0 ]; then
    fail "the loader back: the Vulkan backend was not added"
  fi
  rm -rf -- "$nv"
else
  note "skip no-Vulkan-loader check: needs root, unshare -m and the host's libvulkan.so.1"
fi

printf '%d passed, %d failed\n' "$passed" "$failed"
[ "$failed" = 0 ]
