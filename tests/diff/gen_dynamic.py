#!/usr/bin/env python3
"""Random models with a dynamic dimension, for run_diff.py --dynamic.

    gen_dynamic.py SEED [-o model.onnx]

Each model has one symbolic dim `n` (a sequence or row count, dim_param "n")
on its float input, [n, d] or [1, n, d], and a graph that is valid for every
n: the shapes that depend on n are computed as exporters compute them (Shape ->
Gather -> Unsqueeze -> Concat -> Reshape), never baked in. Operators: unary
and binary elementwise (broadcast against weights over the static dims and
against other dynamic values), MatMul and Gemm with weights, Softmax,
LayerNormalization, GELU and LayerNorm as primitives, reductions over a static
axis, Transpose, heads split and merged (attention, with scores of n x n),
Slice and Gather over static axes, Concat along any axis, Unsqueeze/Squeeze,
Cast round trips, LSTM/GRU/RNN over n (as the sequence or the batch),
summaries over n through a biased MatMul added back, reversal along n
(Slice step -1). About a third are image models instead, [1, C, H, n] with n
a width: convs of every kind, BatchNormalization, activations, pools, residuals,
squeeze-excite and channel concats (build_image). The data sets run the same
model at several n in 1..N_MAX
(always including 1 and N_MAX for some seeds): `onnxc check -D n=1..N_MAX`
compiles it once and must match ONNX Runtime at each.
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

N_MAX = 48
F32, I64 = TensorProto.FLOAT, TensorProto.INT64


class Reject(Exception):
    pass


class V:
    """A value: name and shape, with 'n' standing for the dynamic dim."""

    def __init__(self, name, shape):
        self.name, self.shape = name, tuple(shape)


class B:
    def __init__(self, rng):
        self.rng, self.nodes, self.inits, self.k = rng, [], [], 0

    def fresh(self, stem):
        self.k += 1
        return f"{stem}{self.k}"

    def const(self, arr, stem="c"):
        name = self.fresh(stem)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def weight(self, shape, fan_in):
        return self.const((self.rng.standard_normal(shape) / np.sqrt(max(fan_in, 1))).astype(np.float32), "w")

    def op(self, op_type, ins, shape, **attrs):
        out = self.fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, ins, [out], name=out, **attrs))
        return V(out, shape)

    def dim_of(self, v, i):
        """v's dim i as a 1-element int64 tensor, computed from its shape."""
        sh = self.op("Shape", [v.name], (len(v.shape),))
        g = self.op("Gather", [sh.name, self.const(np.array(i, np.int64), "i")], (), axis=0)
        return self.op("Unsqueeze", [g.name, self.const(np.array([0], np.int64), "a")], (1,)).name

    def shape_of(self, v, parts):
        """A shape tensor: int entries are constants, ('dim', i) reads v's dim i."""
        names = [self.dim_of(v, p[1]) if isinstance(p, tuple) else self.const(np.array([p], np.int64), "s")
                 for p in parts]
        return self.op("Concat", names, (len(parts),), axis=0).name


def static_axes(v):
    return [i for i, d in enumerate(v.shape) if d != "n"]


def op_unary(b, x):
    op = str(b.rng.choice(["Relu", "Tanh", "Sigmoid", "Erf", "Abs", "Neg", "Softsign"]))
    return b.op(op, [x.name], x.shape)


def op_binary(b, x, others):
    op = str(b.rng.choice(["Add", "Sub", "Mul", "Max", "Min", "Div"]))
    r = b.rng.random()
    same = [o for o in others if o.shape == x.shape and o.name != x.name]
    if r < 0.3 and same:
        other = same[int(b.rng.integers(0, len(same)))].name
        if op == "Div":
            op = "Mul"
    else:
        # a weight over the trailing static dims, or a scalar
        tail = []
        for d in reversed(x.shape):
            if d == "n":
                break
            tail.insert(0, d)
        shape = tuple(tail[int(b.rng.integers(0, len(tail) + 1)):]) if tail else ()
        arr = b.rng.uniform(0.5, 1.5, shape).astype(np.float32)
        if op != "Div":
            arr *= b.rng.choice([-1.0, 1.0], shape).astype(np.float32)
        other = b.const(arr)
    ins = [x.name, other] if b.rng.random() < 0.7 or op == "Div" else [other, x.name]
    return b.op(op, ins, x.shape)


def op_matmul(b, x):
    d, d2 = x.shape[-1], int(b.rng.choice([4, 8, 16, 24, 32]))
    y = b.op("MatMul", [x.name, b.weight((d, d2), d)], x.shape[:-1] + (d2,))
    if b.rng.random() < 0.6:
        y = b.op("Add", [y.name, b.weight((d2,), 4)], y.shape)
    if b.rng.random() < 0.25:  # the encoder's MatMul, bias, GELU (one kernel when fused)
        y = op_gelu(b, y)
    return y


