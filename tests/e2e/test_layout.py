#!/usr/bin/env python3
"""The channel-blocked layout (NCHW16c, docs/layout.md) on composite models.

Each model chains what the layout pass puts into one region: group-1 convs
(fewer and more than 16 channels, channel counts that are not multiples of
16, padding, strides 1 to 3, dilation, 1x1 and 5x5 windows), depthwise convs
with their own padding, MaxPool / AveragePool (ceil_mode, count_include_pad,
dilation), channel Concat and Split, a residual Add, elementwise ops, fused
Relu / Clip / LeakyRelu, a global pool, batch 2, and tensors that leave the
region for an op outside it. For each model:
  - `onnxc --dump-ir-after layout` with --layout nchw16c must show BlockedConv
    nodes and the model's pools on blocked tensors (so the test fails when
    the pass stops placing them), and --layout nchw none;
  - `onnxc check --layout nchw16c` must match ONNX Runtime's outputs on
    --cpu native (AVX-512 where the machine has it), haswell (AVX2) and
    generic (portable C), once in guard mode, and with --threads 2.

  python3 tests/e2e/test_layout.py --onnxc build/bin/onnxc [--out DIR]
"""
import argparse
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


class G:
    """A tiny graph builder: values are names, shapes tracked by ONNX Runtime."""

    def __init__(self, name, x_shape, seed):
        self.rng = np.random.default_rng(seed)
        self.name = name
        self.nodes, self.inits, self.k = [], [], 0
        self.x_shape = x_shape

    def fresh(self, p):
        self.k += 1
        return f"{p}{self.k}"

    def const(self, a):
        n = self.fresh("w")
        self.inits.append(numpy_helper.from_array(a.astype(np.float32), n))
        return n

    def node(self, op, ins, n_out=1, **attrs):
        outs = [self.fresh(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, ins, outs, **attrs))
        return outs[0] if n_out == 1 else outs

    def conv(self, x, c, m, k, group=1, bias=True, **attrs):
        kh, kw = (k, k) if isinstance(k, int) else k
        w = self.rng.standard_normal((m, c // group, kh, kw)) / np.sqrt(c // group * kh * kw)
        ins = [x, self.const(w)]
        if bias:
            ins.append(self.const(self.rng.standard_normal(m) * 0.1))
        return self.node("Conv", ins, kernel_shape=[kh, kw], group=group, **attrs)

    def model(self, outs):
        x = helper.make_tensor_value_info("x", F, self.x_shape)
        ys = [helper.make_empty_tensor_value_info(o) for o in outs]
        g = helper.make_graph(self.nodes, self.name, [x], ys, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        m = onnx.shape_inference.infer_shapes(m)
        known = {v.name: v for v in list(m.graph.value_info) + list(m.graph.output)
                 if v.type.tensor_type.HasField("shape")}
        del m.graph.output[:]
        m.graph.output.extend([known[o] for o in outs])
        onnx.checker.check_model(m)
        return m


def resnetish():
    g = G("resnetish", [1, 3, 23, 21], 1)
    x = g.conv("x", 3, 24, 3, pads=[1, 1, 1, 1], strides=[2, 2])  # RGB stem, C < 16
    x = g.node("Relu", [x])
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
    a = g.conv(x, 24, 40, 1)
    b = g.node("Clip", [g.conv(x, 24, 40, 3, pads=[1, 1, 1, 1]), g.const(np.array(0.0)), g.const(np.array(6.0))])
    y = g.node("Relu", [g.node("Add", [a, b])])  # residual on 40 channels
    y = g.conv(y, 40, 48, 3, pads=[2, 2, 2, 2], dilations=[2, 2])
    y = g.node("LeakyRelu", [y], alpha=0.2)
    z = g.conv(y, 48, 33, (1, 3), pads=[0, 1, 0, 1], strides=[3, 3])
    gp = g.node("GlobalAveragePool", [z])
    side = g.node("Sigmoid", [y])  # leaves the region
    return g.model([gp, side])


def mobileish():
    g = G("mobileish", [2, 16, 19, 17], 2)
    x = g.conv("x", 16, 96, 1)
    x = g.node("Clip", [x, g.const(np.array(0.0)), g.const(np.array(6.0))])
    d = g.conv(x, 96, 96, 3, group=96, pads=[1, 1, 1, 1])
    d = g.node("Clip", [d, g.const(np.array(0.0)), g.const(np.array(6.0))])
    e = g.conv(d, 96, 24, 1, bias=False)
    f = g.conv(e, 24, 144, 1)
    f = g.conv(f, 144, 144, 5, group=144, pads=[2, 1, 2, 3], strides=[2, 2])
    f = g.conv(f, 144, 144, 3, group=144, pads=[0, 2, 1, 0], dilations=[2, 1])
    f = g.conv(f, 144, 32, 1)
    av = g.node("AveragePool", [f], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)
    mx = g.node("MaxPool", [f], kernel_shape=[2, 2], strides=[1, 1], dilations=[2, 2], pads=[1, 1, 1, 1])
    y = g.node("Add", [av, mx])
    gm = g.node("GlobalMaxPool", [y])
    return g.model([gm, e])


def concatish():
    g = G("concatish", [1, 32, 15, 15], 3)
    s = g.node("Relu", [g.conv("x", 32, 32, 1)])
    e1 = g.node("Relu", [g.conv(s, 32, 64, 1)])
    e3 = g.node("Relu", [g.conv(s, 32, 48, 3, pads=[1, 1, 1, 1])])
    c = g.node("Concat", [e1, e3], axis=1)  # 112 channels
    p = g.node("MaxPool", [c], kernel_shape=[3, 3], strides=[2, 2])
    g.inits.append(numpy_helper.from_array(np.array([64, 48], np.int64), "split_sizes"))
    sp = g.node("Split", [p, "split_sizes"], n_out=2, axis=1)
    u = g.node("Mul", [sp[0], g.node("Sigmoid", [sp[0]])])
    v = g.conv(sp[1], 48, 64, 3, pads=[1, 1, 1, 1])
    w = g.node("Add", [u, v])
    out = g.conv(w, 64, 10, 1)
    return g.model([out])


def swishish():
    """Convs whose activation is a fused elementwise chain (an "epilogue":
    SiLU as Sigmoid + Mul, HardSwish, HardSigmoid x), blocked too: group-1
    (stem, 1x1, 3x3 with a residual, odd channel counts) and depthwise."""
    g = G("swishish", [1, 3, 20, 22], 4)
    x = g.conv("x", 3, 32, 3, pads=[1, 1, 1, 1], strides=[2, 2])
    x = g.node("Mul", [x, g.node("Sigmoid", [x])])  # SiLU
    d = g.node("HardSwish", [g.conv(x, 32, 32, 3, group=32, pads=[1, 1, 1, 1])])
    e = g.node("HardSwish", [g.conv(d, 32, 40, 1)])  # 40: a partly real last block
    f = g.conv(e, 40, 40, 3, group=40, pads=[1, 1, 1, 1], strides=[2, 2])
    f = g.node("Mul", [f, g.node("HardSigmoid", [f])])
    h = g.conv(f, 40, 40, 3, pads=[1, 1, 1, 1])
    h = g.node("Add", [h, f])
    h = g.node("Mul", [h, g.node("Sigmoid", [h])])
    gp = g.node("GlobalAveragePool", [h])
    return g.model([gp, e])


def denseish():
    """Per-channel affine maps of a tensor that no conv makes (DenseNet's
    pre-activation BatchNormalization after a Concat, and such chains written
    as Mul / Add / Sub / Div by per-channel or scalar constants), each with or
    without an activation, run as depthwise 1x1 blocked convs: none is left a
    row-major elementwise kernel between conversions."""
    g = G("denseish", [2, 32, 9, 11], 5)

    def bn(x, c):
        r = g.rng
        return g.node("BatchNormalization", [x, g.const(r.uniform(0.5, 1.5, c)), g.const(r.standard_normal(c) * 0.1),
                                             g.const(r.standard_normal(c) * 0.1), g.const(r.uniform(0.5, 2.0, c))],
                      epsilon=1e-5)

    s = g.node("Relu", [g.conv("x", 32, 32, 1)])
    a = g.conv(g.node("Relu", [bn(s, 32)]), 32, 16, 3, pads=[1, 1, 1, 1])
    c = g.node("Concat", [s, a], axis=1)  # 48 channels
    sc = g.const(g.rng.uniform(0.5, 1.5, (48, 1, 1)))
    sh = g.const(g.rng.standard_normal((1, 48, 1, 1)) * 0.1)
    b = g.node("Clip", [g.node("Add", [g.node("Mul", [c, sc]), sh]), g.const(np.array(0.0)), g.const(np.array(4.0))])
    b = g.conv(b, 48, 40, 1)  # 40: a partly real last block
    t = g.node("Div", [g.node("Sub", [g.const(np.array(0.25)), b]), g.const(g.rng.uniform(1.0, 2.0, (40, 1, 1)))])
    t = g.node("LeakyRelu", [t], alpha=0.1)
    u = g.conv(t, 40, 24, 3, pads=[1, 1, 1, 1])
    v = g.node("Add", [g.node("Mul", [u, g.const(np.array(1.5))]), g.const(g.rng.standard_normal((24, 1, 1)))])
    out = g.conv(v, 24, 8, 1)
    return g.model([out])


MODELS = [resnetish, mobileish, concatish, swishish, denseish]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    return p.returncode, (p.stdout + p.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--out", default="build/layout_cases")
    a = ap.parse_args()
    bad = 0
    for make in MODELS:
        m = make()
        d = os.path.join(a.out, m.graph.name)
        ds = os.path.join(d, "test_data_set_0")
        os.makedirs(ds, exist_ok=True)
        for f in os.listdir(ds):
            os.unlink(os.path.join(ds, f))
        onnx.save(m, os.path.join(d, "model.onnx"))
        shape = [dd.dim_value for dd in m.graph.input[0].type.tensor_type.shape.dim]
        x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        outs = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, {"x": x})
        with open(os.path.join(ds, "input_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x, "x").SerializeToString())
        for i, (vi, o) in enumerate(zip(m.graph.output, outs)):
            with open(os.path.join(ds, f"output_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(o, vi.name).SerializeToString())
        # the pass places the blocked kernels (and only when asked)
        for layout, want in (("nchw16c", True), ("nchw", False)):
            rc, text = run([a.onnxc, "-O2", "--layout", layout, "--dump-ir-after", "layout", "-S", "-o",
                            os.path.join(d, "src_" + layout), os.path.join(d, "model.onnx")])
            # a region starts at a ToBlocked, or at a stem conv that reads the image row-major
            has = "onnxc:BlockedConv" in text and ("onnxc:ToBlocked" in text or "onnxc.plain=1" in text)
            # every conv and pool of these models is in a region: none left row-major
            rowmajor = [ln for ln in text.splitlines()
                        if re.search(r"= (Conv|MaxPool|AveragePool)\{", ln) and "nchw16c =" not in ln]
            # denseish: every affine map a blocked depthwise conv, the one
            # conversion back the graph output's
            if m.graph.name == "denseish":
                lines = text.splitlines()
                rowmajor += [ln for ln in lines if "FusedElementwise" in ln]
                froms = [ln for ln in lines if "onnxc:FromBlocked" in ln]
                if len(froms) > 1:
                    rowmajor += froms
            if want and rowmajor:
                has = False
            if rc != 0 or has != want:
                bad += 1
                print(f"FAIL {m.graph.name} --layout {layout}: blocked kernels {'missing' if want else 'present'}"
                      f" (rc {rc})\n{text[-800:]}")
        for extra in (["--cpu", "native"], ["--cpu", "haswell"], ["--cpu", "generic", "--guard"],
                      ["--cpu", "native", "--threads", "2", "-O3"], ["--cpu", "native", "--guard"]):
            rc, text = run([a.onnxc, "check", "--layout", "nchw16c", "--rtol", "1e-4", "--atol", "1e-5"] + extra + [d])
            if rc != 0:
                bad += 1
                print(f"FAIL {m.graph.name} {' '.join(extra)}:\n{text[-1200:]}")
            else:
                print(f"ok   {m.graph.name} {' '.join(extra)}")
    print("all passed" if not bad else f"{bad} failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
