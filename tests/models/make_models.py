#!/usr/bin/env python3
"""Build small multi-op ONNX test models with onnxruntime reference outputs.

Usage: make_models.py OUTDIR

Every model becomes a case directory in the layout of the ONNX backend test
data, so `onnxc check OUTDIR/<case>` runs it like a conformance case:

  OUTDIR/<case>/model.onnx
  OUTDIR/<case>/test_data_set_0/input_<i>.pb    one TensorProto per graph input
  OUTDIR/<case>/test_data_set_0/output_<i>.pb   onnxruntime's result per output

Weights and inputs come from fixed seeds, so reruns give the same models.
Reference outputs come from onnxruntime's CPU provider with graph
optimizations disabled, so no fused kernel stands between the graph and the
numbers.
"""

import os
import shutil
import sys
import zlib

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

DEFAULT_OPSET = 13


class Builder:
    """Collects nodes and initializers; every helper returns its output name."""

    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []
        self.counter = 0

    def _fresh(self, hint):
        self.counter += 1
        return f"{hint}_{self.counter}"

    def const(self, value, hint="c", dtype=np.float32):
        name = self._fresh(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def weight(self, shape, hint="w", scale=None):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        scale = np.sqrt(2.0 / fan_in) if scale is None else scale
        return self.const(self.rng.standard_normal(shape) * scale, hint)

    def op(self, op_type, inputs, out=None, **attrs):
        """Appends a node; `out` names its output (a graph output), else a fresh name."""
        out = out or self._fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out],
                                           name=self._fresh(op_type), **attrs))
        return out

    def constant_node(self, value, dtype=np.float32):
        """A Constant node rather than an initializer."""
        return self.op("Constant", [], value=numpy_helper.from_array(np.asarray(value, dtype)))

    def conv(self, x, cin, cout, k, bias=True, group=1, **attrs):
        inputs = [x, self.weight((cout, cin // group, k, k), "conv_w")]
        if bias:
            inputs.append(self.const(self.rng.standard_normal(cout) * 0.1, "conv_b"))
        return self.op("Conv", inputs, kernel_shape=[k, k], group=group, **attrs)

    def batchnorm(self, x, c):
        r = self.rng
        return self.op("BatchNormalization", [
            x,
            self.const(r.uniform(0.5, 1.5, c), "bn_scale"),
            self.const(r.standard_normal(c) * 0.1, "bn_bias"),
            self.const(r.standard_normal(c) * 0.1, "bn_mean"),
            self.const(r.uniform(0.5, 2.0, c), "bn_var"),
        ], epsilon=1e-5)

    def gemm(self, x, k, n, trans_b=True, **attrs):
        w_shape = (n, k) if trans_b else (k, n)
        w = self.const(self.rng.standard_normal(w_shape) * np.sqrt(2.0 / k), "fc_w")
        b = self.const(self.rng.standard_normal(n) * 0.1, "fc_b")
        return self.op("Gemm", [x, w, b], transB=int(trans_b), **attrs)

    def model(self, inputs, outputs, opset=DEFAULT_OPSET):
        """inputs/outputs: lists of (name, shape); all tensors are float32."""
        graph = helper.make_graph(
            self.nodes, self.name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
            self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="onnxc-make-models")
        m.ir_version = 8 if opset >= 13 else 4
        return m


# ---------------------------------------------------------------- models --

def resnet_blocks(b):
    """Conv+BN+Relu stem, identity and projection residual blocks, GAP, Gemm."""
    x = b.op("Relu", [b.batchnorm(b.conv("input", 3, 8, 3, pads=[1, 1, 1, 1], bias=False), 8)])

    # identity block
    y = b.op("Relu", [b.batchnorm(b.conv(x, 8, 8, 3, pads=[1, 1, 1, 1]), 8)])
    y = b.batchnorm(b.conv(y, 8, 8, 3, pads=[1, 1, 1, 1]), 8)
    x = b.op("Relu", [b.op("Add", [x, y])])

    # downsampling block with a strided 1x1 projection on the shortcut
    y = b.op("Relu", [b.batchnorm(b.conv(x, 8, 16, 3, strides=[2, 2], pads=[1, 1, 1, 1]), 16)])
    y = b.batchnorm(b.conv(y, 16, 16, 3, pads=[1, 1, 1, 1]), 16)
    shortcut = b.batchnorm(b.conv(x, 8, 16, 1, strides=[2, 2], bias=False), 16)
    x = b.op("Relu", [b.op("Add", [y, shortcut])])

    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])], axis=1)
    b.op("Gemm", [x, b.weight((10, 16)), b.const(np.zeros(10))], out="logits", transB=1)
    return b.model([("input", [1, 3, 16, 16])], [("logits", [1, 10])])


