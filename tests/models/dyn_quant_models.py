#!/usr/bin/env python3
"""Transformer layers and MLPs quantized by quantize_dynamic, against -O0 and ONNX Runtime.

Usage: dyn_quant_models.py --onnxc BIN [--out DIR] [--only NAME ...] [--all]

`onnxruntime.quantization.quantize_dynamic` is how users quantize
transformers: each MatMul by a weight becomes DynamicQuantizeLinear of its
input, MatMulInteger by the int8 (or uint8) weight, Cast, and Mul by the
product of the two scales, with the bias Add after it. onnxc lowers the
MatMulInteger and that chain to its int8 product kernel (QIntMatMul,
passes/fuse_qmatmul.c). The float models here are a BERT-style encoder layer
(Q/K/V, attention, output projection, residual + LayerNormalization, a GELU
FFN) and an MLP of rank-2 products, in sizes that reach the kernel's edges:
K below 4 and not a multiple of 4, N not a multiple of 16 or 64, one row,
several batches. Each is quantized three ways: int8 weights per tensor and
per channel, and uint8 weights (B - 128 in the kernel, zero points 128 off);
--all adds reduce_range (7-bit weights: no other path, so not in CTest's run).

For each quantized model:
  1. the lowering applies: the native -O2 C source has one QIntMatMul node
     per MatMulInteger of the model where the CPU has AVX-512 VNNI (none
     elsewhere: the kernel's portable C is slower than the generic loop);
  2. -O2, -O3 --threads 2 and -O2 --cpu generic (the generic loops) give
     exactly -O0's outputs (the generic MatMulInteger loop and separate
     Cast, Mul and Add nodes): the integer sums are exact and the folded
     epilogue rounds as the three nodes do;
  3. -O2 matches ONNX Runtime (its MatMulIntegerToFloat) within 1e-5 of the
     output's largest magnitude;
  4. `onnxc check -O2 --guard` (red zones around every buffer) passes.
The same float models quantized by quantize_static (QDQ, per-channel int8
weights) have their Gemm/MatMul groups as QIntConv mode 1: on the lanes
product kernel natively where the CPU takes the lanes form, as dot products
at --cpu generic; -O2 and -O3 --threads 2 must give -O2 --cpu generic's
bytes. Then the corpus's bert_tiny_int8 (models/corpus/quantize.py: BERT-tiny through
quant_pre_process and quantize_dynamic; built into --corpus when missing)
passes `onnxc check` at its entry's tolerance against ORT's fused int8
kernels, at -O2 and at -O3 --threads 2.
"""

import argparse
import logging
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                      quantize_static)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "models", "corpus"))

import make_corpus  # noqa: E402

ort.set_default_logger_severity(3)
logging.getLogger().setLevel(logging.ERROR)

F = TensorProto.FLOAT
# the lowering applies where the build has AVX-512 VNNI (Target.int8_vnni512)
VNNI512 = os.path.exists("/proc/cpuinfo") and "avx512_vnni" in open("/proc/cpuinfo").read()

# name: (kind, dims); encoder: (batch, seq, hidden, ffn, heads); mlp: (rows, widths...)
MODELS = {
    "encoder_48": ("encoder", (1, 7, 48, 96, 2)),
    "encoder_64_b2": ("encoder", (2, 16, 64, 200, 4)),
    "encoder_30": ("encoder", (1, 5, 30, 70, 1)),     # K = 30, 70: K % 4 = 2; N = 30, 70: not a multiple of 16
    "encoder_13": ("encoder", (1, 1, 13, 27, 1)),     # one row; K % 4 = 1 and 3
    "mlp_k3": ("mlp", (9, 3, 65, 17, 1)),             # K = 3 (< 4): the tail alone; N = 1
    "mlp_wide": ("mlp", (33, 128, 300, 64)),
}

# name: quantize_dynamic's arguments
QUANT = {
    "s8": dict(weight_type=QuantType.QInt8),
    "s8_per_channel": dict(weight_type=QuantType.QInt8, per_channel=True),
    "u8": dict(weight_type=QuantType.QUInt8),
    "s8_reduce_range": dict(weight_type=QuantType.QInt8, reduce_range=True),
}