def op_gemm(b, x):
    if len(x.shape) != 2 or x.shape[0] != "n":
        raise Reject()
    d, d2 = x.shape[1], int(b.rng.choice([4, 8, 16, 32]))
    tb = int(b.rng.integers(0, 2))
    w = b.weight((d2, d) if tb else (d, d2), d)
    ins = [x.name, w]
    if b.rng.random() < 0.7:
        ins.append(b.weight(tuple(int(s) for s in b.rng.choice([(d2,), (1, d2), (1,)])), 2))
    return b.op("Gemm", ins, ("n", d2), transB=tb, alpha=float(b.rng.choice([1.0, 0.5])),
                beta=float(b.rng.choice([1.0, 2.0])))


def op_softmax(b, x):
    return b.op("Softmax", [x.name], x.shape, axis=-1)


def op_layernorm(b, x):
    d = x.shape[-1]
    if d == "n":
        raise Reject()
    return b.op("LayerNormalization", [x.name, b.const(b.rng.uniform(0.5, 1.5, d).astype(np.float32)),
                                       b.weight((d,), 4)], x.shape, axis=-1, epsilon=1e-5)


def op_layernorm_primitives(b, x):
    if x.shape[-1] == "n":
        raise Reject()
    m = b.op("ReduceMean", [x.name], x.shape[:-1] + (1,), axes=[-1], keepdims=1)
    dv = b.op("Sub", [x.name, m.name], x.shape)
    v = b.op("ReduceMean", [b.op("Mul", [dv.name, dv.name], x.shape).name], x.shape[:-1] + (1,), axes=[-1],
             keepdims=1)
    s = b.op("Sqrt", [b.op("Add", [v.name, b.const(np.float32(1e-5))], v.shape).name], v.shape)
    return b.op("Div", [dv.name, s.name], x.shape)


def op_gelu(b, x):
    e = b.op("Erf", [b.op("Div", [x.name, b.const(np.float32(1.4142135))], x.shape).name], x.shape)
    h = b.op("Add", [e.name, b.const(np.float32(1.0))], x.shape)
    return b.op("Mul", [b.op("Mul", [x.name, h.name], x.shape).name, b.const(np.float32(0.5))], x.shape)


