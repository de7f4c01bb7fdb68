#!/usr/bin/env bash
# Installs what onnxc needs on Debian 12 (run as root, or with sudo available).
#   scripts/setup.sh          compiler build deps only (no Python needed)
#   scripts/setup.sh --test   also test deps and a Python venv (.venv) with the
#                             pinned ONNX / ONNX Runtime from requirements-test.txt
set -euo pipefail
cd "$(dirname "$0")/.."

want_test=0
[[ "${1:-}" == "--test" ]] && want_test=1

pkgs=(cmake make gcc protobuf-c-compiler libprotobuf-c-dev)
# The frontend generates its protobuf bindings from an installed onnx.proto:
# Debian's libonnx-dev provides one without any Python.
pkgs+=(libonnx-dev)
if (( want_test )); then
  pkgs+=(libcmocka-dev clang python3 python3-venv gcc-arm-none-eabi libnewlib-arm-none-eabi)
  # Runs the Cortex-M4F firmware test (mps2-an386); without recommends it is
  # ~28 packages, about 20 s to install.
  pkgs+=(qemu-system-arm)
  # libFuzzer and clang's sanitizer runtimes (the fuzz build, docs/fuzzing.md).
  pkgs+=(libclang-rt-dev)
  # The in-process C compiler (docs/clang.md): Clang and LLVM as libraries;
  # onnxc builds without them and then uses the external C compiler.
  pkgs+=(libclang-cpp15-dev llvm-15-dev)
  # e2e.graph checks that Graphviz accepts onnxc graph's DOT (skipped without it).
  pkgs+=(graphviz)
fi

SUDO=""
if [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null; then SUDO="sudo"; fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} )); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
    $SUDO apt-get update -q >/dev/null
    $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  }
fi

if (( want_test )); then
  if [[ ! -x .venv/bin/python ]]; then
    python3 -m venv .venv
  fi
  .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements-test.txt
fi
