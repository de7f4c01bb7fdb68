"""onnxc compare: the compiled model against ONNX Runtime, node output by node output.

Run by `onnxc compare` (tools/compare.c writes this text, which the binary
embeds, to a temporary folder and runs it with ONNXC_PYTHON or python3; see
docs/compare.md). Needs numpy, onnx and onnxruntime.

1. Inputs: the files given (--input NAME=FILE.npy|FILE.pb), else random
   values of each input's type and shape with a fixed seed (--seed); a
   symbolic dim takes --shape NAME=AxB or 1.
2. Every tensor a node makes (in graph order) becomes a graph output of a
   copy of the model, typed by ONNX shape inference; ONNX Runtime runs that
   copy with its graph optimizations off: the reference of each value.
3. `onnxc check --save-outputs` compiles the copy with the user's options
   (-O, --threads, ...), runs it on the same inputs and saves every value.
4. The values are compared in graph order; the first one beyond tolerance
   is reported with its node, and whether that node's inputs agreed (then
   the node itself computed it wrong) or not.
5. The unmodified model is compiled and compared too: making intermediates
   outputs keeps them from being fused, so a divergence that only the
   unmodified model shows lives in what fusion merged.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper, shape_inference
    import onnxruntime as ort
except ImportError as e:  # pragma: no cover - reported to the user
    sys.stderr.write(f"onnxc compare: needs numpy, onnx and onnxruntime in Python ({e}); "
                     "set ONNXC_PYTHON to an interpreter that has them\n")
    sys.exit(2)


# Options of the compile, passed on to `onnxc check`: those taking a value, and flags.
PASS_VALUE = ("--threads", "-D", "--cpu", "--string-bytes")
PASS_FLAG = ("-O0", "-O1", "-O2", "-O3", "--sanitize", "--guard")


def parse(argv):
    passed, rest, i = [], [], 0
    while i < len(argv):
        a = argv[i]
        if a in PASS_FLAG:
            passed.append(a)
        elif a in PASS_VALUE and i + 1 < len(argv):
            passed += [a, argv[i + 1]]
            i += 1
        elif any(a.startswith(p + "=") for p in PASS_VALUE) or (a.startswith("-D") and len(a) > 2):
            passed.append(a)
        else:
            rest.append(a)
        i += 1
    args = parser().parse_args(rest)
    args.onnxc_opts = passed
    return args


def parser():
    ap = argparse.ArgumentParser(prog="onnxc compare",
                                 epilog="compile options passed on: -O0..-O3, --threads N, -D NAME=V, "
                                        "--cpu ARCH, --sanitize, --guard")
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("model")
    ap.add_argument("--input", action="append", default=[], metavar="NAME=FILE")
    ap.add_argument("--shape", action="append", default=[], metavar="NAME=AxB")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--atol-rms", type=float, default=1e-3,
                    help="atol grows to this times the value's RMS (float sums in another order)")
    ap.add_argument("--json", default=None, help="write every value's statistics as JSON")
    ap.add_argument("--keep", default=None, help="keep the work folder here")
    ap.add_argument("--top", type=int, default=5)
    return ap


def load_input(path, name):
    if path.endswith(".npy"):
        return np.load(path)
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def random_input(vi, shapes, rng):
    tt = vi.type.tensor_type
    if name_shape := shapes.get(vi.name):
        dims = name_shape
    else:
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1 for d in tt.shape.dim]
    dt = helper.tensor_dtype_to_np_dtype(tt.elem_type)
    if dt == np.bool_:
        return rng.integers(0, 2, dims).astype(np.bool_)
    if np.issubdtype(dt, np.integer):
        return rng.integers(0, 4, dims).astype(dt)
    return rng.standard_normal(dims).astype(dt)


def exposed_model(model):
    """A copy whose graph outputs are the original outputs, then every other
    tensor-typed value a node makes, in graph order."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    inferred = shape_inference.infer_shapes(m)
    types = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
    have = {o.name for o in m.graph.output}
    order = []  # (value, node index)
    for k, node in enumerate(m.graph.node):
        for out in node.output:
            if not out:
                continue
            order.append((out, k))
            vi = types.get(out)
            if out in have or vi is None or not vi.type.HasField("tensor_type") or \
                    vi.type.tensor_type.elem_type == 0:
                continue
            m.graph.output.append(vi)
            have.add(out)
    return m, order


