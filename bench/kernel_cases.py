#!/usr/bin/env python3
"""Edge cases of the packed GEMM, implicit-GEMM conv and depthwise kernels.

Writes small ONNX backend-style cases (model.onnx + test_data_set_0, outputs
from onnx.reference) covering what the fast paths special-case: odd M/N/K
around the 24-row / 32-column panels and the 256-deep K blocks, 1x1 convs,
pads, strides, dilations, auto_pad, depthwise, grouped (generic) convs, weights
as initializers (packed at compile time) and as inputs (packed at run time),
batched and broadcast MatMul, Gemm transA/transB/alpha/beta/C forms, and fused
Relu / Clip / LeakyRelu epilogues. Then runs `onnxc check` on each with every
--cpu given (native: AVX-512 or AVX2; haswell: AVX2; generic: portable C).

  python3 bench/kernel_cases.py --onnxc build/bin/onnxc [--cpu native,haswell,generic]
      [--out DIR] [--sanitize] [--cc clang] [--guard-cpu haswell]

--guard-cpu CPUS runs the cases of those --cpu values in guard mode
(docs/guard.md): red zones around every arena buffer and output, checked
after each node; the other values run the normal code.

Cases run --jobs at a time (default: one per core). Where the compiler's
-march=native is AVX2 without AVX-512, --cpu native is left out when haswell
is also given: it would build the same kernels again.
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import onnxruntime as ort

F = TensorProto.FLOAT


def write_case(root, name, nodes, inputs, inits, outputs, feeds, depth=1):
    """depth: the terms each output sums (K of a product), for the tolerance:
    float32 sums in another order differ by about sqrt(depth) ulps of the
    terms, so atol grows past 1e-5 for depths over 256 (atol.txt)."""
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    with open(os.path.join(d, "atol.txt"), "w") as f:
        f.write("%g\n" % (1e-5 * max(1.0, (depth / 256.0) ** 0.5)))
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, os.path.join(d, "model.onnx"))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    outs = sess.run(None, feeds)
    for i, (vi, arr) in enumerate(zip(inputs, [feeds[v.name] for v in inputs])):
        t = numpy_helper.from_array(arr, vi.name)
        with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(t.SerializeToString())
    for i, (vo, arr) in enumerate(zip(outputs, outs)):
        t = numpy_helper.from_array(np.asarray(arr), vo.name)
        with open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb") as f:
            f.write(t.SerializeToString())
    return d


def rnd(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def conv_out_shape(n, c, h, w, m, k, group, attrs):
    """The Conv's output shape, by ONNX shape inference of the Conv alone."""
    node = helper.make_node("Conv", ["x", "w"], ["y"], group=group, kernel_shape=list(k), **attrs)
    g = helper.make_graph([node], "s", [helper.make_tensor_value_info("x", F, [n, c, h, w]),
                                        helper.make_tensor_value_info("w", F, [m, c // group, *k])],
                          [helper.make_tensor_value_info("y", F, None)])
    inferred = onnx.shape_inference.infer_shapes(helper.make_model(g), strict_mode=True)
    return [d.dim_value for d in inferred.graph.output[0].type.tensor_type.shape.dim]


def conv_case(root, rng, name, n, c, h, w, m, k, group=1, act=None, weights_const=True, bias=True,
              residual=None, **attrs):
    """residual "left" / "right": Add(r, conv) / Add(conv, r) before the activation,
    r a graph input of the output's shape (fused into the conv's store)."""
    x = rnd(rng, n, c, h, w)
    wt = rnd(rng, m, c // group, k[0], k[1]) * 0.3
    b = rnd(rng, m)
    ins = [helper.make_tensor_value_info("x", F, list(x.shape))]
    feeds = {"x": x}
    inits = []
    if weights_const:
        inits.append(numpy_helper.from_array(wt, "w"))
    else:
        ins.append(helper.make_tensor_value_info("w", F, list(wt.shape)))
        feeds["w"] = wt
    if bias:
        inits.append(numpy_helper.from_array(b, "b"))
    conv_in = ["x", "w"] + (["b"] if bias else [])
    conv_out = "c" if residual else "y" if act else "z"
    nodes = [helper.make_node("Conv", conv_in, [conv_out], group=group,
                              kernel_shape=list(k), **attrs)]
    if residual:
        r = rnd(rng, *conv_out_shape(n, c, h, w, m, k, group, attrs))
        ins.append(helper.make_tensor_value_info("r", F, list(r.shape)))
        feeds["r"] = r
        add_in = ["r", "c"] if residual == "left" else ["c", "r"]
        nodes.append(helper.make_node("Add", add_in, ["y" if act else "z"]))
    nodes += act_nodes(act, "y", "z", inits)
    outs = [helper.make_tensor_value_info("z", F, None)]
    return write_case(root, name, nodes, ins, inits, outs, feeds, depth=c // group * k[0] * k[1])


def conv1d_case(root, rng, name, n, c, length, m, k, group=1, act=None, residual=False, **attrs):
    """A 1-D Conv ([N, C, L]): onnxc runs it as a 2-D conv of one row, on the
    same packed products (im2col, direct, small-map transposed)."""
    x = rnd(rng, n, c, length)
    wt = rnd(rng, m, c // group, k) * 0.3
    ins = [helper.make_tensor_value_info("x", F, list(x.shape))]
    feeds = {"x": x}
    inits = [numpy_helper.from_array(wt, "w"), numpy_helper.from_array(rnd(rng, m), "b")]
    conv_out = "c" if residual else "y" if act else "z"
    nodes = [helper.make_node("Conv", ["x", "w", "b"], [conv_out], group=group, kernel_shape=[k], **attrs)]
    if residual:
        s, d = attrs.get("strides", [1])[0], attrs.get("dilations", [1])[0]
        pads = attrs.get("pads", [0, 0])
        ol = (length + pads[0] + pads[1] - (k - 1) * d - 1) // s + 1
        r = rnd(rng, n, m, ol)
        ins.append(helper.make_tensor_value_info("r", F, list(r.shape)))
        feeds["r"] = r
        nodes.append(helper.make_node("Add", ["c", "r"], ["y" if act else "z"]))
    nodes += act_nodes(act, "y", "z", inits)
    outs = [helper.make_tensor_value_info("z", F, None)]
    return write_case(root, name, nodes, ins, inits, outs, feeds, depth=c // group * k)


def rnn_case(root, rng, name, op, seq, batch, inp, hid, direction="forward", bias=True, h0=False, **attrs):
    """RNN/GRU/LSTM [seq, batch, in] with constant weights: at -O1 and up the
    input products of every step are one MatMul (passes/rnn_project.c), and a
    bidirectional node that large runs a direction per thread (emit_rnn.c).
    Outputs Y and Y_h."""
    g = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    nd = 2 if direction == "bidirectional" else 1
    x = rnd(rng, seq, batch, inp)
    inits = [numpy_helper.from_array((rnd(rng, nd, g * hid, inp) / np.sqrt(inp)).astype(np.float32), "w"),
             numpy_helper.from_array((rnd(rng, nd, g * hid, hid) / np.sqrt(hid)).astype(np.float32), "r")]
    ins = ["x", "w", "r"]
    if bias:
        inits.append(numpy_helper.from_array((rnd(rng, nd, 2 * g * hid) * 0.3).astype(np.float32), "b"))
        ins.append("b")
    if h0:
        ins += [""] * (5 - len(ins)) + ["h0"]
        inits.append(numpy_helper.from_array((rnd(rng, nd, batch, hid) * 0.5).astype(np.float32), "h0"))
    node = helper.make_node(op, ins, ["y", "yh"], hidden_size=hid, direction=direction, **attrs)
    return write_case(root, name, [node], [helper.make_tensor_value_info("x", F, list(x.shape))], inits,
                      [helper.make_tensor_value_info(v, F, None) for v in ("y", "yh")], {"x": x},
                      depth=inp + hid)


def act_nodes(act, src, dst, inits):
    if not act:
        return []
    if act == "Clip":
        inits += [numpy_helper.from_array(np.array(0, np.float32), "lo"),
                  numpy_helper.from_array(np.array(6, np.float32), "hi")]
        return [helper.make_node("Clip", [src, "lo", "hi"], [dst])]
    if act == "LeakyRelu":
        return [helper.make_node("LeakyRelu", [src], [dst], alpha=0.1)]
    return [helper.make_node(act, [src], [dst])]


def pool_case(root, rng, name, op, n, c, h, w, k, **attrs):
    x = rnd(rng, n, c, h, w)
    ins = [helper.make_tensor_value_info("x", F, list(x.shape))]
    nodes = [helper.make_node(op, ["x"], ["z"], kernel_shape=list(k), **attrs)]
    outs = [helper.make_tensor_value_info("z", F, None)]
    return write_case(root, name, nodes, ins, [], outs, {"x": x})


def norm_case(root, rng, name, op, shape, opset=17, **attrs):
    """LayerNormalization (scale and bias as initializers) or Softmax over the last axis."""
    x = rnd(rng, *shape)
    ins = [helper.make_tensor_value_info("x", F, list(x.shape))]
    inits = []
    node_in = ["x"]
    if op == "LayerNormalization":
        inits = [numpy_helper.from_array(rnd(rng, shape[-1]), "g"),
                 numpy_helper.from_array(rnd(rng, shape[-1]), "b")]
        node_in += ["g", "b"]
    nodes = [helper.make_node(op, node_in, ["z"], **attrs)]
    outs = [helper.make_tensor_value_info("z", F, None)]
    return write_case(root, name, nodes, ins, inits, outs, {"x": x})


def matmul_case(root, rng, name, ashape, bshape, const_b=True, act=None, bias=False):
    a = rnd(rng, *ashape)
    b = rnd(rng, *bshape) * 0.2
    ins = [helper.make_tensor_value_info("a", F, list(a.shape))]
    feeds = {"a": a}
    inits = []
    if const_b:
        inits.append(numpy_helper.from_array(b, "b"))
    else:
        ins.append(helper.make_tensor_value_info("b", F, list(b.shape)))
        feeds["b"] = b
    nodes = [helper.make_node("MatMul", ["a", "b"], ["y" if act else "z"])]
    nodes += act_nodes(act, "y", "z", inits)
    outs = [helper.make_tensor_value_info("z", F, None)]
    return write_case(root, name, nodes, ins, inits, outs, feeds, depth=ashape[-1])


def gemm_case(root, rng, name, m, n, k, ta=0, tb=0, alpha=1.0, beta=1.0, cshape=None, const_b=True,
              act=None):
    a = rnd(rng, *((k, m) if ta else (m, k)))
    b = rnd(rng, *((n, k) if tb else (k, n))) * 0.2
    ins = [helper.make_tensor_value_info("a", F, list(a.shape))]
    feeds = {"a": a}
    inits = []
    if const_b:
        inits.append(numpy_helper.from_array(b, "b"))
    else:
        ins.append(helper.make_tensor_value_info("b", F, list(b.shape)))
        feeds["b"] = b
    gin = ["a", "b"]
    if cshape is not None:
        inits.append(numpy_helper.from_array(rnd(rng, *cshape), "c"))
        gin.append("c")
    nodes = [helper.make_node("Gemm", gin, ["y" if act else "z"], transA=ta, transB=tb, alpha=alpha,
                              beta=beta)]
    nodes += act_nodes(act, "y", "z", inits)
    outs = [helper.make_tensor_value_info("z", F, None)]
    return write_case(root, name, nodes, ins, inits, outs, feeds, depth=k)


def build(root):
    rng = np.random.default_rng(5)
    cases = []
    c = cases.append
    c(conv_case(root, rng, "conv3x3_pad", 1, 5, 9, 11, 7, (3, 3), pads=[1, 1, 1, 1], act="Relu"))
    # 1-D convs: an STFT-like stride (im2col), a 4-sample map (transposed small
    # map), stride and dilation with a residual, a long sequence (direct), groups
    c(conv1d_case(root, rng, "conv1d_stft", 1, 1, 320, 66, 64, strides=[32]))
    c(conv1d_case(root, rng, "conv1d_k3_small", 1, 40, 4, 64, 3, pads=[1, 1], act="Relu"))
    c(conv1d_case(root, rng, "conv1d_s2_dil_res", 2, 24, 50, 48, 5, strides=[2], dilations=[2], pads=[3, 1],
                  residual=True, act="Clip"))
    c(conv1d_case(root, rng, "conv1d_long", 1, 16, 300, 32, 7, pads=[3, 3], act="LeakyRelu"))
    c(conv1d_case(root, rng, "conv1d_grouped", 1, 32, 40, 64, 3, group=2, pads=[1, 1]))
    # one output pixel: dot products (emit_conv.c), taps in the padding, a
    # residual, a channel count that is not a multiple of 4, a 2-D map
    c(conv1d_case(root, rng, "conv1d_one_px", 2, 64, 2, 70, 3, strides=[2], pads=[1, 1], act="Relu"))
    c(conv1d_case(root, rng, "conv1d_one_px_res", 1, 40, 5, 33, 5, residual=True))
    c(conv_case(root, rng, "conv_one_px_2d", 1, 24, 3, 3, 19, (3, 3), act="Clip"))
    c(conv_case(root, rng, "conv_one_px_se", 2, 96, 1, 1, 24, (1, 1), residual="left"))
    # recurrent: the input products hoisted into one MatMul; two directions side by side
    c(rnn_case(root, rng, "lstm_bidir_ocr", "LSTM", 20, 1, 256, 128, direction="bidirectional"))
    c(rnn_case(root, rng, "gru_bidir_lbr_b3", "GRU", 9, 3, 40, 96, direction="bidirectional", h0=True,
               linear_before_reset=1))
    c(rnn_case(root, rng, "gru_reverse", "GRU", 12, 2, 24, 64, direction="reverse", bias=False))
    c(rnn_case(root, rng, "rnn_bidir_relu", "RNN", 16, 2, 33, 128, direction="bidirectional",
               activations=["Relu", "Tanh"]))
    c(conv_case(root, rng, "conv3x3_s2", 2, 6, 13, 10, 30, (3, 3), strides=[2, 2], pads=[1, 0, 1, 2]))
    c(conv_case(root, rng, "conv_dil", 1, 4, 12, 12, 25, (3, 2), dilations=[2, 3], pads=[2, 1, 0, 3]))
    c(conv_case(root, rng, "conv_same", 1, 3, 10, 7, 8, (4, 3), auto_pad="SAME_LOWER", strides=[2, 1]))
    c(conv_case(root, rng, "conv1x1", 1, 300, 7, 7, 50, (1, 1), act="Clip"))
    c(conv_case(root, rng, "conv1x1_s2", 1, 17, 9, 9, 33, (1, 1), strides=[2, 2]))
    # a strided 1x1 reads a strided copy of its input (passes/layout.c): one
    # dim strided, batch 2, a stride past the map's last column
    c(conv_case(root, rng, "conv1x1_s13_b2", 2, 20, 7, 11, 18, (1, 1), strides=[1, 3]))
    # small maps computed transposed with cols^T read from the image (trans_x):
    # the last tile of 49 and 196 rows is partial for every MR (8, 6, 4)
    c(conv_case(root, rng, "conv1x1_small", 1, 40, 7, 7, 64, (1, 1), act="Clip"))
    c(conv_case(root, rng, "conv1x1_small_res", 1, 300, 14, 14, 96, (1, 1), residual="left"))
    c(conv_case(root, rng, "conv_big_k", 1, 70, 6, 6, 49, (3, 3), pads=[1, 1, 1, 1], act="LeakyRelu"))
    c(conv_case(root, rng, "conv_w_input", 1, 8, 8, 8, 26, (3, 3), weights_const=False, bias=False,
                pads=[0, 1, 0, 1]))
    c(conv_case(root, rng, "conv_wide", 1, 3, 23, 37, 16, (7, 7), strides=[2, 2], pads=[3, 3, 3, 3]))
    # output blocks of 16 channels in odd number (48 = 32 + 16, 16): the last
    # panel's tiles compute one block only; the first cut in depth (K 1700 >
    # 1536: two parts), with a residual and a clip after the last part
    c(conv_case(root, rng, "conv1x1_m48_deep_res", 1, 1700, 9, 10, 48, (1, 1), residual="right",
                act="Clip"))
    c(conv_case(root, rng, "conv3x3_m16_s2", 2, 20, 17, 18, 16, (3, 3), strides=[2, 2],
                pads=[1, 1, 1, 1], act="Relu"))
    # inputs over 1 MB with weights that stay in the L2: blocked convs run
    # all panels of a group of tiles before the next group (group-major)
    c(conv_case(root, rng, "conv_gmajor_1x1_s2_res", 1, 256, 40, 40, 80, (1, 1), strides=[2, 2],
                residual="left", act="Relu"))
    c(conv_case(root, rng, "conv_gmajor_3x3", 1, 128, 46, 46, 48, (3, 3), pads=[1, 1, 1, 1]))
    # a row-major input padded to rows of 2 and 3 floats, rows of padding
    # above (the BlockedPad form GCC 12 at -O3 miscompiled: docs/layout.md)
    c(conv_case(root, rng, "conv_rowmajor_w2_padrows", 1, 1, 4, 2, 7, (1, 1), pads=[1, 0, 0, 0], bias=False))
    c(conv_case(root, rng, "conv_rowmajor_1x3_padrows_s3", 1, 1, 10, 3, 7, (1, 3), pads=[2, 0, 1, 0],
                strides=[3, 3], bias=False))
    # a depthwise conv on a map 1 column wide whose output columns read
    # only padding (a strip with no tap inside the map)
    c(conv_case(root, rng, "dw3x1_w1_padcols", 1, 16, 4, 1, 16, (3, 1), group=16, strides=[1, 2],
                pads=[2, 1, 0, 1], dilations=[2, 1]))
    c(conv_case(root, rng, "dw3x3", 1, 12, 14, 15, 12, (3, 3), group=12, pads=[1, 1, 1, 1],
                act="Clip"))
    c(conv_case(root, rng, "dw3x3_s2", 2, 8, 11, 12, 8, (3, 3), group=8, strides=[2, 2],
                pads=[1, 1, 1, 1]))
    c(conv_case(root, rng, "dw5x5_nopad", 1, 4, 9, 9, 4, (5, 5), group=4, bias=False))
    # rows of at most 14 pixels in registers, each pixel's taps unrolled
    # (emit_dw_small_row): 14 wide, and a 5x5 window wider than the border
    c(conv_case(root, rng, "dw3x3_14x14", 1, 20, 14, 14, 20, (3, 3), group=20, pads=[1, 1, 1, 1],
                act="Clip"))
    c(conv_case(root, rng, "dw5x5_7x7_dil", 2, 17, 7, 7, 17, (5, 5), group=17, pads=[2, 3, 2, 1],
                dilations=[1, 2], act="Relu"))
    # the depthwise phase planes (emit_depthwise.c): stride 2 on odd and even
    # sizes, one dim strided, asymmetric and SAME pads, wide rows (the row
    # form), unpadded stride 2, and the forms without phases (dilated, stride 3)
    c(conv_case(root, rng, "dw3x3_s2_odd", 1, 6, 13, 15, 6, (3, 3), group=6, strides=[2, 2],
                pads=[0, 1, 1, 0], act="Relu"))
    c(conv_case(root, rng, "dw3x3_s12", 1, 5, 9, 10, 5, (3, 3), group=5, strides=[1, 2],
                pads=[1, 1, 1, 1]))
    c(conv_case(root, rng, "dw3x3_s21", 1, 5, 10, 9, 5, (3, 3), group=5, strides=[2, 1],
                pads=[1, 1, 1, 1]))
    c(conv_case(root, rng, "dw5x5_s2_same", 1, 7, 17, 16, 7, (5, 5), group=7, strides=[2, 2],
                auto_pad="SAME_UPPER", act="Clip"))
    c(conv_case(root, rng, "dw3x3_wide_s2", 2, 3, 9, 75, 3, (3, 3), group=3, strides=[2, 2],
                pads=[1, 1, 1, 1]))
    c(conv_case(root, rng, "dw3x3_wide", 1, 3, 5, 70, 3, (3, 3), group=3, pads=[1, 2, 0, 1]))
    c(conv_case(root, rng, "dw3x3_s2_nopad", 1, 4, 12, 11, 4, (3, 3), group=4, strides=[2, 2]))
    c(conv_case(root, rng, "dw3x3_dil", 1, 4, 14, 40, 4, (3, 3), group=4, dilations=[2, 2],
                pads=[2, 2, 2, 2]))
    c(conv_case(root, rng, "dw3x3_s3", 1, 4, 16, 17, 4, (3, 3), group=4, strides=[3, 3],
                pads=[1, 0, 1, 1], bias=False))
    c(conv_case(root, rng, "dw2x4_s2_wide", 1, 2, 8, 66, 2, (2, 4), group=2, strides=[2, 2],
                pads=[0, 1, 1, 2]))
    # one input column, no left pad: the odd phase gets no column (seed 200264)
    c(conv_case(root, rng, "dw2x2_s2_onecol", 1, 4, 3, 1, 4, (2, 2), group=4, strides=[2, 2],
                pads=[1, 0, 1, 1]))
    c(conv_case(root, rng, "group2", 1, 8, 7, 7, 6, (3, 3), group=2, pads=[1, 1, 1, 1], act="Relu"))
    c(matmul_case(root, rng, "mm_const", (3, 37, 300), (300, 70), act="Relu"))
    c(matmul_case(root, rng, "mm_vec", (300,), (300, 33)))
    c(matmul_case(root, rng, "mm_batched", (2, 3, 25, 40), (3, 40, 47), const_b=False))
    c(matmul_case(root, rng, "mm_bcast", (4, 9, 17), (17, 5), const_b=False))
    c(matmul_case(root, rng, "mm_vec_b", (2, 6, 19), (19,), const_b=False))
    c(gemm_case(root, rng, "gemm_tb", 5, 70, 513, tb=1, cshape=(70,), act="Relu"))
    c(gemm_case(root, rng, "gemm_ta_alpha", 26, 33, 20, ta=1, alpha=0.5, beta=2.0, cshape=(26, 1)))
    c(gemm_case(root, rng, "gemm_full_c", 9, 10, 11, cshape=(9, 10), const_b=False, tb=1))
    c(gemm_case(root, rng, "gemm_scalar_c", 100, 31, 7, cshape=(1,), beta=0.0))
    # a weight packed at compile time, the depth in groups per panel (p->deep):
    # one group with a partial last depth block, partial row tiles (111 and 100
    # rows for MR 8, 6, 4) and columns; two groups (100 rows: 1024 + 76 deep),
    # on two threads as column blocks of all rows
    c(matmul_case(root, rng, "mm_deep", (3, 37, 600), (600, 70), act="Relu"))
    c(gemm_case(root, rng, "gemm_deep_groups", 100, 420, 1100, cshape=(420,), act="Relu"))
    # the last row tile of 1 to 4 rows stored straight from onnxc_ukr4 (AVX-512, AVX2):
    # a recognizer's classifier head (20 time steps) and a 9-row product with
    # its bias and Relu in the kernel
    c(matmul_case(root, rng, "mm_rows20_head", (20, 256), (256, 300), bias=True))
    c(gemm_case(root, rng, "gemm_rows9_relu", 9, 100, 70, cshape=(100,), act="Relu"))
    # Conv + Add(residual) [+ activation] fused into the conv's store
    c(conv_case(root, rng, "res_conv3x3", 1, 9, 10, 13, 30, (3, 3), pads=[1, 1, 1, 1],
                residual="left", act="Relu"))
    c(conv_case(root, rng, "res_conv1x1_batch2", 2, 40, 7, 7, 50, (1, 1), residual="right",
                bias=False, act="LeakyRelu"))
    c(conv_case(root, rng, "res_conv_s2_clip", 1, 12, 15, 15, 33, (1, 1), strides=[2, 2],
                residual="right", act="Clip"))
    # grouped (not depthwise): one product per group
    c(conv_case(root, rng, "grouped1x1_g3", 1, 24, 9, 9, 48, (1, 1), group=3, act="Relu"))
    c(conv_case(root, rng, "grouped3x3_g4_batch2", 2, 16, 10, 11, 32, (3, 3), group=4,
                pads=[1, 1, 1, 1], strides=[1, 2]))
    c(conv_case(root, rng, "grouped_w_input", 1, 12, 8, 8, 24, (3, 3), group=2,
                weights_const=False, bias=False, pads=[0, 1, 0, 1]))
    # small maps (N = OH*OW <= 256, not a multiple of 32; M a multiple of 32): Y^T
    c(conv_case(root, rng, "small_conv3x3_7x7", 1, 40, 7, 7, 64, (3, 3), pads=[1, 1, 1, 1],
                residual="left", act="Relu"))
    c(conv_case(root, rng, "small_conv1x1_s2", 1, 24, 13, 13, 32, (1, 1), strides=[2, 2],
                bias=False))
    c(conv_case(root, rng, "small_conv_dil_s2", 1, 10, 9, 11, 32, (3, 3), dilations=[2, 1],
                strides=[1, 2], pads=[2, 1, 2, 1], act="LeakyRelu"))
    # stride-1 windows, M a multiple of 32, maps over 256 pixels: the direct conv
    # computed transposed (pixel rows x 32-channel panels of W^T), tiles across
    # output rows and past the map's end, DTR_BLOCK items on the pool
    c(conv_case(root, rng, "dtr_conv3x3_res", 1, 10, 19, 23, 64, (3, 3), pads=[1, 1, 1, 1],
                residual="left", act="Relu"))
    c(conv_case(root, rng, "dtr_conv5x5_batch2", 2, 3, 20, 17, 32, (5, 5), pads=[2, 2, 2, 2],
                bias=False))
    c(conv_case(root, rng, "dtr_conv3x3_nopad", 1, 16, 17, 30, 96, (3, 3), act="LeakyRelu"))
    c(conv_case(root, rng, "dtr_conv3x3_dil", 1, 7, 25, 21, 32, (3, 3), dilations=[2, 2],
                pads=[2, 1, 2, 3], residual="right", act="Clip"))
    # stride 2: the same from the padded image's four phase planes
    c(conv_case(root, rng, "dtr_conv3x3_s2_res", 1, 12, 41, 37, 64, (3, 3), strides=[2, 2],
                pads=[1, 1, 1, 1], residual="left", act="Relu"))
    c(conv_case(root, rng, "dtr_conv7x7_s2", 1, 3, 40, 45, 32, (7, 7), strides=[2, 2],
                pads=[3, 3, 3, 3], bias=False))
    c(conv_case(root, rng, "dtr_conv1x1_s2_batch2", 2, 24, 37, 35, 64, (1, 1), strides=[2, 2]))
    c(conv_case(root, rng, "dtr_conv3x3_s2_asym", 1, 5, 34, 39, 32, (3, 3), strides=[2, 2],
                pads=[0, 1, 2, 0], act="Clip"))
    # 2-D pools: border columns by the general code, the interior in chunks of 64
    c(pool_case(root, rng, "maxpool_s2_wide", "MaxPool", 1, 3, 9, 150, (3, 3), strides=[2, 2],
                pads=[1, 1, 1, 1]))
    c(pool_case(root, rng, "avgpool_pad_nocount", "AveragePool", 2, 2, 7, 140, (3, 3),
                pads=[1, 1, 1, 1]))
    c(pool_case(root, rng, "avgpool_count_pad_ceil", "AveragePool", 1, 3, 11, 97, (3, 5),
                strides=[2, 3], pads=[1, 2, 0, 1], count_include_pad=1, ceil_mode=1))
    # ceil mode: the last window of each row and column runs past the map
    # (SqueezeNet's pools), and a 5x5 stride-1 window (YOLOv8's SPPF)
    c(pool_case(root, rng, "maxpool_ceil_55", "MaxPool", 1, 20, 55, 55, (3, 3), strides=[2, 2],
                ceil_mode=1))
    c(pool_case(root, rng, "maxpool_5x5_s1", "MaxPool", 1, 18, 20, 20, (5, 5), pads=[2, 2, 2, 2]))
    c(pool_case(root, rng, "maxpool_dil", "MaxPool", 1, 2, 12, 80, (2, 3), dilations=[2, 2],
                pads=[1, 1, 1, 2]))
    # costly enough for --threads' parallel paths (codegen/c/threads.c, docs/threads.md)
    c(conv_case(root, rng, "par_small_conv3x3_14x14", 1, 64, 14, 14, 128, (3, 3),
                pads=[1, 1, 1, 1], residual="right", act="Relu"))
    c(conv_case(root, rng, "par_grouped1x1", 1, 120, 28, 28, 240, (1, 1), group=3, act="Relu"))
    c(conv_case(root, rng, "par_grouped3x3", 1, 64, 20, 20, 64, (3, 3), group=2,
                pads=[1, 1, 1, 1]))
    c(norm_case(root, rng, "par_layernorm", "LayerNormalization", (2, 100, 333), axis=-1))
    c(norm_case(root, rng, "par_softmax", "Softmax", (3, 70, 321), axis=-1))
    c(pool_case(root, rng, "par_maxpool_stem", "MaxPool", 1, 64, 112, 112, (3, 3), strides=[2, 2],
                pads=[1, 1, 1, 1]))
    c(pool_case(root, rng, "par_avgpool", "AveragePool", 1, 96, 28, 28, (3, 3), pads=[1, 1, 1, 1]))
    c(conv_case(root, rng, "par_conv3x3", 1, 40, 30, 33, 100, (3, 3), pads=[1, 1, 1, 1], act="Relu"))
    c(conv_case(root, rng, "par_conv_batch2", 2, 24, 20, 21, 50, (3, 3), pads=[0, 1, 1, 0]))
    c(conv_case(root, rng, "par_conv1x1_wide", 1, 64, 40, 41, 700, (1, 1)))
    c(conv_case(root, rng, "par_res_conv3x3", 1, 48, 28, 29, 70, (3, 3), pads=[1, 1, 1, 1],
                residual="left", act="Relu"))
    c(conv_case(root, rng, "par_res_conv7x7_map", 1, 300, 7, 7, 520, (3, 3), pads=[1, 1, 1, 1],
                residual="right", act="Relu"))
    c(conv_case(root, rng, "par_conv_w_input", 1, 32, 24, 24, 40, (3, 3), weights_const=False,
                pads=[1, 1, 1, 1]))
    c(conv_case(root, rng, "par_dw3x3", 1, 96, 40, 40, 96, (3, 3), group=96, pads=[1, 1, 1, 1],
                act="Clip"))
    c(conv_case(root, rng, "par_conv1x1_small", 1, 160, 7, 7, 960, (1, 1), act="Relu"))
    c(conv_case(root, rng, "par_dw3x3_s2", 1, 64, 56, 57, 64, (3, 3), group=64, strides=[2, 2],
                pads=[1, 1, 1, 1]))
    c(conv_case(root, rng, "par_dw3x3_small", 1, 192, 14, 14, 192, (3, 3), group=192,
                pads=[1, 1, 1, 1], act="Relu"))
    c(matmul_case(root, rng, "par_mm_const", (1, 130, 300), (300, 1100), act="Relu"))
    c(matmul_case(root, rng, "par_mm_batched", (3, 200, 90), (3, 90, 260), const_b=False))
    c(gemm_case(root, rng, "par_gemm_tb", 200, 150, 260, tb=1, cshape=(150,)))
    # a weight over 1 MB: column blocks of all rows, A packed again per block
    # (rows not a multiple of MR, columns not of the 128/256-wide blocks)
    c(matmul_case(root, rng, "par_mm_big_weight", (1, 131, 520), (520, 1000), act="Relu"))
    # the splits of docs/threads.md: small maps in channel blocks x pixel parts,
    # row blocks of all columns (rows not a multiple of MR), matrix-vector columns
    c(conv_case(root, rng, "par_small_map_parts", 1, 576, 14, 14, 96, (1, 1), residual="right"))
    c(conv_case(root, rng, "par_small_map_parts3x3", 1, 40, 13, 13, 96, (3, 3), pads=[1, 1, 1, 1],
                act="Relu"))
    c(matmul_case(root, rng, "par_mm_rows_odd", (1, 37, 200), (200, 300)))
    c(gemm_case(root, rng, "par_gemv_tb", 1, 1000, 1280, tb=1, cshape=(1000,)))
    return cases


def check_threads(onnxc, d, threads, cpu, env, guard=False, layout=None, precision=None):
    """Builds case d as a library with --threads (and --guard) and compares its outputs (rtol 1e-3,
    the case's atol; with --precision bf16, onnx check's bf16 rule: 1/32 of each element plus 1/32
    of the output's largest magnitude)."""
    import ctypes
    import glob
    import json
    import numpy as np
    from onnx import numpy_helper, load_tensor
    name = "k"
    # one file per build: dlopen of a path this process already loaded returns
    # the library loaded first (another --cpu's, sized for another arena)
    tag = f"t{threads}_{cpu}{'_guard' if guard else ''}{'_' + layout if layout else ''}" + \
        (f"_{precision}" if precision else "")
    lib, rep = os.path.join(d, f"{tag}.so"), os.path.join(d, f"{tag}.json")
    r = subprocess.run([onnxc, d + "/model.onnx", "-o", lib, "--name", name, "--cpu", cpu,
                        "--threads", str(threads), "--memory-report", rep] + (["--guard"] if guard else []) +
                       (["--layout", layout] if layout else []) + (["--precision", precision] if precision else []),
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return (r.stdout + r.stderr).strip()[-600:]
    ins = [numpy_helper.to_array(load_tensor(f))
           for f in sorted(glob.glob(d + "/test_data_set_0/input_*.pb"))]
    refs = [numpy_helper.to_array(load_tensor(f))
            for f in sorted(glob.glob(d + "/test_data_set_0/output_*.pb"))]
    with open(rep) as f:
        arena = json.load(f)["arena_bytes"]
    raw = np.zeros(arena + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    outs = [np.empty_like(a) for a in refs]
    ins = [np.ascontiguousarray(a) for a in ins]
    fn = getattr(ctypes.CDLL(os.path.abspath(lib)), f"{name}_run_v")
    ip = (ctypes.c_void_p * max(1, len(ins)))(*[a.ctypes.data for a in ins])
    op = (ctypes.c_void_p * max(1, len(outs)))(*[a.ctypes.data for a in outs])
    for _ in range(3):  # repeated runs: the pool is reused
        rc = fn(ctypes.c_void_p(raw.ctypes.data + off), ip, op)
        if rc != 0:
            return f"run_v failed (status {rc}{': a red zone was hit' if rc == 10 else ''})"
        for o, ref in zip(outs, refs):
            with open(os.path.join(d, "atol.txt")) as f:
                atol = float(f.read())
            rtol = 1e-3
            if precision == "bf16":
                rtol = 1 / 32
                atol = max(atol, rtol * float(np.max(np.abs(ref)))) if ref.size else atol
            if not np.allclose(o, ref, rtol=rtol, atol=atol):
                return f"mismatch: max abs diff {np.max(np.abs(o - ref)):.3g}"
    return None


def native_is_avx2(env):
    """The C compiler's -march=native has AVX2 and FMA but not AVX-512F (the
    generated code's AVX2 branches, as with --cpu haswell)."""
    cc = env.get("CC", "cc")
    r = subprocess.run([cc, "-march=native", "-dM", "-E", "-x", "c", os.devnull], capture_output=True, text=True)
    macros = set(line.split()[1] for line in r.stdout.splitlines() if line.startswith("#define "))
    return r.returncode == 0 and {"__AVX2__", "__FMA__"} <= macros and "__AVX512F__" not in macros


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--out", default="build/kernel_cases")
    ap.add_argument("--cpu", default="native,haswell,generic")
    ap.add_argument("--sanitize", action="store_true")
    ap.add_argument("--cc", default=None)
    ap.add_argument("--guard-cpu", default="",
                    help="comma-separated --cpu values whose runs use --guard (docs/guard.md)")
    ap.add_argument("--threads", type=int, default=0,
                    help="also build each par_* case with --threads N and check its outputs")
    ap.add_argument("--only", default=None, help="run only the cases whose name matches this regex")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cases checked at once")
    ap.add_argument("--layout", default=None, help="onnxc --layout for every case (nchw16c: the blocked kernels)")
    ap.add_argument("--precision", default=None, choices=["bf16"],
                    help="onnxc --precision for every case (checked at onnxc check's bf16 tolerance)")
    a = ap.parse_args()
    cases = build(a.out)
    if a.only:
        cases = [d for d in cases if re.search(a.only, os.path.basename(d))]
    env = dict(os.environ)
    if a.cc:
        env["CC"] = a.cc
    cpus = a.cpu.split(",")
    if "native" in cpus and "haswell" in cpus and native_is_avx2(env):
        # the same kernel text (docs/layout.md: one AVX2 branch), so the
        # same code once more; what differs is only -march's tuning
        cpus.remove("native")
        print("--cpu native: AVX2 without AVX-512 on this machine, the kernels of --cpu haswell: not run twice")

    def one(job):
        cpu, d = job
        guard = cpu in a.guard_cpu.split(",")
        with open(os.path.join(d, "atol.txt")) as f:
            atol = f.read().strip()
        cmd = [a.onnxc, "check", d, "--cpu", cpu] + (["--guard"] if guard else [])
        # bf16: check's own tolerance for it (an explicit --atol would replace it)
        cmd += ["--precision", a.precision] if a.precision else ["--atol", atol]
        if a.layout:
            cmd += ["--layout", a.layout]
        if a.sanitize:
            cmd.append("--sanitize")
        fails = []
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            fails.append(f"FAIL [{cpu}] {os.path.basename(d)}: {(r.stdout + r.stderr).strip()[-600:]}")
        # only the par_* cases are large enough for the parallel paths
        if a.threads > 1 and os.path.basename(d).startswith("par_"):
            why = check_threads(a.onnxc, d, a.threads, cpu, env, guard, a.layout, a.precision)
            if why:
                fails.append(f"FAIL [{cpu}, --threads {a.threads}] {os.path.basename(d)}: {why}")
        return fails

    bad = 0
    with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as ex:
        for cpu in cpus:
            for fails in ex.map(one, [(cpu, d) for d in cases]):
                bad += len(fails)
                for f in fails:
                    print(f, flush=True)
            print(f"--cpu {cpu}: {len(cases)} cases run{' in guard mode' if cpu in a.guard_cpu.split(',') else ''}",
                  flush=True)
    print("all passed" if not bad else f"{bad} failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
