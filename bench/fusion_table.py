#!/usr/bin/env python3
"""Kernels per model, before and after fusion: the table of docs/fusion.md.

    python3 bench/fusion_table.py --onnxc build/bin/onnxc [--before OLD_ONNXC] \\
        [--corpus build/corpus] [--models bert_tiny mobilenetv2 ...] [--cuda]

For each corpus model (models/corpus/make_corpus.py builds them), counts the
ONNX nodes of model.onnx and the kernels of the C the compiler writes (`-S`,
one `ONNXC_NODE_FN int nodeN_...` function per kernel; views that need no code have
none): at -O0 (no fusion) and at the default -O2, and with --before, at -O2
for another onnxc binary (an older commit). With --cuda it also counts the
CUDA target's kernels that run on a single GPU thread (the fallback) in the
emitted .cu. Prints a Markdown table.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))


def kernels(onnxc, model, level, target="c"):
    with tempfile.TemporaryDirectory(prefix="onnxc-fusion-") as out:
        cmd = [onnxc, level, model, "-S", "-o", out]
        if target != "c":
            cmd[1:1] = ["--target", target]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            return None, None
        src = glob.glob(os.path.join(out, "*.cu" if target == "cuda" else "*.c"))
        text = "".join(open(f).read() for f in src if not f.endswith("_weights.c"))
        if target == "cuda":
            total = len(re.findall(r'extern "C" __global__ void node\d+_', text))
            single = len(re.findall(r"single thread", text))
            return total, single
        return len(re.findall(r"^(?:(?:static|ONNXC_NODE_FN|ONNXC_NODE_FN_W) int|#define) node\d+_", text, re.M)), None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", default=os.path.join(HERE, "..", "build", "bin", "onnxc"))
    ap.add_argument("--before", help="another onnxc binary, counted at -O2")
    ap.add_argument("--corpus", default=os.path.join(HERE, "..", "build", "corpus"))
    ap.add_argument("--models", nargs="*")
    ap.add_argument("--cuda", action="store_true", help="also count single-thread CUDA kernels")
    args = ap.parse_args()
    names = args.models or sorted(d for d in os.listdir(args.corpus)
                                  if os.path.isfile(os.path.join(args.corpus, d, "model.onnx")))
    head = "| model | ONNX nodes | kernels -O0 |" + (" kernels before (-O2) |" if args.before else "") + \
        " kernels -O2 |" + (" CUDA kernels (single-thread) |" if args.cuda else "")
    print(head)
    print("|" + "|".join("---" for _ in range(head.count("|") - 1)) + "|")
    for name in names:
        model = os.path.join(args.corpus, name, "model.onnx")
        n = len(onnx.load(model, load_external_data=False).graph.node)
        k0, _ = kernels(args.onnxc, model, "-O0")
        k2, _ = kernels(args.onnxc, model, "-O2")
        row = f"| {name} | {n} | {k0} |"
        if args.before:
            kb, _ = kernels(args.before, model, "-O2")
            row += f" {kb} |"
        row += f" {k2} |"
        if args.cuda:
            kc, single = kernels(args.onnxc, model, "-O2", "cuda")
            row += f" {kc} ({single}) |"
        print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
