#!/usr/bin/env python3
"""Where the time goes in one corpus model: a per-operator profile with perf.

Usage: python3 bench/profile.py --onnxc build/bin/onnxc [--model resnet50] [--seconds 20]

Compiles the model with onnxc (ONNXC_CFLAGS adds -g and keeps each node's
function out of line, so every sample lands in a `nodeN_Op` function), runs
it in a loop under `perf record -e cpu-clock` (a software event: works in
VMs without hardware counters), and sums the samples per operator type and
per node. For Conv, MatMul and Gemm it also gives GFLOP/s, from the FLOPs of
those nodes in the ONNX graph (corpus_lib.count_flops per node type).
Needs perf (Debian: linux-perf) and a kernel.perf_event_paranoid that allows
sampling this process.
"""

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "models", "corpus"))
sys.path.insert(0, HERE)

NO_INLINE = "-g -fno-inline-functions-called-once -fno-inline-functions -fno-inline-small-functions"
LOOP = """
import sys, time
sys.path.insert(0, {here!r})
import run
meta, inputs, refs = run.load_case({case!r})
m = run.OnnxcModel({lib!r}, {name!r}, {arena}, inputs, refs)
m()
end = time.perf_counter() + {seconds}
n = 0
while time.perf_counter() < end:
    m()
    n += 1
print(n)
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--corpus", default=os.path.join(REPO, "build", "corpus"))
    ap.add_argument("--work", default=os.path.join(REPO, "build", "bench", "profile"))
    ap.add_argument("--cflags", default="-march=native")
    ap.add_argument("--top", type=int, default=15, help="nodes listed (default 15)")
    ap.add_argument("--json", help="also write the profile as JSON")
    args = ap.parse_args()
    if not shutil.which("perf"):
        sys.exit("profile.py: perf not found (Debian: apt-get install linux-perf)")

    import make_corpus
    import run
    case = make_corpus.build_case(args.corpus, args.model, log=lambda s: print(s, file=sys.stderr))
    meta, _, _ = run.load_case(case)
    env = dict(os.environ, ONNXC_CFLAGS=f"{args.cflags} {NO_INLINE}".strip())
    c = run.compile_model(os.path.abspath(args.onnxc), case, args.work, args.model, None, env)
    if not c["ok"]:
        sys.exit(f"profile.py: {args.model} does not compile: {c['error']}")

    data = os.path.join(args.work, "perf.data")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(LOOP.format(here=HERE, case=case, lib=c["lib"], name=args.model,
                            arena=c["arena_bytes"], seconds=args.seconds))
        loop = f.name
    try:
        rec = subprocess.run(["perf", "record", "-e", "cpu-clock", "-F", "997", "-o", data, "--",
                              sys.executable, loop], capture_output=True, text=True)
    finally:
        os.remove(loop)
    if rec.returncode != 0:
        sys.exit(f"profile.py: perf record failed: {rec.stderr.strip()[-300:]}")
    runs = int(rec.stdout.split()[-1])
    rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--sort", "dso,sym",
                          "--percent-limit", "0"], capture_output=True, text=True)

    lib_name = os.path.basename(c["lib"])
    by_node, other = {}, collections.Counter()
    for line in rep.stdout.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[.\]\s+(\S+)", line)
        if not m:
            continue
        pct, dso, sym = float(m.group(1)), m.group(2), m.group(3)
        node = re.fullmatch(r"node(\d+)_(\w+)", sym)
        if dso == lib_name and node:
            by_node[(int(node.group(1)), node.group(2))] = pct
        else:
            other[dso if dso != lib_name else f"{lib_name} {sym}"] += pct
    in_model = sum(by_node.values())
    by_op = collections.Counter()
    count = collections.Counter()
    for (_, op), pct in by_node.items():
        by_op[op] += pct
        count[op] += 1
    ms_per_run = args.seconds * 1000 / max(runs, 1)

    flops = meta_flops_by_op(case)
    print(f"{args.model}: {runs} runs in {args.seconds:.0f} s, {ms_per_run:.1f} ms per run "
          f"(under perf); {in_model:.1f}% of samples in node functions\n")
    print("| op | nodes | share of model time | ms per run | GFLOP | GFLOP/s |")
    print("|---|---|---|---|---|---|")
    rows = []
    for op, pct in by_op.most_common():
        share = pct / in_model if in_model else 0
        ms = share * ms_per_run
        f = flops.get(op)
        rate = f"{f / ms / 1e6:.1f}" if f and ms else "-"
        rows.append({"op": op, "nodes": count[op], "share": share, "ms": ms, "flops": f})
        print(f"| {op} | {count[op]} | {100 * share:.1f}% | {ms:.1f} | "
              f"{f / 1e9:.2f} | {rate} |" if f else
              f"| {op} | {count[op]} | {100 * share:.1f}% | {ms:.1f} | - | - |")
    print(f"\ntop {args.top} nodes:")
    for (idx, op), pct in sorted(by_node.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  node{idx}_{op}: {100 * pct / in_model:.1f}%")
    if other:
        print("\noutside node functions:", ", ".join(f"{k} {v:.1f}%" for k, v in
                                                   other.most_common(5)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "runs": runs, "ms_per_run": ms_per_run,
                       "ops": rows, "nodes": {f"node{i}_{o}": p for (i, o), p in
                                              by_node.items()}}, f, indent=1)
    return 0


def meta_flops_by_op(case_dir):
    """FLOPs per op type of Conv, MatMul and Gemm from the ONNX graph."""
    import onnx
    import corpus_lib
    import run
    model = onnx.load(os.path.join(case_dir, "model.onnx"))
    _, inputs, _ = run.load_case(case_dir)
    return corpus_lib.count_flops_by_op(model, dict(inputs))


if __name__ == "__main__":
    sys.exit(main())
