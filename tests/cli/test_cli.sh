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
  grep -q '\.tmp' <<<"$(ls "$T")" && { echo "FAIL $model: left a temporary file"; ok=0; }
  if (( ok )); then echo "ok   $model: $(head -n1 "$T/err")"; else sed 's/^/     | /' "$T/err"; fails=$((fails+1)); fi
}

expect_fail truncated.onnx 1 "truncated.onnx: " "malformed"
expect_fail garbage.onnx 1 "garbage.onnx: " "malformed"
expect_fail empty.onnx 1 "empty.onnx: "
expect_fail unknown_ops.onnx 1 "node 'frob_a' (FrobnicateA): unsupported operator" \
  "node 'frob_b' (FrobnicateB): unsupported operator"
expect_fail unknown_ops_branch.onnx 1 "node 'frob_then' (FrobBranch): unsupported operator" \
  "node 'frob_top' (FrobTop): unsupported operator"
expect_fail missing_input.onnx 1 "node 'add_missing' (Add): " "'nowhere'"
expect_fail branch_required_input_empty.onnx 1 "node 'cast_empty' (Cast): required input 0 is missing"
expect_fail cycle.onnx 1 "cycle.onnx: node 'cyc_" "cycle"
expect_fail overflow.onnx 1 "overflow.onnx: " "too large"
expect_fail external_escape.onnx 1 "external_escape.onnx: " "outside"
expect_fail bad_shape.onnx 1 "node 'mm' (MatMul): "
expect_fail recursive_function.onnx 1 "node 'call_rec' (Rec): " "recursive function"
expect_fail gradient_floor.onnx 1 "node 'grad' (Gradient): " "cannot differentiate node 'floor' (Floor)"
expect_fail does_not_exist.onnx 1 "does_not_exist.onnx: "

# --shape NAME=AxBx...: a Paddle2ONNX-style input ([-1,3,'?','?']) compiles only
# with it; its refusals. expect_shape STATUS "ARGS" TEXT...
expect_shape() {
  local want=$1 args=$2; shift 2
  local out="$T/shape.so"
  rm -f "$out"
  # shellcheck disable=SC2086
  "$ONNXC" "$T/m/paddle_dyn.onnx" -o "$out" $args 2>"$T/err"
  local rc=$? ok=1
  [[ $rc -eq $want ]] || { echo "FAIL --shape [$args]: exit $rc, expected $want"; ok=0; }
  for text in "$@"; do
    grep -qF -- "$text" "$T/err" || { echo "FAIL --shape [$args]: stderr lacks '$text'"; ok=0; }
  done
  if (( want == 0 )); then [[ -s "$out" ]] || { echo "FAIL --shape [$args]: no $out"; ok=0; }
  else [[ -e "$out" ]] && { echo "FAIL --shape [$args]: left $out behind"; ok=0; }; fi
  if (( ok )); then echo "ok   --shape [$args]: $(head -n1 "$T/err")"; else sed 's/^/     | /' "$T/err"; fails=$((fails+1)); fi
}
expect_shape 1 "" "graph input 'x' has shape [?,3,?,?]" "--shape x=?x3x?x?"
expect_shape 0 "--shape x=1x3x48x192"
expect_shape 0 "--shape x=2x3x5x7 -O0"
expect_shape 1 "--shape nope=1x3x4x4" "the model has no graph input 'nope' (its inputs: 'x')"
expect_shape 1 "--shape x=1x3x48" "input 'x' has rank 4" "not 3"
expect_shape 1 "--shape x=1x4x48x192" "dimension 1 of input 'x' is 3 in the model"
expect_shape 1 "--shape x=1x3x4x4 --shape x=1x3x4x4" "given twice"
expect_shape 2 "--shape x=1x0x4x4" "bad --shape 'x=1x0x4x4'" "at least 1"
expect_shape 2 "--shape x=1x-3x4x4" "'-3' is not a positive integer"
expect_shape 2 "--shape x=4294967296x4294967296x1x1" "overflows"
expect_shape 2 "--shape x=99999999999999999999x3x1x1" "too large"
expect_shape 2 "--shape x:1x3x4x4" "expected NAME="
expect_shape 2 "--shape x=1x3x4x" "empty"
expect_shape 2 "--shape" "--shape needs an argument"
# check binds shapes from the data; a --shape must agree with it.
"$ONNXC" check "$T/m/paddle_case" >/dev/null 2>"$T/err" \
  && echo "ok   check paddle_case" || { echo "FAIL: check paddle_case"; cat "$T/err"; fails=$((fails+1)); }
"$ONNXC" check --shape x=1x3x4x5 -O0 "$T/m/paddle_case" >/dev/null 2>"$T/err" \
  && echo "ok   check --shape x=1x3x4x5" || { echo "FAIL: check --shape"; cat "$T/err"; fails=$((fails+1)); }
