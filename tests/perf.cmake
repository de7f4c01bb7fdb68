# Unit tests of the packed GEMM (codegen/emit_gemm.c) and its scratch plan
# (codegen/target.c); the fuse-epilogue pass has a golden test
# (tests/golden/fuse_epilogue_activations.txt).
add_executable(test_emit_gemm ${CMAKE_CURRENT_LIST_DIR}/test_emit_gemm.c)
target_include_directories(test_emit_gemm PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(test_emit_gemm PRIVATE onnxc_codegen onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.emit_gemm COMMAND test_emit_gemm)
set_tests_properties(unit.emit_gemm PROPERTIES LABELS unit)

# The fast paths' edge cases (bench/kernel_cases.py): odd panel sizes, pads,
# strides, depthwise, fused activations and residual Adds, on the AVX-512 (when
# the host has it), AVX2 and portable kernels, and again built with --threads 2;
# outputs against ONNX Runtime. The AVX2 runs are in guard mode (docs/guard.md).
add_test(NAME e2e.kernel_cases
  COMMAND ${ONNXC_PYTHON} ${CMAKE_SOURCE_DIR}/bench/kernel_cases.py --onnxc ${ONNXC_BIN}
          --threads 2 --guard-cpu haswell --out ${CMAKE_BINARY_DIR}/kernel_cases)
set_tests_properties(e2e.kernel_cases PROPERTIES LABELS e2e TIMEOUT 1200)

add_executable(test_threads ${CMAKE_CURRENT_LIST_DIR}/test_threads.c)
target_include_directories(test_threads PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(test_threads PRIVATE onnxc_codegen onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.threads COMMAND test_threads)
set_tests_properties(unit.threads PROPERTIES LABELS unit)
