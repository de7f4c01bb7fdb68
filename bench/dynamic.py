#!/usr/bin/env python3
"""One library for a range of shapes against libraries built per shape, and ONNX Runtime.

Usage:
  python3 bench/dynamic.py --onnxc build/bin/onnxc [--model bert|ocr] [--values 16,128,512]
                           [--threads 1]

bert: bert_tiny_dynamic (models/corpus, a dynamic sequence axis) compiled once
with -D seq=1..512 and once per seq with -D seq=S (the fixed-shape library,
fusion and all). ocr: ocr_rec_dynamic (input 1x3x48xW) once with -D W=16..1024
and once per width. Each value is then timed in alternating blocks
(bench/run.py's measure): the dynamic library through NAME_run_dims, the fixed
one through NAME_run, and ONNX Runtime on the same inputs. Prints median
latencies and the ratios dynamic / fixed and dynamic / ORT; issue 14's goal is
dynamic / fixed <= 1.10 at every value. Outputs are checked against ONNX
Runtime first.
"""
import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import run as bench  # noqa: E402


MODELS = {  # case, dim, range, default values
    "bert": ("bert_tiny_dynamic", "seq", "1..512", "16,128,512"),
    "ocr": ("ocr_rec_dynamic", "W", "16..1024", "100,320,800"),
}


def feeds(model, seq):
    rng = np.random.default_rng(seq)
    if model == "ocr":
        return [("x", rng.standard_normal((1, 3, 48, seq), dtype=np.float32))]
    ids = rng.integers(1000, 30000, (1, seq)).astype(np.int64)
    mask = np.ones((1, seq), np.int64)
    types = np.zeros((1, seq), np.int64)
    return [("input_ids", ids), ("attention_mask", mask), ("token_type_ids", types)]


class Lib:
    """NAME_run_dims (dims given) or NAME_run on a 64-aligned arena."""

    def __init__(self, path, name, arena, ins, outs, dims=None):
        self.lib = ctypes.CDLL(path)
        raw = np.zeros(arena + 64, np.uint8)
        self._raw = raw
        self.arena = raw.ctypes.data + (-raw.ctypes.data) % 64
        self.outs = [np.zeros_like(o) for o in outs]
        ptrs = [a.ctypes.data for _, a in ins] + [o.ctypes.data for o in self.outs]
        if dims is not None:
            self.dims = (ctypes.c_int64 * len(dims))(*dims)
            self.fn = getattr(self.lib, f"{name}_run_dims")
            self.args = [ctypes.c_void_p(self.arena), self.dims] + [ctypes.c_void_p(p) for p in ptrs]
        else:
            self.fn = getattr(self.lib, f"{name}_run")
            self.args = [ctypes.c_void_p(self.arena)] + [ctypes.c_void_p(p) for p in ptrs]

    def __call__(self):
        if self.fn(*self.args) != 0:
            raise RuntimeError("run failed")


def build(onnxc, model, out, name, extra, threads):
    cmd = [onnxc, model, "-o", out, "--name", name, "--memory-report", out + ".json"] + extra
    if threads > 1:
        cmd += ["--threads", str(threads)]
    subprocess.run(cmd, check=True)
    import json
    return json.load(open(out + ".json"))["arena_bytes"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--corpus", default=os.path.join(REPO, "build", "corpus"))
    ap.add_argument("--model", choices=sorted(MODELS), default="bert")
    ap.add_argument("--values", "--seqs", dest="values", help="values of the dim (default per model)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=200)
    a = ap.parse_args()
    name, dim, rng, dflt = MODELS[a.model]
    case = os.path.join(a.corpus, name)
    if not os.path.exists(case):
        subprocess.run([sys.executable, os.path.join(REPO, "models", "corpus", "make_corpus.py"), a.corpus,
                        "--only", name], check=True)
    model = os.path.join(case, "model.onnx")
    work = tempfile.mkdtemp(prefix="onnxc-bench-dyn-")
    dyn_so = os.path.join(work, "libdyn.so")
    dyn_arena = build(a.onnxc, model, dyn_so, "dyn", ["-D", f"{dim}={rng}"], a.threads)
    import onnxruntime as ort
    sess = ort.InferenceSession(model)
    print(f"{name}, {a.threads} thread(s); medians in ms")
    print(f"| {dim} | dynamic (-D {dim}={rng}) | fixed (-D {dim}=V) | ONNX Runtime | dynamic / fixed | "
          "dynamic / ORT |")
    print("|---|---|---|---|---|---|")
    for seq in [int(s) for s in (a.values or dflt).split(",")]:
        ins = feeds(a.model, seq)
        refs = sess.run(None, dict(ins))
        fix_so = os.path.join(work, f"libfix{seq}.so")
        fix_arena = build(a.onnxc, model, fix_so, "fix", ["-D", f"{dim}={seq}"], a.threads)
        dyn = Lib(dyn_so, "dyn", dyn_arena, ins, refs, dims=[seq])
        fix = Lib(fix_so, "fix", fix_arena, ins, refs)
        for lib in (dyn, fix):
            lib()
            err = max(float(np.abs(o - r).max()) for o, r in zip(lib.outs, refs))
            if err > 1e-3:
                raise SystemExit(f"{dim} {seq}: outputs differ from ONNX Runtime by {err}")
        outs = [(o.name, r) for o, r in zip(sess.get_outputs(), refs)]
        engines = {"dyn": dyn, "fix": fix, "ort": bench.OrtModel(model, a.threads, ins, outs)}
        t = bench.measure(engines, 5, a.repeat, 1.0)
        med = {k: statistics.median(w for w, _ in v) for k, v in t.items()}
        print(f"| {seq} | {med['dyn']:.3f} | {med['fix']:.3f} | {med['ort']:.3f} | "
              f"{med['dyn'] / med['fix']:.2f} | {med['dyn'] / med['ort']:.2f} |")
    print("load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
