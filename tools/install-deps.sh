#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks to build and test tilesched (run as root).
# The CUDA toolkit is not installed here: the GPU half builds only where nvcc already is. The
# CuTe/CUTLASS headers it uses are fetched (pinned) into third_party/.
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config libeigen3-dev doctest-dev libcli11-dev zlib1g-dev
          nlohmann-json3-dev libfmt-dev libbenchmark-dev libtinyxml2-dev python3 python3-pip python3-dev
          clang-14 libclang-rt-14-dev)  # the last two: the fuzz preset (libFuzzer, sanitizers)
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

# CuTe/CUTLASS headers for the GPU half, pinned: the PyPI wheel nvidia-cutlass carries the include
# tree under cutlass_library/source/include. Unpacked into an ignored project-local folder that
# CMake's TILESCHED_CUTLASS_INCLUDE_DIR points at by default; skipped when already there.
cutlass_version=4.2.0.0
cutlass_sha256=f9599ada45c7bcb6bf53f7d3f0a7d154183e53451c01bfa59eecd37dd4a693f6
cutlass_dir="$(cd "$(dirname "$0")/.." && pwd)/third_party/cutlass-${cutlass_version}"
if [[ -f "$cutlass_dir/include/cutlass/version.h" ]]; then
  echo "install-deps: CUTLASS ${cutlass_version} headers already in $cutlass_dir" >&2
else
  echo "install-deps: fetching CUTLASS ${cutlass_version} headers into $cutlass_dir" >&2
  download=$(mktemp -d)
  trap 'rm -rf "$download"' EXIT
  python3 -m pip download --quiet --no-deps --dest "$download" "nvidia-cutlass==${cutlass_version}"
  wheel="$download/nvidia_cutlass-${cutlass_version}-py3-none-any.whl"
  echo "${cutlass_sha256}  $wheel" | sha256sum --check --quiet -
  rm -rf "$cutlass_dir.partial"
  python3 - "$wheel" "$cutlass_dir.partial" <<'PY'
import sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
prefix = "cutlass_library/source/include/"
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            z.extract(name, dest)
PY
  mkdir -p "$cutlass_dir"
  rm -rf "$cutlass_dir/include"
  mv "$cutlass_dir.partial/cutlass_library/source/include" "$cutlass_dir/include"
  rm -rf "$cutlass_dir.partial"
fi
# The version the headers say they are, not only the folder's name.
header="$cutlass_dir/include/cutlass/version.h"
major=$(sed -n 's/^#define CUTLASS_MAJOR \([0-9]*\).*/\1/p' "$header")
minor=$(sed -n 's/^#define CUTLASS_MINOR \([0-9]*\).*/\1/p' "$header")
if [[ "$major.$minor" != "4.2" ]]; then
  echo "install-deps: $header says CUTLASS $major.$minor, expected 4.2" >&2
  exit 1
fi

# The Python package's module (nanobind) and its tests (pytest, numpy), for the python3 that CMake
# finds first on PATH; pinned to the versions the package was built and tested with.
py_pins=(nanobind==3.1.0 pytest==9.2.0 numpy==2.4.6)
py_missing=()
for pin in "${py_pins[@]}"; do
  name=${pin%%==*}
  version=$(python3 -c "import importlib.metadata as m; print(m.version('$name'))" 2>/dev/null || true)
  [[ "$version" == "${pin##*==}" ]] || py_missing+=("$pin")
done
if ((${#py_missing[@]})); then
  echo "install-deps: pip installing ${py_missing[*]}" >&2
  # Debian's own python3 is marked externally managed (PEP 668): install beside its packages.
  python3 -m pip install --quiet "${py_missing[@]}" 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages "${py_missing[@]}"
fi
