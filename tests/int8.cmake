# int8: the fuse-quant pass (passes/fuse_quant.c, docs/int8.md).
add_executable(test_fuse_quant ${CMAKE_CURRENT_LIST_DIR}/test_fuse_quant.c)
target_link_libraries(test_fuse_quant PRIVATE onnxc_passes onnxc_ir cmocka m)
add_test(NAME unit.fuse_quant COMMAND test_fuse_quant)
add_executable(test_fuse_qmatmul ${CMAKE_CURRENT_LIST_DIR}/test_fuse_qmatmul.c)
target_link_libraries(test_fuse_qmatmul PRIVATE onnxc_passes onnxc_ir cmocka m)
add_test(NAME unit.fuse_qmatmul COMMAND test_fuse_qmatmul)
set_tests_properties(unit.fuse_quant unit.fuse_qmatmul PROPERTIES LABELS unit)
# The QDQ corpus models (models/corpus/quantize.py) against ONNX Runtime's
# integer kernels: logits exact on the VNNI and portable kernels, the final
# quantized Softmax within one quantum (tests/models/int8_models.py).
add_test(NAME e2e.int8_models
  COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/models/int8_models.py
          --onnxc ${ONNXC_BIN} --corpus ${CMAKE_BINARY_DIR}/corpus)
set_tests_properties(e2e.int8_models PROPERTIES LABELS e2e TIMEOUT 900)
# DynamicQuantizeLSTM (com.microsoft, quantize_dynamic's LSTM) rewritten into
# the LSTM of its dequantized weights: exact against that LSTM, as close to
# ONNX Runtime's kernel as ORT's own float run of it, the errors
# (tests/models/dq_lstm_models.py).
add_test(NAME e2e.dq_lstm_models
  COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/models/dq_lstm_models.py
          --onnxc ${ONNXC_BIN} --out ${CMAKE_BINARY_DIR}/dq_lstm_models)
set_tests_properties(e2e.dq_lstm_models PROPERTIES LABELS e2e TIMEOUT 600)
# ConvInteger (quantize_dynamic's convs) against an exact numpy reference:
# strides, pads, dilations, groups, data and weight types, zero points, at
# -O0, -O2 in guard mode, -O3 --threads 2 and ASan+UBSan (tests/models/int_conv_cases.py).
add_test(NAME e2e.int_conv_cases
  COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/models/int_conv_cases.py
          --onnxc ${ONNXC_BIN} --out ${CMAKE_BINARY_DIR}/int_conv_cases)
set_tests_properties(e2e.int_conv_cases PROPERTIES LABELS e2e TIMEOUT 600)

# QDQ convs of many shapes (odd channel counts, strides, dilations, asymmetric
# pads, 1x1 in place and strided, 7x7, a fused residual), each forced into both
# int8 conv forms (ONNXC_INT8_LANES=0/1), native, generic and --threads 2, and
# -O2 --guard: exactly ORT's outputs (tests/models/qdq_conv_cases.py).
add_test(NAME e2e.qdq_conv_cases
  COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/models/qdq_conv_cases.py
          --onnxc ${ONNXC_BIN} --out ${CMAKE_BINARY_DIR}/qdq_conv_cases)
set_tests_properties(e2e.qdq_conv_cases PROPERTIES LABELS e2e TIMEOUT 600)

# quantize_dynamic's transformer layers and MLPs (MatMulInteger by constant
# weights, int8 and uint8, per tensor and per channel; K and N at the int8
# product kernel's edges): -O2, -O3 --threads 2 and --cpu generic exactly
# -O0's outputs, ORT's within 1e-5 of the largest output, -O2 --guard
# (tests/models/dyn_quant_models.py).
add_test(NAME e2e.dyn_quant_models
  COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/models/dyn_quant_models.py
          --onnxc ${ONNXC_BIN} --out ${CMAKE_BINARY_DIR}/dyn_quant_models)
set_tests_properties(e2e.dyn_quant_models PROPERTIES LABELS e2e TIMEOUT 600)

# Random chains of QDQ groups (tests/diff/gen_model.py --profile qdq: convs with
# odd channel counts, strides, 7x7 windows, dilations, asymmetric pads, residual
# Adds, pools, concats, a Gemm/MatMul head) against ORT's integer kernels, in
# guard mode at -O2 and -O3 --threads 2: once with the conv form chosen by cost,
# once with the output-channels-as-lanes form forced (ONNXC_INT8_LANES=1; the
# same as the first on CPUs without AVX-512 VNNI).
add_test(NAME diff.random_qdq
  COMMAND ${CMAKE_COMMAND} -E env ONNXC_CHECK_GUARD=1
          ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/diff/run_diff.py --onnxc ${ONNXC_BIN} --profile qdq
          --seeds 0:20 --configs O2,O3:t2 -j 2 --timeout 300)
add_test(NAME diff.random_qdq_lanes
  COMMAND ${CMAKE_COMMAND} -E env ONNXC_CHECK_GUARD=1 ONNXC_INT8_LANES=1
          ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/diff/run_diff.py --onnxc ${ONNXC_BIN} --profile qdq
          --seeds 30:50 --configs O2,O3:t2 -j 2 --timeout 300)
set_tests_properties(diff.random_qdq diff.random_qdq_lanes PROPERTIES LABELS e2e TIMEOUT 900)
