# Unit tests of the packed GEMM (codegen/emit_gemm.c) and its scratch plan
# (passes/memplan_scratch.c); the fuse-epilogue pass has a golden test
# (tests/golden/fuse_epilogue_activations.txt).
add_executable(test_emit_gemm ${CMAKE_CURRENT_LIST_DIR}/test_emit_gemm.c)
target_include_directories(test_emit_gemm PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(test_emit_gemm PRIVATE onnxc_codegen onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.emit_gemm COMMAND test_emit_gemm)
set_tests_properties(unit.emit_gemm PROPERTIES LABELS unit)