def op_reduce(b, x):
    axes = static_axes(x)
    if not axes or len(x.shape) < 2:
        raise Reject()
    a = int(b.rng.choice(axes))
    keep = int(b.rng.integers(0, 2))
    op = str(b.rng.choice(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL2"]))
    shape = tuple(1 if i == a else d for i, d in enumerate(x.shape)) if keep else \
        tuple(d for i, d in enumerate(x.shape) if i != a)
    if op == "ReduceSum":  # axes as an input from opset 13
        return b.op(op, [x.name, b.const(np.array([a], np.int64))], shape, keepdims=keep)
    return b.op(op, [x.name], shape, axes=[a], keepdims=keep)


def op_transpose(b, x):
    r = len(x.shape)
    if r < 2:
        raise Reject()
    perm = list(b.rng.permutation(r))
    return b.op("Transpose", [x.name], tuple(x.shape[p] for p in perm), perm=[int(p) for p in perm])


def op_attention(b, x):
    """Heads split by a computed Reshape, scores n x n, merged back."""
    if len(x.shape) != 3 or x.shape[1] != "n" or x.shape[0] != 1:
        raise Reject()
    d = x.shape[2]
    heads = [h for h in (1, 2, 4) if d % h == 0 and d // h >= 2]
    h = int(b.rng.choice(heads))
    dh = d // h

    def split(v, perm):
        r = b.op("Reshape", [v.name, b.shape_of(v, [("dim", 0), ("dim", 1), h, dh])], (1, "n", h, dh))
        return b.op("Transpose", [r.name], tuple(r.shape[p] for p in perm), perm=perm)

    q = split(b.op("MatMul", [x.name, b.weight((d, d), d)], x.shape), [0, 2, 1, 3])
    k = split(b.op("MatMul", [x.name, b.weight((d, d), d)], x.shape), [0, 2, 3, 1])
    v = split(b.op("MatMul", [x.name, b.weight((d, d), d)], x.shape), [0, 2, 1, 3])
    s = b.op("MatMul", [q.name, k.name], (1, h, "n", "n"))
    s = b.op("Div", [s.name, b.const(np.float32(np.sqrt(dh)))], s.shape)
    if b.rng.random() < 0.5:  # a mask over the keys, [1, 1, 1, n], computed from x
        m = b.op("ReduceMean", [x.name], (1, "n"), axes=[-1], keepdims=0)
        m = b.op("Unsqueeze", [m.name, b.const(np.array([1, 2], np.int64))], (1, 1, 1, "n"))
        s = b.op("Add", [s.name, m.name], s.shape)
    p = b.op("Softmax", [s.name], s.shape, axis=-1)
    c = b.op("MatMul", [p.name, v.name], (1, h, "n", dh))
    c = b.op("Transpose", [c.name], (1, "n", h, dh), perm=[0, 2, 1, 3])
    return b.op("Reshape", [c.name, b.shape_of(c, [("dim", 0), ("dim", 1), d])], (1, "n", d))


def op_slice(b, x):
    axes = [a for a in static_axes(x) if x.shape[a] >= 2]
    if not axes:
        raise Reject()
    a = int(b.rng.choice(axes))
    dim = x.shape[a]
    s0 = int(b.rng.integers(0, dim - 1))
    e0 = int(b.rng.integers(s0 + 1, dim + 1))
    ins = [x.name, b.const(np.array([s0], np.int64)), b.const(np.array([e0], np.int64)),
           b.const(np.array([a], np.int64))]
    return b.op("Slice", ins, tuple(e0 - s0 if i == a else d for i, d in enumerate(x.shape)))


def op_slice_from_end(b, x):
    """Slices counted from the end of the dynamic axis: a cache of c rows
    concatenated before x, then either its last n rows (start -n, from
    Shape -> Gather -> Neg: T5's position bias[:, :, -seq:]) or its last k <= c
    rows (start -k: FSMN-VAD's cache update), whose mean is added to x."""
    if "n" not in x.shape:
        raise Reject()
    a = x.shape.index("n")
    c = int(b.rng.choice([2, 5, 19]))
    cache = b.weight(tuple(c if i == a else d for i, d in enumerate(x.shape)), 1)
    cat = b.op("Concat", [cache, x.name], x.shape, axis=a)   # (its extent is c + n: read only here)
    big = int(np.iinfo(np.int64).max)
    if b.rng.random() < 0.5:
        start = b.op("Unsqueeze", [b.op("Neg", [seq_scalar(b, x).name], ()).name, b.const(np.array([0], np.int64))],
                     (1,))
        tail = b.op("Slice", [cat.name, start.name, b.const(np.array([big], np.int64)), b.const(np.array([a], np.int64))],
                    x.shape)
        return b.op("Add", [tail.name, x.name], x.shape)
    k = int(b.rng.integers(1, c + 1))
    tail = b.op("Slice", [cat.name, b.const(np.array([-k], np.int64)), b.const(np.array([big], np.int64)),
                          b.const(np.array([a], np.int64))], tuple(k if i == a else d for i, d in enumerate(x.shape)))
    m = b.op("ReduceMean", [tail.name], tuple(1 if i == a else d for i, d in enumerate(x.shape)), axes=[a],
             keepdims=1)
    return b.op("Add", [x.name, m.name], x.shape)


def op_seq_context(b, x):
    """A summary over the dynamic axis (a mean, sum or max over n: madmom's
    tempo head, squeeze-excite over time), through a MatMul with a bias, added
    back to every row: a product of static extents in a dynamic graph."""
    if "n" not in x.shape or x.shape[-1] == "n":
        raise Reject()
    a = x.shape.index("n")
    op = str(b.rng.choice(["ReduceMean", "ReduceSum", "ReduceMax"]))
    keep = int(b.rng.integers(0, 2))
    shape = tuple(1 if i == a else d for i, d in enumerate(x.shape)) if keep else \
        tuple(d for i, d in enumerate(x.shape) if i != a)
    r = b.op(op, [x.name, b.const(np.array([a], np.int64))], shape, keepdims=keep) if op == "ReduceSum" else \
        b.op(op, [x.name], shape, axes=[a], keepdims=keep)
    d = x.shape[-1]
    y = b.op("MatMul", [r.name, b.weight((d, d), 4 * d)], r.shape)
    y = b.op("Add", [y.name, b.weight((d,), 4)], y.shape)
    if b.rng.random() < 0.5:
        y = b.op("Sigmoid", [y.name], y.shape)
    return b.op(str(b.rng.choice(["Add", "Mul"])), [x.name, y.name], x.shape)


def op_reverse(b, x):
    """x reversed along the dynamic axis by a Slice of step -1 (a backward
    recurrent layer written by hand: madmom's converter), as exporters write
    its bounds: start -1 or INT_MAX, end INT_MIN or -(n + 1)-style."""
    if "n" not in x.shape:
        raise Reject()
    a = x.shape.index("n")
    big = int(np.iinfo(np.int64).max)
    start = int(b.rng.choice([-1, big]))
    end = int(b.rng.choice([-big - 1, -(N_MAX + 1) - int(b.rng.integers(0, 5))]))
    r = b.op("Slice", [x.name, b.const(np.array([start], np.int64)), b.const(np.array([end], np.int64)),
                       b.const(np.array([a], np.int64)), b.const(np.array([-1], np.int64))], x.shape)
    if b.rng.random() < 0.5:
        return b.op("Add", [r.name, x.name], x.shape)
    return r


def op_dynamic_quant(b, x):
    """onnxruntime.quantization.quantize_dynamic's product: x quantized at run
    time (DynamicQuantizeLinear), MatMulInteger by an int8 weight, the int32
    sums Cast and scaled by both scales; or x quantized and dequantized
    (DequantizeLinear). The weight stays in [-64, 63], so no pair of u8 x s8
    products exceeds int16 (ONNX Runtime's AVX2 kernel saturates such pairs)."""
    if "n" not in x.shape or x.shape[-1] == "n":
        raise Reject()
    q = b.fresh("dql")
    sc, zp = q + "_scale", q + "_zp"
    b.nodes.append(helper.make_node("DynamicQuantizeLinear", [x.name], [q, sc, zp], name=q))
    if b.rng.random() < 0.3:
        return b.op("DequantizeLinear", [q, sc, zp], x.shape)
    d, d2 = x.shape[-1], int(b.rng.choice([8, 16, 32]))
    w = b.const(b.rng.integers(-64, 64, size=(d, d2)).astype(np.int8), "wq")
    wz = b.const(np.array(int(b.rng.integers(-3, 4)), np.int8), "wz")
    mm = b.op("MatMulInteger", [q, w, zp, wz], x.shape[:-1] + (d2,))
    f = b.op("Cast", [mm.name], mm.shape, to=F32)
    s = b.op("Mul", [sc, b.const(np.float32(b.rng.uniform(0.002, 0.02)))], ())
    return b.op("Mul", [f.name, s.name], mm.shape)


def op_gather(b, x):
    axes = static_axes(x)
    if not axes:
        raise Reject()
    a = int(b.rng.choice(axes))
    k = int(b.rng.integers(1, 4))
    idx = b.rng.integers(-x.shape[a], x.shape[a], size=k).astype(np.int64)
    return b.op("Gather", [x.name, b.const(idx)], x.shape[:a] + (k,) + x.shape[a + 1:], axis=a)


def op_concat(b, x, others):
    r = len(x.shape)
    a = int(b.rng.integers(0, r))
    same_rest = [o for o in others if len(o.shape) == r and
                 all(o.shape[i] == x.shape[i] for i in range(r) if i != a)]
    if not same_rest:
        raise Reject()
    o = same_rest[int(b.rng.integers(0, len(same_rest)))]
    if "n" in (x.shape[a], o.shape[a]) and x.shape[a] != o.shape[a]:
        raise Reject()  # n + 5 along an axis: not a shape this generator tracks
    if x.shape[a] == "n" and o.shape[a] == "n":
        raise Reject()  # 2n: fine for onnxc, but keep shapes single-symbol here
    return b.op("Concat", [x.name, o.name], tuple(x.shape[i] + o.shape[i] if i == a else x.shape[i]
                                                  for i in range(r)), axis=a)


def op_unsqueeze(b, x):
    if len(x.shape) >= 4:
        raise Reject()
    a = int(b.rng.integers(0, len(x.shape) + 1))
    u = b.op("Unsqueeze", [x.name, b.const(np.array([a], np.int64))], x.shape[:a] + (1,) + x.shape[a:])
    if b.rng.random() < 0.7:
        return b.op("Squeeze", [u.name, b.const(np.array([a], np.int64))], x.shape)
    return u


def op_cast(b, x):
    y = b.op("Cast", [b.op("Mul", [x.name, b.const(np.float32(8.0))], x.shape).name], x.shape, to=I64)
    return b.op("Cast", [y.name], x.shape, to=F32)


def seq_scalar(b, x):
    """x's n as an int64 scalar (Shape -> Gather with a scalar index)."""
    sh = b.op("Shape", [x.name], (len(x.shape),))
    return b.op("Gather", [sh.name, b.const(np.array(x.shape.index("n"), np.int64), "i")], (), axis=0)


def op_mask_where(b, x):
    """A key mask from x expanded to [1, 1, n, n] through a computed shape,
    then Where, as recent transformers exports build the attention bias."""
    if len(x.shape) != 3 or x.shape[:2] != (1, "n"):
        raise Reject()
    m = b.op("ReduceMean", [x.name], (1, "n"), axes=[-1], keepdims=0)
    m4 = b.op("Unsqueeze", [m.name, b.const(np.array([1, 2], np.int64))], (1, 1, 1, "n"))
    e = b.op("Expand", [m4.name, b.shape_of(x, [1, 1, ("dim", 1), ("dim", 1)])], (1, 1, "n", "n"))
    cond = b.op("Greater", [e.name, b.const(np.float32(0.0))], e.shape)
    return b.op("Where", [cond.name, e.name, b.const(np.float32(-1.0))], e.shape)


def op_positions(b, x):
    """Position rows Gathered by Range(0, n) (torch.arange(seq)) and added."""
    if x.shape[-1] == "n" or "n" not in x.shape:
        raise Reject()
    r = b.op("Range", [b.const(np.int64(0)), seq_scalar(b, x).name, b.const(np.int64(1))], ("n",))
    pe = b.op("Gather", [b.weight((N_MAX, x.shape[-1]), 1), r.name], ("n", x.shape[-1]), axis=0)
    return b.op("Add", [x.name, pe.name], x.shape)


def op_const_of_shape(b, x):
    """ConstantOfShape of x's computed shape, times x."""
    if any(d == "n" for d in x.shape[1:]) and x.shape[0] != "n" and x.shape[:2] != (1, "n"):
        raise Reject()
    parts = [("dim", i) if d == "n" else d for i, d in enumerate(x.shape)]
    c = b.op("ConstantOfShape", [b.shape_of(x, parts)], x.shape,
             value=numpy_helper.from_array(np.array([1.5], np.float32)))
    return b.op("Mul", [x.name, c.name], x.shape)


def op_recurrent(b, x):
    """LSTM/GRU/RNN over n: as the sequence ([n, d] -> [n, 1, d], or a [1, n, d]
    batch of one transposed), or as the batch ([n, d] -> one step of n
    items). The outputs are brought back to n rows as OCR exports do
    (Transpose, Reshape [0, 0, -1])."""
    if len(x.shape) not in (2, 3) or x.shape[-1] == "n" or (len(x.shape) == 3 and x.shape[:2] != (1, "n")):
        raise Reject()
    op = str(b.rng.choice(["LSTM", "GRU", "RNN"]))
    g = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    direction = str(b.rng.choice(["forward", "reverse", "bidirectional"]))
    nd = 2 if direction == "bidirectional" else 1
    h = int(b.rng.choice([4, 8, 16]))
    if b.rng.random() < 0.4:   # widened first: W of 32 KB and more, whose input products
        h = int(b.rng.choice([32, 64]))   # rnn-project hoists into one MatMul over n rows
        x = b.op("MatMul", [x.name, b.weight((x.shape[-1], 128), x.shape[-1])], x.shape[:-1] + (128,))
    d = x.shape[-1]
    # (layout 1, batch first, is not drawn: ONNX Runtime's CPU kernels refuse it)
    form = "batch" if len(x.shape) == 2 and b.rng.random() < 0.3 else "seq"
    if form == "batch":
        xin = b.op("Unsqueeze", [x.name, b.const(np.array([0], np.int64))], (1, "n", d))
    elif len(x.shape) == 2:
        xin = b.op("Unsqueeze", [x.name, b.const(np.array([1], np.int64))], ("n", 1, d))
    else:
        xin = b.op("Transpose", [x.name], ("n", 1, d), perm=[1, 0, 2])
    ins = [xin.name, b.weight((nd, g * h, d), d), b.weight((nd, g * h, h), h)]
    if b.rng.random() < 0.7:
        ins.append(b.weight((nd, 2 * g * h), 4))
    if form != "batch" and b.rng.random() < 0.4:   # a state of static shape
        while len(ins) < 5:
            ins.append("")
        ins.append(b.weight((nd, 1, h), 2))
    attrs = dict(hidden_size=h, direction=direction)
    if op == "GRU" and b.rng.random() < 0.5:
        attrs["linear_before_reset"] = 1
    outs = ["", ""] if op != "LSTM" else ["", "", ""]
    take = 1 if form == "batch" else 0   # Y_h [D, n, H] for the batch form, else Y
    outs[take] = b.fresh(op.lower())
    b.nodes.append(helper.make_node(op, ins, outs, name=outs[take], **attrs))
    y = outs[take]
    if form == "batch":
        t = b.op("Transpose", [y], ("n", nd, h), perm=[1, 0, 2])
        return b.op("Reshape", [t.name, b.const(np.array([0, -1], np.int64))], ("n", nd * h))
    t = b.op("Transpose", [y], ("n", 1, nd, h), perm=[0, 2, 1, 3])
    r = b.op("Reshape", [t.name, b.const(np.array([0, 0, -1], np.int64))], ("n", 1, nd * h))
    if len(x.shape) == 2:
        return b.op("Squeeze", [r.name, b.const(np.array([1], np.int64))], ("n", nd * h))
    return b.op("Transpose", [r.name], (1, "n", nd * h), perm=[1, 0, 2])


OPS = {op_unary: 6, op_binary: 6, op_matmul: 5, op_gemm: 2, op_softmax: 1.5, op_layernorm: 1.5,
       op_layernorm_primitives: 1, op_gelu: 1.5, op_reduce: 1, op_transpose: 1, op_attention: 1.5,
       op_slice: 1, op_gather: 1, op_concat: 1, op_unsqueeze: 1, op_cast: 0.5, op_mask_where: 2,
       op_positions: 2, op_const_of_shape: 1, op_recurrent: 1.5, op_slice_from_end: 1,
       op_dynamic_quant: 1, op_seq_context: 1.5, op_reverse: 1.5}


# ---- the image profile: [1, C, H, n] maps, n a width (OCR-style lines) ----------
#
# A width is a formula in n (a string, equal strings are equal widths) that
# every window op rewrites; wd(w, n) evaluates it. Convs (any kernel, stride,
# padding, dilation, groups, depthwise), BatchNormalization, activations, pools,
# residual Adds, a squeeze-excite product and channel Concats.

def wd(w, n):
    return eval(w, {"n": n})  # noqa: S307 (formulas this file writes)


def window_out(b, x, k, s, p, dil=(1, 1)):
    """Output (H, W-formula) of a 2-D window over x; Reject when some n in
    1..N_MAX gives an empty map."""
    h, w = x.shape[2], x.shape[3]
    oh = (h + 2 * p[0] - dil[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = f"(({w}) + {2 * p[1] - dil[1] * (k[1] - 1) - 1}) // {s[1]} + 1"
    if oh < 1 or min(wd(ow, n) for n in range(1, N_MAX + 1)) < 1:
        raise Reject()
    return oh, ow


def op_conv(b, x):
    c = x.shape[1]
    kind = b.rng.random()
    if kind < 0.25:  # depthwise, a multiplier of 1 or 2
        g, m = c, c * int(b.rng.choice([1, 2]))
    elif kind < 0.35 and c % 2 == 0:
        g, m = 2, 2 * int(b.rng.choice([2, 4, 8]))
    else:
        g, m = 1, int(b.rng.choice([4, 8, 16, 32]))
    k = tuple(int(v) for v in b.rng.choice([(1, 1), (3, 3), (3, 3), (1, 3), (3, 1), (5, 5), (2, 2)]))
    st = tuple(int(v) for v in b.rng.choice([(1, 1), (1, 1), (2, 2), (2, 1), (1, 2)]))
    dil = (2, 2) if b.rng.random() < 0.1 and k == (3, 3) else (1, 1)
    attrs = {"kernel_shape": list(k), "strides": list(st), "group": g}
    if dil != (1, 1):
        attrs["dilations"] = list(dil)
    if b.rng.random() < 0.15 and st == (1, 1):
        attrs["auto_pad"] = "SAME_UPPER"  # pads computed from the width at run time
        p = (dil[0] * (k[0] - 1) // 2, dil[1] * (k[1] - 1) // 2)
        if (dil[0] * (k[0] - 1)) % 2 or (dil[1] * (k[1] - 1)) % 2:
            raise Reject()
    else:
        p = (int(b.rng.integers(0, k[0] // 2 + 1)), int(b.rng.integers(0, k[1] // 2 + 1)))
        attrs["pads"] = [p[0], p[1], p[0], p[1]]
    oh, ow = window_out(b, x, k, st, p, dil)
    ins = [x.name, b.weight((m, c // g) + k, c // g * k[0] * k[1])]
    if b.rng.random() < 0.7:
        ins.append(b.weight((m,), 4))
    y = b.op("Conv", ins, (1, m, oh, ow), **attrs)
    if b.rng.random() < 0.5:
        bn = [b.const(b.rng.uniform(0.5, 1.5, m).astype(np.float32)), b.weight((m,), 4),
              b.weight((m,), 4), b.const(b.rng.uniform(0.5, 1.5, m).astype(np.float32))]
        y = b.op("BatchNormalization", [y.name] + bn, y.shape, epsilon=1e-5)
    if b.rng.random() < 0.7:
        y = op_act(b, y)
    return y


def op_convt(b, x):
    """ConvTranspose: an upsampling by its stride (the width formula grows)."""
    c = x.shape[1]
    g = c if b.rng.random() < 0.2 else 1
    m = c if g > 1 else int(b.rng.choice([4, 8, 16]))
    k = tuple(int(v) for v in b.rng.choice([(2, 2), (3, 3), (4, 4), (1, 3)]))
    st = tuple(int(v) for v in b.rng.choice([(1, 1), (2, 2), (2, 1)]))
    p = (int(b.rng.integers(0, k[0] // 2 + 1)), int(b.rng.integers(0, k[1] // 2 + 1)))
    oh = (x.shape[2] - 1) * st[0] + k[0] - 2 * p[0]
    ow = f"(({x.shape[3]}) - 1) * {st[1]} + {k[1] - 2 * p[1]}"
    if oh < 1 or min(wd(ow, n) for n in range(1, N_MAX + 1)) < 1 or oh > 64:
        raise Reject()
    ins = [x.name, b.weight((c, m // g) + k, c * k[0] * k[1] // 4)]
    if b.rng.random() < 0.6:
        ins.append(b.weight((m,), 4))
    return b.op("ConvTranspose", ins, (1, m, oh, ow), kernel_shape=list(k), strides=list(st),
                pads=[p[0], p[1], p[0], p[1]], group=g)


def op_act(b, x):
    op = str(b.rng.choice(["Relu", "Sigmoid", "HardSwish", "Clip", "LeakyRelu", "HardSigmoid", "Tanh"]))
    if op == "Clip":
        return b.op("Clip", [x.name, b.const(np.float32(0.0)), b.const(np.float32(6.0))], x.shape)
    return b.op(op, [x.name], x.shape)


def op_pool(b, x):
    op = str(b.rng.choice(["MaxPool", "AveragePool"]))
    k = tuple(int(v) for v in b.rng.choice([(2, 2), (3, 3), (2, 1), (3, 1), (1, 3)]))
    st = tuple(int(v) for v in b.rng.choice([(1, 1), (2, 2), (2, 1)]))
    p = (int(b.rng.integers(0, (k[0] - 1) // 2 + 1)), int(b.rng.integers(0, (k[1] - 1) // 2 + 1)))
    oh, ow = window_out(b, x, k, st, p)
    attrs = {"kernel_shape": list(k), "strides": list(st), "pads": [p[0], p[1], p[0], p[1]]}
    if op == "AveragePool":
        attrs["count_include_pad"] = int(b.rng.integers(0, 2))
    return b.op(op, [x.name], x.shape[:2] + (oh, ow), **attrs)


def op_image_binary(b, x, others):
    same = [o for o in others if o.shape == x.shape and o.name != x.name]
    if same and b.rng.random() < 0.7:  # a residual
        o = same[int(b.rng.integers(0, len(same)))]
        return b.op(str(b.rng.choice(["Add", "Mul", "Max"])), [x.name, o.name], x.shape)
    # per-channel scale / shift
    op = str(b.rng.choice(["Add", "Mul", "Sub"]))
    return b.op(op, [x.name, b.weight((x.shape[1], 1, 1), 1)], x.shape)


def op_squeeze_excite(b, x):
    c = x.shape[1]
    if b.rng.random() < 0.5:
        gp = b.op("GlobalAveragePool", [x.name], (1, c, 1, 1))
    else:   # as Paddle2ONNX writes it: a mean over both spatial axes
        gp = b.op("ReduceMean", [x.name], (1, c, 1, 1), axes=[2, 3], keepdims=1)
    r = max(c // 4, 2)
    h = b.op("Relu", [b.op("Conv", [gp.name, b.weight((r, c, 1, 1), c), b.weight((r,), 4)], (1, r, 1, 1),
                           kernel_shape=[1, 1]).name], (1, r, 1, 1))
    s = b.op("HardSigmoid", [b.op("Conv", [h.name, b.weight((c, r, 1, 1), r)], (1, c, 1, 1),
                                  kernel_shape=[1, 1]).name], (1, c, 1, 1))
    return b.op("Mul", [x.name, s.name], x.shape)


def op_image_concat(b, x, others):
    same = [o for o in others if o.shape[2:] == x.shape[2:] and o.name != x.name and len(o.shape) == 4]
    if not same:
        raise Reject()
    o = same[int(b.rng.integers(0, len(same)))]
    return b.op("Concat", [x.name, o.name], (1, x.shape[1] + o.shape[1]) + x.shape[2:], axis=1)


IMAGE_OPS = {op_conv: 6, op_act: 1, op_pool: 2, op_image_binary: 2, op_squeeze_excite: 1, op_image_concat: 1,
             op_convt: 1}


def build_image(rng):
    b = B(rng)
    c, h = int(rng.choice([1, 3, 4, 8])), int(rng.choice([4, 6, 8, 12, 16]))
    shape = (1, c, h, "n")
    x = V("x", shape)
    vals, cur = [x], x
    target = int(rng.integers(3, 16))
    fs, ws = list(IMAGE_OPS), np.array(list(IMAGE_OPS.values()), float)
    steps = 0
    while len(b.nodes) < target and steps < 300:
        steps += 1
        f = fs[int(rng.choice(len(fs), p=ws / ws.sum()))]
        src = cur if rng.random() < 0.8 else vals[int(rng.integers(0, len(vals)))]
        try:
            y = f(b, src, vals) if f in (op_image_binary, op_image_concat) else f(b, src)
        except Reject:
            continue
        vals.append(y)
        cur = y
    used = {i for nd in b.nodes for i in nd.input}
    outs = [v for v in vals[1:] if v.name not in used]
    if not outs or len(outs) > 6 or len(b.nodes) < 2:
        raise Reject()

    def dims(v):  # widths other than n itself are left unnamed
        return [d if isinstance(d, int) or d == "n" else None for d in v.shape]
    graph = helper.make_graph(b.nodes, "dyn_image", [helper.make_tensor_value_info("x", F32, list(shape))],
                              [helper.make_tensor_value_info(v.name, F32, dims(v)) for v in outs], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="onnxc-diff")
    model.ir_version = 8
    return model, shape


def build(rng):
    if rng.random() < 0.35:
        return build_image(rng)
    b = B(rng)
    d = int(rng.choice([4, 8, 16, 24]))
    shape = ("n", d) if rng.random() < 0.4 else (1, "n", d)
    x = V("x", shape)
    inputs = [helper.make_tensor_value_info("x", F32, list(shape))]
    vals = [x]
    cur = x
    target = int(rng.integers(4, 30))
    fs, ws = list(OPS), np.array(list(OPS.values()), float)
    steps = 0
    while len(b.nodes) < target and steps < 300:
        steps += 1
        f = fs[int(rng.choice(len(fs), p=ws / ws.sum()))]
        src = cur if rng.random() < 0.8 else vals[int(rng.integers(0, len(vals)))]
        try:
            y = f(b, src, vals) if f in (op_binary, op_concat) else f(b, src)
        except Reject:
            continue
        if "n" not in y.shape:
            continue  # stay dynamic (the node stays, unused: outputs below)
        vals.append(y)
        cur = y
    used = {i for nd in b.nodes for i in nd.input}
    outs = [v for v in vals[1:] if v.name not in used]
    if not outs or len(outs) > 6 or len(b.nodes) < 3:
        raise Reject()
    # everything computed must reach an output (unused static side values are dropped by ORT anyway)
    graph = helper.make_graph(b.nodes, "dyn", inputs,
                              [helper.make_tensor_value_info(v.name, F32, list(v.shape)) for v in outs], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="onnxc-diff")
    model.ir_version = 8
    return model, shape


def lengths(rng):
    ns = sorted({int(v) for v in rng.integers(1, N_MAX + 1, size=3)})
    if rng.random() < 0.3:
        ns = sorted(set(ns) | {1, N_MAX})
    if rng.random() < 0.2:  # fewer rows than a GEMM tile's half: the matrix-vector path
        ns = sorted(set(ns) | {int(rng.integers(2, 4))})
    return ns


def generate(seed):
    """(model, [(feeds, outputs)], ns); ONNX Runtime computes the outputs."""
    import onnxruntime as ort
    for attempt in range(50):
        rng = np.random.default_rng([seed, attempt, 7])
        try:
            model, shape = build(rng)
            onnx.checker.check_model(model, full_check=True)
            so = ort.SessionOptions()
            so.intra_op_num_threads = 1
            so.log_severity_level = 3
            sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
            sets = []
            ns = lengths(rng)
            for n in ns:
                xs = tuple(n if s == "n" else s for s in shape)
                feeds = {"x": rng.uniform(-1, 1, xs).astype(np.float32)}
                outs = sess.run(None, feeds)
                if any(not np.all(np.isfinite(o)) or np.abs(o).max(initial=0) > 1e4 for o in outs):
                    raise Reject()
                sets.append((feeds, outs))
            return model, sets, ns
        except Reject:
            continue
        except Exception:
            continue
    raise RuntimeError(f"seed {seed}: no valid dynamic model in 50 draws")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("seed", type=int)
    ap.add_argument("-o", "--output", default="model.onnx")
    a = ap.parse_args()
    model, _, ns = generate(a.seed)
    onnx.save(model, a.output)
    print(f"{a.output}: {len(model.graph.node)} nodes, n in {ns}")


if __name__ == "__main__":
    sys.exit(main())
