#!/usr/bin/env bash
# Builds the bundled digit classifier as a shared library with onnxc, links the
# example program against it, and requires exactly as many correct answers as
# ONNX Runtime had (models/digits/README.md): the same function, the same argmax.
set -euo pipefail
ONNXC=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$ONNXC" "$SRC/models/digits/digits.onnx" --name digits -o "$T/libdigits.so"
"$ONNXC" "$SRC/models/digits/digits.onnx" --name digits -S -o "$T/src"
for cc in gcc clang; do
  command -v $cc >/dev/null || continue
  $cc -std=c99 -Wall -Wextra -Werror -pedantic -c "$T/src/digits.c" -I"$T/src" -o "$T/d_$cc.o"
  $cc -std=c99 -Wall -Wextra -Werror -pedantic -c "$T/src/digits_weights.c" -I"$T/src" -o "$T/w_$cc.o"
done
if grep -nE '\b(malloc|calloc|realloc|free|printf|fprintf|puts|FILE)\b|<stdio.h>|<stdlib.h>' "$T"/src/*.c "$T"/src/*.h; then
  echo "FAIL: generated code uses allocation or stdio"; exit 1
fi
cc -std=c99 -O2 -I"$T/src" "$SRC/examples/digits/main.c" "$T/libdigits.so" -Wl,-rpath,"$T" -o "$T/demo"
"$T/demo" "$SRC/models/digits/test_digits.bin" "$SRC/models/digits/test_labels.bin" | tee "$T/log" | tail -n 3
got=$(sed -n 's/^accuracy: \([0-9]*\)\/.*$/\1/p' "$T/log")
want=$(sed -n 's/^| onnxruntime on .*(\([0-9]*\)\/[0-9]*).*$/\1/p' "$SRC/models/digits/README.md")
echo "correct: onnxc $got, onnxruntime (models/digits/README.md) $want"
[[ -n "$got" && "$got" == "$want" ]]
