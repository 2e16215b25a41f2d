#!/usr/bin/env bash
# install-llama.sh: builds a self-contained llama.cpp prefix from Debian sid binary packages
# (the recipe in docs/install-llama.md), without touching the system's apt configuration.
#
# stdout carries exactly one line, the binaries folder (PREFIX/bin), so that
#   bin=$(scripts/install-llama.sh)
# works; all progress and errors go to stderr. Run with --help for options.
set -euo pipefail

prog=install-llama
# Keep the real stdout on fd 3 for the final answer; everything else goes to stderr.
exec 3>&1 1>&2

usage() {
  cat <<'EOF'
Usage: scripts/install-llama.sh [--prefix DIR] [--full|--cpu] [--force] [--upgrade] [--quiet] [--help]

Builds (once) a self-contained llama.cpp prefix from Debian sid binary packages
(llama.cpp-tools, libllama0, libggml0 and sid's runtime libraries), patched to run
on this machine, and prints its binaries folder (PREFIX/bin) as the only line on stdout.
If a working prefix already exists it just prints the folder.

By default (--full) the prefix also holds llama.cpp-tools-extra (llama-batched-bench,
llama-perplexity, llama-imatrix, llama-fit-params, llama-gguf-split, llama-tokenize,
ggml-rpc-server) and the ggml Vulkan and RPC backends; a prefix that lacks one of them is
rebuilt. The Vulkan loader and drivers are the host's (libvulkan1, mesa-vulkan-drivers:
scripts/setup-system.sh); without libvulkan.so.1 the Vulkan backend is left out and the
prefix still works on the CPU. With the Vulkan backend loaded, llama-bench's "backends"
field says "Vulkan" even for a run that used no Vulkan device: sparkbench reads where a
row ran from its gpu_info and n_gpu_layers instead (docs/install-llama.md).
With --cpu the prefix holds the CPU tools only (llama.cpp-tools, libllama0, libggml0).

Options:
  --prefix DIR   where the prefix goes (default: $SPARKBENCH_LLAMA_PREFIX, else
                 ${XDG_CACHE_HOME:-$HOME/.cache}/sparkbench/llama.cpp). PREFIX becomes a
                 symlink to a versioned sibling directory .<name>-<stamp>.
  --full         the extra tools and the Vulkan and RPC backends (the default; env
                 SPARKBENCH_LLAMA_COMPONENTS=full does the same)
  --cpu          the CPU tools only (env SPARKBENCH_LLAMA_COMPONENTS=cpu does the same)
  --force        rebuild even if the prefix works (from the cached .debs: no network,
                 unless the cache lacks a package)
  --upgrade      refresh the sid package lists, download the newest .debs and rebuild
  --quiet        print only errors on stderr
  --help         show this help

Environment:
  SPARKBENCH_LLAMA_PREFIX   default for --prefix
  SPARKBENCH_LLAMA_COMPONENTS  full (default, as --full) or cpu (as --cpu)
  SPARKBENCH_LLAMA_CACHE    private apt state and .deb cache
                            (default ${XDG_CACHE_HOME:-$HOME/.cache}/sparkbench/llama-apt)
  SPARKBENCH_LLAMA_MIRROR   Debian mirror URL (default: the machine's own Debian mirror
                            from /etc/apt/sources.list*, else http://deb.debian.org/debian)
  SPARKBENCH_LLAMA_EXTRA_PACKAGES  extra sid packages to add to the prefix (space separated)
EOF
}

quiet=0
components=${SPARKBENCH_LLAMA_COMPONENTS:-full}
force=0
upgrade=0
prefix_arg=""
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || { echo "$prog: --prefix needs a directory" >&2; exit 2; }
              prefix_arg=$2; shift 2 ;;
    --prefix=*) prefix_arg=${1#--prefix=}; shift ;;
    --full) components=full; shift ;;
    --cpu) components=cpu; shift ;;
    --force) force=1; shift ;;
    --upgrade) upgrade=1; shift ;;
    --quiet|-q) quiet=1; shift ;;
    --help|-h) usage >&3; exit 0 ;;
    *) echo "$prog: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

say() { [ "$quiet" = 1 ] || printf '%s: %s\n' "$prog" "$*" >&2; }
die() { printf '%s: error: %s\n' "$prog" "$*" >&2; exit 1; }

