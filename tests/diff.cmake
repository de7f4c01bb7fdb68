# Differential testing of whole models against ONNX Runtime
# (docs/differential-testing.md):
#   diff.random       random models of a fixed seed range at -O0, -O2 and
#                     -O3 --threads 2 (tests/diff/run_diff.py; a few minutes)
#   diff.regressions  every kept case of tests/diff/regressions (shrunk
#                     failures and the graphs of issue 12) under the same
#                     configurations
set(ONNXC_DIFF_DIR ${CMAKE_CURRENT_LIST_DIR}/diff)

# Both in guard mode (docs/guard.md): an out-of-bounds write fails the model
# even when the outputs happen to match.
add_test(NAME diff.random
  COMMAND ${CMAKE_COMMAND} -E env ONNXC_CHECK_GUARD=1 ${ONNXC_PYTHON} ${ONNXC_DIFF_DIR}/run_diff.py --onnxc $<TARGET_FILE:onnxc>
          --seeds 0:60 -j 2 --timeout 120)

add_test(NAME diff.regressions
  COMMAND ${CMAKE_COMMAND} -E env ONNXC_CHECK_GUARD=1 ${ONNXC_PYTHON} ${ONNXC_DIFF_DIR}/run_diff.py --onnxc $<TARGET_FILE:onnxc>
          --cases ${ONNXC_DIFF_DIR}/regressions -j 2 --timeout 120)

set_tests_properties(diff.random diff.regressions PROPERTIES LABELS e2e TIMEOUT 600)
