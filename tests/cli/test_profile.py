"""onnxc profile and --profile (docs/profile.md) on a small CNN made here.

Checks: the table and the JSON list every kernel of the fusion report exactly
once; shares add up to 100%; the trace parses and holds one complete event per
kernel per run on the main thread (and, with --threads 2, the workers' parts of
the parallel kernels on their own tracks); the sum-vs-end-to-end line is
there; -S without --profile carries nothing of it, and with it the sources
build at -std=c99 -pedantic -Werror without stdio.
Usage: test_profile.py ONNXC [CC]
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ONNXC = sys.argv[1]
CC = sys.argv[2] if len(sys.argv) > 2 else "cc"
RUNS = 3
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def make_model(path):
    """Conv+Relu (big enough to run on every thread), MaxPool, Conv, Gemm, Softmax."""
    rng = np.random.default_rng(0)

    def init(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["y"], name="softmax"),
    ]
    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 96, 96])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [init("w1", 32, 8, 3, 3), init("b1", 32), init("w2", 32, 32, 3, 3), init("b2", 32),
         init("w3", 10, 32), init("b3", 10)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)


def run(args):
    p = subprocess.run([ONNXC] + args, capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout + p.stderr)
    return p


def check_profile(t, model, kernels, threads):
    tag = "threads %d" % threads
    # with a pool, runs enough that a worker joins some kernel even on a loaded
    # machine (the caller takes every item of a task a late worker misses;
    # 3 runs saw none once under a concurrent build)
    runs = RUNS if threads == 1 else 8 * RUNS
    trace, js = os.path.join(t, "trace%d.json" % threads), os.path.join(t, "prof%d.json" % threads)
    p = run(["profile", model, "--runs", str(runs), "--warmup", "1", "--top", "0", "--threads", str(threads),
             "--trace", trace, "--json", js])
    check(p.returncode == 0, "%s: onnxc profile runs" % tag)
    if p.returncode != 0:
        return
    out = p.stdout
    print(out)
    rows = [line for line in out.splitlines() if re.match(r"\s*\d+\s+\d+\.\d+\s+\d+\.\d%", line)]
    check(len(rows) == len(kernels), "%s: the table has one row per kernel (%d rows, %d kernels)"
          % (tag, len(rows), len(kernels)))
    m = re.search(r"sum of kernels ([\d.]+) ms; .* end-to-end without --profile ([\d.]+) ms; "
                  r"sum / end-to-end ([\d.]+)", out)
    check(m is not None and float(m.group(3)) > 0, "%s: the sum-vs-end-to-end line" % tag)
    check("peak arena use" in out, "%s: peak arena line" % tag)
    # A copy the compiler optimized away once read as millions of GB/s.
    bw = re.search(r"memory copy ([\d.]+) GB/s", out)
    check(bw is not None and 0.1 < float(bw.group(1)) < 10000, "%s: a plausible memory bandwidth (%s)"
          % (tag, bw.group(1) if bw else "none"))
    prof = json.load(open(js))
    got = sorted((k["name"], k["op"]) for k in prof["kernels"])
    check(got == sorted(kernels), "%s: the JSON lists each fusion-report kernel exactly once" % tag)
    share = sum(k["share"] for k in prof["kernels"])
    check(abs(share - 100) < 0.5, "%s: shares add up to 100%% (%.2f)" % (tag, share))
    nodes = {(k["name"], k["op"]): k["nodes"] for k in prof["kernels"]}
    check(all(nodes[(k["name"], k["op"])] == k["nodes"] for k in FUSION["kernels"]),
          "%s: ONNX nodes per kernel as in the fusion report" % tag)
    check(all(k["bound"] in ("memory", "compute") and k["ms"] >= 0 for k in prof["kernels"]),
          "%s: every kernel has a time and a bound" % tag)
    ev = json.load(open(trace))["traceEvents"]
    main = [e for e in ev if e.get("cat") == "kernel" and e["ph"] == "X" and e["tid"] == 0]
    per = {}
    for e in main:
        key = (e["args"]["run"], e["args"]["kernel"])
        per[key] = per.get(key, 0) + 1
    want = {(r, k) for r in range(runs) for k in range(len(kernels))}
    check(set(per) == want and all(v == 1 for v in per.values()),
          "%s: one main-thread event per kernel per run (%d events)" % (tag, len(main)))
    check(all(e["dur"] >= 0 and "op" in e["args"] and "shape" in e["args"] for e in main),
          "%s: events carry duration, op, shape" % tag)
    workers = [e for e in ev if e.get("cat") == "kernel" and e["tid"] != 0]
    if threads == 1:
        check(not workers, "%s: no worker events" % tag)
    else:
        check(len(workers) > 0 and all(0 < e["tid"] < threads for e in workers),
              "%s: workers' parts on their own tracks (%d events)" % (tag, len(workers)))


with tempfile.TemporaryDirectory() as t:
    model = os.path.join(t, "cnn.onnx")
    make_model(model)
    fusion = os.path.join(t, "fusion.json")
    # --cpu native: the sources onnxc profile builds for this machine (plain -S
    # sources are for an unnamed CPU: --layout auto keeps them NCHW, docs/layout.md)
    p = run(["-S", "--name", "m", "--cpu", "native", model, "-o", os.path.join(t, "plain"), "--fusion-report",
             fusion])
    check(p.returncode == 0, "-S without --profile")
    FUSION = json.load(open(fusion))
    kernels = [(k["name"], k["op"]) for k in FUSION["kernels"]]
    for threads in (1, 2):
        d = os.path.join(t, "prof%d" % threads)
        p = run(["-S", "--name", "m", "--cpu", "native", "--profile", "--threads", str(threads), model, "-o", d])
        check(p.returncode == 0, "-S --profile --threads %d" % threads)
        src = open(os.path.join(d, "m.c")).read()
        check("stdio" not in src and "printf" not in src, "--profile code has no stdio (threads %d)" % threads)
        check(src.count("onnxc_pf(onnxc_pu, ") == 2 * len(kernels),
              "a begin and an end hook per kernel (threads %d)" % threads)
        if threads > 1:
            check("((const onnxc_prof_ctx *)p[" in src, "parallel tasks report their workers")
        cc = subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c", "-I", d,
                             os.path.join(d, "m.c"), "-o", os.path.join(d, "m.o")], capture_output=True, text=True)
        check(cc.returncode == 0, "--profile sources build strictly (threads %d) %s" % (threads, cc.stderr[:2000]))
    plain = open(os.path.join(t, "plain", "m.c")).read() + open(os.path.join(t, "plain", "m.h")).read()
    check(not re.search(r"prof|KERNELS|m_kernels", plain), "-S without --profile has no profiling code")
    for args, want in ((["profile"], 2), (["profile", model, "--runs", "0"], 2),
                       (["profile", model, "-o", os.path.join(t, "x.so")], 2),
                       (["--profile", "--target", "cuda", model, "-S", "-o", os.path.join(t, "cu")], 2),
                       (["profile", os.path.join(t, "missing.onnx")], 1)):
        p = subprocess.run([ONNXC] + args, capture_output=True, text=True)
        check(p.returncode == want and p.stderr.strip() != "", "exit %d: %s" % (want, " ".join(args[:2])))
    check_profile(t, model, kernels, 1)
    check_profile(t, model, kernels, 2)

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