def mobilenet(b):
    """Depthwise-separable convs with Clip(0, 6) as Relu6, dilation, auto_pad."""
    lo, hi = b.const(0.0, "min"), b.const(6.0, "max")

    def relu6(t):
        return b.op("Clip", [t, lo, hi])

    x = relu6(b.batchnorm(b.conv("input", 3, 8, 3, strides=[2, 2], pads=[1, 1, 1, 1]), 8))
    # depthwise 3x3, then pointwise 1x1
    x = relu6(b.batchnorm(b.conv(x, 8, 8, 3, group=8, pads=[1, 1, 1, 1]), 8))
    x = relu6(b.conv(x, 8, 16, 1))
    # strided depthwise with SAME_UPPER padding (8x8 -> 4x4)
    x = relu6(b.conv(x, 16, 16, 3, group=16, strides=[2, 2], auto_pad="SAME_UPPER"))
    # dilated depthwise keeps 4x4 with pads == dilation
    x = relu6(b.conv(x, 16, 16, 3, group=16, dilations=[2, 2], pads=[2, 2, 2, 2]))
    x = relu6(b.conv(x, 16, 24, 1))
    # squeeze-and-excitation: per-channel gate broadcast over H and W
    gate = b.op("Relu", [b.conv(b.op("GlobalAveragePool", [x]), 24, 6, 1)])
    x = b.op("Mul", [x, b.op("Sigmoid", [b.conv(gate, 6, 24, 1)])])
    x = b.op("Reshape", [b.op("GlobalAveragePool", [x]), b.const([1, -1], "shape", np.int64)])
    x = b.gemm(x, 24, 10)
    b.op("Softmax", [x], out="probs", axis=-1)
    return b.model([("input", [1, 3, 16, 16])], [("probs", [1, 10])])


def transformer_block(b):
    """Multi-head self-attention + MLP on [batch, seq, d_model].

    The head split reshape takes batch and sequence length from the runtime
    shape (Shape -> Gather -> Unsqueeze -> Concat), as exporters emit it.
    """
    batch, seq, d, heads = 2, 5, 16, 4
    dh = d // heads
    axes0 = b.const([0], "axes", np.int64)

    # centre each token: x - sum(x)/d, with d read from the shape and cast
    shape = b.op("Shape", ["input"])
    d_model = b.op("Cast", [b.op("Gather", [shape, b.const(2, "idx", np.int64)])],
                   to=TensorProto.FLOAT)
    row_sum = b.op("MatMul", ["input", b.const(np.ones((d, 1)), "ones")])
    x = b.op("Sub", ["input", b.op("Div", [row_sum, d_model])])

    batch_dim = b.op("Unsqueeze", [b.op("Gather", [shape, b.const(0, "idx", np.int64)]), axes0])
    seq_dim = b.op("Unsqueeze", [b.op("Gather", [shape, b.const(1, "idx", np.int64)]), axes0])
    split_shape = b.op("Concat", [batch_dim, seq_dim, b.constant_node([heads, dh], np.int64)],
                       axis=0)

    def project(t, n_in, n_out):
        return b.op("Add", [b.op("MatMul", [t, b.weight((n_in, n_out), scale=n_in ** -0.5)]),
                            b.const(b.rng.standard_normal(n_out) * 0.1, "bias")])

    def heads_first(t, perm):
        return b.op("Transpose", [b.op("Reshape", [t, split_shape])], perm=perm)

    q = heads_first(project(x, d, d), [0, 2, 1, 3])   # [B, H, S, dh]
    k = heads_first(project(x, d, d), [0, 2, 3, 1])   # [B, H, dh, S]
    v = heads_first(project(x, d, d), [0, 2, 1, 3])
    scores = b.op("Div", [b.op("MatMul", [q, k]), b.constant_node(np.sqrt(dh))])
    attn = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])
    # back to [B, S, d]; 0 copies a dimension and -1 infers it
    attn = b.op("Reshape", [b.op("Transpose", [attn], perm=[0, 2, 1, 3]),
                            b.const([0, 0, -1], "shape", np.int64)])
    x = b.op("Add", [x, project(attn, d, d)])

    hidden = b.op("Relu", [project(x, d, 2 * d)])
    b.op("Add", [x, project(hidden, 2 * d, d)], out="output")
    return b.model([("input", [batch, seq, d])], [("output", [batch, seq, d])])


