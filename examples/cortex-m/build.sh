#!/usr/bin/env bash
# build.sh - an ONNX model compiled by onnxc, linked into bare-metal firmware
# for QEMU's mps2-an386 (Cortex-M4F), with embedded test inputs.
#
# usage: build.sh [options] MODEL.onnx OUTDIR
#   --raw FILE [--count N]   inputs: raw tensors of input 0 (default count 4)
#   --pb SET_DIR             inputs: an ONNX test_data_set folder (repeatable)
#   --name NAME              C prefix of the model (default net)
#   --onnxc PATH             the compiler (default: onnxc in PATH, else build/bin/onnxc)
#   --python PY              Python for gen_data.py (--pb needs the onnx package)
#   --host                   also build OUTDIR/host: the same program for this machine
#   --inproc                 the model's object comes from onnxc's in-process compiler
#                            (--triple thumbv7em-none-eabihf --cpu cortex-m4; docs/clang.md),
#                            run with PATH=$INPROC_PATH when set (a PATH without compilers)
#   -D DIM=VALUE, -O0..-O3, --weights-section SEC   passed to onnxc (mps2_an386.ld
#                            places .psram_rodata; weights over 3 MiB go there anyway)
# Writes OUTDIR/src (generated C), OUTDIR/fw_data.[ch], OUTDIR/firmware.elf
# (+ .map) and prints its size. Run it with
#   qemu-system-arm -M mps2-an386 -nographic -semihosting-config enable=on,target=native \
#     -kernel OUTDIR/firmware.elf
# Environment: ARM_CC (default arm-none-eabi-gcc), HOST_CC (default cc).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

ONNXC=$(command -v onnxc || echo "$ROOT/build/bin/onnxc")
PY=python3
NAME=net
HOST=0
INPROC=0
DATA=()
ONNXC_ARGS=()
POS=()
while (($#)); do
  case $1 in
    --raw) DATA+=(--raw "$2"); shift 2 ;;
    --count) DATA+=(--count "$2"); shift 2 ;;
    --pb) DATA+=(--pb "$2"); shift 2 ;;
    --name) NAME=$2; shift 2 ;;
    --onnxc) ONNXC=$2; shift 2 ;;
    --python) PY=$2; shift 2 ;;
    --host) HOST=1; shift ;;
    --inproc) INPROC=1; shift ;;
    -D) ONNXC_ARGS+=(-D "$2"); shift 2 ;;
    --weights-section) ONNXC_ARGS+=(--weights-section "$2"); shift 2 ;;
    -D*|-O[0-3]) ONNXC_ARGS+=("$1"); shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    -*) echo "build.sh: unknown option $1" >&2; exit 2 ;;
    *) POS+=("$1"); shift ;;
  esac
