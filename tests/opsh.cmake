# Unit tests of the attention family's inference hooks (passes/infer_attention.c).
add_executable(test_infer_attention ${CMAKE_CURRENT_LIST_DIR}/test_infer_attention.c)
target_link_libraries(test_infer_attention PRIVATE onnxc_codegen onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.infer_attention COMMAND test_infer_attention)
set_tests_properties(unit.infer_attention PROPERTIES LABELS unit)
