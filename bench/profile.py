#!/usr/bin/env python3
"""Where the time goes in one corpus model: a per-operator profile with perf.

Usage: python3 bench/profile.py --onnxc build/bin/onnxc [--model resnet50] [--seconds 20]

Compiles the model with onnxc, adding to ONNXC_CFLAGS -g and the flags that
keep each node's function whole and separate (no inlining into NAME_run, no
merging of identical functions, no specialised clones), so every sample lands
in a `nodeN_Op` function. Runs the library in a loop under
`perf record -e cpu-clock` (a software event: works in VMs without hardware
counters) and sums the samples per operator type and per node; milliseconds
are shares of the loop thread's CPU time per run, so they hold on a busy
machine. The kept C
source maps `nodeN` to its ONNX node (the comment above each function), and
the ONNX graph gives that node's shapes and FLOPs, hence GFLOP/s per node.
Needs perf (Debian: linux-perf) and a perf_event_paranoid that allows it.
"""

import argparse
import collections
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "models", "corpus"))
sys.path.insert(0, HERE)

import run  # noqa: E402

NO_INLINE_GCC = ("-g -fno-inline-functions-called-once -fno-inline-functions "
                 "-fno-inline-small-functions -fno-ipa-icf -fno-ipa-cp-clone -fno-ipa-sra")
NO_INLINE_CLANG = "-g -fno-inline-functions"


def no_inline_flags():
    cc = os.environ.get("CC", "cc").split()
    out = subprocess.run(cc + ["--version"], capture_output=True, text=True)
    return NO_INLINE_CLANG if "clang" in out.stdout else NO_INLINE_GCC
LOOP = """
import sys, time
sys.path.insert(0, {here!r})
import run
meta, inputs, refs = run.load_case({case!r})
m = run.OnnxcModel({lib!r}, {name!r}, {arena}, inputs, refs)
m()
end = time.perf_counter() + {seconds}
n = 0
cpu0 = time.thread_time()
while time.perf_counter() < end:
    m()
    n += 1
print(n, time.thread_time() - cpu0)
"""
SYMBOL = re.compile(r"node(\d+)_(\w+?)(?:\.(?:constprop|isra|part|cold)\.\d+)*")


def node_names(source):
    """{index: ONNX node name} from the comments in the generated C."""
    names = {}
    with open(source) as f:
        text = f.read()
    for m in re.finditer(r"/\* node '(.*?)' \((\w+)\) \*/\s*(?:(?:static|ONNXC_NODE_FN|ONNXC_NODE_FN_W) int|#define) node(\d+)_", text):
        names[int(m.group(3))] = m.group(1)
    return names


def perf_samples(data, lib_name):
    """{(node index, op): percent of samples}, {other symbol: percent}."""
    rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--sort", "dso,sym",
                          "--percent-limit", "0"], capture_output=True, text=True)
    by_node, other = collections.Counter(), collections.Counter()
    for line in rep.stdout.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[.\]\s+(\S+)", line)
        if not m:
            continue
        pct, dso, sym = float(m.group(1)), m.group(2), m.group(3)
        node = SYMBOL.fullmatch(sym)
        if dso == lib_name and node:
            by_node[(int(node.group(1)), node.group(2))] += pct
        else:
            other[f"{dso} {sym}"] += pct
    return by_node, other


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--seconds", type=float, default=20.0, help="seconds of sampling")
    ap.add_argument("--corpus", default=os.path.join(REPO, "build", "corpus"))
    ap.add_argument("--work", default=os.path.join(REPO, "build", "bench", "profile"))
    ap.add_argument("--cflags", default="-march=native")
    ap.add_argument("--top", type=int, default=20, help="nodes listed (default 20)")
    ap.add_argument("--json", help="also write the profile as JSON")
    args = ap.parse_args()
    if not shutil.which("perf"):
        sys.exit("profile.py: perf not found (Debian: apt-get install linux-perf)")

    import onnx
    import corpus_lib
    import make_corpus
    case = make_corpus.build_case(args.corpus, args.model, log=lambda s: print(s, file=sys.stderr))
    _, inputs, _ = run.load_case(case)
    flops = corpus_lib.node_flops(onnx.load(os.path.join(case, "model.onnx")), dict(inputs))

    tmp = os.path.join(os.path.abspath(args.work), "tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    env = dict(os.environ, ONNXC_CFLAGS=f"{args.cflags} {no_inline_flags()}".strip(), TMPDIR=tmp)
    c = run.compile_model(os.path.abspath(args.onnxc), case, args.work, args.model, None, env,
                          ["--keep-temps"])
    if not c["ok"]:
        sys.exit(f"profile.py: {args.model} does not compile: {c['error']}")
    sources = glob.glob(os.path.join(tmp, "*", f"{args.model}.c"))
    names = node_names(sources[0]) if sources else {}

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
    runs, cpu_s = int(rec.stdout.split()[-2]), float(rec.stdout.split()[-1])
    by_node, other = perf_samples(data, os.path.basename(c["lib"]))
    in_nodes = sum(by_node.values()) or 1.0
    total_pct = in_nodes + sum(other.values())
    # the loop's thread CPU time per run: wall time less preemption, so the
    # figures hold on a busy machine; samples split it by share
    run_ms = cpu_s * 1000 / max(runs, 1)
    node_ms = {k: run_ms * pct / total_pct for k, pct in by_node.items()}

    print(f"{args.model}: {runs} runs in {args.seconds:.0f} s, {run_ms:.1f} ms CPU time per run "
          f"(under perf); {100 * in_nodes / total_pct:.1f}% of samples in node functions\n")
    ops = collections.defaultdict(lambda: {"nodes": 0, "ms": 0.0, "flops": 0})
    rows = []
    for (idx, op), ms in node_ms.items():
        name = names.get(idx, "?")
        info = flops.get(name)
        f = info[3] if info else 0
        ops[op]["nodes"] += 1
        ops[op]["ms"] += ms
        ops[op]["flops"] += f
        rows.append({"node": f"node{idx}_{op}", "onnx": name, "ms": ms, "flops": f,
                     "out": info[1] if info else None, "weight": info[2] if info else None})
    print("| op | nodes sampled | share | ms per run | GFLOP | GFLOP/s |")
    print("|---|---|---|---|---|---|")
    for op, v in sorted(ops.items(), key=lambda kv: -kv[1]["ms"]):
        rate = f"{v['flops'] / v['ms'] / 1e6:.1f}" if v["flops"] and v["ms"] else "-"
        gf = f"{v['flops'] / 1e9:.2f}" if v["flops"] else "-"
        print(f"| {op} | {v['nodes']} | {100 * v['ms'] / sum(x['ms'] for x in ops.values()):.1f}% "
              f"| {v['ms']:.1f} | {gf} | {rate} |")
    print(f"\n| top {args.top} nodes | ONNX node | output | weight | ms | GFLOP/s |")
    print("|---|---|---|---|---|---|")
    rows.sort(key=lambda r: -r["ms"])
    for r in rows[:args.top]:
        rate = f"{r['flops'] / r['ms'] / 1e6:.1f}" if r["flops"] and r["ms"] else "-"
        print(f"| {r['node']} | {r['onnx']} | {r['out']} | {r['weight']} | {r['ms']:.1f} "
              f"| {rate} |")
    if other:
        print("\noutside node functions:", ", ".join(
            f"{k} {100 * v / total_pct:.1f}%" for k, v in other.most_common(5)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "runs": runs, "cpu_ms_per_run": run_ms,
                       "ops": ops, "nodes": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
