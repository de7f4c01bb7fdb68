#!/usr/bin/env python3
"""onnxc compare (docs/compare.md) end to end.

Usage: test_compare.py ONNXC PYTHON

Checks that:
  - a small CNN matches ONNX Runtime value by value (exit 0), and --json
    lists every value a node makes;
  - a model where onnxc and ONNX Runtime really differ (Cast of NaN to int32:
    onnxc gives 0, ONNX Runtime INT32_MIN; the ONNX spec leaves it open) is
    reported at the Cast, the first value that differs, with its inputs
    agreeing, and exits 1;
  - a wrong input name and a Python without the packages are errors (exit 2).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper

FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def cnn(path):
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.standard_normal((6, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(6).astype(np.float32), "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("Softmax", ["f"], ["y"], name="softmax")]
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", T.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [1, 6])], [w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def cast_nan(path):
    nodes = [helper.make_node("Log", ["x"], ["l"], name="log0"),
             helper.make_node("Cast", ["l"], ["c"], to=T.INT32, name="cast1"),
             helper.make_node("Cast", ["c"], ["f"], to=T.FLOAT, name="cast2"),
             helper.make_node("Add", ["f", "x"], ["y"], name="add3")]
    g = helper.make_graph(nodes, "castnan", [helper.make_tensor_value_info("x", T.FLOAT, [6])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [6])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def main():
    onnxc, python = sys.argv[1], sys.argv[2]
    env = dict(os.environ, ONNXC_PYTHON=python)
    tmp = tempfile.mkdtemp(prefix="compare")
    model = os.path.join(tmp, "cnn.onnx")
    cnn(model)
    js = os.path.join(tmp, "v.json")
    p = subprocess.run([onnxc, "compare", model, "--json", js, "--threads", "2"], capture_output=True,
                       text=True, env=env)
    check(p.returncode == 0 and "every value matches" in p.stdout and "outputs match" in p.stdout,
          f"CNN matches ONNX Runtime value by value (exit {p.returncode}): {p.stdout.strip()[-200:]} {p.stderr[-300:]}")
    values = json.load(open(js))["values"] if os.path.exists(js) else []
    check(sorted(v["value"] for v in values) == sorted(["c", "r", "p", "f", "y"]),
          f"--json lists every value a node makes: {[v['value'] for v in values]}")

    model = os.path.join(tmp, "cast.onnx")
    cast_nan(model)
    x = os.path.join(tmp, "x.npy")
    np.save(x, np.array([-1, 2, 3, -4, 5, 6], np.float32))
    for level in ("-O0", "-O2"):
        p = subprocess.run([onnxc, "compare", model, "--input", f"x={x}", level], capture_output=True,
                           text=True, env=env)
        check(p.returncode == 1 and "first divergence: node 'cast1' (Cast)" in p.stdout
              and "its inputs agree" in p.stdout and "2 of 6 elements" in p.stdout,
              f"{level}: Cast of NaN reported at cast1 (exit {p.returncode}): {p.stdout.strip()[:300]}")

    p = subprocess.run([onnxc, "compare", model, "--input", f"nope={x}"], capture_output=True, text=True, env=env)
    check(p.returncode == 2 and "no graph input named nope" in p.stderr, "a wrong input name is an error")
    p = subprocess.run([onnxc, "compare", model], capture_output=True, text=True,
                       env=dict(os.environ, ONNXC_PYTHON=os.path.join(tmp, "no-python")))
    check(p.returncode == 2 and "ONNXC_PYTHON" in p.stderr, "a missing Python is an error naming ONNXC_PYTHON")

    shutil.rmtree(tmp, ignore_errors=True)
    if FAILS:
        print(f"{len(FAILS)} check(s) failed")
        return 1
    print("all compare checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
