# Gradient lowering (passes/lower_gradient.c) against finite differences.
add_test(NAME e2e.gradient
  COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/e2e/gradient_cases.py ${ONNXC_BIN}
          ${CMAKE_BINARY_DIR}/e2e-gradient)
set_tests_properties(e2e.gradient PROPERTIES LABELS e2e)