def inception(b):
    """Four parallel branches joined by Concat, then assorted pooling."""
    x = "input"
    b1 = b.op("Relu", [b.conv(x, 4, 4, 1)])
    b2 = b.op("Relu", [b.conv(b.op("Relu", [b.conv(x, 4, 3, 1)]), 3, 6, 3, pads=[1, 1, 1, 1])])
    b3 = b.op("Relu", [b.conv(b.op("Relu", [b.conv(x, 4, 2, 1)]), 2, 4, 5, pads=[2, 2, 2, 2])])
    pool = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
    b4 = b.op("Relu", [b.conv(pool, 4, 2, 1)])
    x = b.op("Concat", [b1, b2, b3, b4], axis=1)                      # [1, 16, 12, 12]

    x = b.op("AveragePool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
             count_include_pad=0)                                      # [1, 16, 6, 6]
    avg_incl = b.op("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1],
                    count_include_pad=1)                               # [1, 16, 4, 4]
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)  # [1, 16, 3, 3]
    x = b.op("Concat", [b.op("GlobalMaxPool", [x]), b.op("GlobalAveragePool", [avg_incl])],
             axis=1)                                                   # [1, 32, 1, 1]
    x = b.op("Squeeze", [x, b.const([2, 3], "axes", np.int64)])
    b.op("LogSoftmax", [x], out="log_probs", axis=1)
    return b.model([("input", [1, 4, 12, 12])], [("log_probs", [1, 32])])


def mlp(b):
    """Gemm variants (transA/transB, alpha/beta, broadcast C) and activations."""
    x = b.op("LeakyRelu", [b.gemm("input", 20, 32, alpha=0.5, beta=2.0)], alpha=0.1)
    x = b.op("Tanh", [b.gemm(x, 32, 24, trans_b=False)])
    # transA: feed x^T so Gemm transposes it back; C is a scalar broadcast
    xt = b.op("Transpose", [x], perm=[1, 0])
    x = b.op("Gemm", [xt, b.weight((16, 24)), b.const(0.25, "c")], transA=1, transB=1)
    x = b.op("Sigmoid", [x])
    x = b.op("Identity", [b.op("Dropout", [x])])
    x = b.op("MatMul", [x, b.weight((16, 5))])
    b.op("Softmax", [x], out="probs", axis=1)
    return b.model([("input", [4, 20])], [("probs", [4, 5])])


def conv_variants(b):
    """One input through several Conv attribute combinations, one output each."""
    specs = [  # name, cin, cout, kernel, attributes, output shape
        ("grouped", 4, 6, 3, dict(group=2, pads=[1, 1, 1, 1]), [1, 6, 9, 9]),
        ("asym_pads_strided", 4, 3, 3, dict(strides=[2, 1], pads=[0, 1, 2, 0]), [1, 3, 5, 8]),
        ("same_lower", 4, 2, 2, dict(strides=[2, 2], auto_pad="SAME_LOWER"), [1, 2, 5, 5]),
        ("valid_dilated", 4, 5, 3, dict(dilations=[2, 1], auto_pad="VALID", bias=False),
         [1, 5, 5, 7]),
    ]
    for name, cin, cout, k, attrs, _ in specs:
        b.conv("input", cin, cout, k, out=name, **attrs)
    return b.model([("input", [1, 4, 9, 9])], [(s[0], s[-1]) for s in specs])


