# Unit tests of the reduction and axis-scan hooks (passes/infer_reduce.c) and
# their folders in passes/fold.c.
add_executable(test_infer_reduce ${CMAKE_CURRENT_LIST_DIR}/test_infer_reduce.c)
target_link_libraries(test_infer_reduce PRIVATE onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.infer_reduce COMMAND test_infer_reduce)
set_tests_properties(unit.infer_reduce PROPERTIES LABELS unit)