cache_home=${XDG_CACHE_HOME:-${HOME:?HOME is not set}/.cache}
prefix=${prefix_arg:-${SPARKBENCH_LLAMA_PREFIX:-$cache_home/sparkbench/llama.cpp}}
cache=${SPARKBENCH_LLAMA_CACHE:-$cache_home/sparkbench/llama-apt}
suite=sid
case "$components" in cpu|full) ;; *) die "SPARKBENCH_LLAMA_COMPONENTS must be cpu or full, not '$components'" ;; esac
roots=(llama.cpp-tools libllama0 libggml0)
# the packages only --full uses (a cpu build from a full cache leaves them packed)
full_only_re='^(llama\.cpp-tools-extra|libggml0-backend-vulkan|libggml0-backend-rpc)$'
[ "$components" = cpu ] || roots+=(llama.cpp-tools-extra libggml0-backend-vulkan libggml0-backend-rpc)
# shellcheck disable=SC2206  # word splitting is intended
extra_pkgs=(${SPARKBENCH_LLAMA_EXTRA_PACKAGES:-})
# Library packages that the dependency walk skips: not needed by the tools, or the host's
# (libvulkan1: the Vulkan loader, like the GPU drivers it loads, must be the host's own).
exclude_re='^(libc-gconv-modules-extra|libc-l10n|libc-bin|gcc-[0-9]+-base|libvulkan1)$'
# What every complete prefix holds (an older prefix without one of them is rebuilt).
# ggml-rpc-server comes from usr/libexec/<triplet>/llama/bin/ and goes to bin/ as well.
required_tools=(llama-server llama-bench)
required_backends=()
if [ "$components" = full ]; then
  required_tools+=(llama-cli llama-completion llama-quantize
                   llama-batched-bench llama-perplexity llama-imatrix llama-fit-params
                   llama-gguf-split llama-tokenize ggml-rpc-server)
  required_backends+=(libggml-rpc.so)   # in bin/, next to the CPU backends
fi
# The only host library the prefix may use: the Vulkan loader, needed by libggml-vulkan.so
# (the Mesa/GPU drivers it dlopens at run time are the host's too, and invisible to ldd).
host_lib_ok_re='^libvulkan\.so\.1 libggml-vulkan\.so$'

