add_executable(test_golden ${CMAKE_CURRENT_LIST_DIR}/test_golden.c)
target_link_libraries(test_golden PRIVATE onnxc_codegen onnxc_passes onnxc_ir)
add_test(NAME unit.golden COMMAND test_golden ${CMAKE_CURRENT_LIST_DIR}/golden)
set_tests_properties(unit.golden PROPERTIES LABELS unit)
