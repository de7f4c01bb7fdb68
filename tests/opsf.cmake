# Unit tests of the normalization and nn inference hooks of the opsf family
# (passes/infer_nn.c) and of its Shrink/Swish elementwise rows.
add_executable(test_infer_nn ${CMAKE_CURRENT_LIST_DIR}/test_infer_nn.c)
target_link_libraries(test_infer_nn PRIVATE onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.infer_nn COMMAND test_infer_nn)
set_tests_properties(unit.infer_nn PROPERTIES LABELS unit)
