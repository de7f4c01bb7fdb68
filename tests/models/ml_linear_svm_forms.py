#!/usr/bin/env python3
"""Synthetic LinearClassifier, LinearRegressor, Scaler, Normalizer and
SVMClassifier nodes against ONNX Runtime, in every input type (float, double,
int64, int32) and post_transform but PROBIT: binary and multi-class,
positive and mixed weights, the SVM's linear form and its four kernels with
and without prob_a / prob_b.

Usage: ml_linear_svm_forms.py --onnxc build/bin/onnxc [--work DIR]

Each case is checked with `onnxc check` (rtol, atol 1e-5); forms ONNX Runtime
refuses are left out. Prints PASS/FAIL per case, then 'N passed, N failed';
exits 1 on any failure.
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np

F = 3


def forms(rng):
    from onnx import TensorProto as T
    c2 = [("Y", T.INT64), ("Z", T.FLOAT)]
    y1 = [("Y", T.FLOAT)]
    normal = lambda n: [float(v) for v in rng.normal(size=n)]
    for xt, tn in [(T.FLOAT, "float"), (T.DOUBLE, "double"), (T.INT64, "int64"), (T.INT32, "int32")]:
        for post in ["NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO"]:
            for e in [1, 3]:
                yield (f"linear_classifier_{tn}_{post}_{e}", "LinearClassifier",
                       dict(coefficients=normal(F * e), intercepts=normal(e),
                            classlabels_ints=[4, 7] if e == 1 else [1, 2, 3], post_transform=post), xt, c2)
            yield (f"linear_regressor_{tn}_{post}", "LinearRegressor",
                   dict(coefficients=normal(2 * F), intercepts=[0.5, -1.0], targets=2, post_transform=post), xt, y1)
        yield f"scaler_{tn}", "Scaler", dict(offset=[0.5, 1.0, -1.0], scale=[2.0, 3.0, 0.5]), xt, y1
        for norm in ["MAX", "L1", "L2"]:
            yield f"normalizer_{tn}_{norm}", "Normalizer", dict(norm=norm), xt, y1
        for c in [2, 3]:
            for pos in [True, False]:
                for post in ["NONE", "LOGISTIC", "SOFTMAX"]:
                    coef = rng.uniform(0, 1, size=F * c) if pos else rng.normal(size=F * c)
                    yield (f"svm_linear_form_{tn}_{c}_{'pos' if pos else 'mixed'}_{post}", "SVMClassifier",
                           dict(coefficients=[float(v) for v in coef], rho=[0.3], classlabels_ints=list(range(c)),
                                kernel_type="LINEAR", kernel_params=[0.1, 0.0, 1.0], post_transform=post), xt, c2)
        for c in ([2, 3] if tn in ("float", "int64") else []):  # the others cast the same way
            for kern in ["LINEAR", "POLY", "RBF", "SIGMOID"]:
                for proba in [False, True]:
                    for post in ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"]:
                        v, p = 2 * c, c * (c - 1) // 2
                        a = dict(coefficients=normal((c - 1) * v), rho=normal(p), support_vectors=normal(v * F),
                                 vectors_per_class=[2] * c, classlabels_ints=list(range(5, 5 + c)),
                                 kernel_type=kern, kernel_params=[0.3, 0.2, 2.0], post_transform=post)
                        if proba:
                            a.update(prob_a=normal(p), prob_b=normal(p))
                        yield (f"svc_{tn}_{c}_{kern}_{'proba' if proba else 'scores'}_{post}", "SVMClassifier",
                               a, xt, c2)


def make_case(work, name, op, attrs, xt, outs, rng):
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto as T, helper as h, numpy_helper
    node = h.make_node(op, ["X"], [o for o, _ in outs], domain="ai.onnx.ml", **attrs)
    g = h.make_graph([node], "g", [h.make_tensor_value_info("X", xt, [5, F])],
                     [h.make_tensor_value_info(o, t, None) for o, t in outs])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("ai.onnx.ml", 3)])
    x = rng.normal(size=(5, F)) * 2
    x = {T.FLOAT: x.astype(np.float32), T.DOUBLE: x, T.INT64: np.round(x).astype(np.int64),
         T.INT32: np.round(x).astype(np.int32)}[xt]
    so = ort.SessionOptions()
    so.log_severity_level = 4
    try:
        res = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, {"X": x})
    except Exception:  # e.g. LinearRegressor on integer inputs
        return None
    case = os.path.join(work, name)
    shutil.rmtree(case, ignore_errors=True)
    data = os.path.join(case, "test_data_set_0")
    os.makedirs(data)
    onnx.save(model, os.path.join(case, "model.onnx"))
    open(os.path.join(data, "input_0.pb"), "wb").write(numpy_helper.from_array(x, "X").SerializeToString())
    for i, (o, _) in enumerate(outs):
        open(os.path.join(data, f"output_{i}.pb"), "wb").write(
            numpy_helper.from_array(res[i], o).SerializeToString())
    return case


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--work", default=os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "build", "ml-linear-svm-forms"))
    a = ap.parse_args()
    rng = np.random.default_rng(3)
    passed = failed = 0
    for name, op, attrs, xt, outs in list(forms(rng)):
        case = make_case(a.work, name, op, attrs, xt, outs, rng)
        if case is None:
            continue
        r = subprocess.run([a.onnxc, "check", "--rtol", "1e-5", "--atol", "1e-5", case],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        ok = r.returncode == 0
        text = (r.stdout + r.stderr).decode(errors="replace")
        print(f"{'PASS' if ok else 'FAIL'} {name}" + ("" if ok else ": " + " | ".join(text.strip().splitlines()[-3:])),
              flush=True)
        passed += ok
        failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
