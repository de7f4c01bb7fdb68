#!/usr/bin/env bash
# An If on a run-time input whose one branch cannot run with the static shapes
# (docs/control-flow.md): the compile warns (file, node, op, the branch's
# error) and succeeds; the good branch matches ONNX Runtime; taking the other
# one returns ONNXC_ERR_BRANCH; with both branches broken the compile fails.
# Usage: test_if_branch.sh ONNXC PYTHON [CC]
set -uo pipefail
ONNXC=$1
PY=$2
CC=${3:-cc}
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$PY" "$HERE/make_if_models.py" "$T/m" || exit 1
fails=0
fail() { echo "FAIL $*"; sed 's/^/     | /' "$T/err"; fails=$((fails+1)); }

# compile_run MODEL BAD_BRANCH GOOD_SR BAD_SR SCALE
compile_run() {
  local model=$1 bad=$2
  rm -rf "$T/$model"
  if ! "$ONNXC" -S --name m "$T/m/$model.onnx" --shape x=1x8 -o "$T/$model" 2>"$T/err"; then
    fail "$model: does not compile"; return
  fi
  for text in "$model.onnx: warning: node 'pick_rate' (If): $bad branch cannot run" \
              "(MatMul): inner dimensions differ" "ONNXC_ERR_BRANCH"; do
    grep -qF -- "$text" "$T/err" || { fail "$model: stderr lacks '$text'"; return; }
  done
  grep -v ': warning: ' "$T/err" | grep -q . && { fail "$model: more than the warning on stderr"; return; }
  if ! "$CC" -std=c99 -Wall -Wextra -Werror -pedantic -I"$T/$model" "$HERE/if_branch_driver.c" \
       "$T/$model/m.c" "$T/$model/m_weights.c" -o "$T/$model/driver" -lm 2>"$T/err"; then
    fail "$model: generated code does not build"; return
  fi
  "$T/$model/driver" "$3" "$4" "$5" >"$T/err" 2>&1 || { fail "$model: driver"; return; }
  echo "ok   $model: $(cat "$T/err")"
}
compile_run good_else else 16000 8000 2
compile_run good_then then 8000 16000 3

# The good branch against ONNX Runtime (the check compiles with the data's shapes).
"$ONNXC" check "$T/m/good_else_case" >"$T/out" 2>"$T/err" \
  && echo "ok   check good_else_case" || { cat "$T/out" >>"$T/err"; fail "check good_else_case"; }

# Both branches broken: the usual error, exit 1, no output.
"$ONNXC" "$T/m/neither.onnx" --shape x=1x8 -o "$T/neither.so" 2>"$T/err"
rc=$?
if [[ $rc -eq 1 && ! -e "$T/neither.so" ]] && grep -qF "node 'pick_rate' (If): neither branch can run" "$T/err" &&
   grep -qF "then branch: node 'mm_a' (MatMul)" "$T/err" && grep -qF "else branch: node 'mm_b' (MatMul)" "$T/err"; then
  echo "ok   neither: $(head -n1 "$T/err")"
else
  fail "neither: exit $rc"
fi
echo "$fails failed"
exit $(( fails != 0 ))
