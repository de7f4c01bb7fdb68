#!/usr/bin/env python3
"""Seeded random ONNX models for differential testing (docs/differential-testing.md).

    gen_model.py SEED [--profile cnn|mlp|mixed|qdq] [-o model.onnx]

generate(seed) returns (model, inputs): a valid graph of 5 to 60 nodes drawn
from the operators onnxc implements, with random weights and random inputs of
moderate size (weights scaled by 1/sqrt(fan_in), divisors kept away from zero,
Exp only of bounded values), so that float results are comparable at rtol 1e-3.
The same seed always gives the same model. Every model is checked with
onnx.checker, strict shape inference (against the shapes tracked here) and
ONNX Runtime; a draw that fails any of them is replaced by the next draw of
the same seed.

Profiles: "cnn" (NCHW chains of convs, pools, normalizations, activations,
residual joins, squeeze-excite gates, a classifier head), "mlp" (Gemm/MatMul,
LayerNormalization, attention-like batched MatMuls, GELU), "mixed" (both, plus
movement ops, int64 shape paths and int8 QDQ), "qdq" (a chain of QDQ groups as
onnxruntime's quantize_static writes them: uint8 activations, int8
per-channel weights, int32 biases around Conv, depthwise Conv, Gemm, Add,
MaxPool, Concat, GlobalAveragePool, with a uint8 graph output, compared
exactly; docs/int8.md). Without --profile the seed picks one of the first
three: cnn half of the time.
"""
import argparse
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
F32, I64 = TensorProto.FLOAT, TensorProto.INT64
PROFILES = ("cnn", "mlp", "mixed", "qdq")


AVOID = set()  # operator types not to generate (--avoid: steer around a known failure class)


class Reject(Exception):
    """This draw cannot continue: draw again."""


class V:
    """A value of the graph under construction."""

    def __init__(self, name, shape, dtype=F32, bounded=False):
        self.name, self.shape, self.dtype = name, tuple(int(d) for d in shape), dtype
        self.bounded = bounded  # known to lie in [-1, 1] (Exp may take it)
        self.uses = 0


class Builder:
    def __init__(self, rng, profile):
        self.rng, self.profile = rng, profile
        self.nodes, self.inits, self.inputs, self.feeds = [], [], [], {}
        self.values = []
        self.n = 0

    # ---- naming and constants -------------------------------------------
    def fresh(self, stem):
        self.n += 1
        return f"{stem}_{self.n}"

    def const(self, arr, stem="c"):
        name = self.fresh(stem)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def weight(self, shape, fan_in):
        w = self.rng.uniform(-1.0, 1.0, size=shape) * math.sqrt(3.0 / max(fan_in, 1))
        return self.const(w.astype(np.float32), "w")

    def input(self, shape, dtype=F32, lo=-1.0, hi=1.0):
        name = self.fresh("in")
        if dtype == F32:
            data = self.rng.uniform(lo, hi, size=shape).astype(np.float32)
        else:
            data = self.rng.integers(int(lo), int(hi) + 1, size=shape).astype(np.int64)
        self.inputs.append(helper.make_tensor_value_info(name, dtype, list(shape)))
        self.feeds[name] = data
        v = V(name, shape, dtype, bounded=dtype == F32 and lo >= -1 and hi <= 1)
        self.values.append(v)
        return v

    def node(self, op, ins, shapes, dtype=F32, bounded=False, **attrs):
        """Adds a node; ins are V or initializer names; returns the output Vs."""
        names = []
        for i in ins:
            if isinstance(i, V):
                i.uses += 1
                names.append(i.name)
            else:
                names.append(i)
        outs = [V(self.fresh(op.lower()), s, dtype, bounded) for s in shapes]
        self.nodes.append(helper.make_node(op, names, [o.name for o in outs], name=self.fresh("n_" + op), **attrs))
        self.values.extend(outs)
        return outs

    def one(self, op, ins, shape, dtype=F32, bounded=False, **attrs):
        return self.node(op, ins, [shape], dtype, bounded, **attrs)[0]

    # ---- picking values ---------------------------------------------------
    def floats(self, rank=None, pred=None):
        return [v for v in self.values if v.dtype == F32 and (rank is None or len(v.shape) == rank)
                and (pred is None or pred(v))]

    def pick(self, cands, recent=0.7):
        """The newest candidate most of the time (chains), an older one otherwise (branches)."""
        if not cands:
            return None
        if self.rng.random() < recent:
            return cands[-1]
        return cands[int(self.rng.integers(0, len(cands)))]


def numel(shape):
    return int(np.prod(shape)) if shape else 1


def conv_out(size, k, s, d, pb, pe):
    return (size + pb + pe - ((k - 1) * d + 1)) // s + 1


