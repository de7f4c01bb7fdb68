#!/usr/bin/env python3
"""scikit-learn models converted by skl2onnx, against ONNX Runtime.

Usage: sklearn_models.py --onnxc build/bin/onnxc [--work DIR] [--only ID,...]

Each entry of MODELS trains a small scikit-learn model on a bundled data set
(iris, diabetes, breast cancer, digits: no downloads), converts it with
skl2onnx (target opsets '' 17, ai.onnx.ml 3; ZipMap off for classifiers) and
writes a case folder in the ONNX backend layout: eight rows of the data set as
input, ONNX Runtime's outputs as the expected ones. `onnxc check` runs it at
-O0, -O2 and -O3 --threads 2 (the batch dim, None in the model, is bound
from the data). Labels must match exactly (atol 0); scores within the
entry's tolerance. Entries with `error` must fail to compile with that text
in the message (ZipMap; string class labels).

Prints one PASS/FAIL line per model and configuration, then 'N passed, N failed';
exits 1 on any failure.
"""

import argparse
import os
import shutil
import subprocess
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CONFIGS = [("-O0", ["-O0"]), ("-O2", ["-O2"]), ("-O3 --threads 2", ["-O3", "--threads", "2"])]
OPSETS = {"": 17, "ai.onnx.ml": 3}
LINEAR = (1e-4, 1e-5)   # rtol, atol
TREES = (0.0, 1e-5)
ROWS = 8
MISMATCH = "<mismatch>"  # an entry whose expected outputs are altered on purpose


def data(name):
    from sklearn import datasets
    X, y = {"iris": datasets.load_iris, "diabetes": datasets.load_diabetes,
            "cancer": datasets.load_breast_cancer,
            "digits": datasets.load_digits}[name](return_X_y=True)
    return X.astype(np.float32), y


def models():
    from sklearn import (decomposition, ensemble, linear_model, neural_network,
                         pipeline, preprocessing, svm, tree)
    P, S = pipeline.make_pipeline, preprocessing.StandardScaler
    binary = lambda y: (y > 0).astype(np.int64)
    # (id, data set, estimator factory, target transform, tolerance, expected error)
    return [
        ("logreg_multi", "iris", lambda: P(S(), linear_model.LogisticRegression(max_iter=500)), None, LINEAR, None),
        ("logreg_binary", "cancer", lambda: P(S(), linear_model.LogisticRegression(max_iter=500)), None, LINEAR, None),
        ("linreg", "diabetes", lambda: linear_model.LinearRegression(), None, LINEAR, None),
        ("ridge_normalizer", "diabetes", lambda: P(preprocessing.Normalizer(), linear_model.Ridge()), None, LINEAR, None),
        ("normalizer_l1_ridge", "diabetes", lambda: P(preprocessing.Normalizer(norm="l1"), linear_model.Ridge()), None, LINEAR, None),
        ("minmax_pca_linreg", "diabetes", lambda: P(preprocessing.MinMaxScaler(), decomposition.PCA(4), linear_model.LinearRegression()), None, LINEAR, None),
        # skl2onnx 1.20 cannot convert LinearSVC inside a Pipeline (it asks the
        # SVC for a zipmap option it does not have): the bare model.
        ("linearsvc", "iris", lambda: svm.LinearSVC(), None, LINEAR, None),
        ("sgd_binary", "cancer", lambda: P(S(), linear_model.SGDClassifier(loss="log_loss", random_state=0)), None, LINEAR, None),
        ("mlp", "iris", lambda: P(S(), neural_network.MLPClassifier((8,), max_iter=300, random_state=0)), None, LINEAR, None),
        ("decision_tree", "iris", lambda: tree.DecisionTreeClassifier(max_depth=4, random_state=0), None, TREES, None),
        ("decision_tree_reg", "diabetes", lambda: tree.DecisionTreeRegressor(max_depth=5, random_state=0), None, TREES, None),
        ("random_forest", "digits", lambda: ensemble.RandomForestClassifier(10, max_depth=6, random_state=0), None, TREES, None),
        ("random_forest_binary", "cancer", lambda: ensemble.RandomForestClassifier(10, max_depth=4, random_state=0), None, TREES, None),
        ("extra_trees_reg", "diabetes", lambda: ensemble.ExtraTreesRegressor(10, max_depth=6, random_state=0), None, TREES, None),
        ("gboost_reg", "diabetes", lambda: ensemble.GradientBoostingRegressor(n_estimators=20, random_state=0), None, TREES, None),
        ("gboost_binary", "cancer", lambda: ensemble.GradientBoostingClassifier(n_estimators=10, random_state=0), None, TREES, None),
        ("gboost_multi", "iris", lambda: ensemble.GradientBoostingClassifier(n_estimators=10, random_state=0), None, TREES, None),
        ("svc_rbf", "iris", lambda: P(S(), svm.SVC()), None, LINEAR, None),
        ("svc_rbf_proba", "iris", lambda: P(S(), svm.SVC(probability=True, random_state=0)), None, LINEAR, None),
        ("svc_rbf_binary", "cancer", lambda: P(S(), svm.SVC()), None, LINEAR, None),
        ("svc_poly_proba", "iris", lambda: P(S(), svm.SVC(kernel="poly", probability=True, random_state=0)), None, LINEAR, None),
        ("svc_linear_binary_proba", "cancer", lambda: P(S(), svm.SVC(kernel="linear", probability=True, random_state=0)), None, LINEAR, None),
        ("svc_sigmoid", "iris", lambda: P(S(), svm.SVC(kernel="sigmoid")), None, LINEAR, None),
        ("svr", "diabetes", lambda: P(S(), svm.SVR()), None, LINEAR, None),
        ("svr_poly", "diabetes", lambda: P(S(), svm.SVR(kernel="poly", degree=2)), None, LINEAR, None),
        ("linreg_2_targets", "diabetes", lambda: linear_model.LinearRegression(),
         lambda y: np.stack([y, -0.5 * y], axis=1), LINEAR, None),
        ("random_forest_reg_2_targets", "diabetes", lambda: ensemble.RandomForestRegressor(5, max_depth=5, random_state=0),
         lambda y: np.stack([y, np.sqrt(y)], axis=1), TREES, None),
        ("digits_logreg", "digits", lambda: P(preprocessing.MaxAbsScaler(), linear_model.LogisticRegression(max_iter=300)), None, LINEAR, None),
        # The canary: a tree classifier whose stored label for row 0 is made
        # wrong; `onnxc check` must report the mismatch (the harness can fail).
        ("canary_wrong_label", "iris", lambda: tree.DecisionTreeClassifier(max_depth=3, random_state=0), None, TREES, MISMATCH),
        ("zipmap", "iris", lambda: linear_model.LogisticRegression(max_iter=500), None, LINEAR,
         "convert without it (skl2onnx: to_onnx(model, X, options={id(model): {'zipmap': False}}))"),
        ("string_labels", "iris", lambda: linear_model.LogisticRegression(max_iter=500),
         lambda y: np.array(["setosa", "versicolor", "virginica"])[y], LINEAR,
         "string class labels (classlabels_strings) are not supported"),
    ]


