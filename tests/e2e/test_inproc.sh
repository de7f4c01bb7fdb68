#!/usr/bin/env bash
# The in-process compiler (docs/clang.md) on a machine without C compilers:
# onnxc runs with a PATH that holds only the system linker (no gcc, cc,
# clang or arm-none-eabi-gcc) and no $CC, and builds
#   - host .so, .a and .o of two models, each checked against ONNX Runtime's
#     outputs (the .a and .o made loadable by `ld -shared` alone);
#   - Cortex-M4 objects (--triple thumbv7em-none-eabihf --cpu cortex-m4) that
#     are linked into the firmware of test_qemu.sh, run under QEMU and
#     compared with the host build and with ONNX Runtime;
#   - `onnxc run` and `onnxc check` through the JIT.
# Usage: test_inproc.sh ONNXC SRC_DIR MODELS_DIR PYTHON
set -uo pipefail
ONNXC=$(realpath "$1")
SRC=$2
MODELS=$3
PY=$4
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

if [[ ! -f $MODELS/resnet_blocks/model.onnx || ! -f $MODELS/mlp/model.onnx || ! -f $MODELS/transformer_block/model.onnx ]]; then
  MODELS=$T/models
  "$PY" "$SRC/tests/models/make_models.py" "$MODELS" >/dev/null || { echo "FAIL: make_models.py"; exit 1; }
fi
# The bare PATH: the system linker only.
mkdir -p "$T/bin"
ln -s "$(command -v ld)" "$T/bin/ld"
for tool in gcc cc clang arm-none-eabi-gcc; do
  if PATH=$T/bin command -v $tool >/dev/null; then
    echo "FAIL: $tool is still on the bare PATH"
    exit 1
  fi
done
bare() { env -u CC -u ONNXC_CFLAGS PATH="$T/bin" "$@"; }

# check_lib LIB.so NAME CASE: loads LIB.so, runs NAME_run on the case's inputs
# and compares with its expected outputs (ONNX Runtime's).
check_lib() {
  "$PY" - "$@" <<'PYEOF'
import ctypes, glob, re, sys
import numpy as np
import onnx
from onnx import numpy_helper
lib, name, case, header = sys.argv[1:5]
def load(p):
    t = onnx.TensorProto()
    t.ParseFromString(open(p, "rb").read())
    return numpy_helper.to_array(t)
ins = [np.ascontiguousarray(load(p)) for p in sorted(glob.glob(case + "/test_data_set_0/input_*.pb"))]
exp = [load(p) for p in sorted(glob.glob(case + "/test_data_set_0/output_*.pb"))]
arena_bytes = int(re.search(r"#define \w+_ARENA_BYTES (\d+)", open(header).read()).group(1))
raw = np.zeros(arena_bytes + 128, np.uint8)
arena = raw.ctypes.data + (-raw.ctypes.data) % 64
outs = [np.zeros(e.shape, e.dtype) for e in exp]
run = getattr(ctypes.CDLL(lib), name + "_run")
run.restype = ctypes.c_int
rc = run(ctypes.c_void_p(arena), *[ctypes.c_void_p(a.ctypes.data) for a in ins + outs])
worst = max(float(np.max(np.abs(o - e) / (1e-7 + 1e-3 * np.abs(e)))) if e.size else 0 for o, e in zip(outs, exp))
print(f"rc {rc}, worst error {worst:.3g} of the tolerance (rtol 1e-3, atol 1e-7)")
sys.exit(0 if rc == 0 and worst <= 1 else 1)
PYEOF
}

