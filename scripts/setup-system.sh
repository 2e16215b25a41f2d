#!/usr/bin/env bash
# Installs the Debian packages sparkbench needs to build the GUI (Fyne's cgo libraries),
# run headless GUI tests (Xvfb), take screenshots (ImageMagick; xdotool clicks where no flag
# reaches), measure the GUI cost (jq derives its plan) and assemble the llama.cpp prefix
# (patchelf, dpkg-deb, apt-get download), plus the host's Vulkan loader and Mesa's Vulkan
# drivers (libvulkan1, mesa-vulkan-drivers: the prefix's Vulkan backend loads them at run time;
# on a machine without a GPU Mesa's software device llvmpipe/lavapipe stands in), and OpenSSH
# (openssh-client for bench hosts; openssh-server so the tests run loopback sshd hosts as
# `sshd -f CONFIG` on 127.0.0.1, never as a system service: docs/fleet.md).
# Idempotent: installs only what is missing, and does nothing (not even `apt-get update`)
# when everything is present.
set -euo pipefail

packages=(
  gcc libc6-dev pkg-config
  libgl1-mesa-dev libx11-dev libxcursor-dev libxrandr-dev libxinerama-dev libxi-dev libxxf86vm-dev
  xvfb xauth imagemagick x11-utils xdotool jq
  patchelf debian-archive-keyring ca-certificates binutils file
  libvulkan1 mesa-vulkan-drivers
  openssh-client openssh-server
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  case "$status" in
    ii*) ;;
    *) missing+=("$p") ;;
  esac
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-system: all ${#packages[@]} system packages present"
  exit 0
fi

echo "setup-system: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "setup-system: missing packages (${missing[*]}) and not root; run as root: apt-get install -y ${missing[*]}" >&2
    exit 2
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup-system: done"
