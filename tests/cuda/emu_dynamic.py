#!/usr/bin/env python3
"""The CUDA target with -D ranges (docs/dynamic-shapes.md, "CUDA"), without a GPU.

Each model is compiled once for its range (`onnxc check --target cuda
--build-only -D ...`: NVRTC, host code, the check harness of the dims
protocol), then NAME.cu runs on the CPU emulation (emu_check.py) for every
data set, each at other dims, against ONNX Runtime:
  - bert_tiny_dynamic (models/corpus) with -D seq=1..512 at seq 1, 7, 64;
  - ocr_rec_dynamic with -D W=16..1024 at W 16, 100, 320 (derived dims:
    the strided windows' floor divisions, computed on the host);
  - the mask and position arithmetic of transformers exports (test_dynamic.py's
    hf_mask_model: Expand to a shape built from Shape/Concat, Cast, Where,
    Range(0, seq), Gather, Softmax, MatMul) with -D seq=1..64 at 1, 7, 33, 64;
  - random models of tests/diff/gen_dynamic.py (seeds --seeds) with
    -D n=1..48, at the lengths the generator draws.
Tolerances: a corpus model's own (its case.json: rtol 1e-3, atol 1e-4), the
random models' run_diff.py's (rtol 1e-3, atol 1e-5): the kernels sum in
other orders than ONNX Runtime (16-wide tiles, block reductions), which moves
values near zero by float32 noise (5e-7 seen).
Every data set must run and match; a model whose build has a kernel with
run-time extents in a single thread is listed (not a failure: the fallback
is correct, only slow).

  python3 tests/cuda/emu_dynamic.py --onnxc build/bin/onnxc [--work DIR] [--seeds 0:4]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.path.insert(0, os.path.join(ROOT, "tests", "diff"))
import emu_check  # noqa: E402
import gen_dynamic  # noqa: E402
import run_diff  # noqa: E402
import test_dynamic  # noqa: E402

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def corpus_tol(corpus, name):
    return emu_check.tolerance(os.path.join(corpus, name))


def corpus_model(corpus, name):
    model = os.path.join(corpus, name, "model.onnx")
    if not os.path.exists(model):
        r = subprocess.run([sys.executable, os.path.join(ROOT, "models", "corpus", "make_corpus.py"), corpus,
                            "--only", name], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"make_corpus {name} failed:\n{r.stderr[-2000:]}")
    return model


def run(onnxc, case, args, n_sets, emu_dir, what, tol):
    """Builds case once with args (-D ...) and runs every data set on the emulation."""
    with open(os.path.join(case, "onnxc_args"), "w") as f:
        f.write(" ".join(args) + "\n")
    with open(os.path.join(case, "case.json"), "w") as f:  # emu_check.tolerance() reads it
        json.dump({"rtol": tol[0], "atol": tol[1]}, f)
    p = subprocess.run([onnxc, "check", "--target", "cuda", "--build-only", "--keep-temps"] + args + [case],
                       capture_output=True, text=True, timeout=900)
    m = re.search(r"onnxc check: kept (\S+)", p.stderr)
    if p.returncode or not m:
        check(False, f"{what}: builds for CUDA with {' '.join(args)}\n{p.stderr[-3000:]}")
        return
    d = m.group(1)
    try:
        with open(os.path.join(d, "model.cu")) as f:
            cu = f.read()
        single = sorted(set(re.findall(r"/\* single thread: no parallel kernel with run-time extents for (\w+)", cu)))
        stats = re.search(r"/\* (\d+) kernels, (\d+) of them parallel; (\d+) with run-time extents in a single thread", cu)
        print(f"     {what}: {stats.group(0)[3:] if stats else '?'}" +
              (f"; single-thread fallback: {', '.join(single)}" if single else ""), flush=True)
        check(stats is not None, f"{what}: the build has kernels with run-time extents")
        key, status, msg = emu_check.run_built(what, d, case, emu_dir, expect_sets=n_sets)
        check(status == "ok", f"{what}: {n_sets} data sets, one build, match ONNX Runtime on the CPU emulation"
              + ("" if status == "ok" else f" [{status}] {msg.strip()[-2000:]}"))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--corpus", help="models/corpus output (default: under --work)")
    ap.add_argument("--work")
    ap.add_argument("--seeds", default="0:3", help="gen_dynamic seeds LO:HI")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="onnxc-cuda-dyn-")
    os.makedirs(work, exist_ok=True)
    corpus = args.corpus or os.path.join(work, "corpus")
    emu_dir = emu_check.build_emu_lib(work)
    try:
        seqs = [1, 7, 64]
        case = os.path.join(work, "bert_dyn")
        test_dynamic.write_case(case, corpus_model(corpus, "bert_tiny_dynamic"),
                                [test_dynamic.bert_feeds(s, s) for s in seqs])
        run(args.onnxc, case, ["-D", "seq=1..512"], len(seqs), emu_dir, f"bert_tiny_dynamic seq {seqs}",
            corpus_tol(corpus, "bert_tiny_dynamic"))

        widths = [16, 100, 320]
        rng = np.random.default_rng(48)
        case = os.path.join(work, "ocr_dyn")
        test_dynamic.write_case(case, corpus_model(corpus, "ocr_rec_dynamic"),
                                [{"x": rng.standard_normal((1, 3, 48, w), dtype=np.float32)} for w in widths])
        run(args.onnxc, case, ["-D", "W=16..1024"], len(widths), emu_dir, f"ocr_rec_dynamic W {widths}",
            corpus_tol(corpus, "ocr_rec_dynamic"))

        path = os.path.join(work, "hf_mask.onnx")
        test_dynamic.hf_mask_model(path)
        rng = np.random.default_rng(5)
        feeds, seqs = [], [1, 7, 33, 64]
        for s in seqs:
            m = np.ones((1, s), np.int64)
            m[0, s - s // 3:] = 0
            feeds.append({"x": rng.standard_normal((1, s, 8)).astype(np.float32), "mask": m})
        case = os.path.join(work, "hf_mask")
        test_dynamic.write_case(case, path, feeds)
        run(args.onnxc, case, ["-D", "seq=1..64"], len(seqs), emu_dir, f"hf-style mask seq {seqs}",
            (float(run_diff.RTOL), float(run_diff.ATOL)))

        lo, hi = (int(v) for v in args.seeds.split(":"))
        for seed in range(lo, hi):
            model, sets, ns = gen_dynamic.generate(seed)
            case = os.path.join(work, f"gen_dynamic_{seed}")
            run_diff.write_dynamic_case(case, model, sets)
            run(args.onnxc, case, ["-D", f"n=1..{gen_dynamic.N_MAX}"], len(sets), emu_dir,
                f"gen_dynamic seed {seed} ({len(model.graph.node)} nodes) n {list(ns)}",
                (float(run_diff.RTOL), float(run_diff.ATOL)))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
