#!/usr/bin/env python3
"""--precision fp16 end to end (docs/precision.md).

Corpus models compiled with --precision fp16 and checked against ONNX
Runtime's reference outputs at `onnxc check`'s fp16 tolerance (rtol 1/256 of
each element plus 1/256 of the output's largest magnitude):
  - a 3x3 conv (im2col product), a 1x1 conv, the BERT-base FFN MatMul + Add,
    BERT-tiny and MobileNetV2;
  - the same outputs are not float32's: at float32's tolerance (rtol 1e-3)
    the fp16 build fails, so the reduced precision is in effect; and they are
    not bfloat16's: fp16's largest error against ONNX Runtime is below the
    bf16 build's on every output of the products;
  - the AVX-512 kernel (-march=native), the F16C one (--cpu haswell) and the
    portable one (--cpu generic) give the same bits (onnxc run, outputs
    compared byte for byte);
  - guard mode (ONNXC_CHECK_GUARD=1: red zones around every buffer, the
    float16 scratch included) on MobileNetV2 and BERT-tiny, and with
    --threads 2 (each thread's float16 packing buffers) on the conv, the
    MatMul and MobileNetV2;
  - the sources: the float16 kernels and no float32 product, warning-free
    under -std=c99 -Wall -Wextra -Werror -pedantic with -march=native,
    -march=haswell and no -march, no malloc or stdio; the weights file holds
    about half the bytes of float32's.

Usage: test_precision_fp16.py --onnxc BIN --corpus DIR
"""
import argparse
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PY = sys.executable
MODELS = ["conv3x3_64_56", "conv1x1_256_64_56", "matmul_128_768_3072", "bert_tiny", "mobilenetv2"]

from checks import expect, failures, run  # noqa: E402


def max_errors(text):
    """{output name: max abs err} from `onnxc check -v`."""
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"output \d+ '([^']+)': max abs err ([0-9.eE+-]+)", text)}


def inputs_of(case_dir):
    import onnx
    args = []
    ds = os.path.join(case_dir, "test_data_set_0")
    for f in sorted(os.listdir(ds)):
        if f.startswith("input_"):
            t = onnx.load_tensor(os.path.join(ds, f))
            args += ["--input", f"{t.name}={os.path.join(ds, f)}"]
    return args


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
        rc, text = run([onnxc, "check", "-v", "--precision", "fp16", case[m]])
        expect(rc == 0, f"{m}: fp16 matches ONNX Runtime at the fp16 tolerance", text)
        fp16 = max_errors(text)
        rc, text = run([onnxc, "check", "--precision", "fp16", "--rtol", "1e-3", "--atol", "1e-6", case[m]])
        expect(rc == 1 and "elements differ" in text, f"{m}: fp16 is not float32 (fails rtol 1e-3)", text)
        rc, text = run([onnxc, "check", "-v", "--precision", "bf16", case[m]])
        bf16 = max_errors(text)
        expect(fp16 and set(fp16) == set(bf16) and all(fp16[o] < bf16[o] for o in fp16),
               f"{m}: fp16's largest errors {fp16} are below bf16's {bf16}")

    with tempfile.TemporaryDirectory() as tmp:
        for m in ("conv3x3_64_56", "bert_tiny", "matmul_128_768_3072"):
            outs = {}
            for cpu in ("native", "haswell", "generic"):
                d = os.path.join(tmp, f"{m}_{cpu}")
                rc, text = run([onnxc, "run", "--precision", "fp16", "--cpu", cpu, os.path.join(case[m], "model.onnx")]
                               + inputs_of(case[m]) + ["--output", d])
                expect(rc == 0, f"{m}: onnxc run --precision fp16 --cpu {cpu}", text)
                outs[cpu] = {f: open(os.path.join(d, f), "rb").read() for f in sorted(os.listdir(d))} if rc == 0 else {}
            expect(outs["native"] and outs["native"] == outs["haswell"] == outs["generic"],
                   f"{m}: AVX-512, F16C and portable fp16 kernels give the same bits")

    for m in ("mobilenetv2", "bert_tiny"):
        rc, text = run([onnxc, "check", "--precision", "fp16", case[m]], {"ONNXC_CHECK_GUARD": "1"})
        expect(rc == 0, f"{m}: fp16 in guard mode", text)
    for m in ("conv3x3_64_56", "matmul_128_768_3072", "mobilenetv2"):
        rc, text = run([onnxc, "check", "--precision", "fp16", "--threads", "2", case[m]], {"ONNXC_CHECK_GUARD": "1"})
        expect(rc == 0, f"{m}: fp16 with --threads 2 (products split over the pool), guard mode", text)

    with tempfile.TemporaryDirectory() as tmp:
        for m in ("conv3x3_64_56", "bert_tiny"):
            src = os.path.join(tmp, m)
            rc, text = run([onnxc, "-S", os.path.join(case[m], "model.onnx"), "-o", src, "--name", "m",
                            "--precision", "fp16", "--threads", "2" if m == "bert_tiny" else "1"])
            expect(rc == 0, f"{m}: -S --precision fp16", text)
            if rc:
                continue
            c = open(os.path.join(src, "m.c")).read()
            expect("onnxc_hkr(" in c and "onnxc_bkr(" not in c, f"{m}: --precision fp16 writes the float16 kernels")
            if m == "conv3x3_64_56":
                expect("onnxc_ukr(" not in c, f"{m}: no float32 product left")
            expect(not re.search(r"\bmalloc\b|\bprintf\b|stdio\.h", c), f"{m}: no malloc or stdio in the sources")
            for march in ("-march=native", "-march=haswell", None):
                cmd = ["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O2", "-c",
                       os.path.join(src, "m.c"), "-o", os.path.join(tmp, "m.o")] + ([march] if march else [])
                rc, text = run(cmd)
                expect(rc == 0, f"{m}: the fp16 sources compile warning-free with {march or 'no -march'}", text)
        model = os.path.join(case["matmul_128_768_3072"], "model.onnx")
        sizes = {}
        for prec in ("f32", "fp16"):
            d = os.path.join(tmp, "w_" + prec)
            run([onnxc, "-S", model, "-o", d, "--name", "m", "--weights", "blob", "--precision", prec])
            sizes[prec] = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.startswith("m_weights"))
        expect(sizes["f32"] > 0 and sizes["fp16"] < 0.55 * sizes["f32"],
               f"fp16 weights take about half of float32's ({sizes})")

    print(f"{len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
