#!/usr/bin/env bash
# Install the Debian packages dptop needs, only those that are missing.
# Usage: scripts/deps.sh [extra-package ...]
set -euo pipefail

pkgs=(
    build-essential pkg-config zlib1g-dev
    libncursesw5-dev libamdhip64-dev libjson-c-dev libzmq3-dev libcmocka-dev
    tmux python3 python3-zmq iproute2 procps
)
pkgs+=("$@")

missing=()
for p in "${pkgs[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
else
    SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y --no-install-recommends "${missing[@]}"; then
    $SUDO apt-get update
    $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