def legacy_opset9(b):
    """Opset-9 forms: attribute-style Clip/Squeeze/Unsqueeze, Dropout ratio,
    and Softmax whose axis flattens the trailing dimensions into one."""
    x = b.batchnorm(b.conv("input", 3, 4, 3, pads=[1, 1, 1, 1]), 4)
    x = b.op("Clip", [x], min=0.0, max=6.0)
    x = b.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])      # [1, 4, 3, 3]
    # opset < 13: softmax over the 36 values of dims 1..3 coerced to one row
    sm = b.op("Softmax", [x], out="softmax_4d", axis=1)
    x = b.op("Unsqueeze", [sm], axes=[0, 3])                          # [1, 1, 4, 1, 3, 3]
    x = b.op("Squeeze", [x], axes=[0, 3])
    x = b.op("Flatten", [x], axis=1)
    x = b.op("Dropout", [x], ratio=0.3)
    x = b.op("Reshape", [x, b.const([1, 36], "shape", np.int64)])
    b.op("Gemm", [x, b.weight((36, 6)), b.const(np.zeros(6))], out="logits")
    return b.model([("input", [1, 3, 6, 6])],
                   [("logits", [1, 6]), ("softmax_4d", [1, 4, 3, 3])], opset=9)


def graph_cleanup(b):
    """What simplify, fuse-bn and cse rewrite: BN and per-channel Mul/Add/Div
    after Conv and Gemm, transpose pairs, a reshape chain, no-op Cast and Mul,
    and two branches that compute the same thing."""
    r = b.rng
    x = b.batchnorm(b.conv("input", 3, 8, 3, pads=[1, 1, 1, 1]), 8)
    x = b.op("Mul", [x, b.const(r.uniform(0.5, 1.5, (8, 1, 1)), "scale")])
    x = b.op("Add", [b.const(0.1, "shift"), x])
    x = b.op("Div", [x, b.const(r.uniform(1.0, 2.0, (1, 8, 1, 1)), "div")])
    x = b.op("Relu", [x])                                              # [1, 8, 8, 8]

    # the same Conv+BN+Relu twice over shared weights
    w = b.weight((8, 8, 1, 1), "pw_w")
    params = [b.const(r.uniform(0.5, 1.5, 8), "bn_scale"),
              b.const(r.standard_normal(8) * 0.1, "bn_bias"),
              b.const(r.standard_normal(8) * 0.1, "bn_mean"),
              b.const(r.uniform(0.5, 2.0, 8), "bn_var")]

    def branch():
        return b.op("Relu", [b.op("BatchNormalization", [b.op("Conv", [x, w]), *params])])

    x = b.op("Add", [branch(), branch()])

    # NCHW -> NHWC -> NCHW cancels; NHWC then a swap of the last two composes
    t = b.op("Transpose", [b.op("Transpose", [x], perm=[0, 2, 3, 1])], perm=[0, 3, 1, 2])
    b.op("Transpose", [b.op("Transpose", [t], perm=[0, 2, 3, 1])], out="nwhc", perm=[0, 2, 1, 3])
    t = b.op("Mul", [b.op("Cast", [t], to=TensorProto.FLOAT), b.const(1.0, "one")])

    # Flatten -> Reshape -> Unsqueeze -> Reshape is one Reshape
    t = b.op("Flatten", [b.op("GlobalAveragePool", [t])], axis=1)      # [1, 8]
    t = b.op("Unsqueeze", [b.op("Reshape", [t, b.const([2, 4], "shape", np.int64)]),
                           b.const([0], "axes", np.int64)])            # [1, 2, 4]
    t = b.op("Reshape", [t, b.const([1, 8], "shape", np.int64)])

    # Gemm (B not transposed, alpha, beta) + BN, then per-column Mul and Sub
    g = b.batchnorm(b.gemm(t, 8, 6, trans_b=False, alpha=0.5, beta=2.0), 6)
    g = b.op("Mul", [g, b.const(r.uniform(0.5, 1.5, (1, 6)), "col_scale")])
    g = b.op("Sub", [g, b.const(r.standard_normal(6) * 0.1, "col_shift")])
    b.op("Softmax", [g], out="probs", axis=-1)
    return b.model([("input", [1, 3, 8, 8])], [("probs", [1, 6]), ("nwhc", [1, 8, 8, 8])])


