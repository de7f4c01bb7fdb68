#!/usr/bin/env python3
"""The Python package (python/onnxc, docs/python.md) end to end.

Usage: test_python.py ONNXC [--models DIR]   (DIR: the end-to-end corpus e2e.models_vs_ort writes)

Imports the package from the source tree (PYTHONPATH-style: nothing is
installed into the venv), writes small models with onnx.helper, compiles
each with onnxc.compile, and checks:
  - the metadata read from NAME_info() (names, ONNX element types, numpy
    dtypes, shapes, dynamic dims) equals the ONNX graph's;
  - outputs equal ONNX Runtime's: float32 (with a --threads 2 build large
    enough to start the pool), int64 indices, several inputs and outputs
    with a bool output, float16, outputs that the passes replace by an
    input or a constant (their ONNX names kept), and a data-dependent
    NonZero output;
  - the failure paths: wrong shape / dtype / count / names, an index out of
    range (RunError with ONNXC_ERR_BAD_INDEX), a model onnxc rejects
    (CompileError), a library without NAME_info, a closed model;
  - load() finds the name from libNAME.so and from the exported symbols;
  - a model built for a range of shapes (-D seq=2..64:2) runs every length
    in range from one library, and refuses others;
  - `pip install --target DIR ./python --no-deps --no-build-isolation` gives
    an importable package (skipped, with a message, without setuptools).
"""
import ctypes
import importlib.util
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper
import onnxruntime as ort

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SRC, "python"))
import onnxc  # noqa: E402

RTOL, ATOL = 1e-3, 1e-5  # as tests/models/real_models.py
fails = []
n_checks = [0]


def check(cond, what):
    n_checks[0] += 1
    if not cond:
        fails.append(what)
        print("FAIL:", what)


def expect_error(exc, words, fn, *args):
    """fn(*args) raises exc and its message holds every word of `words`."""
    try:
        fn(*args)
    except exc as e:
        msg = str(e)
        missing = [w for w in words if w not in msg]
        check(not missing, "%s message lacks %s: %s" % (exc.__name__, missing, msg))
        return e
    except Exception as e:  # noqa: BLE001 - the wrong exception is a failure
        check(False, "expected %s (%s), got %s: %s" % (exc.__name__, words, type(e).__name__, e))
        return None
    check(False, "expected %s (%s), nothing raised" % (exc.__name__, words))
    return None


