#!/usr/bin/env python3
"""Accuracy and speed of --precision bf16 or fp16 against float32, one command.

Usage:
  python3 bench/precision.py --onnxc build/bin/onnxc [--models NAME ...]
                             [--precision bf16|fp16] [--repeat N] [--markdown FILE]

For each corpus model (models/corpus/make_corpus.py, built into --corpus on
first use): compile it twice with onnxc, float32 and --precision P; run both
on the case's inputs and report, per output, the largest absolute error and
the largest relative error of the reduced precision against the float32
library and against the case's reference outputs (ONNX Runtime, graph
optimizations off), the relative error over elements above 1e-3 of the
output's largest magnitude (near-zero elements make any relative error
large). Then time both libraries in alternating blocks (bench/run.py's
measure: 50 ms pause and one untimed run before each block), both built
with --threads N (default 1), and report median and minimum latencies and the ratio float32 / P. The
machine may be shared: the load average is printed before and after.

For scale, the same errors of ONNX Runtime running the model with every
Conv, Gemm and MatMul operand rounded to P (a Cast to P and back inserted
before inputs 0 and 1, graph optimizations off): the error the rounding
itself costs, whatever the kernels.
"""

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import run as bench  # noqa: E402

DEFAULT_MODELS = ["resnet50", "bert_base", "mobilenetv2", "bert_tiny"]


def errors(got, want):
    g, w = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
    d = np.abs(g - w)
    scale = float(np.max(np.abs(w))) if w.size else 0.0
    big = np.abs(w) > 1e-3 * scale
    rel = d[big] / np.abs(w[big]) if big.any() else np.zeros(1)
    return {"max_abs": float(d.max()) if d.size else 0.0,
            "max_rel": float(rel.max()),
            "max_abs_over_scale": float(d.max() / scale) if scale else 0.0,
            "scale": scale}


def emulated(model_path, inputs, precision):
    """ONNX Runtime's outputs with the products' operands rounded to `precision`."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper
    to = TensorProto.BFLOAT16 if precision == "bf16" else TensorProto.FLOAT16
    m = onnx.load(model_path)
    nodes, k = [], 0
    for n in m.graph.node:
        if n.op_type in ("MatMul", "Gemm", "Conv"):
            for i in range(min(2, len(n.input))):
                lo, back = f"{n.input[i]}__lowp{k}", f"{n.input[i]}__f32_{k}"
                k += 1
                nodes.append(helper.make_node("Cast", [n.input[i]], [lo], to=to))
                nodes.append(helper.make_node("Cast", [lo], [back], to=TensorProto.FLOAT))
                n.input[i] = back
        nodes.append(n)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {n: a for n, a in inputs})


def run_model(args, name):
    case_dir = os.path.join(args.corpus, name)
    meta, inputs, refs = bench.load_case(case_dir)
    env = dict(os.environ)
    libs = {}
    out = {"name": name, "outputs": [], "compile_s": {}}
    for prec in ("f32", args.precision):
        extra = [] if prec == "f32" else ["--precision", prec]
        c = bench.compile_model(args.onnxc, case_dir, os.path.join(args.work, name, f"{prec}_t{args.threads}"),
                                name, args.threads if args.threads > 1 else None, env, extra)
        if not c["ok"]:
            raise SystemExit(f"{name} {prec}: {c['error']}")
        out["compile_s"][prec] = c["wall_s"]
        out.setdefault("arena_bytes", {})[prec] = c["arena_bytes"]
        out.setdefault("so_bytes", {})[prec] = c["so_bytes"]
        libs[prec] = bench.OnnxcModel(c["lib"], name, c["arena_bytes"], inputs, refs)
        libs[prec]()
    emu = emulated(os.path.join(case_dir, "model.onnx"), inputs, args.precision)
    for i, (oname, ref) in enumerate(refs):
        f32, low = libs["f32"].outputs[i], libs[args.precision].outputs[i]
        out["outputs"].append({"output": oname, "vs_f32": errors(low, f32), "vs_ref": errors(low, ref),
                               "f32_vs_ref": errors(f32, ref), "emulated_vs_ref": errors(emu[i], ref)})
    times = bench.measure(libs, args.warmup, args.repeat, args.budget, rounds=args.rounds)
    for prec, ts in times.items():
        wall = [w for w, _ in ts]
        out.setdefault("median_ms", {})[prec] = statistics.median(wall)
        out.setdefault("min_ms", {})[prec] = min(wall)
        out.setdefault("runs", {})[prec] = len(wall)
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--models", nargs="+", default=DEFAULT_MODELS)
    ap.add_argument("--precision", default="bf16", choices=["bf16", "fp16"])
    ap.add_argument("--corpus", default="build/corpus")
    ap.add_argument("--work", default="build/precision")
    ap.add_argument("--threads", type=int, default=1, help="onnxc --threads for both libraries (default 1)")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--budget", type=float, default=3.0, help="seconds of timed runs per library")
    ap.add_argument("--markdown", help="also write the tables to this file")
    args = ap.parse_args(argv)
    bench.ensure_corpus(args.corpus, args.models)
    P = args.precision
    lines = [f"load average before: {os.getloadavg()}", ""]
    acc = ["| model | output | max abs err vs f32 | max rel err vs f32 | max abs / max abs output "
           f"| {P} max abs err vs ORT | f32 max abs err vs ORT | ORT, operands rounded to {P}: max abs err |",
           "|---|---|---|---|---|---|---|---|"]
    speed = [f"| model | f32 median ms | {P} median ms | f32 / {P} (median) | f32 min ms | {P} min ms "
             f"| f32 / {P} (min) | runs each | arena f32 / {P} MB | .so f32 / {P} MB |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name in args.models:
        r = run_model(args, name)
        for o in r["outputs"]:
            acc.append(f"| {name} | {o['output']} | {o['vs_f32']['max_abs']:.3g} | {o['vs_f32']['max_rel']:.3g} "
                       f"| {o['vs_f32']['max_abs_over_scale']:.3g} | {o['vs_ref']['max_abs']:.3g} "
                       f"| {o['f32_vs_ref']['max_abs']:.3g} | {o['emulated_vs_ref']['max_abs']:.3g} |")
        med, mn = r["median_ms"], r["min_ms"]
        speed.append(f"| {name} | {med['f32']:.2f} | {med[P]:.2f} | {med['f32'] / med[P]:.2f}x | {mn['f32']:.2f} "
                     f"| {mn[P]:.2f} | {mn['f32'] / mn[P]:.2f}x | {r['runs']['f32']} "
                     f"| {r['arena_bytes']['f32'] / 1e6:.1f} / {r['arena_bytes'][P] / 1e6:.1f} "
                     f"| {r['so_bytes']['f32'] / 1e6:.1f} / {r['so_bytes'][P] / 1e6:.1f} |")
        print(acc[-len(r["outputs"]):], speed[-1], flush=True)
    lines += ["Accuracy (relative errors over elements above 1e-3 of the output's largest magnitude):", ""]
    lines += acc + ["", f"Speed (--threads {args.threads}, alternating blocks):", ""] + speed
    lines += ["", f"load average after: {os.getloadavg()}"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