class G:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.n = [], [], 0

    def const(self, a):
        self.n += 1
        name = f"c{self.n}"
        self.inits.append(numpy_helper.from_array(np.asarray(a), name))
        return name

    def op(self, op, ins, **attrs):
        self.n += 1
        out = f"t{self.n}"
        self.nodes.append(helper.make_node(op, ins, [out], name=f"n{self.n}_{op}", **attrs))
        return out

    def linear(self, x, k, n):
        w = (self.rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
        b = (self.rng.standard_normal(n) * 0.1).astype(np.float32)
        return self.op("Add", [self.op("MatMul", [x, self.const(w)]), self.const(b)])

    def layernorm(self, x, d):
        return self.op("LayerNormalization", [x, self.const(np.ones(d, np.float32)),
                                              self.const(np.zeros(d, np.float32))], axis=-1, epsilon=1e-5)


def encoder(g, dims):
    b, s, d, f, h = dims
    hd = d // h
    x = "x"
    heads = g.const(np.array([b, s, h, hd], np.int64))
    q, k, v = (g.op("Transpose", [g.op("Reshape", [g.linear(x, d, d), heads])], perm=[0, 2, 1, 3])
               for _ in range(3))
    att = g.op("Mul", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])]),
                       g.const(np.float32(1 / np.sqrt(hd)))])
    ctx = g.op("MatMul", [g.op("Softmax", [att], axis=-1), v])
    ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), g.const(np.array([b, s, d], np.int64))])
    y = g.layernorm(g.op("Add", [g.linear(ctx, d, d), x]), d)
    u = g.linear(y, d, f)
    gelu = g.op("Mul", [g.op("Mul", [u, g.op("Add", [g.op("Erf", [g.op("Div", [u, g.const(np.float32(1.4142135))])]),
                                                     g.const(np.float32(1))])]), g.const(np.float32(0.5))])
    out = g.layernorm(g.op("Add", [g.linear(gelu, f, d), y]), d)
    return [b, s, d], [b, s, d], out


def mlp(g, dims):
    rows, widths = dims[0], dims[1:]
    x = "x"
    for i in range(len(widths) - 1):
        x = g.linear(x, widths[i], widths[i + 1])
        if i < len(widths) - 2:
            x = g.op("Relu", [x])
    return [rows, widths[0]], [rows, widths[-1]], x


