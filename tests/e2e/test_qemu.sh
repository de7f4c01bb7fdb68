#!/usr/bin/env bash
# Firmware end to end: models compiled by onnxc are linked into bare-metal
# firmware for a Cortex-M4F (examples/cortex-m), run under QEMU's mps2-an386,
# and their outputs compared with the same program built for the host and,
# where the case has them, with ONNX Runtime's outputs (rtol 1e-3, atol 1e-7:
# newlib's libm is not glibc's). `onnxc footprint` is cross-checked with
# arm-none-eabi-size and with the stack high-water mark measured under QEMU.
#
# Usage: test_qemu.sh ONNXC SRC_DIR MODELS_DIR [PYTHON] [CASE_DIR...]
#   MODELS_DIR  cases written by tests/models/make_models.py (made here if absent)
#   PYTHON      a Python with onnx and numpy (reads .pb files); default python3
#   CASE_DIR    more models in the ONNX test layout (model.onnx, test_data_set_0/)
set -uo pipefail
ONNXC=$1
SRC=$2
MODELS=$3
PY=${4:-python3}
shift 3
(($#)) && shift
EXTRA=("$@")
if ! command -v "$PY" >/dev/null; then
  # cmake -DONNXC_PYTHON=python3 can arrive here as SRC_DIR/python3 (find_program
  # in frontend/ turns the untyped cache entry into a path).
  echo "note: Python '$PY' not found, using python3"
  PY=python3
fi
EX=$SRC/examples/cortex-m
ARCH=(-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16)

for tool in arm-none-eabi-gcc arm-none-eabi-size qemu-system-arm; do
  if ! command -v $tool >/dev/null; then
    echo "FAIL: $tool is not installed (bash scripts/setup.sh --test installs it)"
    exit 1
  fi
done
if [[ $(arm-none-eabi-gcc "${ARCH[@]}" -print-file-name=libm.a) == libm.a ]]; then
  echo "FAIL: newlib's libm for Cortex-M4F is missing (package libnewlib-arm-none-eabi)"
  exit 1
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
if [[ ! -f $MODELS/resnet_blocks/model.onnx || ! -f $MODELS/mobilenet/model.onnx ]]; then
  MODELS=$T/models
  "$PY" "$SRC/tests/models/make_models.py" "$MODELS" >/dev/null || { echo "FAIL: make_models.py"; exit 1; }
fi
fails=0

# run_case NAME MODEL BUILD_ARGS...: build, run under QEMU and on the host, compare.
run_case() {
  local name=$1 model=$2
  shift 2
  local out=$T/$name
  if ! bash "$EX/build.sh" --onnxc "$ONNXC" --python "$PY" --host "$@" "$model" "$out" >"$T/$name.build" 2>&1; then
    echo "FAIL $name: build"
    sed 's/^/     | /' "$T/$name.build"
    fails=$((fails + 1))
    return
  fi
  # Semihosting output goes to QEMU's stderr.
  timeout 120 qemu-system-arm -M mps2-an386 -nographic -semihosting-config enable=on,target=native \
    -kernel "$out/firmware.elf" </dev/null >"$out/qemu.log" 2>&1
  local rc=$?
  "$out/host" >"$out/host.log" 2>&1
  local hrc=$?
  if ((rc != 0 || hrc != 0)); then
    echo "FAIL $name: exit status $rc under QEMU, $hrc on the host"
    tail -n 5 "$out/qemu.log" | sed 's/^/     | /'
    fails=$((fails + 1))
    return
  fi
  local text
  text=$(awk '/^ *text/ {getline; print $1 " B text, " $2 " B data, " $3 " B bss"}' "$T/$name.build")
  echo "ok   $name runs under QEMU: $text; $(grep '^stack' "$out/qemu.log")"
  "$PY" "$EX/compare.py" "$out/qemu.log" "$out/host.log" | sed "s/^/     $name vs host: /"
  ((PIPESTATUS[0] == 0)) || fails=$((fails + 1))
  if [[ -n ${PBDIR:-} ]]; then
    "$PY" "$EX/compare.py" "$out/qemu.log" --pb "$PBDIR" | sed "s/^/     $name vs onnxruntime: /"
    ((PIPESTATUS[0] == 0)) || fails=$((fails + 1))
  fi
}

# footprint_case NAME MODEL: `onnxc footprint` against arm-none-eabi-size of the
# very objects it measured, and its stack estimate against QEMU's measurement.
footprint_case() {
  local name=$1 model=$2 fp=$T/$1.fp
  if ! "$ONNXC" footprint "$model" --name "$name" --json "$fp.json" --keep-temps >"$fp.txt" 2>"$fp.err"; then
    echo "FAIL $name: onnxc footprint"
    sed 's/^/     | /' "$fp.err"
    fails=$((fails + 1))
    return
  fi
  local dir
  dir=$(sed -n 's/^onnxc: kept temporary files in //p' "$fp.err")
  arm-none-eabi-size "$dir/$name.o" "$dir/${name}_weights.o" >"$fp.size"
  rm -rf "$dir"
  local used
  used=$(sed -n 's/^stack \([0-9]*\) of .*/\1/p' "$T/$name/qemu.log" 2>/dev/null)
  if "$PY" - "$fp.json" "$fp.size" "${used:-0}" "$T/$name/src/$name.h" <<'EOF'; then
import json, re, sys
fp = json.load(open(sys.argv[1]))
rows = [l.split() for l in open(sys.argv[2]).read().splitlines()[1:]]
(ct, cd, cb), (wt, wd, wb) = [tuple(int(x) for x in r[:3]) for r in rows]
fl, ram = fp["flash"], fp["ram"]
used = int(sys.argv[3])
m = re.search(r"#define \w+_ARENA_BYTES (\d+)", open(sys.argv[4]).read())
checks = [
    ("code + code rodata = size text of the model object", fl["code"] + fl["code_rodata"], ct),
    ("weights = size text of the weights object", fl["weights"], wt),
    ("data = size data", fl["data"], cd + wd),
    ("bss = size bss", ram["bss"], cb + wb),
    ("arena = _ARENA_BYTES", ram["arena"], int(m.group(1))),
]
ok = all(a == b for _, a, b in checks)
for what, a, b in checks:
    print(f"     {'ok  ' if a == b else 'FAIL'} footprint {what}: {a} vs {b}")
est = ram["stack"]
# The firmware's whole stack (startup, main, libm, semihosting) is at least the
# model's deepest path and not much more.
stack_ok = used == 0 or (est <= used <= est + 2048)
print(f"     {'ok  ' if stack_ok else 'FAIL'} footprint stack estimate {est} B "
      f"(path {' > '.join(p['function'] for p in fp['stack']['path'])}), "
      f"measured under QEMU for the whole firmware {used} B")
sys.exit(0 if ok and stack_ok else 1)
EOF
    :
  else
    fails=$((fails + 1))
  fi
  sed 's/^/     | /' "$fp.txt"
}

# footprint's failure paths: bad usage exits 2, a failing target compiler 1.
footprint_errors() {
  local m=$SRC/models/digits/digits.onnx rc
  "$ONNXC" footprint >/dev/null 2>&1; rc=$?
  ((rc == 2)) || { echo "FAIL footprint without a model: exit $rc, expected 2"; fails=$((fails + 1)); }
  "$ONNXC" footprint "$m" -o "$T/x" >/dev/null 2>&1; rc=$?
  ((rc == 2)) || { echo "FAIL footprint -o: exit $rc, expected 2"; fails=$((fails + 1)); }
  "$ONNXC" footprint "$m" --cc "$T/no-such-cc" >/dev/null 2>"$T/fp_err"; rc=$?
  if ((rc != 1)) || ! grep -q "no-such-cc" "$T/fp_err"; then
    echo "FAIL footprint with a missing compiler: exit $rc, expected 1 and a message"
    fails=$((fails + 1))
  else
    echo "ok   footprint errors: $(head -n 1 "$T/fp_err")"
  fi
}

start=$SECONDS
footprint_errors
PBDIR="" run_case digits "$SRC/models/digits/digits.onnx" --name digits \
  --raw "$SRC/models/digits/test_digits.bin" --count 4
footprint_case digits "$SRC/models/digits/digits.onnx"
for m in resnet_blocks mobilenet; do
  PBDIR=$MODELS/$m/test_data_set_0 run_case "$m" "$MODELS/$m/model.onnx" --name "$m" --pb "$MODELS/$m/test_data_set_0"
done
footprint_case resnet_blocks "$MODELS/resnet_blocks/model.onnx"
for c in "${EXTRA[@]}"; do
  n=$(basename "$c" | tr -c 'a-zA-Z0-9_\n' _)
  PBDIR=$c/test_data_set_0 run_case "$n" "$c/model.onnx" --name "m_$n" --pb "$c/test_data_set_0"
done
echo "$((SECONDS - start)) s"
if ((fails)); then
  echo "FAIL: $fails check(s) failed"
  exit 1
fi
echo "all firmware checks passed"
