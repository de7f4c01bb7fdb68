#!/usr/bin/env python3
"""Float16 models against ONNX Runtime's float16 execution (docs/precision.md).

Corpus models converted to float16 (bench/half_models.py's to_float16: every
float32 initializer, constant and value becomes float16), with the case's
inputs rounded to float16 and ONNX Runtime's float16 outputs (CPU EP) as the
reference:
  - single products (a 3x3 conv, a 1x1 conv, the BERT-base FFN MatMul + Add):
    `onnxc check` within one float16 ulp of the element plus one of the
    output's largest magnitude (rtol 2^-10, atol 2^-10 of it): both engines
    multiply the same halves exactly and sum in float32 in their own order,
    so a rounding to float16 may fall either way, and ONNX Runtime fuses the
    MatMul and the Add into one rounding where the model rounds twice;
  - whole models (MobileNetV2, BERT-tiny): per output, within 2^-8 of the
    output's largest magnitude (onnxc computes the float16 model in float32
    and rounds its outputs, ONNX Runtime keeps a few nodes in float16:
    measured 4e-6 and 0.2% of the scale; ONNX Runtime's own float16 outputs
    are 0.2-0.3% of the scale away from its float32 ones);
  - a float16 Conv -> BatchNormalization -> Relu -> Conv -> BatchNormalization
    -> residual Add -> Relu block (built here): within one float16 ulp of
    ONNX Runtime's float16 outputs, and in two kernels (each BatchNormalization
    folded into its Conv, the Relus and the Add in their epilogues) between
    the Casts of the input and the output;
  - the products take the float32 kernels (float32 weights, no onnxc_hkr),
    and with --precision fp16 the packed float16 kernels (onnxc_hkr), within
    2^-8 of the scale; no Conv keeps the generic per-element loops;
  - guard mode (ONNXC_CHECK_GUARD=1) and --threads 2 on MobileNetV2 and
    the conv.

Usage: test_float16_models.py --onnxc BIN --corpus DIR
"""
import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))
PY = sys.executable
SINGLE = ["conv3x3_64_56", "conv1x1_256_64_56", "matmul_128_768_3072"]
WHOLE = ["mobilenetv2", "bert_tiny"]

import numpy as np  # noqa: E402

import half_models  # noqa: E402

from checks import expect, failures, run  # noqa: E402