def make_case(work, mid, dset, factory, ytf, error):
    """Trains, converts, writes model.onnx and one data set from ORT."""
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
    from skl2onnx import to_onnx
    X, y = data(dset)
    if ytf:
        y = ytf(y)
    est = factory()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    try:  # ZipMap off where the converter has the option (classifiers)
        model = to_onnx(est, X[:1], target_opset=OPSETS,
                        options=None if mid == "zipmap" else {id(est): {"zipmap": False}})
    except Exception as ex:  # skl2onnx raises NameError for an unknown option
        if "zipmap" not in str(ex):
            raise
        model = to_onnx(est, X[:1], target_opset=OPSETS)
    case = os.path.join(work, mid)
    shutil.rmtree(case, ignore_errors=True)
    os.makedirs(os.path.join(case, "test_data_set_0"))
    path = os.path.join(case, "model.onnx")
    onnx.save(model, path)
    if error and error != MISMATCH:
        return case
    rows = X[np.random.default_rng(0).choice(len(X), ROWS, replace=False)]
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    outs = sess.run(None, {name: rows})
    data_dir = os.path.join(case, "test_data_set_0")
    t = numpy_helper.from_array(rows, name)
    open(os.path.join(data_dir, "input_0.pb"), "wb").write(t.SerializeToString())
    if error == MISMATCH:
        outs[0] = outs[0].copy()
        outs[0][0] += 1
    for i, (o, v) in enumerate(zip(sess.get_outputs(), outs)):
        t = numpy_helper.from_array(np.asarray(v), o.name)
        open(os.path.join(data_dir, f"output_{i}.pb"), "wb").write(t.SerializeToString())
    return case


def check(onnxc, case, flags, tol, error):
    rtol, atol = tol
    cmd = [onnxc, "check", "--rtol", str(rtol), "--atol", str(atol)] + flags + [case]
    if error and error != MISMATCH:  # the way a user compiles it: the batch dim from --shape
        import onnx
        x = onnx.load(os.path.join(case, "model.onnx")).graph.input[0]
        cols = x.type.tensor_type.shape.dim[1].dim_value
        cmd = [onnxc, "-S", "--shape", f"{x.name}={ROWS}x{cols}", os.path.join(case, "model.onnx"),
               "-o", os.path.join(case, "c")]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    text = (r.stdout + r.stderr).decode(errors="replace")
    if error == MISMATCH:
        ok = r.returncode == 1
        return ok, "" if ok else f"expected a mismatch (exit 1), got exit {r.returncode}"
    if error:
        ok = r.returncode != 0 and error in text
        return ok, "" if ok else f"expected a compile error naming {error!r}; exit {r.returncode}: {text.strip()[:300]}"
    if r.returncode != 0:
        return False, f"exit {r.returncode}: " + " | ".join(text.strip().splitlines()[:4])
    return True, ""


def main():
    warnings.simplefilter("ignore")  # scikit-learn's deprecations (SVC probability=True)
    ap = argparse.ArgumentParser()
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "sklearn-models"))
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    passed = failed = 0
    for mid, dset, factory, ytf, tol, error in models():
        if only and mid not in only:
            continue
        try:
            case = make_case(a.work, mid, dset, factory, ytf, error)
        except Exception as ex:  # a conversion that fails is a failure of the set-up
            print(f"FAIL {mid}: making the case: {ex}")
            failed += 1
            continue
        for cname, flags in (CONFIGS[:1] if error else CONFIGS):
            ok, detail = check(a.onnxc, case, flags, tol, error)
            print(f"{'PASS' if ok else 'FAIL'} {mid} [{cname}]{' ' + detail if detail else ''}", flush=True)
            passed += ok
            failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