start=$SECONDS
for m in resnet_blocks mlp transformer_block; do
  model=$MODELS/$m/model.onnx case=$MODELS/$m
  "$ONNXC" -S --name "$m" "$model" -o "$T/$m.src" || { fail "$m: -S"; continue; }
  # Identical kernels are compiled once (compile time: docs/clang.md); the
  # block's two residual Adds are the same function.
  if ! out=$("$PY" - "$T/$m.src/$m.c" "$m" <<'PYEOF'
import re, sys
text = open(sys.argv[1]).read()
defs = re.findall(r"(?ms)^(?:static|ONNXC_NODE_FN|ONNXC_NODE_FN_W) int (node\d+_\w+)(\(.*?^\}\n)", text)
aliases = re.findall(r"(?m)^#define (node\d+_\w+) (node\d+_\w+)$", text)
bodies = [d[1] for d in defs]
dup = len(bodies) - len(set(bodies))
print(f"{len(defs)} node functions, {len(aliases)} aliases, {dup} duplicated")
sys.exit(1 if dup or (sys.argv[2] == "transformer_block" and not aliases) else 0)
PYEOF
  ); then
    fail "$m: $out"
  fi
  for kind in so a o; do
    if ! bare "$ONNXC" --name "$m" "$model" -o "$T/$m.$kind" 2>"$T/err"; then
      fail "$m.$kind: the in-process build failed"; sed 's/^/     | /' "$T/err"; continue
    fi
    lib=$T/$m.$kind
    if [[ $kind == o ]]; then # each node stays its own function (compile time: docs/clang.md)
      want=$(grep -cE '^(static|ONNXC_NODE_FN|ONNXC_NODE_FN_W) int node[0-9]+_' "$T/$m.src/$m.c")
      got=$(nm "$T/$m.o" | grep -c ' t node[0-9]*_[A-Za-z]*$')
      [[ $want -gt 1 && $got == "$want" ]] || fail "$m.o: $got node functions in the object, $want in the C"
    fi
    if [[ $kind != so ]]; then # ld alone makes the object or archive loadable
      lib=$T/$m.$kind.so
      bare ld -shared -o "$lib" --whole-archive "$T/$m.$kind" --no-whole-archive -lm -lc || { fail "$m.$kind: ld"; continue; }
    fi
    if out=$(check_lib "$lib" "$m" "$case" "$T/$m.src/$m.h" 2>&1); then
      echo "ok   $m.$kind built without a C compiler on PATH: $out"
    else
      fail "$m.$kind: $out"
    fi
  done
  # onnxc run under the JIT: .pb inputs in, .npy outputs out, against the case's outputs.
  args=()
  i=0
  for name in $("$PY" -c "import onnx, sys; g = onnx.load(sys.argv[1]).graph; init = {t.name for t in g.initializer}
print(' '.join(v.name for v in g.input if v.name not in init))" "$model"); do
    args+=(--input "$name=$case/test_data_set_0/input_$i.pb")
    i=$((i + 1))
  done
  if ! bare "$ONNXC" run "$model" "${args[@]}" --output "$T/$m.run" >"$T/$m.run.txt" 2>&1; then
    fail "$m: onnxc run"; sed 's/^/     | /' "$T/$m.run.txt"
  elif out=$("$PY" - "$case" "$T/$m.run.txt" <<'PYEOF'
import glob, sys
import numpy as np, onnx
from onnx import numpy_helper
exp = [numpy_helper.to_array(onnx.load_tensor(p)) for p in sorted(glob.glob(sys.argv[1] + "/test_data_set_0/output_*.pb"))]
got = [np.load(p) for p in open(sys.argv[2]).read().split()]
assert len(got) == len(exp), f"{len(got)} outputs, expected {len(exp)}"
worst = max(float(np.max(np.abs(g - e) / (1e-7 + 1e-3 * np.abs(e)))) for g, e in zip(got, exp))
assert all(g.shape == e.shape for g, e in zip(got, exp)) and worst <= 1, f"worst {worst}"
print(f"{len(got)} output(s), worst error {worst:.3g} of the tolerance")
PYEOF
  ); then
    echo "ok   $m: onnxc run under the JIT: $out"
  else
    fail "$m: onnxc run outputs: $out"
  fi
  # The same through the JIT: onnxc check compares with the case's outputs.
  if out=$(bare "$ONNXC" check "$case" 2>&1); then
    echo "ok   $m: onnxc check under the JIT"
  else
    fail "$m: onnxc check under the JIT: $out"
  fi
done

# onnxc run's errors: no --output is bad usage (2); a missing input or an unknown name, 1 and a message.
m=$MODELS/mlp/model.onnx
bare "$ONNXC" run "$m" >/dev/null 2>&1; rc1=$?
bare "$ONNXC" run "$m" --output "$T/e" >/dev/null 2>"$T/e1"; rc2=$?
bare "$ONNXC" run "$m" --input nosuch=x.npy --output "$T/e" >/dev/null 2>"$T/e2"; rc3=$?
if ((rc1 == 2 && rc2 == 1 && rc3 == 1)) && grep -q "needs --input" "$T/e1" && grep -q "no input of that name" "$T/e2"; then
  echo "ok   onnxc run errors: $(head -n 1 "$T/e1")"
else
  fail "onnxc run errors: exit $rc1 $rc2 $rc3, expected 2 1 1"; cat "$T/e1" "$T/e2"
fi

# onnxc profile: its programs under the JIT; the bandwidth probe must not be optimized away.
if bare "$ONNXC" profile --runs 3 "$SRC/models/digits/digits.onnx" >"$T/prof.txt" 2>&1 &&
    bw=$(sed -n 's/.*memory copy \([0-9.]*\) GB\/s.*/\1/p' "$T/prof.txt") &&
    awk -v b="$bw" 'BEGIN { exit !(b > 0.1 && b < 10000) }'; then
  echo "ok   onnxc profile under the JIT (memory copy ${bw} GB/s)"
else
  fail "onnxc profile under the JIT"; sed 's/^/     | /' "$T/prof.txt"
fi

# Cortex-M4: the model object from --triple, the firmware around it as in test_qemu.sh.
EX=$SRC/examples/cortex-m
for m in digits resnet_blocks; do
  if [[ $m == digits ]]; then
    args=(--raw "$SRC/models/digits/test_digits.bin" --count 4) model=$SRC/models/digits/digits.onnx pb=""
  else
    args=(--pb "$MODELS/$m/test_data_set_0") model=$MODELS/$m/model.onnx pb=$MODELS/$m/test_data_set_0
  fi
  out=$T/fw_$m
  if ! INPROC_PATH=$T/bin bash "$EX/build.sh" --inproc --onnxc "$ONNXC" --python "$PY" --host --name "$m" \
      "${args[@]}" "$model" "$out" >"$T/$m.build" 2>&1; then
    fail "$m: Cortex-M4 build"; sed 's/^/     | /' "$T/$m.build"; continue
  fi
  timeout 120 qemu-system-arm -M mps2-an386 -nographic -semihosting-config enable=on,target=native \
    -kernel "$out/firmware.elf" </dev/null >"$out/qemu.log" 2>&1 || { fail "$m: QEMU run"; tail -n 5 "$out/qemu.log"; continue; }
  "$out/host" >"$out/host.log" 2>&1 || { fail "$m: host run"; continue; }
  "$PY" "$EX/compare.py" "$out/qemu.log" "$out/host.log" | sed "s/^/ok   $m Cortex-M4 (in-process object) vs host: /"
  ((PIPESTATUS[0] == 0)) || fail "$m: QEMU vs host"
  if [[ -n $pb ]]; then
    "$PY" "$EX/compare.py" "$out/qemu.log" --pb "$pb" | sed "s/^/ok   $m Cortex-M4 vs onnxruntime: /"
    ((PIPESTATUS[0] == 0)) || fail "$m: QEMU vs onnxruntime"
  fi
done
echo "$((SECONDS - start)) s"
if ((fails)); then
  echo "FAIL: $fails check(s) failed"
  exit 1
fi
echo "all in-process compiler checks passed"
