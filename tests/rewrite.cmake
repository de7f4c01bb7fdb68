# Unit tests of the rewriting passes' shared rules (passes/rewrite.c with
# simplify, fuse-bn, cse, dce); their rewrites are covered by tests/golden/.
add_executable(test_rewrite ${CMAKE_CURRENT_LIST_DIR}/test_rewrite.c)
target_link_libraries(test_rewrite PRIVATE onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.rewrite COMMAND test_rewrite)
set_tests_properties(unit.rewrite PROPERTIES LABELS unit)