def save(d, name, nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    path = os.path.join(d, name + ".onnx")
    onnx.save(m, path)
    return path


def models(d):
    rng = np.random.default_rng(3)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    vi = helper.make_tensor_value_info
    out = {}
    # float32: a large MatMul (2^21 multiply-adds: on every thread with --threads 2), bias, Relu, Softmax.
    out["mlp"] = save(d, "mlp", [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Add", ["h", "b"], ["hb"]),
        helper.make_node("Relu", ["hb"], ["r"]),
        helper.make_node("Softmax", ["r"], ["probs"], axis=1),
    ], [vi("x", T.FLOAT, [64, 256])], [vi("probs", T.FLOAT, [64, 128])],
        [numpy_helper.from_array(f(256, 128) * 0.1, "w"), numpy_helper.from_array(f(128), "b")])
    # int64 input: an embedding lookup (Gather) and a count (ReduceSum of a Cast).
    out["embed"] = save(d, "embed", [
        helper.make_node("Gather", ["table", "ids"], ["emb"], axis=0),
        helper.make_node("ReduceSum", ["ids", "ax"], ["total"], keepdims=0),
    ], [vi("ids", T.INT64, [2, 5])], [vi("emb", T.FLOAT, [2, 5, 4]), vi("total", T.INT64, [2])],
        [numpy_helper.from_array(f(10, 4), "table"), numpy_helper.from_array(np.array([1], np.int64), "ax")])
    # several inputs and outputs, a broadcast, a bool output, names that are not C identifiers.
    out["multi"] = save(d, "multi", [
        helper.make_node("Add", ["a:0", "b"], ["sum"]),
        helper.make_node("Mul", ["a:0", "b"], ["prod.out"]),
        helper.make_node("Greater", ["sum", "prod.out"], ["gt"]),
    ], [vi("a:0", T.FLOAT, [3, 4]), vi("b", T.FLOAT, [4])],
        [vi("sum", T.FLOAT, [3, 4]), vi("prod.out", T.FLOAT, [3, 4]), vi("gt", T.BOOL, [3, 4])])
    # float16 elementwise.
    out["half"] = save(d, "half", [
        helper.make_node("Mul", ["x", "y"], ["m"]),
        helper.make_node("Sigmoid", ["m"], ["s"]),
    ], [vi("x", T.FLOAT16, [2, 8]), vi("y", T.FLOAT16, [2, 8])], [vi("s", T.FLOAT16, [2, 8])])
    # outputs the passes replace: an input (twice), a folded constant, another output.
    out["alias"] = save(d, "alias", [
        helper.make_node("Identity", ["x"], ["y1"]),
        helper.make_node("Identity", ["x"], ["y2"]),
        helper.make_node("Add", ["c", "c"], ["k"]),
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Identity", ["r"], ["r2"]),
    ], [vi("x", T.FLOAT, [3])], [vi(n, T.FLOAT, [2] if n == "k" else [3]) for n in ("y1", "y2", "k", "r", "r2")],
        [numpy_helper.from_array(f(2), "c")])
    # a data-dependent output.
    out["nonzero"] = save(d, "nonzero", [helper.make_node("NonZero", ["x"], ["idx"])],
                          [vi("x", T.FLOAT, [3, 4])], [vi("idx", T.INT64, [2, None])])
    # an operator onnxc does not know.
    bad = helper.make_graph([helper.make_node("NoSuchOp", ["x"], ["y"], domain="com.example")], "bad",
                            [vi("x", T.FLOAT, [2])], [vi("y", T.FLOAT, [2])])
    out["bad"] = os.path.join(d, "bad.onnx")
    onnx.save(helper.make_model(bad, opset_imports=[helper.make_opsetid("", 17),
                                                     helper.make_opsetid("com.example", 1)]), out["bad"])
    return out


def feeds_for(path, rng):
    m = onnx.load(path)
    feeds = {}
    for i in m.graph.input:
        tt = i.type.tensor_type
        shape = [d.dim_value for d in tt.shape.dim]
        if tt.elem_type == T.INT64:
            feeds[i.name] = rng.integers(-10, 10, size=shape).astype(np.int64)
        elif tt.elem_type == T.FLOAT16:
            feeds[i.name] = rng.standard_normal(shape).astype(np.float16)
        else:
            x = rng.standard_normal(shape).astype(np.float32)
            if "nonzero" in path:
                x[x < 0.3] = 0  # some zeros
            feeds[i.name] = x
    return feeds


def check_metadata(tag, model, path):
    g = onnx.load(path).graph
    for side, vis, infos in (("input", g.input, model.inputs), ("output", g.output, model.outputs)):
        check([v.name for v in vis] == [t.name for t in infos], "%s: %s names %s" % (tag, side, [t.name for t in infos]))
        for v, t in zip(vis, infos):
            tt = v.type.tensor_type
            check(t.elem_type == tt.elem_type, "%s: %s '%s' elem_type %d, ONNX %d" %
                  (tag, side, v.name, t.elem_type, tt.elem_type))
            want = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
            check(t.dtype == want, "%s: %s '%s' dtype %s, want %s" % (tag, side, v.name, t.dtype, want))
            shape = tuple(d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim)
            check(len(t.shape) == len(shape) and t.numel == int(np.prod(t.shape, dtype=np.int64)),
                  "%s: %s '%s' shape %s numel %d, ONNX %s" % (tag, side, v.name, t.shape, t.numel, shape))
            # A dim ONNX leaves open is data-dependent here (its upper bound in t.shape).
            known = tuple(k for k, e in enumerate(shape) if e is not None)
            check(all(t.shape[k] == shape[k] for k in known if k < len(t.shape)) and
                  t.dynamic_dims == tuple(k for k in range(len(shape)) if k not in known),
                  "%s: %s '%s' shape %s dynamic %s, ONNX %s" % (tag, side, v.name, t.shape, t.dynamic_dims, shape))


def compare(tag, got, want, tol):
    check(got.dtype == want.dtype, "%s: dtype %s, ORT %s" % (tag, got.dtype, want.dtype))
    check(got.shape == want.shape, "%s: shape %s, ORT %s" % (tag, got.shape, want.shape))
    if got.shape != want.shape:
        return
    if got.dtype.kind == "f":
        rtol, atol = tol
        ok = np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)
        err = np.max(np.abs(got.astype(np.float64) - want)) if got.size else 0
        check(ok, "%s: max abs err %g" % (tag, err))
    else:
        check(np.array_equal(got, want), "%s: differs from ORT" % tag)


