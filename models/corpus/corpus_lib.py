"""Shared pieces of the model corpus: a graph builder, FLOP counting, case files.

A case directory has the layout of the ONNX backend test data, so that
`onnxc check DIR` runs it like a conformance case, plus a `case.json` that the
benchmark reads (tolerances, FLOPs, the generator's hash):

  DIR/model.onnx
  DIR/test_data_set_0/input_<i>.pb    one TensorProto per graph input
  DIR/test_data_set_0/output_<i>.pb   ONNX Runtime's result, graph optimizations off
  DIR/case.json

Everything random comes from numpy generators seeded by the model's name, so a
rerun writes byte-identical model and input files.
"""

import hashlib
import json
import os
import shutil
import zlib

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ort.set_default_logger_severity(3)   # light models warn about unused initializers

NP_TO_ONNX = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64}


def seed_of(name):
    """Seeds depend on the name only, so adding a model changes no other."""
    return zlib.crc32(name.encode())


class Builder:
    """Collects nodes and initializers; every helper returns its output name.

    Node and tensor names follow the path-like style of the PyTorch exporter
    (`/layer1/0/conv1/Conv`) so that generated code is easy to map back.
    """

    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []
        self.scope = []
        self.counter = 0
        self.calibrations = []   # (feature, weight initializer, target std, feature axis)

    # ---- names
    def push(self, part):
        self.scope.append(str(part))

    def pop(self):
        self.scope.pop()

    def _fresh(self, hint):
        self.counter += 1
        prefix = "/" + "/".join(self.scope) if self.scope else ""
        return f"{prefix}/{hint}_{self.counter}"

    # ---- tensors
    def const(self, value, hint="c", dtype=np.float32):
        name = self._fresh(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def normal(self, shape, std, hint="w"):
        return self.const(self.rng.standard_normal(shape, dtype=np.float32) * np.float32(std),
                          hint)

    def he(self, shape, hint="w", gain=2.0):
        """He-style init: keeps the second moment of activations about constant."""
        fan_in = int(np.prod(shape[1:]))
        return self.normal(shape, np.sqrt(gain / fan_in), hint)

    # ---- nodes
    def op(self, op_type, inputs, out=None, n_out=1, **attrs):
        """Appends a node; `out` names its (single) output, else fresh names."""
        if out is not None:
            outs = [out]
        else:
            outs = [self._fresh(f"{op_type}_out{i}" if n_out > 1 else op_type)
                    for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs,
                                           name=self._fresh(op_type), **attrs))
        return outs[0] if n_out == 1 else outs

    def constant(self, value, dtype=np.float32):
        """A Constant node rather than an initializer (exporters emit both)."""
        return self.op("Constant", [], value=numpy_helper.from_array(np.asarray(value, dtype)))

    def model(self, inputs, outputs, opset):
        """inputs/outputs: lists of (name, shape, numpy dtype)."""
        def vi(n, s, dt):
            return helper.make_tensor_value_info(n, NP_TO_ONNX[np.dtype(dt)], s)
        graph = helper.make_graph(self.nodes, self.name,
                                  [vi(*x) for x in inputs], [vi(*x) for x in outputs],
                                  self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="onnxc-corpus")
        m.ir_version = 8 if opset >= 13 else 7
        return m


# ------------------------------------------------------------- FLOPs --

