# Differential testing of whole models against ONNX Runtime
# (docs/differential-testing.md):
#   diff.random       random models of a fixed seed range at -O0, -O2 and
#                     -O3 --threads 2 (tests/diff/run_diff.py; a few minutes)
#   diff.dynamic      random models with a dynamic dim, one build for a range
#   diff.regressions  every kept case of tests/diff/regressions (shrunk
#                     failures and the graphs of issue 12) under the same
#                     configurations
set(ONNXC_DIFF_DIR ${CMAKE_CURRENT_LIST_DIR}/diff)

# Both in guard mode (docs/guard.md): an out-of-bounds write fails the model
# even when the outputs happen to match. With a CUDA toolkit, every third
# seed is also built for the CUDA target and run on the CPU emulation of the
# driver (tests/cuda/emu), so the CUDA target's fused kernels meet random
# graphs too (about 25 s more); its blocks run last to first, so a batched
# launch of dependent kernels would fail (docs/cuda.md).
set(ONNXC_DIFF_CUDA)
set(ONNXC_DIFF_ENV ONNXC_CHECK_GUARD=1)
if(ONNXC_CUDA_HOME)
  set(ONNXC_DIFF_CUDA --cuda-every 3)
  list(APPEND ONNXC_DIFF_ENV ONNXC_CUDA_HOME=${ONNXC_CUDA_HOME} ONNXC_EMU_REVERSE_BLOCKS=1)
endif()
add_test(NAME diff.random
  COMMAND ${CMAKE_COMMAND} -E env ${ONNXC_DIFF_ENV}
          ${ONNXC_PYTHON} ${ONNXC_DIFF_DIR}/run_diff.py --onnxc $<TARGET_FILE:onnxc>
          --seeds 0:40 -j 2 --timeout 300 ${ONNXC_DIFF_CUDA})

# Models with a dynamic dim n (tests/diff/gen_dynamic.py), each compiled once
# with -D n=1..48 and run at several n, in guard mode: the red zones then
# start where each run's extent of a buffer ends (docs/dynamic-shapes.md).
add_test(NAME diff.dynamic
  COMMAND ${CMAKE_COMMAND} -E env ONNXC_CHECK_GUARD=1
          ${ONNXC_PYTHON} ${ONNXC_DIFF_DIR}/run_diff.py --onnxc $<TARGET_FILE:onnxc> --dynamic
          --seeds 0:14 --configs O0,O3:t2 -j 2 --timeout 300)

add_test(NAME diff.regressions
  COMMAND ${CMAKE_COMMAND} -E env ONNXC_CHECK_GUARD=1 ${ONNXC_PYTHON} ${ONNXC_DIFF_DIR}/run_diff.py --onnxc $<TARGET_FILE:onnxc>
          --cases ${ONNXC_DIFF_DIR}/regressions -j 2 --timeout 300)

set_tests_properties(diff.random diff.dynamic diff.regressions PROPERTIES LABELS e2e TIMEOUT 1200)
