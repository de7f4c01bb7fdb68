#!/usr/bin/env python3
"""The two CNN graphs of issue 12 ("What was found", item 2), as regression cases.

    issue_graphs.py [OUTDIR]   (default tests/diff/regressions)

Both were wrong at -O1 and above and right at -O0. Channel counts and weights
are not in the issue; they are fixed here (seeded, weights scaled by
1/sqrt(fan_in)) and the reference outputs come from ONNX Runtime.
"""
import json
import math
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_model  # noqa: E402
import run_diff  # noqa: E402


class G:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.k = [], [], 0

    def name(self, stem):
        self.k += 1
        return f"{stem}{self.k}"

    def const(self, arr):
        n = self.name("c")
        self.inits.append(numpy_helper.from_array(np.asarray(arr, np.float32), n))
        return n

    def weight(self, shape):
        fan_in = int(np.prod(shape[1:]))
        return self.const(self.rng.uniform(-1, 1, size=shape) * math.sqrt(3.0 / fan_in))

    def add(self, op, ins, **attrs):
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, ins, [out], name=self.name("n_" + op), **attrs))
        return out

    def conv(self, x, cin, cout, k, group=1, bias=True, **attrs):
        ins = [x, self.weight((cout, cin // group, k, k))]
        if bias:
            ins.append(self.const(self.rng.uniform(-0.5, 0.5, size=cout)))
        return self.add("Conv", ins, kernel_shape=[k, k], group=group, **attrs)

    def model(self, x_shape, y, y_shape):
        g = helper.make_graph(self.nodes, "issue12", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, y_shape)], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="onnxc-diff")
        m.ir_version = 8
        feeds = {"x": self.rng.uniform(-1, 1, size=x_shape).astype(np.float32)}
        return m, feeds


def graph1():
    """Batch 2, 3x20x20: Conv 3x3 pad 1 + Relu -> MaxPool 2x2/2 -> Conv 3x3 stride 2
    pads [0,1,1,0] -> BatchNormalization -> LeakyRelu -> GlobalAveragePool ->
    Flatten -> Gemm -> Softmax."""
    g = G(1201)
    y = g.conv("x", 3, 8, 3, pads=[1, 1, 1, 1])
    y = g.add("Relu", [y])
    y = g.add("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2])
    y = g.conv(y, 8, 16, 3, strides=[2, 2], pads=[0, 1, 1, 0])  # 16 x 5 x 5
    bn = [g.const(g.rng.uniform(lo, hi, 16)) for lo, hi in ((0.5, 1.5), (-0.5, 0.5), (-0.5, 0.5), (0.5, 2.0))]
    y = g.add("BatchNormalization", [y] + bn)
    y = g.add("LeakyRelu", [y], alpha=0.1)
    y = g.add("GlobalAveragePool", [y])
    y = g.add("Flatten", [y], axis=1)
    y = g.add("Gemm", [y, g.weight((10, 16)), g.const(g.rng.uniform(-0.5, 0.5, 10))], transB=1)
    y = g.add("Softmax", [y], axis=1)
    return g.model([2, 3, 20, 20], y, [2, 10])


def graph2():
    """1x4x29x23: LeakyRelu -> Conv 3x3 pads [0,0,1,0] -> LeakyRelu -> grouped Conv
    5x5 stride 2 (group 8, pads [0,1,0,2]) -> grouped 1x1 Conv (group 16) ->
    dilated Conv 5x5 (dilation 2, stride 2, pads [3,2,4,2]) -> Mul by a
    per-channel constant -> MaxPool 2x2/2 pad 1 -> two Muls ->
    GlobalAveragePool -> Flatten -> Gemm -> Softmax (15 outputs)."""
    g = G(1202)
    y = g.add("LeakyRelu", ["x"], alpha=0.01)
    y = g.conv(y, 4, 8, 3, pads=[0, 0, 1, 0])  # 8 x 28 x 21
    y = g.add("LeakyRelu", [y], alpha=0.01)
    y = g.conv(y, 8, 16, 5, group=8, strides=[2, 2], pads=[0, 1, 0, 2])  # 16 x 12 x 10
    y = g.conv(y, 16, 32, 1, group=16)  # 32 x 12 x 10
    y = g.conv(y, 32, 24, 5, strides=[2, 2], dilations=[2, 2], pads=[3, 2, 4, 2])  # 24 x 6 x 3
    y = g.add("Mul", [y, g.const(g.rng.uniform(0.5, 1.5, (24, 1, 1)))])
    y = g.add("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1])  # 24 x 4 x 2
    y = g.add("Mul", [y, g.const(g.rng.uniform(0.5, 1.5, (24, 1, 1)))])
    y = g.add("Mul", [y, g.const(np.float32(1.5))])
    y = g.add("GlobalAveragePool", [y])
    y = g.add("Flatten", [y], axis=1)
    y = g.add("Gemm", [y, g.weight((15, 24)), g.const(g.rng.uniform(-0.5, 0.5, 15))], transB=1)
    y = g.add("Softmax", [y], axis=1)
    return g.model([1, 4, 29, 23], y, [1, 15])


CASES = {
    "issue12_graph1": (graph1, "issue 12 graph 1: conv + folded BatchNormalization + LeakyRelu epilogue; "
                       "every output wrong at -O1 and above, right at -O0"),
    "issue12_graph2": (graph2, "issue 12 graph 2: grouped, 1x1 grouped and dilated convs with per-channel Muls; "
                       "15 of 15 outputs wrong at -O1 and above, right at -O0"),
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "regressions")
    for name, (make, what) in CASES.items():
        model, feeds = make()
        outs = gen_model.validate(model, feeds, {})
        d = os.path.join(out, name)
        run_diff.write_case(d, model, feeds, outs)
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump({"source": "tests/diff/issue_graphs.py", "what": what,
                       "failing": ["O1", "O2", "O3"], "passing": ["O0"]}, f, indent=1)
            f.write("\n")
        print(d)


if __name__ == "__main__":
    sys.exit(main())
