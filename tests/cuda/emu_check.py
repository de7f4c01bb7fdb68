#!/usr/bin/env python3
"""Check the CUDA target's numerics without a GPU: run NAME.cu on the CPU.

For each case: `onnxc check --target cuda --build-only --keep-temps` builds
everything as for a GPU run; then NAME.cu is compiled for the CPU with g++ and
tests/cuda/emu/cuda_emu.h (one POSIX thread per CUDA thread of a block, a
barrier for __syncthreads), the check harness is relinked against
tests/cuda/emu/cuda_emu.c (the driver API on host memory), run on the case's
data sets whose input shapes match the build (a model built with -D ranges, from
the case's `onnxc_args` file as tests/diff/run_diff.py writes it: every data set
whose dims are within the ranges, through NAME_run_dims), and compared with the expected
outputs (rtol 1e-3, atol 1e-7, as `onnxc check`, or a corpus case's own from
its case.json; strings exactly; outputs of
data-dependent extent by their reported dims, which the harness writes to
PATH.dims, and the elements within them). This exercises the
generated host code, launch configurations, parallel kernels and fallback
kernels, though not the GPU's memory model or NVRTC's code generation.

  python3 tests/cuda/emu_check.py --onnxc build/bin/onnxc --cases tests/cuda/ci_subset.txt
"""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
import run_conformance as rc  # noqa: E402

CUDA_HOME = os.environ.get("ONNXC_CUDA_HOME") or os.environ.get("CUDA_HOME") or "/usr/local/cuda"


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, **kw)


def build_emu_lib(work):
    lib = os.path.join(work, "libcuda.so")
    p = sh(["cc", "-shared", "-fPIC", "-isystem", f"{CUDA_HOME}/include", os.path.join(HERE, "emu", "cuda_emu.c"),
            "-o", lib, "-ldl"])
    if p.returncode:
        sys.exit("cannot build the emulated libcuda:\n" + p.stderr)
    return work


def load_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def raw(arr):
    """The ONNX raw layout of a tensor: the ABI's (sub-byte types packed).
    Strings: the harness's protocol, each string NUL-terminated, one after another."""
    if arr.dtype == object or arr.dtype.kind in "SU":
        return b"".join((x if isinstance(x, bytes) else str(x).encode()) + b"\0" for x in arr.ravel())
    return numpy_helper.from_array(arr).raw_data


def tolerance(case_dir):
    """(rtol, atol): `onnxc check`'s, or a corpus case's own (its case.json,
    models/corpus/make_corpus.py, as bench/run.py reads it)."""
    path = os.path.join(case_dir, "case.json")
    if os.path.exists(path):
        with open(path) as f:
            c = json.load(f)
        return float(c.get("rtol", 1e-3)), float(c.get("atol", 1e-7))
    return 1e-3, 1e-7


def compare_raw(got_raw, exp, tol=(1e-3, 1e-7)):
    """got_raw: the bytes the harness wrote; exp: the expected array."""
    exp_raw = raw(exp)
    if exp.dtype == object or exp.dtype.kind in "SU":
        return None if got_raw == exp_raw else f"strings differ: got {got_raw[:200]!r}, expected {exp_raw[:200]!r}"
    if len(got_raw) != len(exp_raw):
        return f"{len(got_raw)} bytes, expected {len(exp_raw)}"
    name = str(exp.dtype)
    if exp.dtype.kind in "fiub" or "float8" in name or "bfloat16" in name:
        got = np.frombuffer(got_raw, dtype=exp.dtype).reshape(exp.shape)
        if exp.dtype.kind not in "fiub":  # ml_dtypes floats: compare their values
            got, exp = got.astype(np.float32), exp.astype(np.float32)
        return compare(got, exp, tol)
    return None if got_raw == exp_raw else "packed bytes differ"


def compare(got, exp, tol=(1e-3, 1e-7)):
    rtol, atol = tol
    if got.shape != exp.shape or got.dtype != exp.dtype:
        return f"shape/type {got.shape} {got.dtype} vs {exp.shape} {exp.dtype}"
    if exp.dtype.kind in "fc":
        g, e = got.astype(np.float64), exp.astype(np.float64)
        both_nan = np.isnan(g) & np.isnan(e)
        inf = np.isinf(e) | np.isinf(g)
        with np.errstate(invalid="ignore"):
            bad = ~both_nan & ((inf & (g != e)) | (~inf & (np.abs(g - e) > atol + rtol * np.abs(e))))
        bad |= np.isnan(g) ^ np.isnan(e)
    else:
        bad = got != exp
    if bad.any():
        i = int(np.argmax(bad.ravel()))
        return f"{int(bad.sum())} of {bad.size} differ; first at {i}: got {got.ravel()[i]}, expected {exp.ravel()[i]}"
    return None


