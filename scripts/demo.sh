#!/usr/bin/env bash
# The README's first command: installs the build dependencies (no test
# packages), builds onnxc in its own folder (build-demo: Release, no tests, so
# it never inherits the test build's cache), compiles the bundled digit
# classifier (models/digits/digits.onnx) to a shared library, and runs it on
# the held-back digits, printing predictions and accuracy.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

B=build-demo
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
cmake --build "$B" -j"$(nproc)" --target onnxc >/dev/null

mkdir -p out/digits
./"$B"/bin/onnxc models/digits/digits.onnx --name digits -o out/digits/libdigits.so \
  --memory-report out/digits/memory.json
./"$B"/bin/onnxc models/digits/digits.onnx --name digits -S -o out/digits/src
cc -std=c99 -O2 -Wall -Wextra -Werror -pedantic -Iout/digits/src examples/digits/main.c \
  out/digits/libdigits.so -Wl,-rpath,"$PWD/out/digits" -o out/digits/digits_demo
./out/digits/digits_demo models/digits/test_digits.bin models/digits/test_labels.bin
