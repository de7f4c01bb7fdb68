# Unit tests of the opsk family: signal ops (passes/infer_signal.c), ops with
# data-dependent output sizes (passes/infer_dynamic.c), the require-static
# check of such values and their header ABI (codegen/c/emit_c.c).
add_executable(test_infer_signal ${CMAKE_CURRENT_LIST_DIR}/test_infer_signal.c)
target_link_libraries(test_infer_signal PRIVATE onnxc_codegen onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.infer_signal COMMAND test_infer_signal)
set_tests_properties(unit.infer_signal PROPERTIES LABELS unit)
