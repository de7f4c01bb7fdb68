# Unit tests of the data-movement family: inference hooks and folders
# (passes/infer_movement.c, passes/fold_movement.c) and the emitters
# (codegen/emit_movement.c).
add_executable(test_infer_movement ${CMAKE_CURRENT_LIST_DIR}/test_infer_movement.c)
target_link_libraries(test_infer_movement PRIVATE onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.infer_movement COMMAND test_infer_movement)
set_tests_properties(unit.infer_movement PROPERTIES LABELS unit)
add_executable(test_emit_movement ${CMAKE_CURRENT_LIST_DIR}/test_emit_movement.c)
target_link_libraries(test_emit_movement PRIVATE onnxc_codegen onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.emit_movement COMMAND test_emit_movement)
set_tests_properties(unit.emit_movement PROPERTIES LABELS unit)