def run_vs_ort(tag, model, path, tol, rng, **compile_kw):
    check_metadata(tag, model, path)
    feeds = feeds_for(path, rng)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    got = model.run(feeds)
    check(list(got) == model.output_names, "%s: run() keys %s" % (tag, list(got)))
    for t, w in zip(model.outputs, want):
        compare("%s output '%s'" % (tag, t.name), got[t.name], w, tol)
    pos = model(*[feeds[n] for n in model.input_names])
    pos = pos if isinstance(pos, tuple) else (pos,)
    for t, g in zip(model.outputs, pos):
        check(np.array_equal(g, got[t.name]), "%s: m(*arrays) differs from m.run" % tag)


def test_models(d, onnxc_bin, paths):
    rng = np.random.default_rng(11)
    with onnxc.compile(paths["mlp"], name="mlp", threads=2, onnxc=onnxc_bin) as m:
        check(m.threads == 2 and m._free is not None, "mlp: threads %d, free_threads %s" % (m.threads, m._free))
        check(m.arena_bytes > 0 and m.arena_align == 64, "mlp: arena %d align %d" % (m.arena_bytes, m.arena_align))
        check(m._arena.value % 64 == 0, "mlp: arena not 64-byte aligned")
        run_vs_ort("mlp", m, paths["mlp"], (RTOL, ATOL), rng)
        m.free_threads()  # the pool stops; the next run starts it again
        run_vs_ort("mlp after free_threads", m, paths["mlp"], (RTOL, ATOL), rng)
    expect_error(onnxc.OnnxcError, ["closed"], m, np.zeros((64, 256), np.float32))

    out = os.path.join(d, "libembed.so")
    onnxc.compile(paths["embed"], output=out, onnxc=onnxc_bin)
    m = onnxc.load(out)  # name from the file name
    check(m.name == "embed" and m.threads == 1 and m._free is None, "embed: name %s threads %d" % (m.name, m.threads))
    run_vs_ort("embed", m, paths["embed"], (RTOL, ATOL), rng)
    # Failure paths, each error naming what is wrong.
    expect_error(ValueError, ["'ids'", "(2, 5)", "(5, 2)"], m, np.zeros((5, 2), np.int64))
    expect_error(TypeError, ["'ids'", "int64", "int32"], m, np.zeros((2, 5), np.int32))
    expect_error(TypeError, ["1 inputs", "ids", "got 2"], m, np.zeros((2, 5), np.int64), np.zeros(1))
    expect_error(KeyError, ["missing ids", "unknown idz"], m.run, {"idz": np.zeros((2, 5), np.int64)})
    e = expect_error(onnxc.RunError, ["ONNXC_ERR_BAD_INDEX", "out of range"], m, np.full((2, 5), 10, np.int64))
    check(e is None or e.status == 2, "embed: status %s" % (e and e.status))
    # A copy under another file name: the name comes from the exported symbols.
    other = os.path.join(d, "renamed.so")
    shutil.copy(out, other)
    check(onnxc.load(other).name == "embed", "renamed.so: name not found from the symbols")
    expect_error(onnxc.LoadError, ["no nosuch_info"], onnxc.load, out, "nosuch")
    expect_error(onnxc.LoadError, ["cannot load"], onnxc.load, os.path.join(d, "missing.so"))

    for tag, tol in (("multi", (RTOL, ATOL)), ("half", (1e-2, 1e-3)), ("alias", (RTOL, ATOL)), ("nonzero", (0, 0))):
        # "multi" goes in as an onnx.ModelProto, the others as paths.
        m = onnxc.compile(onnx.load(paths[tag]) if tag == "multi" else paths[tag], onnxc=onnxc_bin)
        run_vs_ort(tag, m, paths[tag], tol, rng)
        if tag == "nonzero":
            t = m.outputs[0]
            check(t.dynamic and t.dynamic_dims == (1,) and t.shape == (2, 12),
                  "nonzero: output info %s" % (t,))
        m.close()
    e = expect_error(onnxc.CompileError, ["NoSuchOp"], onnxc.compile, paths["bad"], None, None, None, None,
                     None, (), onnxc_bin)
    check(e is None or e.returncode == 1, "bad: exit %s" % (e and e.returncode))


