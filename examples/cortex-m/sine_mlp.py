#!/usr/bin/env python3
"""Write sine.onnx and sine_x.bin: an MLP shaped like TensorFlow Lite Micro's
"hello world" sine model (1 -> 16 -> 16 -> 1, ReLU, 321 parameters), the model
behind onnx2c's published STM32F411 footprint. Random weights: only the shape
matters for a size comparison (docs/firmware.md).

usage: sine_mlp.py OUTDIR      (needs the onnx and numpy packages)
"""
import os
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    shapes = {"w1": (16, 1), "b1": (16,), "w2": (16, 16), "b2": (16,), "w3": (1, 16), "b3": (1,)}
    inits = [numpy_helper.from_array((rng.standard_normal(s) * 0.5).astype(np.float32), n)
             for n, s in shapes.items()]
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h1"], transB=1),
        helper.make_node("Relu", ["h1"], ["r1"]),
        helper.make_node("Gemm", ["r1", "w2", "b2"], ["h2"], transB=1),
        helper.make_node("Relu", ["h2"], ["r2"]),
        helper.make_node("Gemm", ["r2", "w3", "b3"], ["y"], transB=1),
    ]
    graph = helper.make_graph(nodes, "sine", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "sine.onnx"))
    with open(os.path.join(out, "sine_x.bin"), "wb") as f:
        f.write(struct.pack("<4f", 0.0, 1.0, 2.0, 3.0))


if __name__ == "__main__":
    main()