done
((${#POS[@]} == 2)) || { echo "usage: build.sh [options] MODEL.onnx OUTDIR (see --help)" >&2; exit 2; }
MODEL=${POS[0]}
OUT=${POS[1]}
((${#DATA[@]})) || { echo "build.sh: give inputs with --raw FILE or --pb SET_DIR" >&2; exit 2; }
# gen_data.py takes all --pb folders after one flag.
PB=()
ARGS=()
for ((i = 0; i < ${#DATA[@]}; i += 2)); do
  if [[ ${DATA[i]} == --pb ]]; then PB+=("${DATA[i+1]}"); else ARGS+=("${DATA[i]}" "${DATA[i+1]}"); fi
done
((${#PB[@]})) && ARGS+=(--pb "${PB[@]}")

ARM_CC=${ARM_CC:-arm-none-eabi-gcc}
HOST_CC=${HOST_CC:-cc}
command -v "$ARM_CC" >/dev/null || { echo "build.sh: $ARM_CC not found (scripts/setup.sh --test installs it)" >&2; exit 1; }

# The target: a Cortex-M4 with its single-precision FPU, floats passed in FP
# registers. -Os suits the generated portable kernels (see docs/firmware.md).
ARCH=(-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16)
CFLAGS=("${ARCH[@]}" -Os -g -ffunction-sections -fdata-sections)

# Symbolic dimensions (a dynamic batch...) take their extents from the test data.
if ((${#PB[@]})) && ! [[ " ${ONNXC_ARGS[*]-} " == *" -D"* ]]; then
  mapfile -t PINS < <("$PY" "$HERE/gen_data.py" --pins "$MODEL" --pb "${PB[0]}")
  ONNXC_ARGS+=("${PINS[@]}")
fi

mkdir -p "$OUT"
rm -rf "$OUT/src"
"$ONNXC" -S "${ONNXC_ARGS[@]}" --name "$NAME" "$MODEL" -o "$OUT/src"
"$PY" "$HERE/gen_data.py" --header "$OUT/src/$NAME.h" --name "$NAME" --out "$OUT" "${ARGS[@]}"

# Big tensors go to the 16 MiB PSRAM instead of the 4 MiB SSRAMs.
UP=$(echo "$NAME" | tr '[:lower:]' '[:upper:]')
ARENA=$(sed -n "s/^#define ${UP}_ARENA_BYTES \([0-9]*\)$/\1/p" "$OUT/src/$NAME.h")
DEFS=()
((ARENA > 2 * 1024 * 1024)) && DEFS+=(-DFW_ARENA_SECTION='".psram_bss"')
if ((INPROC)); then
  # One object, code and weights, from onnxc alone: no cross compiler involved.
  inproc() {
    env -u CC PATH="${INPROC_PATH:-$PATH}" "$ONNXC" --triple thumbv7em-none-eabihf --cpu cortex-m4 \
      "${ONNXC_ARGS[@]}" --name "$NAME" "$@" "$MODEL" -o "$OUT/$NAME.o"
  }
  inproc
  if (($(arm-none-eabi-size "$OUT/$NAME.o" | awk 'NR == 2 {print $1}') > 3 * 1024 * 1024)); then
    inproc --weights-section .psram_rodata
  fi
  objs=("$OUT/$NAME.o")
else
  "$ARM_CC" "${CFLAGS[@]}" -std=c99 -c "$OUT/src/${NAME}_weights.c" -o "$OUT/${NAME}_weights.o"
  WBYTES=$(arm-none-eabi-size "$OUT/${NAME}_weights.o" | awk 'NR == 2 {print $1}')
  if ((WBYTES > 3 * 1024 * 1024)); then
    "$ONNXC" -S "${ONNXC_ARGS[@]}" --name "$NAME" --weights-section .psram_rodata "$MODEL" -o "$OUT/src"
    "$ARM_CC" "${CFLAGS[@]}" -std=c99 -c "$OUT/src/${NAME}_weights.c" -o "$OUT/${NAME}_weights.o"
  fi
  # The model is plain C99; the example's files use a few GCC extensions.
  "$ARM_CC" "${CFLAGS[@]}" -std=c99 -Wall -Wextra -c "$OUT/src/$NAME.c" -o "$OUT/$NAME.o"
  objs=("$OUT/$NAME.o" "$OUT/${NAME}_weights.o")
fi
for f in startup libc_min semihost main fw_data; do
  src="$HERE/$f.c"
  [[ $f == fw_data ]] && src="$OUT/fw_data.c"
  "$ARM_CC" "${CFLAGS[@]}" -std=gnu11 -Wall -Wextra -Werror -fno-tree-loop-distribute-patterns "${DEFS[@]}" \
    -I"$HERE" -I"$OUT" -I"$OUT/src" -c "$src" -o "$OUT/$f.o"
  objs+=("$OUT/$f.o")
done
# No C start files and no C library: startup.c and libc_min.c are the runtime
# (-fno-tree-loop-distribute-patterns above keeps their copy loops from becoming
# calls to memcpy), libm gives the math functions the model calls, libgcc the
# compiler's helper routines.
"$ARM_CC" "${ARCH[@]}" -nostartfiles -nostdlib -Wl,--gc-sections -T "$HERE/mps2_an386.ld" \
  -Wl,-Map="$OUT/firmware.map" "${objs[@]}" -lm -lgcc -o "$OUT/firmware.elf"
arm-none-eabi-size "$OUT/firmware.elf"

if ((HOST)); then
  $HOST_CC -std=gnu11 -O2 -I"$HERE" -I"$OUT" -I"$OUT/src" "$HERE/main.c" "$HERE/host.c" \
    "$OUT/fw_data.c" "$OUT/src/$NAME.c" "$OUT/src/${NAME}_weights.c" -lm -o "$OUT/host"
fi
