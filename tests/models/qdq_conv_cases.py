#!/usr/bin/env python3
"""QDQ convs of many shapes, each in both int8 conv forms, against ONNX Runtime.

Usage: qdq_conv_cases.py --onnxc BIN [--out DIR] [--only NAME ...]

Each case is a float Conv (optionally Relu, optionally a residual Add of a
second input) quantized by onnxruntime.quantization.quantize_static (QDQ,
uint8 activations, int8 per-channel weights, int32 bias), as exporters'
quantized models are. Cases vary what the integer conv kernels handle apart:
input channels not a multiple of 4, output channels not a multiple of 64 or
16, strides, dilations, asymmetric padding, 1x1 convs read in place or
strided, 7x7 windows, maps narrower than a tile, a fused residual.

The output (DequantizeLinear of the conv's uint8 result) must equal ORT's
exactly (its QLinearConv / QLinearAdd kernels; the requantization is
specified, docs/int8.md), for:
  - ONNXC_INT8_LANES=0 and =1: the conv with the pixels as the vector lanes
    (emit_conv_gemm) and with the output channels as the lanes
    (emit_conv_lanes: the NHWC copy, the tap table, onnxc_qtile_n), forced
    either way where the target allows the second (AVX-512 VNNI without AMX;
    elsewhere both runs take the first);
  - --cpu generic (the portable C kernels);
  - --threads 2;
  - -O2 --guard (red zones around every buffer: a kernel writing past its
    scratch or output fails) through `onnxc check`.
"""

import argparse
import logging
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from int8_models import onnxc_run, ort_run  # noqa: E402

ort.set_default_logger_severity(3)
logging.getLogger().setLevel(logging.ERROR)  # (quantize_static's advice to pre-process)

# name: (cin, cout, h, w, kernel, strides, pads [t, l, b, r], dilations, relu, residual)
CASES = {
    "stem_7x7_s2_cin3": (3, 64, 30, 30, 7, 2, [3, 3, 3, 3], 1, True, False),
    "3x3_cin5_cout80": (5, 80, 9, 9, 3, 1, [1, 1, 1, 1], 1, True, False),
    "3x3_64_14x14": (64, 64, 14, 14, 3, 1, [1, 1, 1, 1], 1, False, False),
    "3x3_s2_odd_cout48": (32, 48, 15, 15, 3, 2, [1, 1, 1, 1], 1, True, False),
    "1x1_direct_7x7": (128, 256, 7, 7, 1, 1, [0, 0, 0, 0], 1, False, False),
    "1x1_s2": (64, 128, 14, 14, 1, 2, [0, 0, 0, 0], 1, True, False),
    "3x3_dil2": (16, 96, 12, 12, 3, 1, [2, 2, 2, 2], 2, False, False),
    "5x5_asym_pads": (8, 24, 10, 11, 5, 1, [1, 2, 2, 1], 1, True, False),
    "3x3_residual": (64, 64, 7, 7, 3, 1, [1, 1, 1, 1], 1, False, True),
    "1x1_residual_cout144": (48, 144, 6, 5, 1, 1, [0, 0, 0, 0], 1, True, True),
    "3x3_map_1x3": (36, 64, 1, 3, 3, 1, [1, 1, 1, 1], 1, False, False),
    "3x3_no_pad_cin6": (6, 20, 8, 8, 3, 1, [0, 0, 0, 0], 1, False, False),
}