def case_args(case_dir):
    """Extra `onnxc check` arguments a case asks for (onnxc_args: -D ranges)."""
    p = os.path.join(case_dir, "onnxc_args")
    return open(p).read().split() if os.path.exists(p) else []


def header_ranges(hdr):
    """-D ranges of a build, from NAME.h: {symbol: (index, lo, hi)}, {} without."""
    out = {}
    for macro, idx, sym in re.findall(r"^#define (\w+_DIM_\w+) (\d+) /\* (.*) \*/$", hdr, re.M):
        lo = int(re.search(rf"^#define {macro}_MIN (-?\d+)$", hdr, re.M).group(1))
        hi = int(re.search(rf"^#define {macro}_MAX (-?\d+)$", hdr, re.M).group(1))
        out[sym] = (int(idx), lo, hi)
    return out


def data_dims(ranges, shapes, arrays):
    """The dims a data set gives (each input dim that is a bare symbol sets it),
    checked against the build's other extents; (dims, None) or (None, why)."""
    dims = [None] * len(ranges)
    for shape, arr in zip(shapes, arrays):
        toks = shape.split(",") if shape else []
        if len(toks) != arr.ndim:
            return None, f"rank of {arr.shape} vs [{shape}]"
        for t, v in zip(toks, arr.shape):
            if t in ranges:
                k = ranges[t][0]
                if dims[k] is not None and dims[k] != v:
                    return None, f"dim {t} is {dims[k]} and {v}"
                dims[k] = v
            elif re.fullmatch(r"\d+", t) and int(t) != v:
                return None, f"shape {arr.shape} vs [{shape}]"
    if any(d is None for d in dims):
        return None, "a range symbol no input dim gives"
    return dims, None


def run_case(key, args, emu_dir, light_dir):
    try:
        return run_case1(key, args, emu_dir, light_dir)
    except Exception as e:  # e.g. sequence or optional test data, which this script does not read
        return key, "harness", f"{type(e).__name__}: {e}"


