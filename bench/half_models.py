#!/usr/bin/env python3
"""Float16 models: onnxc against ONNX Runtime's float16 execution, one command.

Usage:
  python3 bench/half_models.py --onnxc build/bin/onnxc [--models NAME ...]
                           [--baseline OTHER_ONNXC] [--markdown FILE]

For each corpus model (models/corpus/make_corpus.py, built into --corpus on
first use): convert it to float16 (to_float16: every float32 initializer,
Constant and graph value becomes float16, Casts to float32 cast to float16;
integer inputs stay), run ONNX Runtime (CPU EP, one thread) on it with the
case's inputs rounded to float16, compile it with onnxc and report per output
the largest absolute error of onnxc against ONNX Runtime's float16 outputs,
and for scale ONNX Runtime float16 against the float32 model. Then time
onnxc (and, with --baseline, another onnxc build of the same model, e.g. one
before float16 products took the packed kernels) and ONNX Runtime in
alternating blocks (bench/run.py's measure).
"""

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import run as bench  # noqa: E402

DEFAULT_MODELS = ["mobilenetv2", "bert_tiny", "resnet50"]


def to_float16(model):
    """The model with float16 in place of float32 everywhere (a copy)."""
    import onnx
    from onnx import TensorProto, numpy_helper
    m = onnx.ModelProto()
    m.CopyFrom(model)

    def conv_tensor(t):
        if t.data_type == TensorProto.FLOAT:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))

    def conv_graph(g):
        for t in g.initializer:
            conv_tensor(t)
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
                vi.type.tensor_type.elem_type = TensorProto.FLOAT16
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.TENSOR:
                    conv_tensor(a.t)
                elif a.type == onnx.AttributeProto.GRAPH:
                    conv_graph(a.g)
                elif n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                    a.i = TensorProto.FLOAT16
    conv_graph(m.graph)
    return m


def errors(got, want):
    g, w = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
    d = np.abs(g - w)
    scale = float(np.max(np.abs(w))) if w.size else 0.0
    return {"max_abs": float(d.max()) if d.size else 0.0,
            "max_abs_over_scale": float(d.max() / scale) if scale else 0.0, "scale": scale}


def make_case(corpus, name, work):
    """work/NAME/case: the float16 model, its inputs and ONNX Runtime's float16
    outputs (test_data_set_0, as `onnxc check` reads them); returns
    (case_dir, inputs, ort16 outputs, ort32 outputs)."""
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
    src = os.path.join(corpus, name)
    _, inputs, refs32 = bench.load_case(src)
    case = os.path.join(work, name, "case")
    ds = os.path.join(case, "test_data_set_0")
    os.makedirs(ds, exist_ok=True)
    onnx.save(to_float16(onnx.load(os.path.join(src, "model.onnx"))), os.path.join(case, "model.onnx"))
    ins16 = [(n, a.astype(np.float16) if a.dtype == np.float32 else a) for n, a in inputs]
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(os.path.join(case, "model.onnx"), so, providers=["CPUExecutionProvider"])
    outs16 = sess.run(None, dict(ins16))
    names = [o.name for o in sess.get_outputs()]
    for i, (n, a) in enumerate(ins16):
        onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(ds, f"input_{i}.pb"))
    for i, (n, a) in enumerate(zip(names, outs16)):
        onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(ds, f"output_{i}.pb"))
    return case, ins16, list(zip(names, outs16)), refs32


def run_model(args, name):
    case, ins16, refs16, refs32 = make_case(args.corpus, name, args.work)
    engines, out = {}, {"name": name, "outputs": []}
    builds = [("onnxc", args.onnxc)] + ([("baseline", args.baseline)] if args.baseline else [])
    for key, exe in builds:
        c = bench.compile_model(exe, case, os.path.join(args.work, name, key), name, None, dict(os.environ))
        if not c["ok"]:
            raise SystemExit(f"{name} {key}: {c['error']}")
        out.setdefault("so_bytes", {})[key] = c["so_bytes"]
        out.setdefault("arena_bytes", {})[key] = c["arena_bytes"]
        engines[key] = bench.OnnxcModel(c["lib"], name, c["arena_bytes"], ins16, refs16)
        engines[key]()
    engines["ort"] = bench.OrtModel(os.path.join(case, "model.onnx"), 1, ins16, refs16)
    engines["ort"]()
    for i, (oname, r16) in enumerate(refs16):
        row = {"output": oname, "ort16_vs_ort32": errors(r16, refs32[i][1])}
        for key, _ in builds:
            row[f"{key}_vs_ort16"] = errors(engines[key].outputs[i], r16)
            row[f"{key}_vs_ort32"] = errors(engines[key].outputs[i], refs32[i][1])
        out["outputs"].append(row)
    times = bench.measure(engines, args.warmup, args.repeat, args.budget, rounds=args.rounds)
    for key, ts in times.items():
        wall = [w for w, _ in ts]
        out.setdefault("median_ms", {})[key] = statistics.median(wall)
        out.setdefault("min_ms", {})[key] = min(wall)
        out.setdefault("runs", {})[key] = len(wall)
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--baseline", help="another onnxc to time on the same float16 models")
    ap.add_argument("--models", nargs="+", default=DEFAULT_MODELS)
    ap.add_argument("--corpus", default="build/corpus")
    ap.add_argument("--work", default="build/float16")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=2.0, help="seconds of timed runs per engine")
    ap.add_argument("--markdown", help="also write the tables to this file")
    args = ap.parse_args(argv)
    bench.ensure_corpus(args.corpus, args.models)
    print("load average before:", " ".join(f"{x:.2f}" for x in os.getloadavg()), flush=True)
    results = [run_model(args, m) for m in args.models]
    print("load average after:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    keys = ["onnxc"] + (["baseline"] if args.baseline else [])
    lines = ["| model | output | " + " | ".join(f"{k} vs ORT fp16: max abs (/ scale)" for k in keys)
             + " | ORT fp16 vs ORT f32: max abs (/ scale) | onnxc vs ORT f32: max abs |",
             "|---|---|" + "---|" * (len(keys) + 2)]
    for r in results:
        for o in r["outputs"]:
            cells = [f"{o[k + '_vs_ort16']['max_abs']:.3g} ({o[k + '_vs_ort16']['max_abs_over_scale']:.2g})"
                     for k in keys]
            lines.append(f"| {r['name']} | {o['output']} | " + " | ".join(cells) +
                         f" | {o['ort16_vs_ort32']['max_abs']:.3g} ({o['ort16_vs_ort32']['max_abs_over_scale']:.2g})"
                         f" | {o['onnxc_vs_ort32']['max_abs']:.3g} |")
    eng = keys + ["ort"]
    lines += ["", "| model | " + " | ".join(f"{k} median / min ms" for k in eng) +
              " | ORT / onnxc (median) | runs each | .so MB " + " / ".join(keys) + " |",
              "|---|" + "---|" * (len(eng) + 3)]
    for r in results:
        cells = [f"{r['median_ms'][k]:.2f} / {r['min_ms'][k]:.2f}" for k in eng]
        lines.append(f"| {r['name']} | " + " | ".join(cells) +
                     f" | {r['median_ms']['ort'] / r['median_ms']['onnxc']:.2f}x | {r['runs']['onnxc']} | " +
                     " / ".join(f"{r['so_bytes'][k] / 1e6:.1f}" for k in keys) + " |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
