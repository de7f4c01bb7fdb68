#!/usr/bin/env bash
# The CMake package (docs/cmake.md) as a user meets it: `cmake --install` of
# this build into a prefix, which is then moved (the package must be
# relocatable); examples/cmake-app configured and built against it with
# find_package(onnxc) + onnxc_add_model(); its output compared with ONNX
# Runtime; a rebuild that must not run onnxc again; a changed model that must
# be compiled again (and give ONNX Runtime's new answers); THREADS 2; the
# CUDA target built (or its clear error without a toolkit); a bare-metal
# cross build; and the misuses that must stop with a clear message.
# Usage: test_cmake_package.sh CMAKE BUILD_DIR SRC_DIR PYTHON CC CUDA_HOME
# (CUDA_HOME: the toolkit the onnxc build found, or "none").
set -euo pipefail
CMAKE=$1
BUILD=$2
SRC=$3
PY=$4
CC=$5
CUDA_HOME=$6
[[ "$CUDA_HOME" != none ]] || CUDA_HOME=
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
DIGITS_BIN="$SRC/models/digits/test_digits.bin"

echo "== install, then move the prefix"
"$CMAKE" --install "$BUILD" --prefix "$T/staging" >/dev/null
for f in bin/onnxc lib/cmake/onnxc/onnxcConfig.cmake lib/cmake/onnxc/onnxcConfigVersion.cmake \
         lib/cmake/onnxc/onnxcAddModel.cmake; do
  [[ -f "$T/staging/$f" ]] || fail "cmake --install did not install $f"
done
if grep -rnF -e "$BUILD" -e "$SRC" -e "$T/staging" "$T/staging/lib/cmake/onnxc"; then
  fail "the installed package names a build, source or install path"
fi
mv "$T/staging" "$T/prefix"

mkdir "$T/model"
cp "$SRC/models/digits/digits.onnx" "$T/model/digits.onnx"
app_configure() {
  "$CMAKE" -S "$SRC/examples/cmake-app" -B "$T/app" -DCMAKE_PREFIX_PATH="$T/prefix" \
    -DCMAKE_C_COMPILER="$CC" -DCMAKE_BUILD_TYPE=Release -DDIGITS_MODEL="$T/model/digits.onnx" "$@" >"$T/log" \
    || { cat "$T/log"; fail "configuring examples/cmake-app"; }
}
app_build() {  # app_build LOG: builds, keeps the build's output in LOG
  "$CMAKE" --build "$T/app" >"$1" 2>&1 || { cat "$1"; fail "building examples/cmake-app"; }
}
app_check() {  # app_check MODEL: runs the app on 8 digits, compares with ONNX Runtime
  "$T/app/digits_app" "$DIGITS_BIN" 8 >"$T/out" || fail "digits_app failed"
  "$PY" "$SRC/tests/e2e/cmake_app.py" check "$1" "$DIGITS_BIN" "$T/out"
}

echo "== examples/cmake-app against the moved prefix"
app_configure
app_build "$T/build1"
grep -q "onnxc: generating net" "$T/build1" || fail "the first build did not run onnxc"
app_check "$T/model/digits.onnx"
first=$(grep '^image ' "$T/out" | sed 's/ probs.*//')

echo "== a second build does nothing"
app_build "$T/build2"
! grep -q "onnxc: generating" "$T/build2" || fail "an up-to-date build ran onnxc again"

echo "== a changed model is compiled again"
sleep 1  # a new modification time even on file systems with 1 s resolution
bumped=$("$PY" "$SRC/tests/e2e/cmake_app.py" bump "$T/model/digits.onnx" "$T/model/new.onnx" "$DIGITS_BIN")
mv "$T/model/new.onnx" "$T/model/digits.onnx"
app_build "$T/build3"
grep -q "onnxc: generating net" "$T/build3" || fail "changing the model did not run onnxc again"
app_check "$T/model/digits.onnx"
[[ "$(grep '^image ' "$T/out" | sed 's/ probs.*//')" != "$first" ]] || fail "the answers did not change"
grep -q "^image 0: digit $bumped " "$T/out" || fail "image 0 is not digit $bumped after the bias change"

echo "== THREADS 2"
app_configure -DDIGITS_THREADS=2
app_build "$T/build4"
grep -q "onnxc: generating net" "$T/build4" || fail "changing THREADS did not run onnxc again"
grep -q "net_free_threads" "$T/app/onnxc/net/net.h" || fail "THREADS 2 did not reach onnxc (no net_free_threads)"
app_check "$T/model/digits.onnx"