def stats(got, want, rtol, atol, atol_rms):
    if got.shape != want.shape:
        return {"shape": list(got.shape), "want_shape": list(want.shape), "bad": int(want.size),
                "max_abs": float("inf"), "max_rel": float("inf")}
    if got.dtype.kind not in "fc":
        bad = int(np.count_nonzero(got != want))
        return {"bad": bad, "max_abs": float(np.max(np.abs(got.astype(np.float64) - want))) if bad else 0.0,
                "max_rel": 0.0, "size": int(want.size)}
    g, w = got.astype(np.float64), want.astype(np.float64)
    fin = w[np.isfinite(w)]
    atol = max(atol, atol_rms * float(np.sqrt(np.mean(fin * fin))) if fin.size else 0.0)
    both_nan = np.isnan(g) & np.isnan(w)
    same_inf = np.isinf(g) & np.isinf(w) & (g == w)
    diff = np.abs(g - w)
    ok = (diff <= atol + rtol * np.abs(w)) | both_nan | same_inf
    finite = np.isfinite(g) & np.isfinite(w)
    rel = diff[finite & (np.abs(w) > atol)] / np.abs(w[finite & (np.abs(w) > atol)])
    worst = int(np.argmax(np.where(ok, -1.0, np.nan_to_num(diff, nan=np.inf, posinf=np.inf)))) if not ok.all() else -1
    return {"bad": int(np.count_nonzero(~ok)), "size": int(w.size),
            "max_abs": float(np.max(diff[finite])) if finite.any() else 0.0,
            "max_rel": float(np.max(rel)) if rel.size else 0.0,
            "nan_got": int(np.count_nonzero(np.isnan(g) & ~np.isnan(w))),
            "worst_index": [int(i) for i in np.unravel_index(worst, w.shape)] if worst >= 0 else None,
            "worst_got": float(g.flat[worst]) if worst >= 0 else None,
            "worst_want": float(w.flat[worst]) if worst >= 0 else None}