def test_no_info(d):
    """A shared library with NAME_run_v but no NAME_info is refused by name."""
    src = os.path.join(d, "old.c")
    with open(src, "w") as f:
        f.write("int old_run_v(void *a, const void *const *i, void *const *o) { (void)a; (void)i; (void)o; return 0; }\n")
    lib = os.path.join(d, "libold.so")
    cc = os.environ.get("CC", "cc")
    if subprocess.run([cc, "-shared", "-fPIC", "-o", lib, src]).returncode != 0:
        check(False, "cannot build libold.so with %s" % cc)
        return
    expect_error(onnxc.LoadError, ["no NAME_info"], onnxc.load, lib)
    expect_error(onnxc.LoadError, ["no old_info", "--target cuda"], onnxc.load, lib, "old")


def test_pip_install(d):
    # Without build isolation the venv's setuptools builds the wheel: it needs
    # bdist_wheel (setuptools >= 70.1 has it, older ones take it from `wheel`).
    # Probed in a child: importing setuptools here would patch distutils.
    probe = ("import importlib.util as u\n"
             "try:\n"
             "    import setuptools, pip\n"
             "except ImportError as e:\n"
             "    print(e.name)\n"
             "else:\n"
             "    if u.find_spec('wheel') is None and u.find_spec('setuptools.command.bdist_wheel') is None:\n"
             "        print('wheel (setuptools < 70.1 needs it)')\n")
    missing = subprocess.run([sys.executable, "-c", probe], stdout=subprocess.PIPE,
                             universal_newlines=True).stdout.strip()
    if missing:
        print("SKIP: pip install --target ./python: %s not installed in %s" % (missing, sys.executable))
        return
    target = os.path.join(d, "site")
    # Build from a copy: setuptools writes build/ and *.egg-info next to the sources.
    src = os.path.join(d, "python-src")
    shutil.copytree(os.path.join(SRC, "python"), src, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    t0 = time.time()
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                        "--no-build-isolation", "--target", target, src],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    check(p.returncode == 0, "pip install --target failed:\n" + p.stdout)
    probe = "import onnxc, sys; print(onnxc.__file__); sys.exit(not hasattr(onnxc, 'load'))"
    q = subprocess.run([sys.executable, "-c", probe], env=dict(os.environ, PYTHONPATH=target),
                       stdout=subprocess.PIPE, universal_newlines=True)
    check(q.returncode == 0 and q.stdout.startswith(target), "installed package: %s" % q.stdout)
    print("pip install --target: %.1f s" % (time.time() - t0))


