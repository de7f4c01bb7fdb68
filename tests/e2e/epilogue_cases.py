#!/usr/bin/env python3
"""Every fused epilogue on every Conv / Gemm / MatMul kernel path, against ONNX Runtime.

The C kernels store a Conv's, Gemm's or MatMul's result through an epilogue
assembled from what passes/fuse_bn.c and passes/fuse_epilogue.c folded into the
node: a bias (an input, or a BatchNormalization folded into the weights), a
residual Add / Sum (C target, group-1 convs), and an activation (Relu,
LeakyRelu, Clip with two or one bounds). Each kernel path (codegen/emit_gemm.c,
emit_gemm_conv.c, emit_conv.c, emit_matmul.c) writes that epilogue in its own
text, so each path gets every variant:

  path x bias {none, input, BatchNormalization} x activation {none, Relu,
  LeakyRelu, Clip, Clip min only, Clip max only} x residual {none, Add(r, y),
  Add(y, r), Sum(y, r)} (residual on the paths where it fuses)

One model per path holds all its variants as independent branches, each on its
own input (branches on one input would be sibling convs, which fuse-siblings
merges), sharing the residual and run-time weights (one compile per path and
configuration); each branch's result is its
own graph output, named after the variant. Branches alternate between two
placements: "arena" (the conv's input, the residual and the result are
intermediates: x = Neg(x_in), r = r_in + k, result read by a Neg) and "output"
(graph inputs in, the chain's last value a graph output). Shapes give partial
register tiles (rows not a multiple of MR = 8/6/4, columns of NR = 32/16).

For each model the test asserts
  - the path: each branch's kernel in `onnxc -S` carries the path's marks
    (its emitter's comment), and with --threads 2 the parallel paths claim work;
  - the fusion: after fuse-epilogue (--dump-ir-after) each folded node is gone
    and each node that must stay (a graph output's producer) is there;
  - the values: `onnxc check` (rtol 1e-3, atol 1e-5) against ONNX Runtime with
    graph optimizations off (the unfused graph) at -O2 --cpu native,
    -O3 --threads 2 --cpu native, -O2 --cpu generic, and -O0 for a few paths.

  python3 tests/e2e/epilogue_cases.py --onnxc build/bin/onnxc [--out DIR]
      [--jobs N] [--only PATH,...] [--quick]
"""
import argparse
import concurrent.futures
import itertools
import os
import re
import subprocess
import sys
import time

import numpy as np
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from kernel_cases import F, rnd, write_case  # noqa: E402

BIASES = ["nobias", "bias", "bn"]
ACTS = ["noact", "Relu", "LeakyRelu", "Clip", "ClipMin", "ClipMax"]
RESIDUALS = ["nores", "addl", "addr", "sum"]
PLACEMENTS = ["arena", "output"]

# Marks of each emitter's kernel text (the comment each path writes).
FAST = r"implicit GEMM|direct conv|small maps|depthwise|packed GEMM"


def weights(rng, shape):
    """Random weights scaled by 1/sqrt(fan-in): results of order 1, so that
    atol 1e-5 measures the kernel and not float32 rounding of large sums."""
    fan_in = int(np.prod(shape[1:])) if len(shape) == 4 else shape[-2]
    return rnd(rng, *shape) / np.float32(np.sqrt(fan_in))


def conv(name, c, h, w, m, k, weights="init", residual=True, marks=(), absent=(), par=False,
         batch=1, **attrs):
    return dict(name=name, kind="conv", c=c, h=h, w=w, m=m, k=k, weights=weights,
                residual=residual, marks=marks, absent=absent, par=par, batch=batch, attrs=attrs)


def gemm(name, kind, a, b, weights="init", marks=(), absent=(), par=False, **attrs):
    return dict(name=name, kind=kind, a=a, b=b, weights=weights, residual=False, marks=marks,
                absent=absent, par=par, attrs=attrs)


