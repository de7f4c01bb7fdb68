#!/usr/bin/env python3
"""Print the memory plan of models as a markdown table (docs/memory.md).

Usage: memory_table.py --onnxc build/bin/onnxc MODEL [MODEL...]

A MODEL is an .onnx file or a case directory holding model.onnx (the layout
of make_models.py and the ONNX backend tests). Each is compiled with
`onnxc -S --memory-report`; the columns come from the report:

  arena        NAME_ARENA_BYTES (scratch included)
  scratch      the largest scratch of one node
  bound        lower bound of the compiler's schedule (most bytes live at a step)
  model bound  lower bound of the model's own node order
  naive        every intermediate in its own buffer (views copied, nothing shared)
  arena/bound  1.000 means the plan is optimal for its schedule

Exit status 1 when a model fails to compile or its arena exceeds 1.02 x the
bound or the model-order bound (the targets of docs/memory.md).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile


def model_path(arg):
    if os.path.isdir(arg):
        return os.path.join(arg, "model.onnx"), os.path.basename(os.path.normpath(arg))
    return arg, os.path.splitext(os.path.basename(arg))[0]


def report(onnxc, path, extra):
    with tempfile.TemporaryDirectory() as tmp:
        rep = os.path.join(tmp, "report.json")
        cmd = [onnxc, "-S", path, "-o", os.path.join(tmp, "src"), "--memory-report", rep] + extra
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            return None, run.stderr.strip()
        with open(rep) as f:
            return json.load(f), None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("models", nargs="+")
    ap.add_argument("-D", action="append", default=[], help="pin a symbolic dim (DIM=VALUE)")
    args = ap.parse_args()
    extra = [f"-D{p}" for p in args.D]
    print("| model | buffers | arena | scratch | bound | model bound | naive | arena/bound | naive/arena | strategy |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    bad = 0
    for arg in args.models:
        path, name = model_path(arg)
        r, err = report(args.onnxc, path, extra)
        if r is None:
            print(f"| {name} | compile error: {err.splitlines()[-1] if err else '?'} |||||||||")
            bad += 1
            continue
        arena, bound = r["arena_bytes"], r["lower_bound_bytes"]
        model_bound = r.get("model_order_lower_bound_bytes", bound)
        ratio = arena / bound if bound else 1.0
        gain = r["naive_bytes"] / arena if arena else 1.0
        print(f"| {name} | {len(r['tensors'])} | {arena} | {r['scratch_bytes']} | {bound} | {model_bound} "
              f"| {r['naive_bytes']} | {ratio:.3f} | {gain:.2f} | {r.get('strategy', '')} |")
        if arena - r["scratch_bytes"] > 1.02 * bound or arena - r["scratch_bytes"] > model_bound:
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