def pool_out(size, k, s, d, pb, pe, ceil):
    span = size + pb + pe - ((k - 1) * d + 1)
    if span < 0:
        return 0
    if not ceil:
        return span // s + 1
    out = -(-span // s) + 1
    if (out - 1) * s >= size + pb:  # a window starting in the end pad: conventions differ, avoid
        return 0
    return out


# ---- 4-D (NCHW) operators ---------------------------------------------------

def op_conv(b, x):
    r = b.rng
    n, c, h, w = x.shape
    for _ in range(20):
        kh, kw = int(r.integers(1, 6)), int(r.integers(1, 6))
        if r.random() < 0.5:
            kw = kh
        s = int(r.choice([1, 1, 1, 2, 2, 3]))
        sw = s if r.random() < 0.8 else int(r.integers(1, 3))
        dil = int(r.choice([1, 1, 1, 2])) if max(kh, kw) > 1 else 1
        pads = [int(r.integers(0, max(kh, kw))) for _ in range(4)]
        if r.random() < 0.3:
            pads = [0, 0, 0, 0]
        mode = r.random()
        if mode < 0.2:  # depthwise, maybe with a channel multiplier
            group, cout = c, c * int(r.choice([1, 1, 1, 2]))
        elif mode < 0.35:
            divs = [g for g in range(2, c + 1) if c % g == 0]
            if not divs:
                group = 1
            else:
                group = int(r.choice(divs))
            cout = group * int(r.integers(1, max(2, 33 // group)))
        else:
            # 32 and 64 outputs reach the transposed small-map product (M a
            # multiple of 32; a 1x1 of them reads the image in place)
            group, cout = 1, int(r.choice([1, 2, 3, 4, 5, 7, 8, 12, 16, 24, 32, 32, 64]))
        oh = conv_out(h, kh, s, dil, pads[0], pads[2])
        ow = conv_out(w, kw, sw, dil, pads[1], pads[3])
        if oh >= 1 and ow >= 1 and cout * oh * ow * n <= 1 << 17:
            break
    else:
        raise Reject("no conv fits")
    wt = b.weight((cout, c // group, kh, kw), c // group * kh * kw)
    ins = [x, wt]
    if r.random() < 0.6:
        ins.append(b.const(r.uniform(-0.5, 0.5, size=cout).astype(np.float32), "bias"))
    attrs = dict(kernel_shape=[kh, kw], strides=[s, sw], dilations=[dil, dil], group=group)
    auto = r.random()
    if auto < 0.1 and s == 1 and sw == 1 and dil == 1:
        attrs["auto_pad"] = "SAME_UPPER" if r.random() < 0.5 else "SAME_LOWER"
        oh, ow = h, w
    else:
        attrs["pads"] = pads
    return b.one("Conv", ins, (n, cout, oh, ow), **attrs)


def op_convt(b, x):
    """ConvTranspose, 2-D over NCHW or 1-D over [N, C, L]: decoders' k = 2s
    upsampling (4x4 stride 2, pads 1), k = s, stride 1, odd kernels and
    pads. Where the output extents are multiples of the strides onnxc
    computes it as one Conv per output phase (passes/lower_convt.c); the
    other forms (groups, dilations, output_padding, ragged phases) keep the
    scatter loop."""
    r = b.rng
    if len(x.shape) not in (3, 4):
        raise Reject("not [N, C, L] or NCHW")
    sp = list(x.shape[2:])
    n, c = x.shape[0], x.shape[1]
    for _ in range(20):
        s = int(r.choice([1, 2, 2, 2, 3]))
        form = r.random()
        if form < 0.5:
            k, p = 2 * s, s // 2          # 4x4 stride 2 pads 1 and kin
        elif form < 0.7:
            k, p = s, 0                   # non-overlapping
        else:
            k, p = int(r.integers(1, 6)), int(r.integers(0, 3))
        pads = [p] * (2 * len(sp))
        if r.random() < 0.2:
            pads = [int(r.integers(0, k)) for _ in pads]
        dil = int(r.choice([1, 1, 1, 1, 2]))
        opad = int(r.integers(0, s)) if r.random() < 0.15 and s > 1 else 0
        group = int(r.choice([g for g in (2, 4) if c % g == 0] or [1])) if r.random() < 0.15 else 1
        cout = group * int(r.choice([1, 2, 4, 8, 16])) if group > 1 else int(r.choice([1, 3, 8, 16, 32]))
        nd = len(sp)
        outs = [s * (sp[i] - 1) + opad + (k - 1) * dil + 1 - pads[i] - pads[nd + i] for i in range(nd)]
        if min(outs) >= 1 and cout * numel(outs) * n <= 1 << 17:
            break
    else:
        raise Reject("no ConvTranspose fits")
    nd = len(sp)
    ins = [x, b.weight((c, cout // group) + (k,) * nd, c // group * k ** nd)]
    if r.random() < 0.6:
        ins.append(b.const(r.uniform(-0.5, 0.5, size=cout).astype(np.float32), "bias"))
    attrs = dict(kernel_shape=[k] * nd, strides=[s] * nd, dilations=[dil] * nd, pads=pads, group=group)
    if opad:
        attrs["output_padding"] = [opad] * nd
    y = b.one("ConvTranspose", ins, (n, cout) + tuple(outs), **attrs)
    if r.random() < 0.5:
        y = b.one("Relu", [y], y.shape)
    return y


def op_dyn_quant_conv(b, x):
    """quantize_dynamic's conv, which onnxc lowers to its int8 lanes kernel
    (QIntConvInteger, passes/fuse_qmatmul.c): x quantized at run time,
    ConvInteger (group 1) by a constant uint8 weight with its zero point
    (scalar, as ORT's ConvInteger needs; maybe absent), Cast, Mul by the
    scales' product, maybe a per-channel bias Add. tests/models/int_conv_cases.py
    covers per-channel zero points against numpy."""
    r = b.rng
    n, c, h, w = x.shape
    for _ in range(20):
        k = int(r.choice([1, 1, 3, 3, 5, 7]))
        s = int(r.choice([1, 1, 2]))
        pad = int(r.integers(0, k // 2 + 1))
        dil = int(r.choice([1, 1, 2])) if k > 1 else 1
        cout = int(r.choice([3, 8, 16, 24, 40, 64, 72]))
        oh, ow = conv_out(h, k, s, dil, pad, pad), conv_out(w, k, s, dil, pad, pad)
        if oh >= 1 and ow >= 1 and cout * oh * ow * n <= 1 << 17 and c * k * k <= 4096:
            break
    else:
        raise Reject("no conv fits")
    q = b.fresh("dqlc")
    sc, zp = q + "_scale", q + "_zp"
    x.uses += 1
    b.nodes.append(helper.make_node("DynamicQuantizeLinear", [x.name], [q, sc, zp], name=q))
    wq = r.integers(0, 256, size=(cout, c, k, k)).astype(np.uint8)
    ins = [q, b.const(wq, "wq"), zp]
    if r.random() < 0.85:
        ins.append(b.const(np.uint8(r.integers(100, 156)), "wz"))  # (ORT: per tensor only)
    ci = b.one("ConvInteger", ins, (n, cout, oh, ow), dtype=I32, kernel_shape=[k, k], strides=[s, s],
               pads=[pad] * 4, dilations=[dil, dil])
    f = b.one("Cast", [ci], ci.shape, to=F32)
    s_all = b.one("Mul", [sc, b.const(np.float32(r.uniform(0.0002, 0.002)), "ws")], ())
    y = b.one("Mul", [f, s_all], f.shape)
    if r.random() < 0.5:
        y = b.one("Add", [y, b.const(r.uniform(-0.5, 0.5, size=(cout, 1, 1)).astype(np.float32), "bias")], f.shape)
    return y


def op_conv1d(b, x):
    """A 1-D Conv over [N, C, L] (audio and sequence models: Silero's STFT and
    encoder, TCNs), maybe grouped, then maybe an activation. onnxc runs it as
    a 2-D conv of one row, so it reaches the packed products of 2-D convs."""
    r = b.rng
    if len(x.shape) != 3:
        raise Reject("not [N, C, L]")
    n, c, length = x.shape
    for _ in range(20):
        k = int(r.choice([1, 1, 2, 3, 3, 5, 7]))
        s = int(r.choice([1, 1, 1, 2, 3]))
        dil = int(r.choice([1, 1, 2])) if k > 1 else 1
        pads = [int(r.integers(0, k)) for _ in range(2)] if r.random() < 0.7 else [0, 0]
        divs = [g for g in range(2, c + 1) if c % g == 0]
        group = int(r.choice(divs)) if divs and r.random() < 0.2 else 1
        cout = group * int(r.choice([1, 2, 4, 8, 16, 32, 64])) if group > 1 else int(
            r.choice([1, 3, 8, 16, 32, 32, 64, 96]))
        ol = conv_out(length, k, s, dil, pads[0], pads[1])
        if ol >= 1 and cout * ol * n <= 1 << 15:
            break
    else:
        raise Reject("no conv1d fits")
    if r.random() < 0.3:
        # as tf2onnx writes a Keras Conv1D: a 2-D conv of k x 1 between an
        # Unsqueeze and a Squeeze, the bias an Add of [C, 1] after it (onnxc
        # sinks the Squeeze below the Add and the activation, into the conv)
        x4 = b.one("Unsqueeze", [x, b.const(np.array([3], np.int64), "axes")], (n, c, length, 1))
        y4 = b.one("Conv", [x4, b.weight((cout, c // group, k, 1), c // group * k)], (n, cout, ol, 1),
                   kernel_shape=[k, 1], strides=[s, 1], dilations=[dil, 1], pads=[pads[0], 0, pads[1], 0],
                   group=group)
        y = b.one("Squeeze", [y4, b.const(np.array([3], np.int64), "axes")], (n, cout, ol))
        y = b.one("Add", [y, b.const(r.uniform(-0.5, 0.5, size=(cout, 1)).astype(np.float32), "bias")], y.shape)
        if r.random() < 0.5:
            y = op_gelu(b, y)
        return y
    ins = [x, b.weight((cout, c // group, k), c // group * k)]
    if r.random() < 0.6:
        ins.append(b.const(r.uniform(-0.5, 0.5, size=cout).astype(np.float32), "bias"))
    y = b.one("Conv", ins, (n, cout, ol), kernel_shape=[k], strides=[s], dilations=[dil], pads=pads,
              group=group)
    if r.random() < 0.5:
        y = b.one(str(r.choice(["Relu", "Tanh", "Sigmoid"])), [y], y.shape)
    return y


def op_rnn(b, x):
    """LSTM, GRU or RNN over [seq, batch, in] (a VAD's or a tagger's), one or
    two directions; continues with Y_h ([dirs, batch, hid]), Y left as a
    side output some of the time. A [batch, in] value runs one step and
    continues as [batch, dirs * hid]."""
    r = b.rng
    flat = len(x.shape) == 2  # [batch, in]: one step, Unsqueezed, and Y_h squeezed back
    if flat:
        x = b.one("Unsqueeze", [x, b.const(np.array([0], np.int64), "axes")], (1,) + x.shape)
    if len(x.shape) != 3:
        raise Reject("not [seq, batch, in]")
    seq, batch, inp = x.shape
    op = str(r.choice(["LSTM", "LSTM", "GRU", "RNN"]))
    g = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    hid = int(r.choice([4, 8, 16, 20, 25, 32, 48]))
    direction = str(r.choice(["forward", "forward", "reverse", "bidirectional"]))
    # 128 now and then: a bidirectional node that large runs its directions
    # side by side at --threads 2 (emit_rnn.c), the others do not. Drawn from
    # a stream of its own, so the seeds' other draws (CI's fixed seed ranges)
    # stay what they were
    if np.random.default_rng([seq, batch, inp, hid, len(b.nodes), 128]).random() < 0.15:
        hid = 128
    nd = 2 if direction == "bidirectional" else 1
    ins = [x, b.weight((nd, g * hid, inp), inp), b.weight((nd, g * hid, hid), hid)]
    if r.random() < 0.7:
        ins.append(b.const(r.uniform(-0.3, 0.3, size=(nd, 2 * g * hid)).astype(np.float32), "bias"))
    attrs = dict(hidden_size=hid, direction=direction)
    if op == "GRU" and r.random() < 0.5:
        attrs["linear_before_reset"] = 1
    if r.random() < 0.3:
        while len(ins) < 5:
            ins.append("")
        ins.append(b.input((nd, batch, hid), lo=-0.5, hi=0.5))
    outs = b.node(op, ins, [(seq, nd, batch, hid), (nd, batch, hid)], bounded=True, **attrs)
    if flat:
        return b.one("Reshape", [outs[1], b.const(np.array([batch, nd * hid], np.int64), "shape")],
                     (batch, nd * hid), bounded=True)
    if r.random() < 0.5:  # Y read back as [seq, batch, dirs * hid]
        y = b.one("Transpose", [outs[0]], (seq, batch, nd, hid), bounded=True, perm=[0, 2, 1, 3])
        return b.one("Reshape", [y, b.const(np.array([seq, batch, nd * hid], np.int64), "shape")],
                     (seq, batch, nd * hid), bounded=True)
    return outs[1]


def op_conv_block(b, x):
    """The unit of most CNNs: Conv -> [BatchNormalization] -> activation, the
    pattern whose epilogues onnxc fuses."""
    y = op_conv(b, x)
    if b.rng.random() < 0.5:
        y = op_bn(b, y)
    act = str(b.rng.choice(["Relu", "LeakyRelu", "LeakyRelu", "Clip", "HardSwish", "Sigmoid", "Tanh",
                            "HardSigmoid", "none"]))
    if act != "none":
        y = op_unary(b, y, act)
    return y


def op_bn(b, x):
    c = x.shape[1]
    r = b.rng
    consts = [b.const(r.uniform(lo, hi, size=c).astype(np.float32), "bn")
              for lo, hi in ((0.5, 1.5), (-0.5, 0.5), (-0.5, 0.5), (0.5, 2.0))]
    return b.one("BatchNormalization", [x] + consts, x.shape, epsilon=float(r.choice([1e-5, 1e-3])))


def op_pool(b, x):
    r = b.rng
    n, c, h, w = x.shape
    op = "MaxPool" if r.random() < 0.6 else "AveragePool"
    for _ in range(20):
        k = [int(r.integers(1, 4)), int(r.integers(1, 4))]
        if r.random() < 0.6:
            k = [k[0], k[0]]
        s = [int(r.integers(1, 3)), int(r.integers(1, 3))]
        if r.random() < 0.5:
            s = list(k)
        pads = [int(r.integers(0, k[i % 2])) if r.random() < 0.4 else 0 for i in range(4)]
        ceil = int(r.random() < 0.25)
        dil = [1, 1]
        if op == "MaxPool" and r.random() < 0.15:
            dil = [2, 2]
        oh = pool_out(h, k[0], s[0], dil[0], pads[0], pads[2], ceil)
        ow = pool_out(w, k[1], s[1], dil[1], pads[1], pads[3], ceil)
        if oh >= 1 and ow >= 1:
            break
    else:
        raise Reject("no pool fits")
    attrs = dict(kernel_shape=k, strides=s, pads=pads, ceil_mode=ceil)
    if dil != [1, 1]:
        attrs["dilations"] = dil
    if op == "AveragePool" and r.random() < 0.4:
        attrs["count_include_pad"] = 1
    return b.one(op, [x], (n, c, oh, ow), bounded=x.bounded and op == "MaxPool", **attrs)


def op_global_pool(b, x):
    op = "GlobalAveragePool" if b.rng.random() < 0.7 else "GlobalMaxPool"
    n, c = x.shape[:2]
    return b.one(op, [x], (n, c) + (1,) * (len(x.shape) - 2), bounded=x.bounded)


def op_resize(b, x):
    r = b.rng
    n, c, h, w = x.shape
    if h * w * 4 * c * n > 1 << 16:
        return None
    mode = "nearest" if r.random() < 0.5 else "linear"
    ctm = str(r.choice(["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"]
                       if mode == "linear" else ["asymmetric", "half_pixel"]))
    attrs = dict(mode=mode, coordinate_transformation_mode=ctm)
    if mode == "nearest":
        attrs["nearest_mode"] = "floor" if ctm == "asymmetric" else str(r.choice(["floor", "round_prefer_floor"]))
    if r.random() < 0.6:
        f = [float(r.choice([1, 2, 2, 3])), float(r.choice([1, 2, 2, 3]))]
        scales = b.const(np.array([1, 1] + f, np.float32), "scales")
        shape = (n, c, int(h * f[0]), int(w * f[1]))
        return b.one("Resize", [x, "", scales], shape, bounded=x.bounded, **attrs)
    oh, ow = int(r.integers(max(1, h // 2), 2 * h + 2)), int(r.integers(max(1, w // 2), 2 * w + 2))
    if mode == "nearest" and (nearest_tie(h, oh, ctm) or nearest_tie(w, ow, ctm)):
        return None  # ONNX Runtime's float32 scale and exact arithmetic round such a point apart
    sizes = b.const(np.array([n, c, oh, ow], np.int64), "sizes")
    return b.one("Resize", [x, "", "", sizes], (n, c, oh, ow), bounded=x.bounded, **attrs)


def nearest_tie(n_in, n_out, ctm):
    """Whether some output index maps exactly onto a rounding boundary of
    nearest Resize with sizes (for half_pixel a .5 or an integer, for
    asymmetric floor an integer, reached through an inexact float scale)."""
    from fractions import Fraction
    for i in range(n_out):
        if ctm == "half_pixel":
            c = Fraction(2 * i + 1, 2) * Fraction(n_in, n_out) - Fraction(1, 2)
            if c.denominator <= 2 and n_in != n_out:  # ties, and integers reached by an inexact scale
                return True
        else:
            c = Fraction(i * n_in, n_out)
            if i and c.denominator == 1 and n_out % n_in:
                return True
    return False


def op_se(b, x):
    """Squeeze-excite: x * Sigmoid(Conv1x1(Relu(Conv1x1(GAP(x)))))."""
    n, c = x.shape[:2]
    g = b.one("GlobalAveragePool", [x], (n, c, 1, 1))
    mid = max(1, c // 4)
    h = b.one("Conv", [g, b.weight((mid, c, 1, 1), c)], (n, mid, 1, 1), kernel_shape=[1, 1])
    h = b.one("Relu", [h], h.shape)
    h = b.one("Conv", [h, b.weight((c, mid, 1, 1), mid), b.const(np.zeros(c, np.float32), "bias")], (n, c, 1, 1),
              kernel_shape=[1, 1])
    gate = b.one("HardSigmoid" if b.rng.random() < 0.3 else "Sigmoid", [h], h.shape, bounded=True)
    return b.one("Mul", [x, gate], x.shape, bounded=x.bounded)


def op_head(b, x):
    """Classifier head: GlobalAveragePool -> Flatten -> Gemm -> Softmax."""
    n, c = x.shape[:2]
    g = b.one("GlobalAveragePool", [x], (n, c, 1, 1))
    f = b.one("Flatten", [g], (n, c), axis=1)
    k = int(b.rng.choice([3, 5, 10, 15]))
    y = b.one("Gemm", [f, b.weight((k, c), c), b.const(b.rng.uniform(-0.5, 0.5, k).astype(np.float32), "bias")],
              (n, k), transB=1)
    return b.one("Softmax", [y], (n, k), bounded=True, axis=1)


def op_concat_c(b, x):
    others = b.floats(4, lambda v: v is not x and v.shape[0] == x.shape[0] and v.shape[2:] == x.shape[2:])
    y = b.pick(others, 0.3) or x
    return b.one("Concat", [x, y], (x.shape[0], x.shape[1] + y.shape[1]) + x.shape[2:],
                 bounded=x.bounded and y.bounded, axis=1)


def op_split(b, x):
    r = b.rng
    axis = int(r.integers(1, len(x.shape)))
    d = x.shape[axis]
    if d < 2:
        return None
    k = int(r.integers(2, min(d, 3) + 1))
    cuts = sorted(r.choice(np.arange(1, d), size=k - 1, replace=False).tolist())
    parts = [hi - lo for lo, hi in zip([0] + cuts, cuts + [d])]
    shapes = [x.shape[:axis] + (p,) + x.shape[axis + 1:] for p in parts]
    outs = b.node("Split", [x, b.const(np.array(parts, np.int64), "split")], shapes, bounded=x.bounded, axis=axis)
    if r.random() < 0.5:
        return outs[int(r.integers(0, len(outs)))]
    # every part read: each through an activation or as it is, joined again
    # in order or reversed (parts that are views of x; a run that is one slice)
    parts = [p if r.random() < 0.4 else op_unary(b, p, str(r.choice(["Relu", "Sigmoid", "Neg"]))) for p in outs]
    if r.random() < 0.3:
        parts = parts[::-1]
    shape = x.shape[:axis] + (sum(p.shape[axis] for p in parts),) + x.shape[axis + 1:]
    return b.one("Concat", parts, shape, bounded=all(p.bounded for p in parts), axis=axis)


def op_siblings(b, x):
    """Inception: two to four convs of one kernel and stride on x, each with
    its own BatchNormalization and activation (the same one most of the time),
    joined by a channel Concat: as they are (in order or reversed), each
    through a 3x3 conv but the first (Inception's reduce convs), or each
    through an activation."""
    r = b.rng
    n, c, h, w = x.shape
    k = int(r.choice([1, 1, 1, 3]))
    s = int(r.choice([1, 1, 2]))
    oh, ow = conv_out(h, k, s, 1, k // 2, k // 2), conv_out(w, k, s, 1, k // 2, k // 2)
    if oh < 1 or ow < 1:
        raise Reject("no sibling convs fit")
    same_act = r.random() < 0.7
    act0 = str(r.choice(["Relu", "Relu", "LeakyRelu", "Clip", "Sigmoid", "none"]))
    ys = []
    for _ in range(int(r.integers(2, 5))):
        cout = int(r.choice([1, 2, 3, 4, 8, 16, 32]))
        if cout * oh * ow * n > 1 << 16:
            raise Reject("sibling convs too large")
        ins = [x, b.weight((cout, c, k, k), c * k * k)]
        if r.random() < 0.6:
            ins.append(b.const(r.uniform(-0.5, 0.5, size=cout).astype(np.float32), "bias"))
        y = b.one("Conv", ins, (n, cout, oh, ow), kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4)
        if r.random() < 0.4:
            y = op_bn(b, y)
        act = act0 if same_act else str(r.choice(["Relu", "LeakyRelu", "Clip", "Sigmoid", "none"]))
        if act != "none":
            y = op_unary(b, y, act)
        ys.append(y)
    mode = r.random()
    if mode < 0.4:
        parts = ys if r.random() < 0.7 else ys[::-1]
    elif mode < 0.7:
        parts = [ys[0]]
        for y in ys[1:]:
            co = int(r.choice([1, 2, 4, 8]))
            parts.append(b.one("Conv", [y, b.weight((co, y.shape[1], 3, 3), y.shape[1] * 9)], (n, co, oh, ow),
                               kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    else:
        parts = [op_unary(b, y, str(r.choice(["Relu", "Neg", "Tanh"]))) for y in ys]
    shape = (n, sum(p.shape[1] for p in parts), oh, ow)
    return b.one("Concat", parts, shape, bounded=all(p.bounded for p in parts), axis=1)


def ew_chain(b, x):
    """One or two elementwise steps on x: an activation or arithmetic with a
    constant (per-channel, scalar or full)."""
    r = b.rng
    y = x
    for _ in range(int(r.integers(1, 3))):
        if r.random() < 0.5:
            y = op_unary(b, y)
        else:
            op = str(r.choice(["Add", "Sub", "Mul", "Max", "Min"]))
            c = b.const(r.uniform(-1.0, 1.0, size=per_channel_shape(b, y)).astype(np.float32), "k")
            y = b.one(op, [y, c] if r.random() < 0.7 else [c, y], y.shape,
                      bounded=y.bounded and op in ("Max", "Min", "Mul"))
    return y


def op_ew_siblings(b, x):
    """Sibling elementwise consumers of one value, which fuse-elementwise
    merges into one kernel of several outputs: two or three short chains on x
    joined (a sum, a product, a Concat), or left as side outputs, one of them
    sometimes read by a Softmax before its siblings are computed; or a YOLO
    box decoding on two equal slices of x (anchor - lt, anchor + rb, then
    their difference and their mean, concatenated)."""
    r = b.rng
    if r.random() < 0.3:
        axes = [a for a in range(1, len(x.shape)) if x.shape[a] >= 2]
        if not axes:
            raise Reject("nothing to halve")
        axis = int(r.choice(axes))
        half = x.shape[axis] // 2
        shape = x.shape[:axis] + (half,) + x.shape[axis + 1:]

        def sl(start):
            return b.one("Slice", [x, b.const(np.array([start], np.int64), "starts"),
                                   b.const(np.array([start + half], np.int64), "ends"),
                                   b.const(np.array([axis], np.int64), "axes")], shape, bounded=x.bounded)
        lt, rb = sl(0), sl(half)
        anchor = b.const(r.uniform(0.0, 4.0, size=shape[1:]).astype(np.float32), "anchor")
        x1 = b.one("Sub", [anchor, lt], shape)
        x2 = b.one("Add", [anchor, rb], shape)
        wh = b.one("Sub", [x2, x1], shape)
        c = b.one("Div", [b.one("Add", [x1, x2], shape), b.const(np.array(2.0, np.float32), "two")], shape)
        return b.one("Concat", [c, wh] if r.random() < 0.7 else [wh, c], x.shape[:axis] + (2 * half,) +
                     x.shape[axis + 1:], axis=axis)
    ys = []
    early = r.random() < 0.3
    for i in range(int(r.integers(2, 4))):
        y = ew_chain(b, x)
        if i == 0 and early:  # read before its siblings exist: the merge moves the reader
            y = b.one("Softmax", [y], y.shape, bounded=True, axis=-1)
        ys.append(y)
    mode = r.random()
    if mode < 0.4:
        out = ys[0]
        for y in ys[1:]:
            op = str(r.choice(["Add", "Mul", "Max"]))
            out = b.one(op, [out, y], x.shape, bounded=out.bounded and y.bounded)
        return out
    if mode < 0.7:
        axis = len(x.shape) - 1
        return b.one("Concat", ys, x.shape[:axis] + (x.shape[axis] * len(ys),), axis=axis,
                     bounded=all(y.bounded for y in ys))
    return ys[0]  # the others are side outputs


def op_slice(b, x):
    r = b.rng
    if len(x.shape) < 2:
        return None
    axis = int(r.integers(1, len(x.shape)))
    d = x.shape[axis]
    step = int(r.choice([1, 1, 1, 2, -1]))
    if step > 0:
        start = int(r.integers(0, max(1, d // 2) + 0))
        end = int(r.integers(start + 1, d + 1))
        length = -(-(end - start) // step)
        ends = end if r.random() < 0.8 else 1 << 40
        if ends != end:
            length = -(-(d - start) // step)
    else:
        start, end = d - 1, -(1 << 40)
        length = d
    starts = b.const(np.array([start], np.int64), "starts")
    endc = b.const(np.array([ends if step > 0 else end], np.int64), "ends")
    ax = b.const(np.array([axis if r.random() < 0.7 else axis - len(x.shape)], np.int64), "axes")
    st = b.const(np.array([step], np.int64), "steps")
    shape = x.shape[:axis] + (length,) + x.shape[axis + 1:]
    return b.one("Slice", [x, starts, endc, ax, st], shape, bounded=x.bounded)


def op_gather(b, x):
    r = b.rng
    axis = int(r.integers(1, len(x.shape)))
    d = x.shape[axis]
    k = int(r.integers(1, d + 2))
    idx = r.integers(-d, d, size=k).astype(np.int64)
    if r.random() < 0.2:
        idx = np.array(int(idx[0]), np.int64)  # scalar index: drops the axis
        shape = x.shape[:axis] + x.shape[axis + 1:]
    else:
        shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
    return b.one("Gather", [x, b.const(idx, "idx")], shape, bounded=x.bounded, axis=axis)


def op_transpose(b, x):
    perm = [int(p) for p in b.rng.permutation(len(x.shape))]
    if len(x.shape) == 4 and b.rng.random() < 0.5:
        perm = [0] + [int(p) + 1 for p in b.rng.permutation(3)]
    return b.one("Transpose", [x], tuple(x.shape[p] for p in perm), bounded=x.bounded, perm=perm)


def op_reshape(b, x):
    r = b.rng
    s = list(x.shape)
    choice = r.random()
    if choice < 0.4 and len(s) >= 3:  # merge two neighbouring dims
        i = int(r.integers(1, len(s) - 1))
        new = s[:i] + [s[i] * s[i + 1]] + s[i + 2:]
    elif choice < 0.7:  # split a dim by a divisor
        cands = [(i, f) for i in range(1, len(s)) for f in range(2, s[i]) if s[i] % f == 0]
        if not cands or len(s) >= 5:
            return None
        i, f = cands[int(r.integers(0, len(cands)))]
        new = s[:i] + [f, s[i] // f] + s[i + 1:]
    else:
        new = [s[0], numel(s[1:])]
    spec = list(new)
    if r.random() < 0.4:
        spec[int(r.integers(1, len(spec)))] = -1
    if r.random() < 0.3 and spec[0] == s[0]:
        spec[0] = 0
    return b.one("Reshape", [x, b.const(np.array(spec, np.int64), "shape")], tuple(new), bounded=x.bounded)


def op_shape_reshape(b, x):
    """The int64 path of exports: Shape -> Gather -> (Mul/Add) -> Concat -> Reshape."""
    r = b.rng
    rank = len(x.shape)
    sh = b.one("Shape", [x], (rank,), dtype=I64)
    n0 = b.one("Gather", [sh, b.const(np.array([0], np.int64), "idx")], (1,), dtype=I64, axis=0)
    if r.random() < 0.5 and rank >= 3:
        d1 = b.one("Gather", [sh, b.const(np.array([1], np.int64), "idx")], (1,), dtype=I64, axis=0)
        one = b.const(np.array([1], np.int64), "one")
        d1 = b.one("Mul", [d1, one], (1,), dtype=I64)
        zero = b.const(np.array([0], np.int64), "zero")
        d1 = b.one("Add", [d1, zero], (1,), dtype=I64)
        spec = b.one("Concat", [n0, d1, b.const(np.array([-1], np.int64), "m1")], (3,), dtype=I64, axis=0)
        new = (x.shape[0], x.shape[1], numel(x.shape[2:]))
    else:
        spec = b.one("Concat", [n0, b.const(np.array([-1], np.int64), "m1")], (2,), dtype=I64, axis=0)
        new = (x.shape[0], numel(x.shape[1:]))
    return b.one("Reshape", [x, spec], new, bounded=x.bounded)


def op_flatten(b, x):
    axis = int(b.rng.integers(1, len(x.shape)))
    return b.one("Flatten", [x], (numel(x.shape[:axis]), numel(x.shape[axis:])), bounded=x.bounded, axis=axis)


def op_unsqueeze(b, x):
    if len(x.shape) >= 5:
        return None
    ax = int(b.rng.integers(1, len(x.shape) + 1))
    y = b.one("Unsqueeze", [x, b.const(np.array([ax], np.int64), "axes")], x.shape[:ax] + (1,) + x.shape[ax:],
              bounded=x.bounded)
    if b.rng.random() < 0.5:  # and back
        y = b.one("Squeeze", [y, b.const(np.array([ax], np.int64), "axes")], x.shape, bounded=x.bounded)
    return y


def op_squeeze(b, x):
    ones = [i for i, d in enumerate(x.shape) if d == 1 and i > 0]
    if not ones:
        return None
    ax = int(b.rng.choice(ones))
    return b.one("Squeeze", [x, b.const(np.array([ax], np.int64), "axes")], x.shape[:ax] + x.shape[ax + 1:],
                 bounded=x.bounded)


def op_reduce(b, x):
    r = b.rng
    op = str(r.choice(["ReduceMean", "ReduceSum", "ReduceMax"]))
    rank = len(x.shape)
    k = int(r.integers(1, rank))
    axes = sorted(int(a) for a in r.choice(np.arange(1, rank), size=k, replace=False))
    keep = int(r.random() < 0.6)
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keep else \
        tuple(d for i, d in enumerate(x.shape) if i not in axes)
    if not shape:
        return None
    if op == "ReduceSum":
        return b.one(op, [x, b.const(np.array(axes, np.int64), "axes")], shape, keepdims=keep)
    return b.one(op, [x], shape, bounded=x.bounded, axes=axes, keepdims=keep)


def op_softmax(b, x):
    axis = int(b.rng.integers(-len(x.shape), len(x.shape)))
    return b.one("Softmax", [x], x.shape, bounded=True, axis=axis)


def op_layernorm(b, x):
    r = b.rng
    axis = -1 if r.random() < 0.7 or len(x.shape) < 3 else -2
    norm = x.shape[axis:]
    if numel(norm) < 2:
        return None
    ins = [x, b.const(r.uniform(0.5, 1.5, size=norm).astype(np.float32), "gamma")]
    if r.random() < 0.8:
        ins.append(b.const(r.uniform(-0.5, 0.5, size=norm).astype(np.float32), "beta"))
    if r.random() < 0.25:
        return rmsnorm_primitives(b, x, axis, ins[1], r)
    if r.random() < 0.4:
        return layernorm_primitives(b, x, axis, ins[1:], r)
    return b.one("LayerNormalization", ins, x.shape, axis=axis, epsilon=1e-5)


def rmsnorm_primitives(b, x, axis, gamma, r):
    """RMSNorm as LLaMA- and T5-style exports write it: the square (Pow or
    Mul(x, x)), ReduceMean, Add eps, Sqrt, then Div(x, s), or x times
    Reciprocal(s) or Div(1, s); the scale sometimes left out."""
    rank = len(x.shape)
    axes = list(range(rank + axis, rank))
    kept = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    if r.random() < 0.6:
        p = b.one("Pow", [x, b.const(np.array(2.0, np.float32), "two")], x.shape)
    else:
        p = b.one("Mul", [x, x], x.shape)
    v = b.one("ReduceMean", [p], kept, axes=axes, keepdims=1)
    eps = b.const(np.array(float(r.choice([1e-5, 1e-6])), np.float32), "eps")
    e = b.one("Add", [v, eps] if r.random() < 0.7 else [eps, v], kept)
    s = b.one("Sqrt", [e], kept)
    form = r.random()
    if form < 0.3:
        y = b.one("Div", [x, s], x.shape)
    else:
        if form < 0.7:
            i = b.one("Reciprocal", [s], kept)
        else:
            i = b.one("Div", [b.const(np.array(1.0, np.float32), "one"), s], kept)
        y = b.one("Mul", [x, i] if r.random() < 0.5 else [i, x], x.shape)
    if r.random() < 0.8:
        y = b.one("Mul", [gamma, y] if r.random() < 0.6 else [y, gamma], x.shape)
    return y


def layernorm_primitives(b, x, axis, params, r):
    """LayerNorm as exporters write it before opset 17 (ReduceMean, Sub, Pow,
    ReduceMean, Add, Sqrt, Div, Mul, Add); sometimes Mul(c, c) for the square,
    the scale or shift left out, or operands swapped."""
    rank = len(x.shape)
    axes = list(range(rank + axis, rank))
    kept = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    m = b.one("ReduceMean", [x], kept, axes=axes, keepdims=1)
    c = b.one("Sub", [x, m], x.shape)
    if r.random() < 0.7:
        p = b.one("Pow", [c, b.const(np.array(2.0, np.float32), "two")], x.shape)
    else:
        p = b.one("Mul", [c, c], x.shape)
    v = b.one("ReduceMean", [p], kept, axes=axes, keepdims=1)
    eps = b.const(np.array(float(r.choice([1e-5, 1e-6, 1e-12])), np.float32), "eps")
    e = b.one("Add", [v, eps] if r.random() < 0.7 else [eps, v], kept)
    s = b.one("Sqrt", [e], kept)
    y = b.one("Div", [c, s], x.shape)
    if r.random() < 0.8:
        y = b.one("Mul", [y, params[0]] if r.random() < 0.7 else [params[0], y], x.shape)
        if len(params) > 1:
            y = b.one("Add", [y, params[1]] if r.random() < 0.7 else [params[1], y], x.shape)
    return y


UNARY = ["Relu", "LeakyRelu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Erf", "Exp", "Abs", "Neg",
         "Elu", "Selu", "Celu"]
BOUNDING = {"Sigmoid", "HardSigmoid", "Tanh", "Erf", "Clip"}


def op_unary(b, x, op=None):
    r = b.rng
    op = op or str(r.choice([u for u in UNARY if u not in AVOID]))
    if op in AVOID:
        op = "Relu" if "Relu" not in AVOID else "Abs"
    attrs, ins = {}, [x]
    if op == "Exp" and not x.bounded:
        x = b.one("Tanh", [x], x.shape, bounded=True)
        ins = [x]
    if op == "LeakyRelu":
        attrs["alpha"] = float(r.choice([0.01, 0.1, 0.2]))
    elif op == "Clip":
        lo = float(r.choice([-1.0, 0.0, -6.0]))
        ins += [b.const(np.array(lo, np.float32), "lo"), b.const(np.array(lo + float(r.choice([1, 2, 6])), np.float32),
                                                                   "hi")]
    elif op in ("Elu", "Celu") and r.random() < 0.5:
        attrs["alpha"] = float(r.choice([0.5, 2.0]))
    elif op == "HardSigmoid" and r.random() < 0.5:
        attrs.update(alpha=0.2, beta=0.5)
    bounded = op in BOUNDING and not (op == "Clip" and ins[2:] and False)
    if op == "Clip":
        bounded = x.bounded
    if op in ("Abs", "Neg", "Relu", "LeakyRelu"):
        bounded = x.bounded
    return b.one(op, ins, x.shape, bounded=bounded, **attrs)


def op_gelu(b, x):
    h = b.one("Mul", [x, b.const(np.array(1 / math.sqrt(2), np.float32), "s")], x.shape)
    e = b.one("Erf", [h], x.shape, bounded=True)
    e = b.one("Add", [e, b.const(np.array(1.0, np.float32), "one")], x.shape)
    m = b.one("Mul", [x, e], x.shape)
    return b.one("Mul", [m, b.const(np.array(0.5, np.float32), "half")], x.shape)


def op_cast(b, x):
    """Casts inside elementwise chains (fused into one kernel since they are
    elementwise too): a float64 detour, an integer path, and the attention
    mask pattern (an int64 0/1 input cast to float, 1 - m, times a large
    negative). Float -> integer casts only see graph inputs times powers of
    two (exact), so truncation cannot split the engines on rounding."""
    r = b.rng
    kind = r.random()
    if kind < 0.35:
        d = b.one("Cast", [x], x.shape, dtype=TensorProto.DOUBLE, to=TensorProto.DOUBLE)
        d = b.one("Mul", [d, b.const(np.array(r.uniform(0.5, 2.0)), "dk")], x.shape, dtype=TensorProto.DOUBLE)
        d = b.one("Add", [d, b.const(r.uniform(-1, 1, size=x.shape[-1:]), "db")], x.shape, dtype=TensorProto.DOUBLE)
        return b.one("Cast", [d], x.shape, to=F32)
    if kind < 0.7:
        i = b.input(x.shape, F32, -4.0, 4.0)
        s = b.one("Mul", [i, b.const(np.array(4.0, np.float32), "four")], x.shape)
        it = int(r.choice([TensorProto.INT32, TensorProto.INT64, TensorProto.INT8]))
        q = b.one("Cast", [s], x.shape, dtype=it, to=it)
        k = b.const(np.array(int(r.integers(-3, 4)), helper.tensor_dtype_to_np_dtype(it)), "ik")
        q = b.one("Add", [q, k], x.shape, dtype=it)
        f = b.one("Cast", [q], x.shape, to=F32)
        f = b.one("Mul", [f, b.const(np.array(0.25, np.float32), "quarter")], x.shape, bounded=False)
        return b.one("Add", [x, f] if r.random() < 0.5 else [f, x], x.shape)
    shape = x.shape[-1:] if r.random() < 0.5 else x.shape
    m = b.input(shape, I64, 0, 1)
    if r.random() < 0.5:
        mb = b.one("Cast", [m], shape, dtype=TensorProto.BOOL, to=TensorProto.BOOL)
        mb = b.one("Not", [mb], shape, dtype=TensorProto.BOOL)
        mf = b.one("Cast", [mb], shape, to=F32)
    else:
        mf = b.one("Cast", [m], shape, to=F32)
        mf = b.one("Sub", [b.const(np.array(1.0, np.float32), "one"), mf], shape)
    mf = b.one("Mul", [mf, b.const(np.array(-30.0, np.float32), "neg")], shape)
    return b.one("Add", [x, mf], x.shape)


def bcast_shape(a, c):
    rank = max(len(a), len(c))
    a, c = (1,) * (rank - len(a)) + a, (1,) * (rank - len(c)) + c
    out = []
    for p, q in zip(a, c):
        if p != q and 1 not in (p, q):
            return None
        out.append(max(p, q))
    return tuple(out)


def op_binary(b, x):
    r = b.rng
    op = str(r.choice(["Add", "Add", "Sub", "Mul", "Mul", "Div", "Max", "Min"]))
    rank = len(x.shape)
    kind = r.random()
    if op == "Div":  # a constant divisor away from zero
        shape = per_channel_shape(b, x)
        d = r.uniform(0.5, 2.0, size=shape) * r.choice([-1, 1], size=shape)
        return b.one("Div", [x, b.const(d.astype(np.float32), "div")], x.shape, bounded=False)
    if kind < 0.45:  # a joined branch: same or broadcastable shape
        others = b.floats(None, lambda v: v is not x and bcast_shape(v.shape, x.shape) == x.shape)
        y = b.pick(others, 0.3)
        if y is not None:
            if y.shape != x.shape and r.random() < 0.4:  # as exporters expand masks first
                y = b.one("Expand", [y, b.const(np.array(x.shape, np.int64), "shape")], x.shape, bounded=y.bounded)
            ins = [x, y] if r.random() < 0.7 else [y, x]
            return b.one(op, ins, x.shape, bounded=x.bounded and y.bounded and op in ("Max", "Min"))
    shape = per_channel_shape(b, x)
    c = r.uniform(-1.0, 1.0, size=shape).astype(np.float32)
    ins = [x, b.const(c, "k")] if r.random() < 0.8 else [b.const(c, "k"), x]
    return b.one(op, ins, x.shape, bounded=x.bounded and op in ("Max", "Min", "Mul"))


def per_channel_shape(b, x):
    r = b.rng.random()
    rank = len(x.shape)
    if r < 0.25:
        return ()
    if r < 0.55 and rank == 4:
        return (x.shape[1], 1, 1) if b.rng.random() < 0.6 else (1, x.shape[1], 1, 1)
    if r < 0.75:
        return (x.shape[-1],)
    return x.shape[1:]


def op_residual(b, x):
    """A residual block: y = x + Conv(Act(Conv(x))) with shapes kept."""
    n, c, h, w = x.shape
    k = int(b.rng.choice([1, 3]))
    y = b.one("Conv", [x, b.weight((c, c, k, k), c * k * k)], x.shape, kernel_shape=[k, k], pads=[k // 2] * 4)
    y = op_unary(b, y, str(b.rng.choice(["Relu", "LeakyRelu", "HardSwish", "Clip"])))
    y = b.one("Conv", [y, b.weight((c, 1, 3, 3), 9), b.const(np.zeros(c, np.float32), "bias")], x.shape,
              kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=c)
    return b.one("Add", [x, y] if b.rng.random() < 0.5 else [y, x], x.shape)


# ---- 2-D / 3-D operators ------------------------------------------------------

def op_gemm(b, x):
    r = b.rng
    if len(x.shape) != 2:
        return None
    m, k = x.shape
    n = int(r.choice([1, 3, 4, 8, 16, 17, 32, 64]))
    ta, tb = 0, int(r.random() < 0.5)
    a = x
    if r.random() < 0.2:
        a = b.one("Transpose", [x], (k, m), perm=[1, 0])
        ta = 1
    wshape = (n, k) if tb else (k, n)
    ins = [a, b.weight(wshape, k)]
    if r.random() < 0.7:
        cshape = [(n,), (1, n), (m, n), ()][int(r.integers(0, 4))]
        ins.append(b.const(r.uniform(-0.5, 0.5, size=cshape).astype(np.float32), "bias"))
    attrs = dict(transA=ta, transB=tb)
    if r.random() < 0.3:
        attrs.update(alpha=float(r.choice([0.5, 2.0])), beta=float(r.choice([0.5, 1.0])))
    return b.one("Gemm", ins, (m, n), **attrs)


def op_matmul(b, x):
    r = b.rng
    rank = len(x.shape)
    k = x.shape[-1]
    if r.random() < 0.35 and rank >= 2:  # two activations: x @ y^T style
        others = b.floats(rank, lambda v: v.shape[:-2] == x.shape[:-2] and v.shape[-1] == k and v is not x)
        y = b.pick(others, 0.5) or x
        yt = b.one("Transpose", [y], y.shape[:-2] + (k, y.shape[-2]), perm=list(range(rank - 2)) + [rank - 1, rank - 2])
        s = b.one("MatMul", [x, yt], x.shape[:-1] + (y.shape[-2],))
        return b.one("Mul", [s, b.const(np.array(1 / math.sqrt(k), np.float32), "scale")], s.shape)
    n = int(r.choice([1, 2, 5, 8, 16, 24, 32]))
    if r.random() < 0.3 and rank >= 3:  # a batched weight broadcast over the leading dims
        wshape = (x.shape[-3], k, n)
    else:
        wshape = (k, n)
    w = b.weight(wshape, k)
    if rank == 1:
        return b.one("MatMul", [x, w], (n,))
    out = bcast_shape(x.shape[:-2], wshape[:-2]) + (x.shape[-2], n)
    return b.one("MatMul", [x, w], out)


def op_dyn_quant(b, x):
    """quantize_dynamic's product, which onnxc lowers to its int8 product
    kernel (passes/fuse_qmatmul.c): x quantized at run time
    (DynamicQuantizeLinear), MatMulInteger by a constant int8 or uint8 weight
    (zero points absent, scalar or per column), then Cast and Mul by the
    scales' product, scalar or per column [, Add of a bias], as the quantizer
    writes them; or the sums Cast and divided (no scale to fold: the int32
    form). int8 weights stay in [-64, 63]: ONNX Runtime's AVX2 kernel
    saturates pairs of u8 x s8 products past int16."""
    r = b.rng
    k = x.shape[-1]
    if len(x.shape) < 2 or k > 1024:
        raise Reject()
    n = int(r.choice([1, 5, 16, 17, 48, 64, 65, 100]))
    q = b.fresh("dql")
    sc, zp = q + "_scale", q + "_zp"
    x.uses += 1
    b.nodes.append(helper.make_node("DynamicQuantizeLinear", [x.name], [q, sc, zp], name=q))
    zshape = (n,) if r.random() < 0.4 else ()
    if r.random() < 0.6:
        w = r.integers(-64, 64, size=(k, n)).astype(np.int8)
        wz = r.integers(-3, 4, size=zshape).astype(np.int8) if r.random() < 0.5 else np.zeros(zshape, np.int8)
    else:
        w = r.integers(0, 256, size=(k, n)).astype(np.uint8)
        wz = r.integers(100, 156, size=zshape).astype(np.uint8)
    ins = [q, b.const(w, "wq"), zp]
    if r.random() < 0.8:
        ins.append(b.const(wz, "wz"))
    mm = b.one("MatMulInteger", ins, x.shape[:-1] + (n,), dtype=I32)
    f = b.one("Cast", [mm], mm.shape, to=F32)
    if r.random() < 0.15:
        return b.one("Div", [f, b.const(np.float32(r.uniform(500, 5000)), "div")], f.shape)
    ws = r.uniform(0.002, 0.02, size=(n,) if r.random() < 0.4 else ()).astype(np.float32)
    s = b.one("Mul", [sc, b.const(ws, "ws")], ws.shape)
    y = b.one("Mul", [f, s] if r.random() < 0.5 else [s, f], f.shape)
    if r.random() < 0.6:
        bias = b.const(r.uniform(-0.5, 0.5, size=(n,)).astype(np.float32), "bias")
        y = b.one("Add", [y, bias] if r.random() < 0.5 else [bias, y], f.shape)
    return y


def op_qembed(b, x):
    """A quantized embedding table as quantize_static leaves it: Gather of
    the DequantizeLinear of an int8 or uint8 constant (scalar scale, zero
    point maybe absent) by run-time indices, added to x. onnxc gathers the
    quantized rows, then dequantizes them (passes/fuse_qmatmul.c,
    sink_gather)."""
    r = b.rng
    if len(x.shape) != 2:
        raise Reject()
    n, d = x.shape
    v = int(r.choice([3, 50, 300]))
    if r.random() < 0.5:
        q, z = r.integers(-128, 128, size=(v, d)).astype(np.int8), np.int8(r.integers(-5, 6))
    else:
        q, z = r.integers(0, 256, size=(v, d)).astype(np.uint8), np.uint8(r.integers(100, 156))
    ins = [b.const(q, "table"), b.const(np.float32(r.uniform(0.001, 0.01)), "ts")]
    if r.random() < 0.7:
        ins.append(b.const(z, "tz"))
    table = b.one("DequantizeLinear", ins, (v, d))
    idx = b.input((n,), I64, 0, v - 1)
    return b.one("Add", [x, b.one("Gather", [table, idx], (n, d), axis=0)], (n, d))


def projections(b, x):
    """Q, K and V: x times three [D, D] weights, all with biases (MatMul +
    Add, as exporters write them; onnxc merges the three) or all without."""
    d = x.shape[-1]
    biased = b.rng.random() < 0.7

    def proj():
        y = b.one("MatMul", [x, b.weight((d, d), d)], x.shape)
        if biased:
            bias = b.rng.normal(0.0, 0.2, size=(d,)).astype(np.float32)
            y = b.one("Add", [y, b.const(bias, "proj_bias")], x.shape)
        return y

    return proj(), proj(), proj()


def op_attention(b, x):
    """Self attention over (B, S, D): single-head, or (D even, sometimes) the
    multi-head form exporters write, heads split by Reshape + Transpose
    [0,2,1,3] (K by [0,2,3,1]) and merged back by Transpose + Reshape, with an
    additive mask before the Softmax."""
    if len(x.shape) != 3:
        return None
    bsz, s, d = x.shape
    if d % 2 == 0 and d >= 4 and b.rng.random() < 0.5:
        return attention_heads(b, x, 2 if d % 4 or b.rng.random() < 0.5 else 4)
    q, k, v = projections(b, x)
    kt = b.one("Transpose", [k], (bsz, d, s), perm=[0, 2, 1])
    sc = b.one("MatMul", [q, kt], (bsz, s, s))
    sc = b.one("Mul", [sc, b.const(np.array(1 / math.sqrt(d), np.float32), "scale")], sc.shape)
    p = b.one("Softmax", [sc], sc.shape, bounded=True, axis=-1)
    o = b.one("MatMul", [p, v], x.shape)
    return b.one("Add", [x, o], x.shape)


def attention_heads(b, x, h):
    bsz, s, d = x.shape
    dh = d // h
    shp = b.const(np.array([bsz, s, h, dh], np.int64), "heads")
    q, k, v = projections(b, x)
    q = b.one("Transpose", [b.one("Reshape", [q, shp], (bsz, s, h, dh))], (bsz, h, s, dh), perm=[0, 2, 1, 3])
    kt = b.one("Transpose", [b.one("Reshape", [k, shp], (bsz, s, h, dh))], (bsz, h, dh, s), perm=[0, 2, 3, 1])
    v = b.one("Transpose", [b.one("Reshape", [v, shp], (bsz, s, h, dh))], (bsz, h, s, dh), perm=[0, 2, 1, 3])
    sc = b.one("MatMul", [q, kt], (bsz, h, s, s))
    sc = b.one("Div", [sc, b.const(np.array(math.sqrt(dh), np.float32), "sqrt_dh")], sc.shape)
    mask = np.where(b.rng.random((bsz, 1, 1, s)) < 0.2, -10000.0, 0.0).astype(np.float32)
    sc = b.one("Add", [sc, b.const(mask, "mask")], sc.shape)
    p = b.one("Softmax", [sc], sc.shape, bounded=True, axis=-1)
    o = b.one("MatMul", [p, v], (bsz, h, s, dh))
    o = b.one("Transpose", [o], (bsz, s, h, dh), perm=[0, 2, 1, 3])
    o = b.one("Reshape", [o, b.const(np.array([bsz, s, d], np.int64), "merged")], x.shape)
    return b.one("Add", [x, o], x.shape)


# ---- int8 QDQ ----------------------------------------------------------------

def op_qdq_conv(b, x):
    """QDQ around a conv: activations through Quantize/DequantizeLinear, int8
    weights dequantized, or a QLinearConv. Only on values no arithmetic has
    touched yet (graph inputs), so that rounding at .5 steps cannot split the
    reference from onnxc."""
    r = b.rng
    n, c, h, w = x.shape
    xs = np.float32(float(r.choice([0.01, 0.02, 0.05])))
    xz = np.uint8(int(r.integers(100, 156)))
    k = int(r.choice([1, 3]))
    cout = int(r.choice([4, 8, 16]))
    if h < k or w < k:
        return None
    wq = r.integers(-127, 128, size=(cout, c, k, k)).astype(np.int8)
    # Scales off simple ratios: with ys == xs and ws = 1/(127 n), the
    # requantized accumulator lands on exact .5 ties in float32, where ONNX
    # Runtime (float32 multiplier) and the reference (exact) round apart.
    ws = np.float32(r.uniform(0.8, 1.2) / (127 * math.sqrt(c * k * k)))
    q = b.one("QuantizeLinear", [x, b.const(xs, "xs"), b.const(xz, "xz")], x.shape, dtype=TensorProto.UINT8)
    oh, ow = h - k + 1, w - k + 1
    if r.random() < 0.5:
        ys = np.float32(r.uniform(0.03, 0.07))
        yz = np.uint8(128)
        y = b.one("QLinearConv", [q, b.const(xs, "xs"), b.const(xz, "xz"), b.const(wq, "wq"), b.const(ws, "ws"),
                                  b.const(np.int8(0), "wz"), b.const(ys, "ys"), b.const(yz, "yz")],
                  (n, cout, oh, ow), dtype=TensorProto.UINT8, kernel_shape=[k, k])
        return b.one("DequantizeLinear", [y, b.const(ys, "ys"), b.const(yz, "yz")], y.shape)
    dq = b.one("DequantizeLinear", [q, b.const(xs, "xs"), b.const(xz, "xz")], x.shape)
    wd = b.one("DequantizeLinear", [b.const(wq, "wq"), b.const(ws, "ws")], wq.shape)
    return b.one("Conv", [dq, wd, b.const(np.zeros(cout, np.float32), "bias")], (n, cout, oh, ow), kernel_shape=[k, k])


# ---- the qdq profile: QDQ groups as quantize_static writes them -------------

U8, I8, I32 = TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32


class QV:
    """A uint8 value of the qdq chain with its scale and zero point."""

    def __init__(self, v, s, z):
        self.v, self.s, self.z = v, np.float32(s), np.uint8(z)


def q_dq(b, qv):
    return b.one("DequantizeLinear", [qv.v, b.const(qv.s, "s"), b.const(qv.z, "z")], qv.v.shape)


def q_q(b, f, s, z):
    return QV(b.one("QuantizeLinear", [f, b.const(np.float32(s), "s"), b.const(np.uint8(z), "z")], f.shape,
                    dtype=U8), s, z)


def q_out(b, f, scale, relu):
    """An optional Relu (its Q then has zero point 0, as the quantizer writes
    it and ORT's ReluQuantFusion needs), then Q."""
    r = b.rng
    s = np.float32(scale * r.uniform(0.7, 1.4))
    if relu:
        return q_q(b, b.one("Relu", [f], f.shape), s, 0)
    return q_q(b, f, s, int(r.integers(96, 160)))


def q_weights(b, shape, fan_in, axis_len, x):
    """DQ(int8 W, per-channel or per-tensor scales) and the scales."""
    r = b.rng
    wq = r.integers(-127, 128, size=shape).astype(np.int8)
    per_channel = r.random() < 0.7
    n = axis_len if per_channel else 1
    ws = (r.uniform(0.5, 1.5, size=n) / (127 * math.sqrt(fan_in) * 0.5)).astype(np.float32)
    ws_arg = ws if per_channel else ws.reshape(())
    axis = {"axis": 0} if per_channel else {}
    return b.one("DequantizeLinear", [b.const(wq, "wq"), b.const(ws_arg, "ws"), b.const(np.zeros(ws_arg.shape, np.int8), "wz")],
                 shape, **axis), ws


def q_bias(b, xs, ws, n):
    r = b.rng
    bq = r.integers(-2000, 2001, size=n).astype(np.int32)
    bs = (np.float32(xs) * ws).astype(np.float32)
    if bs.size == 1:
        bs = np.full(n, bs.reshape(()), np.float32)
    return b.one("DequantizeLinear", [b.const(bq, "bq"), b.const(bs, "bs"), b.const(np.zeros(n, np.int32), "bz")], (n,),
                 axis=0)


def q_conv(b, qv, cout=None, depthwise=False, keep=False):
    """keep: stride 1 and same padding (the spatial shape stays). Otherwise
    sometimes a 7x7 window, a dilation of 2 or asymmetric padding; output
    channels up to 80 (several 64-channel blocks of the int8 kernels)."""
    r = b.rng
    n, c, h, w = qv.v.shape
    k = int(r.choice([1, 3, 3, 5, 7] if not keep and r.random() < 0.15 else [1, 3, 3, 5])) if not depthwise else 3
    s = 1 if keep else int(r.choice([1, 1, 2]))
    d = 2 if not keep and not depthwise and k == 3 and r.random() < 0.15 else 1
    p = d * (k // 2) if keep or r.random() < 0.8 else 0
    pads = [p, p, p, p]
    if not keep and not depthwise and k > 1 and r.random() < 0.15:  # asymmetric (begin, end) per axis
        pads = [int(r.integers(0, k)) for _ in range(4)]
    oh = conv_out(h, k, s, d, pads[0], pads[2])
    ow = conv_out(w, k, s, d, pads[1], pads[3])
    if oh < 1 or ow < 1:
        raise Reject("conv")
    cout = c if depthwise else (cout or int(r.choice([4, 8, 16, 24, 32, 48, 64, 80]
                                                     if r.random() < 0.3 else [4, 8, 16, 24, 32])))
    cin_g = 1 if depthwise else c
    wd, ws = q_weights(b, (cout, cin_g, k, k), cin_g * k * k, cout, qv)
    ins = [q_dq(b, qv), wd]
    if r.random() < 0.85:
        ins.append(q_bias(b, qv.s, ws, cout))
    y = b.one("Conv", ins, (n, cout, oh, ow), kernel_shape=[k, k], strides=[s, s], pads=pads,
              dilations=[d, d], group=cout if depthwise else 1)
    return q_out(b, y, qv.s * (qv.z if qv.z else 128) / 128, r.random() < 0.5)


def q_add(b, qv, other):
    """Either operand first (a conv's output as Add's first or second input: onnxc folds
    the Add into that conv's store, the operands' order kept)."""
    if b.rng.random() < 0.5:
        qv, other = other, qv
    return q_out(b, b.one("Add", [q_dq(b, qv), q_dq(b, other)], qv.v.shape), float(max(qv.s, other.s)) * 1.5,
                 b.rng.random() < 0.3)


def q_maxpool(b, qv):
    n, c, h, w = qv.v.shape
    k, s, p = [(2, 2, 0), (3, 1, 1), (3, 2, 1)][int(b.rng.integers(0, 3))]
    oh, ow = pool_out(h, k, s, 1, p, p, False), pool_out(w, k, s, 1, p, p, False)
    if oh < 1 or ow < 1:
        raise Reject("pool")
    y = b.one("MaxPool", [q_dq(b, qv)], (n, c, oh, ow), kernel_shape=[k, k], strides=[s, s], pads=[p, p, p, p])
    return q_q(b, y, qv.s, qv.z)


def q_concat(b, qv):
    other = q_conv(b, qv, keep=True)
    n, c, h, w = qv.v.shape
    y = b.one("Concat", [q_dq(b, qv), q_dq(b, other)], (n, c + other.v.shape[1], h, w), axis=1)
    if b.rng.random() < 0.3:
        return q_q(b, y, qv.s, qv.z)  # the first input's parameters: only the second is requantized
    return q_out(b, y, float(max(qv.s, other.s)), False)


def q_head(b, qv):
    """GlobalAveragePool, Flatten, Gemm (or MatMul) with int32 bias."""
    r = b.rng
    n, c = qv.v.shape[:2]
    g = q_out(b, b.one("GlobalAveragePool", [q_dq(b, qv)], (n, c, 1, 1)), float(qv.s) * 0.5, False)
    f = q_q(b, b.one("Flatten", [q_dq(b, g)], (n, c), axis=1), g.s, g.z)
    m = int(r.choice([5, 10, 16]))
    if r.random() < 0.6:
        wd, ws = q_weights(b, (m, c), c, m, f)
        y = b.one("Gemm", [q_dq(b, f), wd, q_bias(b, f.s, ws, m)], (n, m), transB=1)
    else:
        wq = r.integers(-127, 128, size=(c, m)).astype(np.int8)
        ws = np.float32(r.uniform(0.5, 1.5) / (127 * math.sqrt(c) * 0.5))
        wd = b.one("DequantizeLinear", [b.const(wq, "wq"), b.const(ws, "ws"), b.const(np.int8(0), "wz")], (c, m))
        y = b.one("MatMul", [q_dq(b, f), wd], (n, m))
    return q_out(b, y, float(f.s) * 2, False)


def build_qdq(rng):
    b = Builder(rng, "qdq")
    c = int(rng.choice([1, 3, 4, 8, 16]))
    h = int(rng.choice([5, 7, 8, 13, 16, 20, 31]))
    w = h if rng.random() < 0.5 else int(rng.choice([6, 9, 17, 20]))
    x = b.input((int(rng.choice([1, 1, 2])), c, h, w))
    cur = q_q(b, x, float(rng.uniform(0.006, 0.01)), int(rng.integers(110, 146)))
    target = int(rng.integers(3, 14))
    groups, steps = 0, 0
    table = {"conv": 5, "dw": 1.5, "add": 1.5, "pool": 1.2, "concat": 1}
    while groups < target and steps < 100:
        steps += 1
        kind = weighted(rng, table)
        try:
            if kind == "conv":
                y = q_conv(b, cur)
            elif kind == "dw":
                y = q_conv(b, cur, depthwise=True)
            elif kind == "add":
                u = rng.random()
                # a conv and the block's input (ResNet's identity block), two convs of one input
                # (its downsampling block: the Add goes into the later one), or the input twice
                first = q_conv(b, cur, cur.v.shape[1], keep=True) if u < 0.8 else cur
                y = q_add(b, first, q_conv(b, cur, cur.v.shape[1], keep=True) if 0.5 <= u < 0.8 else cur)
            elif kind == "pool":
                y = q_maxpool(b, cur)
            else:
                y = q_concat(b, cur)
        except Reject:
            continue
        cur = y
        groups += 1
    if rng.random() < 0.5:
        cur = q_head(b, cur)
    used = {i for n in b.nodes for i in n.input}
    dangling = [v for v in b.values if v.name not in used and v.name not in b.feeds and v is not cur.v]
    if dangling:  # a draw abandoned half-way (Reject after some nodes): start again
        raise Reject("dangling")
    graph = helper.make_graph(b.nodes, "diff_qdq", b.inputs,
                              [helper.make_tensor_value_info(cur.v.name, U8, list(cur.v.shape))], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], producer_name="onnxc-diff")
    model.ir_version = 9
    return model, b.feeds, {v.name: v.shape for v in b.values}


def op_int64(b):
    """An int64 graph input through Add/Mul with constants (exact)."""
    r = b.rng
    shape = tuple(int(d) for d in r.integers(1, 6, size=int(r.integers(1, 4))))
    x = b.input(shape, I64, -100, 100)
    y = b.one("Mul", [x, b.const(r.integers(-3, 4, size=shape[-1:]).astype(np.int64), "k")], shape, dtype=I64)
    return b.one("Add", [y, b.const(r.integers(-50, 50, size=()).astype(np.int64), "k")], shape, dtype=I64)


OPS4 = {  # profile cnn weights
    op_conv_block: 8, op_conv: 4, op_bn: 3, op_pool: 3, op_unary: 8, op_binary: 4, op_residual: 2, op_se: 1, op_concat_c: 1.5,
    op_split: 1, op_siblings: 3, op_slice: 1, op_resize: 1, op_global_pool: 0.5, op_reduce: 0.5, op_softmax: 0.3,
    op_transpose: 0.3, op_gather: 0.3, op_unsqueeze: 0.3, op_squeeze: 0.2, op_reshape: 0.3, op_cast: 0.5,
    op_ew_siblings: 1.5, op_dyn_quant_conv: 1, op_convt: 1.5,
}
OPS2 = {
    op_gemm: 6, op_matmul: 5, op_unary: 6, op_binary: 5, op_layernorm: 2, op_softmax: 1.5, op_gelu: 1,
    op_attention: 1, op_transpose: 1, op_reshape: 1.5, op_concat_c: 0, op_split: 1, op_slice: 1, op_gather: 1,
    op_reduce: 1, op_unsqueeze: 0.5, op_squeeze: 0.5, op_flatten: 0.5, op_cast: 0.7, op_ew_siblings: 1.5,
    op_conv1d: 1.5, op_rnn: 1.5, op_dyn_quant: 1.5, op_qembed: 0.5, op_convt: 0.5,
}


def weighted(rng, table):
    fs, ws = list(table), np.array(list(table.values()), float)
    return fs[int(rng.choice(len(fs), p=ws / ws.sum()))]


def build(rng, profile):
    b = Builder(rng, profile)
    target = int(rng.integers(5, 54))  # the last operator may add a few more
    nb = int(rng.choice([1, 1, 1, 2, 3]))
    if profile == "cnn" or (profile == "mixed" and rng.random() < 0.6):
        c = int(rng.choice([1, 3, 3, 4, 8, 16]))
        h = int(rng.choice([1, 2, 5, 7, 8, 13, 16, 20, 23, 29, 32]))
        w = h if rng.random() < 0.5 else int(rng.choice([1, 3, 6, 9, 17, 20, 31]))
        x = b.input((nb, c, h, w))
        table = dict(OPS4)
        if profile == "mixed":
            table.update({op_reshape: 1, op_shape_reshape: 1, op_flatten: 0.5, op_transpose: 1, op_gather: 1,
                          op_reduce: 1})
        if rng.random() < 0.2 and h >= 3 and w >= 3 and profile != "cnn" or rng.random() < 0.05:
            x = op_qdq_conv(b, x) or x
    else:
        if rng.random() < 0.5:
            x = b.input((nb * int(rng.choice([1, 2, 5])), int(rng.choice([3, 8, 16, 31, 64]))))
        else:
            x = b.input((nb, int(rng.choice([1, 4, 7, 16])), int(rng.choice([8, 16, 24, 32]))))
        table = dict(OPS2)
        if profile == "mixed":
            table.update({op_shape_reshape: 1})
    if profile == "mixed" and rng.random() < 0.3:
        op_int64(b)
    if rng.random() < 0.15:  # a second float input, joined
        x = b.one(str(rng.choice(["Add", "Mul", "Max"])), [x, b.input(x.shape[1:] if rng.random() < 0.3 else x.shape)],
                  x.shape)
    cur = x
    steps = 0
    while len(b.nodes) < target and steps < 400:
        steps += 1
        f = weighted(rng, table)
        src = cur if rng.random() < 0.8 else (b.pick(b.floats(len(cur.shape)), 0.0) or cur)
        if len(src.shape) == 4 and f in (op_gemm, op_attention, op_layernorm, op_gelu):
            continue
        if len(src.shape) != 4 and f in (op_conv, op_conv_block, op_bn, op_pool, op_resize, op_se, op_residual, op_global_pool,
                                         op_qdq_conv, op_dyn_quant_conv):
            continue
        if len(src.shape) == 4 and numel(src.shape) > 1 << 17:
            continue
        try:
            y = f(b, src)
        except (Reject, ValueError):  # the operator does not apply to src (rank, sizes)
            continue
        if y is None:
            continue
        if len(y.shape) != 4 and len(cur.shape) == 4 and profile == "cnn":
            continue  # stay in NCHW; the node stays, as a side output
        cur = y
        if len(cur.shape) == 4 and profile == "cnn" and len(b.nodes) >= target - 4 and rng.random() < 0.6:
            cur = op_head(b, cur)
            break
        if len(cur.shape) < 2 and profile != "mixed":
            break
        if len(cur.shape) == 2 and table is not OPS2 and profile == "mixed":
            table = dict(OPS2)
    if len(b.nodes) < 5:
        raise Reject("too small")
    if any(numel(v.shape) > 1 << 21 for v in b.values):
        raise Reject("too large")  # a broadcast blew a value up (seed 1759: a 9 GB MatMul)
    if any(n.op_type in AVOID for n in b.nodes):
        raise Reject("avoided operator")
    # Outputs: every value nothing consumes, and sometimes an intermediate one.
    outs = [v for v in b.values if v.uses == 0 and v.name not in b.feeds]
    for v in b.values:
        if v.name in b.feeds and v.uses == 0:
            raise Reject("unused input")
    if rng.random() < 0.2:
        mids = [v for v in b.values if v.uses > 0 and v.name not in b.feeds and v.dtype in (F32, I64)]
        if mids:
            outs.append(mids[int(rng.integers(0, len(mids)))])
    outs = [v for v in outs if v.dtype in (F32, I64)]
    if not outs or len(outs) > 8:
        raise Reject("outputs")
    graph = helper.make_graph(b.nodes, "diff", b.inputs,
                              [helper.make_tensor_value_info(v.name, v.dtype, list(v.shape)) for v in outs],
                              b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="onnxc-diff")
    model.ir_version = 8
    shapes = {v.name: v.shape for v in b.values}
    return model, b.feeds, shapes


def validate(model, feeds, shapes):
    import onnxruntime as ort
    onnx.checker.check_model(model, full_check=True)
    inf = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    for vi in list(inf.graph.value_info) + list(inf.graph.output):
        dims = tuple(d.dim_value for d in vi.type.tensor_type.shape.dim)
        known = all(d.HasField("dim_value") for d in vi.type.tensor_type.shape.dim)
        if vi.name in shapes and known and dims != shapes[vi.name]:
            raise Reject(f"{vi.name}: inferred {dims}, tracked {shapes[vi.name]}")
    outs = run_ort(model, feeds)
    for o, arr in zip(model.graph.output, outs):
        if o.name in shapes and tuple(arr.shape) != shapes[o.name]:
            raise Reject(f"ORT shape of {o.name}")
        if arr.dtype == np.float32 and (not np.all(np.isfinite(arr)) or np.abs(arr).max(initial=0) > 1e4):
            raise Reject("values out of range")
    return outs


def run_ort(model, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    # ORT's exact u8 x s8 kernel (its default on AVX2 without VNNI saturates)
    so.add_session_config_entry("session.x64quantprecision", "1")
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def profile_of(seed):
    return ("cnn", "cnn", "mlp", "mixed")[seed % 4]


def to_float16(model, feeds):
    """The model in float16 (bench/half_models.py's conversion: every float32
    initializer, constant, value and Cast target becomes float16) and its
    float32 inputs rounded to float16."""
    bench = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    import half_models
    return half_models.to_float16(model), {k: (v.astype(np.float16) if v.dtype == np.float32 else v)
                                       for k, v in feeds.items()}


def validate16(model, feeds):
    """ONNX Runtime's outputs of a float16 model; Reject when it cannot run it
    or an output leaves float16's comfortable range."""
    outs = run_ort_isolated(model, feeds)
    for arr in outs:
        if arr.dtype == np.float16 and (not np.all(np.isfinite(arr)) or np.abs(arr).max(initial=0) > 1e4):
            raise Reject("float16 values out of range")
    return outs


def run_ort_isolated(model, feeds):
    """run_ort in a child process: ONNX Runtime crashes (SIGSEGV) on some
    float16 graphs, which must reject the draw, not kill the caller."""
    import pickle
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory(prefix="onnxc-ort16-") as tmp:
        src, dst = os.path.join(tmp, "in.pkl"), os.path.join(tmp, "out.pkl")
        with open(src, "wb") as f:
            pickle.dump((model.SerializeToString(), feeds), f)
        code = ("import pickle, sys\n"
                f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
                "import onnx, gen_model\n"
                "b, feeds = pickle.load(open(sys.argv[1], 'rb'))\n"
                "pickle.dump(gen_model.run_ort(onnx.load_from_string(b), feeds), open(sys.argv[2], 'wb'))\n")
        p = subprocess.run([sys.executable, "-c", code, src, dst], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=300)
        if p.returncode or not os.path.exists(dst):
            raise Reject(f"ONNX Runtime cannot run the float16 model (exit {p.returncode})")
        with open(dst, "rb") as f:
            return pickle.load(f)


def generate(seed, profile=None, float16=False):
    """(model, feeds, ORT outputs) for the seed; deterministic. With float16,
    the first draw that is valid in float32 and that ONNX Runtime runs in
    float16 (to_float16) within range, in float16."""
    profile = profile or profile_of(seed)
    if float16 and profile == "qdq":
        raise RuntimeError("no float16 variant of the qdq profile")
    for attempt in range(50):
        rng = np.random.default_rng([seed, attempt])
        try:
            model, feeds, shapes = build_qdq(rng) if profile == "qdq" else build(rng, profile)
            outs = validate(model, feeds, shapes)
            if float16:
                model, feeds = to_float16(model, feeds)
                outs = validate16(model, feeds)
            return model, feeds, outs
        except Reject:
            continue
        except Exception:  # checker, shape inference or ORT refused the draw
            continue
    raise RuntimeError(f"seed {seed}: no valid model in 50 draws")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("seed", type=int)
    ap.add_argument("--profile", choices=PROFILES)
    ap.add_argument("-o", "--output", default="model.onnx")
    ap.add_argument("--avoid", default="", help="comma-separated operator types not to generate")
    a = ap.parse_args()
    AVOID.update(x for x in a.avoid.split(",") if x)
    model, _, _ = generate(a.seed, a.profile)
    onnx.save(model, a.output)
    ops = {}
    for n in model.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    print(f"{a.output}: {len(model.graph.node)} nodes", " ".join(f"{k}x{v}" for k, v in sorted(ops.items())))


if __name__ == "__main__":
    sys.exit(main())