PATHS = [
    # packed 1x1: a plain product with the image (no pixel table), K > 256 (two K blocks)
    conv("conv1x1", 300, 7, 9, 30, (1, 1), marks=[r"implicit GEMM: \[30 x 300\]", "packed weights"],
         absent=[r"pix\[q\]"]),
    # implicit GEMM, strided and asymmetrically padded: pixel table and padded image, K = 270
    conv("im2col", 30, 13, 15, 19, (3, 3), strides=[2, 2], pads=[1, 0, 1, 2],
         marks=[r"implicit GEMM: \[19 x 270\]", r"pix\[q\]", "packed weights"]),
    # weights as a graph input: packed at run time (not direct, not small-map)
    conv("wgt_input", 8, 10, 9, 13, (3, 3), weights="input", pads=[1, 1, 1, 1],
         marks=[r"implicit GEMM: \[13 x 72\]", "runtime-packed weights"]),
    # direct stride-1 windowed conv, dilated, batch 2
    conv("direct", 30, 10, 9, 13, (3, 3), pads=[2, 1, 2, 1], dilations=[2, 1], batch=2,
         marks=["direct conv"]),
    # small map transposed: 7x7 output, M a multiple of 32
    conv("small_map", 10, 7, 7, 32, (3, 3), pads=[1, 1, 1, 1], marks=["small maps"]),
    # a 1x1 small map: cols^T read from the image, the last partial tile packed
    conv("small_1x1", 40, 7, 7, 64, (1, 1), marks=["small maps", "read from the image"]),
    # grouped through the packed GEMM (9 outputs, 4 inputs per group)
    conv("grouped", 8, 9, 11, 18, (3, 3), group=2, pads=[1, 1, 1, 1], residual=False,
         marks=[r"implicit GEMM: 2 groups of \[9 x 36\]"]),
    conv("dw_s1", 6, 11, 13, 6, (3, 3), group=6, pads=[1, 1, 1, 1], residual=False,
         marks=["depthwise", r"float \*yt"]),
    conv("dw_s2", 6, 11, 13, 6, (3, 3), group=6, pads=[1, 1, 1, 1], strides=[2, 2], residual=False,
         batch=2, marks=["depthwise", r"stride 2x2: 4 phase plane", r"float \*yt"]),
    conv("dw_nopad", 5, 9, 10, 5, (3, 3), group=5, residual=False,
         marks=["depthwise", r"const float \*xp = xc"], absent=[r"float \*xp = ws"]),
    # under 16384 multiply-adds: the generic loops of emit_conv.c (grouped too)
    conv("conv_generic", 4, 5, 5, 5, (1, 1), marks=[r"acc0\["], absent=[FAST]),
    conv("grouped_generic", 4, 6, 7, 6, (3, 3), group=2, pads=[1, 1, 1, 1], residual=False,
         marks=[r"acc0\["], absent=[FAST]),
    gemm("gemm_packed", "Gemm", (37, 40), (40, 45), marks=[r"packed GEMM: \[37 x 40\] x packed"]),
    gemm("gemm_runtime", "Gemm", (37, 40), (45, 40), weights="input", transB=1,
         marks=[r"packed GEMM: \[37 x 40\] x \[40 x 45\]"]),
    gemm("gemm_generic", "Gemm", (3, 40), (40, 45), absent=[FAST]),
    gemm("matmul_packed", "MatMul", (2, 19, 40), (40, 45), marks=[r"packed GEMM: \[38 x 40\] x packed"]),
    gemm("matmul_batched", "MatMul", (2, 19, 40), (2, 40, 45), weights="input",
         marks=[r"packed GEMM: 2 x \[19 x 40\]"]),
    # large enough (>= 2^20 multiply-adds) for --threads' parallel forms
    conv("direct_par", 32, 24, 24, 40, (3, 3), pads=[1, 1, 1, 1], par=True, marks=["direct conv"]),
    conv("im2col_par", 32, 30, 30, 70, (3, 3), strides=[2, 2], pads=[1, 1, 1, 1], par=True,
         marks=[r"implicit GEMM: \[70 x 288\]"]),
    conv("small_map_par", 64, 14, 14, 128, (3, 3), pads=[1, 1, 1, 1], par=True, marks=["small maps"]),
    conv("grouped_par", 64, 20, 20, 64, (3, 3), group=2, pads=[1, 1, 1, 1], par=True, residual=False,
         marks=[r"2 groups of"]),
    conv("dw_par", 32, 40, 40, 32, (3, 3), group=32, pads=[1, 1, 1, 1], par=True, residual=False,
         marks=["depthwise", r"row by row"]),
    gemm("gemm_par", "Gemm", (130, 300), (300, 70), par=True, marks=[r"x packed"]),
]