def test_corpus(d, onnxc_bin, models_dir):
    """Every model of the end-to-end corpus (tests/models, written by
    e2e.models_vs_ort) through the package, against ONNX Runtime on the case's
    own inputs, at the tolerance the corpus test uses (case.json)."""
    cases = sorted(glob.glob(os.path.join(models_dir, "*", "model.onnx")))
    check(len(cases) >= 5, "corpus: %d models in %s" % (len(cases), models_dir))
    for path in cases:
        case = os.path.dirname(path)
        tag = "corpus " + os.path.basename(case)
        meta = {}
        if os.path.exists(os.path.join(case, "case.json")):
            with open(os.path.join(case, "case.json")) as f:
                meta = json.load(f)
        tol = (meta.get("rtol", 1e-3), meta.get("atol", 1e-4))
        feeds = {}
        for f in sorted(glob.glob(os.path.join(case, "test_data_set_0", "input_*.pb")),
                        key=lambda q: int(q.rsplit("_", 1)[1].split(".")[0])):
            t = onnx.load_tensor(f)
            feeds[t.name] = numpy_helper.to_array(t)
        m = onnxc.compile(path, output=os.path.join(d, "lib%s.so" % os.path.basename(case)), onnxc=onnxc_bin)
        check_metadata(tag, m, path)
        if not feeds:  # the case's files name no inputs: the model's own order
            feeds = dict(zip(m.input_names, feeds_for(path, np.random.default_rng(5)).values()))
        want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
        got = m.run(feeds)
        for t, w in zip(m.outputs, want):
            compare("%s output '%s'" % (tag, t.name), got[t.name], w, tol)
        m.close()


def test_ranges(d, onnxc_bin):
    """A model built for a range of shapes (-D, NAME_info version 2): one
    library runs every length and width in range, outputs at this run's shape,
    against ONNX Runtime; a dim out of range or off its step is refused."""
    rng = np.random.default_rng(7)
    w = numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "w")
    path = save(d, "seqmix", [helper.make_node("MatMul", ["x", "w"], ["h"]),
                              helper.make_node("Transpose", ["h"], ["ht"], perm=[0, 2, 1]),
                              helper.make_node("MatMul", ["h", "ht"], ["s"]),
                              helper.make_node("Softmax", ["s"], ["p"], axis=-1),
                              helper.make_node("MatMul", ["p", "h"], ["y"])],
                [helper.make_tensor_value_info("x", T.FLOAT, [1, "seq", 8])],
                [helper.make_tensor_value_info("y", T.FLOAT, [1, "seq", 8]),
                 helper.make_tensor_value_info("p", T.FLOAT, [1, "seq", "seq"])], [w])
    m = onnxc.compile(path, dims={"seq": (2, 64, 2)}, onnxc=onnxc_bin)
    check(m.dims == (onnxc.model.DimRange("seq", 2, 64, 2),), "seqmix: dims %s" % (m.dims,))
    check(m.inputs[0].ranges == (-1, 0, -1), "seqmix: input ranges %s" % (m.inputs[0].ranges,))
    sess = ort.InferenceSession(path)
    for n in (2, 10, 64):
        x = rng.standard_normal((1, n, 8)).astype(np.float32)
        got, want = m.run({"x": x}), sess.run(None, {"x": x})
        compare("seqmix seq=%d y" % n, got["y"], want[0], (RTOL, ATOL))
        compare("seqmix seq=%d p" % n, got["p"], want[1], (RTOL, ATOL))
    expect_error(ValueError, ["'seq' is 66", "2..64", "steps of 2"], m, np.zeros((1, 66, 8), np.float32))
    expect_error(ValueError, ["'seq' is 7"], m, np.zeros((1, 7, 8), np.float32))
    expect_error(ValueError, ["expected shape (1, 'seq', 8)"], m, np.zeros((1, 8, 9), np.float32))
    m.close()


def main():
    if len(sys.argv) not in (2, 4) or (len(sys.argv) == 4 and sys.argv[2] != "--models"):
        sys.exit(__doc__)
    onnxc_bin = os.path.abspath(sys.argv[1])
    t0 = time.time()
    with tempfile.TemporaryDirectory() as d:
        paths = models(d)
        test_models(d, onnxc_bin, paths)
        test_ranges(d, onnxc_bin)
        test_no_info(d)
        test_pip_install(d)
        if len(sys.argv) == 4:
            test_corpus(d, onnxc_bin, sys.argv[3])
    print("%s: %d checks (%.1f s)" % ("FAILED %d" % len(fails) if fails else "ok", n_checks[0], time.time() - t0))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
