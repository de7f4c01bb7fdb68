# Unit tests of the str family: string operators' inference and LabelEncoder
# (passes/infer_string.c), the regex compiler (passes/regex.c) and the planning
# of string characters (codegen/target.c), and their C target
# (codegen/emit_string.c, codegen/c/emit_c.c).
add_executable(test_infer_string ${CMAKE_CURRENT_LIST_DIR}/test_infer_string.c)
target_link_libraries(test_infer_string PRIVATE onnxc_codegen onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.infer_string COMMAND test_infer_string)
set_tests_properties(unit.infer_string PROPERTIES LABELS unit)