def conv_bn_residual(case, C=32, H=14):
    """A float16 ResNet block as an `onnxc check` case: x[1,C,H,H] -> Conv 3x3
    -> BatchNormalization -> Relu -> Conv 1x1 -> BatchNormalization -> + x ->
    Relu, ONNX Runtime's float16 outputs as the reference."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    r = np.random.default_rng(0)
    inits, nodes, cur = [], [], "x"

    def t(name, a):
        inits.append(numpy_helper.from_array(a.astype(np.float16), name))
        return name
    for i, k in enumerate((3, 1)):
        w = t(f"w{i}", r.normal(0, (2.0 / (C * k * k)) ** 0.5, (C, C, k, k)))
        nodes.append(helper.make_node("Conv", [cur, w], [f"c{i}"], pads=[k // 2] * 4))
        bn = [t(f"s{i}", r.uniform(0.5, 1.5, C)), t(f"b{i}", r.normal(0, 0.1, C)),
              t(f"m{i}", r.normal(0, 0.1, C)), t(f"v{i}", r.uniform(0.5, 1.5, C))]
        nodes.append(helper.make_node("BatchNormalization", [f"c{i}"] + bn, [f"n{i}"]))
        cur = f"n{i}"
        if i == 0:
            nodes.append(helper.make_node("Relu", [cur], ["r0"]))
            cur = "r0"
    nodes += [helper.make_node("Add", [cur, "x"], ["a"]), helper.make_node("Relu", ["a"], ["y"])]
    g = helper.make_graph(nodes, "conv_bn_residual",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, C, H, H])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, C, H, H])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    ds = os.path.join(case, "test_data_set_0")
    os.makedirs(ds)
    onnx.save(m, os.path.join(case, "model.onnx"))
    x = r.normal(0, 1, (1, C, H, H)).astype(np.float16)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    y = ort.InferenceSession(os.path.join(case, "model.onnx"), so, providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0]
    onnx.save_tensor(numpy_helper.from_array(x, "x"), os.path.join(ds, "input_0.pb"))
    onnx.save_tensor(numpy_helper.from_array(y, "y"), os.path.join(ds, "output_0.pb"))
    return float(np.max(np.abs(y.astype(np.float64))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--corpus", required=True)
    args = ap.parse_args()
    onnxc = args.onnxc
    rc, text = run([PY, os.path.join(ROOT, "models", "corpus", "make_corpus.py"), args.corpus, "--only"]
                   + SINGLE + WHOLE)
    if rc:
        sys.exit("make_corpus.py failed:\n" + text)
    with tempfile.TemporaryDirectory() as tmp:
        cases = {}
        for m in SINGLE + WHOLE:
            cases[m] = half_models.make_case(args.corpus, m, tmp)
        for m in SINGLE:
            case, _, refs16, _ = cases[m]
            scale = max(float(np.max(np.abs(a.astype(np.float64)))) for _, a in refs16)
            tol = ["--rtol", repr(2.0 ** -10), "--atol", repr(scale * 2.0 ** -10)]
            rc, text = run([onnxc, "check", case] + tol)
            expect(rc == 0, f"{m} in float16: within a float16 ulp of ONNX Runtime's float16 outputs", text)
        for m in WHOLE:
            case, ins16, refs16, _ = cases[m]
            d = os.path.join(tmp, m + "_out")
            inputs = []
            for i, (n, _) in enumerate(ins16):
                inputs += ["--input", f"{n}={os.path.join(case, 'test_data_set_0', f'input_{i}.pb')}"]
            rc, text = run([onnxc, "run", os.path.join(case, "model.onnx")] + inputs + ["--output", d])
            expect(rc == 0, f"{m} in float16: onnxc run", text)
            if rc:
                continue
            for n, ref in refs16:
                got = np.load(os.path.join(d, n + ".npy"))
                err = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
                scale = float(np.max(np.abs(ref.astype(np.float64))))
                expect(got.dtype == np.float16 and err <= scale * 2.0 ** -8,
                       f"{m} in float16: '{n}' within 2^-8 of its scale of ONNX Runtime's float16 output "
                       f"(max abs err {err:.3g}, scale {scale:.3g}, dtype {got.dtype})")
        blk = os.path.join(tmp, "conv_bn_residual")
        scale = conv_bn_residual(blk)
        rc, text = run([onnxc, "check", blk, "--rtol", repr(2.0 ** -10), "--atol", repr(scale * 2.0 ** -10)])
        expect(rc == 0, "Conv+BN+Relu+residual block in float16: within a float16 ulp of ONNX Runtime's", text)
        rep = os.path.join(tmp, "cbr.json")
        rc, text = run([onnxc, os.path.join(blk, "model.onnx"), "-o", os.path.join(tmp, "cbr.so"),
                        "--fusion-report", rep])
        ks = json.load(open(rep))["kernels"] if rc == 0 else []
        # (the channel-blocked layout, docs/layout.md, adds its conversions and
        # a padded copy around the two convs on an AVX-512 build)
        ks = [k for k in ks if k["op"] not in ("ToBlocked", "FromBlocked", "BlockedPad")]
        expect([k["op"].replace("BlockedConv", "Conv") for k in ks] == ["Cast", "Conv", "Conv", "Cast"] and
               sum(len(k["nodes"]) for k in ks[1:3]) == 7,
               "Conv+BN+Relu+residual block in float16: BatchNormalization folded, Relu and Add fused "
               "into two Conv kernels between two Casts", text + str([(k["op"], k["nodes"]) for k in ks]))
        for m in ("conv3x3_64_56", "mobilenetv2", "bert_tiny"):
            src = os.path.join(tmp, m + "_src")
            rc, text = run([onnxc, "-S", os.path.join(cases[m][0], "model.onnx"), "-o", src, "--name", "m"])
            c = open(os.path.join(src, "m.c")).read() if rc == 0 else ""
            expect(rc == 0 and "onnxc_hkr(" not in c, f"{m} in float16: the products take the float32 kernels", text)
            expect(rc == 0 and "onnxc_f16_to_f32(wc[" not in c,
                   f"{m} in float16: no Conv left to the generic per-element loops")
            rc, text = run([onnxc, "-S", "--precision", "fp16", os.path.join(cases[m][0], "model.onnx"),
                            "-o", src + "_fp16", "--name", "m"])
            c = open(os.path.join(src + "_fp16", "m.c")).read() if rc == 0 else ""
            expect("onnxc_hkr(" in c, f"{m} in float16, --precision fp16: the packed float16 kernels", text)
        case = cases["conv3x3_64_56"][0]
        scale = max(float(np.max(np.abs(a.astype(np.float64)))) for _, a in cases["conv3x3_64_56"][2])
        rc, text = run([onnxc, "check", "--precision", "fp16", case, "--rtol", repr(2.0 ** -8),
                        "--atol", repr(scale * 2.0 ** -8)])
        expect(rc == 0, "conv3x3_64_56 in float16, --precision fp16: within 2^-8 of ONNX Runtime's", text)
        for m in ("conv3x3_64_56", "mobilenetv2"):
            case = cases[m][0]
            scale = max(float(np.max(np.abs(a.astype(np.float64)))) for _, a in cases[m][2])
            tol = ["--rtol", repr(2.0 ** -6), "--atol", repr(scale * 2.0 ** -6)]
            rc, text = run([onnxc, "check", case] + tol, {"ONNXC_CHECK_GUARD": "1"})
            expect(rc == 0, f"{m} in float16: guard mode", text)
            rc, text = run([onnxc, "check", "--threads", "2", case] + tol, {"ONNXC_CHECK_GUARD": "1"})
            expect(rc == 0, f"{m} in float16: --threads 2, guard mode", text)
    print(f"{len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