def float_model(spec, seed):
    cin, cout, h, w, k, s, pads, d, relu, residual = spec
    rng = np.random.default_rng(seed)
    wt = (rng.standard_normal((cout, cin, k, k)) * (1.5 / np.sqrt(cin * k * k))).astype(np.float32)
    b = (rng.standard_normal(cout) * 0.1).astype(np.float32)
    oh = (h + pads[0] + pads[2] - d * (k - 1) - 1) // s + 1
    ow = (w + pads[1] + pads[3] - d * (k - 1) - 1) // s + 1
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k], strides=[s, s],
                              pads=pads, dilations=[d, d])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, h, w])]
    last = "c"
    if relu:
        nodes.append(helper.make_node("Relu", [last], ["r"]))
        last = "r"
    if residual:
        inputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, cout, oh, ow]))
        nodes.append(helper.make_node("Add", [last, "z"], ["a"]))
        last = "a"
    nodes.append(helper.make_node("Identity", [last], ["y"]))
    g = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                                             [1, cout, oh, ow])],
                          [numpy_helper.from_array(wt, "w"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m, [(i.name, [d.dim_value for d in i.type.tensor_type.shape.dim]) for i in inputs]


class Reader(CalibrationDataReader):
    def __init__(self, inputs, seed):
        rng = np.random.default_rng(seed)
        self.data = [{n: rng.uniform(-1, 2, s).astype(np.float32) for n, s in inputs} for _ in range(4)]

    def get_next(self):
        return self.data.pop() if self.data else None


def quantized(spec, seed, work):
    m, inputs = float_model(spec, seed)
    fp = os.path.join(work, "float.onnx")
    qp = os.path.join(work, "qdq.onnx")
    onnx.save(m, fp)
    quantize_static(fp, qp, Reader(inputs, seed), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True)
    return qp, inputs


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--out", default=None, help="keep the cases here")
    ap.add_argument("--only", nargs="+", default=None)
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="qdq_conv_cases_")
    failed = checks = 0
    lanes_here = None  # whether this CPU's build takes the lanes form (AVX-512 VNNI, no AMX)
    for i, (name, spec) in enumerate(CASES.items()):
        if args.only and name not in args.only:
            continue
        work = os.path.join(out, name)
        os.makedirs(work, exist_ok=True)
        path, inputs = quantized(spec, 100 + i, work)
        rng = np.random.default_rng(7 + i)
        feeds = {n: rng.uniform(-1, 2, s).astype(np.float32) for n, s in inputs}
        want = ort_run(path, feeds)
        for k, (name_in, x) in enumerate(feeds.items()):  # a case for onnxc check --guard
            d = os.path.join(work, "case", "test_data_set_0")
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, f"input_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(x, name_in).SerializeToString())
        with open(os.path.join(work, "case", "test_data_set_0", "output_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(want, "y").SerializeToString())
        onnx.save(onnx.load(path), os.path.join(work, "case", "model.onnx"))
        if lanes_here is None:
            src = os.path.join(work, "src")
            subprocess.run([args.onnxc, path, "-S", "--cpu", "native", "-o", src], check=True,
                           env=dict(os.environ, ONNXC_INT8_LANES="1"), capture_output=True)
            text = "".join(open(os.path.join(src, f)).read() for f in os.listdir(src) if f.endswith(".c"))
            lanes_here = text.count("onnxc_qtile_n(") > 1  # (one is the kernel's definition)
            print("the output-channels-as-lanes form " + ("applies on this CPU" if lanes_here else
                  "does not apply on this CPU (no AVX-512 VNNI, or AMX): lanes=1 runs the other form"))
        for lanes in ("0", "1"):
            os.environ["ONNXC_INT8_LANES"] = lanes
            for cpu, threads in (("native", 1), ("native", 2), ("generic", 1)):
                run_dir = os.path.join(work, f"run_{lanes}_{cpu}_{threads}")
                os.makedirs(run_dir, exist_ok=True)
                checks += 1
                try:
                    got = onnxc_run(args.onnxc, path, feeds, cpu, run_dir, threads)
                except RuntimeError as e:
                    print(f"{name}: lanes={lanes} --cpu {cpu} --threads {threads}: FAIL {e}")
                    failed += 1
                    continue
                diff = int(np.count_nonzero(got != want))
                ok = got.shape == want.shape and diff == 0
                failed += not ok
                print(f"{name}: lanes={lanes} --cpu {cpu} --threads {threads}: "
                      f"{'exact' if ok else 'DIFFER'} ({diff} of {want.size} differ, "
                      f"max {float(np.abs(got - want).max()) if got.shape == want.shape else 'shape'})")
            checks += 1
            r = subprocess.run([args.onnxc, "check", "-O2", "--guard", "--atol", "0", "--rtol", "0",
                                os.path.join(work, "case")], capture_output=True, text=True)
            failed += r.returncode != 0
            print(f"{name}: lanes={lanes} -O2 --guard: {'ok' if r.returncode == 0 else 'FAIL'}"
                  + ("" if r.returncode == 0 else "\n" + (r.stdout + r.stderr)[-1500:]))
        os.environ.pop("ONNXC_INT8_LANES", None)
    print(f"qdq conv cases: {checks - failed} of {checks} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
