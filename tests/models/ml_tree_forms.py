#!/usr/bin/env python3
"""Synthetic legacy tree ensembles against ONNX Runtime: every form ONNX Runtime
finalizes differently.

Usage: ml_tree_forms.py --onnxc build/bin/onnxc [--work DIR]

Random ensembles (3-4 trees of depth 2 over 3 features, random BRANCH_LEQ/LT/
GTE/GT modes and missing-value tracks, a NaN in the input) as
TreeEnsembleClassifier (two labels with weights for class 0, class 1 or both;
0, 1 or 2 base values; positive or mixed weights; 3 and 4 labels) and
TreeEnsembleRegressor (1 to 3 targets, SUM/AVERAGE/MIN/MAX, base values,
every post_transform but PROBIT). Each case is checked with `onnxc check`
(rtol, atol 1e-5) against ONNX Runtime's outputs. Forms onnxc refuses (see
infer_ml_trees.c) must fail to compile with their message; forms ONNX Runtime
itself refuses are left out. Prints PASS/FAIL per case, then
'N passed, N failed'; exits 1 on any failure.
"""
import argparse
import itertools
import os
import shutil
import subprocess
import sys

import numpy as np

F = 3
REFUSED = "is not supported (its ONNX Runtime scores are not reproduced)"


def trees(ntrees, rng):
    a = {k: [] for k in ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes",
                         "nodes_values", "nodes_truenodeids", "nodes_falsenodeids",
                         "nodes_missing_value_tracks_true")}
    leaves = []
    for t in range(ntrees):
        for nid in range(7):  # 0..2 interior, 3..6 leaves
            inner = nid < 3
            a["nodes_treeids"].append(t)
            a["nodes_nodeids"].append(nid)
            a["nodes_featureids"].append(int(rng.integers(F)) if inner else 0)
            a["nodes_modes"].append(str(rng.choice(["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT"]))
                                    if inner else "LEAF")
            a["nodes_values"].append(float(rng.normal()) if inner else 0.0)
            a["nodes_truenodeids"].append(2 * nid + 1 if inner else 0)
            a["nodes_falsenodeids"].append(2 * nid + 2 if inner else 0)
            a["nodes_missing_value_tracks_true"].append(int(rng.integers(2)) if inner else 0)
            if not inner:
                leaves.append((t, nid))
    return a, leaves


def forms(rng):
    """Yields (name, op, attributes, whether onnxc must refuse it)."""
    for ids, nb, pos, post in itertools.product(["0", "1", "both"], [0, 1, 2], [True, False],
                                                ["NONE", "LOGISTIC", "SOFTMAX"]):
        a, leaves = trees(3, rng)
        w = {k: [] for k in ("class_ids", "class_nodeids", "class_treeids", "class_weights")}
        for t, nid in leaves:
            for k in ([0, 1] if ids == "both" else [int(ids)]):
                w["class_ids"].append(k)
                w["class_nodeids"].append(nid)
                w["class_treeids"].append(t)
                w["class_weights"].append(float(rng.uniform(0, 1) if pos else rng.normal()))
        a.update(w, classlabels_int64s=[3, 9], post_transform=post)
        if nb:
            a["base_values"] = [float(v) for v in rng.normal(size=nb)]
        refuse = ids != "both" and (nb == 2 or (ids == "1" and nb > 0))
        yield f"classifier2_{ids}_base{nb}_{'pos' if pos else 'mixed'}_{post}", "TreeEnsembleClassifier", a, refuse
    for c, post in itertools.product([3, 4], ["NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO"]):
        for nb in (0, c):
            a, leaves = trees(4, rng)
            w = {k: [] for k in ("class_ids", "class_nodeids", "class_treeids", "class_weights")}
            for t, nid in leaves:
                for k in range(c):
                    if rng.uniform() < 0.6:
                        w["class_ids"].append(k)
                        w["class_nodeids"].append(nid)
                        w["class_treeids"].append(t)
                        w["class_weights"].append(float(rng.normal()))
            a.update(w, classlabels_int64s=list(range(10, 10 + c)), post_transform=post)
            if nb:
                a["base_values"] = [float(v) for v in rng.normal(size=nb)]
            yield f"classifier{c}_base{nb}_{post}", "TreeEnsembleClassifier", a, False
    for k, agg in itertools.product([1, 2, 3], ["SUM", "AVERAGE", "MIN", "MAX"]):
        for nb in sorted({0, k}):
            for post in (["NONE"] if k == 1 else ["NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO"]):
                a, leaves = trees(3, rng)
                w = {x: [] for x in ("target_ids", "target_nodeids", "target_treeids", "target_weights")}
                for t, nid in leaves:
                    for j in range(k):
                        if rng.uniform() < 0.7:
                            w["target_ids"].append(j)
                            w["target_nodeids"].append(nid)
                            w["target_treeids"].append(t)
                            w["target_weights"].append(float(rng.normal()))
                a.update(w, n_targets=k, aggregate_function=agg, post_transform=post)
                if nb:
                    a["base_values"] = [float(v) for v in rng.normal(size=nb)]
                yield f"regressor{k}_{agg}_base{nb}_{post}", "TreeEnsembleRegressor", a, False


def make_case(work, name, op, attrs, rng):
    """The case folder; None when ONNX Runtime refuses the model."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto as T, helper as h, numpy_helper
    outs = [("Y", T.INT64), ("Z", T.FLOAT)] if op.endswith("Classifier") else [("Y", T.FLOAT)]
    node = h.make_node(op, ["X"], [o for o, _ in outs], domain="ai.onnx.ml", **attrs)
    g = h.make_graph([node], "g", [h.make_tensor_value_info("X", T.FLOAT, [6, F])],
                     [h.make_tensor_value_info(o, t, None) for o, t in outs])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("ai.onnx.ml", 3)])
    case = os.path.join(work, name)
    shutil.rmtree(case, ignore_errors=True)
    os.makedirs(os.path.join(case, "test_data_set_0"))
    onnx.save(model, os.path.join(case, "model.onnx"))
    x = rng.normal(size=(6, F)).astype(np.float32)
    x[0, 0] = np.nan
    so = ort.SessionOptions()
    so.log_severity_level = 4
    try:
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        res = sess.run(None, {"X": x})
    except Exception:  # e.g. base_values of neither 0 nor n_targets entries
        return None
    data = os.path.join(case, "test_data_set_0")
    open(os.path.join(data, "input_0.pb"), "wb").write(numpy_helper.from_array(x, "X").SerializeToString())
    for i, (o, _) in enumerate(outs):
        open(os.path.join(data, f"output_{i}.pb"), "wb").write(
            numpy_helper.from_array(res[i], o).SerializeToString())
    return case


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--work", default=os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "build", "ml-tree-forms"))
    a = ap.parse_args()
    rng = np.random.default_rng(1)
    passed = failed = 0
    for name, op, attrs, refuse in forms(rng):
        case = make_case(a.work, name, op, attrs, rng)
        if case is None:
            continue
        r = subprocess.run([a.onnxc, "check", "--rtol", "1e-5", "--atol", "1e-5", case],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        text = (r.stdout + r.stderr).decode(errors="replace")
        refused = REFUSED in text
        ok = (r.returncode == 2 and refused) if refuse else r.returncode == 0
        detail = " (refused, as expected)" if refused and ok else "" if ok else \
            ": " + " | ".join(text.strip().splitlines()[-3:])
        print(f"{'PASS' if ok else 'FAIL'} {name}{detail}", flush=True)
        passed += ok
        failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
