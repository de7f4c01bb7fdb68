#!/usr/bin/env python3
"""Float16 models against ONNX Runtime's float16 execution (docs/precision.md).

Corpus models converted to float16 (bench/float16.py's to_float16: every
float32 initializer, constant and value becomes float16), with the case's
inputs rounded to float16 and ONNX Runtime's float16 outputs (CPU EP) as the
reference:
  - single products (a 3x3 conv, a 1x1 conv, the BERT-base FFN MatMul + Add):
    `onnxc check` within one float16 ulp of the element plus one of the
    output's largest magnitude (rtol 2^-10, atol 2^-10 of it): both engines
    multiply the same halves exactly and sum in float32 in their own order,
    so a rounding to float16 may fall either way, and ONNX Runtime fuses the
    MatMul and the Add into one rounding where the model rounds twice;
  - whole models (MobileNetV2, BERT-tiny): per output, within 2^-6 of the
    output's largest magnitude (dozens of layers, each rounding its result
    to float16: ONNX Runtime's own float16 outputs are 0.2-0.4% of the scale
    away from its float32 ones);
  - the products take the packed float16 kernels (the sources call
    onnxc_hkr) and no Conv keeps the generic per-element loops;
  - guard mode (ONNXC_CHECK_GUARD=1) and --threads 2 on MobileNetV2 and
    the conv.

Usage: test_float16_models.py --onnxc BIN --corpus DIR
"""
import argparse
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

import float16  # noqa: E402

from checks import expect, failures, run  # noqa: E402


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
            cases[m] = float16.make_case(args.corpus, m, tmp)
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
                expect(got.dtype == np.float16 and err <= scale * 2.0 ** -6,
                       f"{m} in float16: '{n}' within 2^-6 of its scale of ONNX Runtime's float16 output "
                       f"(max abs err {err:.3g}, scale {scale:.3g}, dtype {got.dtype})")
        for m in ("conv3x3_64_56", "mobilenetv2", "bert_tiny"):
            src = os.path.join(tmp, m + "_src")
            rc, text = run([onnxc, "-S", os.path.join(cases[m][0], "model.onnx"), "-o", src, "--name", "m"])
            c = open(os.path.join(src, "m.c")).read() if rc == 0 else ""
            expect("onnxc_hkr(" in c, f"{m} in float16: the products take the packed float16 kernels", text)
            expect(rc == 0 and "onnxc_f16_to_f32(wc[" not in c,
                   f"{m} in float16: no Conv left to the generic per-element loops")
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
