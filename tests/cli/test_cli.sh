#!/usr/bin/env bash
# CLI contract tests: bad input gets a one-line diagnostic naming the file,
# node and op, exit status 1, and no partial output; good input builds every
# output kind. Usage: test_cli.sh ONNXC PYTHON
set -uo pipefail
ONNXC=$1
PY=$2
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$PY" "$HERE/make_bad_models.py" "$T/m" || exit 1
fails=0

# expect_fail MODEL STATUS TEXT... : each TEXT must appear in stderr.
expect_fail() {
  local model=$1 want=$2; shift 2
  local out="$T/out.so"
  rm -f "$out"
  "$ONNXC" "$T/m/$model" -o "$out" 2>"$T/err"
  local rc=$?
  local ok=1
  [[ $rc -eq $want ]] || { echo "FAIL $model: exit $rc, expected $want"; ok=0; }
  for text in "$@"; do
    grep -qF -- "$text" "$T/err" || { echo "FAIL $model: stderr lacks '$text'"; ok=0; }
  done
  [[ -e "$out" ]] && { echo "FAIL $model: left $out behind"; ok=0; }
  ls "$T" | grep -q '\.tmp' && { echo "FAIL $model: left a temporary file"; ok=0; }
  if (( ok )); then echo "ok   $model: $(head -n1 "$T/err")"; else sed 's/^/     | /' "$T/err"; fails=$((fails+1)); fi
}

expect_fail truncated.onnx 1 "truncated.onnx: " "malformed"
expect_fail garbage.onnx 1 "garbage.onnx: " "malformed"
expect_fail empty.onnx 1 "empty.onnx: "
expect_fail unknown_ops.onnx 1 "node 'frob_a' (FrobnicateA): unsupported operator" \
  "node 'frob_b' (FrobnicateB): unsupported operator"
expect_fail missing_input.onnx 1 "node 'add_missing' (Add): " "'nowhere'"
expect_fail cycle.onnx 1 "cycle.onnx: node 'cyc_" "cycle"
expect_fail overflow.onnx 1 "overflow.onnx: " "too large"
expect_fail external_escape.onnx 1 "external_escape.onnx: " "outside"
expect_fail bad_shape.onnx 1 "node 'mm' (MatMul): "
expect_fail recursive_function.onnx 1 "node 'call_rec' (Rec): " "recursive function"
expect_fail gradient_floor.onnx 1 "node 'grad' (Gradient): " "cannot differentiate node 'floor' (Floor)"
expect_fail does_not_exist.onnx 1 "does_not_exist.onnx: "

# Usage errors.
"$ONNXC" >/dev/null 2>&1; [[ $? -eq 2 ]] || { echo "FAIL: no arguments should exit 2"; fails=$((fails+1)); }
"$ONNXC" "$T/m/good.onnx" -o "$T/x.exe" 2>/dev/null; [[ $? -eq 2 ]] || { echo "FAIL: unknown output kind should exit 2"; fails=$((fails+1)); }
"$ONNXC" --version | grep -q "^onnxc " || { echo "FAIL: --version"; fails=$((fails+1)); }
"$ONNXC" --help | grep -q -- "--name" || { echo "FAIL: --help"; fails=$((fails+1)); }

# Every output kind from a good model.
for out in lib.so lib.a obj.o; do
  "$ONNXC" "$T/m/good.onnx" --name good -o "$T/$out" || { echo "FAIL: building $out"; fails=$((fails+1)); continue; }
  [[ -s "$T/$out" ]] && echo "ok   built $out" || { echo "FAIL: $out empty"; fails=$((fails+1)); }
done
nm "$T/lib.so" | grep -q " T good_run$" || { echo "FAIL: good_run not exported"; fails=$((fails+1)); }
nm -D "$T/lib.so" | grep -q "good_w" && { echo "FAIL: weights symbols leak from the .so"; fails=$((fails+1)); }
"$ONNXC" "$T/m/good.onnx" --name good -S -o "$T/src" --memory-report "$T/mem.json" --memory-svg "$T/mem.svg" \
  || fails=$((fails+1))
for f in good.c good.h good_weights.c good_weights.h onnxc_rt.h; do
  [[ -f "$T/src/$f" ]] || { echo "FAIL: -S did not write $f"; fails=$((fails+1)); }
done
grep -q "GOOD_ARENA_BYTES" "$T/src/good.h" || { echo "FAIL: header lacks GOOD_ARENA_BYTES"; fails=$((fails+1)); }
"$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); assert {'arena_bytes','scratch_bytes','lower_bound_bytes','naive_bytes','tensors'} <= set(d)" "$T/mem.json" \
  || { echo "FAIL: memory report"; fails=$((fails+1)); }
"$PY" -c "import sys, xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot(); assert r.tag.endswith('svg')" "$T/mem.svg" \
  || { echo "FAIL: memory svg"; fails=$((fails+1)); }

echo "$fails failure(s)"
exit $(( fails > 0 ))