"$ONNXC" check --shape x=1x3x4x6 "$T/m/paddle_case" >/dev/null 2>"$T/err"
rc=$?
if [[ $rc -eq 2 ]] && grep -qF "gives input 'x' shape [1,3,4,5]" "$T/err"; then echo "ok   check --shape disagreeing with the data"
else echo "FAIL: check --shape x=1x3x4x6: exit $rc"; cat "$T/err"; fails=$((fails+1)); fi

# check --save-outputs DIR: the outputs the compiled model computed, as
# TensorProto files that match the case's expected outputs.
"$ONNXC" check --save-outputs "$T/saved" "$T/m/paddle_case" >/dev/null 2>"$T/err" \
  || { echo "FAIL: check --save-outputs"; cat "$T/err"; fails=$((fails+1)); }
"$PY" - "$T/saved/test_data_set_0" "$T/m/paddle_case/test_data_set_0" <<'PYEOF' \
  && echo "ok   check --save-outputs" || { echo "FAIL: saved outputs"; fails=$((fails+1)); }
import glob, os, sys
import numpy as np, onnx
from onnx import numpy_helper
want = sorted(glob.glob(os.path.join(sys.argv[2], "output_*.pb")))
assert want and len(want) == len(glob.glob(os.path.join(sys.argv[1], "output_*.pb")))
for w in want:
    e = onnx.load_tensor(w)
    g = onnx.load_tensor(os.path.join(sys.argv[1], os.path.basename(w)))
    a, b = numpy_helper.to_array(g), numpy_helper.to_array(e)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
    assert np.allclose(a, b, rtol=1e-3, atol=1e-6), np.abs(a - b).max()
PYEOF
# -D ranges: a Squeeze that may drop a dim of 1 builds with a warning, not
# without one from 2; a reversing Slice that clamps for small T is refused.
"$ONNXC" "$T/m/squeeze_ranged.onnx" -D T=1..64 -o "$T/sq.so" 2>"$T/err"
if [[ $? -eq 0 && -s "$T/sq.so" ]] && grep -qF "node 'sq_all' (Squeeze): no axes, and dim 0 of the input may be 1" "$T/err"
then echo "ok   Squeeze over a range from 1 warns"; else echo "FAIL: squeeze_ranged T=1..64"; cat "$T/err"; fails=$((fails+1)); fi
"$ONNXC" "$T/m/squeeze_ranged.onnx" -D T=2..64 -o "$T/sq.so" 2>"$T/err"
if [[ $? -eq 0 && ! -s "$T/err" ]]; then echo "ok   Squeeze over a range from 2 is quiet"
else echo "FAIL: squeeze_ranged T=2..64"; cat "$T/err"; fails=$((fails+1)); fi
"$ONNXC" "$T/m/slice_step_clamped.onnx" -D T=1..64 -o "$T/rev.so" 2>"$T/err"
if [[ $? -eq 1 && ! -e "$T/rev.so" ]] && grep -qF "node 'rev3' (Slice): a slice with step -1 along an axis of run-time extent" "$T/err"
then echo "ok   a clamping stepped Slice over a range is refused"; else echo "FAIL: slice_step_clamped T=1..64"; cat "$T/err"; fails=$((fails+1)); fi
"$ONNXC" "$T/m/slice_step_clamped.onnx" -D T=4..64 -o "$T/rev.so" 2>"$T/err" \
  && echo "ok   the same Slice from T=4 builds" || { echo "FAIL: slice_step_clamped T=4..64"; cat "$T/err"; fails=$((fails+1)); }

grep -qF -- "--shape NAME=" <<<"$("$ONNXC" --help)" || { echo "FAIL: --help lacks --shape"; fails=$((fails+1)); }

# Usage errors.
"$ONNXC" >/dev/null 2>&1; [[ $? -eq 2 ]] || { echo "FAIL: no arguments should exit 2"; fails=$((fails+1)); }
"$ONNXC" "$T/m/good.onnx" -o "$T/x.exe" 2>/dev/null; [[ $? -eq 2 ]] || { echo "FAIL: unknown output kind should exit 2"; fails=$((fails+1)); }
grep -q "^onnxc " <<<"$("$ONNXC" --version)" || { echo "FAIL: --version"; fails=$((fails+1)); }
grep -q -- "--name" <<<"$("$ONNXC" --help)" || { echo "FAIL: --help"; fails=$((fails+1)); }

# Every output kind from a good model.
for out in lib.so lib.a obj.o; do
  "$ONNXC" "$T/m/good.onnx" --name good -o "$T/$out" || { echo "FAIL: building $out"; fails=$((fails+1)); continue; }
  [[ -s "$T/$out" ]] && echo "ok   built $out" || { echo "FAIL: $out empty"; fails=$((fails+1)); }
