#!/usr/bin/env python3
"""--precision bf16 end to end (docs/precision.md).

Corpus models compiled with --precision bf16 and checked against ONNX
Runtime's reference outputs at `onnxc check`'s bf16 tolerance (rtol 1/32 of
each element plus 1/32 of the output's largest magnitude):
  - a 3x3 conv (im2col product), a 1x1 conv, the BERT-base FFN MatMul + Add,
    BERT-tiny and MobileNetV2, on the host's kernels (AMX-BF16 where the
    machine has it);
  - the same outputs are not float32's: at float32's tolerance (rtol 1e-3)
    the bf16 build fails, so the reduced precision is in effect;
  - the portable kernels (--cpu generic: no AVX-512, no AMX) on the conv and
    BERT-tiny, and (when the host has AVX512-BF16) --cpu cooperlake: the
    vdpbf16ps kernel of CPUs without AMX;
  - guard mode (ONNXC_CHECK_GUARD=1: red zones around every buffer, the
    bfloat16 scratch included) on MobileNetV2 and BERT-tiny, and with
    --threads 2 (each thread's bfloat16 packing buffers) on the conv, the
    MatMul and MobileNetV2;
  - `--precision f32` writes the same sources as no flag; a bad value is
    refused with a message naming the choices (fp16: test_precision_fp16.py).

Usage: test_precision.py --onnxc BIN --corpus DIR
"""
import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PY = sys.executable
MODELS = ["conv3x3_64_56", "conv1x1_256_64_56", "matmul_128_768_3072", "bert_tiny", "mobilenetv2"]

from checks import expect, failures, run  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--corpus", required=True)
    args = ap.parse_args()
    onnxc = args.onnxc
    rc, text = run([PY, os.path.join(ROOT, "models", "corpus", "make_corpus.py"), args.corpus, "--only"] + MODELS)
    if rc:
        sys.exit("make_corpus.py failed:\n" + text)
    case = {m: os.path.join(args.corpus, m) for m in MODELS}

    for m in MODELS:
        rc, text = run([onnxc, "check", "--precision", "bf16", case[m]])
        expect(rc == 0, f"{m}: bf16 matches ONNX Runtime at the bf16 tolerance", text)
        rc, text = run([onnxc, "check", "--precision", "bf16", "--rtol", "1e-3", "--atol", "1e-6", case[m]])
        expect(rc == 1 and "elements differ" in text, f"{m}: bf16 is not float32 (fails rtol 1e-3)", text)

    for m in ("conv3x3_64_56", "bert_tiny"):
        rc, text = run([onnxc, "check", "--precision", "bf16", "--cpu", "generic", case[m]])
        expect(rc == 0, f"{m}: bf16 on the portable kernels (--cpu generic)", text)
    if "avx512_bf16" in open("/proc/cpuinfo").read():  # AVX512-BF16 without AMX
        for m in ("conv3x3_64_56", "bert_tiny"):
            rc, text = run([onnxc, "check", "--precision", "bf16", "--cpu", "cooperlake", case[m]])
            expect(rc == 0, f"{m}: bf16 on the vdpbf16ps kernel (--cpu cooperlake)", text)

    for m in ("mobilenetv2", "bert_tiny"):
        rc, text = run([onnxc, "check", "--precision", "bf16", case[m]], {"ONNXC_CHECK_GUARD": "1"})
        expect(rc == 0, f"{m}: bf16 in guard mode", text)
    for m in ("conv3x3_64_56", "matmul_128_768_3072", "mobilenetv2"):
        rc, text = run([onnxc, "check", "--precision", "bf16", "--threads", "2", case[m]], {"ONNXC_CHECK_GUARD": "1"})
        expect(rc == 0, f"{m}: bf16 with --threads 2 (products split over the pool), guard mode", text)

    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(case["conv3x3_64_56"], "model.onnx")
        a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
        run([onnxc, "-S", model, "-o", a, "--name", "m"])
        run([onnxc, "-S", model, "-o", b, "--name", "m", "--precision", "f32"])
        same = all(open(os.path.join(a, f), "rb").read() == open(os.path.join(b, f), "rb").read()
                   for f in sorted(os.listdir(a))) and sorted(os.listdir(a)) == sorted(os.listdir(b))
        expect(same and os.listdir(a), "--precision f32 writes the sources of no flag")
        c = os.path.join(tmp, "c")
        run([onnxc, "-S", model, "-o", c, "--name", "m", "--precision", "bf16"])
        src = open(os.path.join(c, "m.c")).read()
        expect("onnxc_bkr(" in src and "onnxc_ukr(" not in src, "--precision bf16 writes the bfloat16 kernels")
        rc, text = run([onnxc, model, "-o", os.path.join(tmp, "x.so"), "--precision", "int8"])
        expect(rc == 2 and "f32, bf16 or fp16" in text, "a bad --precision is refused", text)

    print(f"{len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
