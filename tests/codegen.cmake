add_executable(test_codegen ${CMAKE_CURRENT_LIST_DIR}/test_codegen.c)
target_link_libraries(test_codegen PRIVATE onnxc_codegen onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.codegen COMMAND test_codegen)
set_tests_properties(unit.codegen PROPERTIES LABELS unit)

add_executable(test_fusion ${CMAKE_CURRENT_LIST_DIR}/test_fusion.c)
target_link_libraries(test_fusion PRIVATE onnxc_codegen onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.fusion COMMAND test_fusion)
set_tests_properties(unit.fusion PROPERTIES LABELS unit)
