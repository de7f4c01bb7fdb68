#!/usr/bin/env bash
# Installs dependencies, builds onnxc with warnings as errors, and runs every
# test: unit tests, golden IR tests, the ONNX conformance ratchet, end-to-end
# models against ONNX Runtime, the Cortex-M cross-compile check, and the
# sanitizer build. This is the README's test command and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test

JOBS=$(nproc)
PY="$PWD/.venv/bin/python"
ONNX_PROTO=$("$PY" -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "onnx.proto"))')
common=(-DONNX_PROTO="$ONNX_PROTO" -DONNXC_PYTHON="$PY" -DONNXC_WERROR=ON)

echo "== build (RelWithDebInfo, -Werror)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "${common[@]}" >/dev/null
cmake --build build -j"$JOBS" >/dev/null
echo "== tests"
ctest --test-dir build --output-on-failure -j"$JOBS"

echo "== sanitizer build (ASan + UBSan): unit tests"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DONNXC_SANITIZE=ON "${common[@]}" >/dev/null
cmake --build build-asan -j"$JOBS" >/dev/null
ctest --test-dir build-asan --output-on-failure -j"$JOBS" -L unit

# The compiler itself under libFuzzer (docs/fuzzing.md): 60 s from the seeds,
# plus the regressions and sampled seeds replayed in that build.
echo "== fuzz build (clang, libFuzzer + ASan + UBSan): a short run"
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DONNXC_FUZZ=ON "${common[@]}" >/dev/null
cmake --build build-fuzz -j"$JOBS" --target fuzz_compile fuzz_replay >/dev/null
ctest --test-dir build-fuzz --output-on-failure -R '^fuzz\.'