# (opt flags, cpu); -O0 (no fusion: the case against itself unfused) for the paths listed
# (-O2 native: the row-major kernels, which --layout auto leaves on an AVX-512
# machine to the blocked ones; those run as one more configuration, below)
CONFIGS = [(["-O2", "--layout", "nchw"], "native"), (["-O3", "--threads", "2"], "native"), (["-O2"], "generic"),
           (["-O3", "--threads", "2"], "generic")]
O0_PATHS = {"im2col", "direct", "small_map", "gemm_packed", "dw_s2"}


def variants(path):
    biases = BIASES if path["kind"] != "MatMul" else ["nobias", "bias"]
    res = RESIDUALS if path["residual"] else ["nores"]
    return list(itertools.product(biases, ACTS, res))


def out_shape(path):
    """The kernel's output shape (Conv by the window arithmetic of ONNX)."""
    if path["kind"] != "conv":
        a, b = path["a"], path["b"]
        if path["kind"] == "Gemm":
            return [a[0], b[0] if path["attrs"].get("transB") else b[1]]
        return list(a[:-1]) + [b[-1]]
    at = path["attrs"]
    s, d = at.get("strides", [1, 1]), at.get("dilations", [1, 1])
    p = at.get("pads", [0, 0, 0, 0])
    hw = [(n + p[i] + p[2 + i] - d[i] * (path["k"][i] - 1) - 1) // s[i] + 1
          for i, n in enumerate((path["h"], path["w"]))]
    return [path["batch"], path["m"]] + hw


def act_nodes(act, src, dst, name, inits):
    if act == "LeakyRelu":
        return [helper.make_node("LeakyRelu", [src], [dst], alpha=0.1, name=name)]
    if act == "Relu":
        return [helper.make_node("Relu", [src], [dst], name=name)]
    lo, hi = {"Clip": (-1.0, 1.5), "ClipMin": (-0.5, None), "ClipMax": (None, 0.5)}[act]
    ins = [src]
    for tag, v in (("lo", lo), ("hi", hi)):
        if v is None:
            ins.append("")
        else:
            inits.append(numpy_helper.from_array(np.array(v, np.float32), f"{name}_{tag}"))
            ins.append(f"{name}_{tag}")
    while ins[-1] == "":
        ins.pop()
    return [helper.make_node("Clip", ins, [dst], name=name)]


