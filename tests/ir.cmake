add_executable(test_ir ${CMAKE_CURRENT_LIST_DIR}/test_ir.c)
target_link_libraries(test_ir PRIVATE onnxc_ir cmocka)
add_test(NAME unit.ir COMMAND test_ir)
set_tests_properties(unit.ir PROPERTIES LABELS unit)
