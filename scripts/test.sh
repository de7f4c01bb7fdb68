#!/usr/bin/env bash
# Installs dependencies, builds onnxc with warnings as errors, and runs every
# test: unit tests, golden IR tests, the ONNX conformance ratchet, end-to-end
# models against ONNX Runtime, random-model differential tests, real
# exporters' models, the Cortex-M cross-compile check, the compiler itself
# under ASan+UBSan over the whole ratchet (in guard mode), warning-free
# Release builds with gcc and clang, and the README's first command in a
# fresh clone and again in this checkout. This is the README's test command
# and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test

JOBS=$(nproc)
PY="$PWD/.venv/bin/python"
ONNX_PROTO=$("$PY" -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "onnx.proto"))')
common=(-DONNX_PROTO="$ONNX_PROTO" -DONNXC_PYTHON="$PY" -DONNXC_WERROR=ON)
# The tests build generated code with gcc, as they did before the in-process
# compiler (docs/clang.md), which compiles large kernels 3-4x slower: e2e.inproc
# tests that path with no compiler on PATH, and CI stays within its budget.
export CC=${CC:-gcc}

# The README's first command as a new user runs it: a clean clone, no test
# build, no venv (demo.sh configures its own build without tests).
echo "== demo in a fresh clone (scripts/demo.sh)"
fresh=$(mktemp -d)
trap 'rm -rf "$fresh"' EXIT
git clone -q "$PWD" "$fresh/onnxc"
bash "$fresh/onnxc/scripts/demo.sh" | tail -n 3
rm -rf "$fresh"

echo "== build (RelWithDebInfo, -Werror)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "${common[@]}" >/dev/null
cmake --build build -j"$JOBS" >/dev/null
echo "== tests"
# The conformance ratchet: a fixed sample of it (every second case, one of
# every operator, the whole models) runs below through the compiler built
# with ASan+UBSan, its generated code built with ASan+UBSan at the same -O
# level and in guard mode; e2e.conformance_rest, here, runs the other cases
# plainly. The whole plain ratchet (e2e.conformance) is for local runs.
ctest --test-dir build --output-on-failure -j"$JOBS" -E '^e2e\.conformance(_sanitize)?$'

# Release builds (-O3) must be warning-free with both compilers; the builds
# above and below cover gcc -O2 and clang -O2.
for cc in gcc clang; do
  echo "== Release build with $cc (-O3, -Werror)"
  cmake -S . -B "build-release-$cc" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_TESTING=OFF -DONNX_PROTO="$ONNX_PROTO" -DONNXC_WERROR=ON -DONNXC_WITH_CLANG=OFF >/dev/null
  cmake --build "build-release-$cc" -j"$JOBS" --target onnxc >/dev/null
done

echo "== sanitizer build (ASan + UBSan): unit tests, and the compiler over the sampled ratchet"
# Optimized (-O2 -g): the sanitized compiler takes a third of the Debug
# build's time on large graphs, and ASan/UBSan still see every access.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DONNXC_SANITIZE=ON -DONNXC_WITH_CLANG=OFF "${common[@]}" >/dev/null
cmake --build build-asan -j"$JOBS" >/dev/null
ctest --test-dir build-asan --output-on-failure -j"$JOBS" -L unit
ctest --test-dir build-asan --output-on-failure -R '^e2e\.conformance_sanitize$'

# The compiler itself under libFuzzer (docs/fuzzing.md): 60 s from the seeds,
# plus the regressions and sampled seeds replayed in that build.
echo "== fuzz build (clang, libFuzzer + ASan + UBSan): a short run"
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DONNXC_FUZZ=ON -DONNXC_WITH_CLANG=OFF "${common[@]}" >/dev/null
cmake --build build-fuzz -j"$JOBS" --target fuzz_compile fuzz_replay >/dev/null
ctest --test-dir build-fuzz --output-on-failure -R '^fuzz\.'

echo "== demo again in this checkout, after the test builds"
bash scripts/demo.sh | tail -n 3