def local_functions(b):
    """Model-local functions (ModelProto.functions), inlined by the frontend: a
    function calling another one, an attribute reference with a default, the
    same function called twice, a caller that omits an output."""
    dom = "onnxc.test"
    # ScaledAct(x) = LeakyRelu(x * scale, alpha=@alpha), default alpha 0.2
    leaky = helper.make_node("LeakyRelu", ["t"], ["y"])
    leaky.attribute.append(helper.make_attribute_ref("alpha", onnx.AttributeProto.FLOAT))
    scaled_act = helper.make_function(
        dom, "ScaledAct", ["x", "scale"], ["y"],
        [helper.make_node("Mul", ["x", "scale"], ["t"]), leaky],
        [helper.make_opsetid("", DEFAULT_OPSET)], attributes=[],
        attribute_protos=[helper.make_attribute("alpha", 0.2)])
    # Block(x, w) -> (ScaledAct(x @ w, 2), x @ w): calls ScaledAct inside.
    block = helper.make_function(
        dom, "Block", ["x", "w"], ["y", "pre"],
        [helper.make_node("MatMul", ["x", "w"], ["pre"]),
         helper.make_node("Constant", [], ["two"], value=numpy_helper.from_array(
             np.asarray(2.0, np.float32))),
         helper.make_node("ScaledAct", ["pre", "two"], ["y"], domain=dom, alpha=0.05)],
        [helper.make_opsetid("", DEFAULT_OPSET), helper.make_opsetid(dom, 1)])
    x = "input"
    w1, w2 = b.weight((16, 16)), b.weight((16, 8))
    h = b._fresh("h")
    b.nodes.append(helper.make_node("Block", [x, w1], [h, ""], domain=dom, name="block1"))
    y, pre = b._fresh("y"), "pre2"
    b.nodes.append(helper.make_node("Block", [h, w2], [y, pre], domain=dom, name="block2"))
    s = b._fresh("s")
    b.nodes.append(helper.make_node("ScaledAct", [y, b.const(0.5, "half")], [s], domain=dom,
                                    name="act"))
    b.op("Add", [s, b.op("Sigmoid", [pre])], out="output")
    m = b.model([("input", [4, 16])], [("output", [4, 8])])
    m.functions.extend([scaled_act, block])
    m.opset_import.append(helper.make_opsetid(dom, 1))
    return m


MODELS = [resnet_blocks, mobilenet, transformer_block, inception, mlp, conv_variants,
          legacy_opset9, graph_cleanup, local_functions]


# ------------------------------------------------------------ case files --

def write_case(outdir, name, model, seed):
    onnx.checker.check_model(model, full_check=True)
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in model.graph.input:
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    out_names = [o.name for o in model.graph.output]
    results = sess.run(out_names, feeds)

    case_dir = os.path.join(outdir, name)
    data_dir = os.path.join(case_dir, "test_data_set_0")
    shutil.rmtree(case_dir, ignore_errors=True)
    os.makedirs(data_dir)
    onnx.save(model, os.path.join(case_dir, "model.onnx"))
    for prefix, pairs in (("input", feeds.items()), ("output", zip(out_names, results))):
        for i, (tensor_name, value) in enumerate(pairs):
            tensor = numpy_helper.from_array(value, tensor_name)
            with open(os.path.join(data_dir, f"{prefix}_{i}.pb"), "wb") as f:
                f.write(tensor.SerializeToString())


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.exit("usage: make_models.py OUTDIR")
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for build in MODELS:
        name = build.__name__
        # seeds depend on the name only, so adding a model changes no other
        seed = zlib.crc32(name.encode())
        write_case(outdir, name, build(Builder(name, seed)), seed + 1)
        print(f"wrote {os.path.join(outdir, name)}")


if __name__ == "__main__":
    main()
