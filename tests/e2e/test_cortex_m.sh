#!/usr/bin/env bash
# The generated C must build for a Cortex-M4 with the bare-metal toolchain at
# the strictest warning level: no malloc, no stdio, no OS.
# Usage: test_cortex_m.sh ONNXC SRC_DIR MODELS_DIR
set -euo pipefail
ONNXC=$1
SRC=$2
MODELS=$3
if ! command -v arm-none-eabi-gcc >/dev/null; then
  echo "arm-none-eabi-gcc is not installed (scripts/setup.sh --test installs it)"; exit 1
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
models=("$SRC/models/digits/digits.onnx")
for m in "$MODELS"/*/model.onnx; do [[ -f "$m" ]] && models+=("$m"); done
n=0
for m in "${models[@]}"; do
  name=m$n
  "$ONNXC" "$m" --name "$name" -S -o "$T/$name"
  for f in "$T/$name/$name.c" "$T/$name/${name}_weights.c"; do
    arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 -Os \
      -std=c99 -Wall -Wextra -Werror -pedantic -ffreestanding -c "$f" -I"$T/$name" -o "$f.o"
  done
  echo "ok   $(basename "$(dirname "$m")")/$(basename "$m") builds for cortex-m4"
  n=$((n+1))
done