done
grep -q " T good_run$" <<<"$(nm "$T/lib.so")" || { echo "FAIL: good_run not exported"; fails=$((fails+1)); }
grep -q "good_w" <<<"$(nm -D "$T/lib.so")" && { echo "FAIL: weights symbols leak from the .so"; fails=$((fails+1)); }
# The model description (docs/abi.md): NAME_info exported, its tables not.
grep -q " T good_info$" <<<"$(nm -D --defined-only "$T/lib.so")" || { echo "FAIL: good_info not exported"; fails=$((fails+1)); }
grep -q "good_info_" <<<"$(nm -D "$T/lib.so")" && { echo "FAIL: the description's tables leak from the .so"; fails=$((fails+1)); }
"$ONNXC" "$T/m/good.onnx" --name good -S -o "$T/src" --memory-report "$T/mem.json" --memory-svg "$T/mem.svg" \
  || fails=$((fails+1))
for f in good.c good.h good_weights.c good_weights.h onnxc_rt.h; do
  [[ -f "$T/src/$f" ]] || { echo "FAIL: -S did not write $f"; fails=$((fails+1)); }
done
grep -q "GOOD_ARENA_BYTES" "$T/src/good.h" || { echo "FAIL: header lacks GOOD_ARENA_BYTES"; fails=$((fails+1)); }
# A model with ImageDecoder: its sources include onnxc_image.h, which -S must
# write too, so that they compile on their own.
"$PY" - "$T/image.onnx" <<'PYEOF' || fails=$((fails+1))
import sys
from onnx import TensorProto, helper, save
g = helper.make_graph([helper.make_node("ImageDecoder", ["x"], ["y"], name="decode")], "image",
                      [helper.make_tensor_value_info("x", TensorProto.UINT8, [100])],
                      [helper.make_tensor_value_info("y", TensorProto.UINT8, [4, 4, 3])])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)]), sys.argv[1])
PYEOF
if "$ONNXC" "$T/image.onnx" --name im -S -o "$T/imsrc" && cc -std=c99 -c "$T/imsrc/im.c" -I"$T/imsrc" -o "$T/im.o"; then
  echo "ok   -S of an ImageDecoder model writes onnxc_image.h"
else
  echo "FAIL: the -S sources of an ImageDecoder model do not compile"; fails=$((fails+1))
fi
"$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); assert {'arena_bytes','scratch_bytes','lower_bound_bytes','naive_bytes','tensors'} <= set(d)" "$T/mem.json" \
  || { echo "FAIL: memory report"; fails=$((fails+1)); }
"$PY" -c "import sys, xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot(); assert r.tag.endswith('svg')" "$T/mem.svg" \
  || { echo "FAIL: memory svg"; fails=$((fails+1)); }

# --fusion-report: an elementwise chain is one kernel listing its ONNX nodes;
# a failed compile leaves no report.
"$PY" - "$T/chain.onnx" <<'PYEOF' || fails=$((fails+1))
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save
c = lambda n, v: numpy_helper.from_array(np.array(v, np.float32), n)
nodes = [helper.make_node("Mul", ["x", "s"], ["u"], name="scale"),
         helper.make_node("Erf", ["u"], ["e"], name="erf"),
         helper.make_node("Add", ["e", "one"], ["p"], name="plus"),
         helper.make_node("Mul", ["x", "p"], ["y"], name="gelu")]
g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
                      [c("s", 0.70710677), c("one", 1.0)])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PYEOF
"$ONNXC" "$T/chain.onnx" -o "$T/chain.so" --fusion-report "$T/fusion.json" 2>"$T/err" || { cat "$T/err"; fails=$((fails+1)); }
"$PY" - "$T/fusion.json" <<'PYEOF' && echo "ok   --fusion-report" || { echo "FAIL: --fusion-report"; fails=$((fails+1)); }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["kernel_count"] == 1 and len(d["kernels"]) == 1, d
k = d["kernels"][0]
assert k["op"] == "FusedElementwise" and k["name"] == "gelu", k
assert k["nodes"] == ["Mul scale", "Erf erf", "Add plus", "Mul gelu"], k["nodes"]
assert k["bytes_read"] == 2 * 8 * 4 + 2 * 4 and k["bytes_written"] == 2 * 8 * 4 and k["flops"] == 4 * 16, k
PYEOF
rm -f "$T/fusion.json"
"$ONNXC" "$T/m/bad_shape.onnx" -o "$T/bad.so" --fusion-report "$T/fusion.json" 2>/dev/null
[[ -e "$T/fusion.json" ]] && { echo "FAIL: a failed compile left a fusion report"; fails=$((fails+1)); }

echo "$fails failure(s)"
exit $(( fails > 0 ))
