#!/usr/bin/env bash
# The progress line of long compiles (docs/cli.md): drawn on a terminal only,
# in place, and cleared at the end; never with -q or into a pipe; messages
# still reach the user on their own line. A pseudo-terminal comes from
# script(1); ONNXC_PROGRESS_AFTER=0 shows the line from the start, so a small
# model is enough.
set -euo pipefail
ONNXC=$(realpath "$1"); PY=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
"$PY" - <<'PYEOF'
import onnx
from onnx import TensorProto as T, helper
nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Sigmoid", ["r"], ["y"])]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, [4, 4])],
                      [helper.make_tensor_value_info("y", T.FLOAT, [4, 4])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]); m.ir_version = 8
onnx.save(m, "m.onnx")
g.node.append(helper.make_node("NoSuchOp", ["y"], ["z"]))
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "bad.onnx")
PYEOF
fail=0
expect() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
tty_run() { ONNXC_PROGRESS_AFTER=0 TERM=xterm script -qfec "$*" /dev/null 2>&1 || true; }

out=$(tty_run "$ONNXC" m.onnx -o m.so)
expect "on a terminal: the passes" 'grep -q "onnxc: \[[0-9.]* s\] pass check-ops 1/" <<<"$out"'
expect "on a terminal: the kernels emitted" 'grep -q "emitting kernels" <<<"$out"'
expect "on a terminal: the C compiler" 'grep -q "C compiler: m.c" <<<"$out"'
expect "drawn in place and cleared at the end" '[[ "$out" == *$'"'"'\r\033[K'"'"'* ]] && ! grep -q "onnxc: \[" <<<"${out##*$'"'"'\r'"'"'}"'
expect "the library is built" 'test -f m.so'
out=$(tty_run "$ONNXC" -q m.onnx -o m2.so)
expect "-q: no progress line" '! grep -q "onnxc: \[" <<<"$out" && test -f m2.so'
out=$(ONNXC_PROGRESS_AFTER=0 "$ONNXC" m.onnx -o m3.so 2>&1)
expect "into a pipe: no progress line" '! grep -q "onnxc: \[" <<<"$out" && test -f m3.so'
out=$(tty_run "$ONNXC" bad.onnx -o bad.so)
lines=$(sed $'s/\033\\[K//g' <<<"$out" | tr '\r' '\n')
expect "an error still reaches the terminal on its own line" 'grep -q "^bad.onnx.*NoSuchOp" <<<"$lines" && ! test -e bad.so'
exit $fail
