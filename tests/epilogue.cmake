# Every fused epilogue (bias, BatchNormalization folded, each activation,
# residual Add/Sum, and their combinations) on every Conv/Gemm/MatMul kernel
# path, against ONNX Runtime on the unfused graph; the case also fails when a
# variant leaves its path or stops fusing (tests/e2e/epilogue_cases.py,
# docs/testing.md). ONNXC_PYTHON and ONNXC_BIN come from e2e.cmake.
add_test(NAME e2e.epilogue_cases
  COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/e2e/epilogue_cases.py --onnxc ${ONNXC_BIN}
          --jobs 2 --out ${CMAKE_BINARY_DIR}/epilogue_cases)
set_tests_properties(e2e.epilogue_cases PROPERTIES LABELS e2e TIMEOUT 900)