def write_case(case, model, feeds, outputs, names):
    os.makedirs(os.path.join(case, "test_data_set_0"))
    onnx.save(model, os.path.join(case, "model.onnx"))
    for i, (name, arr) in enumerate(feeds.items()):
        with open(os.path.join(case, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(arr, name).SerializeToString())
    for i, (name, arr) in enumerate(zip(names, outputs)):
        with open(os.path.join(case, "test_data_set_0", f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(arr, name).SerializeToString())


def run_onnxc(args, case, saved):
    cmd = [args.onnxc, "check", "--save-outputs", saved, "--rtol", str(args.rtol), "--atol", str(args.atol)]
    cmd += args.onnxc_opts + [case]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode == 2 or not os.path.isdir(os.path.join(saved, "test_data_set_0")):
        sys.stderr.write(f"onnxc compare: the compile failed:\n{p.stderr}")
        sys.exit(2)
    return p


def load_saved(saved, n):
    out = []
    for i in range(n):
        p = os.path.join(saved, "test_data_set_0", f"output_{i}.pb")
        out.append(load_input(p, "") if os.path.exists(p) else None)
    return out


def fmt(x):
    return f"{x:.3g}" if isinstance(x, float) else str(x)


def main(argv):
    args = parse(argv)
    model = onnx.load(args.model)
    shapes = {}
    for s in args.shape:
        name, _, dims = s.partition("=")
        shapes[name] = [int(d) for d in dims.split("x")]
    given = {}
    for s in args.input:
        name, _, path = s.partition("=")
        given[name] = load_input(path, name)
    inits = {i.name for i in model.graph.initializer}
    rng = np.random.default_rng(args.seed)
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        feeds[vi.name] = given.pop(vi.name) if vi.name in given else random_input(vi, shapes, rng)
    if given:
        sys.stderr.write(f"onnxc compare: no graph input named {', '.join(sorted(given))}\n")
        return 2

    exposed, order = exposed_model(model)
    names = [o.name for o in exposed.graph.output]
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref = ort.InferenceSession(exposed.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    want = ref.run(names, feeds)

    work = args.keep or tempfile.mkdtemp(prefix="onnxc-compare")
    os.makedirs(work, exist_ok=True)
    try:
        case = os.path.join(work, "exposed")
        write_case(case, exposed, feeds, want, names)
        run_onnxc(args, case, os.path.join(work, "exposed_out"))
        got = load_saved(os.path.join(work, "exposed_out"), len(names))

        n_final = len(model.graph.output)
        final = os.path.join(work, "final")
        write_case(final, model, feeds, want[:n_final], names[:n_final])
        run_onnxc(args, final, os.path.join(work, "final_out"))
        got_final = load_saved(os.path.join(work, "final_out"), n_final)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    index = {n: i for i, n in enumerate(names)}
    producer = {}
    for k, node in enumerate(model.graph.node):
        for o in node.output:
            producer[o] = k
    rows = []
    for value, k in order:
        if value not in index or got[index[value]] is None:
            continue
        st = stats(got[index[value]], want[index[value]], args.rtol, args.atol, args.atol_rms)
        node = model.graph.node[k]
        st.update({"value": value, "node": node.name or f"#{k}", "op": node.op_type, "step": k,
                   "shape": list(want[index[value]].shape), "dtype": str(want[index[value]].dtype)})
        rows.append(st)
    bad_values = {r["value"] for r in rows if r["bad"]}
    print(f"onnxc compare: {args.model}: {len(rows)} values compared against ONNX Runtime "
          f"(rtol {args.rtol}, atol {args.atol} or {args.atol_rms} x the value's RMS; compile options: {' '.join(args.onnxc_opts) or 'defaults'})")
    first = next((r for r in rows if r["bad"]), None)
    if first:
        node = model.graph.node[first["step"]]
        bad_inputs = [i for i in node.input if i in bad_values]
        print(f"first divergence: node '{first['node']}' ({first['op']}), output '{first['value']}' "
              f"{first['dtype']}{first['shape']}:")
        print(f"  {first['bad']} of {first['size']} elements beyond tolerance; max abs err {fmt(first['max_abs'])}, "
              f"max rel err {fmt(first['max_rel'])}" + (f", {first['nan_got']} NaN where ORT has none"
                                                      if first.get("nan_got") else ""))
        if first.get("worst_index") is not None:
            print(f"  worst at {first['worst_index']}: onnxc {fmt(first['worst_got'])}, "
                  f"ONNX Runtime {fmt(first['worst_want'])}")
        if bad_inputs:
            print(f"  its inputs {', '.join(bad_inputs)} already differ")
        else:
            print("  its inputs agree with ONNX Runtime: this node computed it differently")
        worst = sorted((r for r in rows if r["bad"]), key=lambda r: -r["max_abs"])[:args.top]
        print(f"{sum(1 for r in rows if r['bad'])} of {len(rows)} values diverge; the largest errors:")
        for r in worst:
            print(f"  {r['node']} ({r['op']}) '{r['value']}': {r['bad']}/{r['size']} bad, "
                  f"max abs {fmt(r['max_abs'])}, max rel {fmt(r['max_rel'])}")
    else:
        print("every value matches")
    final_bad = []
    for i in range(n_final):
        if got_final[i] is None:
            final_bad.append(names[i])
        elif stats(got_final[i], want[i], args.rtol, args.atol, args.atol_rms)["bad"]:
            final_bad.append(names[i])
    if final_bad and not first:
        print(f"the unmodified model's outputs {', '.join(final_bad)} diverge, but no value does when every "
              "value is an output: the difference is in code that fusion or planning merged; "
              "try -O0 and -O1")
    elif final_bad:
        print(f"the unmodified model's outputs {', '.join(final_bad)} diverge too")
    else:
        print("the unmodified model's outputs match")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"values": rows, "final_diverging": final_bad}, f, indent=1, default=str)
    return 1 if first or final_bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
