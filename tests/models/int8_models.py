#!/usr/bin/env python3
"""The int8 QDQ corpus models against ONNX Runtime's integer kernels.

Usage: int8_models.py --onnxc BIN [--corpus DIR] [--models NAME ...] [--cpu native,generic]
                      [--threads 2]

For each model of the corpus's int8 group (models/corpus/quantize.py; built
into --corpus when missing):
  1. `onnxc check` of the whole model against the case's reference outputs
     (ORT with its graph optimizations, i.e. its QLinearConv / QGemm /
     QLinearAdd / ... kernels) within the case tolerance: one quantum of the
     final quantized Softmax, which ORT runs as QLinearSoftmax (an exp
     table) and onnxc in float between DQ and Q;
  2. the same model cut before its Softmax (its logits): onnxc's output must
     equal ORT's exactly, for each --cpu (native: AVX-512 VNNI where the
     machine has it; generic: the portable C kernels), and with --threads N
     (native; the kernels on the thread pool).
Prints the largest difference seen per model and fails on any mismatch.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "models", "corpus"))

import make_corpus  # noqa: E402

ort.set_default_logger_severity(3)
INT8 = [n for n, e in make_corpus.MODELS.items() if "int8" in e.groups]


def cut_before_softmax(model):
    """The model up to the input of its last Softmax (the logits), or None."""
    soft = [n for n in model.graph.node if n.op_type == "Softmax"]
    if not soft:
        return None
    out = soft[-1].input[0]
    need, keep = {out}, []
    for n in reversed(model.graph.node):
        if any(o in need for o in n.output):
            keep.append(n)
            need.update(n.input)
    m = onnx.ModelProto()
    m.CopyFrom(model)
    del m.graph.node[:]
    m.graph.node.extend(reversed(keep))
    del m.graph.output[:]
    m.graph.output.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, None))
    used = {i for n in m.graph.node for i in n.input}
    inits = [t for t in m.graph.initializer if t.name in used]
    del m.graph.initializer[:]
    m.graph.initializer.extend(inits)
    return m


def ort_run(path, feeds):
    # the exact u8 x s8 kernel (ORT's default on AVX2 without VNNI saturates
    # 16-bit pair sums: corpus_lib.exact_int8)
    opts = ort.SessionOptions()
    opts.add_session_config_entry("session.x64quantprecision", "1")
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def onnxc_run(onnxc, path, feeds, cpu, work, threads=1):
    args = [onnxc, "run", path, "--cpu", cpu, "--output", work]
    if threads > 1:
        args += ["--threads", str(threads)]
    for name, x in feeds.items():
        f = os.path.join(work, f"in_{len(args)}.npy")
        np.save(f, x)
        args += ["--input", f"{name}={f}"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"onnxc run failed: {r.stderr[-2000:]}")
    outs = sorted(f for f in os.listdir(work) if f.endswith(".npy") and not f.startswith("in_"))
    return np.load(os.path.join(work, outs[0]))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--corpus", default=os.path.join(REPO, "build", "corpus"))
    ap.add_argument("--models", nargs="+", default=INT8)
    ap.add_argument("--cpu", default="native,generic")
    ap.add_argument("--threads", type=int, default=2, help="also run native with N threads (1: not)")
    args = ap.parse_args()
    failed = 0
    for name in args.models:
        case = make_corpus.build_case(args.corpus, name)
        meta = make_corpus.MODELS[name]
        r = subprocess.run([args.onnxc, "check", "-v", "--rtol", str(meta.rtol), "--atol",
                            str(meta.atol), case], capture_output=True, text=True)
        status = "ok" if r.returncode == 0 else "FAIL"
        failed += r.returncode != 0
        last = [ln for ln in (r.stdout + r.stderr).splitlines() if "max abs err" in ln]
        print(f"{name}: check (atol {meta.atol}): {status} {last[-1].split(':', 2)[-1].strip() if last else ''}")
        if r.returncode:
            print(r.stdout[-2000:], r.stderr[-2000:])
        model = onnx.load(os.path.join(case, "model.onnx"))
        t = onnx.TensorProto()
        with open(os.path.join(case, "test_data_set_0", "input_0.pb"), "rb") as f:
            t.ParseFromString(f.read())
        feeds = {model.graph.input[0].name: numpy_helper.to_array(t)}
        cut = cut_before_softmax(model)
        if cut is None:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "logits.onnx")
            onnx.save(cut, path)
            want = ort_run(path, feeds)
            runs = [(cpu, 1) for cpu in args.cpu.split(",")]
            if args.threads > 1:
                runs.append(("native", args.threads))
            for cpu, threads in runs:
                work = os.path.join(tmp, f"{cpu}_{threads}")
                os.makedirs(work)
                got = onnxc_run(args.onnxc, path, feeds, cpu, work, threads)
                diff = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
                n_diff = int(np.sum(got != want))
                ok = got.shape == want.shape and n_diff == 0
                failed += not ok
                print(f"{name}: logits {list(want.shape)} --cpu {cpu} --threads {threads}: "
                      f"{'exact' if ok else 'DIFFER'} ({n_diff} elements differ, max abs diff {diff:g})")
    print("int8 models:", "all passed" if not failed else f"{failed} failure(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
