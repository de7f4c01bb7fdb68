# scikit-learn models converted by skl2onnx 1.20 (linear models, scalers,
# normalizers, tree ensembles, SVMs, an MLP) against ONNX Runtime at -O0, -O2
# and -O3 --threads 2 (tests/models/sklearn_models.py, docs/sklearn.md). The
# models are trained on scikit-learn's bundled data sets: no network.
add_test(NAME e2e.sklearn_models
  COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/models/sklearn_models.py
          --onnxc ${ONNXC_BIN} --work ${CMAKE_BINARY_DIR}/sklearn-models)
set_tests_properties(e2e.sklearn_models PROPERTIES LABELS e2e TIMEOUT 300)

# Synthetic legacy tree ensembles in every form ONNX Runtime finalizes
# differently (binary one-column classifiers, base values, aggregates,
# post_transforms), against ONNX Runtime (tests/models/ml_tree_forms.py).
add_test(NAME e2e.ml_tree_forms
  COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/models/ml_tree_forms.py
          --onnxc ${ONNXC_BIN} --work ${CMAKE_BINARY_DIR}/ml-tree-forms)
set_tests_properties(e2e.ml_tree_forms PROPERTIES LABELS e2e TIMEOUT 300)

# Synthetic LinearClassifier / LinearRegressor / Scaler / Normalizer /
# SVMClassifier nodes over every input type and post_transform, against ONNX
# Runtime (tests/models/ml_linear_svm_forms.py).
add_test(NAME e2e.ml_linear_svm_forms
  COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/models/ml_linear_svm_forms.py
          --onnxc ${ONNXC_BIN} --work ${CMAKE_BINARY_DIR}/ml-linear-svm-forms)
set_tests_properties(e2e.ml_linear_svm_forms PROPERTIES LABELS e2e TIMEOUT 600)