def branch(path, rng, tag, bias, act, res, place, nodes, inits, outs, x, r, wshared):
    """Appends one variant's nodes; returns the expected fusion {node name: fused?}."""
    ys = out_shape(path)
    chans = ys[1] if path["kind"] == "conv" else ys[-1]
    kernel = f"{tag}_k"
    if wshared:
        # weights at run time: the input itself, or (so that no two branches
        # compute the same product, which cse would merge) scaled per branch
        wname = wshared
        if not tag.startswith("v00_"):
            inits.append(numpy_helper.from_array(np.array(rng.uniform(0.5, 1.5), np.float32), f"{tag}_ws"))
            nodes.append(helper.make_node("Mul", [wshared, f"{tag}_ws"], [f"{tag}_w"], name=f"{tag}_wmul"))
            wname = f"{tag}_w"
    else:
        wname = f"{tag}_w"
        if path["kind"] == "conv":
            g = path["attrs"].get("group", 1)
            inits.append(numpy_helper.from_array(
                weights(rng, (path["m"], path["c"] // g, *path["k"])), wname))
        else:
            inits.append(numpy_helper.from_array(weights(rng, path["b"]), wname))
    kin = [x, wname]
    if bias == "bias" and path["kind"] != "MatMul":
        inits.append(numpy_helper.from_array(rnd(rng, chans), f"{tag}_b"))
        kin.append(f"{tag}_b")
    cur = f"{tag}_y0"
    if path["kind"] == "conv":
        nodes.append(helper.make_node("Conv", kin, [cur], name=kernel, kernel_shape=list(path["k"]),
                                      **path["attrs"]))
    else:
        nodes.append(helper.make_node(path["kind"], kin, [cur], name=kernel, **path["attrs"]))
    chain = []  # (node name, kind) in order
    if bias == "bias" and path["kind"] == "MatMul":
        inits.append(numpy_helper.from_array(rnd(rng, chans), f"{tag}_b"))
        nodes.append(helper.make_node("Add", [cur, f"{tag}_b"], [f"{tag}_y1"], name=f"{tag}_bias"))
        chain.append((f"{tag}_bias", "matmul_bias"))
        cur = f"{tag}_y1"
    if bias == "bn":
        for pname, v in (("s", rng.uniform(0.5, 1.5, chans)), ("t", rng.standard_normal(chans)),
                         ("mu", rng.standard_normal(chans) * 0.3), ("var", rng.uniform(0.5, 2, chans))):
            inits.append(numpy_helper.from_array(v.astype(np.float32), f"{tag}_{pname}"))
        nodes.append(helper.make_node("BatchNormalization",
                                      [cur] + [f"{tag}_{p}" for p in ("s", "t", "mu", "var")],
                                      [f"{tag}_y2"], name=f"{tag}_bn", epsilon=1e-3))
        chain.append((f"{tag}_bn", "bn"))
        cur = f"{tag}_y2"
    if res != "nores":
        rin = r
        if place == "arena":  # an intermediate that dies at this branch's kernel
            inits.append(numpy_helper.from_array(np.array(rng.uniform(0.1, 1), np.float32), f"{tag}_rk"))
            nodes.append(helper.make_node("Add", [r, f"{tag}_rk"], [f"{tag}_r"], name=f"{tag}_rin"))
            rin = f"{tag}_r"
        op, ins = {"addl": ("Add", [rin, cur]), "addr": ("Add", [cur, rin]),
                   "sum": ("Sum", [cur, rin])}[res]
        nodes.append(helper.make_node(op, ins, [f"{tag}_y3"], name=f"{tag}_res"))
        chain.append((f"{tag}_res", "res"))
        cur = f"{tag}_y3"
    if act != "noact":
        nodes += act_nodes(act, cur, f"{tag}_y4", f"{tag}_act", inits)
        chain.append((f"{tag}_act", "act"))
        cur = f"{tag}_y4"
    out = f"{tag}_out"
    if place == "arena":
        nodes.append(helper.make_node("Neg", [cur], [out], name=f"{tag}_post"))
    else:
        # the chain's last value is the graph output: rename it
        nodes[-1].output[0] = out
    outs.append(helper.make_tensor_value_info(out, F, None))
    # Expected fusion, by the passes' documented rules.
    expect = {}
    const_w = path["weights"] == "init"
    head = True  # the chain so far folded into the kernel
    for i, (name, kind) in enumerate(chain):
        last_out = place == "output" and i == len(chain) - 1
        if kind == "bn":
            ok = const_w and path["kind"] in ("conv", "Gemm")
        elif kind == "matmul_bias":
            ok = const_w and not last_out
        elif kind == "res":
            ok = head and path["residual"] and not last_out
        else:
            # a MatMul + bias over batch dims becomes Reshape(Gemm(Reshape)):
            # the Reshape after the Gemm keeps the activation apart
            reshaped = path["kind"] == "MatMul" and len(path["a"]) > 2 and bias == "bias"
            ok = head and not last_out and not reshaped
        expect[name] = ok
        head = head and ok
    return expect


CHUNK = 36  # variants per model (onnxc check reads at most 64 outputs)


def build(root, path, seed):
    """The path's models, CHUNK variants each: [(case dir, expected fusion, kernels)]."""
    rng = np.random.default_rng(seed)
    allv = variants(path)
    cases = []
    for c0 in range(0, len(allv), CHUNK):
        nodes, inits, outs, ins, feeds = [], [], [], [], {}
        if path["kind"] == "conv":
            xs = [path["batch"], path["c"], path["h"], path["w"]]
        else:
            xs = list(path["a"])
        ys = out_shape(path)
        if path["residual"]:
            feeds["r_in"] = rnd(rng, *ys)
            ins.append(helper.make_tensor_value_info("r_in", F, ys))
        wshared = None
        if path["weights"] == "input":
            if path["kind"] == "conv":
                g = path["attrs"].get("group", 1)
                wv = weights(rng, (path["m"], path["c"] // g, *path["k"]))
            else:
                wv = weights(rng, path["b"])
            feeds["w_in"] = wv
            ins.append(helper.make_tensor_value_info("w_in", F, list(wv.shape)))
            wshared = "w_in"
        expect, kernels = {}, {}
        for i in range(c0, min(c0 + CHUNK, len(allv))):
            bias, act, res = allv[i]
            # placements alternate, shifted per activation so that each (bias,
            # activation, residual) meets both over the paths
            place = PLACEMENTS[(i + ACTS.index(act) // 3) % 2]
            tag = f"v{i:02d}_{bias}_{act}_{res}_{place}"
            # each branch reads its own input: branches on one input would be
            # sibling convs, which fuse-siblings merges into one product
            x = f"x_in{i}"
            feeds[x] = rnd(rng, *xs)
            ins.append(helper.make_tensor_value_info(x, F, xs))
            if place == "arena":
                nodes.append(helper.make_node("Neg", [x], [f"x_a{i}"], name=f"x_neg{i}"))
                x = f"x_a{i}"
            expect.update(branch(path, rng, tag, bias, act, res, place, nodes, inits, outs, x,
                                 "r_in", wshared))
            kernels[f"{tag}_k"] = tag
        name = path["name"] if len(allv) <= CHUNK else f"{path['name']}_{c0 // CHUNK}"
        cases.append((write_case(root, name, nodes, ins, inits, outs, feeds), expect, kernels))
    return cases


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return r.returncode, r.stdout + r.stderr


def kernel_texts(src):
    """{node name: its function's text} of a generated NAME.c. A node whose
    kernel is the same text as an earlier one's is `#define nodeK_Op nodeJ_Op`
    (codegen/c/emit_c.c, same_kernel): it gets that function's text."""
    out, cur = {}, None
    for line in src.splitlines():
        m = re.match(r"/\* node '([^']*)' \((\w+)\) \*/", line)
        if m:
            cur = m.group(1)
            out[cur] = ""
        elif cur is not None:
            out[cur] += line + "\n"
    by_fn = {}
    for name, text in out.items():
        m = re.search(r"\b(node\d+_\w+)\(", text)
        if m and not text.lstrip().startswith("#define"):
            by_fn[m.group(1)] = text
    for name, text in out.items():
        m = re.match(r"\s*#define (node\d+_\w+) (node\d+_\w+)", text)
        if m and m.group(2) in by_fn:
            out[name] = by_fn[m.group(2)]
    return out


def verify_structure(onnxc, d, path, expect, kernels):
    """Path marks in the generated C and fusion in the IR; returns a list of problems."""
    bad = []
    src = os.path.join(d, "src")
    # the row-major kernels' paths (--layout auto would take the blocked ones
    # on an AVX-512 machine: those run as a configuration of their own)
    rc, log = run([onnxc, "-S", os.path.join(d, "model.onnx"), "-o", src, "--name", "m", "--layout", "nchw",
                   "--dump-ir-after", "fuse-epilogue"])
    if rc != 0:
        return [f"onnxc -S failed: {log[-800:]}"]
    ir = log
    for name, fused in expect.items():
        # a BatchNormalization that cannot fold stays as its own kernel: since
        # fuse-bn lowers it to Sub, Mul, Add (NAME_center/_scale/_shift)
        present = f"@{name}\n" in ir or re.search(rf"@{re.escape(name)}(_shift)?\b", ir) is not None
        if fused == present:
            bad.append(f"{name}: expected {'fused' if fused else 'a separate node'} after fuse-epilogue")
    for k, tag in kernels.items():
        act = tag.split("_")[2]
        line = next((ln for ln in ir.splitlines() if re.search(rf"@{re.escape(k)}\b", ln)), "")
        want_act = expect.get(f"{tag}_act", False)
        if want_act != ("activation=" in line):
            bad.append(f"{k}: activation attribute {'missing' if want_act else 'unexpected'}: {line.strip()}")
        if want_act and act.startswith("Clip") and "activation_min" not in line:
            bad.append(f"{k}: Clip bounds missing: {line.strip()}")
    with open(os.path.join(src, "m.c")) as f:
        texts = kernel_texts(f.read())
    for k in kernels:
        body = texts.get(k)
        if body is None:
            bad.append(f"{k}: no kernel named after the node in m.c")
            continue
        for mark in path["marks"]:
            if not re.search(mark, body):
                bad.append(f"{k}: not on path {path['name']} (no /{mark}/ in its kernel)")
                break
        for mark in path["absent"]:
            if re.search(mark, body):
                bad.append(f"{k}: not on path {path['name']} (/{mark}/ in its kernel)")
                break
    if path["par"]:
        src2 = os.path.join(d, "src_t2")
        rc, log = run([onnxc, "-S", "-O3", "--threads", "2", os.path.join(d, "model.onnx"), "-o", src2,
                       "--name", "m"])
        if rc != 0:
            return bad + [f"onnxc -S --threads 2 failed: {log[-800:]}"]
        with open(os.path.join(src2, "m.c")) as f:
            texts = kernel_texts(f.read())
        for k in kernels:
            if "onnxc_claim" not in texts.get(k, "") and "onnxc_th" not in texts.get(k, ""):
                bad.append(f"{k}: not parallel with --threads 2")
    return bad


def check(onnxc, d, flags, cpu):
    rc, log = run([onnxc, "check", d, "--cpu", cpu, "--atol", "1e-5", "--rtol", "1e-3"] + flags)
    return None if rc == 0 else f"exit {rc}: {log.strip()[-3000:]}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--out", default="build/epilogue_cases")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated path names")
    ap.add_argument("--quick", action="store_true", help="-O2 native only")
    a = ap.parse_args()
    onnxc = os.path.abspath(a.onnxc)
    paths = [p for p in PATHS if not a.only or p["name"] in a.only.split(",")]
    t0 = time.time()
    built = [(p,) + c for i, p in enumerate(paths) for c in build(a.out, p, 100 + i)]
    n_var = sum(len(e[3]) for e in built)
    print(f"{len(paths)} paths, {n_var} variants in {len(built)} models built in {time.time() - t0:.1f}s",
          flush=True)
    jobs = []
    for k, (p, d, expect, kernels) in enumerate(built):
        jobs.append(("structure", p, d, expect, kernels))
        # two configurations per model, crossing -O2 / -O3 --threads 2 with
        # native / generic (the parallel paths always threaded on native)
        pi = paths.index(p)
        cfgs = [CONFIGS[0], CONFIGS[3]] if pi % 2 == 0 else [CONFIGS[2], CONFIGS[1]]
        if p["par"]:
            cfgs = [CONFIGS[2], CONFIGS[1]]
        for flags, cpu in cfgs[:1] if a.quick else cfgs:
            jobs.append(("check", p, d, flags, cpu))
        if not a.quick and not p["name"].startswith("gemm"):  # every conv epilogue, blocked (docs/layout.md)
            jobs.append(("check", p, d, ["-O2", "--layout", "nchw16c"], "native"))
        if p["name"] in O0_PATHS and not a.quick and d == next(b[1] for b in built if b[0] is p):
            jobs.append(("check", p, d, ["-O0"], "native"))
    # the slowest first
    jobs.sort(key=lambda j: j[0] != "check" or "--threads" not in j[3])

    def work(j):
        t = time.time()
        if j[0] == "structure":
            probs = verify_structure(onnxc, j[2], j[1], j[3], j[4])
        else:
            why = check(onnxc, j[2], j[3], j[4])
            probs = [why] if why else []
        return j, probs, time.time() - t

    fails = 0
    with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as ex:
        for j, probs, secs in ex.map(work, jobs):
            what = "path and fusion" if j[0] == "structure" else f"{' '.join(j[3])} --cpu {j[4]}"
            if probs:
                fails += 1
                print(f"FAIL {j[1]['name']} [{what}] {j[2]}:")
                for pr in probs[:40]:
                    print("   ", pr.replace("\n", "\n    "))
            else:
                print(f"ok   {j[1]['name']} [{what}] {secs:.1f}s", flush=True)
    print(f"{len(jobs)} runs over {len(paths)} paths ({n_var} variants) in {time.time() - t0:.0f}s: "
          + ("all passed" if not fails else f"{fails} failed"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