def _known_shapes(model):
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    g = inferred.graph
    shapes, types = {}, {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        tt = vi.type.tensor_type
        types[vi.name] = tt.elem_type
        if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
            shapes[vi.name] = [d.dim_value for d in tt.shape.dim]
    for t in g.initializer:
        shapes[t.name] = list(t.dims)
    return shapes, types


def intermediates(model, names, feeds, types=None):
    """Values of intermediate tensors: an ONNX Runtime run (no graph
    optimizations) with those values added as graph outputs."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for n in names:
        elem = (types or {}).get(n) or TensorProto.FLOAT
        m.graph.output.append(helper.make_tensor_value_info(n, elem, None))
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return dict(zip(names, sess.run(names, feeds)))


def _measured_shapes(model, names, types, feeds):
    """Shapes that inference left open (a Reshape fed by a Shape chain)."""
    return {n: list(v.shape) for n, v in intermediates(model, names, feeds, types).items()}


def calibrate(b, model, feeds):
    """Scales each registered weight (drawn with std 1) so that the values it
    produces from the measured feature have about the target std, the way a
    trained classifier has logits of moderate spread rather than a one-hot
    Softmax. The factor is rounded to two digits, so float noise between
    machines cannot change the weights written."""
    if not b.calibrations:
        return
    feats = intermediates(model, [c[0] for c in b.calibrations], feeds)
    inits = {t.name: t for t in model.graph.initializer}
    for feature, weight, target, axis in b.calibrations:
        f = feats[feature].astype(np.float64)
        norm = float(np.sqrt(np.mean(np.sum(f ** 2, axis=axis))))
        factor = float(f"{target / max(norm, 1e-30):.2g}")
        t = inits[weight]
        t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t) * np.float32(factor), weight))


def node_flops(model, feeds):
    """{node name: (op type, output shape, weight shape, FLOPs)} for Conv,
    ConvTranspose, MatMul and Gemm nodes; FLOPs = 2 x multiply-accumulates."""
    shapes, types = _known_shapes(model)
    ops = [n for n in model.graph.node
           if n.op_type in ("Conv", "ConvTranspose", "MatMul", "Gemm")]
    needed = {x for n in ops for x in (n.input[0], n.input[1], n.output[0])}
    missing = sorted(x for x in needed if x not in shapes)
    if missing:
        shapes.update(_measured_shapes(model, missing, types, feeds))
    result = {}
    for i, n in enumerate(ops):
        x, w, out = shapes[n.input[0]], shapes[n.input[1]], shapes[n.output[0]]
        if n.op_type == "Conv":
            f = 2 * int(np.prod(out)) * int(np.prod(w[1:]))
        elif n.op_type == "ConvTranspose":
            f = 2 * int(np.prod(x)) * int(np.prod(w[1:]))
        elif n.op_type == "MatMul":
            f = 2 * int(np.prod(out)) * x[-1]
        else:
            trans_a = next((a.i for a in n.attribute if a.name == "transA"), 0)
            f = 2 * int(np.prod(out)) * (x[0] if trans_a else x[1])
        result[n.name or f"#{i}"] = (n.op_type, out, w, f)
    return result


def count_flops(model, feeds):
    return sum(f for _, _, _, f in node_flops(model, feeds).values())


def calibrate(b, model, feeds):
    """Scales each registered weight (drawn with std 1) so that the values it
    produces from the measured feature have about the target std, the way a
    trained classifier has logits of moderate spread rather than a one-hot
    Softmax. The factor is rounded to two digits, so float noise between
    machines cannot change the weights written."""
    if not b.calibrations:
        return
    feats = intermediates(model, [c[0] for c in b.calibrations], feeds)
    inits = {t.name: t for t in model.graph.initializer}
    for feature, weight, target, axis in b.calibrations:
        f = feats[feature].astype(np.float64)
        norm = float(np.sqrt(np.mean(np.sum(f ** 2, axis=axis))))
        factor = float(f"{target / max(norm, 1e-30):.2g}")
        t = inits[weight]
        t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t) * np.float32(factor), weight))


def count_flops_by_op(model, feeds):
    """2 x multiply-accumulates of Conv, ConvTranspose, MatMul and Gemm nodes,
    per op type."""
    shapes, types = _known_shapes(model)
    ops = [n for n in model.graph.node
           if n.op_type in ("Conv", "ConvTranspose", "MatMul", "Gemm")]
    needed = {x for n in ops for x in (n.input[0], n.input[1], n.output[0])}
    missing = sorted(x for x in needed if x not in shapes)
    if missing:
        shapes.update(_measured_shapes(model, missing, types, feeds))
    total = {}
    for n in ops:
        x, w, out = shapes[n.input[0]], shapes[n.input[1]], shapes[n.output[0]]
        if n.op_type == "Conv":
            f = 2 * int(np.prod(out)) * int(np.prod(w[1:]))
        elif n.op_type == "ConvTranspose":
            f = 2 * int(np.prod(x)) * int(np.prod(w[1:]))
        elif n.op_type == "MatMul":
            f = 2 * int(np.prod(out)) * x[-1]
        else:
            trans_a = next((a.i for a in n.attribute if a.name == "transA"), 0)
            f = 2 * int(np.prod(out)) * (x[0] if trans_a else x[1])
        total[n.op_type] = total.get(n.op_type, 0) + f
    return total


def count_flops(model, feeds):
    return sum(count_flops_by_op(model, feeds).values())


def calibrate(b, model, feeds):
    """Scales each registered weight (drawn with std 1) so that the values it
    produces from the measured feature have about the target std, the way a
    trained classifier has logits of moderate spread rather than a one-hot
    Softmax. The factor is rounded to two digits, so float noise between
    machines cannot change the weights written."""
    if not b.calibrations:
        return
    feats = intermediates(model, [c[0] for c in b.calibrations], feeds)
    inits = {t.name: t for t in model.graph.initializer}
    for feature, weight, target, axis in b.calibrations:
        f = feats[feature].astype(np.float64)
        norm = float(np.sqrt(np.mean(np.sum(f ** 2, axis=axis))))
        factor = float(f"{target / max(norm, 1e-30):.2g}")
        t = inits[weight]
        t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t) * np.float32(factor), weight))


def count_flops(model, feeds):
    """2 x multiply-accumulates of Conv, ConvTranspose, MatMul and Gemm nodes."""
    shapes, types = _known_shapes(model)
    ops = [n for n in model.graph.node
           if n.op_type in ("Conv", "ConvTranspose", "MatMul", "Gemm")]
    needed = {x for n in ops for x in (n.input[0], n.input[1], n.output[0])}
    missing = sorted(x for x in needed if x not in shapes)
    if missing:
        shapes.update(_measured_shapes(model, missing, types, feeds))
    total = 0
    for n in ops:
        x, w, out = shapes[n.input[0]], shapes[n.input[1]], shapes[n.output[0]]
        if n.op_type == "Conv":
            total += 2 * int(np.prod(out)) * int(np.prod(w[1:]))
        elif n.op_type == "ConvTranspose":
            total += 2 * int(np.prod(x)) * int(np.prod(w[1:]))
        elif n.op_type == "MatMul":
            total += 2 * int(np.prod(out)) * x[-1]
        else:
            trans_a = next((a.i for a in n.attribute if a.name == "transA"), 0)
            total += 2 * int(np.prod(out)) * (x[0] if trans_a else x[1])
    return total


# -------------------------------------------------------- case files --

def source_hash(*files):
    """Hash of the scripts that write a case (this file and the ones given)
    and of the onnx and onnxruntime versions: a case written by other code is
    rebuilt, and editing one family of models leaves the others current."""
    h = hashlib.sha256(f"onnx {onnx.__version__} ort {ort.__version__}".encode())
    for path in sorted({os.path.abspath(__file__), *map(os.path.abspath, files)}):
        with open(path, "rb") as fh:
            h.update(os.path.basename(path).encode() + b"\0" + fh.read())
    return h.hexdigest()[:16]


def is_current(case_dir, gen_hash):
    try:
        with open(os.path.join(case_dir, "case.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return False
    return (meta.get("generator") == gen_hash
            and os.path.isfile(os.path.join(case_dir, "model.onnx")))


def exact_int8(opts):
    """ONNX Runtime's exact u8 x s8 products on x86 without VNNI: its default
    AVX2 kernel (vpmaddubsw) saturates pairs of products to 16 bits, so its
    int8 results there differ from the integer arithmetic (and from its own
    results on a VNNI machine); this session option asks for the exact
    kernel. No effect on float models or VNNI machines."""
    opts.add_session_config_entry("session.x64quantprecision", "1")
    return opts


def reference_outputs(model_bytes, feeds, level):
    opts = exact_int8(ort.SessionOptions())
    opts.graph_optimization_level = level
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return names, sess.run(names, feeds)


def max_excess(got, want, rtol, atol):
    """Largest |got - want| / (atol + rtol |want|): <= 1 means within tolerance."""
    worst = 0.0
    for g, w in zip(got, want):
        if g.dtype.kind in "iub":
            if not np.array_equal(g, w):
                return float("inf")
            continue
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        both_nan = np.isnan(g64) & np.isnan(w64)
        err = np.where(both_nan, 0.0, np.abs(g64 - w64) / (atol + rtol * np.abs(w64)))
        err = np.nan_to_num(err, nan=np.inf)
        if err.size:
            worst = max(worst, float(err.max()))
    return worst


def write_case(case_dir, model, feeds, meta, optimized_reference=False):
    """Checks the model, computes ONNX Runtime's outputs with graph
    optimizations disabled (no fused kernel between graph and numbers), and
    writes the case atomically (a temporary sibling renamed into place).
    optimized_reference: the outputs written are those of the optimized graph
    instead (QDQ models: ORT's integer kernels), and ort_optimized_excess
    says how far the unoptimized (float) execution lands from them."""
    if model.ByteSize() < 2_000_000_000:
        onnx.checker.check_model(model, full_check=True)
    data = model.SerializeToString()
    L = ort.GraphOptimizationLevel
    out_names, results = reference_outputs(data, feeds, L.ORT_DISABLE_ALL)
    # how far ORT's own optimized graph lands from the reference: the case's
    # tolerance must accept it, or the tolerance is too tight for float32
    _, optimized = reference_outputs(data, feeds, L.ORT_ENABLE_ALL)
    if optimized_reference:
        results, optimized = optimized, results
    meta = dict(meta)
    meta["ort_optimized_excess"] = max_excess(optimized, results, meta["rtol"], meta["atol"])
    meta["outputs"] = [{"name": n, "shape": list(r.shape), "dtype": str(r.dtype),
                        "max_abs": float(np.max(np.abs(r))) if r.size else 0.0}
                       for n, r in zip(out_names, results)]

    tmp = case_dir.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    data_dir = os.path.join(tmp, "test_data_set_0")
    os.makedirs(data_dir)
    with open(os.path.join(tmp, "model.onnx"), "wb") as f:
        f.write(data)
    for prefix, pairs in (("input", feeds.items()), ("output", zip(out_names, results))):
        for i, (tensor_name, value) in enumerate(pairs):
            with open(os.path.join(data_dir, f"{prefix}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(value, tensor_name).SerializeToString())
    with open(os.path.join(tmp, "case.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")
    shutil.rmtree(case_dir, ignore_errors=True)
    os.rename(tmp, case_dir)
    return meta
