#!/usr/bin/env python3
"""Compare the outputs printed by main.c (firmware under QEMU, or the host build).

usage: compare.py GOT.log REF.log [--rtol R] [--atol A]
       compare.py GOT.log --pb SET_DIR... [--rtol R] [--atol A]

GOT.log and REF.log are main.c's text output (`out SET K DTYPE NUMEL`, then
`= hex hex ...` lines with each element's bit pattern). With --pb the
reference is output_<k>.pb of each ONNX test-data folder instead (one folder
per input set; needs the onnx Python package). Floats match when
|got - ref| <= atol + rtol * |ref| (rtol 1e-3, atol 1e-7 by default, as
`onnxc check`), NaN matches NaN, everything else must be equal. Exit status 0
when every output matches, 1 otherwise (also when GOT.log lacks the final
`done`, i.e. the program stopped early).
"""

import argparse
import math
import os
import struct
import sys


def decode(dtype, word):
    """One element from its hex bit pattern."""
    raw = bytes.fromhex(word)
    if dtype == "f32":
        return struct.unpack(">f", raw)[0]
    if dtype == "f64":
        return struct.unpack(">d", raw)[0]
    if dtype == "f16":
        return struct.unpack(">e", raw)[0]
    if dtype == "bf16":
        return struct.unpack(">f", raw + b"\0\0")[0]
    v = int(word, 16)
    if dtype.startswith("i") and v >> (4 * len(word) - 1):
        v -= 1 << (4 * len(word))
    return v


def read_log(path):
    """{(set, k): (dtype, [values])} and whether the log ends with `done`."""
    outs, cur, done = {}, None, False
    with open(path, errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) == 5 and w[0] == "out":
                cur = (int(w[1]), int(w[2]))
                outs[cur] = (w[3], int(w[4]), [])
            elif w and w[0] == "=" and cur is not None:
                dtype = outs[cur][0]
                outs[cur][2].extend(decode(dtype, x) for x in w[1:])
            elif w == ["done"]:
                done = True
    for key, (dtype, numel, vals) in outs.items():
        if len(vals) != numel:
            sys.exit(f"{path}: set {key[0]} output {key[1]}: {len(vals)} values, {numel} announced")
    return {k: (v[0], v[2]) for k, v in outs.items()}, done


def read_pb(dirs, got):
    import numpy as np
    from onnx import TensorProto, numpy_helper
    ref = {}
    for s, d in enumerate(dirs):
        k = 0
        while os.path.exists(os.path.join(d, f"output_{k}.pb")):
            t = TensorProto()
            with open(os.path.join(d, f"output_{k}.pb"), "rb") as f:
                t.ParseFromString(f.read())
            a = np.asarray(numpy_helper.to_array(t)).reshape(-1)
            dtype = got.get((s, k), ("?",))[0]
            if dtype in ("f16", "bf16", "f32", "f64"):
                vals = [float(x) for x in a.astype(np.float64)]
            else:
                vals = [int(x) for x in a]
            ref[(s, k)] = (dtype, vals)
            k += 1
    return ref


def close(g, r, rtol, atol):
    if isinstance(r, float) or isinstance(g, float):
        if math.isnan(r) or math.isnan(g):
            return math.isnan(r) and math.isnan(g)
        if math.isinf(r) or math.isinf(g):
            return g == r
        return abs(g - r) <= atol + rtol * abs(r)
    return g == r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("got")
    ap.add_argument("ref", nargs="?")
    ap.add_argument("--pb", nargs="+")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-7)
    a = ap.parse_args()
    if bool(a.ref) == bool(a.pb):
        sys.exit("compare.py: give REF.log or --pb SET_DIR...")
    got, done = read_log(a.got)
    if a.ref:
        ref, _ = read_log(a.ref)
        what = a.ref
    else:
        ref = read_pb(a.pb, got)
        what = "the expected outputs"
    bad = 0
    if not done:
        print(f"FAIL {a.got}: no 'done' line (the program stopped early)")
        bad += 1
    for key in sorted(set(got) | set(ref)):
        if key not in got or key not in ref:
            print(f"FAIL set {key[0]} output {key[1]}: only in {a.got if key in got else what}")
            bad += 1
            continue
        (dt, g), (_, r) = got[key], ref[key]
        if len(g) != len(r):
            print(f"FAIL set {key[0]} output {key[1]}: {len(g)} elements, {len(r)} in {what}")
            bad += 1
            continue
        worst, worst_i, n_bad = 0.0, -1, 0
        for i, (x, y) in enumerate(zip(g, r)):
            if not close(x, y, a.rtol, a.atol):
                n_bad += 1
                excess = abs(x - y) if not (isinstance(x, float) and math.isnan(x)) else math.inf
                if worst_i < 0 or excess > worst:
                    worst, worst_i = excess, i
        if n_bad:
            bad += 1
            print(f"FAIL set {key[0]} output {key[1]} ({dt}, {len(g)} elements): {n_bad} differ; "
                  f"worst at [{worst_i}]: got {g[worst_i]!r}, expected {r[worst_i]!r}")
        else:
            diff = max((abs(x - y) for x, y in zip(g, r)
                        if not (isinstance(x, float) and (math.isnan(x) or math.isinf(x)))), default=0)
            print(f"ok   set {key[0]} output {key[1]} ({dt}, {len(g)} elements), max |diff| {diff:.3g}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