def float_model(kind, dims, seed):
    g = G(seed)
    xs, ys, out = (encoder if kind == "encoder" else mlp)(g, dims)
    g.nodes.append(helper.make_node("Identity", [out], ["y"]))
    graph = helper.make_graph(g.nodes, kind, [helper.make_tensor_value_info("x", F, xs)],
                              [helper.make_tensor_value_info("y", F, ys)], g.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m, xs


class Calib(CalibrationDataReader):
    def __init__(self, xs):
        self.xs = list(xs)

    def get_next(self):
        return {"x": self.xs.pop()} if self.xs else None


def ort_run(path, x):
    opts = ort.SessionOptions()
    opts.add_session_config_entry("session.x64quantprecision", "1")  # exact u8 x s8 on AVX2 too
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def onnxc_run(onnxc, path, x, work, flags):
    os.makedirs(work, exist_ok=True)
    f = os.path.join(work, "x.npy")
    np.save(f, x)
    out = os.path.join(work, "out")
    r = subprocess.run([onnxc, "run", path, "--input", f"x={f}", "--output", out, *flags],
                       capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError((r.stdout + r.stderr)[-2000:])
    return np.load(os.path.join(out, "y.npy"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--out", default=None, help="keep the cases here")
    ap.add_argument("--only", nargs="+", default=None)
    ap.add_argument("--all", action="store_true", help="also quantize with reduce_range")
    ap.add_argument("--corpus", default=os.path.join(REPO, "build", "corpus"))
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="dyn_quant_models_")
    failed = checks = 0

    def check(ok, what):
        nonlocal failed, checks
        checks += 1
        failed += not ok
        print(f"{what}: {'ok' if ok else 'FAIL'}")

    def exact_runs(case, qp, x, work, base_flags, runs):
        """Outputs of qp under base_flags and each of runs; each run must equal the
        base's bytes. Returns {tuple(flags): output} (None: the base did not run)."""
        name = " ".join(base_flags)
        try:
            base = onnxc_run(args.onnxc, qp, x, os.path.join(work, "_".join(base_flags)), base_flags)
        except RuntimeError as e:
            check(False, f"{case}: {name} ({e})")
            return None
        outs = {tuple(base_flags): base}
        for flags in runs:
            what = f"{case}: {' '.join(flags)} against {name}"
            try:
                got = onnxc_run(args.onnxc, qp, x, os.path.join(work, "_".join(flags)), flags)
            except RuntimeError as e:
                check(False, f"{what} ({e})")
                continue
            diff = int(np.count_nonzero(got != base)) if got.shape == base.shape else -1
            check(diff == 0, f"{what}, exact ({diff} differ)")
            outs[tuple(flags)] = got
        return outs

    for i, (name, (kind, dims)) in enumerate(MODELS.items()):
        if args.only and name not in args.only:
            continue
        fm, xs = float_model(kind, dims, 10 + i)
        for qname, qargs in QUANT.items():
            if qname == "s8_reduce_range" and not args.all:
                continue
            case = f"{name}/{qname}"
            work = os.path.join(out, name, qname)
            os.makedirs(work, exist_ok=True)
            fp, qp = os.path.join(work, "float.onnx"), os.path.join(work, "model.onnx")
            onnx.save(fm, fp)
            quantize_dynamic(fp, qp, **qargs)
            qm = onnx.load(qp)
            n_mmi = sum(n.op_type == "MatMulInteger" for n in qm.graph.node)
            x = np.random.default_rng(i).standard_normal(xs).astype(np.float32)
            want = ort_run(qp, x)

            src = os.path.join(work, "src")
            r = subprocess.run([args.onnxc, qp, "-S", "--cpu", "native", "-o", src], capture_output=True, text=True)
            text = "".join(open(os.path.join(src, f)).read() for f in os.listdir(src)
                           if f.endswith(".c")) if r.returncode == 0 else ""
            calls = len(re.findall(r"^/\* node '[^\n]*' \(QIntMatMul\) \*/$", text, re.M))
            want_calls = n_mmi if VNNI512 else 0
            check(r.returncode == 0 and n_mmi > 0 and calls == want_calls,
                  f"{case}: {calls} int8 product kernels for {n_mmi} MatMulInteger (native build"
                  f"{'' if VNNI512 else ': no AVX-512 VNNI here, the generic loop'})")
            outs = exact_runs(case, qp, x, work, ["-O0"], (["-O2"], ["-O3", "--threads", "2"], ["-O2", "--cpu", "generic"]))
            if outs is None:
                continue
            base = outs[("-O0",)]
            if ("-O2",) in outs:
                tol = 1e-5 * float(np.abs(want).max()) + 1e-6
                err = float(np.abs(outs[("-O2",)] - want).max())
                check(err <= tol, f"{case}: -O2 against ONNX Runtime, max abs diff {err:.3g} (tolerance {tol:.3g})")
            d = os.path.join(work, "case", "test_data_set_0")
            os.makedirs(d, exist_ok=True)
            onnx.save(qm, os.path.join(work, "case", "model.onnx"))
            with open(os.path.join(d, "input_0.pb"), "wb") as f:
                f.write(numpy_helper.from_array(x, "x").SerializeToString())
            with open(os.path.join(d, "output_0.pb"), "wb") as f:
                f.write(numpy_helper.from_array(base, "y").SerializeToString())
            r = subprocess.run([args.onnxc, "check", "-O2", "--guard", "--atol", "0", "--rtol", "0",
                                os.path.join(work, "case")], capture_output=True, text=True)
            check(r.returncode == 0, f"{case}: -O2 --guard, exactly -O0's outputs"
                  + ("" if r.returncode == 0 else "\n" + (r.stdout + r.stderr)[-1500:]))
    # The same float models through quantize_static (QDQ): their Gemm/MatMul groups are
    # QIntConv mode 1, on the lanes product kernel where the CPU takes the lanes form
    # (AVX-512 VNNI without AMX) and as dot products at --cpu generic: the same bytes.
    for i, (name, (kind, dims)) in enumerate(MODELS.items()):
        if args.only and name not in args.only:
            continue
        fm, xs = float_model(kind, dims, 10 + i)
        case = f"{name}/qdq"
        work = os.path.join(out, name, "qdq")
        os.makedirs(work, exist_ok=True)
        fp, qp = os.path.join(work, "float.onnx"), os.path.join(work, "model.onnx")
        onnx.save(fm, fp)
        rng = np.random.default_rng(50 + i)
        quantize_static(fp, qp, Calib([rng.standard_normal(xs).astype(np.float32) for _ in range(4)]),
                        quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8, per_channel=True)
        x = np.random.default_rng(i).standard_normal(xs).astype(np.float32)
        src = os.path.join(work, "src")
        subprocess.run([args.onnxc, qp, "-S", "--cpu", "native", "-o", src], capture_output=True)
        text = open(os.path.join(src, "model.c")).read() if os.path.exists(os.path.join(src, "model.c")) else ""
        print(f"{case}: the products take the lanes kernel natively: "
              f"{'yes' if 'onnxc_qput_r(acc' in text else 'no (no AVX-512 VNNI, or AMX)'}")
        exact_runs(case, qp, x, work, ["-O2", "--cpu", "generic"], (["-O2"], ["-O3", "--threads", "2"]))
    if not args.only or "bert_tiny_int8" in args.only:
        case = make_corpus.build_case(args.corpus, "bert_tiny_int8")
        meta = make_corpus.MODELS["bert_tiny_int8"]
        for flags in (["-O2"], ["-O3", "--threads", "2"]):
            r = subprocess.run([args.onnxc, "check", *flags, "--rtol", str(meta.rtol), "--atol", str(meta.atol), case],
                               capture_output=True, text=True)
            check(r.returncode == 0, f"bert_tiny_int8: {' '.join(flags)} against ORT (atol {meta.atol})"
                  + ("" if r.returncode == 0 else "\n" + (r.stdout + r.stderr)[-1500:]))
    print(f"quantize_dynamic models: {checks - failed} of {checks} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
