#!/usr/bin/env python3
"""Gradient (ai.onnx.preview.training) cases checked against central finite
differences, then run through `onnxc check`.

Usage: gradient_cases.py ONNXC WORKDIR

The model differentiates z = sum of a chain of MatMul, Add with broadcasting,
Relu, Sigmoid, Tanh, Mul, Div, Sub, Neg, Exp and Log with respect to four
inputs (one of them broadcast twice), at opsets 12 (ReduceSum axes as an
attribute) and 13 (as an input), in double precision.
"""
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

SHAPES = {"x": [3, 4], "w": [4, 2], "b": [2], "c": [1]}


def forward(x, w, b, c):
    h = np.maximum(x @ w + b, 0.0)
    s = 1 / (1 + np.exp(-h))
    return s * np.tanh(h) - h / c + np.exp(-h) * np.log(c)


def model(opset):
    n = helper.make_node
    nodes = [n("MatMul", ["x", "w"], ["m"]), n("Add", ["m", "b"], ["a"]), n("Relu", ["a"], ["h"]),
             n("Sigmoid", ["h"], ["s"]), n("Tanh", ["h"], ["t"]), n("Mul", ["s", "t"], ["st"]),
             n("Div", ["h", "c"], ["hc"]), n("Sub", ["st", "hc"], ["u"]), n("Neg", ["h"], ["nh"]),
             n("Exp", ["nh"], ["e"]), n("Log", ["c"], ["lc"]), n("Mul", ["e", "lc"], ["el"]),
             n("Add", ["u", "el"], ["z"]),
             n("Gradient", list(SHAPES), ["g" + k for k in SHAPES], domain="ai.onnx.preview.training",
               xs=list(SHAPES), y="z")]
    d = TensorProto.DOUBLE
    g = helper.make_graph(nodes, "gradient",
                          [helper.make_tensor_value_info(k, d, v) for k, v in SHAPES.items()],
                          [helper.make_tensor_value_info("g" + k, d, v) for k, v in SHAPES.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset),
                                               helper.make_opsetid("ai.onnx.preview.training", 1)])


def main():
    onnxc, work = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(3)
    failed = 0
    for opset in (12, 13):
        vals = {k: rng.normal(size=v) for k, v in SHAPES.items()}
        vals["c"] = np.abs(vals["c"]) + 0.5
        case = os.path.join(work, f"gradient_opset{opset}")
        data = os.path.join(case, "test_data_set_0")
        os.makedirs(data, exist_ok=True)
        save(model(opset), os.path.join(case, "model.onnx"))
        for i, k in enumerate(SHAPES):
            grad = np.zeros(SHAPES[k])
            for idx in np.ndindex(*SHAPES[k]):
                up = {kk: vv.copy() for kk, vv in vals.items()}
                dn = {kk: vv.copy() for kk, vv in vals.items()}
                up[k][idx] += 1e-6
                dn[k][idx] -= 1e-6
                grad[idx] = (forward(**up).sum() - forward(**dn).sum()) / 2e-6
            with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(vals[k], k).SerializeToString())
            with open(os.path.join(data, f"output_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(grad, "g" + k).SerializeToString())
        rc = subprocess.call([onnxc, "check", "--rtol", "1e-5", "--atol", "1e-6", case])
        print(f"{'ok  ' if rc == 0 else 'FAIL'} {case}")
        failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