# Absolute, lexically clean prefix path (the prefix itself may be a symlink: do not resolve it).
case "$prefix" in /*) ;; *) prefix=$PWD/$prefix ;; esac
prefix=${prefix%/}
[ -n "$prefix" ] || die "the prefix cannot be /"
parent_in=$(dirname -- "$prefix")
base=$(basename -- "$prefix")
case "$base" in .|..|'') die "bad prefix '$prefix'" ;; esac

arch=$(dpkg --print-architecture 2>/dev/null || echo unknown)
case "$arch" in
  amd64) triplet=x86_64-linux-gnu; ldso=ld-linux-x86-64.so.2; ldconfig_tag=x86-64 ;;
  arm64) triplet=aarch64-linux-gnu; ldso=ld-linux-aarch64.so.1; ldconfig_tag=AArch64 ;;
  *) die "unsupported architecture '$arch' (this recipe knows amd64 and arm64); use your own llama.cpp build's bin folder instead" ;;
esac

# Does the host's dynamic loader know a Vulkan loader (libvulkan.so.1) of this architecture?
# (ld.so.cache, which the prefix's own ld.so reads too; without ldconfig, the standard folders)
host_has_vulkan_loader() {
  local c d
  for c in /sbin/ldconfig /usr/sbin/ldconfig ldconfig; do
    if command -v "$c" >/dev/null 2>&1; then
      "$c" -p 2>/dev/null | grep -q "^[[:space:]]*libvulkan\.so\.1 (.*$ldconfig_tag.*) =>"
      return
    fi
  done
  for d in "/usr/lib/$triplet" "/lib/$triplet" /usr/lib64 /lib64 /usr/lib /lib; do
    [ -e "$d/libvulkan.so.1" ] && return 0
  done
  return 1
}

# --- fast path: a working prefix --------------------------------------------------------
prefix_works() {
  local p=$1 t
  [ -f "$p/VERSIONS.txt" ] && [ -e "$p/lib/$ldso" ] || return 1
  for t in "${required_tools[@]}"; do [ -x "$p/bin/$t" ] || return 1; done
  for t in "${required_backends[@]}"; do [ -f "$p/bin/$t" ] || return 1; done
  if [ "$components" = full ]; then
  # the Vulkan backend: present, or left out because the host had no Vulkan loader and
  # still has none (a host that gained libvulkan1 since gets it; one that lost it, a rebuild)
  if [ -f "$p/bin/libggml-vulkan.so" ]; then
    host_has_vulkan_loader || return 1
  else
    grep -q '^vulkan: left out' "$p/VERSIONS.txt" && ! host_has_vulkan_loader || return 1
  fi
  fi
  local out
  out=$(env -u LD_PRELOAD -u LD_LIBRARY_PATH "$p/bin/llama-server" --version 2>&1 </dev/null) || return 1
  case "$out" in *"version: "*) return 0 ;; *) return 1 ;; esac
}

finish() {
  printf '%s\n' "$prefix/bin" >&3
  exit 0
}

if [ "$force" = 0 ] && [ "$upgrade" = 0 ] && prefix_works "$prefix"; then
  finish
fi

# --- preconditions -------------------------------------------------------------------------
missing=()
for t in apt-get apt-cache dpkg-deb patchelf flock sha256sum find; do
  command -v "$t" >/dev/null 2>&1 || missing+=("$t")
done
[ ${#missing[@]} -eq 0 ] || die "missing tools: ${missing[*]}; run scripts/setup-system.sh (or: apt-get install patchelf util-linux apt dpkg coreutils findutils)"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$keyring" ] || die "$keyring not found; install the debian-archive-keyring package (scripts/setup-system.sh)"

mkdir -p "$cache" "$parent_in" || die "cannot create $cache or $parent_in"
parent=$(cd "$parent_in" && pwd -P)
prefix_real_parent_prefix=$parent/$base   # canonical location of the prefix symlink

log=$cache/last-run.log
run() {  # run a command with its output in the log; on failure show the log tail
  if ! "$@" >>"$log" 2>&1; then
    local shown=() skip=0 a
    for a in "$@"; do   # leave out the private apt "-o key=value" options
      if [ "$skip" = 1 ]; then skip=0; continue; fi
      if [ "$a" = -o ]; then skip=1; continue; fi
      shown+=("$a")
    done
    echo "$prog: error: command failed: ${shown[*]}" >&2
    tail -n 15 "$log" | sed 's/^/    /' >&2
    echo "$prog: full log: $log" >&2
    return 1
  fi
}

# --- lock --------------------------------------------------------------------------------
exec 9>"$cache/lock"
if ! flock -n 9; then
  say "another install-llama run holds $cache/lock; waiting (up to 15 min)"
  flock -w 900 9 || die "timed out waiting for $cache/lock (another install-llama run is stuck?)"
fi
if [ "$force" = 0 ] && [ "$upgrade" = 0 ] && prefix_works "$prefix"; then
  finish   # another run built it while we waited
fi
: >"$log" || die "cannot write $log"

build=""
swapped=0
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  if [ "$swapped" = 0 ] && [ -n "$build" ] && [ -d "$build" ]; then rm -rf -- "$build"; fi
  rm -rf -- "$cache/debs/.dl."* 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- private apt configuration ------------------------------------------------------------
detect_mirror() {
  local codename="" f
  # shellcheck source=/dev/null
  codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}") || true
  local files=()
  [ -f /etc/apt/sources.list ] && files+=(/etc/apt/sources.list)
  for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && files+=("$f")
  done
  [ ${#files[@]} -gt 0 ] || return 0
  # Print "uri suite" pairs for every enabled deb entry, one-line and deb822 formats alike.
  awk '
    function flush() {
      if (inst && enabled && types ~ /(^| )deb( |$)/) {
        nu = split(uris, U, /[ \t]+/); ns = split(suites, S, /[ \t]+/)
        for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++) if (U[i] != "" && S[j] != "") print U[i], S[j]
      }
      inst = 0; enabled = 1; types = ""; uris = ""; suites = ""
    }
    FNR == 1 { flush(); deb822 = (FILENAME ~ /\.sources$/) }
    deb822 {
      if ($0 ~ /^[ \t]*$/) { flush(); next }
      if ($0 ~ /^[ \t]*#/) next
      if ($0 !~ /^[A-Za-z0-9-]+:/) next          # continuation lines carry nothing we need
      k = $0; sub(/:.*/, "", k); k = tolower(k)
      v = $0; sub(/^[^:]*:[ \t]*/, "", v); sub(/[ \t]+$/, "", v)
      inst = 1
      if (k == "types") types = v
      else if (k == "uris") uris = v
      else if (k == "suites") suites = v
      else if (k == "enabled") enabled = (tolower(v) !~ /^no/)
      next
    }
    {
      line = $0; sub(/#.*/, "", line)
      n = split(line, F, /[ \t]+/); i = 1
      while (i <= n && F[i] == "") i++
      if (F[i] != "deb") next
      i++
      if (F[i] ~ /^\[/) { while (i <= n && F[i] !~ /\]$/) i++; i++ }
      if (i + 1 <= n) print F[i], F[i + 1]
    }
    END { flush() }
  ' "${files[@]}" 2>/dev/null | awk -v cn="$codename" '
    # The machine'\''s main Debian archive: the entry whose suite is the release codename
    # itself (not -security/-updates, not third-party "nodistro" or "cloud-sdk-bookworm").
    cn != "" && $2 == cn { print $1; exit }
  '
}

