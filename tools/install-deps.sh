#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks to build and test tilesched (run as root).
# The CUDA toolkit is not installed here: the GPU half builds only where nvcc already is.
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config libeigen3-dev doctest-dev libcli11-dev
          nlohmann-json3-dev libfmt-dev libbenchmark-dev libtinyxml2-dev python3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