def run_case1(key, args, emu_dir, light_dir):
    category, name = key.split("/", 1)
    if category == "light":
        case_dir = rc.prepare_light(rc.Case(category, name, os.path.join(args.data, "light", name + ".onnx")),
                                    light_dir)
    else:
        case_dir = os.path.join(args.data, category, name)
    p = sh([args.onnxc, "check", "--target", "cuda", "--build-only", "--keep-temps"] + case_args(case_dir) + [case_dir],
           timeout=600)
    m = re.search(r"onnxc check: kept (\S+)", p.stderr)
    if p.returncode or not m:
        return key, "build", p.stderr[-2000:]
    d = m.group(1)
    try:
        return run_built(key, d, case_dir, emu_dir)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def run_built(key, d, case_dir, emu_dir, tol=None, expect_sets=None):
    """tol: (rtol, atol), by default the case's (tolerance()); expect_sets: the
    number of data sets that must run (else any that match the build)."""
    tol = tol or tolerance(case_dir)
    with open(os.path.join(d, "model.cu")) as f:
        cu = f.read()
    table = ["#include <string.h>", 'extern "C" int emu_nparams(const char *n) {']
    for kname, params in re.findall(r'extern "C" __global__ void (\w+)\(([^)]*)\)', cu):
        table.append(f'  if (!strcmp(n, "{kname}")) return {params.count(",") + 1};')
    table.append("  return -1;\n}\n")
    with open(os.path.join(d, "emu_model.cpp"), "w") as f:
        f.write(cu + "\n" + "\n".join(table))
    kso = os.path.join(d, "kernels.so")
    p = sh(["g++", "-O1", "-fPIC", "-shared", "-fpermissive", "-w", "-I", d, "-include",
            os.path.join(HERE, "emu", "cuda_emu.h"), "-x", "c++", os.path.join(d, "emu_model.cpp"),
            "-o", kso, "-lpthread"])
    if p.returncode:
        return key, "emu-compile", p.stderr[-3000:]
    runner = os.path.join(d, "runner_emu")
    objs = [os.path.join(d, f) for f in ("model.o", "model_weights.o", "model_cuda_image.o")]
    p = sh(["cc", "-std=c11", "-I", d, "-isystem", f"{CUDA_HOME}/include", os.path.join(d, "harness.c")] + objs +
           ["-L", emu_dir, "-lcuda", f"-Wl,-rpath,{emu_dir}", "-lm", "-o", runner])
    if p.returncode:
        return key, "emu-link", p.stderr[-2000:]
    # The compiled graph's inputs, from the header comment (bound inputs are gone).
    with open(os.path.join(d, "model.h")) as f:
        hdr = f.read()
    ins = re.findall(r"^ \*   input  \d+: (.*) \S+\[.*\]$|^ \*   input  \d+: (.*) \S+$", hdr, re.M)
    in_names = [a or b for a, b in ins]
    in_shapes = re.findall(r"^ \*   input  \d+: .* \S+?(?:\[(.*)\])?$", hdr, re.M)
    ranges = header_ranges(hdr)  # -D ranges: every data set within them runs
    n_out = len(re.findall(r"^ \*   output \d+:", hdr, re.M))
    model = onnx.load(os.path.join(case_dir, "model.onnx"), load_external_data=False)
    graph_in = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    ran = 0
    out_of_range = 0
    for ds in sorted(glob.glob(os.path.join(case_dir, "test_data_set_*"))):
        inputs = [load_pb(os.path.join(ds, f"input_{i}.pb"))[1] for i in range(len(graph_in))]
        outs = [load_pb(os.path.join(ds, f"output_{i}.pb"))[1] for i in range(n_out)]
        argv = [runner]
        for nm in in_names:
            if nm not in graph_in:
                return key, "harness", f"input {nm} not in the model"
            path = os.path.join(d, f"in_{len(argv)}.bin")
            with open(path, "wb") as f:
                f.write(raw(inputs[graph_in.index(nm)]))
            argv.append(path)
        out_paths = [os.path.join(d, f"out_{i}.bin") for i in range(n_out)]
        extra = []
        if ranges:  # the dims protocol (check.c's emit_harness_dims): dims, input bytes, output bytes
            arrays = [inputs[graph_in.index(nm)] for nm in in_names]
            dims, why = data_dims(ranges, in_shapes, arrays)
            if why:
                return key, "harness", f"{os.path.basename(ds)}: {why}"
            if any(not lo <= dims[k] <= hi for k, lo, hi in ranges.values()):
                out_of_range += 1
                continue
            extra = ([str(v) for v in dims] + [str(len(raw(a))) for a in arrays] +
                     [str(len(raw(e))) for e in outs])
        p = sh(argv + out_paths + extra, env=dict(os.environ, ONNXC_CUDA_EMU_KERNELS=os.path.join(d, "kernels.so")),
               timeout=600)
        if "cannot read" in p.stderr and not ranges:
            continue  # a data set of other shapes than the build's
        if p.returncode:
            return key, "run", p.stderr[-2000:]
        for i, exp in enumerate(outs):
            if os.path.exists(out_paths[i] + ".dims"):  # a data-dependent extent (docs/abi.md)
                dims = tuple(np.fromfile(out_paths[i] + ".dims", dtype=np.int64).tolist())
                os.unlink(out_paths[i] + ".dims")
                if dims != exp.shape:
                    return key, "mismatch", f"{os.path.basename(ds)} output {i}: dims {dims}, expected {exp.shape}"
            with open(out_paths[i], "rb") as f:
                why = compare_raw(f.read(), exp, tol)
            if why:
                return key, "mismatch", f"{os.path.basename(ds)} output {i}: {why}"
        ran += 1
    if ranges:
        print(f"{key}: {ran} data set(s) match with dims in range, {out_of_range} out of range", flush=True)
    if expect_sets is not None and ran != expect_sets:
        return key, "missing", f"{ran} data set(s) ran, expected {expect_sets}"
    return key, "ok" if ran else "no-data", ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--cases", default=os.path.join(HERE, "ci_subset.txt"))
    ap.add_argument("--data", default=rc.default_data_dir())
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--filter")
    args = ap.parse_args()
    with open(args.cases) as f:
        keys = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    if args.filter:
        keys = [k for k in keys if re.search(args.filter, k)]
    results = {}
    with tempfile.TemporaryDirectory(prefix="onnxc-cuda-emu-") as work:
        emu_dir = build_emu_lib(work)
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
            for key, status, msg in ex.map(lambda k: run_case(k, args, emu_dir, work), keys):
                results[key] = (status, msg)
                if status != "ok":
                    print(f"{status.upper()} {key}: {msg.strip().splitlines()[-1] if msg.strip() else ''}",
                          flush=True)
    ok = sum(1 for s, _ in results.values() if s == "ok")
    print(f"\n{ok}/{len(keys)} cases match on the CPU emulation")
    return 0 if ok == len(keys) else 1


if __name__ == "__main__":
    sys.exit(main())