cases() {  # cases BUILD_DIR CASE [cmake args]: configures tests/cmake_package
  local dir=$1 case=$2
  shift 2
  "$CMAKE" -S "$SRC/tests/cmake_package" -B "$dir" -DCMAKE_PREFIX_PATH="$T/prefix" \
    -DMODEL="$SRC/models/digits/digits.onnx" -DCASE="$case" "$@" >"$T/case.log" 2>&1
}

echo "== misuses stop at configure time with a clear message"
while IFS='|' read -r case want; do
  if cases "$T/errors" "$case" -DCMAKE_C_COMPILER="$CC"; then
    fail "case $case configured; expected an error with '$want'"
  fi
  # CMake wraps a message at a width, so where a line breaks depends on the
  # paths in it (the clone's location): compare with the whitespace joined
  tr -s ' \n' '  ' <"$T/case.log" | grep -q -- "$want" || { cat "$T/case.log"; fail "case $case: no '$want' in the error"; }
  echo "ok   $case: $want"
done <<'CASES'
no_model|MODEL <file.onnx> is required
bad_target|TARGET must be c or cuda, got 'opencl'
unknown_keyword|unknown arguments: THREAD 2
bad_threads|THREADS must be a positive integer, got '0'
bad_name|'my-net' is not a C identifier
missing_file|not found
options_name|OPTIONS may not hold '--name'
keyword_as_target|got the keyword 'MODEL'
CASES

echo "== TARGET <library> first, SHARED"
cases "$T/contract" contract_form -DCMAKE_C_COMPILER="$CC" || { cat "$T/case.log"; fail "contract_form configure"; }
"$CMAKE" --build "$T/contract" >"$T/case.log" 2>&1 || { cat "$T/case.log"; fail "contract_form build"; }
"$T/contract/app" || fail "contract_form: digits_run failed"
lib=$(ls "$T"/contract/liblib.so*)
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" {print $3}' | sort | tr '\n' ' ')
[[ "$exported" == "digits_info digits_run digits_run_v " ]] || fail "the shared library exports '$exported'"
echo "ok   liblib.so exports $exported"

echo "== TARGET cuda"
if [[ -n "$CUDA_HOME" ]]; then
  cases "$T/cuda" cuda -DCMAKE_C_COMPILER="$CC" -DCUDAToolkit_ROOT="$CUDA_HOME" \
    || { cat "$T/case.log"; fail "cuda configure"; }
  "$CMAKE" --build "$T/cuda" >"$T/case.log" 2>&1 || { cat "$T/case.log"; fail "cuda build"; }
  [[ -x "$T/cuda/app_cuda" ]] || fail "cuda: no app_cuda"
  echo "ok   the CUDA target's library built and linked with the toolkit at $CUDA_HOME"
else
  if cases "$T/cuda" cuda -DCMAKE_C_COMPILER="$CC"; then
    fail "TARGET cuda configured without a CUDA toolkit"
  fi
  grep -q "TARGET cuda needs the CUDA toolkit" "$T/case.log" || { cat "$T/case.log"; fail "cuda: unclear error"; }
  echo "ok   no CUDA toolkit: TARGET cuda stops with a clear message"
fi

echo "== a bare-metal cross build (arm-none-eabi-gcc, CMAKE_SYSTEM_NAME Generic)"
command -v arm-none-eabi-gcc >/dev/null || fail "arm-none-eabi-gcc is not installed (scripts/setup.sh --test installs it)"
cases "$T/fw" firmware -DCMAKE_SYSTEM_NAME=Generic -DCMAKE_C_COMPILER=arm-none-eabi-gcc \
  -DCMAKE_TRY_COMPILE_TARGET_TYPE=STATIC_LIBRARY -DCMAKE_BUILD_TYPE=MinSizeRel \
  "-DCMAKE_C_FLAGS=-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 -ffreestanding" \
  || { cat "$T/case.log"; fail "firmware configure"; }
"$CMAKE" --build "$T/fw" --target net >"$T/case.log" 2>&1 || { cat "$T/case.log"; fail "firmware build"; }
grep -q "elf32-littlearm" <<<"$(arm-none-eabi-objdump -f "$T/fw/libnet.a")" || fail "libnet.a is not an ARM archive"
echo "ok   libnet.a built for cortex-m4"
echo "PASS"
