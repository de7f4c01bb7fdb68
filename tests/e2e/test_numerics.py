#!/usr/bin/env python3
"""--check-numerics (docs/numerics.md) end to end.

Usage: test_numerics.py ONNXC

Checks that:
  - a library built with --check-numerics returns ONNXC_ERR_NONFINITE in the
    status's low byte, and NAME_status_node names the node whose output held
    the first NaN: the exact node at -O0, the fused kernel (listing the ONNX
    nodes it computes) at -O2; a run without NaN returns 0 and the same bytes
    as a library built without the option;
  - infinities count by default and not with --check-numerics=nan;
  - float16 outputs are tested on their bits;
  - without the option the generated source has no check (same text as before);
  - `onnxc check` on a case whose reference has no NaN where the model makes
    one rebuilds with the checks and names the node;
  - a bad value of the option and --target cuda are refused.
"""
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def save(model, path):
    model.ir_version = 8
    onnx.save(model, path)


def sqrt_model(path, dt=TensorProto.FLOAT):
    """x -> Neg -> MatMul(w) -> Sqrt -> Add(itself): Sqrt of a negative sum is NaN."""
    npdt = np.float16 if dt == TensorProto.FLOAT16 else np.float32
    w = numpy_helper.from_array(np.full((8, 8), 0.1, npdt), "w")
    nodes = [helper.make_node("Neg", ["x"], ["n"], name="neg0"),
             helper.make_node("MatMul", ["n", "w"], ["m"], name="mm1"),
             helper.make_node("Sqrt", ["m"], ["q"], name="sqrt2"),
             helper.make_node("Add", ["q", "q"], ["y"], name="add3")]
    g = helper.make_graph(nodes, "num", [helper.make_tensor_value_info("x", dt, [2, 8])],
                          [helper.make_tensor_value_info("y", dt, [2, 8])], [w])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def exp_model(path):
    """x -> Exp -> Relu: +inf for large x, never NaN."""
    nodes = [helper.make_node("Exp", ["x"], ["e"], name="exp0"),
             helper.make_node("Relu", ["e"], ["y"], name="relu1")]
    g = helper.make_graph(nodes, "inf", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def build(onnxc, model, lib, *opts):
    subprocess.run([onnxc, model, "-o", lib, "--name", "m", *opts], check=True)
    so = ctypes.CDLL(lib)
    so.m_run_v.restype = ctypes.c_int
    so.m_run_v.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    return so


def run(so, arena_bytes, x, y):
    arena = np.zeros(arena_bytes + 64, np.uint8)
    off = (-arena.ctypes.data) % 64
    ins = (ctypes.c_void_p * 1)(x.ctypes.data)
    outs = (ctypes.c_void_p * 1)(y.ctypes.data)
    return so.m_run_v(arena.ctypes.data + off, ins, outs)


def status_node(so, st):
    so.m_status_node.restype = ctypes.c_char_p
    so.m_status_node.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    op = ctypes.c_char_p()
    node = so.m_status_node(st, ctypes.byref(op))
    return (node.decode() if node else None), (op.value.decode() if op.value else None)


def main():
    onnxc = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="numerics")
    arena = 1 << 16  # more than these models' NAME_ARENA_BYTES
    model = os.path.join(tmp, "sqrt.onnx")
    sqrt_model(model)
    neg = np.linspace(0.1, 1.0, 16, dtype=np.float32).reshape(2, 8)  # -x @ w < 0: NaN
    pos = -neg                                                        # finite

    for level, want_node, want_ops in (("-O0", "sqrt2", ["Sqrt"]),
                                       ("-O2", "add3", ["Sqrt sqrt2", "Add add3"])):
        so = build(onnxc, model, os.path.join(tmp, f"lib{level}.so"), level, "--check-numerics")
        y = np.zeros((2, 8), np.float32)
        st = run(so, arena, neg, y)
        check(st & 0xFF == 11, f"{level}: status {st} has ONNXC_ERR_NONFINITE (11) in its low byte")
        node, op = status_node(so, st)
        check(node == want_node and all(w in (op or "") for w in want_ops),
              f"{level}: status names node {node!r} ({op}); expected {want_node!r} with {want_ops}")
        check(status_node(so, 0) == (None, None) and status_node(so, 2)[0] is None,
              f"{level}: other statuses name no node")
        y_checked = np.zeros((2, 8), np.float32)
        st = run(so, arena, pos, y_checked)
        plain = build(onnxc, model, os.path.join(tmp, f"plain{level}.so"), level)
        y_plain = np.zeros((2, 8), np.float32)
        st_plain = run(plain, arena, pos, y_plain)
        check(st == 0 and st_plain == 0 and y_checked.tobytes() == y_plain.tobytes()
              and np.all(np.isfinite(y_plain)),
              f"{level}: finite run returns 0 and the bytes of the unchecked build")

    # infinities: counted by default, not with =nan
    inf_model = os.path.join(tmp, "exp.onnx")
    exp_model(inf_model)
    big = np.array([1.0, 200.0, 2.0, 3.0], np.float32)
    y = np.zeros(4, np.float32)
    st_all = run(build(onnxc, inf_model, os.path.join(tmp, "inf_all.so"), "-O0", "--check-numerics"), arena, big, y)
    st_nan = run(build(onnxc, inf_model, os.path.join(tmp, "inf_nan.so"), "-O0", "--check-numerics=nan"),
                 arena, big, y)
    check(st_all & 0xFF == 11 and st_nan == 0 and np.isinf(y[1]),
          f"Exp overflow: status {st_all} by default, {st_nan} with =nan")

    # float16: the bit patterns are tested
    f16 = os.path.join(tmp, "sqrt16.onnx")
    sqrt_model(f16, TensorProto.FLOAT16)
    so = build(onnxc, f16, os.path.join(tmp, "lib16.so"), "-O0", "--check-numerics")
    y16 = np.zeros((2, 8), np.float16)
    st = run(so, arena, neg.astype(np.float16), y16)
    check(st & 0xFF == 11 and status_node(so, st)[0] == "sqrt2", f"float16: status {st} names sqrt2")

    # without the option the source is unchanged by the feature
    out_a, out_b = os.path.join(tmp, "srcA"), os.path.join(tmp, "srcB")
    subprocess.run([onnxc, "-S", "--name", "m", model, "-o", out_a], check=True)
    subprocess.run([onnxc, "-S", "--name", "m", "--check-numerics", model, "-o", out_b], check=True)
    src_a = open(os.path.join(out_a, "m.c")).read()
    src_b = open(os.path.join(out_b, "m.c")).read()
    check("nonfinite" not in src_a and "status_node" not in src_a and "nonfinite" in src_b,
          "-S without --check-numerics has no checks; with it, it does")
    check("printf" not in src_b and "malloc" not in src_b, "checked source has no stdio or malloc")

    # onnxc check: a NaN the reference lacks is traced to its node
    case = os.path.join(tmp, "case")
    os.makedirs(os.path.join(case, "test_data_set_0"))
    sqrt_model(os.path.join(case, "model.onnx"))
    with open(os.path.join(case, "test_data_set_0", "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(neg, "x").SerializeToString())
    with open(os.path.join(case, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(np.zeros((2, 8), np.float32), "y").SerializeToString())
    p = subprocess.run([onnxc, "check", "-O0", case], capture_output=True, text=True)
    check(p.returncode == 1 and "the first NaN came from node 'sqrt2' (Sqrt)" in p.stderr,
          f"onnxc check names the node of the first NaN (exit {p.returncode}): {p.stderr.strip()[-300:]}")

    # refusals
    p = subprocess.run([onnxc, model, "-S", "-o", os.path.join(tmp, "x"), "--check-numerics=maybe"],
                       capture_output=True, text=True)
    check(p.returncode != 0 and "check-numerics" in p.stderr, "a bad --check-numerics value is refused")
    p = subprocess.run([onnxc, model, "-S", "-o", os.path.join(tmp, "y"), "--target", "cuda",
                        "--check-numerics"], capture_output=True, text=True)
    check(p.returncode != 0 and "C target" in p.stderr, "--check-numerics with --target cuda is refused")

    shutil.rmtree(tmp, ignore_errors=True)
    if FAILS:
        print(f"{len(FAILS)} check(s) failed")
        return 1
    print("all numerics checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