mirror=${SPARKBENCH_LLAMA_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(detect_mirror || true)
  mirror=${mirror:-http://deb.debian.org/debian}
fi
mirror=${mirror%/}

A=$cache/apt
mkdir -p "$A/etc" "$A/lists/partial" "$A/archives/partial" "$A/state" "$cache/debs"
printf 'deb [signed-by=%s] %s %s main\n' "$keyring" "$mirror" "$suite" >"$A/etc/sources.list.new"
if ! cmp -s "$A/etc/sources.list.new" "$A/etc/sources.list" 2>/dev/null; then
  mv -f "$A/etc/sources.list.new" "$A/etc/sources.list"
  rm -f "$A/lists/"*_Packages* "$A/lists/"*Release* 2>/dev/null || true   # mirror changed
else
  rm -f "$A/etc/sources.list.new"
fi
[ -f "$A/state/status" ] || : >"$A/state/status"

aptopts=(
  -o "Dir::Etc::SourceList=$A/etc/sources.list"
  -o "Dir::Etc::SourceParts=/dev/null"
  -o "Dir::Etc::Preferences=/dev/null"
  -o "Dir::Etc::PreferencesParts=/dev/null"
  -o "Dir::State=$A/state"
  -o "Dir::State::Lists=$A/lists"
  -o "Dir::State::status=$A/state/status"
  -o "Dir::Cache=$A"
  -o "Dir::Cache::Archives=$A/archives"
  -o "APT::Architecture=$arch"
  -o "APT::Architectures=$arch"
  -o "Acquire::Languages=none"
  -o "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false"
  -o "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false"
  -o "Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false"
  -o "Acquire::IndexTargets::deb::DEP-11-icons-hidpi::DefaultEnabled=false"
  -o "Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled=false"
  -o "APT::Get::List-Cleanup=true"
)
if [ "$(id -u)" = 0 ]; then
  aptopts+=(-o "APT::Sandbox::User=root")   # _apt cannot write into root's cache folder
fi

apt_update() {
  say "refreshing Debian $suite package lists from $mirror"
  run apt-get "${aptopts[@]}" -q --error-on=any update \
    || die "apt-get update against $mirror ($suite) failed; check the network, or set SPARKBENCH_LLAMA_MIRROR (log: $log)"
}
have_lists() { compgen -G "$A/lists/*_Packages*" >/dev/null; }

# Walk Depends/PreDepends from the roots, following only shared-library packages (Section
# libs, or named lib*), skipping alternatives (wget|curl), virtual packages and $exclude_re.
resolve_set() {
  local -A seen=()
  local frontier=("${roots[@]}" "${extra_pkgs[@]}") cand out p line alt
  local result=()
  for p in "${frontier[@]}"; do seen[$p]=1; result+=("$p"); done
  while [ ${#frontier[@]} -gt 0 ]; do
    out=$(apt-cache "${aptopts[@]}" depends --no-recommends --no-suggests --no-conflicts \
          --no-breaks --no-replaces --no-enhances "${frontier[@]}" 2>>"$log") \
      || die "apt-cache cannot resolve ${frontier[*]} in Debian $suite (mirror $mirror); try --upgrade (log: $log)"
    cand=()
    alt=0
    while IFS= read -r line; do
      case "$line" in
        " |"*) alt=1; continue ;;          # first member of an alternative group
        "  Depends: "*|"  PreDepends: "*)
          if [ "$alt" = 1 ]; then alt=0; continue; fi   # last member of the group
          p=${line#*: } ;;
        *) continue ;;
      esac
      case "$p" in "<"*) continue ;; esac
      [[ $p =~ $exclude_re ]] && continue
      [ -n "${seen[$p]:-}" ] && continue
      seen[$p]=1; cand+=("$p")
    done <<<"$out"
    frontier=()
    [ ${#cand[@]} -gt 0 ] || break
    # keep the library packages among the candidates
    while read -r p; do
      [ -n "$p" ] || continue
      result+=("$p"); frontier+=("$p")
    done < <(apt-cache "${aptopts[@]}" show --no-all-versions "${cand[@]}" 2>>"$log" | awk '
      /^Package: / { pkg = $2 }
      /^Section: / { sec = $2 }
      /^$/ { if (pkg != "" && (sec ~ /(^|\/)libs$/ || pkg ~ /^lib/)) print pkg; pkg = ""; sec = "" }
      END { if (pkg != "" && (sec ~ /(^|\/)libs$/ || pkg ~ /^lib/)) print pkg }' | sort -u)
  done
  printf '%s\n' "${result[@]}"
}

# manifest format: one line per package: NAME VERSION SHA256 FILE (FILE relative to debs/)
# manifest_ok M: every .deb of M is cached with its SHA-256, and M holds every root package
# (a manifest from before a package joined the roots is incomplete: its set is fetched anew).
manifest_ok() {
  local m=$1 file n=0 p
  [ -s "$m" ] || return 1
  while read -r _ _ _ file; do
    [ -n "$file" ] && [ -f "$cache/debs/$file" ] || return 1
    n=$((n + 1))
  done <"$m"
  [ "$n" -gt 0 ] || return 1
  for p in "${roots[@]}" "${extra_pkgs[@]}"; do
    awk -v p="$p" '$1 == p { found = 1 } END { exit !found }' "$m" || return 1
  done
  (cd "$cache/debs" && awk '{print $3 "  " $4}' "$m" | sha256sum --quiet -c - >/dev/null 2>&1)
}

# download_set OUT: resolve the package set in the current lists and write its manifest to
# OUT. A package whose listed version is already cached (same name and version in the current
# manifest, .deb present with its SHA-256) is reused; only the others are downloaded.
download_set() {
  local out=$1 dl pkgs=() f resolved fetch=() p v line
  resolved=$(resolve_set) || exit 1   # resolve_set has said why
  mapfile -t pkgs <<<"$resolved"
  local -A want=()
  while read -r p v; do
    [ -n "$p" ] && want[$p]=$v
  done < <(apt-cache "${aptopts[@]}" show --no-all-versions "${pkgs[@]}" 2>>"$log" \
             | awk '/^Package: / { p = $2 } /^Version: / { print p, $2 }')
  : >"$out.tmp"
  for p in "${pkgs[@]}"; do
    line=""
    if [ -n "${want[$p]:-}" ] && [ -f "$manifest" ]; then
      line=$(awk -v p="$p" -v v="${want[$p]}" '$1 == p && $2 == v { print; exit }' "$manifest")
    fi
    if [ -n "$line" ] && [ -f "$cache/debs/${line##* }" ] \
       && [ "$(sha256sum <"$cache/debs/${line##* }" | cut -d' ' -f1)" = "$(cut -d' ' -f3 <<<"$line")" ]; then
      printf '%s\n' "$line" >>"$out.tmp"
    else
      fetch+=("$p")
    fi
  done
  if [ ${#fetch[@]} -eq 0 ]; then
    say "all ${#pkgs[@]} sid packages are cached at their listed versions"
    sort -o "$out" "$out.tmp" && rm -f "$out.tmp"
    return 0
  fi
  say "downloading ${#fetch[@]} of ${#pkgs[@]} sid packages: ${fetch[*]}"
  dl=$(mktemp -d "$cache/debs/.dl.XXXXXX")
  if ! (cd "$dl" && run apt-get "${aptopts[@]}" -q download "${fetch[@]}"); then
    rm -rf -- "$dl"
    return 1
  fi
  for f in "$dl"/*.deb; do
    [ -f "$f" ] || continue
    printf '%s %s %s %s\n' "$(dpkg-deb -f "$f" Package)" "$(dpkg-deb -f "$f" Version)" \
      "$(sha256sum <"$f" | cut -d' ' -f1)" "$(basename "$f")" >>"$out.tmp"
    mv -f "$f" "$cache/debs/"
  done
  rm -rf -- "$dl"
  [ "$(wc -l <"$out.tmp")" -eq ${#pkgs[@]} ] \
    || die "apt-get download fetched $(wc -l <"$out.tmp") of ${#pkgs[@]} packages (log: $log)"
  sort -o "$out" "$out.tmp" && rm -f "$out.tmp"
}

manifest=$cache/debs/manifest
use_manifest=$manifest
if [ "$upgrade" = 1 ]; then
  apt_update
  use_manifest=$cache/debs/manifest.new
  download_set "$use_manifest" || die "download failed (log: $log)"
elif manifest_ok "$manifest"; then
  say "using cached .debs ($(wc -l <"$manifest") packages, no network)"
else
  use_manifest=$cache/debs/manifest.new
  have_lists || apt_update
  if ! download_set "$use_manifest"; then
    say "download failed with the cached lists; refreshing them and retrying"
    apt_update
    download_set "$use_manifest" || die "apt-get download failed; check the network (log: $log)"
  fi
fi
manifest_ok "$use_manifest" || die "the downloaded .debs do not match $use_manifest"

# --- assemble ---------------------------------------------------------------------------
stamp=$(date -u +%Y%m%dT%H%M%SZ)
build=$(mktemp -d "$parent/.$base-$stamp.XXXX") || die "cannot create a build directory in $parent"
chmod 755 "$build"
printf '%s\n' "$prefix_real_parent_prefix" >"$build/.sparkbench-llama-build"
stage=$build/.stage
mkdir -p "$stage" "$build/bin" "$build/lib"
say "building in $build"
# the manifest lines this build uses (a cpu build from a full cache leaves out $full_only_re)
if [ "$components" = full ]; then
  cp "$use_manifest" "$build/.manifest"
else
  awk -v re="$full_only_re" '$1 !~ re' "$use_manifest" >"$build/.manifest"
fi
while read -r _ _ _ file; do
  run dpkg-deb -x "$cache/debs/$file" "$stage" || die "cannot unpack $file"
done <"$build/.manifest"

# tools: every llama-* of llama.cpp-tools and llama.cpp-tools-extra, and the RPC server that
# tools-extra keeps in usr/libexec/<triplet>/llama/bin/
n_tools=0
for f in "$stage/usr/bin/"llama-* "$stage/usr/libexec/$triplet/llama/bin/"*; do
  [ -f "$f" ] || continue
  [ -e "$build/bin/$(basename "$f")" ] && continue
  cp -p "$f" "$build/bin/" && n_tools=$((n_tools + 1))
done
[ "$n_tools" -gt 0 ] || die "no llama-* tools found in the llama.cpp-tools package"
for t in "${required_tools[@]}"; do
  [ -f "$build/bin/$t" ] || die "$t is missing from the sid packages (llama.cpp-tools, llama.cpp-tools-extra)"
done

# libraries: flatten every *.so* (files and same-folder symlinks) into lib/
for d in "$stage/usr/lib/$triplet" "$stage/lib/$triplet" "$stage/usr/lib/$triplet/llama" \
         "$stage/usr/lib/llama" "$stage/usr/lib64" "$stage/lib64"; do
  [ -d "$d" ] || continue
  while IFS= read -r -d '' f; do
    name=$(basename "$f")
    if [ -e "$build/lib/$name" ] || [ -L "$build/lib/$name" ]; then continue; fi
    if [ -L "$f" ] && [[ $(readlink "$f") != */* ]]; then
      cp -P "$f" "$build/lib/"
    else
      cp -L "$f" "$build/lib/$name"
    fi
  done < <(find "$d" -maxdepth 1 \( -type f -o -type l \) -name '*.so*' -print0)
done
[ -f "$build/lib/$ldso" ] || die "$ldso is missing from sid's libc6 package"

# ggml backends next to the executables (ggml searches the executable's folder): the CPU
# variants (libggml-cpu-*.so), Vulkan (libggml-vulkan.so) and RPC (libggml-rpc.so)
n_backends=0
while IFS= read -r -d '' f; do
  cp -p "$f" "$build/bin/" && n_backends=$((n_backends + 1))
done < <(find "$stage/usr/lib/$triplet/ggml" "$stage/usr/lib/ggml" -name 'libggml-*.so' -print0 2>/dev/null)
compgen -G "$build/bin/libggml-cpu-*.so" >/dev/null || die "no ggml CPU backend (libggml-cpu-*.so) found in libggml0"
vk=(); [ "$components" = cpu ] || vk=(libggml-vulkan.so)
for t in "${required_backends[@]}" "${vk[@]}"; do
  [ -f "$build/bin/$t" ] || die "$t is missing from the sid packages (libggml0-backend-*)"
done
rm -rf -- "$stage"

# patchelf: interpreter on executables, RPATH (not RUNPATH) on every ELF, all pointing at
# this build's own final directory (the prefix symlink will point here).
is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }
n_elf=0
for f in "$build/bin/"* "$build/lib/"*; do
  if [ ! -f "$f" ] || [ -L "$f" ] || ! is_elf "$f"; then continue; fi
  [ "$(basename "$f")" = "$ldso" ] && continue
  [ -w "$f" ] || chmod u+w "$f"
  if [[ $f == "$build/bin/"* ]] && patchelf --print-interpreter "$f" >/dev/null 2>&1; then
    # an executable (the tools and ggml-rpc-server; the backends in bin/ have no interpreter)
    run patchelf --set-interpreter "$build/lib/$ldso" "$f" || die "patchelf --set-interpreter failed on $f"
  fi
  run patchelf --force-rpath --set-rpath "$build/lib" "$f" || die "patchelf --set-rpath failed on $f"
  n_elf=$((n_elf + 1))
done
say "patched $n_elf ELF files ($n_tools tools, $n_backends ggml backends)"

# list_libs FILE: "SONAME FILE PATH" for each library FILE needs, as the prefix's own loader
# resolves it (ld.so --list, i.e. ldd); PATH is "not-found" when it cannot.
list_libs() {
  { env -u LD_PRELOAD -u LD_LIBRARY_PATH "$build/lib/$ldso" --list "$1" 2>&1 || true; } \
    | awk -v f="$(basename "$1")" '/=>/ { print $1, f, (/not found/ ? "not-found" : $3) }'
}

# The Vulkan backend needs the host's Vulkan loader; without one it is left out (ggml would
# only fail to load it) and the prefix is a CPU prefix. Found, the loader is the one host
# library accepted below; the drivers (ICDs) it loads at run time are not ldd's business.
vk_loader=""
if [ "$components" = cpu ]; then
  vulkan_status="not built (cpu components; --full adds it)"
elif vk_loader=$(list_libs "$build/bin/libggml-vulkan.so" | awk '$1 == "libvulkan.so.1" { print $3 }') \
     && { [ "$vk_loader" = not-found ] || [ -z "$vk_loader" ]; }; then
  rm -f -- "$build/bin/libggml-vulkan.so"
  vulkan_status="left out (no libvulkan.so.1 on the host; scripts/setup-system.sh installs libvulkan1 mesa-vulkan-drivers)"
  say "no Vulkan loader (libvulkan.so.1) on this host: the Vulkan backend is left out (CPU and RPC only); run scripts/setup-system.sh, then this script again"
else
  vulkan_status="included (Vulkan loader: $vk_loader)"
fi

# every library resolvable inside the prefix? (the prefix's own loader in ldd mode; a library
# found outside PREFIX/lib would mix in the host's copy, so it counts as unresolved too; the
# one exception is $host_lib_ok_re: the Vulkan loader, for the Vulkan backend only)
unresolved=$(
  for f in "$build/bin/"* "$build/lib/"*.so*; do
    if [ ! -f "$f" ] || [ -L "$f" ] || ! is_elf "$f"; then continue; fi
    [ "$(basename "$f")" = "$ldso" ] && continue
    list_libs "$f" | while read -r soname needer path; do
      if [ "$path" = not-found ]; then
        echo "$soname (needed by $needer)"
      elif [[ $path != "$build/lib/"* ]] && ! [[ "$soname $needer" =~ $host_lib_ok_re ]]; then
        echo "$soname (needed by $needer, found only on the host: $path)"
      fi
    done
  done | sort -u
)
if [ -n "$unresolved" ]; then
  die "libraries still unresolved after assembly:
$(printf '%s\n' "$unresolved" | sed 's/^/    /')
  add the sid package that ships them with SPARKBENCH_LLAMA_EXTRA_PACKAGES='pkg ...' (then --force)"
fi

# --- smoke test -------------------------------------------------------------------------
smoke=$(cd "$build" && env -u LD_PRELOAD -u LD_LIBRARY_PATH "$build/bin/llama-server" --version 2>&1 </dev/null) \
  || die "smoke test failed: llama-server --version exited non-zero:
$smoke"
version_line=$(printf '%s\n' "$smoke" | grep -m1 '^version: ' || true)
[ -n "$version_line" ] || die "smoke test failed: llama-server --version printed no version line:
$smoke"
bench_help=$(env -u LD_PRELOAD -u LD_LIBRARY_PATH "$build/bin/llama-bench" --help 2>&1 </dev/null) \
  || die "smoke test failed: llama-bench --help exited non-zero:
$(printf '%s\n' "$bench_help" | tail -n 20)"
# ggml prints ~15 harmless 'ggml_backend_load_best: failed to enumerate
# /usr/lib/<triplet>/ggml/backends0' lines; what matters is that a CPU backend loads from bin/.
printf '%s\n' "$bench_help" | grep -q "load_backend: loaded CPU backend from $build/bin/" \
  || die "smoke test failed: llama-bench --help shows no 'load_backend: loaded CPU backend from $build/bin/...' line:
$(printf '%s\n' "$bench_help" | grep -v '^ ' | tail -n 20)"
[ "$components" = cpu ] || printf '%s\n' "$bench_help" | grep -q "load_backend: loaded RPC backend from $build/bin/" \
  || die "smoke test failed: llama-bench --help shows no 'load_backend: loaded RPC backend from $build/bin/...' line:
$(printf '%s\n' "$bench_help" | grep -v '^ ' | tail -n 20)"
for t in "${required_tools[@]}"; do
  case "$t" in
    llama-quantize) continue ;;                       # no --version; --help exits 1
    ggml-rpc-server) args=(--help); want="Usage: " ;;  # no --version
    *) args=(--version); want="version: " ;;
  esac
  out=$(env -u LD_PRELOAD -u LD_LIBRARY_PATH timeout 60 "$build/bin/$t" "${args[@]}" 2>&1 </dev/null) \
    && [[ $out == *"$want"* ]] \
    || die "smoke test failed: $t ${args[*]}:
$(printf '%s\n' "$out" | grep -v 'failed to enumerate' | tail -n 10)"
done
say "smoke test passed: $version_line; Vulkan backend $vulkan_status"

# --- VERSIONS.txt -----------------------------------------------------------------------
{
  echo "# sparkbench llama.cpp prefix, built by scripts/install-llama.sh"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "prefix: $prefix"
  echo "directory: $build"
  echo "source: $mirror $suite main ($arch)"
  echo "$version_line"
  printf '%s\n' "$smoke" | grep -m1 '^built with' || true
  echo
  echo "# package version sha256(.deb) file"
  cat "$build/.manifest"
  echo
  echo "# components"
  echo "components: $components"
  echo "tools: $(cd "$build/bin" && for f in *; do [[ $f == lib* ]] || printf '%s ' "$f"; done)"
  echo "backends: $(cd "$build/bin" && printf '%s ' lib*.so)"
  echo "vulkan: $vulkan_status"
  echo
  echo "# sha256 of the patched tools and backends (paths are baked in, so these differ per prefix)"
  (cd "$build" && sha256sum bin/*)
  echo
  echo "# sha256 of the patched libraries that hold llama.cpp's code"
  (cd "$build" && find lib -maxdepth 1 -type f \( -name 'libllama*' -o -name 'libggml*' -o -name 'libmtmd*' \) | sort | xargs sha256sum)
} >"$build/VERSIONS.txt"
rm -f -- "$build/.manifest"

# --- atomic swap ------------------------------------------------------------------------
link_tmp=$parent/.$base.link.$$
ln -sfn "$(basename "$build")" "$link_tmp"
if [ -e "$prefix_real_parent_prefix" ] && [ ! -L "$prefix_real_parent_prefix" ]; then
  if [ -d "$prefix_real_parent_prefix" ] && { [ -f "$prefix_real_parent_prefix/VERSIONS.txt" ] \
       || [ -z "$(ls -A "$prefix_real_parent_prefix")" ]; }; then
    # an old-style real directory: move it aside (it is pruned below)
    mv -T "$prefix_real_parent_prefix" "$parent/.$base-legacy.$$"
    printf '%s\n' "$prefix_real_parent_prefix" >"$parent/.$base-legacy.$$/.sparkbench-llama-build"
  else
    rm -f "$link_tmp"
    die "$prefix exists and was not made by this script; remove it or pass another --prefix"
  fi
fi
mv -T "$link_tmp" "$prefix_real_parent_prefix"
swapped=1

# the build is live: pin its .debs, prune what is no longer referenced
if [ "$use_manifest" != "$manifest" ]; then mv -f "$use_manifest" "$manifest"; fi
keep=" manifest $(awk '{printf "%s ", $4}' "$manifest")"
for f in "$cache/debs/"*; do
  [[ $keep == *" $(basename "$f") "* ]] || rm -rf -- "$f"
done
for d in "$parent/.$base-"*; do
  if [ ! -d "$d" ] || [ -L "$d" ] || [ "$d" = "$build" ]; then continue; fi
  if [ -f "$d/.sparkbench-llama-build" ]; then
    [ "$(cat "$d/.sparkbench-llama-build")" = "$prefix_real_parent_prefix" ] || continue
  else
    # a run killed right after mktemp, before it wrote the marker: match the exact name shape
    n=$(basename "$d")
    [[ $n == ".$base-"* && ${n#".$base-"} =~ ^[0-9]{8}T[0-9]{6}Z\.[A-Za-z0-9]{4}$ ]] || continue
  fi
  rm -rf -- "$d"
done
rm -f -- "$parent/.$base.link."* 2>/dev/null || true

say "installed $version_line in $prefix ($(du -sh "$build" | cut -f1))"
finish
